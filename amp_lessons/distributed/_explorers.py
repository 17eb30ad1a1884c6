"""Lesson 09's explorer: the error of summing N ranks' gradients, by the dtype and the order of the sum."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets

from .._explorer import Explorer, Picture, failure_html, readout_table
from ..formats import get_format
from ..style import format_color, style_context
from ._experiments import REDUCTION_FORMATS, REDUCTION_ORDERS, reduction_sweep
from ._records import ReductionSweep

__all__ = [
    "ReductionExplorer",
    "reduction_explorer",
]

_FLOOR = 1e-9  # an error of exactly 0 is drawn here (log axis)
_TOP = 3.0  # an overflowed sum (error inf) is drawn here, marked with a cross


class ReductionExplorer(Explorer):
    """How wrong the sum of N ranks' gradients is: sliders for N (2 to 4096) and the gradients' magnitude (10**k),
    buttons for the dtype of the sum and its order (ring or pairwise). The picture draws the error against N, the
    read-out the error at N (EMULATED), flagged as a failure from ``FAILURE_ERROR``, an overflow or a flush."""

    FAILURE_ERROR = 0.01
    WORLD_SIZES = tuple(2**k for k in range(1, 13))
    LOG10_SCALES = (-12, 6)
    COLD_MOVES = {"fmt": "_sweeps", "order": "_sweeps", "log10_scale": "_sweeps"}  # a new setting computes a sweep

    def __init__(self, world_size: int = 16, fmt: str = "bf16", order: str = "ring", log10_scale: int = 0):
        self._sweeps: dict[tuple, ReductionSweep] = {}
        self.ranks_slider = widgets.SelectionSlider(
            options=list(self.WORLD_SIZES), description="ranks N", continuous_update=False
        )
        self.format_buttons = widgets.ToggleButtons(options=list(REDUCTION_FORMATS), description="sum in")
        self.order_buttons = widgets.ToggleButtons(options=list(REDUCTION_ORDERS), description="order")
        self.scale_slider = widgets.IntSlider(
            min=self.LOG10_SCALES[0], max=self.LOG10_SCALES[1], description="log10 gradient scale",
            style={"description_width": "initial"}, continuous_update=False,
        )  # fmt: skip
        controls = dict(world_size=self.ranks_slider, fmt=self.format_buttons, order=self.order_buttons,
                        log10_scale=self.scale_slider)  # fmt: skip
        self.opened_at(controls, world_size=world_size, fmt=fmt, order=order, log10_scale=log10_scale)
        rows = widgets.VBox(
            [widgets.HBox([self.ranks_slider, self.scale_slider]), widgets.HBox([self.format_buttons]),
             widgets.HBox([self.order_buttons])]
        )  # fmt: skip
        self._pic = self._background_picture()
        self.sweep: ReductionSweep | None = None
        self.error = math.nan
        super().__init__(controls, [rows])

    def _sweep(self, fmt: str, order: str, k: int) -> ReductionSweep:
        key = (fmt, order, k)
        if key not in self._sweeps:
            self._sweeps[key] = reduction_sweep(fmt, order, 10.0**k, max_world_size=self.WORLD_SIZES[-1])
        return self._sweeps[key]

    def _background_picture(self) -> Picture:
        pic = Picture((9, 4.4))
        with style_context():
            ax = pic.fig.add_subplot()
            pic.fig.subplots_adjust(left=0.1, right=0.98, bottom=0.13, top=0.9)
            for fmt in ("bf16", "fp32"):
                ref = self._sweep(fmt, "ring", 0)
                ax.plot(ref.world_sizes, [max(e, _FLOOR) for e in ref.errors], "--", color=format_color(fmt),
                        alpha=0.45, lw=1.5, label=f"{fmt} ring, unit gradients")  # fmt: skip
            ax.axhline(self.FAILURE_ERROR, color="#888888", lw=0.8, ls=":")
            ax.text(2.1, self.FAILURE_ERROR * 1.25, "1% of the sum", fontsize="small", color="#777777")
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xlim(1.6, 5000)
            ax.set_ylim(_FLOOR / 2, _TOP * 2)
            ax.set_xlabel("ranks whose gradients are summed (N)")
            ax.set_ylabel("relative error of the sum")
            ax.set_title("Summing N ranks' gradients (emulated)")
            (line,) = ax.plot(
                [], [], "-", lw=3, marker="o", ms=4, color="#555555", label="your sum (its dtype's colour)", zorder=3
            )
            (over,) = ax.plot([], [], "x", ms=10, mew=2.5, color="#c62828", label="overflow (inf)", zorder=4)
            (here,) = ax.plot([], [], "o", ms=13, mfc="none", mew=2.5, color="#222222", zorder=5)
            ax.legend(loc="lower right", fontsize="small", ncols=2)
        pic.freeze({"line": line, "over": over, "here": here})
        return pic

    def draw(self):
        n, fmt = self.ranks_slider.value, self.format_buttons.value
        order, k = self.order_buttons.value, self.scale_slider.value
        sweep = self.sweep = self._sweep(fmt, order, k)
        self.error = err = sweep.at(n)
        line, over, here = (self._pic.parts[k] for k in ("line", "over", "here"))
        finite = [(w, max(e, _FLOOR)) for w, e in zip(sweep.world_sizes, sweep.errors) if math.isfinite(e)]
        line.set_data([w for w, _ in finite], [e for _, e in finite])
        line.set_color(format_color(fmt))
        line.set_linestyle("-" if order == "ring" else "--")
        inf_at = [w for w, o in zip(sweep.world_sizes, sweep.overflowed) if o]
        over.set_data(inf_at, [_TOP] * len(inf_at))
        here.set_data([n], [_TOP if math.isinf(err) else max(err, _FLOOR)])
        f = get_format(fmt)
        unit = f.unit_roundoff  # one rounding to nearest: at most half a unit in the last place, relative
        failure = ""
        if math.isinf(err) and sweep.cast_overflowed > 0:
            failure = failure_html(
                f"the cast to {fmt} made {sweep.cast_overflowed:.0%} of the gradients inf (beyond {f.max:g}) before "
                f"any sum: the sum of {n} ranks is inf, and the step is skipped (or its weights become NaN)"
            )
        elif math.isinf(err):
            failure = failure_html(
                f"the partial sums passed {fmt}'s largest value, {f.max:g}: the sum of {n} ranks is inf, and "
                "the step is skipped (or its weights become NaN)"
            )
        elif sweep.flushed >= 0.5:
            failure = failure_html(
                f"the cast to {fmt} flushed {sweep.flushed:.0%} of the gradients to zero: their sum has lost them "
                f"(relative error {err:.0%})"
            )
        elif err >= self.FAILURE_ERROR:
            failure = failure_html(
                f"a {fmt} {order} sum of {n} ranks is {err:.1%} wrong, in every gradient of every step: "
                f"more than {self.FAILURE_ERROR:.0%}"
            )
        return failure + readout_table(
            [
                ("your sum", html.escape(f"{n} ranks' gradients summed in {fmt}, {order} order")),
                (
                    "gradients",
                    f"N(0, &sigma;&sup2;) per element, &sigma; = 1e{k}; the cast to {fmt} flushed "
                    f"{sweep.flushed:.0%} to 0 and made {sweep.cast_overflowed:.0%} inf",
                ),  # fmt: skip
                ("relative error of the sum", "inf (overflow)" if math.isinf(err) else f"{err:.2g}"),
                (f"one rounding to {fmt}", f"at most {unit:.2g} (half a unit in the last place)"),
            ]
        ), self._pic


def reduction_explorer(world_size: int = 16, fmt: str = "bf16", order: str = "ring", log10_scale: int = 0):
    """The gradient reduction explorer's widget (its :class:`ReductionExplorer` is ``.explorer``)."""
    return ReductionExplorer(world_size, fmt, order, log10_scale).widget
