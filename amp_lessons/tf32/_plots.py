"""Lesson 02's pictures: matmul error against the inner dimension K, errors by precision."""

from __future__ import annotations

import textwrap

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from .._draw import axes_for, legend_outside, name_artist, styled
from ..formats import FORMATS
from ..style import format_color
from ..tf32._experiments import ErrorVsK

__all__ = [
    "plot_error_vs_k",
    "plot_matmul_errors",
]


def _variant_color(variant: str) -> str:
    return format_color(next((f for f in ("fp32", "tf32", "bf16", "fp16") if variant.startswith(f)), variant))


@styled
def plot_error_vs_k(data: ErrorVsK, ax=None, *, extra: dict | None = None) -> Axes:
    """RMS error of a matmul against its inner dimension K, log-log, one line per input format of ``data`` (from
    :func:`amp_lessons.tf32.error_vs_k`), and a dashed sqrt(K) guide a third below the lowest rounded line's first
    point. ``extra`` ({label: [rms per K]}) adds more lines. Named artists: each line by its key, and the guide
    "sqrt K guide"."""
    if not isinstance(data, ErrorVsK):
        raise TypeError(f"data must be the ErrorVsK returned by amp_lessons.tf32.error_vs_k, got {type(data).__name__}")
    ks = np.asarray(data.k, dtype=float)
    lines = dict(data.rms)
    lines.update(extra or {})
    ax = axes_for(ax, (9, 5))
    firsts = {}
    for label, rms in lines.items():
        rms = np.asarray(rms, dtype=float)
        if rms.shape != ks.shape:
            raise ValueError(f"line {label!r} has {rms.size} values for {ks.size} values of K")
        color = format_color(label) if label in FORMATS else "#6a3d9a"
        # TF32 and fp16 inputs often give the same errors: hollow squares keep both visible
        style = dict(marker="s", mfc="white", ms=8, ls="--") if label == "tf32" else dict(marker="o", ms=4)
        name = f"{label} inputs" if label in FORMATS else str(label)
        name_artist(ax, label, ax.plot(ks, np.maximum(rms, 1e-30), color=color, label=name, **style)[0])
        if rms[0] > 0:
            firsts[label] = float(rms[0])
    rounded = [v for k, v in firsts.items() if k != "fp32"] or list(firsts.values())
    if rounded:
        guide = ax.plot(ks, min(rounded) / 3 * np.sqrt(ks / ks[0]), "k--", lw=1.2, label="∝ √K (slope 1/2)")
        name_artist(ax, "sqrt K guide", guide[0])
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("inner dimension K (products summed per output)")
    ax.set_ylabel("RMS error of C = A @ B vs fp64")
    ax.set_title("Matmul error vs K (fp32 accumulation; dashed: √K guide)", loc="left")
    legend_outside(ax)
    return ax


@styled
def plot_matmul_errors(errors, ax=None, *, reference: dict | None = None) -> Axes:
    """Relative error (max error / mean |fp64 result|) of each matmul variant of ``errors`` as labelled horizontal
    bars on a log axis, modelled variants hatched. ``reference`` ({label: rel_error}) adds grey bars of reference
    figures, each label naming its source. Named artists: each bar by its label."""
    rows = [(e.variant, e.rel_error, e.how) for e in errors]
    if not rows:
        raise ValueError("errors is empty: pass the list from amp_lessons.tf32.matmul_errors")
    rows += [(label, value, "reference") for label, value in (reference or {}).items()]
    ax = axes_for(ax, (8, 0.5 * len(rows) + 1.2))
    kinds = {}
    for i, (label, value, how) in enumerate(rows):
        color = "#bbbbbb" if how == "reference" else _variant_color(label)
        modelled = how.endswith("(model)")
        (bar,) = ax.barh(
            i,
            value,
            color=color,
            hatch="//" if modelled else None,
            edgecolor="white" if modelled else color,
        )
        name_artist(ax, label, bar)
        ax.text(value * 1.15, i, f"{value:.2g}", va="center", fontsize=9)
        kinds.setdefault("reference" if how == "reference" else "model" if modelled else "measured", how)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo = min(r[1] for r in rows if r[1] > 0)
    hi = max(r[1] for r in rows)
    ax.set_xlim(lo / 3, hi * 30)
    looks = {
        "measured": dict(facecolor="#777777"),
        "model": dict(facecolor="#777777", hatch="//", edgecolor="white"),
        "reference": dict(facecolor="#bbbbbb"),
    }
    handles = [
        Patch(label="GPU reference (source in its label)" if k == "reference" else textwrap.fill(how, 26), **looks[k])
        for k, how in kinds.items()
    ]
    legend_outside(ax, handles=handles)
    ax.set_xlabel("relative error: max |C - C_fp64| / mean |C_fp64|")
    ax.set_title("Matmul error by input precision", loc="left")
    return ax
