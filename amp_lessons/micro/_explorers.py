"""Lesson 10's explorer: one tensor through one recipe at one training step — fp8 per tensor (delayed or
current), row-wise, block-wise, MXFP8, MXFP4 or NVFP4 — and what it keeps of the tensor."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from .._explorer import Explorer, Picture, failure_html, readout_table
from .._runtime import one_thread
from ..style import style_context
from ._experiments import RECIPES, SPIKE_STEP, STEPS, TENSOR_KINDS, recipe_run, recipe_stats

__all__ = [
    "RecipeExplorer",
    "recipe_explorer",
]

_EDGES = np.arange(-50.0, 16.5, 0.5)  # log2 |value| bins: from far below any format to above fp8's max
_FLOOR = 1e-6  # the log-scaled share axis starts here: one value in 131072 (3e-5 of a 256 x 512 tensor) is seen


def _log2_hist(t) -> np.ndarray:
    v = t.abs().double().flatten().numpy()
    v = v[v > 0]
    h, _ = np.histogram(np.log2(v), bins=_EDGES)
    return np.maximum(h / max(t.numel(), 1), _FLOOR)  # an empty bin sits on the axis' floor


class RecipeExplorer(Explorer):
    """Pick a tensor, a recipe and a training step: the distribution of log2 |x| before (filled) and after (line)
    the recipe stores it, on a log-scaled share axis; the read-out gives the SNR, the values flushed or saturated
    and the bias (``stats``, a :class:`RecipeStats`), flagged as a failure below ``SNR_LIMIT_DB`` or at
    ``SHARE_LIMIT`` flushed or saturated."""

    SNR_LIMIT_DB = 10.0
    SHARE_LIMIT = 0.01

    def __init__(self, kind: str = "gradient", recipe: str = "per-tensor delayed (history 16)", step: int = SPIKE_STEP):
        style = {"description_width": "initial"}
        self.kind_box = widgets.Dropdown(options=TENSOR_KINDS, description="tensor", style=style)
        self.recipe_box = widgets.Dropdown(
            options=RECIPES, description="recipe", style=style, layout=widgets.Layout(width="380px")
        )
        self.step_slider = widgets.IntSlider(
            min=0, max=STEPS - 1, description="training step", style=style, layout=widgets.Layout(width="420px")
        )
        controls = self.opened_at(
            {"kind": self.kind_box, "recipe": self.recipe_box, "step": self.step_slider},
            kind=kind,
            recipe=recipe,
            step=step,
        )
        self.stats = None  # the shown RecipeStats
        self._pic = self._picture()
        super().__init__(controls, [widgets.HBox([self.kind_box, self.recipe_box]), self.step_slider])

    def _picture(self) -> Picture:
        pic = Picture((10, 3.8))
        centers = (_EDGES[:-1] + _EDGES[1:]) / 2
        with style_context():
            ax = pic.fig.add_axes((0.08, 0.16, 0.9, 0.7))
            ax.set_xlim(_EDGES[0], _EDGES[-1])
            ax.set_yscale("log")
            ax.set_ylim(_FLOOR, 1.0)
            ax.set_xlabel("log2 |value|")
            ax.set_ylabel("share of the values (log)")
            ax.set_title("The tensor (filled) and what the recipe stores (line); zeros are not drawn", loc="left")
            zero = np.full(len(centers), _FLOOR)
            fill = ax.stairs(zero, _EDGES, fill=True, baseline=_FLOOR, alpha=0.35, color="#1F78B4")
            line = ax.stairs(zero, _EDGES, baseline=_FLOOR, lw=1.8, color="#E6550D")
            label = ax.text(0.99, 0.95, "", transform=ax.transAxes, ha="right", va="top", fontsize=11)
        pic.freeze({"fill": fill, "line": line, "label": label})
        return pic

    def _problem(self) -> str:
        """What the shown recipe loses ("" if it keeps the tensor): a low SNR, flushes, saturation."""
        s, parts = self.stats, []
        if s.snr_db < self.SNR_LIMIT_DB:
            why = ""
            if s.saturated > 0 and self._saturated_power >= 0.5:
                why = (
                    f": the {self._saturated_count} saturated values, clamped far below their size, held "
                    f"{100 * self._saturated_power:.4g}% of the tensor's power (the bars at the right that the "
                    "line moved left)"
                )
            parts.append(
                f"signal-to-noise {s.snr_db:.1f} dB (below {self.SNR_LIMIT_DB:g} dB: the error's power is "
                f"more than a tenth of the tensor's){why}"
            )
        if s.flushed >= self.SHARE_LIMIT:
            parts.append(f"{100 * s.flushed:.3g}% of the non-zero values flush to 0")
        if s.saturated >= self.SHARE_LIMIT:
            parts.append(f"{100 * s.saturated:.3g}% of the values saturate (clamped at the format's max)")
        if not parts:
            return ""
        return (
            f"{self.recipe_box.value} loses the {self.kind_box.value} at step {self.step_slider.value}: "
            + "; ".join(parts)
        )

    def draw(self):
        kind, recipe, step = self.kind_box.value, self.recipe_box.value, self.step_slider.value
        with one_thread():
            x, q, saturated = recipe_run(recipe, kind, step)
            self.stats = recipe_stats(x, q, saturated)
            power = x.double() ** 2
            self._saturated_count = int(saturated.sum())
            self._saturated_power = float(power[saturated].sum() / power.sum().clamp(min=1e-300))
            before, after = _log2_hist(x), _log2_hist(q)
        parts = self._pic.parts
        parts["fill"].set_data(before)
        parts["line"].set_data(after)
        parts["label"].set_text(f"{kind}, step {step}")
        snr = self.stats.snr_db
        problem = self._problem()
        return (failure_html(problem) if problem else "") + readout_table(
            [
                ("recipe", html.escape(recipe)),
                ("signal-to-noise", "exact" if math.isinf(snr) else f"{snr:.1f} dB"),
                ("non-zero values flushed to 0", f"{100 * self.stats.flushed:.3f}%"),
                (
                    "values saturated (clamped at the max)",
                    f"{self._saturated_count} ({100 * self.stats.saturated:.3f}%), holding "
                    f"{100 * self._saturated_power:.4g}% of the tensor's power",
                ),  # fmt: skip
                ("bias (sum of errors / sum of |x|)", f"{self.stats.bias:+.2e}"),
            ]
        ), self._pic


def recipe_explorer(kind: str = "gradient", recipe: str = "per-tensor delayed (history 16)", step: int = SPIKE_STEP):
    """The :class:`RecipeExplorer` as a displayable widget (the controller is ``.explorer``)."""
    return RecipeExplorer(kind, recipe, step).widget
