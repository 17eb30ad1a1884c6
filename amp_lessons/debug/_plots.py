"""Lesson 08's pictures: a trace's magnitudes module by module against the formats' ranges, and the
bytes each parameter costs under each precision setting."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes

from .._draw import OVERFLOW_COLOR, axes_for, legend_outside, name_artist, styled
from .._validate import flag
from ..formats import get_format
from ..style import format_color
from ._records import DtypeMap, OverflowTrace

__all__ = ["plot_bytes_per_parameter", "plot_trace"]


@styled
def plot_trace(trace: OverflowTrace, ax=None, *, leaves_only: bool = True) -> Axes:
    """Each module's largest finite output magnitude (log x, one row per module in forward order), with a
    vertical line at each traced format's largest finite value. Rows whose output holds inf/NaN, or would
    overflow the first traced format, are red; the others grey.
    Named artists (:func:`amp_lessons._draw.named_artists`): the bars "overflow" and "ok", each format's line "max-<format>"."""
    if not isinstance(trace, OverflowTrace):
        raise TypeError(f"trace must be an OverflowTrace from debug.trace_overflow, got {type(trace).__name__}")
    rows = trace.rows(flag(leaves_only, "leaves_only"))
    if not rows:
        raise ValueError("the trace has no module with a floating-point output to draw")
    ax = axes_for(ax, (9, 0.32 * len(rows) + 1.6))
    fmt = trace.formats[0]
    y = np.arange(len(rows))[::-1]
    vals = np.array([max(r["absmax"], 1e-45) for r in rows])
    bad = np.array([r["nonfinite"] > 0 or r[f"{fmt} overflow"] > 0 for r in rows])
    name_artist(ax, "ok", ax.barh(y[~bad], vals[~bad], color="#9E9E9E", label="finite, fits"))
    name_artist(ax, "overflow", ax.barh(y[bad], vals[bad], color=OVERFLOW_COLOR, label=f"inf/NaN, or beyond {fmt}"))
    for name in trace.formats:
        f = get_format(name)
        line = ax.axvline(f.max, color=format_color(name), ls="--", lw=1.5, label=f"{name} max {f.max:.4g}")
        name_artist(ax, f"max-{name}", line)
    ax.set_xscale("log")
    ax.set_yticks(y, [r["module"] + ("  (inf/NaN)" if r["nonfinite"] else "") for r in rows])
    hi = max(float(vals.max()), max(get_format(n).max for n in trace.formats if get_format(n).max < 1e30) * 4)
    ax.set_xlim(max(float(vals.min()) / 4, 1e-3), min(hi * 4, 1e40))
    ax.set_xlabel("largest finite |output| (log scale)")
    ax.set_title(f"Module outputs: {trace.setting}")
    legend_outside(ax, fontsize="small")
    return ax


@styled
def plot_bytes_per_parameter(maps, ax=None) -> Axes:
    """Stacked horizontal bars: the bytes each model parameter costs under each precision setting of
    ``maps`` (a list of :class:`DtypeMap`, or a dict of them), by component (weights, gradients,
    optimizer states, autocast's low-precision weight copies). The bars of each component are named by
    the component (:func:`amp_lessons._draw.named_artists`)."""
    items = list(maps.values()) if isinstance(maps, dict) else list(maps) if isinstance(maps, (list, tuple)) else None
    if not items or not all(isinstance(m, DtypeMap) for m in items):
        raise TypeError("maps must be a non-empty list or dict of DtypeMap from debug.dtype_map")
    ax = axes_for(ax, (9, 0.6 * len(items) + 1.8))
    components = []
    for m in items:
        components += [k for k in m.bytes_per_parameter if k not in components]
    y = np.arange(len(items))[::-1]
    left = np.zeros(len(items))
    palette = ["#1F78B4", "#A6CEE3", "#33A02C", "#B2DF8A", "#FF7F00", "#6A3D9A", "#999999"]
    for i, comp in enumerate(components):
        w = np.array([m.bytes_per_parameter.get(comp, 0.0) for m in items])
        name_artist(ax, comp, ax.barh(y, w, left=left, color=palette[i % len(palette)], label=comp))
        left += w
    for yi, total in zip(y, left):
        ax.text(total + 0.2, yi, f"{total:.3g} B", va="center", fontsize="small")
    ax.set_yticks(y, [m.setting for m in items])
    ax.set_xlabel("bytes per parameter (one training step, measured)")
    ax.set_xlim(0, math.ceil(float(left.max()) / 4 + 1) * 4)
    ax.set_title("Bytes per parameter by precision setting")
    legend_outside(ax, fontsize="small")
    return ax
