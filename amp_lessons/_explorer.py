"""What every explorer shares: a figure drawn off pyplot and sent as a PNG (:class:`Picture`), its
widgets' small HTML read-outs, and parsing of typed values. Part of the base: it imports no topic."""

from __future__ import annotations

import html
import io
import math
import numbers

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from ._table import TONES, Cell, html_table
from .style import explorer_dpi, style_context

__all__ = [
    "Picture",
    "by_gid",
    "encode_png",
    "error_html",
    "failure_html",
    "readout_table",
    "image",
    "num",
    "parse_value",
]


class Picture:
    """A figure whose static part is rendered once; :meth:`png` redraws only the moving artists."""

    def __init__(self, figsize):
        with style_context():
            self.fig = Figure(figsize=figsize, dpi=explorer_dpi(), layout="none")
        self.canvas = FigureCanvasAgg(self.fig)
        self.moving = []
        self.centers = None  # the bit explorer's digit positions (data coordinates)
        self._background = None

    def freeze(self, moving) -> None:
        """Render everything but ``moving`` into the background."""
        self.moving = list(moving)
        for artist in self.moving:
            artist.set_animated(True)
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def png(self) -> bytes:
        self.canvas.restore_region(self._background)
        for artist in self.moving:
            self.fig.draw_artist(artist)
        return encode_png(self.canvas)


def encode_png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's pixels as PNG (fast zlib level: about 10 ms for a 1040 x 368 picture)."""
    w, h = canvas.get_width_height()
    buf = io.BytesIO()
    PILImage.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buf, format="png", compress_level=1
    )
    return buf.getvalue()


def by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def image() -> widgets.Image:
    # flex-start: never stretched wider than the PNG (Voila stretches flex children to the page width)
    return widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto", align_self="flex-start"))


def readout_table(rows) -> str:
    """An explorer's read-out: (label, value markup) rows in the course's table style."""
    return html_table(None, [(Cell(k, tone="muted"), Cell(html=v)) for k, v in rows], mono=True)


def error_html(message: str) -> str:
    return f"<div style='color: {TONES['bad']}; font-family: monospace'>{html.escape(message)}</div>"


def failure_html(message: str) -> str:
    """An explorer's read-out line while its state is at the failure its lesson is about (overflow,
    saturation, flush to zero, a skipped step, swamping...): an ``amp-failure`` element, so that a
    page (and a browser test) can find it."""
    return (
        f"<div class='amp-failure' style='color: {TONES['bad']}; font-weight: bold'>"
        f"\N{WARNING SIGN} {html.escape(message)}</div>"
    )


def num(v: float) -> str:
    """A constant for a table: 7 significant digits when they are exact, else the shortest text that
    reads back as ``v`` (65535.99609375, not 65536); and its power of two when it is one."""
    text = f"{v:.7g}"
    if math.isfinite(v) and float(text) != v:
        text = repr(float(v))
    if v > 0 and math.isfinite(v):
        mant, exp = math.frexp(v)
        if mant == 0.5:
            text += f" = 2^{exp - 1}"
    return text


def parse_value(value) -> float:
    """A number, or a string Python's float() reads ("0.1", "-0.0", "1e39", "nan", "inf")."""
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise ValueError(f"value {value!r} is not a number (try 0.1, -0.0, 1e39, nan, inf)") from None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"value must be a real number or a string, got {value!r} ({type(value).__name__})")
    return float(value)
