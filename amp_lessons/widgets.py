"""Interactive explorers (ipywidgets): one goal per demo, cheap updates, sane at every extreme.

Each explorer is a small class holding its widgets and its update logic, so tests and benchmarks
drive it without a browser; the functions :func:`bit_explorer` and :func:`format_designer` return
its displayable ``VBox`` (with the controller as ``.explorer``).

Pictures are drawn by the ``plot_*`` functions of :mod:`amp_lessons.plots` on figures the
explorer owns (never registered with pyplot, so nothing is shown twice and no figure piles up)
and sent as a PNG to an ``ipywidgets.Image``: the same picture under any matplotlib backend
(inline, widget, Agg), and an update's whole cost is paid inside it, where the benchmarks'
``measure_update_ms`` times it. To stay well under 100 ms an update does not redraw the
figure: the parts that never change (axes, ticks, reference formats, boxes) are rendered once
into a background, and an update restores it and draws only the artists that moved (blitting).
"""

from __future__ import annotations

import html
import io
import math
import numbers

import ipywidgets as widgets
import numpy as np
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from . import fp8, fp16, scaling, tf32
from ._draw import (
    bar_height as _bar_height,
    decade_ticks as _decade_ticks,
    pow2_ticks as _pow2_ticks,
    region_spans as _region_spans,
    staircase as _staircase,
)
from ._runtime import one_thread as _one_thread
from .formats import ENCODINGS, FORMATS, ROUNDING_MODES, FloatFormat, get_format, quantize
from .fp16 import CENSUS_CATEGORIES
from .plots import (
    BitInfo,
    describe_code,
    describe_value,
    plot_bit_layout,
    plot_error_vs_k,
    plot_format_regions,
    plot_range_precision,
    plot_running_sums,
    plot_scaled_histogram,
    plot_scaler_history,
    plot_spacing,
)
from .style import style_context

__all__ = [
    "BitExplorer",
    "FormatDesigner",
    "MagnitudeExplorer",
    "MatmulPrecisionExplorer",
    "ScaleExplorer",
    "ScalerStateExplorer",
    "SumExplorer",
    "bit_explorer",
    "format_designer",
    "magnitude_explorer",
    "matmul_precision_explorer",
    "scale_explorer",
    "scaler_state_explorer",
    "sum_explorer",
]

_DPI = 80
_BUTTON_STYLE = {"sign": "danger", "exponent": "success", "mantissa": "info"}
_FIELD_TEXT = {"sign": "#B03A2E", "exponent": "#1E8449", "mantissa": "#1F618D"}


class _Picture:
    """A figure whose static part is rendered once; :meth:`png` redraws only the moving artists."""

    def __init__(self, figsize):
        with style_context():
            self.fig = Figure(figsize=figsize, dpi=_DPI, layout="none")
        self.canvas = FigureCanvasAgg(self.fig)
        self.moving = []
        self.centers = None  # the bit explorer's digit positions (data coordinates)
        self._background = None

    def freeze(self, moving) -> None:
        """Render everything but ``moving`` into the background."""
        self.moving = list(moving)
        for artist in self.moving:
            artist.set_animated(True)
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def png(self) -> bytes:
        self.canvas.restore_region(self._background)
        for artist in self.moving:
            self.fig.draw_artist(artist)
        return _encode_png(self.canvas)


def _encode_png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's pixels as PNG (fast zlib level: about 10 ms for a 1040 x 368 picture)."""
    w, h = canvas.get_width_height()
    buf = io.BytesIO()
    PILImage.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buf, format="png", compress_level=1
    )
    return buf.getvalue()


def _by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _image() -> widgets.Image:
    # flex-start: never stretched wider than the PNG (Voila stretches flex children to the page width)
    return widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto", align_self="flex-start"))


def _table(rows) -> str:
    cells = "".join(
        f"<tr><td style='padding:1px 12px 1px 0;color:#555'>{html.escape(k)}</td><td>{v}</td></tr>" for k, v in rows
    )
    return f"<table style='font-family:monospace;font-size:13px'>{cells}</table>"


def _error_html(message: str) -> str:
    return f"<div style='color:#B00020;font-family:monospace'>{html.escape(message)}</div>"


def _num(v: float) -> str:
    """A constant for a table: 7 significant digits, and its power of two when it is one."""
    text = f"{v:.7g}"
    if v > 0 and math.isfinite(v):
        mant, exp = math.frexp(v)
        if mant == 0.5:
            text += f" = 2^{exp - 1}"
    return text


# --- bit explorer ------------------------------------------------------------------------------


def _parse_value(value) -> float:
    """A number, or a string Python's float() reads ("0.1", "-0.0", "1e39", "nan", "inf")."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise ValueError(f"value {value!r} is not a number (try 0.1, -0.0, 1e39, nan, inf)") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value must be a real number or a string, got {value!r} ({type(value).__name__})")
    return float(value)


class BitExplorer:
    """Type a value, pick a format, see (and flip) the bits it is stored as.

    ``value_box`` (Text: any number Python reads, including ``nan``, ``inf``, ``-0.0``),
    ``format_menu`` (Dropdown of format names), ``bit_row`` (one ToggleButton per bit, most
    significant first; flipping one recomputes the value from the bits with ``from_bits``),
    ``readout`` (HTML) and ``image`` (the bit-layout plot). ``info`` is the shown
    :class:`~amp_lessons.plots.BitInfo`; ``error`` the last input problem ("" if none).

    A flip writes the new value into ``value_box``; a guard flag stops that write (and the
    buttons' own resync) from re-entering the observers.
    """

    def __init__(self, value=0.1, fmt="fp16"):
        f = get_format(fmt)
        self._formats = {**FORMATS, f.name: f}  # a learner's own FloatFormat joins the menu
        text = value if isinstance(value, str) else repr(_parse_value(value))
        _parse_value(text)  # a bad string raises here, naming it
        self.value_box = widgets.Text(
            value=text, description="value", continuous_update=False, layout=widgets.Layout(width="280px")
        )
        self.format_menu = widgets.Dropdown(options=list(self._formats), value=f.name, description="format")
        self.bit_row = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox(
            [widgets.HBox([self.value_box, self.format_menu]), self.bit_row, self.readout, self.image]
        )
        self.widget.explorer = self
        self.info: BitInfo | None = None
        self.error = ""
        self._busy = False
        # One pool of bit buttons, grown to the widest format shown and restyled on a format change:
        # switching formats then updates existing buttons instead of opening up to 32 new widgets.
        self._pool: list[widgets.ToggleButton] = []
        self._pictures: dict[str, _Picture] = {}
        self._button_layout = widgets.Layout(width="30px", padding="0px")  # one, shared: cheaper rows
        self.value_box.observe(self._on_value, names="value")
        self.format_menu.observe(self._on_format, names="value")
        self._use_buttons()
        self.show_value()

    @property
    def fmt(self) -> FloatFormat:
        return self._formats[self.format_menu.value]

    # the actions a learner takes (each runs the same observers a click does)
    def set_value(self, value) -> None:
        """Type ``value`` (a number or a string) into the value box."""
        self.value_box.value = value if isinstance(value, str) else repr(_parse_value(value))

    def set_format(self, name: str) -> None:
        """Pick format ``name`` from the menu."""
        name = get_format(name).name
        if name not in self._formats:
            raise ValueError(f"format {name!r} is not in this explorer's menu: {', '.join(self._formats)}")
        self.format_menu.value = name

    def flip_bit(self, position: int) -> None:
        """Click the button of bit ``position`` (0 = least significant, bits-1 = sign)."""
        n = self.fmt.bits
        if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < n:
            raise ValueError(f"bit position {position!r} is not in 0..{n - 1} for {self.fmt.name}")
        button = self._row()[n - 1 - position]
        if button.disabled:
            raise ValueError(f"the bits are undefined: {self.info.formula}")
        button.value = not button.value

    # observers
    def _on_value(self, change) -> None:
        if not self._busy:
            self.show_value()

    def _on_format(self, change) -> None:
        if not self._busy:
            self._use_buttons()
            self.show_value()

    def _on_bit(self, change) -> None:
        if self._busy:
            return
        row = self._row()
        self.show_code(sum(int(b.value) << (len(row) - 1 - i) for i, b in enumerate(row)))

    # updates
    def show_value(self) -> None:
        """Round the value box's value to the format and show it."""
        try:
            v = _parse_value(self.value_box.value)
        except ValueError as err:  # keep showing the last value, under the message
            self.error = str(err)
            self.readout.value = _error_html(self.error) + (self._readout(self.info) if self.info else "")
            return
        self.error = ""
        self._show(describe_value(v, self.fmt))

    def show_code(self, code: int) -> None:
        """Show the value of bit pattern ``code`` and write it into the value box."""
        info = describe_code(code, self.fmt)
        self._busy = True
        try:
            self.value_box.value = repr(info.stored)
        finally:
            self._busy = False
        self.error = ""
        self._show(info)

    def _row(self) -> list[widgets.ToggleButton]:
        """The buttons of the current format's bits, most significant first."""
        return self._pool[: self.fmt.bits]

    def _use_buttons(self) -> None:
        f = self.fmt
        while len(self._pool) < f.bits:
            b = widgets.ToggleButton(description="0", layout=self._button_layout)
            b.observe(self._on_bit, names="value")
            self._pool.append(b)
        for i, b in enumerate(self._pool[: f.bits]):
            field = "sign" if i == 0 else "exponent" if i <= f.exponent_bits else "mantissa"
            with b.hold_sync():  # one message per button, and none where nothing changes
                b.button_style = _BUTTON_STYLE[field]
                b.tooltip = f"bit {f.bits - 1 - i} ({field})"
        self.bit_row.children = self._row()

    def _show(self, info: BitInfo) -> None:
        self.info = info
        row = self._pool[: info.fmt.bits]
        digits = format(info.code, f"0{len(row)}b") if info.code is not None else None
        self._busy = True
        try:
            for i, b in enumerate(row):
                with b.hold_sync():
                    b.value = digits is not None and digits[i] == "1"
                    b.description = digits[i] if digits is not None else "?"
                    b.disabled = digits is None
        finally:
            self._busy = False
        self.readout.value = self._readout(info)
        self._draw(info)

    def _readout(self, info: BitInfo) -> str:
        f = info.fmt
        rows = []
        if info.typed is not None:
            rows.append(("typed value", html.escape(repr(info.typed))))
        else:
            rows.append(("typed value", "(set by flipping bits)"))
        rows.append((f"stored in {f.name}", f"<b>{html.escape(repr(info.stored))}</b>"))
        rows.append(("class", html.escape(info.kind)))
        if info.fields is not None:
            s, e, m = info.fields
            parts = info.bit_string.split(" ")
            names = ["sign", "exponent", "mantissa"][: len(parts)]
            rows.append(
                ("bits", " ".join(f"<span style='color:{_FIELD_TEXT[n]}'>{p}</span>" for n, p in zip(names, parts)))
            )
            rows.append(
                (
                    "sign / exponent / mantissa",
                    f"{s} / {e} (bias {f.bias}) / {m}" if f.mantissa_bits else f"{s} / {e} (bias {f.bias})",
                )
            )
        rows.append(("formula", html.escape(info.formula)))
        if info.typed is not None:
            rows.append(("absolute error", f"{info.abs_error:.6g}"))
            rows.append(("relative error", f"{info.rel_error:.6g}"))
        return _table(rows)

    def _picture(self, f: FloatFormat) -> _Picture:
        """The format's bit layout, drawn once; then only its digits move (the value, formula and
        errors are in the read-out above it). The digits are two scatter collections of glyph
        markers ("0"s and "1"s): one draw call each instead of a text layout per bit, which keeps
        a 32-bit update fast."""
        if f.name not in self._pictures:
            pic = _Picture((min(13.0, max(7.0, 0.36 * f.bits + 2.0)), 2.3))
            with style_context():
                ax = pic.fig.add_axes((0.01, 0.01, 0.98, 0.86))
                plot_bit_layout(f, 0.0, ax=ax, caption=False)
            texts = _by_gid(ax, "bit digit")
            for t in texts:
                t.set_visible(False)
            size = (0.75 * texts[0].get_fontsize()) ** 2
            glyphs = [ax.scatter([], [], s=size, marker=f"$\\mathbf{{{d}}}$", c="k", linewidths=0) for d in "01"]
            pic.freeze(glyphs)
            pic.centers = np.array([t.get_position() for t in texts])
            self._pictures[f.name] = pic
        return self._pictures[f.name]

    def _draw(self, info: BitInfo) -> None:
        pic = self._picture(info.fmt)
        zeros, ones = pic.moving
        n = len(pic.centers)
        bits = np.array([c == "1" for c in format(info.code, f"0{n}b")]) if info.code is not None else None
        zeros.set_offsets(pic.centers[~bits] if bits is not None else np.empty((0, 2)))
        ones.set_offsets(pic.centers[bits] if bits is not None else np.empty((0, 2)))
        self.image.value = pic.png()


def bit_explorer(value=0.1, fmt="fp16") -> widgets.VBox:
    """The bit explorer's widget (its :class:`BitExplorer` is ``.explorer``)."""
    return BitExplorer(value, fmt).widget


# --- format designer ---------------------------------------------------------------------------


class FormatDesigner:
    """Design a format with sliders: exponent bits (1..8), mantissa bits (0..23), encoding.

    Redraws its spacing next to fp32 / bf16 / fp16 and its range bar next to known formats, and
    a table of its constants (naming a known format it equals). An impossible design shows the
    engine's error message and keeps the last good picture; ``fmt`` is the last valid design,
    ``error`` the message ("" if the current design is valid).
    """

    REFERENCES = ("fp32", "bf16", "fp16")
    BARS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")

    def __init__(self, exponent_bits: int = 5, mantissa_bits: int = 10, encoding: str = "ieee"):
        for name, v, lo, hi in (("exponent_bits", exponent_bits, 1, 8), ("mantissa_bits", mantissa_bits, 0, 23)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError(f"{name} must be an int, got {v!r}")
            if not lo <= v <= hi:
                raise ValueError(f"{name}={v!r} is outside the slider's range {lo}..{hi}")
        if encoding not in ENCODINGS:
            raise ValueError(f"encoding={encoding!r}: use one of {', '.join(map(repr, ENCODINGS))}")
        style = {"description_width": "initial"}
        self.exponent_slider = widgets.IntSlider(exponent_bits, min=1, max=8, description="exponent bits", style=style)
        self.mantissa_slider = widgets.IntSlider(mantissa_bits, min=0, max=23, description="mantissa bits", style=style)
        self.encoding_menu = widgets.Dropdown(options=list(ENCODINGS), value=encoding, description="encoding")
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.exponent_slider, self.mantissa_slider, self.encoding_menu]),
                self.readout,
                self.image,
            ]
        )
        self.widget.explorer = self
        self.fmt: FloatFormat | None = None
        self.error = ""
        self._pic = self._background_picture()
        for w in (self.exponent_slider, self.mantissa_slider, self.encoding_menu):
            w.observe(self._on_change, names="value")
        self.update()

    def set(self, exponent_bits=None, mantissa_bits=None, encoding=None) -> None:
        """Move the sliders / pick the encoding (each change runs the observers, as a drag does)."""
        if exponent_bits is not None:
            self.exponent_slider.value = exponent_bits
        if mantissa_bits is not None:
            self.mantissa_slider.value = mantissa_bits
        if encoding is not None:
            self.encoding_menu.value = encoding

    def _on_change(self, change) -> None:
        self.update()

    def update(self) -> None:
        e, m, enc = self.exponent_slider.value, self.mantissa_slider.value, self.encoding_menu.value
        try:
            f = FloatFormat("design", e, m, enc)
        except ValueError as err:
            self.error = str(err)
            kept = ""
            if self.fmt is not None:
                kept = f"<div style='color:#555'>still showing the last valid design: {self._describe(self.fmt)}</div>"
            self.readout.value = _error_html(f"e{e}m{m} {enc}: {self.error}") + kept
            return
        self.error = ""
        self.fmt = f
        self.readout.value = self._readout(f)
        self._draw(f)

    @staticmethod
    def _describe(f: FloatFormat) -> str:
        return f"e{f.exponent_bits}m{f.mantissa_bits} {f.encoding}"

    @staticmethod
    def same_as(f: FloatFormat) -> list[str]:
        """Names of known formats with the same layout and encoding as ``f``."""
        key = (f.exponent_bits, f.mantissa_bits, f.encoding)
        return [n for n, g in FORMATS.items() if (g.exponent_bits, g.mantissa_bits, g.encoding) == key]

    def _readout(self, f: FloatFormat) -> str:
        same = self.same_as(f)
        title = f"<b>design {self._describe(f)}</b>: " + (
            f"same as {html.escape(', '.join(same))}" if same else "not a format the course names"
        )
        if f.emax < f.emin:
            title += " <span style='color:#B00020'>(no positive finite value: only 0 and NaN)</span>"
        specials = (
            ", ".join([s for s, ok in (("inf", f.has_inf), ("NaN", f.has_nan), ("-0", f.has_negative_zero)) if ok])
            or "none"
        )
        rows = [
            ("bits", f"{f.bits} = 1 + {f.exponent_bits} + {f.mantissa_bits}"),
            ("bias", str(f.bias)),
            ("max", _num(f.max)),
            ("smallest normal", _num(f.smallest_normal)),
            ("smallest subnormal", _num(f.smallest_subnormal)),
            ("eps", _num(f.eps)),
            ("decimal digits", str(f.decimal_digits)),
            ("dynamic range", f"{f.dynamic_range_decades:.1f} decades"),
            ("special values", specials),
        ]
        return title + _table(rows)

    def _background_picture(self) -> _Picture:
        """Spacing next to fp32/bf16/fp16 and range bars next to known formats, drawn once with a
        stand-in design whose artists then move. Every valid design fits inside float32, so the
        axes' limits (fp32's range, gaps up to 2**127) never change."""
        pic = _Picture((13, 4.6))
        stand_in = FloatFormat("design", 5, 10)
        with style_context():
            left, right = pic.fig.subplots(1, 2, width_ratios=[1.1, 1])
            pic.fig.subplots_adjust(left=0.065, right=0.99, bottom=0.11, top=0.93, wspace=0.4)
            plot_spacing((*self.REFERENCES, stand_in), ax=left)
            left.set_xlim(2.0**-156, 2.0**134)
            left.set_ylim(2.0**-156, 2.0**134)
            _decade_ticks(left)
            for text in left.get_legend().get_texts():
                if text.get_text().startswith("design"):
                    text.set_text("your design")
            plot_range_precision((stand_in, *self.BARS), ax=right)
            right.get_legend().remove()
            right.set_yticks(right.get_yticks(), ["your design", *[t.get_text() for t in right.get_yticklabels()[1:]]])
            right.set_title("Range and precision (hatched: subnormals)", fontsize=12)
        (line,) = _by_gid(left, "design")
        line.set(lw=3.2, zorder=3)
        pic.freeze(
            [
                line,
                *_by_gid(left, "design max"),
                *_by_gid(left, "design smallest normal"),
                *_by_gid(right, "design subnormals"),
                *_by_gid(right, "design normals"),
            ]
        )
        return pic

    def _draw(self, f: FloatFormat) -> None:
        line, top, normal, sub_bar, normal_bar = self._pic.moving
        xs, ys = _staircase(f)
        line.set_data(xs, ys)
        top.set_data([f.max], [ys[-1]] if len(ys) else [math.nan])
        normal.set_data([f.smallest_normal], [math.ldexp(1.0, f.emin - f.mantissa_bits)])
        normal.set_visible(len(xs) > 0)
        h = _bar_height(f)
        for bar, lo, hi in ((sub_bar, f.smallest_subnormal, f.smallest_normal), (normal_bar, f.smallest_normal, f.max)):
            bar.set_bounds(lo, -h / 2, hi - lo, h)
            bar.set_visible(hi > lo)
        self.image.value = self._pic.png()


def format_designer(exponent_bits: int = 5, mantissa_bits: int = 10, encoding: str = "ieee") -> widgets.VBox:
    """The format designer's widget (its :class:`FormatDesigner` is ``.explorer``)."""
    return FormatDesigner(exponent_bits, mantissa_bits, encoding).widget


# --- matmul precision explorer (lesson 02) ------------------------------------------------------


class MatmulPrecisionExplorer:
    """The format designer's idea applied to a matmul: a slider for the mantissa bits of the
    inputs (exponent fixed at 8, like fp32/TF32/bf16) and a rounding menu; the designed inputs'
    RMS error against K is drawn over fp32, TF32, bf16 and fp16 inputs (all accumulated in fp32,
    emulated bit-exactly on the CPU)."""

    def __init__(
        self,
        mantissa_bits: int = 10,
        rounding: str = "nearest_even",
        *,
        m: int = 32,
        n: int = 32,
        kmax: int = 4096,
        seed: int = 0,
    ):

        if isinstance(mantissa_bits, bool) or not isinstance(mantissa_bits, int) or not 0 <= mantissa_bits <= 23:
            raise ValueError(f"mantissa_bits={mantissa_bits!r}: use an int from 0 to 23")
        if rounding not in ROUNDING_MODES:
            raise ValueError(f"rounding={rounding!r}: use one of {', '.join(map(repr, ROUNDING_MODES))}")
        if isinstance(kmax, bool) or not isinstance(kmax, int) or kmax < 32:
            raise ValueError(f"kmax={kmax!r}: use an int >= 32")
        self._tf32 = tf32
        self.ks = [2**i for i in range(4, int(math.log2(kmax)) + 1)]
        self._shape = dict(m=m, n=n, seed=seed)
        self.data = tf32.error_vs_k(self.ks, **self._shape)
        self.mantissa_slider = widgets.IntSlider(
            mantissa_bits, min=0, max=23, description="mantissa bits", style={"description_width": "initial"}
        )
        self.rounding_menu = widgets.Dropdown(options=list(ROUNDING_MODES), value=rounding, description="rounding")
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox([widgets.HBox([self.mantissa_slider, self.rounding_menu]), self.readout, self.image])
        self.widget.explorer = self
        self._pic = self._background_picture()
        self.rms: list[float] = []
        for w in (self.mantissa_slider, self.rounding_menu):
            w.observe(self._on_change, names="value")
        self.update()

    def set(self, mantissa_bits=None, rounding=None) -> None:
        if mantissa_bits is not None:
            self.mantissa_slider.value = mantissa_bits
        if rounding is not None:
            self.rounding_menu.value = rounding

    def _on_change(self, change) -> None:
        self.update()

    def _background_picture(self) -> _Picture:
        pic = _Picture((9, 4.8))
        with style_context():
            ax = pic.fig.add_subplot()
            pic.fig.subplots_adjust(left=0.11, right=0.98, bottom=0.12, top=0.92)
            plot_error_vs_k(self.data, ax=ax, extra={"your inputs": self.data["rms"]["tf32"]})
            all_rms = [v for line in self.data["rms"].values() for v in line if v > 0]
            ax.set_ylim(min(all_rms) / 30, 10 * max(self.data["ref_rms"]))
        (line,) = _by_gid(ax, "your inputs")
        line.set(lw=3, zorder=3)
        pic.freeze([line])
        return pic

    def update(self) -> None:
        m, rounding = self.mantissa_slider.value, self.rounding_menu.value
        f = FloatFormat(f"e8m{m}", 8, m)
        self.rms = self._tf32.error_vs_k(self.ks, (f,), rounding=rounding, **self._shape)["rms"][f.name]
        same = [n for n, g in FORMATS.items() if (g.exponent_bits, g.mantissa_bits, g.encoding) == (8, m, "ieee")]
        name = f"e8m{m}" + (f" = {same[0]}" if same else "")
        self.readout.value = _table(
            [
                ("your inputs", f"{name}, rounded {rounding}, fp32 accumulation"),
                (f"RMS error at K={self.ks[-1]}", f"{self.rms[-1]:.3g}"),
                ("RMS of the exact result", f"{self.data['ref_rms'][-1]:.3g}"),
            ]
        )
        line = self._pic.moving[0]
        line.set_data(self.ks, [max(v, 1e-30) for v in self.rms])
        self.image.value = self._pic.png()


def matmul_precision_explorer(mantissa_bits: int = 10, rounding: str = "nearest_even") -> widgets.VBox:
    """The matmul precision explorer's widget (its :class:`MatmulPrecisionExplorer` is ``.explorer``)."""
    return MatmulPrecisionExplorer(mantissa_bits, rounding).widget


# --- magnitude explorer (lesson 03) -------------------------------------------------------------


def _rel_text(err: float) -> str:
    if math.isnan(err):
        return "n/a"
    if math.isinf(err):
        return "inf"
    if err == 0:
        return "0 (exact)"
    return f"{err:.3g}"


class MagnitudeExplorer:
    """Slide |x| over 90 decades (log10 |x| from -50 to 40) and see where it lands in fp32, bf16,
    fp16, fp8 e4m3 and fp8 e5m2: its class (:func:`amp_lessons.fp16.classify`), the stored value
    and the relative rounding error in a table, and a marker on each format's zero / subnormal /
    normal / overflow regions. ``sign_buttons`` flips the sign (the classes do not change).

    ``value`` is the value shown (``sign * 10**log10``, a Python float; the engine makes it float32
    first, so fp32's own row shows that rounding); ``classes``, ``stored`` and ``errors`` hold each
    format's row.
    """

    FORMATS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
    LO, HI = -50.0, 40.0

    def __init__(self, log10_value: float = -5.0, sign: str = "+"):

        self._fp16 = fp16
        log10_value = self._check_log10(log10_value)
        if sign not in ("+", "-"):
            raise ValueError(f"sign must be '+' or '-', got {sign!r}")
        self.slider = widgets.FloatSlider(
            log10_value,
            min=self.LO,
            max=self.HI,
            step=0.1,
            readout_format=".1f",
            description="log10 |x|",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        self.sign_buttons = widgets.ToggleButtons(
            options=["+", "-"], value=sign, description="sign", style={"button_width": "36px"}
        )
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.sign_buttons]), self.readout, self.image])
        self.widget.explorer = self
        self.value = math.nan
        self.classes: dict[str, str] = {}
        self.stored: dict[str, float] = {}
        self.errors: dict[str, float] = {}
        self._fmts = [get_format(n) for n in self.FORMATS]
        self._pic = self._background_picture()
        for w in (self.slider, self.sign_buttons):
            w.observe(self._on_change, names="value")
        self.update()

    def _check_log10(self, v) -> float:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not self.LO <= float(v) <= self.HI:
            raise ValueError(f"log10_value must be a number from {self.LO:g} to {self.HI:g}, got {v!r}")
        return float(v)

    def set(self, log10_value=None, sign=None) -> None:
        """Move the slider / pick the sign (each change runs the observers, as a drag does)."""
        if log10_value is not None:
            self.slider.value = self._check_log10(log10_value)
        if sign is not None:
            self.sign_buttons.value = sign

    def _on_change(self, change) -> None:
        self.update()

    def _background_picture(self) -> _Picture:
        pic = _Picture((10.5, 4.0))
        with style_context():
            ax = pic.fig.add_axes((0.1, 0.27, 0.88, 0.64))
            plot_format_regions(1.0, self.FORMATS, ax=ax)
            ax.set_title("Where |x| lands in each format (marker: |x|)", loc="left")
        pic.freeze([*_by_gid(ax, "marker"), *_by_gid(ax, "marker dots")])
        pic.lo, pic.hi = ax.get_xlim()
        return pic

    def update(self) -> None:
        log10 = round(float(self.slider.value), 6)
        value = 10.0**log10 * (-1.0 if self.sign_buttons.value == "-" else 1.0)
        self.value = value
        x = torch.tensor([value], dtype=torch.float32)
        rows = []
        for f in self._fmts:
            cls = self._fp16.classify(x, f)[0]
            stored = float(quantize(x, f)[0])
            err = math.inf if math.isinf(stored) else abs(stored - value) / abs(value)
            self.classes[f.name], self.stored[f.name], self.errors[f.name] = cls, stored, err
            rows.append((f.name, cls, repr(stored), _rel_text(err)))
        self.readout.value = self._readout(value, rows)
        line, dots = self._pic.moving
        shown = min(max(abs(value), self._pic.lo), self._pic.hi)
        line.set_xdata([shown, shown])
        dots.set_xdata([shown] * len(self._fmts))
        self.image.value = self._pic.png()

    @staticmethod
    def _readout(value: float, rows) -> str:
        head = "".join(
            f"<th style='text-align:left;padding:1px 14px 1px 0'>{h}</th>"
            for h in ("format", "class", "stored value", "relative error")
        )
        colours = {
            "normal": "#1a7f37",
            "subnormal": "#9a6700",
            "zero": "#555555",
            "inf": "#B00020",
            "saturated": "#B00020",
            "NaN": "#B00020",
        }
        body = "".join(
            "<tr>"
            + "".join(
                f"<td style='padding:1px 14px 1px 0'>{c}</td>"
                for c in (html.escape(name), f"<b style='color:{colours[cls]}'>{cls}</b>", html.escape(stored), err)
            )
            + "</tr>"
            for name, cls, stored, err in rows
        )
        return (
            f"<div style='font-family:monospace;font-size:13px'>x = {html.escape(repr(value))}</div>"
            f"<table style='font-family:monospace;font-size:13px'><tr>{head}</tr>{body}</table>"
        )


def magnitude_explorer(log10_value: float = -5.0) -> widgets.VBox:
    """The magnitude explorer's widget (its :class:`MagnitudeExplorer` is ``.explorer``)."""
    return MagnitudeExplorer(log10_value).widget


# --- sum explorer (lesson 03) -------------------------------------------------------------------


class SumExplorer:
    """Sum ``n`` copies of ``v`` in fp16 and fp32 ways: a value box for ``v`` (any number Python
    reads), a slider for ``n`` (1..8192), the final values in a table
    (:func:`amp_lessons.fp16.sum_copies`) and the running sums in a picture.

    The picture is drawn in units of the exact final sum ``n * fp16(v)`` (so its axes never change
    and an update only redraws the lines, blitting), with tick labels in real values. ``result`` is
    the shown ``sum_copies(v, n)``; ``error`` the last input problem ("" if none).
    """

    N_MAX = 8192
    LINES = (
        "exact",
        "fp32 running sum",
        "fp16 addends, fp32 accumulator",
        "torch.cumsum (fp16 tensor)",
        "fp16 running sum",
    )
    READOUT = ("fp16 running sum", "fp16 addends, fp32 accumulator", "torch.sum (fp16 tensor)", "exact")
    TOPS = (1.15, 2.3)  # y-axis tops, in units of the exact final sum: one background each
    FP16_MAX = 65504.0

    def __init__(self, v: float = 16.0, n: int = 4096):

        self._fp16 = fp16
        v = _parse_value(v) if isinstance(v, str) else v
        fp16.check_copies(v, n)  # raises for a non-finite v or a bad n
        if not 1 <= n <= self.N_MAX:
            raise ValueError(f"n must be from 1 to {self.N_MAX}, got {n}")
        self.v_box = widgets.Text(
            value=repr(float(v)), description="v", continuous_update=False, layout=widgets.Layout(width="240px")
        )
        self.n_slider = widgets.IntSlider(
            int(n),
            min=1,
            max=self.N_MAX,
            description="n copies",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox([widgets.HBox([self.v_box, self.n_slider]), self.readout, self.image])
        self.widget.explorer = self
        self.result: dict = {}
        self.error = ""
        self._curves_v = None
        self._curves: dict = {}
        self._pictures = {top: self._background_picture(top) for top in self.TOPS}
        for w in (self.v_box, self.n_slider):
            w.observe(self._on_change, names="value")
        self.update()

    def set(self, v=None, n=None) -> None:
        """Type ``v`` (a number or a string) / move the slider (each change runs the observers)."""
        if v is not None:
            self.v_box.value = v if isinstance(v, str) else repr(_parse_value(v))
        if n is not None:
            self.n_slider.value = n

    def _on_change(self, change) -> None:
        self.update()

    def _background_picture(self, top: float) -> _Picture:
        """Axes in units of the exact final sum (x: terms / n, y: sum / (n v)); grid, tick labels,
        lines, the fp16-max line and the inf markers are the moving artists."""
        from matplotlib.collections import LineCollection

        pic = _Picture((9, 4.4))
        stand_in = {k: np.linspace(1.0 / 64, 1.0, 64) for k in self.LINES}
        with style_context():
            ax = pic.fig.add_axes((0.125, 0.14, 0.86, 0.78))
            plot_running_sums(stand_in, ax=ax, limit=1.0, limit_label=f"fp16 max {self.FP16_MAX:g}")
            ax.xaxis.labelpad = 20  # room for the tick labels drawn as moving texts
            ax.yaxis.labelpad = 50
            ax.set_xlim(0, 1.02)
            ax.set_ylim(-0.03 * top, top)
            ax.set_xticks([], [])
            ax.set_yticks([], [])
            ax.grid(False)
            ax.set_title("Running sums of n copies of v (triangle: the line became inf there)", loc="left")
            legend = ax.get_legend()  # drawn last, over the lines
            grid = [LineCollection([], colors="#DDDDDD", lw=0.8, zorder=0) for _ in range(2)]
            for g in grid:
                ax.add_collection(g, autolim=False)
            lines = [_by_gid(ax, k)[0] for k in self.LINES]
            (limit,) = _by_gid(ax, "limit")
            markers = [ax.plot([], [], ls="", marker="^", ms=10, color=ln.get_color(), zorder=5)[0] for ln in lines]
            xt = [
                ax.text(0, -0.015, "", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=10)
                for _ in range(8)
            ]
            yt = [
                ax.text(-0.008, 0, "", transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=10)
                for _ in range(8)
            ]
        pic.freeze([*grid, *lines, limit, *markers, *xt, *yt, legend])
        pic.parts = dict(ax=ax, grid=grid, lines=lines, limit=limit, markers=markers, xt=xt, yt=yt, top=top)
        return pic

    def update(self) -> None:
        try:
            v = _parse_value(self.v_box.value)
            n = int(self.n_slider.value)
            result = self._fp16.sum_copies(v, n)
        except (ValueError, TypeError) as err:
            self.error = str(err)
            kept = self._readout() if self.result else ""
            self.readout.value = _error_html(self.error) + kept
            return
        self.error = ""
        self.result = result
        if self._curves_v != v:  # the curves depend on v only: n just cuts them
            self._curves = self._fp16.running_sums_of_copies(v, self.N_MAX)
            self._curves_v = v
        self.readout.value = self._readout()
        self._draw(v, n)

    def _readout(self) -> str:
        r = self.result
        rows = [(k, f"<b>{r[k]!r}</b>" if k == "fp16 running sum" else repr(r[k])) for k in self.READOUT]
        rows.append(("torch.sum(dtype=float32)", repr(r["torch.sum(dtype=float32)"])))
        stall = r["stall value"]
        rows.append(("fp16 running sum stalls at", "never (within n terms)" if stall is None else repr(stall)))
        first_inf = r["cumsum first inf index"]
        rows.append(("fp16 cumsum first inf at index", "never" if first_inf is None else str(first_inf)))
        return _table(rows)

    def _draw(self, v: float, n: int) -> None:
        from matplotlib.ticker import MaxNLocator

        exact = float(self._curves["exact"][n - 1])
        unit = exact if (exact != 0 and math.isfinite(exact)) else n * float(torch.tensor(v, dtype=torch.float32))
        if unit == 0 or not math.isfinite(unit):
            unit = 1.0
        ys = {k: self._curves[k][:n].double().numpy() / unit for k in self.LINES}
        peak = max((float(np.nanmax(y[np.isfinite(y)])) for y in ys.values() if np.isfinite(y).any()), default=0.0)
        top = next((t for t in self.TOPS if peak <= t), self.TOPS[-1])
        pic = self._pictures[top]
        p = pic.parts
        x = np.arange(1, n + 1) / n
        limit = abs(self.FP16_MAX / unit) if unit != 1.0 or exact != 0 else math.inf
        p["limit"].set_ydata([limit, limit])
        p["limit"].set_visible(limit <= top)
        for line, marker, k in zip(p["lines"], p["markers"], self.LINES):
            y = ys[k]
            line.set_data(x, np.where(np.isfinite(y), y, np.nan))
            inf = np.flatnonzero(np.isinf(y))
            marker.set_visible(inf.size > 0)
            if inf.size:
                marker.set_data([(inf[0] + 1) / n], [min(limit, 0.97 * top)])
        self._ticks(
            p["grid"][0],
            p["xt"],
            MaxNLocator(6, steps=[1, 2, 2.5, 5, 10], integer=True).tick_values(0, n),
            1.0 / n,
            1.02,
            vertical=True,
        )
        self._ticks(
            p["grid"][1],
            p["yt"],
            MaxNLocator(6, steps=[1, 2, 2.5, 5, 10]).tick_values(*sorted((0.0, top * unit))),
            1.0 / unit,
            top,
            vertical=False,
        )
        self.image.value = pic.png()

    @staticmethod
    def _ticks(grid, texts, values, scale: float, top: float, *, vertical: bool) -> None:
        pos = [(float(t), float(t) * scale) for t in values]
        pos = [(t, q) for t, q in pos if -1e-9 <= q <= top * (1 + 1e-9)]
        if vertical:
            grid.set_segments([[(q, -1.0), (q, 10.0)] for _, q in pos])
        else:
            grid.set_segments([[(-1.0, q), (2.0, q)] for _, q in pos])
        for i, text in enumerate(texts):
            if i < len(pos):
                t, q = pos[i]
                text.set_text(f"{t:.6g}")
                text.set_position((q, -0.015) if vertical else (-0.008, q))
                text.set_visible(True)
            else:
                text.set_visible(False)


def sum_explorer(v: float = 16.0, n: int = 4096) -> widgets.VBox:
    """The sum explorer's widget (its :class:`SumExplorer` is ``.explorer``)."""
    return SumExplorer(v, n).widget


# --- loss scaling (lesson 05) --------------------------------------------------------------------


class ScaleExplorer:
    """Pick a loss scale ``2**k`` with a slider (k = 0..32) and see where the gradients of a census
    (default: :func:`amp_lessons.fp16.gradient_census`) land in fp16: the histogram of log2 |g x
    scale| moves right over fp16's regions (a power-of-two scale shifts log2 |g| exactly), and a
    table gives each kind's fractions (:func:`amp_lessons.scaling.scaled_fractions`). The census
    is sorted and binned once; an update moves four step outlines and recounts by binary search.
    ``fractions`` is the shown ``scaled_fractions``."""

    MAX_EXPONENT = 32

    def __init__(self, exponent: int = 0, census: dict | None = None, fmt="fp16"):

        self._scaling = scaling
        self.fmt = get_format(fmt)
        self.census = fp16.gradient_census(fmt=self.fmt) if census is None else census
        self._index = scaling.CensusIndex(self.census)
        exponent = self._check(exponent)
        self.slider = widgets.IntSlider(
            exponent,
            min=0,
            max=self.MAX_EXPONENT,
            description="log2 scale",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox([self.slider, self.readout, self.image])
        self.widget.explorer = self
        self.fractions: dict = {}
        self._pic = self._background_picture()
        self.slider.observe(self._on_change, names="value")
        self.update()

    def _check(self, exponent) -> int:
        if (
            isinstance(exponent, bool)
            or not isinstance(exponent, numbers.Integral)
            or not 0 <= exponent <= self.MAX_EXPONENT
        ):
            raise ValueError(
                f"exponent must be an int from 0 to {self.MAX_EXPONENT} (scale 2**exponent), got {exponent!r}"
            )
        return int(exponent)

    def set(self, exponent=None) -> None:
        """Move the slider (runs the observer, as a drag does)."""
        if exponent is not None:
            self.slider.value = self._check(exponent)

    def _on_change(self, change) -> None:
        self.update()

    def _background_picture(self) -> _Picture:
        pic = _Picture((10, 4.4))
        with style_context():
            ax = pic.fig.add_axes((0.08, 0.13, 0.9, 0.74))
            plot_scaled_histogram(self.census, 0, self.fmt, ax=ax, max_exponent=self.MAX_EXPONENT)
            ax.set_title(f"Where the scaled gradients land in {self.fmt.name}", loc="left", pad=18)
            label = ax.text(
                0.99,
                0.95,
                "",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=12,
                fontweight="bold",
                bbox=dict(facecolor="white", edgecolor="#999999", alpha=0.9),
            )
        stairs = [_by_gid(ax, f"{kind} {part}")[0] for kind in ("weights", "activations") for part in ("fill", "edge")]
        pic.freeze([*stairs, label])
        pic.edges = stairs[0].get_data().edges.copy()
        return pic

    def update(self) -> None:
        k = int(self.slider.value)
        scale = math.ldexp(1.0, k)
        self.fractions = self._index.fractions(scale, self.fmt)
        self.readout.value = self._readout(k)
        *stairs, label = self._pic.moving
        for s in stairs:
            s.set_data(edges=self._pic.edges + k)
        label.set_text(f"scale = 2^{k} = {scale:,.0f}")
        self.image.value = self._pic.png()

    def _readout(self, k: int) -> str:

        head = "".join(
            f"<th style='text-align:left;padding:1px 14px 1px 0'>{h}</th>"
            for h in ("gradients x 2^" + str(k), *CENSUS_CATEGORIES)
        )
        body = ""
        for kind in ("weights", "activations"):
            fr = self.fractions[kind]
            cells = [kind] + [f"{100 * fr[c]:.3f}%" for c in CENSUS_CATEGORIES]
            for i, c in enumerate(CENSUS_CATEGORIES, start=1):
                if c in ("underflow to zero", "overflow") and fr[c] > 0:
                    cells[i] = f"<b style='color:#B00020'>{cells[i]}</b>"
            body += "<tr>" + "".join(f"<td style='padding:1px 14px 1px 0'>{v}</td>" for v in cells) + "</tr>"
        return (
            f"<table style='font-family:monospace;font-size:13px'><tr>{head}</tr>{body}</table>"
            "<div style='font-family:monospace;font-size:12px;color:#555'>exact zeros stay zero at any "
            "scale; fractions of all values</div>"
        )


def scale_explorer(exponent: int = 0, census: dict | None = None) -> widgets.VBox:
    """The scale explorer's widget (its :class:`ScaleExplorer` is ``.explorer``)."""
    return ScaleExplorer(exponent, census).widget


class ScalerStateExplorer:
    """GradScaler's rule as a picture: sliders for log2 init_scale (0..24), growth_factor
    (1.1..4), backoff_factor (0.05..0.95) and growth_interval (1..50, shortened from GradScaler's
    2000 so that growth shows within the 200 steps drawn); an IntSlider ``k`` with a button that
    makes step ``k``'s gradients overflow, and a "clear" button. The scale of every step comes from
    :func:`amp_lessons.scaling.simulate_scaler` (no training: the overflows are the ones you
    inject). ``history`` is the shown simulation, ``inf_steps`` the injected steps."""

    N_STEPS = 200
    DEFAULTS = dict(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)

    def __init__(
        self,
        log2_init_scale: int = 16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 20,
        inf_steps=(40, 41, 130),
    ):

        self._scaling = scaling
        style, wide = {"description_width": "initial"}, widgets.Layout(width="340px")
        self.init_slider = widgets.IntSlider(16, min=0, max=24, description="log2 init_scale", style=style, layout=wide)
        self.growth_slider = widgets.FloatSlider(
            2.0, min=1.1, max=4.0, step=0.1, readout_format=".1f", description="growth_factor", style=style, layout=wide
        )
        self.backoff_slider = widgets.FloatSlider(
            0.5,
            min=0.05,
            max=0.95,
            step=0.05,
            readout_format=".2f",
            description="backoff_factor",
            style=style,
            layout=wide,
        )
        self.interval_slider = widgets.IntSlider(
            20,
            min=1,
            max=50,
            description="growth_interval (short: default 2000)",
            style=style,
            layout=widgets.Layout(width="460px"),
        )
        self.step_slider = widgets.IntSlider(
            60, min=0, max=self.N_STEPS - 1, description="step k", style=style, layout=wide
        )
        self.inject_button = widgets.Button(
            description="inject inf at step k", button_style="danger", layout=widgets.Layout(width="180px")
        )
        self.clear_button = widgets.Button(description="clear", layout=widgets.Layout(width="80px"))
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.init_slider, self.growth_slider]),
                widgets.HBox([self.backoff_slider, self.interval_slider]),
                widgets.HBox([self.step_slider, self.inject_button, self.clear_button]),
                self.readout,
                self.image,
            ]
        )
        self.widget.explorer = self
        self.inf_steps: set[int] = set()
        self.history: dict = {}
        self._pic = self._picture()
        self._busy = True
        try:
            self.set(log2_init_scale, growth_factor, backoff_factor, growth_interval)
        finally:
            self._busy = False
        self.inf_steps = {self._check_step(k) for k in inf_steps}
        for w in (self.init_slider, self.growth_slider, self.backoff_slider, self.interval_slider):
            w.observe(self._on_change, names="value")
        self.inject_button.on_click(lambda _: self.inject(self.step_slider.value))
        self.clear_button.on_click(lambda _: self.clear())
        self.update()

    # the actions a learner takes
    def set(self, log2_init_scale=None, growth_factor=None, backoff_factor=None, growth_interval=None) -> None:
        """Move sliders (each change runs the observers, as a drag does); out-of-range values raise."""
        for slider, value, name in (
            (self.init_slider, log2_init_scale, "log2_init_scale"),
            (self.growth_slider, growth_factor, "growth_factor"),
            (self.backoff_slider, backoff_factor, "backoff_factor"),
            (self.interval_slider, growth_interval, "growth_interval"),
        ):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not slider.min <= value <= slider.max:
                raise ValueError(f"{name}={value!r} is outside the slider's range {slider.min:g}..{slider.max:g}")
            slider.value = value

    def inject(self, k: int) -> None:
        """Make the gradients of step ``k`` overflow (what the button does with the slider's k)."""
        self.inf_steps.add(self._check_step(k))
        self.update()

    def clear(self) -> None:
        """Remove every injected overflow."""
        self.inf_steps.clear()
        self.update()

    def _check_step(self, k) -> int:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 0 <= k < self.N_STEPS:
            raise ValueError(f"step must be an int from 0 to {self.N_STEPS - 1}, got {k!r}")
        return int(k)

    def _on_change(self, change) -> None:
        if not self._busy:
            self.update()

    def params(self) -> dict:
        """The simulate_scaler parameters the sliders show."""
        return dict(
            init_scale=math.ldexp(1.0, int(self.init_slider.value)),
            growth_factor=round(float(self.growth_slider.value), 6),
            backoff_factor=round(float(self.backoff_slider.value), 6),
            growth_interval=int(self.interval_slider.value),
        )

    def _picture(self) -> _Picture:
        pic = _Picture((10, 4.0))
        stand_in = self._scaling.simulate_scaler(self.N_STEPS, (0,), growth_interval=1)
        with style_context():
            ax = pic.fig.add_axes((0.09, 0.13, 0.89, 0.78))
            plot_scaler_history(stand_in, ax=ax)
        pic.parts = dict(ax=ax, line=_by_gid(ax, "scale")[0], skipped=_by_gid(ax, "scale skipped")[0])
        return pic

    def update(self) -> None:
        p = self.params()
        self.history = h = self._scaling.simulate_scaler(self.N_STEPS, sorted(self.inf_steps), **p)
        parts = self._pic.parts
        s = np.asarray(h["scale"], dtype=float)
        with np.errstate(divide="ignore"):
            y = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)), np.nan)
        steps = np.arange(s.size)
        bad = np.asarray(h["skipped"], dtype=bool)
        parts["line"].set_data(steps, y)
        parts["skipped"].set_data(steps[bad], y[bad])
        parts["skipped"].set_label(f"skipped step (inf/NaN gradient): {int(bad.sum())}")
        ax = parts["ax"]
        finite = y[np.isfinite(y)]
        lo, hi = (math.floor(finite.min()) - 1, math.ceil(finite.max()) + 1) if finite.size else (-1, 1)
        ax.set_ylim(lo, hi)
        _pow2_ticks(ax.yaxis, lo, hi, max_ticks=8)
        ax.legend(loc="best", fontsize=9)
        self.readout.value = self._readout(p, h)
        self._pic.canvas.draw()  # the y range changes with the parameters: a full (small) redraw
        self.image.value = _encode_png(self._pic.canvas)

    def _readout(self, p: dict, h: dict) -> str:
        final = h["scale_after"][-1]
        grows = sum(b > a for a, b in zip(h["scale"], h["scale_after"]))
        d = self.DEFAULTS
        rows = [
            ("injected overflows at steps", ", ".join(map(str, sorted(self.inf_steps))) or "none"),
            ("steps skipped", f"{sum(h['skipped'])} of {self.N_STEPS}"),
            ("times the scale grew", str(grows)),
            ("scale after the last step", _num(final) if final > 0 else "0 (underflowed in float32)"),
            (
                "this run",
                f"init_scale {_num(p['init_scale'])}, growth_factor {p['growth_factor']:g}, "
                f"backoff_factor {p['backoff_factor']:g}, growth_interval {p['growth_interval']}",
            ),
            (
                "GradScaler defaults",
                f"init_scale 2^16, growth_factor {d['growth_factor']:g}, "
                f"backoff_factor {d['backoff_factor']:g}, growth_interval {d['growth_interval']}",
            ),
        ]
        return _table([(k, html.escape(v)) for k, v in rows])


def scaler_state_explorer(**kwargs) -> widgets.VBox:
    """The scaler state explorer's widget (its :class:`ScalerStateExplorer` is ``.explorer``)."""
    return ScalerStateExplorer(**kwargs).widget


# --- fp8 scaling (lesson 07) ---------------------------------------------------------------------

__all__ += ["Fp8ScalingExplorer", "fp8_scaling_explorer"]


class Fp8ScalingExplorer:
    """Scale one tensor into an fp8 format: a slider for log2 of a per-tensor scale (-20..20), a
    dropdown for per-block amax scaling (none, 1x32, 1x128, 128x128; with blocks the slider is off:
    each block gets ``fmt.max / amax(block)``) and one for the format (e4m3 / e5m2). The picture is
    the histogram of log2 |x x scale| over the format's window; the readout gives the relative error
    and the fractions that flush to zero and saturate/overflow (:func:`amp_lessons.fp8.scaling_errors`'
    measures). Default tensor: the activation gradients of :func:`amp_lessons.fp8.model_tensors`.
    ``stats`` is the shown dict."""

    MIN_EXPONENT, MAX_EXPONENT = -20, 20
    BLOCKS = ("none", "1x32", "1x128", "128x128")
    FORMATS = {"e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"}

    def __init__(
        self, exponent: int = 0, block: str = "none", fmt: str = "e4m3", tensor=None, name: str = "activation gradients"
    ):

        self._fp8 = fp8
        if tensor is None:
            tensor = fp8.model_tensors()[name]
        self.name = name
        self.x = fp8.as_matrix(tensor, "tensor")
        self.exponent = self._check(exponent)
        self.slider = widgets.IntSlider(
            self.exponent,
            min=self.MIN_EXPONENT,
            max=self.MAX_EXPONENT,
            description="log2 scale",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="460px"),
        )
        self.block_box = widgets.Dropdown(
            options=self.BLOCKS, value=self._choice(block, self.BLOCKS, "block"), description="blocks"
        )
        self.fmt_box = widgets.ToggleButtons(
            options=list(self.FORMATS), value=self._choice(fmt, self.FORMATS, "fmt"), description="format"
        )
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox(
            [widgets.HBox([self.slider, self.block_box]), self.fmt_box, self.readout, self.image]
        )
        self.widget.explorer = self
        self.stats: dict = {}
        a = self.x.abs().reshape(-1)
        logs = torch.log2(a[a > 0])
        self._n = self.x.numel()
        self._lo = math.floor(float(logs.min())) + self.MIN_EXPONENT - 2
        self._hi = max(math.ceil(float(logs.max())) + self.MAX_EXPONENT, 18) + 2
        self._edges = np.arange(self._lo, self._hi + 1.0)
        self._ymax = min(1.0, 2.0 * float(np.histogram(logs.double().numpy(), bins=self._edges)[0].max()) / self._n)
        self._block_maps = {}  # (fmt, block) -> per-element scale, computed once
        self._pictures: dict[str, _Picture] = {}
        for fmt_name in self.FORMATS.values():  # both backgrounds up front: a format switch only blits
            self._picture(fmt_name)
        for w in (self.slider, self.block_box, self.fmt_box):
            w.observe(self._on_change, names="value")
        self.update()

    @staticmethod
    def _choice(v, options, what):
        if v not in options:
            raise ValueError(f"{what} must be one of {', '.join(map(repr, options))}, got {v!r}")
        return v

    def _check(self, exponent) -> int:
        if (
            isinstance(exponent, bool)
            or not isinstance(exponent, numbers.Integral)
            or not self.MIN_EXPONENT <= exponent <= self.MAX_EXPONENT
        ):
            raise ValueError(
                f"exponent must be an int from {self.MIN_EXPONENT} to {self.MAX_EXPONENT} "
                f"(scale 2**exponent), got {exponent!r}"
            )
        return int(exponent)

    def set(self, exponent=None, block=None, fmt=None) -> None:
        """Change the controls (runs the observers, as a learner's action does)."""
        if exponent is not None:
            self.slider.value = self._check(exponent)
        if block is not None:
            self.block_box.value = self._choice(block, self.BLOCKS, "block")
        if fmt is not None:
            self.fmt_box.value = self._choice(fmt, self.FORMATS, "fmt")

    def _on_change(self, change) -> None:
        self.update()

    def _picture(self, fmt_name: str) -> _Picture:
        pic = self._pictures.get(fmt_name)
        if pic is None:
            f = get_format(fmt_name)
            pic = _Picture((10, 4.2))
            with style_context():
                ax = pic.fig.add_axes((0.08, 0.14, 0.9, 0.74))
                _region_spans(ax, f, self._lo, self._hi)
                zero = np.zeros(len(self._edges) - 1)
                fill = ax.stairs(zero, self._edges, fill=True, alpha=0.45, color="#E6550D")
                edge = ax.stairs(zero, self._edges, lw=1.5, color="#E6550D")
                label = ax.text(
                    0.01,
                    0.95,
                    "",
                    transform=ax.transAxes,
                    ha="left",
                    va="top",
                    fontsize=11,
                    bbox=dict(facecolor="white", edgecolor="#999999", alpha=0.9),
                )
                ax.set_xlim(self._lo, self._hi)
                ax.set_ylim(0, self._ymax)
                ax.set_xlabel("log2 |value x scale| (what is cast to fp8)")
                ax.set_ylabel("fraction of values per binade")
                ax.set_title(f"{self.name} ({self._n:,} values) scaled into {f.name}", loc="left", pad=18)
            pic.freeze([fill, edge, label])
            self._pictures[fmt_name] = pic
        return pic

    def _scale(self, f, block: str):
        if block == "none":
            return math.ldexp(1.0, int(self.slider.value))
        key = (f.name, block)
        if key not in self._block_maps:
            br, bc = self._fp8.BLOCK_SHAPES[block]
            self._block_maps[key] = self._fp8.block_scale_map(self.x, f, br, bc)
        return self._block_maps[key]

    def update(self) -> None:

        fmt_name, block = self.FORMATS[self.fmt_box.value], self.block_box.value
        f = get_format(fmt_name)
        self.slider.disabled = block != "none"
        with _one_thread():
            s = self._scale(f, block)
            scaled = self.x * s
            q_scaled = quantize(scaled, f)
            self.stats = self._fp8.cast_stats(self.x, scaled, q_scaled, f, q_scaled / s)
            a = scaled.abs().reshape(-1)
            logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
        heights = np.histogram(logs, bins=self._edges)[0] / self._n
        pic = self._picture(fmt_name)
        fill, edge, label = pic.moving
        fill.set_data(heights)
        edge.set_data(heights)
        what = f"scale 2^{int(self.slider.value)}" if block == "none" else f"per-block amax scales ({block} tiles)"
        label.set_text(what)
        self.readout.value = _table(
            [
                ("scaling", html.escape(what)),
                ("relative error", f"{self.stats['relative error']:.3g}"),
                ("flushed to 0", f"{100 * self.stats['flushed']:.3f}% of all values"),
                ("saturated" if f.encoding == "fn" else "overflow to inf", f"{100 * self.stats['saturated']:.3f}%"),
            ]
        )
        self.image.value = pic.png()


def fp8_scaling_explorer(exponent: int = 0, block: str = "none", fmt: str = "e4m3", tensor=None) -> widgets.VBox:
    """The fp8 scaling explorer's widget (its :class:`Fp8ScalingExplorer` is ``.explorer``)."""
    return Fp8ScalingExplorer(exponent, block, fmt, tensor).widget
