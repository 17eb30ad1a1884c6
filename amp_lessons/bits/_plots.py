"""Lesson 01's pictures: bit layouts, spacing, range against precision, rounding error, number lines."""

from __future__ import annotations

import math

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from .. import _draw, _validate
from .._draw import (
    as_formats,
    axes_for,
    bar_height,
    decade_ticks,
    format_label,
    legend_outside,
    name_artist,
    pow2,
    styled,
)
from ..bits._describe import describe_code, describe_value
from ..formats import FORMATS, FloatFormat, check_modes, get_format, quantize, representable_values
from ..style import FIELD_COLORS, format_color

__all__ = [
    "SPACING_FORMATS",
    "plot_bit_layout",
    "plot_number_line",
    "plot_range_precision",
    "plot_rounding_error",
    "plot_spacing",
]


SPACING_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")


@styled
def plot_bit_layout(
    fmt, value=None, ax=None, rounding: str = "nearest_even", *, code=None, caption: bool = True, width=None
) -> Axes:
    """The format's bits as a row of boxes (sign / exponent / mantissa in three colours).

    With ``value``, the bits of ``value`` after rounding and (``caption=True``) a caption with the stored value, its
    class, the formula and the relative error; with ``code`` (an int) the bits of that pattern. ``width`` (an int, at
    least the format's bits): draw on a row that many bits wide, so layouts of different formats share a box size.
    Named artists: "bit digit" (a tuple) and "caption"."""
    f = get_format(fmt)
    if value is not None and code is not None:
        raise ValueError("give value or code, not both")
    check_modes(f, rounding)
    info = describe_value(value, f, rounding) if value is not None else None
    info = describe_code(code, f) if code is not None else info
    n, e = f.bits, f.exponent_bits
    if width is not None and not _validate.is_int(width, n, 64):
        raise ValueError(f"width must be an int from {n} ({f.name}'s bits) to 64, or None, got {width!r}")
    ax = axes_for(ax, (min(13.0, max(7.0, 0.36 * (width or n) + 2.0)), 3.1 if caption and info is not None else 2.6))
    span = (max(n, 12) if width is None else int(width)) + 0.6
    left = n / 2 - span / 2 if width is None else -0.3
    ax.set_xlim(left, left + span)
    ax.set_ylim(-1.35, 2.1)
    ax.set_axis_off()
    frac = 0.97 if ax.figure.get_layout_engine() is not None else ax.get_position().width
    box_pt = ax.figure.get_figwidth() * 72 * frac / span
    fields = ["sign"] + ["exponent"] * e + ["mantissa"] * f.mantissa_bits
    digits = format(info.code, f"0{n}b") if info is not None and info.code is not None else ""
    texts = []
    for i, field in enumerate(fields):
        ax.add_artist(Rectangle((i, 0), 1, 1, facecolor=FIELD_COLORS[field], edgecolor="#333333", lw=1))
        ax.text(
            i + 0.5,
            1.08,
            str(n - 1 - i),
            ha="center",
            va="bottom",
            color="#777777",
            fontsize=min(9.0, max(5.0, 0.32 * box_pt)),
        )
        if digits:
            t = ax.text(
                i + 0.5,
                0.5,
                digits[i],
                ha="center",
                va="center",
                family="monospace",
                fontsize=min(16.0, max(6.0, 0.55 * box_pt)),
                fontweight="bold",
            )
            texts.append(t)
    if texts:
        name_artist(ax, "bit digit", texts)
    low = _field_labels(ax, f, box_pt)
    caption = caption and info is not None
    ax.set_ylim(-0.75 if low else -0.55, 2.3 if caption else 1.45)
    ax.set_title(f"{f.name} (e{e}m{f.mantissa_bits}, {f.encoding}): {n} bits")
    if caption:
        text = ax.text(
            left + 0.1, 1.5, info.caption, ha="left", va="bottom", family="monospace", fontsize=10, linespacing=1.4
        )
        name_artist(ax, "caption", text)
    return ax


def _field_labels(ax: Axes, f: FloatFormat, box_pt: float) -> bool:
    """A bar and label under each field; returns whether a label dropped a row to avoid a clash."""
    e, m = f.exponent_bits, f.mantissa_bits
    spans = [("sign", 0, 1, "sign"), ("exponent", 1, 1 + e, f"exponent ({e} bit{'s' * (e > 1)}, bias {f.bias})")]
    if m:
        spans.append(("mantissa", 1 + e, f.bits, f"mantissa ({m} bit{'s' * (m > 1)})"))
    fs = 10.5
    half = [len(t) * 0.27 * fs / box_pt + 0.1 for *_, t in spans]  # half a label's width, in boxes
    centers = [(a + b) / 2 for _, a, b, _ in spans]
    clash = any(centers[i + 1] - centers[i] < half[i] + half[i + 1] for i in range(len(spans) - 1))
    for k, (field, a, b, text) in enumerate(spans):
        y = -0.5 if (clash and field == "exponent") else -0.2
        ax.plot([a + 0.06, b - 0.06], [-0.1, -0.1], color=FIELD_COLORS[field], lw=5, solid_capstyle="butt")
        if y < -0.22:
            ax.plot([centers[k]] * 2, [-0.12, y + 0.02], color="#999999", lw=0.8)
        ax.text(centers[k], y, text, ha="center", va="top", fontsize=fs)
    return clash


@styled
def plot_spacing(formats=SPACING_FORMATS, ax=None) -> Axes:
    """Gap to the next representable value (ulp) against magnitude, log-log: one staircase per format, filled
    dots at each max, hollow dots at each smallest normal. Named artists: "<format>", "<format> max",
    "<format> smallest normal"."""
    fmts = as_formats(formats)
    ax = axes_for(ax, (9, 5))
    for f in fmts:
        xs, ys = _draw.staircase(f)
        color = format_color(f.name)
        name_artist(ax, f.name, ax.step(xs, ys, where="post", color=color, label=format_label(f))[0])
        name_artist(ax, f"{f.name} max", ax.plot([f.max], [ys[-1]], "o", color=color)[0])
        (normal,) = ax.plot(
            [f.smallest_normal], [math.ldexp(1.0, f.emin - f.mantissa_bits)], "o", mfc="white", mec=color, mew=1.5
        )
        name_artist(ax, f"{f.name} smallest normal", normal)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("magnitude |x|")
    ax.set_ylabel("gap to next representable value")
    ax.set_title("Spacing of representable values (1 ulp)")
    ax.autoscale_view()
    decade_ticks(ax)
    handles, _ = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], ls="", marker="o", color="k", label="max"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="k", mew=1.5, label="smallest normal"),
    ]
    legend_outside(ax, handles=handles)
    return ax


@styled
def plot_range_precision(formats=None, ax=None) -> Axes:
    """Each format as a horizontal bar over the magnitudes it holds (log axis), hatched for subnormals;
    thicker for more precision. Named artists: "<format> subnormals", "<format> normals"."""
    fmts = as_formats(FORMATS.values() if formats is None else formats)
    ax = axes_for(ax, (10, 0.5 * len(fmts) + 1.6))
    for row, f in enumerate(fmts):
        color, h = format_color(f.name), bar_height(f)
        if f.mantissa_bits:
            (bar,) = ax.barh(
                row,
                f.smallest_normal - f.smallest_subnormal,
                left=f.smallest_subnormal,
                height=h,
                color=color,
                alpha=0.3,
                hatch="///",
                edgecolor=color,
                lw=0,
            )
            name_artist(ax, f"{f.name} subnormals", bar)
        if f.max >= f.smallest_normal:
            (bar,) = ax.barh(row, f.max - f.smallest_normal, left=f.smallest_normal, height=h, color=color)
            name_artist(ax, f"{f.name} normals", bar)
    ax.set_yticks(range(len(fmts)), [_precision_label(f) for f in fmts], fontsize=9.5)
    ax.set_ylim(len(fmts) - 0.5, -0.5)  # first format on top
    ax.set_xscale("log")
    ax.set_xlim(min(f.smallest_subnormal for f in fmts) / 3, max(f.max for f in fmts) * 3)
    decade_ticks(ax, "x")
    ax.grid(False, axis="y")
    ax.axvline(1.0, color="#999999", lw=0.8, ls=":")
    ax.set_xlabel("magnitude |x| (log scale)")
    ax.set_title("Range (bar length) and precision (bar thickness) of each format")
    legend_outside(
        ax,
        handles=[
            Patch(facecolor="#999999", alpha=0.3, hatch="///", edgecolor="#999999", label="subnormals"),
            Patch(facecolor="#999999", label="normal numbers\n(smallest normal to max)"),
        ],
        fontsize=9,
    )
    return ax


def _precision_label(f: FloatFormat) -> str:
    digits = f"{(f.mantissa_bits + 1) * math.log10(2):.1f} digits"
    name = f"{f.name}  e{f.exponent_bits}m{f.mantissa_bits}" if f.name in FORMATS else format_label(f)
    return f"{name}\neps {f.eps:.2g}, {digits}"


_OVERFLOW_TEXT = {"ieee": "inf", "fn": "saturates", "fnuz": "NaN", "finite": "saturates"}


def _magnitudes(x) -> torch.Tensor:
    if x is None:
        return torch.logspace(-30, 20, 3000, base=2.0, dtype=torch.float32)
    try:
        t = torch.as_tensor(x)
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"x must be a 1-D tensor, array or list of numbers, got {type(x).__name__}") from None
    if t.dtype == torch.bool or not (t.is_floating_point() or t.dtype in (torch.int32, torch.int64)):
        raise TypeError(f"x must hold real numbers, got dtype {t.dtype}")
    t = t.float()
    if t.dim() != 1 or t.numel() == 0:
        raise ValueError(f"x must be a non-empty 1-D sequence of magnitudes, got shape {tuple(t.shape)}")
    bad = ~torch.isfinite(t) | (t <= 0)
    if bad.any():
        raise ValueError(f"x must hold positive finite magnitudes, got {t[bad][0].item()!r}")
    return t.sort().values


@styled
def plot_rounding_error(fmt_names, x=None, ax=None, rounding: str = "nearest_even") -> Axes:
    """Relative rounding error ``|q(x) - x| / |x|`` against ``|x|`` (log-log) for each format, with its
    unit roundoff eps/2 dashed, its smallest normal (hollow dot) and its max (dotted line). Named artists: "<format>",
    "<format> unit roundoff", "<format> smallest normal", "<format> max"."""
    fmts = as_formats(fmt_names)
    check_modes(fmts[0] if fmts else FORMATS["fp32"], rounding)
    xs = _magnitudes(x)
    ax = axes_for(ax, (11, 5))
    x64 = xs.double()
    handles = []
    for f in fmts:
        color = format_color(f.name)
        err = ((quantize(xs, f, rounding).double() - x64).abs() / x64).numpy()
        err[(err == 0) | ~np.isfinite(err)] = np.nan
        label = f"{format_label(f)}: eps/2 = {pow2(-f.mantissa_bits - 1)}"
        if np.isnan(err).all():
            label += " (every x is exact)"
        elif f.max < xs[-1]:
            label += f"; max {f.max:.6g}, then {_OVERFLOW_TEXT[f.encoding]}"
            name_artist(ax, f"{f.name} max", ax.axvline(f.max, color=color, ls=":", lw=1.5))
        name_artist(ax, f.name, ax.plot(xs.numpy(), err, ".", color=color, ms=2.5, label=label)[0])
        handles.append(Line2D([], [], ls="", marker="o", ms=5, color=color, label=label))
        name_artist(ax, f"{f.name} unit roundoff", ax.axhline(f.unit_roundoff, color=color, ls="--", lw=1.2))
        (normal,) = ax.plot(
            [f.smallest_normal], [f.unit_roundoff], "o", mfc="white", mec=color, mew=1.5, ms=8, zorder=5
        )
        name_artist(ax, f"{f.name} smallest normal", normal)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(float(xs[0]), float(xs[-1]))
    ax.set_ylim(min(f.unit_roundoff for f in fmts) * 1e-2, 2.0)
    decade_ticks(ax, "x")
    ax.set_xlabel("magnitude |x|")
    ax.set_ylabel("relative error |q(x) - x| / |x|")
    ax.set_title(f"Relative rounding error ({rounding})")
    handles += [
        Line2D([], [], color="k", ls="--", label="unit roundoff eps/2"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="k", mew=1.5, ms=8, label="smallest normal"),
        Line2D([], [], color="k", ls=":", label="max (overflow beyond)"),
    ]
    legend_outside(ax, handles=handles)
    return ax


@styled
def plot_number_line(fmt, lo=None, hi=None, ax=None, scale: str = "linear") -> Axes:
    """A tick at every representable value of a format of at most 8 bits between ``lo`` (default 0) and
    ``hi`` (default max): tall for normals, short for subnormals; ``scale="symlog"`` spreads each binade evenly.
    Named artists: "normals", "subnormals", "zero"."""
    f = get_format(fmt)
    if f.bits > 8:
        raise ValueError(
            f"{f.name} has {f.bits} bits: plot_number_line draws formats of at most 8 bits "
            "(fp8, fp6, fp4); use plot_spacing for wider formats"
        )
    if scale not in ("linear", "symlog"):
        raise ValueError(f"scale must be 'linear' or 'symlog', got {scale!r}")
    lo = 0.0 if lo is None else _validate.real(lo, "lo")
    hi = f.max if hi is None else _validate.real(hi, "hi")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need finite lo < hi, got lo={lo!r}, hi={hi!r}")
    vals = representable_values(f, positive_only=lo >= 0).numpy().astype(float)
    shown = vals[(vals >= lo) & (vals <= hi)]
    sub = (np.abs(shown) < f.smallest_normal) & (shown != 0)
    color = format_color(f.name)
    ax = axes_for(ax, (10, 2.6))
    name_artist(ax, "normals", ax.vlines(shown[~sub & (shown != 0)], 0, 1, color=color, lw=1.2))
    name_artist(ax, "subnormals", ax.vlines(shown[sub], 0, 0.6, color=color, lw=1.2, alpha=0.5))
    name_artist(ax, "zero", ax.vlines(shown[shown == 0], 0, 1, color="k", lw=1.5))
    if scale == "symlog":
        ax.set_xscale("symlog", linthresh=f.smallest_normal, linscale=0.5)
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1.45)
    _binade_gaps(ax, f, lo, hi)
    ax.set_yticks([])
    ax.grid(False, axis="y")
    ax.spines["left"].set_visible(False)
    ax.set_xlabel("value x")
    pos = vals[vals > 0]
    below = int((pos < 1).sum())
    ax.set_title(
        f"{f.name}: {shown.size} values in [{lo:g}, {hi:g}]; {below} of the {pos.size} positive "
        f"values are below 1\n{_tick_key(ax, f, lo, hi, int(sub.sum()))}",
        fontsize=11,
    )
    return ax


def _tick_key(ax: Axes, f: FloatFormat, lo: float, hi: float, n_sub: int) -> str:
    """What the tick heights mean, claiming short subnormal ticks only where they cover 3% of the axis."""
    if n_sub == 0:
        return "no subnormals in this range" if f.mantissa_bits else f"{f.name} has no subnormals"
    to_axis = ax.xaxis.get_transform().transform
    t_lo, t_hi = to_axis(np.array([lo, hi]))
    a, b = to_axis(np.array([max(lo, -f.smallest_normal), min(hi, f.smallest_normal)]))
    if (b - a) / (t_hi - t_lo) >= 0.03:
        return "tall: normal, short: subnormal"
    return f"its {n_sub} subnormals, below {f.smallest_normal:g}, crowd at 0: scale='symlog' spreads them"


def _binade_gaps(ax: Axes, f: FloatFormat, lo: float, hi: float) -> None:
    scale = ax.xaxis.get_transform()
    to_axis, from_axis = scale.transform, scale.inverted().transform
    t_lo, t_hi = to_axis(np.array([lo, hi]))
    m = f.mantissa_bits
    ranges = [(0.0, f.smallest_normal, f.emin - m)] if m else []
    ranges += [(math.ldexp(1.0, e), min(math.ldexp(1.0, e + 1), f.max), e - m) for e in range(f.emin, f.emax + 1)]
    for a, b, k in ranges:
        a, b = max(a, lo), min(b, hi)
        ta, tb = to_axis(np.array([a, b]))
        if b > a and (tb - ta) / (t_hi - t_lo) > 0.06:
            ax.text(
                float(from_axis(np.array([(ta + tb) / 2]))[0]),
                1.08,
                f"gap {pow2(k)}",
                ha="center",
                va="bottom",
                fontsize=8.5,
                color="#555555",
            )
            inset = 0.004 * (hi - lo) if ax.get_xscale() == "linear" else 0.0
            ax.plot([a + inset, a + inset, b - inset, b - inset], [1.01, 1.04, 1.04, 1.01], color="#999999", lw=0.8)
