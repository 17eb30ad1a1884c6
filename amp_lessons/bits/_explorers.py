"""Lesson 01's explorers: the bit explorer (a value's bits in any format) and the format designer."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from .._draw import bar_height, decade_ticks, named_artists, staircase
from .._explorer import Explorer, Picture, error_html, failure_html, num, parse_value, readout_table
from .._table import TONES
from ..bits._describe import BitInfo, describe_code, describe_value
from ..bits._plots import plot_bit_layout, plot_range_precision, plot_spacing
from ..formats import ENCODINGS, FORMATS, FloatFormat, get_format
from ..style import style_context

__all__ = ["BitExplorer", "FormatDesigner", "bit_explorer", "format_designer"]


# The bit buttons' colours: pale with black text for a 0, deep with white for a 1 (WCAG AA contrast in every theme).
_BIT_COLORS = {"sign": ("#F4B6B4", "#B03A2E"), "exponent": ("#B5DFB0", "#1E8449"), "mantissa": ("#B3D7EF", "#1F618D")}
_BIT_CSS = (
    "<style>"
    + "".join(
        f".jupyter-widgets.jupyter-button.amp-bit-{field} {{background: {pale} !important; color: #000 !important}}"
        f".jupyter-widgets.jupyter-button.amp-bit-{field}.mod-active {{background: {deep} !important; color: #fff !important}}"
        for field, (pale, deep) in _BIT_COLORS.items()
    )
    + "</style>"
)
_FIELD_TEXT = {
    n: f"color-mix(in srgb, {c} 60%, var(--jp-content-font-color1, #000))"
    for n, c in {"sign": "#B03A2E", "exponent": "#1E8449", "mantissa": "#1F618D"}.items()
}


class BitExplorer(Explorer):
    """Type a value, pick a format, see (and flip) the bits it is stored as: ``value_box``, ``format_menu``,
    ``bit_row`` (one ToggleButton per bit, most significant first; a flip recomputes the value with ``from_bits``).
    ``info`` is the shown :class:`~amp_lessons.bits._describe.BitInfo`, ``error`` the last input problem."""

    SAMPLE_TEXTS = {
        "value": (
            "0.1", "-0.0", "1e39", "nan", "inf", "1e-50", "65504", "3.14159", "-2.5e-6", "448", "1e-7", "not a number"
        )
    }  # fmt: skip
    EXTRA_MOVES = ("bit_row",)

    def __init__(self, value=0.1, fmt="fp16"):
        f = get_format(fmt)
        self._formats = {**FORMATS, f.name: f}  # a learner's own FloatFormat joins the menu
        text = value if isinstance(value, str) else repr(parse_value(value))
        parse_value(text)  # a bad string raises here, naming it
        self.value_box = widgets.Text(
            value=text, description="value", continuous_update=False, layout=widgets.Layout(width="280px")
        )
        self.format_menu = widgets.Dropdown(options=list(self._formats), value=f.name, description="format")
        self.bit_row = widgets.HBox(layout=widgets.Layout(flex_flow="row wrap"))
        self.info: BitInfo | None = None
        self.error = ""
        self._flipped: BitInfo | None = None  # the bit pattern a flip asked for, shown by the next draw
        self._buttons_for = None  # the format the bit buttons are styled for
        # one pool of bit buttons, grown to the widest format shown and restyled on a format change
        self._pool: list[widgets.ToggleButton] = []
        self._pictures: dict[str, Picture] = {}
        self._button_layout = widgets.Layout(width="30px", padding="0px")  # one, shared: cheaper rows
        super().__init__(
            {"value": self.value_box, "format": self.format_menu},
            [widgets.HBox([self.value_box, self.format_menu]), self.bit_row],
            extra=[widgets.HTML(_BIT_CSS)],
        )

    @property
    def fmt(self) -> FloatFormat:
        return self._formats[self.format_menu.value]

    def check(self, name: str, value):
        if name == "value":  # a string is typed as is: an unreadable one is explained in the read-out
            return value if isinstance(value, str) else repr(parse_value(value))
        name = get_format(value, what="format").name
        if name not in self._formats:
            raise ValueError(f"format {name!r} is not in this explorer's menu: {', '.join(self._formats)}")
        return name

    def _on_bit(self, change) -> None:
        row = self._row()
        self.show_code(sum(int(b.value) << (len(row) - 1 - i) for i, b in enumerate(row)))

    def show_code(self, code: int) -> None:
        """Show the value of bit pattern ``code`` and write it into the value box."""
        self._flipped = info = describe_code(code, self.fmt)
        with self.holding():
            self.value_box.value = repr(info.stored)
        self.update()

    def draw(self):
        if self._buttons_for != self.fmt.name:
            self._use_buttons()
        info, self._flipped = self._flipped, None
        if info is None:
            try:
                v = parse_value(self.value_box.value)
            except ValueError as err:  # keep showing the last value, under the message
                self.error = str(err)
                return error_html(self.error) + (self._readout(self.info) if self.info else ""), None
            info = describe_value(v, self.fmt)
        self.error = ""
        self._show(info)
        return self._readout(info), self._draw(info)

    def _row(self) -> list[widgets.ToggleButton]:
        """The buttons of the current format's bits, most significant first."""
        return self._pool[: self.fmt.bits]

    def _use_buttons(self) -> None:
        f = self.fmt
        while len(self._pool) < f.bits:
            b = widgets.ToggleButton(description="0", layout=self._button_layout)
            self.watch(b, self._on_bit)
            self._pool.append(b)
        for i, b in enumerate(self._pool[: f.bits]):
            field = "sign" if i == 0 else "exponent" if i <= f.exponent_bits else "mantissa"
            with b.hold_sync():  # one message per button, and none where nothing changes
                for other in _BIT_COLORS:
                    if other != field:
                        b.remove_class(f"amp-bit-{other}")
                b.add_class(f"amp-bit-{field}")
                b.tooltip = f"bit {f.bits - 1 - i} ({field})"
        self.bit_row.children = self._row()
        self._buttons_for = f.name

    def _show(self, info: BitInfo) -> None:
        self.info = info
        row = self._pool[: info.fmt.bits]
        digits = format(info.code, f"0{len(row)}b") if info.code is not None else None
        with self.holding():
            for i, b in enumerate(row):
                with b.hold_sync():
                    b.value = digits is not None and digits[i] == "1"
                    b.description = digits[i] if digits is not None else "?"
                    b.disabled = digits is None

    @staticmethod
    def _problem(info: BitInfo) -> str:
        """What went wrong in storing the shown value ("" if nothing): overflow, underflow, inf, NaN."""
        f, typed = info.fmt, info.typed
        if info.overflowed:
            how = {"inf": "becomes inf", "saturated": "saturates to the largest finite value", "nan": "becomes NaN"}
            return (
                f"overflow: {typed!r} is beyond {f.name}'s largest finite value {f.max!r}; "
                f"it {how[info.kind]} ({info.stored!r})"
            )
        if info.kind == "flushed":
            return (
                f"underflow: {typed!r} is below half of {f.name}'s smallest subnormal "
                f"{f.smallest_subnormal!r}; it is stored as {info.stored!r}"
            )
        if info.kind == "inf":
            return f"inf: {f.name} stores {info.stored!r} here" + ("" if typed is None else f" (typed {typed!r})")
        if info.kind == "nan":
            if info.code is None:
                return f"NaN cannot be stored: {info.formula}"
            return f"NaN: {f.name} stores not-a-number here; any arithmetic with it gives NaN"
        return ""

    def _readout(self, info: BitInfo) -> str:
        f = info.fmt
        typed = "(set by flipping bits)" if info.typed is None else html.escape(repr(info.typed))
        rows = [("typed value", typed), (f"stored in {f.name}", f"<b>{html.escape(repr(info.stored))}</b>")]
        rows.append(("class", html.escape(info.kind)))
        if info.fields is not None:
            s, e, m = info.fields
            parts = info.bit_string.split(" ")
            names = ["sign", "exponent", "mantissa"][: len(parts)]
            rows.append(
                ("bits", " ".join(f"<span style='color: {_FIELD_TEXT[n]}'>{p}</span>" for n, p in zip(names, parts)))
            )
            rows.append(
                ("sign / exponent / mantissa", f"{s} / {e} (bias {f.bias})" + (f" / {m}" * bool(f.mantissa_bits)))
            )
        rows.append(("formula", html.escape(info.formula)))
        if info.typed is not None:
            rows += [("absolute error", f"{info.abs_error:.6g}"), ("relative error", f"{info.rel_error:.6g}")]
        problem = self._problem(info)
        return (failure_html(problem) if problem else "") + readout_table(rows)

    def _picture(self, f: FloatFormat) -> Picture:
        """The format's bit layout, drawn once; only its digits (two scatters of glyphs) move."""
        if f.name not in self._pictures:
            pic = Picture((min(13.0, max(7.0, 0.36 * f.bits + 2.0)), 2.3))
            with style_context():
                ax = pic.fig.add_axes((0.01, 0.01, 0.98, 0.86))
                plot_bit_layout(f, 0.0, ax=ax, caption=False)
            texts = named_artists(ax)["bit digit"]
            for t in texts:
                t.set_visible(False)
            size = (0.75 * texts[0].get_fontsize()) ** 2
            glyphs = [ax.scatter([], [], s=size, marker=f"$\\mathbf{{{d}}}$", c="k", linewidths=0) for d in "01"]
            pic.freeze(glyphs)
            pic.centers = np.array([t.get_position() for t in texts])
            self._pictures[f.name] = pic
        return self._pictures[f.name]

    def _draw(self, info: BitInfo) -> Picture:
        pic = self._picture(info.fmt)
        zeros, ones = pic.moving
        n = len(pic.centers)
        bits = np.array([c == "1" for c in format(info.code, f"0{n}b")]) if info.code is not None else None
        zeros.set_offsets(pic.centers[~bits] if bits is not None else np.empty((0, 2)))
        ones.set_offsets(pic.centers[bits] if bits is not None else np.empty((0, 2)))
        return pic


def bit_explorer(value=0.1, fmt="fp16") -> widgets.VBox:
    """The bit explorer's widget (its :class:`BitExplorer` is ``.explorer``)."""
    return BitExplorer(value, fmt).widget


class FormatDesigner(Explorer):
    """Design a format with sliders (exponent bits 1..8, mantissa bits 0..23, encoding): its spacing and range
    next to known formats, and a table of its constants. ``fmt`` is the last valid design, ``error`` the message of an
    impossible one."""

    REFERENCES = ("fp32", "bf16", "fp16")
    BARS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")

    def __init__(self, exponent_bits: int = 5, mantissa_bits: int = 10, encoding: str = "ieee"):
        style = {"description_width": "initial"}
        self.exponent_slider = widgets.IntSlider(1, min=1, max=8, description="exponent bits", style=style)
        self.mantissa_slider = widgets.IntSlider(0, min=0, max=23, description="mantissa bits", style=style)
        self.encoding_menu = widgets.Dropdown(options=list(ENCODINGS), description="encoding")
        controls = dict(
            exponent_bits=self.exponent_slider, mantissa_bits=self.mantissa_slider, encoding=self.encoding_menu
        )
        for (name, w), v in zip(controls.items(), (exponent_bits, mantissa_bits, encoding)):
            w.value = self.checked(w, name, v)
        self.fmt: FloatFormat | None = None
        self.error = ""
        self._pic = self._background_picture()
        super().__init__(controls)

    def draw(self):
        e, m, enc = self.exponent_slider.value, self.mantissa_slider.value, self.encoding_menu.value
        try:
            f = FloatFormat("design", e, m, enc)
        except ValueError as err:
            self.error = str(err)
            kept = ""
            if self.fmt is not None:
                kept = f"<div style='color: {TONES['muted']}'>still showing the last valid design: {self._describe(self.fmt)}</div>"
            return failure_html(f"e{e}m{m} {enc} cannot be built: {self.error}") + kept, None
        self.error = ""
        self.fmt = f
        return self._readout(f), self._draw(f)

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
        specials = (
            ", ".join([s for s, ok in (("inf", f.has_inf), ("NaN", f.has_nan), ("-0", f.has_negative_zero)) if ok])
            or "none"
        )
        rows = [
            ("bits", f"{f.bits} = 1 + {f.exponent_bits} + {f.mantissa_bits}"),
            ("bias", str(f.bias)),
            ("max", num(f.max)),
            ("smallest normal", num(f.smallest_normal)),
            ("smallest subnormal", num(f.smallest_subnormal)),
            ("eps", num(f.eps)),
            ("decimal digits", f"{(f.mantissa_bits + 1) * math.log10(2):.1f} = (m + 1) log10 2"),
            ("dynamic range", f"{f.dynamic_range_decades:.1f} decades"),
            ("special values", specials),
        ]
        return title + readout_table(rows)

    def _background_picture(self) -> Picture:
        """Spacing and range panels drawn once with a stand-in design whose artists then move."""
        pic = Picture((13, 6.0))
        stand_in = FloatFormat("design", 5, 10)
        with style_context():
            left, right = pic.fig.subplots(1, 2, width_ratios=[1.1, 1])
            pic.fig.subplots_adjust(left=0.065, right=0.99, bottom=0.11, top=0.93, wspace=0.4)
            plot_spacing((*self.REFERENCES, stand_in), ax=left)
            left.set_xlim(2.0**-156, 2.0**134)
            left.set_ylim(2.0**-156, 2.0**134)
            decade_ticks(left)
            legend = left.get_legend()
            labels = ["your design" if t.get_text().startswith("design") else t.get_text() for t in legend.get_texts()]
            legend.remove()
            left.legend(legend.legend_handles, labels, loc="upper left", fontsize=9)
            left.set_title("Spacing of values (1 ulp)")
            plot_range_precision((stand_in, *self.BARS), ax=right)
            right.get_legend().remove()
            right.set_yticks(right.get_yticks(), ["your design", *[t.get_text() for t in right.get_yticklabels()[1:]]])
            right.set_title("Range and precision (hatched: subnormals)", fontsize=12)
        spacing, bars = named_artists(left), named_artists(right)
        line = spacing["design"]
        line.set(lw=3.2, zorder=3)
        top, normal = spacing["design max"], spacing["design smallest normal"]
        sub_bar, normal_bar = bars["design subnormals"], bars["design normals"]
        pic.freeze(dict(line=line, top=top, normal=normal, sub_bar=sub_bar, normal_bar=normal_bar))
        return pic

    def _draw(self, f: FloatFormat) -> Picture:
        line, top, normal, sub_bar, normal_bar = (
            self._pic.parts[k] for k in ("line", "top", "normal", "sub_bar", "normal_bar")
        )
        xs, ys = staircase(f)
        line.set_data(xs, ys)
        top.set_data([f.max], [ys[-1]] if len(ys) else [math.nan])
        normal.set_data([f.smallest_normal], [math.ldexp(1.0, f.emin - f.mantissa_bits)])
        normal.set_visible(len(xs) > 0)
        h = bar_height(f)
        for bar, lo, hi in ((sub_bar, f.smallest_subnormal, f.smallest_normal), (normal_bar, f.smallest_normal, f.max)):
            bar.set_bounds(lo, -h / 2, hi - lo, h)
            bar.set_visible(hi > lo)
        return self._pic


def format_designer(exponent_bits: int = 5, mantissa_bits: int = 10, encoding: str = "ieee") -> widgets.VBox:
    """The format designer's widget (its :class:`FormatDesigner` is ``.explorer``)."""
    return FormatDesigner(exponent_bits, mantissa_bits, encoding).widget
