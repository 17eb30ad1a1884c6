"""What every explorer shares: the wiring of its controls, read-out and picture (:class:`Explorer`), a
figure drawn off pyplot and sent as a PNG (:class:`Picture`), its widgets' small HTML read-outs, and
parsing of typed values. Part of the base: it imports no topic."""

from __future__ import annotations

import contextlib
import html
import io
import math
import numbers
from collections.abc import Hashable

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from ._table import TONES, Cell, html_table
from ._validate import number, real_in
from .style import explorer_dpi, style_context

__all__ = [
    "Explorer",
    "Picture",
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
        self.parts = {}  # the moving artists by name (and whatever else an explorer keeps with its picture)
        self.centers = None  # the bit explorer's digit positions (data coordinates)
        self._background = None

    def freeze(self, moving) -> None:
        """Render everything but ``moving`` into the background. ``moving`` is a list of artists, or a
        mapping name -> artist (or list of artists), kept by name in :attr:`parts`; :attr:`moving` lists
        them all, in order."""
        if isinstance(moving, dict):
            self.parts.update(moving)
            moving = [a for v in moving.values() for a in (v if isinstance(v, (list, tuple)) else [v])]
        self.moving = list(moving)
        for artist in self.moving:
            artist.set_animated(True)
        self.canvas.draw()
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)

    def png(self) -> bytes:
        """The picture as PNG: the frozen background with the moving artists drawn over it, or, for a
        picture never frozen, the whole figure redrawn."""
        if self._background is None:
            self.canvas.draw()
            return encode_png(self.canvas)
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


class Explorer:
    """An explorer's wiring, done once: named controls, an HTML read-out and a picture sent as a PNG.

    A subclass checks its arguments, builds its controls and its picture, then calls
    ``super().__init__(controls, rows)`` last: ``controls`` maps each name :meth:`set` takes to its
    widget (in the order :meth:`set` takes them positionally), ``rows`` are the widgets shown above the
    read-out (default: the controls side by side) and ``extra`` those below the picture. The base
    assembles :attr:`widget` (``widget.explorer`` is the explorer), observes every control and draws
    the opening state.

    The subclass implements :meth:`draw`: read the controls, move the picture's artists and return
    ``(readout_html, picture)``; the base shows the read-out, then the picture's PNG (``None``: the
    PNG shown stays, as when a typed value cannot be read). :meth:`check` refuses a value a control
    cannot take; a subclass refines it where a control needs its own words."""

    def __init__(self, controls: dict, rows=None, *, extra=()):
        self.controls = dict(controls)
        self._held = False
        self.readout = widgets.HTML()
        self.image = image()
        rows = [widgets.HBox(list(self.controls.values()))] if rows is None else list(rows)
        self.widget = widgets.VBox([*rows, self.readout, self.image, *extra])
        self.widget.explorer = self
        for w in self.controls.values():
            self.watch(w, self._on_change)
        self.update()

    def draw(self):
        """The shown state's ``(readout_html, picture or None)``, its artists moved."""
        raise NotImplementedError(f"{type(self).__name__} must implement draw()")

    def update(self) -> None:
        """Redraw: the read-out, then the picture."""
        text, pic = self.draw()
        self.readout.value = text
        if pic is not None:
            self.image.value = pic.png()

    def watch(self, widget, handler) -> None:
        """Call ``handler(change)`` when ``widget``'s value changes, except inside :meth:`holding`."""
        widget.observe(lambda change: None if self._held else handler(change), names="value")

    @contextlib.contextmanager
    def holding(self):
        """Controls changed inside do not redraw (the caller redraws once, after)."""
        held, self._held = self._held, True
        try:
            yield
        finally:
            self._held = held

    def _on_change(self, change) -> None:
        self.update()

    def check(self, name: str, value):
        """The value control ``name`` is set to, or a ValueError / TypeError naming it and what it takes
        (:meth:`checked`)."""
        return self.checked(self.controls[name], name, value)

    @staticmethod
    def checked(w, name: str, value):
        """``value`` if widget ``w`` (control ``name``) takes it, else a ValueError / TypeError naming
        ``name`` and what it takes: a slider a number in its range (a whole number for an int slider),
        a menu, toggle or selection slider one of its options."""
        if isinstance(w, (widgets.IntSlider, widgets.FloatSlider)):
            real_in(value, name, w.min, w.max, allowed=f"a number in the slider's range {w.min:g}..{w.max:g}")
            if isinstance(w, widgets.IntSlider) and not isinstance(value, numbers.Integral):
                raise TypeError(f"{name} must be an int (the slider moves in whole steps), got {value!r}")
        elif hasattr(w, "options"):
            listed = ", ".join(map(repr, w.options))
            if not isinstance(value, Hashable):  # a list or dict: a menu holds one value, never a collection
                raise TypeError(f"{name} must be one of {listed}, got {type(value).__name__} {value!r}")
            if value not in w.options:
                raise ValueError(f"{name}={value!r} is not one of {listed}")
        return value

    def set(self, *values, **named) -> None:
        """Set several controls (by position, in :attr:`controls` order, or by name; ``None`` leaves one
        as it is), then redraw once. Every value is checked before any control moves."""
        names = list(self.controls)
        if len(values) > len(names):
            raise TypeError(f"{type(self).__name__}.set takes at most {len(names)} values ({', '.join(names)})")
        for name in named:
            if name not in self.controls:
                raise ValueError(f"{type(self).__name__} has no control {name!r}: its controls are {', '.join(names)}")
        for name, v in zip(names, values):
            if name in named:
                raise TypeError(f"{type(self).__name__}.set got {name!r} twice")
            named[name] = v
        new = {name: self.check(name, v) for name, v in named.items() if v is not None}
        changed = False
        try:
            with self.holding():
                for name, v in new.items():
                    w = self.controls[name]
                    before = w.value
                    w.value = v
                    changed |= w.value != before
        finally:
            if changed:
                self.update()


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
    return number(value, "value", "a real number or a string")
