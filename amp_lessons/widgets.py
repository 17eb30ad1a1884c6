"""Interactive explorers (ipywidgets): one goal per demo, cheap updates, sane at every extreme.

Each explorer is a small class holding its widgets and its update logic, so tests and benchmarks
drive it without a browser; the functions :func:`bit_explorer` and :func:`format_designer` return
its displayable ``VBox`` (with the controller as ``.explorer``).

Pictures are drawn by the ``plot_*`` functions of :mod:`amp_lessons.plots` on figures the
explorer owns (never registered with pyplot, so nothing is shown twice and no figure piles up)
and sent as a PNG to an ``ipywidgets.Image``: the same picture under any matplotlib backend
(inline, widget, Agg), and an update's whole cost is paid inside it, where
:func:`measure_update_ms` times it. To stay well under 100 ms an update does not redraw the
figure: the parts that never change (axes, ticks, reference formats, boxes) are rendered once
into a background, and an update restores it and draws only the artists that moved (blitting).
"""

from __future__ import annotations

import functools
import html
import io
import math
import numbers
import statistics
import time

import ipywidgets as widgets
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from .formats import ENCODINGS, FORMATS, ROUNDING_MODES, FloatFormat, get_format
from .plots import (
    BitInfo,
    _bar_height,
    _decade_ticks,
    _staircase,
    describe_code,
    describe_value,
    plot_bit_layout,
    plot_error_vs_k,
    plot_range_precision,
    plot_spacing,
)
from .style import style_context

__all__ = [
    "BitExplorer",
    "FormatDesigner",
    "MatmulPrecisionExplorer",
    "bit_explorer",
    "format_designer",
    "matmul_precision_explorer",
    "measure_update_ms",
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
        buf, format="png", compress_level=1)
    return buf.getvalue()


def _by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def _image() -> widgets.Image:
    return widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))


def _table(rows) -> str:
    cells = "".join(
        f"<tr><td style='padding:1px 12px 1px 0;color:#555'>{html.escape(k)}</td><td>{v}</td></tr>"
        for k, v in rows
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
        self.value_box = widgets.Text(value=text, description="value", continuous_update=False,
                                      layout=widgets.Layout(width="280px"))
        self.format_menu = widgets.Dropdown(options=list(self._formats), value=f.name, description="format")
        self.bit_row = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.readout = widgets.HTML()
        self.image = _image()
        self.widget = widgets.VBox([widgets.HBox([self.value_box, self.format_menu]), self.bit_row,
                                    self.readout, self.image])
        self.widget.explorer = self
        self.info: BitInfo | None = None
        self.error = ""
        self._busy = False
        self._buttons: dict[str, list[widgets.ToggleButton]] = {}
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
        button = self._buttons[self.fmt.name][n - 1 - position]
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

    def _on_bit(self, position: int, change) -> None:
        if self._busy:
            return
        row = self._buttons[self.fmt.name]
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

    def _use_buttons(self) -> None:
        f = self.fmt
        if f.name not in self._buttons:
            row = []
            for i in range(f.bits):
                field = "sign" if i == 0 else "exponent" if i <= f.exponent_bits else "mantissa"
                b = widgets.ToggleButton(description="0", button_style=_BUTTON_STYLE[field],
                                         tooltip=f"bit {f.bits - 1 - i} ({field})", layout=self._button_layout)
                b.observe(functools.partial(self._on_bit, f.bits - 1 - i), names="value")
                row.append(b)
            self._buttons[f.name] = row
        self.bit_row.children = self._buttons[f.name]

    def _show(self, info: BitInfo) -> None:
        self.info = info
        row = self._buttons[info.fmt.name]
        digits = format(info.code, f"0{len(row)}b") if info.code is not None else None
        self._busy = True
        try:
            for i, b in enumerate(row):
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
            names = ["sign", "exponent", "mantissa"][:len(parts)]
            rows.append(("bits", " ".join(f"<span style='color:{_FIELD_TEXT[n]}'>{p}</span>"
                                          for n, p in zip(names, parts))))
            rows.append(("sign / exponent / mantissa",
                         f"{s} / {e} (bias {f.bias}) / {m}" if f.mantissa_bits else f"{s} / {e} (bias {f.bias})"))
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
        self.widget = widgets.VBox([
            widgets.HBox([self.exponent_slider, self.mantissa_slider, self.encoding_menu]),
            self.readout, self.image,
        ])
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
            f"same as {html.escape(', '.join(same))}" if same else "not a format the course names")
        if f.emax < f.emin:
            title += " <span style='color:#B00020'>(no positive finite value: only 0 and NaN)</span>"
        specials = ", ".join(
            [s for s, ok in (("inf", f.has_inf), ("NaN", f.has_nan), ("-0", f.has_negative_zero)) if ok]) or "none"
        rows = [
            ("bits", f"{f.bits} = 1 + {f.exponent_bits} + {f.mantissa_bits}"), ("bias", str(f.bias)),
            ("max", _num(f.max)), ("smallest normal", _num(f.smallest_normal)),
            ("smallest subnormal", _num(f.smallest_subnormal)), ("eps", _num(f.eps)),
            ("decimal digits", str(f.decimal_digits)),
            ("dynamic range", f"{f.dynamic_range_decades:.1f} decades"), ("special values", specials),
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
        line, = _by_gid(left, "design")
        line.set(lw=3.2, zorder=3)
        pic.freeze([line, *_by_gid(left, "design max"), *_by_gid(left, "design smallest normal"),
                    *_by_gid(right, "design subnormals"), *_by_gid(right, "design normals")])
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

    def __init__(self, mantissa_bits: int = 10, rounding: str = "nearest_even", *, m: int = 32, n: int = 32,
                 kmax: int = 4096, seed: int = 0):
        from . import tf32  # lesson-specific experiments, imported when this explorer is built

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
        self.mantissa_slider = widgets.IntSlider(mantissa_bits, min=0, max=23, description="mantissa bits",
                                                 style={"description_width": "initial"})
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
        line, = _by_gid(ax, "your inputs")
        line.set(lw=3, zorder=3)
        pic.freeze([line])
        return pic

    def update(self) -> None:
        m, rounding = self.mantissa_slider.value, self.rounding_menu.value
        f = FloatFormat(f"e8m{m}", 8, m)
        self.rms = self._tf32.error_vs_k(self.ks, (f,), rounding=rounding, **self._shape)["rms"][f.name]
        same = [n for n, g in FORMATS.items() if (g.exponent_bits, g.mantissa_bits, g.encoding) == (8, m, "ieee")]
        name = f"e8m{m}" + (f" = {same[0]}" if same else "")
        self.readout.value = _table([
            ("your inputs", f"{name}, rounded {rounding}, fp32 accumulation"),
            (f"RMS error at K={self.ks[-1]}", f"{self.rms[-1]:.3g}"),
            ("RMS of the exact result", f"{self.data['ref_rms'][-1]:.3g}"),
        ])
        line = self._pic.moving[0]
        line.set_data(self.ks, [max(v, 1e-30) for v in self.rms])
        self.image.value = self._pic.png()


def matmul_precision_explorer(mantissa_bits: int = 10, rounding: str = "nearest_even") -> widgets.VBox:
    """The matmul precision explorer's widget (its :class:`MatmulPrecisionExplorer` is ``.explorer``)."""
    return MatmulPrecisionExplorer(mantissa_bits, rounding).widget


# --- timing ------------------------------------------------------------------------------------

_VALUES = ["0.1", "-0.0", "1e39", "nan", "inf", "1e-50", "65504", "3.14159", "-2.5e-6", "448", "1e-7"]


def _bit_explorer_steps(ex: BitExplorer) -> dict:
    """kind -> (untimed preparation, timed action), both called with the step number."""
    names = list(FORMATS)

    def fp32_number(i):  # flips start from a number in the widest format (the slowest picture)
        if ex.fmt.name != "fp32" or ex.info is None or ex.info.code is None:
            ex.set_format("fp32")
            ex.set_value("0.1")

    return {
        "value": (lambda i: ex.set_format("fp16"), lambda i: ex.set_value(_VALUES[i % len(_VALUES)])),
        "format": (lambda i: None, lambda i: ex.set_format(names[(names.index(ex.fmt.name) + 1) % len(names)])),
        "flip bit": (fp32_number, lambda i: ex.flip_bit((7 * i) % ex.fmt.bits)),
    }


def _designer_steps(d: FormatDesigner) -> dict:
    def sweep(lo, hi, i):  # lo..hi..lo..., so both extremes are visited
        period = 2 * (hi - lo)
        k = i % period
        return lo + (k if k <= hi - lo else period - k)

    def nothing(i):
        return None

    return {
        "exponent bits": (nothing, lambda i: d.set(exponent_bits=sweep(1, 8, i + 1))),
        "mantissa bits": (nothing, lambda i: d.set(mantissa_bits=sweep(0, 23, i + 1))),
        "encoding": (nothing, lambda i: d.set(encoding=ENCODINGS[(i + 1) % len(ENCODINGS)])),
    }


def _matmul_steps(ex: MatmulPrecisionExplorer) -> dict:
    def nothing(i):
        return None

    return {
        "mantissa bits": (nothing, lambda i: ex.set(mantissa_bits=(i * 7) % 24)),  # visits 0 and 23
        "rounding": (nothing, lambda i: ex.set(rounding=ROUNDING_MODES[(i + 1) % len(ROUNDING_MODES)])),
    }


def measure_update_ms(widget_box, n: int = 20) -> dict[str, dict[str, float]]:
    """Time ``n`` updates of each kind on an explorer (its VBox or the controller), in-process:
    each update is what one learner action costs (readout, plot and PNG). Returns
    ``{kind: {"median": ms, "max": ms}}``. Leaves the explorer in some other state."""
    ex = getattr(widget_box, "explorer", widget_box)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(ex, BitExplorer):
        steps = _bit_explorer_steps(ex)
    elif isinstance(ex, FormatDesigner):
        steps = _designer_steps(ex)
    elif isinstance(ex, MatmulPrecisionExplorer):
        steps = _matmul_steps(ex)
    else:
        raise TypeError(f"expected an explorer widget from amp_lessons.widgets, got {type(widget_box).__name__}")
    result = {}
    for kind, (prepare, act) in steps.items():
        times = []
        for i in range(n):
            prepare(i)
            t0 = time.perf_counter()
            act(i)
            times.append(1e3 * (time.perf_counter() - t0))
        result[kind] = {"median": statistics.median(times), "max": max(times)}
    return result
