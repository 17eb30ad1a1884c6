"""Lesson 02's explorer: a matmul's error as the inputs' mantissa shrinks."""

from __future__ import annotations

import math

import ipywidgets as widgets

from .._draw import named_artists
from .._explorer import Explorer, Picture, failure_html, readout_table
from .._validate import int_in
from ..formats import FORMATS, ROUNDING_MODES, FloatFormat
from ..style import style_context
from ..tf32 import _experiments as tf32
from ..tf32._plots import plot_error_vs_k

__all__ = [
    "MatmulPrecisionExplorer",
    "matmul_precision_explorer",
]


class MatmulPrecisionExplorer(Explorer):
    """The format designer's idea applied to a matmul: a slider for the mantissa bits of the
    inputs (exponent fixed at 8, like fp32/TF32/bf16) and a rounding menu; the designed inputs'
    RMS error against K is drawn over fp32, TF32, bf16 and fp16 inputs (all rounded bit-exactly and
    summed in IEEE fp32 on the CPU: the course's model, not a tensor core).

    The read-out flags a failure when the RMS error at the largest K reaches ``FAILURE_RATIO`` (10%)
    of the exact result's RMS: then not even the first decimal digit of a typical entry is right."""

    FAILURE_RATIO = 0.1

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
        int_in(mantissa_bits, "mantissa_bits", 0, 23)
        if rounding not in ROUNDING_MODES:
            raise ValueError(f"rounding={rounding!r}: use one of {', '.join(map(repr, ROUNDING_MODES))}")
        int_in(kmax, "kmax", 32, tf32.MAX_DIM, f"an int from 32 to {tf32.MAX_DIM} (the largest k the lesson runs)")
        self.ks = [2**i for i in range(4, int(math.log2(kmax)) + 1)]
        self._shape = dict(m=m, n=n, seed=seed)
        self.data = tf32.error_vs_k(self.ks, **self._shape)
        self.mantissa_slider = widgets.IntSlider(
            mantissa_bits, min=0, max=23, description="mantissa bits", style={"description_width": "initial"}
        )
        self.rounding_menu = widgets.Dropdown(options=list(ROUNDING_MODES), value=rounding, description="rounding")
        self._pic = self._background_picture()
        self.rms: tuple[float, ...] = ()
        super().__init__({"mantissa_bits": self.mantissa_slider, "rounding": self.rounding_menu})

    def _background_picture(self) -> Picture:
        pic = Picture((9, 4.8))
        with style_context():
            ax = pic.fig.add_subplot()
            pic.fig.subplots_adjust(left=0.11, right=0.98, bottom=0.12, top=0.92)
            plot_error_vs_k(self.data, ax=ax, extra={"your inputs": self.data.rms["tf32"]})
            all_rms = [v for line in self.data.rms.values() for v in line if v > 0]
            ax.set_ylim(min(all_rms) / 30, 10 * max(self.data.ref_rms))
        line = named_artists(ax)["your inputs"]
        line.set(lw=3, zorder=3)
        pic.freeze({"line": line})
        return pic

    def draw(self):
        m, rounding = self.mantissa_slider.value, self.rounding_menu.value
        f = FloatFormat(f"e8m{m}", 8, m)
        self.rms = tf32.error_vs_k(self.ks, (f,), rounding=rounding, **self._shape).rms[f.name]
        same = [n for n, g in FORMATS.items() if (g.exponent_bits, g.mantissa_bits, g.encoding) == (8, m, "ieee")]
        name = f"e8m{m}" + (f" = {same[0]}" if same else "")
        ratio = self.rms[-1] / self.data.ref_rms[-1]
        failure = ""
        if ratio >= self.FAILURE_RATIO:
            failure = failure_html(
                f"{name} inputs rounded {rounding}: at K={self.ks[-1]} the RMS error is {100 * ratio:.0f}% of the "
                "result's RMS, so not even the first decimal digit of a typical entry is right"
            )
        self._pic.parts["line"].set_data(self.ks, [max(v, 1e-30) for v in self.rms])
        return failure + readout_table(
            [
                ("your inputs", f"{name}, rounded {rounding}, fp32 accumulation"),
                (f"RMS error at K={self.ks[-1]}", f"{self.rms[-1]:.3g}"),
                ("RMS of the exact result", f"{self.data.ref_rms[-1]:.3g}"),
                ("error / result", f"{ratio:.3g}"),
            ]
        ), self._pic


def matmul_precision_explorer(mantissa_bits: int = 10, rounding: str = "nearest_even") -> widgets.VBox:
    """The matmul precision explorer's widget (its :class:`MatmulPrecisionExplorer` is ``.explorer``)."""
    return MatmulPrecisionExplorer(mantissa_bits, rounding).widget
