"""Lesson 04's picture: which dtype each op's output lands in under CPU and CUDA autocast."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.patches import Patch, Rectangle

from .._draw import axes_for, legend_outside, name_artist, styled
from ..style import format_color

__all__ = ["plot_output_dtypes"]

_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}
_COLORS = {"fp32": "#9E9E9E", "fp16": format_color("fp16"), "bf16": format_color("bf16"), "fp64": "#6A3D9A"}
_ERROR_COLOR = "#FFFFFF"


@styled
def plot_output_dtypes(table: dict, ax=None) -> Axes:
    """A grid, one row per op and one column per device type, each cell coloured and labelled by the dtype
    the op's output lands in (``table``: :func:`amp_lessons.autocast.output_dtypes`'s result). Low-precision
    cells are coloured by format (fp16 blue, bf16 orange), fp32 grey, fp64 purple, a refused call white with
    "error". Each cell is a patch named ``"<label>|<device>|<dtype>"`` (:func:`amp_lessons._draw.named_artists`)."""
    if not isinstance(table, dict) or not table or not all(isinstance(v, dict) and v for v in table.values()):
        raise TypeError("table must be autocast.output_dtypes(...)'s result: {label: {device_type: dtype name}}")
    labels = list(table)
    devices = list(next(iter(table.values())))
    if any(list(row) != devices for row in table.values()):
        raise ValueError(f"every row of table must name the same device types, {devices}")
    ax = axes_for(ax, (1.9 * len(devices) + 3.2, 0.42 * len(labels) + 1.3))
    for i, label in enumerate(labels):
        y = len(labels) - 1 - i
        for j, dev in enumerate(devices):
            name = str(table[label][dev])
            short = _SHORT.get(name, name)
            color = _COLORS.get(short, _ERROR_COLOR)
            cell = Rectangle((j + 0.04, y + 0.06), 0.92, 0.88, facecolor=color, edgecolor="#444444", lw=0.8)
            name_artist(ax, f"{label}|{dev}|{name}", ax.add_patch(cell))
            dark = short in ("fp16", "fp64")
            ax.text(j + 0.5, y + 0.5, short, ha="center", va="center", color="white" if dark else "black",
                    fontweight="bold" if short != "fp32" else "normal")  # fmt: skip
    ax.set_xlim(0, len(devices))
    ax.set_ylim(0, len(labels))
    ax.set_xticks(np.arange(len(devices)) + 0.5, [f"{d.upper()} autocast" for d in devices])
    ax.xaxis.tick_top()
    ax.set_yticks(np.arange(len(labels))[::-1] + 0.5, labels)
    ax.tick_params(length=0)
    for side in ax.spines.values():
        side.set_visible(False)
    ax.grid(False)
    seen = {_SHORT.get(str(v), str(v)) for row in table.values() for v in row.values()}
    used = [u for u in _COLORS if u in seen] + sorted(seen - set(_COLORS))
    handles = [
        Patch(facecolor=_COLORS.get(u, _ERROR_COLOR), edgecolor="#444444", label=u if u in _COLORS else "refused")
        for u in used
    ]
    legend_outside(ax, handles=handles, title="output dtype", fontsize="small")
    ax.set_title("Where each op's output lands", loc="left")
    return ax
