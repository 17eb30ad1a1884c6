"""One ``plot_*`` function per picture of the course, drawn in the course style.

Each takes an optional ``ax`` (a new figure is made when it is None) and returns the Axes. Every
number drawn comes from :mod:`amp_lessons.formats`: spacing and ranges from the format's
constants, stored values and bits from its exact rounding.

:func:`describe_value` / :func:`describe_code` give the facts behind a bit-layout picture
(stored value, fields, formula, rounding error, class) as a :class:`BitInfo`; the widgets reuse
them for their read-outs.
"""

from __future__ import annotations

import functools
import math
import numbers
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import NullLocator

from ._draw import (
    OVERFLOW_COLOR as _OVERFLOW_COLOR,
    REGION_COLORS as _REGION_COLORS,
    bar_height as _bar_height,
    decade_ticks as _decade_ticks,
    overflow_threshold as _overflow_threshold,
    pow2 as _pow2,
    pow2_ticks as _pow2_ticks,
    region_spans as _region_spans,
    staircase as _staircase,
    zero_threshold as _zero_threshold,
)
from ._validate import real as _real
from .formats import (
    FORMATS,
    ROUNDING_MODES,
    FloatFormat,
    from_bits,
    get_format,
    quantize,
    representable_values,
    to_bits,
)
from .fp16 import census_fractions
from .scaling import safe_window
from .style import FIELD_COLORS, format_color, style_context

__all__ = [
    "BitInfo",
    "plot_error_vs_k",
    "plot_matmul_errors",
    "describe_code",
    "describe_value",
    "plot_bit_layout",
    "plot_number_line",
    "plot_range_precision",
    "plot_rounding_error",
    "plot_spacing",
    "plot_format_regions",
    "plot_gradient_histogram",
    "plot_loss_curves",
    "plot_running_sums",
    "plot_scale_sweep",
    "plot_scaled_histogram",
    "plot_scaler_history",
    "plot_train_comparison",
    "REGION_FORMATS",
]

SPACING_FORMATS = ("fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")


# --- facts behind a bit layout ---------------------------------------------------------------


@dataclass(frozen=True)
class BitInfo:
    """What one value looks like in one format.

    ``typed`` is the value asked for (None when a code was given), ``stored`` the format's value
    (float32, as a Python float), ``code`` the integer bit pattern (None when the format cannot
    encode the stored value: NaN in a format without NaN), ``kind`` one of ``normal``,
    ``subnormal``, ``zero``, ``inf``, ``NaN``, ``overflow saturated``, ``overflow to inf``,
    ``overflow to NaN``, ``underflow to zero``.
    """

    fmt: FloatFormat
    typed: float | None
    stored: float
    code: int | None
    kind: str
    formula: str

    @property
    def fields(self) -> tuple[int, int, int] | None:
        """(sign, biased exponent, mantissa) bit fields, or None without a code."""
        if self.code is None:
            return None
        m, e = self.fmt.mantissa_bits, self.fmt.exponent_bits
        return self.code >> (e + m), (self.code >> m) & ((1 << e) - 1), self.code & ((1 << m) - 1)

    @property
    def bit_string(self) -> str:
        """The bits, most significant first, fields separated by spaces: ``"0 01111 0000000000"``."""
        if self.code is None:
            return ""
        digits = format(self.code, f"0{self.fmt.bits}b")
        e = self.fmt.exponent_bits
        return " ".join(part for part in (digits[0], digits[1 : 1 + e], digits[1 + e :]) if part)

    @property
    def caption(self) -> str:
        """Three lines: what was stored (and as what class), the formula, the relative error."""
        if self.typed is None:
            lines = [f"bits {self.bit_string}: {self.stored!r} ({self.kind})", self.formula]
        else:
            lines = [
                f"{self.typed!r} is stored as {self.stored!r} ({self.kind})",
                self.formula,
                f"relative rounding error {_fmt_err(self.rel_error)}",
            ]
        return "\n".join(lines)

    @property
    def abs_error(self) -> float:
        """``|stored - typed|`` (0 when equal, NaN when undefined)."""
        t, s = self.typed, self.stored
        if t is None or math.isnan(t) or math.isnan(s):
            return math.nan
        return 0.0 if s == t else abs(s - t)

    @property
    def rel_error(self) -> float:
        """``|stored - typed| / |typed|`` (0 when equal, NaN when undefined)."""
        err = self.abs_error
        if err == 0.0 or math.isnan(err):
            return err
        return err / abs(self.typed) if self.typed != 0 else math.inf


def _check_rounding(rounding) -> None:
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding mode {rounding!r}: use one of {', '.join(map(repr, ROUNDING_MODES))}")


@functools.lru_cache(maxsize=None)
def _wide(mantissa_bits: int) -> FloatFormat:
    """Same precision, fp32's exponent range: rounding there tells whether a value overflows."""
    return FloatFormat(f"e8m{mantissa_bits}", 8, mantissa_bits, "ieee")


def describe_value(value, fmt, rounding: str = "nearest_even") -> BitInfo:
    """Round ``value`` (a real number, first made float32 as the engine works in float32) to
    ``fmt`` and describe the result. Never raises for inf, NaN, -0.0 or out-of-range values."""
    f = get_format(fmt)
    v = _real(value, "value")
    _check_rounding(rounding)
    x = torch.tensor([v], dtype=torch.float32)
    stored = float(quantize(x, f, rounding)[0])
    code = None if math.isnan(stored) and not f.has_nan else int(to_bits(x, f, rounding)[0])
    overflow = math.isfinite(v) and (
        math.isinf(float(x[0])) or abs(float(quantize(x, _wide(f.mantissa_bits), rounding)[0])) > f.max
    )
    return _info(f, v, stored, code, overflow)


def describe_code(code, fmt) -> BitInfo:
    """Describe the value of the bit pattern ``code`` (an int, 0 .. 2**bits - 1) of ``fmt``."""
    f = get_format(fmt)
    if isinstance(code, bool) or not isinstance(code, numbers.Integral):
        raise TypeError(f"code must be an int, got {code!r} ({type(code).__name__})")
    stored = float(from_bits(torch.tensor([int(code)]), f)[0])  # raises ValueError out of range
    return _info(f, None, stored, int(code), False)


def _info(f: FloatFormat, typed, stored: float, code, overflow: bool) -> BitInfo:
    if math.isnan(stored):
        kind = "NaN"
    elif math.isinf(stored):
        kind = "inf"
    elif stored == 0:
        kind = "zero"
    else:
        kind = "subnormal" if abs(stored) < f.smallest_normal else "normal"
    if overflow:
        kind = {"normal": "overflow saturated", "inf": "overflow to inf", "NaN": "overflow to NaN"}[kind]
    elif kind == "zero" and typed not in (None, 0.0) and not math.isnan(typed):
        kind = "underflow to zero"
    return BitInfo(f, typed, stored, code, kind, _formula(f, stored, code))


def _formula(f: FloatFormat, stored: float, code) -> str:
    if code is None:
        return f"NaN: {f.name} has no NaN code ({f.encoding} encoding)"
    m, e = f.mantissa_bits, f.exponent_bits
    s, ex, mt = code >> (e + m), (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)
    if math.isnan(stored):
        return {
            "ieee": "exponent all ones, mantissa not zero: NaN",
            "fn": "exponent and mantissa all ones: NaN",
            "fnuz": "sign 1, all other bits 0 (no -0 in fnuz): NaN",
        }[f.encoding]
    if math.isinf(stored):
        return f"exponent all ones, mantissa zero: {'-' if s else '+'}inf"
    frac = format(mt, f"0{m}b") if m else ""
    if ex == 0:
        lead, power = "0", f"2^(1-{f.bias})"
    else:
        lead, power = "1", f"2^({ex}-{f.bias})"
    significand = f"{lead}.{frac}b" if m else f"{lead}b"
    return f"(-1)^{s} x {power} x {significand} = {stored!r}"


# --- shared helpers ----------------------------------------------------------------------------


def _styled(func):
    """Draw inside the course style, so a plot looks the same with or without use_style()."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with style_context():
            return func(*args, **kwargs)

    return wrapper


def _axes(ax, figsize) -> Axes:
    if ax is None:
        return plt.subplots(figsize=figsize, layout="constrained")[1]
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def _formats(formats) -> list[FloatFormat]:
    if isinstance(formats, (str, FloatFormat)):
        formats = [formats]
    try:
        fmts = [get_format(f) for f in formats]
    except TypeError:
        raise TypeError(f"formats must be format names or FloatFormats, got {formats!r}") from None
    if not fmts:
        raise ValueError("formats is empty: give at least one format name")
    return fmts


def _label(f: FloatFormat) -> str:
    return f.name if f.name in FORMATS else f"{f.name} (e{f.exponent_bits}m{f.mantissa_bits}, {f.encoding})"


# --- bit layout --------------------------------------------------------------------------------


@_styled
def plot_bit_layout(
    fmt, value=None, ax=None, rounding: str = "nearest_even", *, code=None, caption: bool = True
) -> Axes:
    """The format's bits as a row of boxes (sign / exponent / mantissa in three colours).

    With ``value``, the bits of ``value`` after rounding and (``caption=True``) a caption with
    the stored value, its class, the formula and the relative rounding error; with ``code`` (an
    int) the bits of that exact pattern instead. ``inf``/``NaN`` show their bits and say so.
    """
    f = get_format(fmt)
    if value is not None and code is not None:
        raise ValueError("give value or code, not both")
    info = describe_value(value, f, rounding) if value is not None else None
    info = describe_code(code, f) if code is not None else info
    n, e = f.bits, f.exponent_bits
    ax = _axes(ax, (min(13.0, max(7.0, 0.36 * n + 2.0)), 3.1 if caption and info is not None else 2.6))
    span = max(n, 12) + 0.6
    ax.set_xlim(n / 2 - span / 2, n / 2 + span / 2)
    ax.set_ylim(-1.35, 2.1)
    ax.set_axis_off()
    # the axes' final width: constrained layout (figures made here) widens it when it runs
    frac = 0.97 if ax.figure.get_layout_engine() is not None else ax.get_position().width
    box_pt = ax.figure.get_figwidth() * 72 * frac / span
    fields = ["sign"] + ["exponent"] * e + ["mantissa"] * f.mantissa_bits
    digits = format(info.code, f"0{n}b") if info is not None and info.code is not None else ""
    for i, field in enumerate(fields):
        # add_artist, not add_patch: the limits are fixed, so skip the (slow) data-limit update
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
            ax.text(
                i + 0.5,
                0.5,
                digits[i],
                ha="center",
                va="center",
                family="monospace",
                gid="bit digit",
                fontsize=min(16.0, max(6.0, 0.55 * box_pt)),
                fontweight="bold",
            )
    low = _field_labels(ax, f, box_pt)
    caption = caption and info is not None
    ax.set_ylim(-0.75 if low else -0.55, 2.3 if caption else 1.45)
    ax.set_title(f"{f.name} (e{e}m{f.mantissa_bits}, {f.encoding}): {n} bits")
    if caption:
        ax.text(
            n / 2 - span / 2 + 0.1,
            1.5,
            info.caption,
            ha="left",
            va="bottom",
            family="monospace",
            fontsize=10,
            linespacing=1.4,
            gid="caption",
        )
    return ax


def _fmt_err(err: float) -> str:
    if math.isnan(err) or err == 0:
        return "n/a" if err != 0 else "0 (exact)"
    return f"{err:.4g}" if 1e-3 <= err < 1e4 else f"{err:.3e}"


def _field_labels(ax: Axes, f: FloatFormat, box_pt: float) -> bool:
    """A bar under each field and its label; a label that would overlap a neighbour drops a row
    (returns whether one did)."""
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


# --- spacing -----------------------------------------------------------------------------------


@_styled
def plot_spacing(formats=SPACING_FORMATS, ax=None) -> Axes:
    """Gap to the next representable value (ulp) against magnitude, log-log: one staircase per
    format from its smallest subnormal to its max, computed exactly from the format's constants.
    Filled dots mark each max, hollow dots each smallest normal (left of it: subnormals)."""
    fmts = _formats(formats)
    ax = _axes(ax, (9, 5))
    for f in fmts:
        xs, ys = _staircase(f)
        color = format_color(f.name)
        if xs.size == 0:
            ax.plot([], [], color=color, label=f"{_label(f)}: no positive values")
            continue
        ax.step(xs, ys, where="post", color=color, label=_label(f), gid=f.name)
        ax.plot([f.max], [ys[-1]], "o", color=color, gid=f"{f.name} max")
        ax.plot(
            [f.smallest_normal],
            [math.ldexp(1.0, f.emin - f.mantissa_bits)],
            "o",
            mfc="white",
            mec=color,
            mew=1.5,
            gid=f"{f.name} smallest normal",
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("magnitude |x|")
    ax.set_ylabel("gap to next representable value")
    ax.set_title("Spacing of representable values (1 ulp)")
    ax.autoscale_view()
    _decade_ticks(ax)
    handles, _ = ax.get_legend_handles_labels()
    handles += [
        Line2D([], [], ls="", marker="o", color="k", label="max"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="k", mew=1.5, label="smallest normal"),
    ]
    ax.legend(handles=handles, loc="upper left", ncols=2 if len(handles) > 6 else 1)
    return ax


# --- range and precision -----------------------------------------------------------------------


@_styled
def plot_range_precision(formats=None, ax=None) -> Axes:
    """Each format as a horizontal bar over the magnitudes it holds (log axis): hatched and light
    from the smallest subnormal to the smallest normal, solid from there to max. The bar's
    thickness grows with the precision (mantissa bits + 1); the label gives eps and digits."""
    fmts = _formats(FORMATS.values() if formats is None else formats)
    ax = _axes(ax, (10, 0.5 * len(fmts) + 1.6))
    for row, f in enumerate(fmts):
        color, h = format_color(f.name), _bar_height(f)
        if f.mantissa_bits:
            ax.barh(
                row,
                f.smallest_normal - f.smallest_subnormal,
                left=f.smallest_subnormal,
                height=h,
                color=color,
                alpha=0.3,
                hatch="///",
                edgecolor=color,
                lw=0,
                gid=f"{f.name} subnormals",
            )
        if f.max >= f.smallest_normal:
            ax.barh(
                row, f.max - f.smallest_normal, left=f.smallest_normal, height=h, color=color, gid=f"{f.name} normals"
            )
    ax.set_yticks(range(len(fmts)), [_precision_label(f) for f in fmts], fontsize=9.5)
    ax.set_ylim(len(fmts) - 0.5, -0.5)  # first format on top
    ax.set_xscale("log")
    ax.set_xlim(min(f.smallest_subnormal for f in fmts) / 3, max(f.max for f in fmts) * 3)
    _decade_ticks(ax, "x")
    ax.grid(False, axis="y")
    ax.axvline(1.0, color="#999999", lw=0.8, ls=":")
    ax.set_xlabel("magnitude |x| (log scale)")
    ax.set_title("Range (bar length) and precision (bar thickness) of each format")
    ax.legend(
        handles=[
            Patch(facecolor="#999999", alpha=0.3, hatch="///", edgecolor="#999999", label="subnormals"),
            Patch(facecolor="#999999", label="normal numbers (smallest normal to max)"),
        ],
        loc="lower right",
        fontsize=9,
    )
    return ax


def _precision_label(f: FloatFormat) -> str:
    digits = f"{f.decimal_digits} digit{'s' * (f.decimal_digits != 1)}" if f.decimal_digits else "<1 digit"
    name = f"{f.name}  e{f.exponent_bits}m{f.mantissa_bits}" if f.name in FORMATS else _label(f)
    return f"{name}\neps {f.eps:.2g}, {digits}"


# --- rounding error ----------------------------------------------------------------------------

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


@_styled
def plot_rounding_error(fmt_names, x=None, ax=None, rounding: str = "nearest_even") -> Axes:
    """Relative rounding error ``|q(x) - x| / |x|`` against ``|x|`` (log-log) for each format, with
    its unit roundoff eps/2 dashed. Below the smallest normal (hollow dot) subnormals make the
    error grow, to 1 where x rounds to 0; past max (dotted line) the value overflows (inf or NaN:
    not drawn; saturation: the error climbs towards 1). Exact results (error 0) are gaps."""
    fmts = _formats(fmt_names)
    _check_rounding(rounding)
    xs = _magnitudes(x)
    ax = _axes(ax, (11, 5))
    x64 = xs.double()
    handles = []
    for f in fmts:
        color = format_color(f.name)
        err = ((quantize(xs, f, rounding).double() - x64).abs() / x64).numpy()
        err[(err == 0) | ~np.isfinite(err)] = np.nan
        label = f"{_label(f)}: eps/2 = {_pow2(-f.mantissa_bits - 1)}"
        if np.isnan(err).all():
            label += " (every x is exact)"
        elif f.max < xs[-1]:
            label += f"; max {f.max:.6g}, then {_OVERFLOW_TEXT[f.encoding]}"
            ax.axvline(f.max, color=color, ls=":", lw=1.5)
        ax.plot(xs.numpy(), err, ".", color=color, ms=2.5, label=label)
        handles.append(Line2D([], [], ls="", marker="o", ms=5, color=color, label=label))
        ax.axhline(f.unit_roundoff, color=color, ls="--", lw=1.2)
        ax.plot([f.smallest_normal], [f.unit_roundoff], "o", mfc="white", mec=color, mew=1.5, ms=8, zorder=5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(float(xs[0]), float(xs[-1]))
    ax.set_ylim(min(f.unit_roundoff for f in fmts) * 1e-2, 2.0)
    _decade_ticks(ax, "x")
    ax.set_xlabel("magnitude |x|")
    ax.set_ylabel("relative error |q(x) - x| / |x|")
    ax.set_title(f"Relative rounding error ({rounding})")
    handles += [
        Line2D([], [], color="k", ls="--", label="unit roundoff eps/2"),
        Line2D([], [], ls="", marker="o", mfc="white", mec="k", mew=1.5, ms=8, label="smallest normal"),
        Line2D([], [], color="k", ls=":", label="max (overflow beyond)"),
    ]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9)
    return ax


# --- number line -------------------------------------------------------------------------------


@_styled
def plot_number_line(fmt, lo=None, hi=None, ax=None, scale: str = "linear") -> Axes:
    """A tick at every representable value of a format of at most 8 bits between ``lo`` (default
    0; negative to include negative values) and ``hi`` (default max). Tall ticks: normals; short,
    lighter ticks: subnormals. On a ``"linear"`` axis the values crowd near zero; ``"symlog"``
    spreads each binade evenly. Each wide enough binade is labelled with its gap."""
    f = get_format(fmt)
    if f.bits > 8:
        raise ValueError(
            f"{f.name} has {f.bits} bits: plot_number_line draws formats of at most 8 bits "
            "(fp8, fp6, fp4); use plot_spacing for wider formats"
        )
    if scale not in ("linear", "symlog"):
        raise ValueError(f"scale must be 'linear' or 'symlog', got {scale!r}")
    lo = 0.0 if lo is None else _real(lo, "lo")
    hi = f.max if hi is None else _real(hi, "hi")
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"need finite lo < hi, got lo={lo!r}, hi={hi!r}")
    vals = representable_values(f, positive_only=lo >= 0).numpy().astype(float)
    shown = vals[(vals >= lo) & (vals <= hi)]
    sub = (np.abs(shown) < f.smallest_normal) & (shown != 0)
    color = format_color(f.name)
    ax = _axes(ax, (10, 2.6))
    ax.vlines(shown[~sub & (shown != 0)], 0, 1, color=color, lw=1.2)
    ax.vlines(shown[sub], 0, 0.6, color=color, lw=1.2, alpha=0.5)
    ax.vlines(shown[shown == 0], 0, 1, color="k", lw=1.5)
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
        f"values are below 1 (tall: normal, short: subnormal)",
        fontsize=11,
    )
    return ax


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
                f"gap {_pow2(k)}",
                ha="center",
                va="bottom",
                fontsize=8.5,
                color="#555555",
            )
            inset = 0.004 * (hi - lo) if ax.get_xscale() == "linear" else 0.0
            ax.plot([a + inset, a + inset, b - inset, b - inset], [1.01, 1.04, 1.04, 1.01], color="#999999", lw=0.8)


# --- matmul precision (lesson 02) ----------------------------------------------------------------

_VARIANT_FORMAT = {"fp32": "fp32", "tf32": "tf32", "bf16": "bf16", "fp16": "fp16"}


def _variant_color(variant: str) -> str:
    for key, fmt in _VARIANT_FORMAT.items():
        if variant.startswith(key):
            return format_color(fmt)
    return format_color(variant)


@_styled
def plot_error_vs_k(data: dict, ax=None, *, extra: dict | None = None) -> Axes:
    """RMS error of a matmul against its inner dimension K, log-log, one line per input format
    (from :func:`amp_lessons.tf32.error_vs_k`), with a dashed sqrt(K) trend through each line's
    first point. ``extra`` ({label: [rms per K]}) adds more lines (e.g. a designed format)."""
    if not isinstance(data, dict) or not {"k", "rms"} <= set(data):
        raise TypeError("data must be the dict returned by amp_lessons.tf32.error_vs_k (keys 'k', 'rms')")
    ks = np.asarray(data["k"], dtype=float)
    lines = dict(data["rms"])
    lines.update(extra or {})
    ax = _axes(ax, (8, 5))
    for label, rms in lines.items():
        rms = np.asarray(rms, dtype=float)
        if rms.shape != ks.shape:
            raise ValueError(f"line {label!r} has {rms.size} values for {ks.size} values of K")
        color = format_color(label) if label in FORMATS else "#6a3d9a"
        # TF32 and fp16 inputs often give the same errors: hollow squares keep both visible
        style = dict(marker="s", mfc="white", ms=8, ls="--") if label == "tf32" else dict(marker="o", ms=4)
        ax.plot(ks, np.maximum(rms, 1e-30), color=color, label=f"{label} inputs", gid=label, **style)
        ax.plot(ks, rms[0] * np.sqrt(ks / ks[0]), "--", color=color, lw=1, alpha=0.7)
    ax.plot([], [], "k--", lw=1, label="sqrt(K) trend")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("inner dimension K (products summed per output)")
    ax.set_ylabel("RMS error of C = A @ B vs fp64")
    ax.set_title("Matmul error grows like sqrt(K) (fp32 accumulation)", loc="left")
    ax.legend(fontsize=9, loc="lower right")
    return ax


@_styled
def plot_matmul_errors(errors, ax=None, *, reference: dict | None = None) -> Axes:
    """Relative error (max error / mean |fp64 result|) of each matmul variant as horizontal bars
    on a log axis; emulated variants hatched. ``reference`` ({label: rel_error}) adds labelled
    reference figures (e.g. a published A100 figure) as grey bars."""
    rows = [(e.variant, e.rel_error, e.how) for e in errors]
    if not rows:
        raise ValueError("errors is empty: pass the list from amp_lessons.tf32.matmul_errors")
    rows += [(label, value, "reference") for label, value in (reference or {}).items()]
    ax = _axes(ax, (8, 0.5 * len(rows) + 1.2))
    for i, (label, value, how) in enumerate(rows):
        color = "#bbbbbb" if how == "reference" else _variant_color(label)
        ax.barh(
            i,
            value,
            color=color,
            hatch="//" if how.startswith("emulated") else None,
            edgecolor="white" if how.startswith("emulated") else color,
            gid=label,
        )
        ax.text(value * 1.15, i, f"{value:.2g}  ({how})", va="center", fontsize=9)
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    lo = min(r[1] for r in rows if r[1] > 0)
    hi = max(r[1] for r in rows)
    ax.set_xlim(lo / 3, hi * 300)
    ax.set_xlabel("relative error: max |C - C_fp64| / mean |C_fp64|")
    ax.set_title("Matmul error by input precision", loc="left")
    return ax


# --- lesson 03: overflow, underflow, swamping ----------------------------------------------------

# Lines of the sums experiments (amp_lessons.fp16.running_sums_of_copies); other labels get a
# colour from format_color (a format's own, or a stable fallback).
_SUM_STYLES = {
    "exact": dict(color="#AAAAAA", lw=5, alpha=0.6, zorder=1),
    "fp32 running sum": dict(color=format_color("fp32"), lw=1.4),
    "fp16 addends, fp32 accumulator": dict(color="#6A3D9A", lw=1.8, ls="--"),
    "torch.cumsum (fp16 tensor)": dict(color="#E31A1C", lw=1.5, ls="-."),
    "fp16 running sum": dict(color=format_color("fp16"), lw=2.4),
}


def _series(values, label) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().float().cpu().numpy()
    try:
        y = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"line {label!r}: expected a 1-D tensor or list of numbers, got {type(values).__name__}"
        ) from None
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"line {label!r}: expected a non-empty 1-D sequence, got shape {y.shape}")
    return y


def _sum_style(label: str) -> dict:
    return dict(_SUM_STYLES.get(label, dict(color=format_color(label), lw=1.8)))


@_styled
def plot_running_sums(
    values_by_label: dict, ax=None, *, limit=None, limit_label: str | None = None, minus: str | None = None
) -> Axes:
    """Partial sums against the number of terms added, one line per label (``{label: partial
    sums}``, e.g. from :func:`amp_lessons.fp16.running_sums_of_copies`). A line that overflows
    stops there, and a triangle marks the term where it became inf; ``limit`` (e.g. fp16's max
    65504) adds a dotted horizontal line, labelled ``limit_label`` (default "limit <value>").
    ``minus`` (a label, e.g. "exact") plots every other line minus that one: the error of each
    running sum, which shows small losses (swamping) that the sums themselves hide."""
    if not isinstance(values_by_label, dict) or not values_by_label:
        raise TypeError("values_by_label must be a non-empty dict {label: partial sums}")
    lines = {str(label): _series(v, label) for label, v in values_by_label.items()}
    if minus is not None:
        if minus not in lines:
            raise ValueError(f"minus={minus!r} is not one of the labels: {', '.join(map(repr, lines))}")
        base = lines.pop(minus)
        lines = {label: y - base[: y.size] for label, y in lines.items()}
        if not lines:
            raise ValueError("minus leaves no line to draw: give at least two series")
    if limit is not None:
        limit = _real(limit, "limit")
        if not math.isfinite(limit):
            raise ValueError(f"limit must be finite, got {limit!r}")
    ax = _axes(ax, (9, 4.8))
    finite_max = max(
        (np.nanmax(np.abs(y[np.isfinite(y)])) for y in lines.values() if np.isfinite(y).any()), default=1.0
    )
    top = limit if limit is not None else finite_max
    for label, y in lines.items():
        x = np.arange(1, y.size + 1)
        style = _sum_style(label)
        shown = np.where(np.isfinite(y), y, np.nan)
        ax.plot(x, shown, label=label, gid=label, **style)
        inf = np.flatnonzero(np.isinf(y))
        if inf.size:
            k = int(inf[0])
            ax.plot(
                [k + 1],
                [math.copysign(top, y[k])],
                marker="^" if y[k] > 0 else "v",
                ms=10,
                ls="",
                color=style["color"],
                gid=f"{label} inf",
                zorder=5,
            )
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
        ax.axhline(
            limit,
            color=_OVERFLOW_COLOR,
            ls=":",
            lw=1.4,
            gid="limit",
            label=f"limit {limit:g}" if limit_label is None else str(limit_label),
        )
    n = max(y.size for y in lines.values())
    ax.set_xlim(0, n + max(1, n // 50))
    ax.set_xlabel("number of terms added")
    ax.set_ylabel("partial sum" if minus is None else f"partial sum - {minus}")
    ax.set_title("Running sums" if minus is None else f"Error of running sums (partial sum - {minus})", loc="left")
    if minus is not None:
        ax.axhline(0, color="#888888", lw=0.8)
    ax.legend(loc="upper left", fontsize=9)
    return ax


def _pct(x: float) -> str:
    if x == 0:
        return "0%"
    if x < 1e-4:
        return "<0.01%"
    return f"{100 * x:.3g}%"


@_styled
def plot_gradient_histogram(census: dict, fmt="fp16", ax=None, *, scale=1.0) -> Axes:
    """Histogram of log2 |g| of the weight and the activation gradients of a census (from
    :func:`amp_lessons.fp16.gradient_census`), one bar per binade, over ``fmt``'s regions: rounds
    to zero (below half the smallest subnormal), subnormal, normal, overflow. The legend gives
    each kind's fractions (exact zeros, which a log axis cannot show, included). ``scale``
    multiplies the gradients first (in float32), as loss scaling does."""
    if not isinstance(census, dict) or not {"weights", "activations"} <= set(census):
        raise TypeError(
            "census must be the dict returned by amp_lessons.fp16.gradient_census (keys 'weights' and 'activations')"
        )

    f = get_format(fmt)
    scale = _real(scale, "scale")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    kinds = {"weight gradients": census["weights"], "activation gradients": census["activations"]}
    data = {}
    for name, g in kinds.items():
        if not isinstance(g, torch.Tensor):
            raise TypeError(f"census[{name.split()[0][:-1] + 's'!r}] must be a tensor, got {type(g).__name__}")
        g = g.detach().float().reshape(-1) * scale
        a = g.abs()
        logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
        data[name] = (logs, g.numel(), census_fractions(g, f))
    lo_b, sub_b, hi_b = math.log2(_zero_threshold(f)), math.log2(f.smallest_normal), math.log2(_overflow_threshold(f))
    every = np.concatenate([d[0] for d in data.values()] + [np.array([lo_b - 3, hi_b + 3])])
    lo, hi = math.floor(every.min()), math.ceil(every.max())
    edges = np.arange(lo, hi + 1.0)
    ax = _axes(ax, (10, 5.6))
    for name, (region, a, b) in {
        "rounds to 0": ("zero", lo, lo_b),
        "subnormal": ("subnormal", lo_b, sub_b) if f.mantissa_bits else (None, 0, 0),
        "normal": ("normal", sub_b, hi_b),
        "overflow": ("overflow", hi_b, hi),
    }.items():
        if region is None:
            continue
        ax.axvspan(a, b, color=_REGION_COLORS[region], alpha=0.25, lw=0, gid=f"region {region}")
        ax.text(
            (a + b) / 2,
            1.0,
            name,
            transform=ax.get_xaxis_transform(),
            ha="center",
            va="bottom",
            fontsize=9,
            color="#444444",
        )
    styles = {"weight gradients": dict(color="#1F78B4"), "activation gradients": dict(color="#E6550D")}
    for name, (logs, n, fr) in data.items():
        counts, _ = np.histogram(logs, bins=edges)
        label = (
            f"{name} ({n:,} values): {_pct(fr['zero'])} exactly 0,\n"
            f"  {_pct(fr['underflow to zero'])} round to 0, {_pct(fr['subnormal'])} subnormal, "
            f"{_pct(fr['normal'])} normal, {_pct(fr['overflow'])} overflow"
        )
        ax.stairs(counts / max(n, 1), edges, fill=True, alpha=0.45, gid=name, label=label, **styles[name])
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


def _plot_runs(result: dict, ax, *, source: str, note_key: str, note: str, styles: dict, figsize) -> Axes:
    """Loss against step of each run in ``result["loss"]``; the legend gives each run's final loss and,
    where ``result[note_key]`` has the run, ``note`` filled with that fraction."""
    if not isinstance(result, dict) or not isinstance(result.get("loss"), dict):
        raise TypeError(f"result must be the dict returned by {source} (key 'loss')")
    extra = result.get(note_key, {})
    ax = _axes(ax, figsize)
    for run, losses in result["loss"].items():
        y = _series(losses, run)
        label = f"{run}: final loss {y[-1]:.3g}"
        if run in extra:
            label += ", " + note.format(_pct(extra[run]))
        ax.plot(np.arange(y.size), y, label=label, gid=run, **styles.get(run, dict(color=format_color(run), lw=1.8)))
    return ax


@_styled
def plot_loss_curves(result: dict, ax=None) -> Axes:
    """Training loss against step (log y) of each run of
    :func:`amp_lessons.fp16.train_master_weights`; the legend gives each run's final loss and the
    share of its weight updates that were lost to rounding."""
    ax = _plot_runs(
        result,
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
    fmt = result.get("fmt", "fp16")
    ax.set_title(f"Weights stored in {fmt} stall; fp32 master weights keep learning", loc="left")
    ax.legend(loc="upper right", fontsize=9)
    return ax


REGION_FORMATS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
_OVERFLOW_STYLE = {
    "inf": dict(facecolor=_OVERFLOW_COLOR),
    "saturate": dict(facecolor="#7F7F7F", hatch="xx"),
    "nan": dict(facecolor="#6A3D9A", hatch=".."),
}
_OVERFLOW_LABEL = {"inf": "overflow to inf", "saturate": "overflow, saturates at max", "nan": "overflow to NaN"}


@_styled
def plot_format_regions(value: float, formats=REGION_FORMATS, ax=None, *, xlim=(1e-50, 1e40)) -> Axes:
    """One row per format on a log magnitude axis: where a value rounds to zero (grey), is
    subnormal (yellow), normal (green, the format's colour as an edge) or overflows (red: inf;
    grey hatched: saturates at max; purple: NaN); a vertical line marks where ``|value|`` lands
    (a triangle at the edge when it is outside ``xlim``; nothing for NaN)."""
    fmts = _formats(formats)
    value = _real(value, "value")
    lo, hi = (_real(v, "xlim") for v in xlim)
    if not (0 < lo < hi < math.inf):
        raise ValueError(f"xlim must be two increasing positive finite numbers, got {xlim!r}")
    ax = _axes(ax, (10, 0.55 * len(fmts) + 1.8))
    seen = set()
    for row, f in enumerate(fmts):
        z, sub, ovf = _zero_threshold(f), f.smallest_normal, _overflow_threshold(f)
        overflow = f.default_overflow
        spans = [("zero", lo, z, dict(color=_REGION_COLORS["zero"]))]
        if f.mantissa_bits:
            spans.append(("subnormal", z, sub, dict(color=_REGION_COLORS["subnormal"])))
        spans.append(
            (
                "normal",
                sub if f.mantissa_bits else z,
                ovf,
                dict(color=_REGION_COLORS["normal"], edgecolor=format_color(f.name), lw=1.5),
            )
        )
        spans.append((overflow, ovf, hi, dict(_OVERFLOW_STYLE[overflow], edgecolor="white", lw=0)))
        for region, a, b, style in spans:
            a, b = max(a, lo), min(b, hi)
            if b <= a:
                continue
            seen.add(region)
            ax.barh(row, b - a, left=a, height=0.6, gid=f"{f.name} {region}", **style)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(len(fmts) - 0.5, -0.5)
    ax.set_yticks(range(len(fmts)), [_label(f) for f in fmts])
    ax.grid(False, axis="y")
    _decade_ticks(ax, "x")
    ax.set_xlabel("magnitude |x|")
    handles = [
        Patch(color=_REGION_COLORS["zero"], label="rounds to zero"),
        Patch(color=_REGION_COLORS["subnormal"], label="subnormal"),
        Patch(color=_REGION_COLORS["normal"], label="normal"),
    ]
    handles += [
        Patch(label=_OVERFLOW_LABEL[o], **{**_OVERFLOW_STYLE[o], "edgecolor": "white"})
        for o in ("inf", "saturate", "nan")
        if o in seen
    ]
    ax.legend(
        handles=handles,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.2),
        ncols=len(handles) if len(handles) <= 5 else 3,
        fontsize=9,
        frameon=False,
    )
    mag = abs(value)
    shown = min(max(mag, lo), hi)
    ax.axvline(shown, color="k", lw=2, gid="marker", visible=not math.isnan(value))
    ax.plot(
        [shown] * len(fmts),
        range(len(fmts)),
        ls="",
        marker="o",
        ms=7,
        mfc="white",
        mec="k",
        mew=1.5,
        gid="marker dots",
        visible=not math.isnan(value),
    )
    text = "NaN" if math.isnan(value) else f"{value:.3g}"
    ax.set_title(f"Where x = {text} lands in each format", loc="left")
    return ax


# --- lesson 05: loss scaling ----------------------------------------------------------------------

_SWEEP_STYLES = {
    "underflow": dict(color="#555555", lw=2.2, marker="o", ms=4, label="round to zero (underflow)"),
    "subnormal": dict(color="#C99700", lw=1.4, ls="--", marker=".", ms=5, label="subnormal (few digits kept)"),
    "overflow": dict(color=_OVERFLOW_COLOR, lw=2.2, marker="s", ms=4, label="overflow to inf"),
}
_WINDOW_COLOR = "#33A02C"


@_styled
def plot_scale_sweep(sweep: dict, ax=None, *, window=None) -> Axes:
    """Fractions of the non-zero gradients that underflow (round to zero), are subnormal and
    overflow, against the loss scale (a :func:`amp_lessons.scaling.scale_sweep`; x: log2 of the
    scale, log y). ``window`` (a pair of scales, default
    :func:`~amp_lessons.scaling.safe_window` of the sweep; False for none) is shaded. A fraction of
    exactly 0 cannot sit on a log axis: it is drawn on the bottom edge."""

    if not isinstance(sweep, dict) or not {"scale", "underflow", "subnormal", "overflow"} <= set(sweep):
        raise TypeError("sweep must be the dict returned by amp_lessons.scaling.scale_sweep")
    scales = np.asarray(sweep["scale"], dtype=float)
    if scales.size == 0 or not (scales > 0).all():
        raise ValueError("sweep has no scales, or a scale that is not positive")
    x = np.log2(scales)
    if window is None:
        window = safe_window(sweep)
    ax = _axes(ax, (9, 4.6))
    series = {k: np.asarray(sweep[k], dtype=float) for k in _SWEEP_STYLES}
    positive = np.concatenate([v[v > 0] for v in series.values()])
    floor = min(1e-4, positive.min() / 3) if positive.size else 1e-4
    for key, y in series.items():
        ax.plot(x, np.where(y > 0, y, floor), gid=key, clip_on=False, **_SWEEP_STYLES[key])
    if window:
        lo, hi = (math.log2(_real(w, "window")) for w in window)
        ax.axvspan(
            lo,
            hi,
            color=_WINDOW_COLOR,
            alpha=0.15,
            lw=0,
            gid="window",
            label=f"safe window {_pow2(round(lo))} .. {_pow2(round(hi))}",
        )
    ax.set_yscale("log")
    ax.set_ylim(floor, 1.5)
    pad = 0.5
    ax.set_xlim(x.min() - pad, x.max() + pad)
    _pow2_ticks(ax.xaxis, x.min(), x.max())
    kind, fmt = sweep.get("kind", "activations"), sweep.get("fmt", "fp16")
    ax.set_xlabel("loss scale (log2 axis)")
    noun = {"activations": "activation", "weights": "weight"}.get(kind, kind)
    ax.set_ylabel(f"fraction of non-zero {noun} gradients\n(0 is drawn on the bottom edge)")
    ax.set_title(f"{noun.capitalize()} gradients x scale, rounded to {fmt}", loc="left")
    ax.legend(loc="center right", fontsize=9)
    return ax


def _hist_log2(g: torch.Tensor, edges: np.ndarray) -> np.ndarray:
    a = g.detach().float().reshape(-1).abs()
    logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
    return np.histogram(logs, bins=edges)[0] / max(g.numel(), 1)


_HIST_STYLES = {"weights": dict(color="#1F78B4"), "activations": dict(color="#E6550D")}


@_styled
def plot_scaled_histogram(census: dict, exponent: int = 0, fmt="fp16", ax=None, *, max_exponent: int = 32) -> Axes:
    """The census's gradients multiplied by ``2**exponent``: histogram of log2 |g x scale| (one bar
    per binade) over ``fmt``'s regions, on an x axis wide enough for every exponent up to
    ``max_exponent`` (so pictures for different scales line up). Multiplying by a power of two
    shifts log2 |g| exactly, so the bars just move right."""
    if not isinstance(census, dict) or not {"weights", "activations"} <= set(census):
        raise TypeError(
            "census must be the dict returned by amp_lessons.fp16.gradient_census (keys 'weights' and 'activations')"
        )
    f = get_format(fmt)
    if isinstance(exponent, bool) or not isinstance(exponent, numbers.Integral):
        raise TypeError(f"exponent must be an int (the scale is 2**exponent), got {exponent!r}")
    edges, heights = _census_bins(census)
    lo = min(edges[0], math.log2(_zero_threshold(f)) - 2)
    hi = max(edges[-1] + max_exponent, math.log2(_overflow_threshold(f)) + 2)
    ax = _axes(ax, (10, 4.6))
    _region_spans(ax, f, lo, hi)
    for kind, h in heights.items():
        n = census[kind].numel()
        ax.stairs(
            h,
            edges + exponent,
            fill=True,
            alpha=0.45,
            gid=f"{kind} fill",
            **_HIST_STYLES[kind],
            label=f"{kind[:-1]} gradients ({n:,} values)",
        )
        ax.stairs(h, edges + exponent, lw=1.5, gid=f"{kind} edge", **_HIST_STYLES[kind])
    ax.set_xlim(lo, hi)
    ax.set_ylim(0, 1.12 * max(float(h.max()) for h in heights.values()))
    ax.set_xlabel("log2 |gradient x scale|")
    ax.set_ylabel("fraction of values per binade")
    ax.set_title(f"Gradients x {_pow2(int(exponent))} in {f.name}", loc="left", pad=18)
    ax.legend(loc="upper left", fontsize=9)
    return ax


def _census_bins(census: dict) -> tuple[np.ndarray, dict]:
    """Integer binade edges covering both kinds, and each kind's fraction of values per binade."""
    logs = []
    for kind in ("weights", "activations"):
        g = census[kind]
        if not isinstance(g, torch.Tensor):
            raise TypeError(f"census[{kind!r}] must be a tensor, got {type(g).__name__}")
        a = g.detach().float().reshape(-1).abs()
        a = a[(a > 0) & torch.isfinite(a)]
        if a.numel():
            logs += [float(torch.log2(a.min())), float(torch.log2(a.max()))]
    lo, hi = (math.floor(min(logs)), math.ceil(max(logs)) + 1) if logs else (-30, -10)
    edges = np.arange(lo, hi + 1.0)
    return edges, {kind: _hist_log2(census[kind], edges) for kind in ("weights", "activations")}


def _history_series(history):
    """(label -> (scales, skipped)) from simulate_scaler's dict or compare_with_gradscaler's rows."""
    if isinstance(history, dict) and {"scale", "skipped"} <= set(history):
        return {"scale": (history["scale"], history["skipped"])}
    if isinstance(history, list) and history and isinstance(history[0], dict) and "ours_scale" in history[0]:
        return {
            "DynamicScaler (ours)": ([r["ours_scale"] for r in history], [r["ours_skipped"] for r in history]),
            "torch.amp.GradScaler": ([r["torch_scale"] for r in history], [r["torch_skipped"] for r in history]),
        }
    raise TypeError(
        "history must be the dict of amp_lessons.scaling.simulate_scaler or the rows of compare_with_gradscaler"
    )


_HISTORY_STYLES = {
    "scale": dict(color="#1F78B4", lw=2.0),
    "DynamicScaler (ours)": dict(color="#1F78B4", lw=4.0, alpha=0.45),
    "torch.amp.GradScaler": dict(color="k", lw=1.2, ls="--"),
}


@_styled
def plot_scaler_history(history, ax=None) -> Axes:
    """The loss scale used at each step (y: log2 of the scale, ticks ``2^k``), skipped steps marked
    with red crosses, from :func:`amp_lessons.scaling.simulate_scaler` or the rows of
    :func:`~amp_lessons.scaling.compare_with_gradscaler` (then both scalers, one over the other)."""
    series = _history_series(history)
    ax = _axes(ax, (9, 4.2))
    ys_all = []
    for label, (scales, skipped) in series.items():
        s = np.asarray(scales, dtype=float)
        if s.ndim != 1 or s.size == 0:
            raise ValueError("the history has no steps")
        with np.errstate(divide="ignore"):
            y = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)), np.nan)  # a scale of 0 is not drawn
        ys_all.append(y[np.isfinite(y)])
        steps = np.arange(s.size)
        ax.step(
            steps,
            y,
            where="post",
            gid=label,
            label=label if len(series) > 1 else "scale used",
            **_HISTORY_STYLES[label],
        )
        bad = np.asarray(skipped, dtype=bool)
        marker = (
            dict(marker="x", ms=8, mew=2)
            if label != "torch.amp.GradScaler"
            else dict(marker="o", ms=9, mfc="none", mew=1.2)
        )
        ax.plot(
            steps[bad],
            y[bad],
            ls="",
            color=_OVERFLOW_COLOR,
            gid=f"{label} skipped",
            label=f"skipped step (inf/NaN gradient): {int(bad.sum())}"
            if label != "torch.amp.GradScaler"
            else "skipped by GradScaler",
            **marker,
        )
    finite = np.concatenate(ys_all) if ys_all else np.array([0.0])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    ax.set_ylim(math.floor(lo) - 1, math.ceil(hi) + 1)
    _pow2_ticks(ax.yaxis, math.floor(lo) - 1, math.ceil(hi) + 1, max_ticks=8)
    n = max(len(v[0]) for v in series.values())
    ax.set_xlim(-0.5, n - 0.5)
    ax.set_xlabel("step")
    ax.set_ylabel("loss scale (log2 axis)")
    ax.set_title("Dynamic loss scale: back off on overflow, grow after a run of good steps", loc="left")
    ax.legend(loc="best", fontsize=9)
    return ax


_TRAIN_STYLES = {
    "fp32": dict(color=format_color("fp32"), lw=3.0, alpha=0.5),
    "fp16 autocast, no scaling": dict(color=format_color("fp16"), lw=2.0),
    "fp16 autocast + GradScaler": dict(color="#33A02C", lw=2.0, ls="--"),
    "bf16 autocast, no scaler": dict(color=format_color("bf16"), lw=1.6, ls=":"),
}


@_styled
def plot_train_comparison(result: dict, ax=None) -> Axes:
    """Loss against step (log y) of each run of :func:`amp_lessons.scaling.train_comparison`; the
    legend gives each run's final loss and its share of exactly-zero gradient elements."""
    ax = _plot_runs(
        result,
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
    ax.legend(loc="lower left", fontsize=9)
    return ax


# --- lesson 06: end to end -----------------------------------------------------------------------

__all__ += ["plot_inference", "plot_throughput", "plot_training_runs"]

_E2E_DTYPE_COLORS = {
    "fp32": format_color("fp32"),
    "tf32": format_color("tf32"),
    "bf16": format_color("bf16"),
    "fp16": format_color("fp16"),
    "fp8": format_color("fp8_e4m3"),
}


@_styled
def plot_throughput(rows, ax=None) -> Axes:
    """TFLOP/s against matrix size (log-log), one line per dtype, from the rows of
    :func:`amp_lessons.e2e.matmul_throughput`. Skipped rows are not drawn; the legend says how
    many sizes of a dtype were skipped."""
    rows = list(rows) if not isinstance(rows, dict) else None
    if not rows or not all(isinstance(r, dict) and {"size", "dtype", "tflops", "skipped"} <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.e2e.matmul_throughput")
    ax = _axes(ax, (8, 4.8))
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    for dt in dtypes:
        done = sorted((r["size"], r["tflops"]) for r in rows if r["dtype"] == dt and not r["skipped"])
        skipped = sum(1 for r in rows if r["dtype"] == dt and r["skipped"])
        label = dt + (f" ({skipped} size{'s' if skipped > 1 else ''} skipped)" if skipped else "")
        if not done:
            ax.plot([], [], color=_E2E_DTYPE_COLORS.get(dt, format_color(dt)), label=f"{dt}: not measured here")
            continue
        x, y = zip(*done)
        ax.plot(x, y, marker="o", lw=2, color=_E2E_DTYPE_COLORS.get(dt, format_color(dt)), label=label, gid=dt)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    sizes = sorted({r["size"] for r in rows})
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel("matrix size n (n x n @ n x n)")
    ax.set_ylabel("achieved TFLOP/s")
    ax.set_title("Matmul throughput by number format (measured on this machine)", loc="left")
    ax.legend(loc="upper left", fontsize=9)
    return ax


def _mib(b) -> str:
    return f"{b / 2**20:.1f} MiB"


@_styled
def plot_training_runs(results, ax=None) -> Axes:
    """Loss curves of the :func:`amp_lessons.e2e.train` results that ran; each legend entry gives
    the median step time and the peak memory of a step. Runs that did not run are listed under
    the plot with the first part of their reason."""
    results = list(results.values()) if isinstance(results, dict) else list(results)
    if not results or not all(isinstance(r, dict) and "config" in r and "ran" in r for r in results):
        raise TypeError("results must be a non-empty list of dicts returned by amp_lessons.e2e.train")
    ax = _axes(ax, (9, 4.8))
    styles = {
        "fp32": dict(color=format_color("fp32"), lw=2.4),
        "tf32": dict(color=format_color("tf32"), lw=2, ls="--"),
        "bf16 autocast": dict(color=format_color("bf16"), lw=1.8, ls="--"),
        "fp16 autocast + GradScaler": dict(color=format_color("fp16"), lw=1.6, ls=":"),
    }
    skipped = []
    for r in results:
        if not r["ran"]:
            skipped.append(f"{r['config']}: {r['reason'].split(':', 1)[-1].split(',')[0].strip()}")
            continue
        y = _series(r["loss"], r["config"])
        label = f"{r['config']}: {r['step_time_s'] * 1e3:.1f} ms/step, peak {_mib(r['peak_memory_bytes'])}"
        ax.plot(
            np.arange(1, y.size + 1),
            y,
            label=label,
            gid=r["config"],
            **styles.get(r["config"], dict(color=format_color(r["config"]))),
        )
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (cross-entropy)")
    if ax.lines:
        _decade_ticks(ax, "y")
    ax.set_title("Same model, same data: the loss curves overlap; time and memory do not", loc="left")
    if ax.lines:
        ax.legend(loc="upper right", fontsize=9)
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


@_styled
def plot_inference(rows, ax=None) -> Axes:
    """Two bar groups from :func:`amp_lessons.e2e.inference_compare`: the max |logit error| against
    fp32 (log scale; fp32 itself is 0 and written, not drawn) and the forward time, per variant."""
    rows = list(rows) if not isinstance(rows, dict) else None
    if not rows or not all(isinstance(r, dict) and {"variant", "max_abs_error", "time_s"} <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.e2e.inference_compare")
    if ax is None:
        fig, (ax, ax_t) = plt.subplots(1, 2, figsize=(10, 4), layout="constrained")
    else:
        ax = _axes(ax, None)
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
    ax.barh(y, [e - floor if e > 0 else np.nan for e in errs], color=colors, left=floor, gid="error")
    for i, e in enumerate(errs):
        ax.text(max(e, floor) * 1.15, i, "0 (reference)" if e == 0 else f"{e:.2g}", va="center", fontsize=9)
    ax.set_xscale("log")
    ax.set_xlim(floor, max(positive or [1.0]) * 20)
    ax.set_yticks(y, names)
    ax.set_ylim(len(rows) - 0.4, -0.7)
    ax.set_xlabel("max |logit - fp32 logit|")
    ax.set_title("Error against fp32", loc="left")
    times = [r["time_s"] * 1e3 for r in rows]
    ax_t.barh(y, times, color=colors, gid="time")
    for i, t in enumerate(times):
        ax_t.text(t, i, f" {t:.2f} ms", va="center", fontsize=9)
    ax_t.set_xlim(0, max(times) * 1.35)
    ax_t.set_yticks(y, [""] * len(rows))
    ax_t.set_ylim(len(rows) - 0.4, -0.7)
    ax_t.set_xlabel("forward time (ms, measured on this machine)")
    ax_t.set_title("Time per forward", loc="left")
    return ax


# --- lesson 07: fp8 --------------------------------------------------------------------------------

__all__ += ["plot_fp8_window", "plot_scaling_errors"]

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


@_styled
def plot_fp8_window(tensors: dict, fmt="fp8_e4m3", ax=None, *, scale=1.0) -> Axes:
    """Histograms of log2 |x x scale| (one bar per binade) of several named tensors (e.g.
    :func:`amp_lessons.fp8.model_tensors`) over ``fmt``'s representable window: rounds to zero,
    subnormal, normal, overflow (saturates to max in e4m3, inf in e5m2). The legend gives each
    tensor's fractions that flush to zero and overflow once multiplied by ``scale``."""

    f = get_format(fmt)
    scale = _real(scale, "scale")
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    data = _fp8_tensor_logs(tensors, scale)
    lo_b, hi_b = math.log2(_zero_threshold(f)), math.log2(_overflow_threshold(f))
    every = np.concatenate([d[1] for d in data.values()] + [np.array([lo_b - 3, hi_b + 3])])
    lo, hi = math.floor(every.min()), math.ceil(every.max())
    edges = np.arange(lo, hi + 1.0)
    ax = _axes(ax, (10, 5.4))
    _region_spans(ax, f, lo, hi)
    for i, (name, (v, logs)) in enumerate(data.items()):
        fr = census_fractions(v, f)
        color = _TENSOR_COLORS[i % len(_TENSOR_COLORS)]
        counts = np.histogram(logs, bins=edges)[0] / max(v.numel(), 1)
        label = (
            f"{name} ({v.numel():,}): {_pct(fr['underflow to zero'])} flush to 0, "
            f"{_pct(fr['subnormal'])} subnormal, {_pct(fr['overflow'])} overflow"
        )
        ax.stairs(counts, edges, fill=True, alpha=0.3, color=color, gid=f"{name} fill")
        ax.stairs(counts, edges, lw=1.6, color=color, gid=name, label=label)
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


@_styled
def plot_scaling_errors(rows, ax=None) -> Axes:
    """Grouped bars (log y): the relative error of each scaling method (one colour each) on each
    tensor (one group each), from the rows of :func:`amp_lessons.fp8.scaling_errors`. An infinite
    error (a value overflowed to inf) is drawn as a hatched bar to the top, labelled "inf"."""
    rows = list(rows) if not isinstance(rows, dict) else None
    if not rows or not all(isinstance(r, dict) and {"tensor", "method", "relative error"} <= set(r) for r in rows):
        raise TypeError("rows must be the non-empty list returned by amp_lessons.fp8.scaling_errors")
    tensors = list(dict.fromkeys(r["tensor"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    err = {(r["tensor"], r["method"]): float(r["relative error"]) for r in rows}
    finite = [e for e in err.values() if math.isfinite(e) and e > 0]
    top = 10 ** math.ceil(math.log10(max(finite))) if finite else 1.0
    bottom = 10 ** math.floor(math.log10(min(finite))) if finite else 1e-3
    bottom = min(bottom, top / 10)
    ax = _axes(ax, (10, 4.8))
    width = 0.8 / len(methods)
    for j, m in enumerate(methods):
        xs, hs, hatch = [], [], []
        for i, t in enumerate(tensors):
            e = err.get((t, m))
            if e is None:
                continue
            xs.append(i - 0.4 + width * (j + 0.5))
            hs.append(top if not math.isfinite(e) else max(e, bottom))
            hatch.append(not math.isfinite(e))
        color = _METHOD_COLORS.get(m, _TENSOR_COLORS[j % len(_TENSOR_COLORS)])
        bars = ax.bar(xs, [h - bottom for h in hs], width * 0.95, bottom=bottom, color=color, label=m, gid=m)
        for bar, h in zip(bars, hatch):
            if h:
                bar.set_hatch("//")
                ax.text(bar.get_x() + bar.get_width() / 2, top, "inf", ha="center", va="bottom", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylim(bottom, top * 1.5)
    ax.set_xticks(range(len(tensors)), tensors)
    ax.set_ylabel("relative error ||q - x|| / ||x||")
    fmt = rows[0].get("fmt", "")
    ax.set_title(f"fp8 cast error by scaling method{f' ({fmt})' if fmt else ''}", loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=9)
    return ax
