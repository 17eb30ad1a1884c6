"""The course's plot style and its fixed colours: every plot colours a format the same way.

>>> from amp_lessons.style import use_style, format_color
>>> use_style()                  # once, in a notebook's setup cell
>>> use_style(projector=True)    # the presenter view: explorers drawn at projector resolution
>>> format_color("bf16")
'#D55E00'
"""

from __future__ import annotations

import contextlib
import zlib
from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt

from ._validate import flag

__all__ = [
    "FIELD_COLORS",
    "FORMAT_COLORS",
    "PROJECTOR_DPI",
    "PROJECTOR_RC",
    "STYLE_PATH",
    "explorer_dpi",
    "format_color",
    "projector_mode",
    "style_context",
    "use_style",
]

#: The style file shipped in the package (``package-data``), never a URL.
STYLE_PATH = Path(__file__).with_name("amp_lessons.mplstyle")

#: One colour per format of :data:`amp_lessons.formats.FORMATS` (colour-blind-safe where possible;
#: the FNUZ variants are lighter shades of their OCP siblings).
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

#: Colours of the sign / exponent / mantissa fields in bit-layout pictures.
FIELD_COLORS: dict[str, str] = {"sign": "#F4B6B4", "exponent": "#B5DFB0", "mantissa": "#B3D7EF"}

# Fallbacks for formats the course does not name (a learner's own FloatFormat): none of them is
# one of the colours above, and the choice depends only on the name, so it is stable across runs.
_FALLBACK = ("#6A3D9A", "#B15928", "#1F78B4", "#33A02C", "#E31A1C", "#FF7F00", "#A6761D", "#666666")


def format_color(name) -> str:
    """The colour of a format name (or a :class:`~amp_lessons.formats.FloatFormat`).

    Names in :data:`FORMAT_COLORS` get their fixed colour; any other name a fallback colour that
    depends only on the name."""
    name = getattr(name, "name", name)
    if not isinstance(name, str):
        raise TypeError(f"format_color needs a format name, got {name!r}")
    if name in FORMAT_COLORS:
        return FORMAT_COLORS[name]
    return _FALLBACK[zlib.crc32(name.encode()) % len(_FALLBACK)]


#: Resolution of the explorers' pictures on a laptop screen (dots per inch of their figures).
_SCREEN_DPI = 80

#: Resolution of the explorers' pictures in projector mode (``use_style(projector=True)``): twice the screen
#: resolution, so that a picture shown 1:1 on a 1920-pixel-wide projector page has its 11 pt text about 24 px
#: high, and is never upscaled (blurred) by the browser.
PROJECTOR_DPI = 160

#: What projector mode changes in matplotlib's settings for the notebook's own plots: the same figures at
#: projector resolution, and larger type (axis labels and ticks are read from the back of a room).
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

_projector = False


def use_style(projector: bool = False) -> None:
    """Apply the course style to all later plots (``plt.style.use`` on the packaged file).

    ``projector=True`` (the presenter view, ``make present``) also switches to projector mode: explorers
    created afterwards draw at :data:`PROJECTOR_DPI` (:func:`explorer_dpi`), and plots get
    :data:`PROJECTOR_RC` (projector resolution, larger type). ``use_style()`` switches back."""
    global _projector
    _projector = flag(projector, "projector")
    plt.style.use(STYLE_PATH)
    if _projector:
        plt.rcParams.update(PROJECTOR_RC)


def projector_mode() -> bool:
    """Whether the last :func:`use_style` call asked for projector mode."""
    return _projector


def explorer_dpi() -> int:
    """The resolution at which explorers draw their pictures: 80 dpi, or :data:`PROJECTOR_DPI` in projector
    mode."""
    return PROJECTOR_DPI if _projector else _SCREEN_DPI


@contextlib.contextmanager
def style_context():
    """A ``with`` block that applies the course style only inside it (explorers draw in one; their layouts
    are fixed in inches, so projector mode changes only their resolution, which alone enlarges their text).

    Only the style is undone on leaving: matplotlib's ``interactive`` flag keeps the value it has at the end of
    the block. ``plt.style.context`` restores every rcParam it saved, ``interactive`` included, and in Jupyter the
    inline backend is loaded lazily, by the first figure created, and then switches interactive mode on
    (``matplotlib.interactive(True)``). When that first figure is a course plot, drawn inside this block, a plain
    ``style.context`` would switch interactive mode back off on leaving, and no later figure of the session
    would be shown (the inline backend displays figures only in interactive mode)."""
    interactive = matplotlib.is_interactive()
    try:
        with plt.style.context(STYLE_PATH):
            try:
                yield
            finally:
                interactive = matplotlib.is_interactive()
    finally:
        matplotlib.interactive(interactive)
