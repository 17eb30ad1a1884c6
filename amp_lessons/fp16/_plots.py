"""Lesson 03's pictures: running sums, gradient histograms, loss curves, where a value lands in each format."""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from .._draw import (
    OVERFLOW_COLOR,
    REGION_COLORS,
    as_formats,
    axes_for,
    decade_ticks,
    format_label,
    legend_outside,
    name_artist,
    overflow_threshold,
    pct,
    plot_runs,
    region_spans,
    series,
    styled,
    zero_threshold,
)
from .._validate import finite, positive, real
from ..formats import get_format
from ..fp16._experiments import GradientCensus, MasterWeightRuns, census_fractions
from ..style import format_color

__all__ = ["REGION_FORMATS", "plot_format_regions", "plot_gradient_histogram", "plot_loss_curves", "plot_running_sums"]


_SUM_STYLES = {
    "exact": dict(color="#AAAAAA", lw=5, alpha=0.6, zorder=1),
    "fp32 running sum": dict(color=format_color("fp32"), lw=1.4),
    "fp16 addends, fp32 accumulator": dict(color="#6A3D9A", lw=1.8, ls="--"),
    "torch.cumsum (fp16 tensor)": dict(color="#E31A1C", lw=1.5, ls="-."),
    "fp16 running sum": dict(color=format_color("fp16"), lw=2.4),
}


def _sum_style(label: str) -> dict:
    return dict(_SUM_STYLES.get(label, dict(color=format_color(label), lw=1.8)))


@styled
def plot_running_sums(
    values_by_label: dict, ax=None, *, limit=None, limit_label: str | None = None, minus: str | None = None
) -> Axes:
    """Partial sums against the number of terms added, one line per label (``{label: partial sums}``);
    a triangle marks where a line became inf. ``limit`` adds a dotted horizontal line labelled ``limit_label``;
    ``minus`` (a label) plots every other line minus that one, the error of each running sum.
    Named artists: each line by its label, "<label> inf", "limit"."""
    if not isinstance(values_by_label, dict) or not values_by_label:
        raise TypeError("values_by_label must be a non-empty dict {label: partial sums}")
    lines = {str(label): series(v, label) for label, v in values_by_label.items()}
    if minus is not None:
        if minus not in lines:
            raise ValueError(f"minus={minus!r} is not one of the labels: {', '.join(map(repr, lines))}")
        base = lines.pop(minus)
        lines = {label: y - base[: y.size] for label, y in lines.items()}
        if not lines:
            raise ValueError("minus leaves no line to draw: give at least two series")
    if limit is not None:
        limit = finite(limit, "limit")
    ax = axes_for(ax, (9, 4.8))
    finite_max = max(
        (np.nanmax(np.abs(y[np.isfinite(y)])) for y in lines.values() if np.isfinite(y).any()), default=1.0
    )
    top = limit if limit is not None else finite_max
    for label, y in lines.items():
        x = np.arange(1, y.size + 1)
        style = _sum_style(label)
        shown = np.where(np.isfinite(y), y, np.nan)
        name_artist(ax, label, ax.plot(x, shown, label=label, **style)[0])
        inf = np.flatnonzero(np.isinf(y))
        if inf.size:
            k = int(inf[0])
            (mark,) = ax.plot(
                [k + 1],
                [math.copysign(top, y[k])],
                marker="^" if y[k] > 0 else "v",
                ms=10,
                ls="",
                color=style["color"],
                zorder=5,
            )
            name_artist(ax, f"{label} inf", mark)
            ax.annotate(
                f"inf from term {k + 1}",
                (k + 1, math.copysign(top, y[k])),
                xytext=(-8, -4),
                textcoords="offset points",
                ha="right",
                va="top",
                fontsize=9,
                color=style["color"],
            )
    if limit is not None:
        line = ax.axhline(
            limit,
            color=OVERFLOW_COLOR,
            ls=":",
            lw=1.4,
            label=f"limit {limit:g}" if limit_label is None else str(limit_label),
        )
        name_artist(ax, "limit", line)
    n = max(y.size for y in lines.values())
    ax.set_xlim(0, n + max(1, n // 50))
    ax.set_xlabel("number of terms added")
    ax.set_ylabel("partial sum" if minus is None else f"partial sum - {minus}")
    ax.set_title("Running sums" if minus is None else f"Error of running sums (partial sum - {minus})", loc="left")
    if minus is not None:
        ax.axhline(0, color="#888888", lw=0.8)
    legend_outside(ax)
    return ax


@styled
def plot_gradient_histogram(census: dict, fmt="fp16", ax=None, *, scale=1.0) -> Axes:
    """Histogram of log2 |g| of a census's weight and activation gradients
    (:func:`amp_lessons.fp16.gradient_census`), one bar per binade, over ``fmt``'s regions; the legend gives each
    kind's fractions. ``scale`` multiplies the gradients first, as loss scaling does.
    Named artists: "weight gradients", "activation gradients", "region <region>"."""
    census = census.tensors if isinstance(census, GradientCensus) else census
    if not isinstance(census, dict) or not {"weights", "activations"} <= set(census):
        raise TypeError(
            "census must be the GradientCensus of amp_lessons.fp16.gradient_census (or a dict of 'weights' and "
            f"'activations' gradient tensors), got {type(census).__name__}"
        )

    f = get_format(fmt)
    scale = positive(scale, "scale")
    kinds = {"weight gradients": "weights", "activation gradients": "activations"}
    data = {}
    for name, key in kinds.items():
        g = census[key]
        if not isinstance(g, torch.Tensor):
            raise TypeError(f"census[{key!r}] must be a tensor, got {type(g).__name__}")
        g = g.detach().float().reshape(-1) * scale
        a = g.abs()
        logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
        data[name] = (logs, g.numel(), census_fractions(g, f))
    lo_b, hi_b = math.log2(zero_threshold(f)), math.log2(overflow_threshold(f))
    every = np.concatenate([d[0] for d in data.values()] + [np.array([lo_b - 3, hi_b + 3])])
    lo, hi = math.floor(every.min()), math.ceil(every.max())
    edges = np.arange(lo, hi + 1.0)
    ax = axes_for(ax, (10, 5.6))
    region_spans(ax, f, lo, hi)
    styles = {"weight gradients": dict(color="#1F78B4"), "activation gradients": dict(color="#E6550D")}
    for name, (logs, n, fr) in data.items():
        counts, _ = np.histogram(logs, bins=edges)
        label = (
            f"{name} ({n:,} values): {pct(fr['zero'], 2)} zero,\n"
            f"  {pct(fr['flushed'], 2)} flushed (round to 0), {pct(fr['subnormal'], 2)} subnormal, "
            f"{pct(fr['normal'], 2)} normal, {pct(fr[f.overflow_class()], 2)} {f.overflow_class()} (overflow)"
        )
        name_artist(ax, name, ax.stairs(counts / max(n, 1), edges, fill=True, alpha=0.45, label=label, **styles[name]))
        ax.stairs(counts / max(n, 1), edges, lw=1.5, **styles[name])
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, None)
    ax.set_xlabel("log2 |gradient|" if scale == 1 else f"log2 |gradient x {scale:g}|")
    ax.set_ylabel("fraction of values per binade")
    title = f"Where the gradients land in {f.name}" + ("" if scale == 1 else f" (scaled by {scale:g})")
    ax.set_title(title, loc="left", pad=18)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=9, frameon=False)
    return ax


_RUN_STYLES = {
    "fp32": dict(color=format_color("fp32"), lw=1.6),
    "fp16 weights": dict(color=format_color("fp16"), lw=2.2),
    "fp32 master weights": dict(color="#33A02C", lw=2.2, ls="--"),
}


@styled
def plot_loss_curves(result: MasterWeightRuns, ax=None) -> Axes:
    """Training loss against step (log y) of each run of :func:`amp_lessons.fp16.train_master_weights`,
    with each run's share of lost updates in the legend. Named artists: each run's curve by its name."""
    if not isinstance(result, MasterWeightRuns):
        raise TypeError(
            "result must be the MasterWeightRuns returned by amp_lessons.fp16.train_master_weights, "
            f"got {type(result).__name__}"
        )
    ax = plot_runs(
        {"loss": result.loss, "lost_fraction": result.lost_fraction},
        ax,
        source="amp_lessons.fp16.train_master_weights",
        note_key="lost_fraction",
        note="{} of updates lost",
        styles=_RUN_STYLES,
        figsize=(8, 4.8),
    )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.set_title(f"Weights stored in {result.fmt} stall; fp32 master weights keep learning", loc="left")
    legend_outside(ax)
    return ax


REGION_FORMATS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
_OVERFLOW_STYLE = {
    "inf": dict(facecolor=OVERFLOW_COLOR),
    "saturate": dict(facecolor="#7F7F7F", hatch="xx"),
    "nan": dict(facecolor="#6A3D9A", hatch=".."),
}
_OVERFLOW_LABEL = {"inf": "overflow to inf", "saturate": "overflow, saturates at max", "nan": "overflow to NaN"}


@styled
def plot_format_regions(value: float, formats=REGION_FORMATS, ax=None) -> Axes:
    """One row per format on a log magnitude axis (1e-50..1e40): where a value rounds to zero, is subnormal, normal
    or overflows; a vertical line marks ``|value|``. Named artists: "<format> <region>", "marker", "marker dots"."""
    fmts = as_formats(formats)
    value, lo, hi = real(value, "value"), 1e-50, 1e40
    ax = axes_for(ax, (10, 0.55 * len(fmts) + 1.8))
    seen = set()
    for row, f in enumerate(fmts):
        z, sub, ovf = zero_threshold(f), f.smallest_normal, overflow_threshold(f)
        overflow = f.default_overflow
        spans = [("zero", lo, z, dict(color=REGION_COLORS["zero"]))]
        if f.mantissa_bits:
            spans.append(("subnormal", z, sub, dict(color=REGION_COLORS["subnormal"])))
        spans.append(
            (
                "normal",
                sub if f.mantissa_bits else z,
                ovf,
                dict(color=REGION_COLORS["normal"], edgecolor=format_color(f.name), lw=1.5),
            )
        )
        spans.append((overflow, ovf, hi, dict(_OVERFLOW_STYLE[overflow], edgecolor="white", lw=0)))
        for region, a, b, style in spans:
            a, b = max(a, lo), min(b, hi)
            if b <= a:
                continue
            seen.add(region)
            (bar,) = ax.barh(row, b - a, left=a, height=0.6, **style)
            name_artist(ax, f"{f.name} {region}", bar)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(len(fmts) - 0.5, -0.5)
    ax.set_yticks(range(len(fmts)), [format_label(f) for f in fmts])
    ax.grid(False, axis="y")
    decade_ticks(ax, "x")
    ax.set_xlabel("magnitude |x|")
    handles = [
        Patch(color=REGION_COLORS["zero"], label="rounds to zero"),
        Patch(color=REGION_COLORS["subnormal"], label="subnormal"),
        Patch(color=REGION_COLORS["normal"], label="normal"),
    ]
    handles += [
        Patch(label=_OVERFLOW_LABEL[o], **{**_OVERFLOW_STYLE[o], "edgecolor": "white"})
        for o in ("inf", "saturate", "nan")
        if o in seen
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        borderaxespad=3.9,
        ncols=len(handles) if len(handles) <= 4 else 3,
        fontsize=9,
        frameon=False,
    )
    mag = abs(value)
    shown = min(max(mag, lo), hi)
    name_artist(ax, "marker", ax.axvline(shown, color="k", lw=2, visible=not math.isnan(value)))
    (dots,) = ax.plot(
        [shown] * len(fmts),
        range(len(fmts)),
        ls="",
        marker="o",
        ms=7,
        mfc="white",
        mec="k",
        mew=1.5,
        visible=not math.isnan(value),
    )
    name_artist(ax, "marker dots", dots)
    text = "NaN" if math.isnan(value) else f"{value:.3g}"
    ax.set_title(f"Where x = {text} lands in each format", loc="left")
    return ax
