"""Drawing helpers shared by the plots and the explorers: log and log2 ticks, a format's spacing staircase and
regions, and the artists a plot function drew, by name (:func:`named_artists`)."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.ticker import FuncFormatter, NullLocator

from .formats import FORMATS, FloatFormat, get_format
from .style import fit_colors, format_color, style_context

__all__ = [
    "OVERFLOW_COLOR", "REGION_COLORS", "SUPERSCRIPT", "NamedArtists", "as_formats", "axes_for", "bar_height",
    "decade_ticks", "format_label", "legend_outside", "name_artist", "named_artists", "overflow_threshold", "pct",
    "plot_runs", "pow2", "pow2_ticks", "power_of_ten", "region_spans", "series", "staircase", "styled",
    "zero_threshold"
]  # fmt: skip

OVERFLOW_COLOR = "#B00020"
REGION_COLORS = {"zero": "#BBBBBB", "subnormal": "#F2C14E", "normal": "#8CC084", "overflow": OVERFLOW_COLOR}
SUPERSCRIPT = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


class NamedArtists(Mapping):
    """The artists the plot functions drew on one Axes, by name (read-only): each an Artist or a tuple of them.
    A missing name raises a KeyError that lists the names there are."""

    def __init__(self) -> None:
        self._artists: dict[str, Artist | tuple[Artist, ...]] = {}

    def __getitem__(self, key: str) -> Artist | tuple[Artist, ...]:
        try:
            return self._artists[key]
        except KeyError:
            have = ", ".join(map(repr, self._artists)) or "none"
            raise KeyError(f"no artist named {key!r} on this Axes; its named artists: {have}") from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._artists)

    def __len__(self) -> int:
        return len(self._artists)

    def __repr__(self) -> str:
        return f"NamedArtists({', '.join(map(repr, self._artists))})"


def named_artists(ax: Axes) -> NamedArtists:
    """The artists the plot functions drew on ``ax``, by name (empty where none drew)."""
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    return getattr(ax, "_named_artists", None) or NamedArtists()


def name_artist(ax: Axes, key: str, artist):
    """Name ``artist`` (an Artist, or a list or tuple of them) ``key`` on ``ax``, and return it as given."""
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes, got {type(ax).__name__}")
    if not isinstance(key, str) or not key:
        raise TypeError(f"an artist's name must be a non-empty str, got {key!r}")
    if isinstance(artist, Artist):
        value = artist
    else:
        value = tuple(artist) if isinstance(artist, (list, tuple)) else None
        bad = [artist] if value is None else [a for a in value if not isinstance(a, Artist)]
        if bad:
            raise TypeError(f"artist {key!r} must be an Artist or a list or tuple of Artists, got {bad[0]!r}")
    if not isinstance(getattr(ax, "_named_artists", None), NamedArtists):
        ax._named_artists = NamedArtists()
    ax._named_artists._artists[key] = value
    return artist


def pow2(k: int) -> str:
    return f"2^{k}" if k >= 0 else f"2^-{-k}"


def power_of_ten(v: float, _pos=None) -> str:
    """``10⁻⁴⁰`` in plain text (superscript digits): no mathtext parsing, so cheap to redraw."""
    return "10" + str(round(math.log10(v))).translate(SUPERSCRIPT)


def decade_ticks(ax: Axes, which: str = "xy") -> None:
    """Ticks at round decades (every 1, 2, 5 or 10) on log axes spanning many decades."""
    for name in which:
        axis = getattr(ax, f"{name}axis")
        lo, hi = sorted(getattr(ax, f"get_{name}lim")())
        a, b = math.ceil(math.log10(lo)), math.floor(math.log10(hi))
        if b - a < 2:  # a narrow range: plain numbers on the default ticks
            axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            continue
        step = next((s for s in (1, 2, 5, 10, 20) if (b - a) / s <= 10), 20)
        axis.set_ticks([10.0**k for k in range(a + (-a) % step, b + 1, step)])
        axis.set_major_formatter(FuncFormatter(power_of_ten))
        if step > 1:
            axis.set_minor_locator(NullLocator())


def pow2_ticks(axis, lo: float, hi: float, max_ticks: int = 12) -> None:
    """Integer ticks (log2 values) every 1, 2, 4, 8, ... labelled ``2^k``, on a linear axis."""
    span = max(hi - lo, 1.0)
    step = next((s for s in (1, 2, 4, 8, 16, 32) if span / s <= max_ticks), 64)
    a, b = math.ceil(lo), math.floor(hi)
    axis.set_ticks([k for k in range(a + (-a) % step, b + 1, step)])
    axis.set_major_formatter(FuncFormatter(lambda v, _: pow2(round(v))))


def staircase(f: FloatFormat):
    """Edges and gaps of the spacing staircase, exactly: the binade [2**e, 2**(e+1)) has the gap 2**(e-m)."""
    m = f.mantissa_bits
    edges, gaps = ([f.smallest_subnormal], [f.smallest_subnormal]) if m else ([], [])
    for e in range(f.emin, f.emax + 1):
        edges.append(math.ldexp(1.0, e))
        gaps.append(math.ldexp(1.0, e - m))
    edges.append(f.max)
    gaps.append(gaps[-1])
    return np.array(edges), np.array(gaps)


def bar_height(f: FloatFormat) -> float:
    """Bar thickness: grows with the precision, mantissa bits + 1 (fp32's 24 bits: 0.9)."""
    return 0.2 + 0.7 * (f.mantissa_bits + 1) / 24


def zero_threshold(f: FloatFormat) -> float:
    """Magnitudes up to this round to zero (round to nearest): :attr:`FloatFormat.underflow_threshold`."""
    return f.underflow_threshold


def overflow_threshold(f: FloatFormat) -> float:
    """Magnitudes beyond this overflow (round to nearest): :attr:`FloatFormat.overflow_threshold`."""
    return f.overflow_threshold


def region_spans(ax: Axes, f: FloatFormat, lo: float, hi: float) -> None:
    """Shade ``f``'s regions on a log2-magnitude x axis from ``lo`` to ``hi``, labelled on top."""
    lo_b, sub_b, hi_b = math.log2(zero_threshold(f)), math.log2(f.smallest_normal), math.log2(overflow_threshold(f))
    spans = [("rounds to 0", "zero", lo, lo_b), ("subnormal", "subnormal", lo_b, sub_b),
             ("normal", "normal", sub_b, hi_b), ("overflow", "overflow", hi_b, hi)]  # fmt: skip
    for name, region, a, b in spans:
        if region == "subnormal" and not f.mantissa_bits:
            continue
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            continue
        name_artist(ax, f"region {region}", ax.axvspan(a, b, color=REGION_COLORS[region], alpha=0.25, lw=0))
        ax.text((a + b) / 2, 1.0, name, transform=ax.get_xaxis_transform(), ha="center", va="bottom", fontsize=9,
                color="#444444")  # fmt: skip


def styled(func):
    """Draw inside the course style (and its theme's colours)."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with style_context():
            result = func(*args, **kwargs)
            figure = getattr(result, "figure", None)
            if figure is not None:
                fit_colors(figure)
            return result

    return wrapper


def axes_for(ax, figsize) -> Axes:
    if ax is None:
        return plt.subplots(figsize=figsize, layout="constrained")[1]
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {type(ax).__name__}")
    return ax


def as_formats(formats) -> list[FloatFormat]:
    if isinstance(formats, (str, FloatFormat)):
        formats = [formats]
    try:
        fmts = [get_format(f, what=f"formats[{i}]") for i, f in enumerate(formats)]
    except TypeError:
        raise TypeError(f"formats must be format names or FloatFormats, got {formats!r}") from None
    if not fmts:
        raise ValueError("formats is empty: give at least one format name")
    return fmts


def format_label(f: FloatFormat) -> str:
    return f.name if f.name in FORMATS else f"{f.name} (e{f.exponent_bits}m{f.mantissa_bits}, {f.encoding})"


def series(values, label) -> np.ndarray:
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


def pct(x: float, decimals: int | None = None) -> str:
    """A fraction as a percentage: 3 significant digits, or ``decimals`` decimals; a non-zero share that would
    print as 0 is written "<0.01%" (or "<0.1%" with one decimal)."""
    if x == 0:
        return "0%"
    if decimals is None:
        return "<0.01%" if x < 1e-4 else f"{100 * x:.3g}%"
    text = f"{100 * x:.{decimals}f}%"
    return f"<{10.0**-decimals:g}%" if float(text[:-1]) == 0 else text


def legend_outside(ax: Axes, **kwargs):
    """The legend to the right of the axes, top-aligned; keyword arguments go to :meth:`Axes.legend`."""
    kwargs.setdefault("fontsize", 9)
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **kwargs)


def plot_runs(result: dict, ax, *, source: str, note_key: str, note: str, styles: dict, figsize) -> Axes:
    """Loss against step of each run in ``result["loss"]``; the legend gives each run's final loss and,
    where ``result[note_key]`` has the run, ``note`` filled with that fraction."""
    if not isinstance(result, dict) or not isinstance(result.get("loss"), dict):
        raise TypeError(f"result must map 'loss' to each run's losses (from {source}), got {type(result).__name__}")
    extra = result.get(note_key, {})
    ax = axes_for(ax, figsize)
    for run, losses in result["loss"].items():
        y = series(losses, run)
        label = f"{run}: final loss {y[-1]:.3g}"
        if run in extra:
            label += ", " + note.format(pct(extra[run]))
        style = styles.get(run, dict(color=format_color(run), lw=1.8))
        name_artist(ax, run, ax.plot(np.arange(y.size), y, label=label, **style)[0])
    return ax
