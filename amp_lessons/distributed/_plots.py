"""Lesson 09's pictures: the error of gradient reduction against the world size, and the bytes per parameter
each rank holds."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes

from .._draw import axes_for, legend_outside, name_artist, styled
from ..distributed._records import MemoryRow, ReductionError
from ..style import format_color

__all__ = [
    "plot_memory_per_parameter",
    "plot_reduction_error",
]

_METHOD_STYLE = {"bf16 ring": ("bf16", "-"), "bf16 pairwise": ("bf16", "--"), "fp32 ring": ("fp32", "-")}


@styled
def plot_reduction_error(result: ReductionError, ax=None) -> Axes:
    """Normwise relative error of each reduction method against the world size (log-log), one line per
    method; a method whose error is 0 at some world size is drawn at 1e-10 and its zero points marked with an
    open circle. Named artists (:func:`amp_lessons._draw.named_artists`): each method's line by the method."""
    if not isinstance(result, ReductionError):
        raise TypeError(
            f"result must be a ReductionError from distributed.reduction_error, got {type(result).__name__}"
        )
    ax = axes_for(ax, (8, 4.5))
    floor = 1e-10
    zeros = False
    for method, errs in result.errors.items():
        fmt, ls = _METHOD_STYLE.get(method, ("fp32", ":"))
        ys = np.array([max(e, floor) for e in errs])
        (line,) = ax.plot(result.world_sizes, ys, ls, marker="o", color=format_color(fmt), label=method)
        name_artist(ax, method, line)
        zero = [i for i, e in enumerate(errs) if e == 0]
        if zero:
            zeros = True
            ax.plot(
                [result.world_sizes[i] for i in zero], [floor] * len(zero), "o", mfc="white", color=format_color(fmt)
            )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("ranks whose gradients are summed (N)")
    ax.set_ylabel("relative error of the sum")
    ax.set_title(f"Summing N ranks' gradients (emulated, {result.elements} elements per rank)")
    if zeros:  # the legend says what the open circles on the bottom line are
        ax.plot([], [], "o", mfc="white", color="#555555", label=f"error exactly 0 (drawn at {floor:.0e})")
    legend_outside(ax, fontsize="small")
    return ax


@styled
def plot_memory_per_parameter(rows, ax=None) -> Axes:
    """Stacked horizontal bars: the bytes per parameter one rank holds under each setting (a list of
    :class:`MemoryRow`), by component, with the arithmetic's total marked by a black tick.
    Named artists (:func:`amp_lessons._draw.named_artists`): the bars "parameters", "gradients", "optimizer states" and the ticks "expected"."""
    if not isinstance(rows, (list, tuple)) or not rows or not all(isinstance(r, MemoryRow) for r in rows):
        raise TypeError("rows must be a non-empty list of MemoryRow from distributed.bytes_per_parameter")
    ax = axes_for(ax, (9, 0.55 * len(rows) + 1.6))
    y = np.arange(len(rows))[::-1]
    left = np.zeros(len(rows))
    for name, attr, color in (
        ("parameters", "params", "#1F78B4"),
        ("gradients", "grads", "#33A02C"),
        ("optimizer states", "optimizer", "#FF7F00"),
    ):
        w = np.array([getattr(r, attr) for r in rows])
        name_artist(ax, name, ax.barh(y, w, left=left, color=color, label=name))
        left += w
    (ticks,) = ax.plot([r.expected for r in rows], y, "|", color="black", ms=18, mew=2, label="arithmetic")
    name_artist(ax, "expected", ticks)
    for yi, total in zip(y, left):
        ax.text(total + 0.2, yi, f"{total:g} B", va="center", fontsize="small")
    ax.set_yticks(y, [f"{r.setting} (N={r.world_size})" for r in rows])
    ax.set_xlabel("bytes per parameter on one rank (measured from the storages)")
    ax.set_xlim(0, math.ceil(float(left.max()) / 4 + 1) * 4)
    ax.set_title("What each rank holds per parameter")
    legend_outside(ax, fontsize="small")
    return ax
