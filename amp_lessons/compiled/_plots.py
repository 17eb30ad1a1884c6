"""Lesson 11's pictures: errors against fp64 of eager, compiled and emulated bf16, and step times."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes

from .._draw import axes_for, legend_outside, name_artist, styled
from ..timing import Timing
from ._experiments import PrecisionErrors

__all__ = [
    "plot_errors",
    "plot_step_times",
]

_COLORS = {"eager": "#1F78B4", "compiled": "#E31A1C", "emulated": "#33A02C"}


@styled
def plot_errors(errors: PrecisionErrors | dict, ax=None) -> Axes:
    """Grouped bars (log y): the max and mean relative error against fp64 of each of eager, compiled and
    emulated in ``errors`` (the :class:`~amp_lessons.compiled.PrecisionErrors` of
    :func:`amp_lessons.compiled.precision_errors`, or a dict run name -> (max, mean) with at least "eager" and
    "compiled"), each bar from a decade below the smallest error and labelled with its value (``.2e``, as lesson 11
    prints it). The bars of each run are named by the run (:func:`amp_lessons._draw.named_artists`)."""
    if isinstance(errors, PrecisionErrors):
        errors = {run: (e.max_error, e.mean_error) for run, e in errors.runs.items()}
    if not isinstance(errors, dict) or "eager" not in errors or "compiled" not in errors:
        raise TypeError(
            "errors must be the PrecisionErrors from compiled.precision_errors (or a dict run -> (max, mean) with "
            "'eager' and 'compiled')"
        )
    runs = [r for r in ("eager", "compiled", "emulated") if r in errors]
    ax = axes_for(ax, (7, 3.6))
    x = np.arange(2)
    width = 0.8 / len(runs)
    values = [float(v) for r in runs for v in errors[r] if float(v) > 0]
    # every bar starts a decade below the smallest error, so bar heights compare on the log axis
    bottom = 10 ** math.floor(math.log10(min(values))) / 10 if values else 1e-6
    for i, r in enumerate(runs):
        bars = ax.bar(
            x + (i - (len(runs) - 1) / 2) * width,
            [max(float(v), bottom) - bottom for v in errors[r]],
            width,
            bottom=bottom,
            label=r,
            color=_COLORS[r],
        )
        name_artist(ax, r, bars)
        for bar, v in zip(bars, errors[r]):  # the value, as lesson 11 prints it
            ax.text(
                bar.get_x() + bar.get_width() / 2,
                max(float(v), bottom),
                f"{float(v):.2e}",
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_yscale("log")
    ax.set_ylim(bottom, max(values or [1.0]) * 3)
    ax.set_xticks(x, ["max relative error", "mean relative error"])
    ax.set_ylabel("against fp64 (measured here)")
    ax.set_title("bf16 results: eager, compiled,\ncompiled with emulate_precision_casts", loc="left")
    legend_outside(ax, fontsize="small")
    return ax


@styled
def plot_step_times(times: dict, ax=None) -> Axes:
    """Horizontal bars: the median time of each setting in ``times`` (from
    :func:`amp_lessons.compiled.step_times`), in microseconds, measured on this machine.
    Named artists (:func:`amp_lessons._draw.named_artists`): the bars "times"."""
    if not isinstance(times, dict) or not times or not all(isinstance(t, Timing) for t in times.values()):
        raise TypeError("times must be the dict of Timing from compiled.step_times")
    ax = axes_for(ax, (7, 0.5 * len(times) + 1.5))
    labels = list(times)
    us = [times[k].median_s * 1e6 for k in labels]
    y = np.arange(len(labels))[::-1]
    colors = ["#A6CEE3" if "eager" in k else "#E31A1C" for k in labels]
    name_artist(ax, "times", ax.barh(y, us, color=colors))
    for yi, v in zip(y, us):
        ax.text(v, yi, f" {v:.0f} µs", va="center", fontsize="small")
    ax.set_yticks(y, labels)
    ax.set_xlim(0, max(us) * 1.3)
    ax.set_xlabel("median time per call, µs (measured on this machine)")
    ax.set_title("One call of the MLP block")
    return ax
