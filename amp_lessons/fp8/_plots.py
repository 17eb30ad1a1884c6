"""Lesson 07's pictures: tensors against the fp8 window, errors of the scaling methods."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes

from .._draw import (
    axes_for,
    legend_outside,
    name_artist,
    overflow_threshold,
    pct,
    region_spans,
    styled,
    zero_threshold,
)
from .._validate import real
from ..formats import (
    get_format,
)
from ..fp16._experiments import census_fractions

__all__ = [
    "plot_fp8_window",
    "plot_scaling_errors",
]


_TENSOR_COLORS = ("#1F78B4", "#E6550D", "#33A02C", "#6A3D9A", "#B15928", "#E7298A")


def _fp8_tensor_logs(tensors, scale) -> dict:
    if not isinstance(tensors, dict) or not tensors:
        raise TypeError("tensors must be a non-empty dict name -> tensor (e.g. amp_lessons.fp8.model_tensors())")
    out = {}
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor) or not t.is_floating_point():
            raise TypeError(f"tensors[{name!r}] must be a floating-point tensor, got {type(t).__name__}")
        v = t.detach().float().reshape(-1) * scale
        a = v.abs()
        out[name] = (v, torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy())
    return out


@styled
def plot_fp8_window(tensors: dict, fmt="fp8_e4m3", ax=None, *, scale=1.0) -> Axes:
    """Histograms of log2 |x x scale| (one bar per binade) of named tensors (e.g.
    :func:`amp_lessons.fp8.model_tensors`) over ``fmt``'s window (zero, subnormal, normal, overflow); the legend
    gives each tensor's shares flushed, subnormal and overflowed."""

    f = get_format(fmt)
    scale = real(scale, "scale")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    data = _fp8_tensor_logs(tensors, scale)
    lo_b, hi_b = math.log2(zero_threshold(f)), math.log2(overflow_threshold(f))
    every = np.concatenate([d[1] for d in data.values()] + [np.array([lo_b - 3, hi_b + 3])])
    lo, hi = math.floor(every.min()), math.ceil(every.max())
    edges = np.arange(lo, hi + 1.0)
    ax = axes_for(ax, (10, 5.4))
    region_spans(ax, f, lo, hi)
    for i, (name, (v, logs)) in enumerate(data.items()):
        fr = census_fractions(v, f)
        color = _TENSOR_COLORS[i % len(_TENSOR_COLORS)]
        counts = np.histogram(logs, bins=edges)[0] / max(v.numel(), 1)
        label = (
            f"{name} ({v.numel():,}): {pct(fr['flushed'], 2)} flushed to 0, "
            f"{pct(fr['subnormal'], 2)} subnormal, {pct(fr[f.overflow_class()], 2)} {f.overflow_class()} (overflow)"
        )
        name_artist(ax, f"{name} fill", ax.stairs(counts, edges, fill=True, alpha=0.3, color=color))
        name_artist(ax, name, ax.stairs(counts, edges, lw=1.6, color=color, label=label))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, None)
    ax.set_xlabel("log2 |value|" if scale == 1 else f"log2 |value x {scale:g}|")
    ax.set_ylabel("fraction of values per binade")
    ax.set_title(
        f"Which values fit in {f.name}" + ("" if scale == 1 else f" (scaled by {scale:g})"), loc="left", pad=18
    )
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=9, frameon=False)
    return ax


_METHOD_COLORS = {
    "no scaling": "#999999",
    "per-tensor": "#1F78B4",
    "delayed": "#A6CEE3",
    "block 1x128": "#33A02C",
    "block 128x128": "#B2DF8A",
    "block 1x32": "#006D2C",
}


@styled
def plot_scaling_errors(rows, ax=None) -> Axes:
    """Grouped bars (one colour per method, one group per tensor) from the rows of
    :func:`amp_lessons.fp8.scaling_errors`: the relative error on a log axis (inf: a hatched bar labelled "inf"),
    and below it the share of values flushed, saturated or overflowed (0: a short bar labelled "0"). Named
    artists: each method's error bars by the method, its lower bars "<method> lost"."""
    rows = list(rows) if not isinstance(rows, dict) else None
    keys = {"tensor", "method", "relative error", "flushed", "saturated"}
    if not rows or not all(isinstance(r, dict) and keys <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.fp8.scaling_errors")
    tensors = list(dict.fromkeys(r["tensor"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    err = {(r["tensor"], r["method"]): float(r["relative error"]) for r in rows}
    lost = {(r["tensor"], r["method"]): r["flushed"] + r["saturated"] + r.get("inf", 0.0) for r in rows}
    if ax is None:
        fig, (ax, ax_lost) = plt.subplots(2, 1, figsize=(11, 7.4), layout="constrained")
    else:
        ax = axes_for(ax, None)
        ax_lost = ax.inset_axes([0.0, -1.35, 1.0, 1.0])
    width = 0.8 / len(methods)
    _grouped_bars(ax, err, tensors, methods, width, mark_inf=True, names=(ax, ""))
    ax.set_ylabel("relative error ||q - x|| / ||x||")
    fmt = rows[0].get("fmt", "")
    ax.set_title(f"fp8 cast error by scaling method{f' ({fmt})' if fmt else ''}", loc="left")
    legend_outside(ax)
    _grouped_bars(ax_lost, lost, tensors, methods, width, mark_zero=True, names=(ax, " lost"))
    ax_lost.set_ylabel("share of values flushed\nto 0 or saturated")
    ax_lost.set_title("What the scaling changes: values lost to the window's ends", loc="left")
    return ax


def _grouped_bars(ax: Axes, value: dict, tensors, methods, width, *, names, mark_inf=False, mark_zero=False) -> None:
    """Bars of ``value[(tensor, method)]`` on a log axis, each method's named ``method + names[1]``."""
    finite = [e for e in value.values() if math.isfinite(e) and e > 0]
    top = 10 ** math.ceil(math.log10(max(finite))) if finite else 1.0
    bottom = 10 ** math.floor(math.log10(min(finite))) if finite else 1e-3
    bottom = min(bottom, top / 10) / (10 if mark_zero else 1)
    zero_h = bottom * 1.6
    for j, m in enumerate(methods):
        xs, hs, kinds = [], [], []
        for i, t in enumerate(tensors):
            e = value.get((t, m))
            if e is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            if not math.isfinite(e):
                hs.append(top)
                kinds.append("inf")
            elif e <= 0 and mark_zero:
                hs.append(zero_h)
                kinds.append("0")
            else:
                hs.append(max(e, bottom))
                kinds.append("")
        color = _METHOD_COLORS.get(m, _TENSOR_COLORS[j % len(_TENSOR_COLORS)])
        bars = ax.bar(xs, [h - bottom for h in hs], width * 0.95, bottom=bottom, color=color, label=m)
        name_artist(names[0], m + names[1], bars)
        for bar, h, kind in zip(bars, hs, kinds):
            if kind == "inf" and mark_inf:
                bar.set_hatch("//")
            if kind:
                ax.text(bar.get_x() + bar.get_width() / 2, h, kind, ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top * 1.5)
    ax.set_xticks(range(len(tensors)), tensors)
