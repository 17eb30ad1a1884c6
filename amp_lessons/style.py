"""The course's plot style and its fixed colours: every plot colours a format the same way.

>>> from amp_lessons.style import use_style, format_color
>>> use_style()                  # once, in a notebook's setup cell: the colours of JupyterLab's theme
>>> use_style(projector=True)    # the presenter view: explorers drawn at projector resolution
>>> use_style(theme="dark")      # plots for a dark page: dark background, light text
>>> format_color("bf16")
'#D55E00'
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import weakref
import zlib
from pathlib import Path

import matplotlib
import matplotlib.collections
import matplotlib.colors
import matplotlib.figure
import matplotlib.lines
import matplotlib.patches
import matplotlib.pyplot as plt
import matplotlib.text

from ._validate import flag

__all__ = [
    "FIELD_COLORS", "FORMAT_COLORS", "PROJECTOR_DPI", "PROJECTOR_RC", "STYLE_PATH", "THEMES", "explorer_dpi",
    "explorer_figsize", "fit_colors", "follow_theme", "format_color", "lab_theme", "projector_mode", "recolor",
    "style_context", "theme", "use_style"
]  # fmt: skip

#: The style file shipped in the package (``package-data``), never a URL.
STYLE_PATH = Path(__file__).with_name("amp_lessons.mplstyle")

#: One colour per format of :data:`amp_lessons.formats.FORMATS` (colour-blind-safe where possible).
FORMAT_COLORS: dict[str, str] = {
    "fp32": "#000000",
    "tf32": "#7F7F7F",
    "fp16": "#0072B2",
    "bf16": "#D55E00",
    "fp8_e4m3": "#009E73",
    "fp8_e5m2": "#CC79A7",
    "fp8_e4m3fnuz": "#7FCEB5",
    "fp8_e5m2fnuz": "#E6B8D3",
    "fp6_e3m2": "#E69F00",
    "fp6_e2m3": "#56B4E9",
    "fp4_e2m1": "#8C564B",
}

# fp32's black on a dark page: light grey
_DARK_FORMAT_COLORS = {"fp32": "#E6E6E6"}

#: Colours of the sign / exponent / mantissa fields in bit-layout pictures.
FIELD_COLORS: dict[str, str] = {"sign": "#F4B6B4", "exponent": "#B5DFB0", "mantissa": "#B3D7EF"}

# colours for formats the course does not name, picked by the name's CRC
_FALLBACK = ("#6A3D9A", "#B15928", "#1F78B4", "#33A02C", "#E31A1C", "#FF7F00", "#A6761D", "#666666")


def format_color(name) -> str:
    """The colour of a format name (or a :class:`~amp_lessons.formats.FloatFormat`): its fixed colour (fp32 light
    grey in the dark theme), else a fallback colour that depends only on the name."""
    name = getattr(name, "name", name)
    if not isinstance(name, str):
        raise TypeError(f"format_color needs a format name, got {name!r}")
    if _theme == "dark" and name in _DARK_FORMAT_COLORS:
        return _DARK_FORMAT_COLORS[name]
    if name in FORMAT_COLORS:
        return FORMAT_COLORS[name]
    return _FALLBACK[zlib.crc32(name.encode()) % len(_FALLBACK)]


#: Resolution of the explorers' pictures on a laptop screen (dots per inch of their figures).
_SCREEN_DPI = 80

#: Resolution of the explorers' pictures in projector mode (``use_style(projector=True)``).
PROJECTOR_DPI = 160

#: What projector mode changes in matplotlib's settings: projector resolution and larger type.
PROJECTOR_RC: dict[str, float] = {
    "figure.dpi": PROJECTOR_DPI,
    "savefig.dpi": PROJECTOR_DPI,
    "font.size": 14,
    "figure.titlesize": 17,
    "axes.titlesize": 16,
    "axes.labelsize": 15,
    "xtick.labelsize": 13,
    "ytick.labelsize": 13,
    "legend.fontsize": 13,
}

#: In projector mode an explorer's picture is at most this wide (pixels), shown 1:1 beside its read-out.
PROJECTOR_MAX_WIDTH_PX = 1040
_PROJECTOR_SHRINK, _PROJECTOR_LEAST = 0.75, 0.6

#: The page themes plots follow: "light" (white background, dark text) and "dark".
THEMES = ("light", "dark")

#: What the dark theme changes in matplotlib's settings: a dark background, light text, ticks and spines.
DARK_RC: dict = {
    "figure.facecolor": "#212121",
    "savefig.facecolor": "#212121",
    "axes.facecolor": "#212121",
    "axes.edgecolor": "#9e9e9e",
    "axes.labelcolor": "#e6e6e6",
    "text.color": "#e6e6e6",
    "xtick.color": "#cfcfcf",
    "ytick.color": "#cfcfcf",
    "xtick.labelcolor": "#e6e6e6",
    "ytick.labelcolor": "#e6e6e6",
    "grid.color": "#3d3d3d",
    "legend.facecolor": "#2a2a2a",
    "legend.edgecolor": "#5a5a5a",
    "legend.labelcolor": "#e6e6e6",
    "patch.edgecolor": "#e6e6e6",
    "axes.prop_cycle": matplotlib.cycler(
        color=["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#E6E6E6", "#F0E442"]
    ),
}

_projector = False
_theme = "light"
_light_rc: dict = {}  # while the dark theme is on: the values its settings replaced


def use_style(projector: bool = False, theme: str = "auto") -> None:
    """Apply the course style to all later plots (``plt.style.use`` on the packaged file).

    ``projector=True`` switches to projector mode (:data:`PROJECTOR_DPI`, :data:`PROJECTOR_RC`). ``theme``:
    "light", "dark" (:data:`DARK_RC`, colours lightened by :func:`fit_colors`) or "auto" (JupyterLab's theme,
    :func:`lab_theme`, light where none is set). Live explorers redraw in the new colours."""
    global _projector, _theme
    projector = flag(projector, "projector")
    if theme not in (*THEMES, "auto"):
        raise ValueError(f"theme={theme!r} is not a theme: use one of {', '.join(map(repr, (*THEMES, 'auto')))}")
    if theme == "auto":
        theme = lab_theme() or "light"
    was = _theme
    _projector, _theme = projector, theme
    if _light_rc:  # leaving the dark theme: its settings back to what they were (the style file sets only some)
        plt.rcParams.update(_light_rc)
        _light_rc.clear()
    plt.style.use(STYLE_PATH)
    if _projector:
        plt.rcParams.update(PROJECTOR_RC)
    if _theme == "dark":
        _light_rc.update({k: plt.rcParams[k] for k in DARK_RC})
        plt.rcParams.update(DARK_RC)
    if theme != was:
        for follower in sorted(_FOLLOWERS, key=lambda f: getattr(f, "theme_order", 0)):
            follower.theme_changed()


_LAB_THEME_FILE = Path("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")
_LAB_THEME_PLUGIN = "@jupyterlab/apputils-extension:themes"


def _settings_text(text: str) -> dict:
    """A JupyterLab settings file: JSON with comments and trailing commas."""
    text = re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text, flags=re.S)
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", text))


def lab_theme() -> str | None:
    """The theme JupyterLab is set to, read from its settings files (the user's over the site's): "dark" for a
    theme whose name says Dark, "light" for any other; None where nothing is set or it follows the system."""
    folder = os.environ.get("JUPYTERLAB_SETTINGS_DIR")
    if not folder:
        try:
            from jupyter_core.paths import jupyter_config_dir
        except ImportError:
            return None
        folder = os.path.join(jupyter_config_dir(), "lab", "user-settings")
    lab_dir = os.environ.get("JUPYTERLAB_DIR") or os.path.join(sys.prefix, "share", "jupyter", "lab")
    settings = {}
    for path, pick in (
        (Path(lab_dir, "settings", "overrides.json"), lambda d: d.get(_LAB_THEME_PLUGIN, {})),
        (Path(folder, _LAB_THEME_FILE), lambda d: d),
    ):
        try:
            found = pick(_settings_text(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
        if isinstance(found, dict):
            settings.update(found)
    name = settings.get("theme")
    if settings.get("adaptive-theme") is True or not isinstance(name, str):
        return None
    return "dark" if "dark" in name.lower() else "light"


_FOLLOWERS: weakref.WeakSet = weakref.WeakSet()


def follow_theme(obj) -> None:
    """Call ``obj.theme_changed()`` whenever :func:`use_style` changes the theme, while ``obj`` lives (lowest
    ``obj.theme_order`` first)."""
    if not callable(getattr(obj, "theme_changed", None)):
        raise TypeError(f"follow_theme needs an object with a theme_changed() method, got {type(obj).__name__}")
    _FOLLOWERS.add(obj)


# The light style's value of a dark-theme key whose light value is "inherit" or "None": the key it takes it from.
_INHERITS = {"xtick.labelcolor": "xtick.color", "ytick.labelcolor": "ytick.color", "legend.facecolor": "axes.facecolor",
             "legend.labelcolor": "text.color"}  # fmt: skip


def _theme_colors() -> list[tuple[tuple, tuple]]:
    """(light, dark) pairs of the colours the two themes give the same element, text first."""
    light = matplotlib.rc_params_from_file(STYLE_PATH, use_default_template=True)
    keys = ["text.color", *(k for k in DARK_RC if k not in ("text.color", "axes.prop_cycle"))]
    pairs = [(light[_INHERITS.get(k, k)], DARK_RC[k]) for k in keys]
    pairs.append((FORMAT_COLORS["fp32"], _DARK_FORMAT_COLORS["fp32"]))
    to_rgba = matplotlib.colors.to_rgba
    return [(to_rgba(a), to_rgba(b)) for a, b in pairs]


def recolor(fig, theme: str) -> None:
    """Give the drawn figure ``fig`` the colours of ``theme``: every colour the other theme's style gave becomes
    this theme's (colours :func:`fit_colors` lightened get their own back first), then :func:`fit_colors`."""
    _figure(fig)
    if theme not in THEMES:
        raise ValueError(f"theme={theme!r} is not a theme: use one of {', '.join(map(repr, THEMES))}")
    to_rgba = matplotlib.colors.to_rgba
    mapping = {}
    for light, dark in _theme_colors():  # (the first pair of a colour decides: text before ticks and spines)
        mapping.setdefault(dark if theme == "light" else light, light if theme == "light" else dark)

    def new(color):
        c = to_rgba(color)
        m = mapping.get((*c[:3], 1.0))
        return None if m is None else (*m[:3], c[3])

    for artist in fig.findobj():
        original = getattr(artist, "_amp_original", None)
        if original:
            for name, value in original.items():
                getattr(artist, f"set_{name}")(value)
            artist._amp_original = {}
        if isinstance(artist, matplotlib.collections.Collection):
            continue  # (glyphs drawn on coloured boxes keep their colour)
        for name in ("color", "facecolor", "edgecolor", "markerfacecolor", "markeredgecolor"):
            getter = getattr(artist, f"get_{name}", None)
            if getter is None or not hasattr(artist, f"set_{name}"):
                continue
            try:
                value = getter()
                mapped = new(value)
            except (ValueError, TypeError):
                continue
            if mapped:
                getattr(artist, f"set_{name}")(mapped)
    fit_colors(fig)


def theme() -> str:
    """The theme of the last :func:`use_style` call: "light" or "dark"."""
    return _theme


def projector_mode() -> bool:
    """Whether the last :func:`use_style` call asked for projector mode."""
    return _projector


def explorer_dpi() -> int:
    """The resolution of explorers' pictures: 80 dpi, or :data:`PROJECTOR_DPI` in projector mode."""
    return PROJECTOR_DPI if _projector else _SCREEN_DPI


def explorer_figsize(figsize) -> tuple[float, float]:
    """The size (inches) of an explorer's picture laid out for ``figsize``: the same on a screen; in projector
    mode shrunk toward :data:`PROJECTOR_MAX_WIDTH_PX` at :data:`PROJECTOR_DPI` (by 0.6 to 3/4)."""
    ok = isinstance(figsize, (tuple, list)) and len(figsize) == 2
    if not ok or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < 1e3 for v in figsize):
        raise ValueError(f"figsize={figsize!r} is not allowed: a (width, height) pair in inches, each in (0, 1000)")
    w, h = (float(v) for v in figsize)
    if not _projector:
        return w, h
    k = min(_PROJECTOR_SHRINK, max(_PROJECTOR_LEAST, PROJECTOR_MAX_WIDTH_PX / (w * PROJECTOR_DPI)))
    return w * k, h * k


def _luminance(rgb) -> float:
    def f(v: float) -> float:
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * f(rgb[0]) + 0.7152 * f(rgb[1]) + 0.0722 * f(rgb[2])


def _contrast(a, b) -> float:
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def _readable(color, background, need: float):
    """``color`` (RGBA) moved toward white or black, away from ``background``, just enough to reach contrast ``need``."""
    r, g, b, a = color
    end = 0.0 if _luminance(background) > 0.3 else 1.0
    for t in (0.0, 0.15, 0.3, 0.45, 0.6, 0.75, 0.9, 1.0):
        c = (r + t * (end - r), g + t * (end - g), b + t * (end - b))
        if _contrast(c, background) >= need:
            break
    return (*c, a)


def _behind(text, patches):
    """The face colour of the opaque patch a text sits on (a bit-field box), or None."""
    try:
        x, y = text.get_transform().transform(text.get_position())
    except (ValueError, TypeError):
        return None
    for p in patches:
        face = matplotlib.colors.to_rgba(p.get_facecolor())
        if face[3] >= 0.5 and p.get_visible() and p.contains_point((x, y)):
            return face
    return None


def _fit(artist, name: str, back, need: float, below: float | None = None) -> None:
    """Lighten an artist's colour ``name`` whose contrast with ``back`` is under ``below`` (default ``need``) until it
    reaches ``need``, remembering its own colour (recolor gives it back)."""
    color = matplotlib.colors.to_rgba(getattr(artist, f"get_{name}")())
    if _contrast(color[:3], back) >= (need if below is None else below):
        return
    if getattr(artist, "_amp_original", None) is None:
        artist._amp_original = {}
    artist._amp_original.setdefault(name, color)
    getattr(artist, f"set_{name}")(_readable(color, back, need))


def _figure(fig) -> None:
    if not isinstance(fig, matplotlib.figure.FigureBase):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")


def fit_colors(fig) -> None:
    """In the dark theme, make ``fig`` readable: texts get at least 4.5:1 contrast with what is behind them and
    lines 3:1, colours lightened only as far as that needs. Nothing changes in the light theme."""
    _figure(fig)
    if _theme != "dark":
        return
    to_rgba = matplotlib.colors.to_rgba
    background = to_rgba(fig.get_facecolor())[:3]
    patches = [p for ax in fig.axes for p in [*ax.patches, *ax.artists] if isinstance(p, matplotlib.patches.Patch)]
    handles = [h for ax in fig.axes if ax.get_legend() for h in ax.get_legend().legend_handles]
    for ax in fig.axes:
        face = to_rgba(ax.get_facecolor())
        for line in ax.get_lines():
            _fit(line, "color", face[:3] if face[3] > 0.5 else background, 3)
    for h in handles:
        if isinstance(h, matplotlib.lines.Line2D):
            _fit(h, "color", background, 3)
    for p in [*patches, *(h for h in handles if isinstance(h, matplotlib.patches.Patch))]:
        if to_rgba(p.get_facecolor())[3] >= 0.5:  # a black bar: lightened until it shows
            _fit(p, "facecolor", background, 3, below=1.5)
    for text in fig.findobj(matplotlib.text.Text):
        if not text.get_text():
            continue
        box = text.get_bbox_patch()
        behind = to_rgba(box.get_facecolor()) if box is not None else _behind(text, patches)
        _fit(text, "color", behind[:3] if behind is not None and behind[3] > 0.5 else background, 4.5)


@contextlib.contextmanager
def style_context():
    """A ``with`` block that applies the course style only inside it. Matplotlib's ``interactive`` flag keeps its
    value at the end of the block (the inline backend, loaded by the first figure, switches it on)."""
    interactive = matplotlib.is_interactive()
    try:
        with plt.style.context([STYLE_PATH, DARK_RC] if _theme == "dark" else STYLE_PATH):
            try:
                yield
            finally:
                interactive = matplotlib.is_interactive()
    finally:
        matplotlib.interactive(interactive)
