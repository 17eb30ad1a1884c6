"""Lesson 05's pictures: loss-scale sweeps, scaled gradient histograms, the scaler's history, training
compared four ways."""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.axes import Axes

from .._draw import (
    OVERFLOW_COLOR,
    axes_for,
    legend_outside,
    name_artist,
    overflow_threshold,
    plot_runs,
    pow2,
    pow2_ticks,
    region_spans,
    styled,
    zero_threshold,
)
from .._validate import real
from ..formats import get_format
from ..fp16._experiments import GradientCensus
from ..scaling._experiments import safe_window
from ..scaling._records import ScalerHistory, ScaleSweep, TrainComparison
from ..style import format_color

__all__ = ["plot_scale_sweep", "plot_scaled_histogram", "plot_scaler_history", "plot_train_comparison"]


_SWEEP_STYLES = {
    "underflow": dict(color="#555555", lw=2.2, marker="o", ms=4, label="round to zero (underflow)"),
    "subnormal": dict(color="#C99700", lw=1.4, ls="--", marker=".", ms=5, label="subnormal (few digits kept)"),
    "overflow": dict(color=OVERFLOW_COLOR, lw=2.2, marker="s", ms=4, label="overflow to inf"),
}
_WINDOW_COLOR = "#33A02C"


@styled
def plot_scale_sweep(sweep: ScaleSweep, ax=None, *, window=None) -> Axes:
    """The shares of a :func:`amp_lessons.scaling.scale_sweep` that underflow, are subnormal and overflow, against
    log2 of the scale (log y; a share of 0 on the bottom edge), with ``window`` (a pair of scales, default the
    sweep's :func:`~amp_lessons.scaling.safe_window`; False for none) shaded."""

    if not isinstance(sweep, ScaleSweep):
        raise TypeError(
            f"sweep must be the ScaleSweep returned by amp_lessons.scaling.scale_sweep, got {type(sweep).__name__}"
        )
    scales = np.asarray(sweep.scale, dtype=float)
    if scales.size == 0 or not (scales > 0).all():
        raise ValueError("sweep has no scales, or a scale that is not positive")
    x = np.log2(scales)
    if window is None:
        window = safe_window(sweep)
    ax = axes_for(ax, (9, 4.6))
    shares = {"underflow": sweep.flushed, "subnormal": sweep.subnormal, "overflow": sweep.overflowed}
    series = {k: np.asarray(shares[k], dtype=float) for k in _SWEEP_STYLES}
    positive = np.concatenate([v[v > 0] for v in series.values()])
    floor = min(1e-4, positive.min() / 3) if positive.size else 1e-4
    for key, y in series.items():
        name_artist(ax, key, ax.plot(x, np.where(y > 0, y, floor), clip_on=False, **_SWEEP_STYLES[key])[0])
    if window:
        lo, hi = (math.log2(real(w, "window")) for w in window)
        span = ax.axvspan(
            lo, hi, color=_WINDOW_COLOR, alpha=0.15, lw=0, label=f"safe window {pow2(round(lo))} .. {pow2(round(hi))}"
        )
        name_artist(ax, "window", span)
    ax.set_yscale("log")
    ax.set_ylim(floor, 1.5)
    pad = 0.5
    ax.set_xlim(x.min() - pad, x.max() + pad)
    pow2_ticks(ax.xaxis, x.min(), x.max())
    kind, fmt = sweep.kind, sweep.fmt
    ax.set_xlabel("loss scale (log2 axis)")
    noun = {"activations": "activation", "weights": "weight"}.get(kind, kind)
    ax.set_ylabel(f"fraction of non-zero {noun} gradients\n(0 is drawn on the bottom edge)")
    ax.set_title(f"{noun.capitalize()} gradients x scale, rounded to {fmt}", loc="left")
    legend_outside(ax)
    return ax


def _hist_log2(g: torch.Tensor, edges: np.ndarray) -> np.ndarray:
    a = g.detach().float().reshape(-1).abs()
    logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
    return np.histogram(logs, bins=edges)[0] / max(g.numel(), 1)


_HIST_STYLES = {"weights": dict(color="#1F78B4"), "activations": dict(color="#E6550D")}


@styled
def plot_scaled_histogram(
    census: GradientCensus | dict, exponent: int = 0, fmt="fp16", ax=None, *, max_exponent: int = 32
) -> Axes:
    """Histogram of log2 |g x 2**exponent| of the census's gradients (one bar per binade) over ``fmt``'s regions,
    on an x axis wide enough for every exponent up to ``max_exponent``."""
    census = census.tensors if isinstance(census, GradientCensus) else census
    f = get_format(fmt)
    edges, heights = _census_bins(census)
    lo = min(edges[0], math.log2(zero_threshold(f)) - 2)
    hi = max(edges[-1] + max_exponent, math.log2(overflow_threshold(f)) + 2)
    ax = axes_for(ax, (10, 4.6))
    region_spans(ax, f, lo, hi)
    for kind, h in heights.items():
        n = census[kind].numel()
        fill = ax.stairs(
            h,
            edges + exponent,
            fill=True,
            alpha=0.45,
            **_HIST_STYLES[kind],
            label=f"{kind[:-1]} gradients ({n:,} values)",
        )
        name_artist(ax, f"{kind} fill", fill)
        name_artist(ax, f"{kind} edge", ax.stairs(h, edges + exponent, lw=1.5, **_HIST_STYLES[kind]))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1.12 * max(float(h.max()) for h in heights.values()))
    ax.set_xlabel("log2 |gradient x scale|")
    ax.set_ylabel("fraction of values per binade")
    ax.set_title(f"Gradients x {pow2(int(exponent))} in {f.name}", loc="left", pad=18)
    legend_outside(ax)
    return ax


def _census_bins(census: dict) -> tuple[np.ndarray, dict]:
    """Integer binade edges covering both kinds, and each kind's fraction of values per binade."""
    logs = []
    for kind in ("weights", "activations"):
        a = census[kind].detach().float().reshape(-1).abs()
        a = a[(a > 0) & torch.isfinite(a)]
        if a.numel():
            logs += [float(torch.log2(a.min())), float(torch.log2(a.max()))]
    lo, hi = (math.floor(min(logs)), math.ceil(max(logs)) + 1) if logs else (-30, -10)
    edges = np.arange(lo, hi + 1.0)
    return edges, {kind: _hist_log2(census[kind], edges) for kind in ("weights", "activations")}


def _history_series(history):
    """(label -> (scales, skipped)) from simulate_scaler's ScalerHistory or compare_with_gradscaler's rows."""
    if isinstance(history, ScalerHistory):
        return {"scale": (history.scale, history.skipped)}
    if isinstance(history, list) and history and isinstance(history[0], dict) and "ours_scale" in history[0]:
        return {
            "DynamicScaler (ours)": ([r["ours_scale"] for r in history], [r["ours_skipped"] for r in history]),
            "torch.amp.GradScaler": ([r["torch_scale"] for r in history], [r["torch_skipped"] for r in history]),
        }
    raise TypeError(
        "history must be the ScalerHistory of amp_lessons.scaling.simulate_scaler or the rows of "
        f"compare_with_gradscaler, got {type(history).__name__}"
    )


_HISTORY_STYLES = {
    "scale": dict(color="#1F78B4", lw=2.0),
    "DynamicScaler (ours)": dict(color="#1F78B4", lw=4.0, alpha=0.45),
    "torch.amp.GradScaler": dict(color="k", lw=1.2, ls="--"),
}


@styled
def plot_scaler_history(history, ax=None) -> Axes:
    """The loss scale used at each step (log2), skipped steps marked, from
    :func:`amp_lessons.scaling.simulate_scaler` or the rows of :func:`~amp_lessons.scaling.compare_with_gradscaler`
    (then both scalers)."""
    series = _history_series(history)
    ax = axes_for(ax, (9, 4.2))
    ys_all = []
    for label, (scales, skipped) in series.items():
        s = np.asarray(scales, dtype=float)
        if s.ndim != 1 or s.size == 0:
            raise ValueError("the history has no steps")
        with np.errstate(divide="ignore"):
            y = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)), np.nan)  # a scale of 0 is not drawn
        ys_all.append(y[np.isfinite(y)])
        steps = np.arange(s.size)
        (line,) = ax.step(
            steps, y, where="post", label=label if len(series) > 1 else "scale used", **_HISTORY_STYLES[label]
        )
        name_artist(ax, label, line)
        bad = np.asarray(skipped, dtype=bool)
        marker = (
            dict(marker="x", ms=8, mew=2)
            if label != "torch.amp.GradScaler"
            else dict(marker="o", ms=9, mfc="none", mew=1.2)
        )
        (marks,) = ax.plot(
            steps[bad],
            y[bad],
            ls="",
            color=OVERFLOW_COLOR,
            label=f"skipped step (inf/NaN gradient): {int(bad.sum())}"
            if label != "torch.amp.GradScaler"
            else "skipped by GradScaler",
            **marker,
        )
        name_artist(ax, f"{label} skipped", marks)
    finite = np.concatenate(ys_all) if ys_all else np.array([0.0])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    ax.set_ylim(math.floor(lo) - 1, math.ceil(hi) + 1)
    pow2_ticks(ax.yaxis, math.floor(lo) - 1, math.ceil(hi) + 1, max_ticks=8)
    n = max(len(v[0]) for v in series.values())
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale (log2 axis)")
    ax.set_title("Dynamic loss scale: back off on overflow, grow after a run of good steps", loc="left")
    legend_outside(ax)
    return ax


_TRAIN_STYLES = {
    "fp32": dict(color=format_color("fp32"), lw=3.0, alpha=0.5),
    "fp16 autocast, no scaling": dict(color=format_color("fp16"), lw=2.0),
    "fp16 autocast + GradScaler": dict(color="#33A02C", lw=2.0, ls="--"),
    "bf16 autocast, no scaler": dict(color=format_color("bf16"), lw=1.6, ls=":"),
}


@styled
def plot_train_comparison(result: TrainComparison, ax=None) -> Axes:
    """Loss against step (log y) of each run of :func:`amp_lessons.scaling.train_comparison`; the legend gives
    each run's final loss and share of exactly-zero gradient elements."""
    if not isinstance(result, TrainComparison):
        raise TypeError(
            "result must be the TrainComparison returned by amp_lessons.scaling.train_comparison, "
            f"got {type(result).__name__}"
        )
    ax = plot_runs(
        {"loss": result.loss, "zero_grad_fraction": result.zero_grad_fraction},
        ax,
        source="amp_lessons.scaling.train_comparison",
        note_key="zero_grad_fraction",
        note="{} of gradients exactly 0",
        styles=_TRAIN_STYLES,
        figsize=(9, 4.8),
    )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (MSE)")
    ax.set_title("Same model, same data: fp16 without loss scaling does not learn", loc="left")
    legend_outside(ax)
    return ax
