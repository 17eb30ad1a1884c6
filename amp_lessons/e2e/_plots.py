"""Lesson 06's pictures: matmul throughput by dtype, training runs, inference."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.ticker import NullLocator

from .._draw import axes_for, decade_ticks, legend_outside, name_artist, series, styled
from ..e2e._records import TrainRun
from ..style import format_color

__all__ = [
    "plot_inference",
    "plot_throughput",
    "plot_training_runs",
]


def _dtype_color(dt: str) -> str:
    return format_color("fp8_e4m3" if dt == "fp8" else dt)


@styled
def plot_throughput(rows, ax=None) -> Axes:
    """TFLOP/s against matrix size (log-log), one line per dtype, from the rows of
    :func:`amp_lessons.e2e.matmul_throughput`; the legend says how many sizes of a dtype were skipped.
    Named artists: each measured dtype's line by the dtype."""
    rows = list(rows) if not isinstance(rows, dict) else None
    if not rows or not all(isinstance(r, dict) and {"size", "dtype", "tflops", "skipped"} <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.e2e.matmul_throughput")
    ax = axes_for(ax, (8, 4.8))
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    for dt in dtypes:
        done = sorted((r["size"], r["tflops"]) for r in rows if r["dtype"] == dt and not r["skipped"])
        skipped = sum(1 for r in rows if r["dtype"] == dt and r["skipped"])
        label = dt + (f" ({skipped} size{'s' if skipped > 1 else ''} skipped)" if skipped else "")
        if not done:
            ax.plot([], [], color=_dtype_color(dt), label=f"{dt}: not measured here")
            continue
        x, y = zip(*done)
        (line,) = ax.plot(x, y, marker="o", lw=2, color=_dtype_color(dt), label=label)
        name_artist(ax, dt, line)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({r["size"] for r in rows})
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("matrix size n (n x n @ n x n)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("Matmul throughput by number format (measured on this machine)", loc="left")
    legend_outside(ax)
    return ax


@styled
def plot_training_runs(results, ax=None) -> Axes:
    """Loss curves of the :func:`amp_lessons.e2e.train` results that ran, each labelled with its median step time and
    peak memory; runs that did not run are listed under the plot. Named artists: each run's curve by its config."""
    results = list(results.values()) if isinstance(results, dict) else list(results)
    if not results or not all(isinstance(r, TrainRun) for r in results):
        raise TypeError("results must be a non-empty list of the TrainRuns returned by amp_lessons.e2e.train")
    ax = axes_for(ax, (9, 4.8))
    styles = {
        "fp32": dict(color=format_color("fp32"), lw=2.4),
        "tf32": dict(color=format_color("tf32"), lw=2, ls="--"),
        "bf16 autocast": dict(color=format_color("bf16"), lw=1.8, ls="--"),
        "fp16 autocast + GradScaler": dict(color=format_color("fp16"), lw=1.6, ls=":"),
    }
    skipped = []
    for r in results:
        if not r.ran:
            skipped.append(f"{r.config}: {r.reason.split(':', 1)[-1].split(',')[0].strip()}")
            continue
        y = series(r.loss, r.config)
        label = f"{r.config}: {r.step_time_s * 1e3:.1f} ms/step, peak {r.peak_memory_bytes / 2**20:.1f} MiB"
        (line,) = ax.plot(
            np.arange(1, y.size + 1),
            y,
            label=label,
            **styles.get(r.config, dict(color=format_color(r.config))),
        )
        name_artist(ax, r.config, line)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (cross-entropy)")
    if ax.lines:
        decade_ticks(ax, "y")
    ax.set_title("Same model, same data: the loss curves overlap; time and memory do not", loc="left")
    if ax.lines:
        legend_outside(ax)
    if skipped:
        ax.text(
            0.0,
            -0.18,
            "not run here: " + "; ".join(skipped),
            transform=ax.transAxes,
            fontsize=8,
            va="top",
            wrap=True,
            color="#555555",
        )
    return ax


@styled
def plot_inference(rows, ax=None) -> Axes:
    """Two bar groups from :func:`amp_lessons.e2e.inference_compare`: the max |logit error| against fp32 (log scale;
    fp32's 0 written, not drawn) and the forward time, per variant. The returned axes names both, "error" and "time"."""
    rows = list(rows) if not isinstance(rows, dict) else None
    if not rows or not all(isinstance(r, dict) and {"variant", "max_abs_error", "time_s"} <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.e2e.inference_compare")
    if ax is None:
        fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    else:
        ax = axes_for(ax, None)
        ax_t = ax.inset_axes([1.25, 0.0, 1.0, 1.0])
    names = [r["variant"] for r in rows]
    colors = [
        format_color("bf16") if "bf16" in n else format_color("fp16") if "fp16" in n else format_color("fp32")
        for n in names
    ]
    y = np.arange(len(rows))
    errs = [r["max_abs_error"] for r in rows]
    positive = [e for e in errs if e > 0]
    floor = min(positive) / 10 if positive else 1e-8
    name_artist(ax, "error", ax.barh(y, [e - floor if e > 0 else np.nan for e in errs], color=colors, left=floor))
    for i, e in enumerate(errs):
        ax.text(max(e, floor) * 1.15, i, "0 (reference)" if e == 0 else f"{e:.2g}", va="center", fontsize=9)
    ax.set_xscale("log")
    ax.set_xlim(floor, max(positive or [1.0]) * 20)
    ax.set_yticks(y, names)
    ax.set_ylim(len(rows) - 0.4, -0.7)
    ax.set_xlabel("max |logit - fp32 logit|")
    ax.set_title("Error against fp32", loc="left")
    times = [r["time_s"] * 1e3 for r in rows]
    name_artist(ax, "time", ax_t.barh(y, times, color=colors))  # named on the returned axes
    for i, t in enumerate(times):
        ax_t.text(t, i, f" {t:.2f} ms", va="center", fontsize=9)
    ax_t.set_xlim(0, max(times) * 1.35)
    ax_t.set_yticks(y, [""] * len(rows))
    ax_t.set_ylim(len(rows) - 0.4, -0.7)
    ax_t.set_xlabel("forward time (ms, measured on this machine)")
    ax_t.set_title("Time per forward", loc="left")
    return ax
