"""What every explorer shares: its wiring (:class:`Explorer`), a figure sent as a PNG (:class:`Picture`), its
HTML read-outs and the parsing of typed values."""

from __future__ import annotations

import contextlib
import html
import io
import math
import numbers
import textwrap
from collections.abc import Hashable

import ipywidgets as widgets
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.text import Text
from PIL import Image as PILImage

from ._table import TONES, Cell, html_table
from ._validate import number, real_in
from .style import (
    explorer_dpi,
    explorer_figsize,
    fit_colors,
    follow_theme,
    projector_mode,
    recolor,
    style_context,
    theme,
)

__all__ = [
    "Explorer", "Picture", "encode_png", "error_html", "fit_inside", "overflow", "picture_layout", "failure_html",
    "readout_table", "image", "num", "parse_value"
]  # fmt: skip


#: In projector mode no text in an explorer's picture is smaller than this (points): 20 pixels at 160 dpi.
PROJECTOR_MIN_PT = 9.0


class Picture:
    """A figure whose static part is rendered once; :meth:`png` redraws only the moving artists."""

    def __init__(self, figsize):
        with style_context():
            self.fig = Figure(figsize=explorer_figsize(figsize), dpi=explorer_dpi(), layout="none")
        self.min_fontsize = PROJECTOR_MIN_PT if projector_mode() else 0.0
        follow_theme(self)
        self.canvas = FigureCanvasAgg(self.fig)
        self.moving = []
        self.parts = {}  # the moving artists by name (and whatever else an explorer keeps with its picture)
        self.centers = None  # the bit explorer's digit positions (data coordinates)
        self._background = None
        self._overflow = 0.0

    def freeze(self, moving) -> None:
        """Render everything but ``moving`` (a list of artists, or name -> artist(s), kept in :attr:`parts`)
        into the background."""
        if isinstance(moving, dict):
            self.parts.update(moving)
            moving = [a for v in moving.values() for a in (v if isinstance(v, (list, tuple)) else [v])]
        self.moving = list(moving)
        for artist in self.moving:
            artist.set_animated(True)
        self._render_background()

    theme_order = 0  # (recoloured before the explorers redraw)

    def theme_changed(self) -> None:
        """The theme changed: take its colours, render the background again."""
        recolor(self.fig, theme())
        if self._background is not None:
            self._render_background()

    def _prepare(self) -> None:
        """The page's colours and, in projector mode, no text under :data:`PROJECTOR_MIN_PT`."""
        fit_colors(self.fig)
        if self.min_fontsize:
            for t in self.fig.findobj(Text):
                if t.get_fontsize() < self.min_fontsize:
                    t.set_fontsize(self.min_fontsize)

    def _draw_fitted(self) -> None:
        self._prepare()
        self.canvas.draw()
        if fit_inside(self.fig):
            self.canvas.draw()

    def _render_background(self) -> None:
        self._draw_fitted()
        self._background = self.canvas.copy_from_bbox(self.fig.bbox)
        self._overflow = max(overflow(self.fig))  # what no layout could bring inside (0: nothing)

    def layout(self) -> dict:
        """Where the last drawn PNG's texts lie (:func:`picture_layout`)."""
        return picture_layout(self.fig)

    def png(self) -> bytes:
        """The picture as PNG: the moving artists over the frozen background (or the whole figure, never frozen)."""
        if self._background is None:
            self._draw_fitted()
            return encode_png(self.canvas)
        fit_colors(self.fig)  # (a moving artist may have taken a new colour)
        if max(overflow(self.fig)) > self._overflow + 1:  # a moving text or legend grew past an edge: lay out again
            self._render_background()
        self.canvas.restore_region(self._background)
        for artist in self.moving:
            self.fig.draw_artist(artist)
        return encode_png(self.canvas)


def _drawn_texts(fig) -> list:
    """The texts a draw of ``fig`` shows (visible, not empty, of the tick labels only those in view)."""
    hidden = set()
    for ax in fig.axes:
        for axis in ax._axis_map.values():
            if not ax.axison or not axis.get_visible():  # ax.axis("off"): no tick, no axis label
                hidden.update(id(t) for t in axis.findobj(Text))
                continue
            drawn = {id(t) for t in axis._update_ticks()}
            for t in axis.majorTicks + axis.minorTicks:
                if id(t) not in drawn:
                    hidden.update((id(t.label1), id(t.label2)))
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and id(t) not in hidden and (t.axes is None or t.axes.get_visible())
    ]


_PAD_PX = 3.0


def overflow(fig) -> tuple[float, float, float, float]:
    """How far (pixels) the drawn texts and legends of ``fig`` pass its left, bottom, right and top edges, less a
    margin of a few pixels."""
    renderer = fig.canvas.get_renderer()
    w, h = fig.canvas.get_width_height()
    left = bottom = right = top = 0.0
    for artist in [*_drawn_texts(fig), *_legends(fig)]:
        b = artist.get_window_extent(renderer)
        if not (math.isfinite(b.x0) and math.isfinite(b.y0) and b.width >= 0 and b.height >= 0):
            continue
        left, bottom = max(left, _PAD_PX - b.x0), max(bottom, _PAD_PX - b.y0)
        right, top = max(right, b.x1 - (w - _PAD_PX)), max(top, b.y1 - (h - _PAD_PX))
    return left, bottom, right, top


def _wrap_wide_texts(fig, room: float) -> bool:
    """Break a title or label that passes the right edge and is wider than its room into lines at spaces."""
    renderer = fig.canvas.get_renderer()
    legend_texts = {id(t) for lg in _legends(fig) for t in lg.get_texts()}
    w = fig.canvas.get_width_height()[0]
    wrapped = False
    for t in _drawn_texts(fig):
        box = t.get_window_extent(renderer)
        text = t.get_text()
        fits = min(room, w - _PAD_PX - max(box.x0, _PAD_PX))  # from where it starts (a title: the axes' left edge)
        if box.x1 <= w - _PAD_PX or box.width <= fits or id(t) in legend_texts or " " not in text:
            continue
        longest = max(text.split("\n"), key=len)
        chars = max(8, int(len(longest) * fits / box.width))
        while chars > 8:
            t.set_text("\n".join(textwrap.fill(line, chars) for line in text.split("\n")))
            if t.get_window_extent(renderer).width <= fits:
                break
            chars -= max(1, chars // 10)
        wrapped = True
    return wrapped


def fit_inside(fig, rounds: int = 3) -> bool:
    """Shrink ``fig``'s axes together until their layout boxes lie inside the figure, then wrap a title or label
    still too wide. True if anything moved (draw again)."""
    axes = [ax for ax in fig.axes if ax.get_visible()]
    if not axes:
        return False
    renderer = fig.canvas.get_renderer()
    w, h = fig.canvas.get_width_height()
    moved = False
    for _ in range(rounds):
        boxes = [ax.get_position() for ax in axes]
        tight = [ax.get_tightbbox(renderer, for_layout_only=True) for ax in axes]
        tight = [t for t in tight if t is not None and math.isfinite(t.x0) and math.isfinite(t.y0)]
        if not tight:
            break
        left = max(0.0, _PAD_PX - min(t.x0 for t in tight))
        bottom = max(0.0, _PAD_PX - min(t.y0 for t in tight))
        right = max(0.0, max(t.x1 for t in tight) - (w - _PAD_PX))
        top = max(0.0, max(t.y1 for t in tight) - (h - _PAD_PX))
        if max(left, bottom, right, top) <= 0.5:
            wrapped = _wrap_wide_texts(fig, w - 2 * _PAD_PX)
            moved |= wrapped
            if not wrapped:
                break
            continue
        x0, y0 = min(b.x0 for b in boxes), min(b.y0 for b in boxes)
        x1, y1 = max(b.x1 for b in boxes), max(b.y1 for b in boxes)
        nx0, nx1 = x0 + left / w, x1 - right / w
        ny0, ny1 = y0 + bottom / h, y1 - top / h
        if nx1 - nx0 < 0.25 * (x1 - x0) or ny1 - ny0 < 0.25 * (y1 - y0):
            break  # no room to make: leave the layout as drawn (the layout tests report the overflow)
        sx, sy = (nx1 - nx0) / (x1 - x0), (ny1 - ny0) / (y1 - y0)
        for ax, b in zip(axes, boxes):
            ax.set_position([nx0 + (b.x0 - x0) * sx, ny0 + (b.y0 - y0) * sy, b.width * sx, b.height * sy], which="both")
        moved = True
    return moved


def _legends(fig) -> list:
    return [lg for lg in [*(ax.get_legend() for ax in fig.axes), *fig.legends] if lg is not None and lg.get_visible()]


def picture_layout(fig) -> dict:
    """Where the texts of ``fig``'s last draw lie, in PNG pixels from the top left: ``size``, ``dpi``,
    ``background``, ``texts`` (text, box, px, color, box_color, in_legend), ``legends``, ``outside`` (boxes past an
    edge, ``by`` pixels) and ``overlaps`` (legends covering a text not theirs). ``fig`` must have been drawn."""
    renderer = fig.canvas.get_renderer()
    w, h = fig.canvas.get_width_height()

    def box(artist) -> list[float]:
        b = artist.get_window_extent(renderer)
        return [round(b.x0, 1), round(h - b.y1, 1), round(b.x1, 1), round(h - b.y0, 1)]

    legends = _legends(fig)
    legend_texts = {id(t): k for k, lg in enumerate(legends) for t in [*lg.get_texts(), lg.get_title()]}
    texts = []
    for t in _drawn_texts(fig):
        patch, px = t.get_bbox_patch(), round(t.get_fontsize() * fig.dpi / 72, 2)
        face = to_hex(patch.get_facecolor()) if patch is not None else None
        texts.append(dict(text=t.get_text()[:60], box=box(t), px=px, color=to_hex(t.get_color()), box_color=face,
                          in_legend=legend_texts.get(id(t))))  # fmt: skip
    legend_boxes = [dict(box=box(lg), texts=[t.get_text() for t in lg.get_texts()]) for lg in legends]
    outside = []
    for kind, items in (("text", texts), ("legend", legend_boxes)):
        for item in items:
            x0, y0, x1, y1 = item["box"]
            by = max(-x0, -y0, x1 - w, y1 - h)
            if by > 0.5:
                what = item["text"] if kind == "text" else ", ".join(item["texts"])[:60]
                outside.append(dict(kind=kind, what=what, box=item["box"], by=round(by, 1)))
    overlaps = []
    for k, lg in enumerate(legend_boxes):
        lx0, ly0, lx1, ly1 = lg["box"]
        for t in texts:
            if t["in_legend"] == k:
                continue
            x0, y0, x1, y1 = t["box"]
            area = max(0.0, min(x1, lx1) - max(x0, lx0)) * max(0.0, min(y1, ly1) - max(y0, ly0))
            if area > 1.0:
                overlaps.append(dict(legend=", ".join(lg["texts"])[:60], text=t["text"], area=round(area, 1)))
    background = to_hex(fig.get_facecolor())
    return dict(size=[w, h], dpi=fig.dpi, background=background, texts=texts, legends=legend_boxes, outside=outside,
                overlaps=overlaps)  # fmt: skip


def encode_png(canvas: FigureCanvasAgg) -> bytes:
    """The canvas's pixels as PNG (fast zlib level)."""
    w, h = canvas.get_width_height()
    buf = io.BytesIO()
    image = PILImage.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    image.save(buf, format="png", compress_level=1)
    return buf.getvalue()


class Explorer:
    """An explorer's wiring: named controls, an HTML read-out and a picture sent as a PNG.

    A subclass builds its controls and picture, then calls ``super().__init__(controls, rows)`` last
    (``controls``: name -> widget, in :meth:`set`'s positional order; ``rows`` above the read-out, ``extra``
    below the picture), and implements :meth:`draw`, returning ``(readout_html, picture or None)``.
    :attr:`SAMPLE_TEXTS`, :attr:`EXTRA_MOVES` and :attr:`COLD_MOVES` describe a learner's moves for scripted tests."""

    #: What a learner types into each text box control (control name -> texts).
    SAMPLE_TEXTS: dict[str, tuple[str, ...]] = {}
    #: The widgets a learner moves besides the controls (names of the explorer's attributes).
    EXTRA_MOVES: tuple[str, ...] = ()
    #: Control name -> the explorer's cache (a dict attribute) a change of it may fill; emptied before scripted moves.
    COLD_MOVES: dict[str, str] = {}

    def __init__(self, controls: dict, rows=None, *, extra=()):
        self.controls = dict(controls)
        self._held = False
        self.readout = widgets.HTML()
        self.image = image()
        self.picture: Picture | None = None  # the picture shown last (its layout: picture.layout())
        rows = [widgets.HBox(list(self.controls.values()))] if rows is None else list(rows)
        for row in rows:
            _widen_sliders(row)
        self.widget = widgets.VBox([*rows, self.readout, self.image, *extra])
        self.widget.add_class("amp-explorer")
        self.readout.add_class("amp-readout")
        self.image.add_class("amp-picture")
        self.widget.explorer = self
        for w in self.controls.values():
            self.watch(w, self._on_change)
        follow_theme(self)
        self.update()

    theme_order = 1  # (redrawn after the pictures took the new theme's colours)

    def theme_changed(self) -> None:
        """The theme changed: show the picture in its colours."""
        if self.picture is not None:
            self.image.value = self.picture.png()

    def draw(self):
        """The shown state's ``(readout_html, picture or None)``, its artists moved."""
        raise NotImplementedError(f"{type(self).__name__} must implement draw()")

    def update(self) -> None:
        """Redraw: the read-out, then the picture."""
        text, pic = self.draw()
        self.readout.value = text
        if pic is not None:
            self.image.value = pic.png()
            self.picture = pic

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
        """The value control ``name`` is set to, or a ValueError / TypeError (:meth:`checked`)."""
        return self.checked(self.controls[name], name, value)

    @staticmethod
    def checked(w, name: str, value):
        """``value`` if widget ``w`` (control ``name``) takes it (a slider: a number in range; a menu: an
        option), else a ValueError / TypeError naming ``name`` and what it takes."""
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

    @classmethod
    def opened_at(cls, controls: dict, **values) -> dict:
        """``controls`` (name -> widget), each set to its value in ``values`` once :meth:`checked` takes it."""
        for name, value in values.items():
            controls[name].value = cls.checked(controls[name], name, value)
        return controls

    def set(self, *values, **named) -> None:
        """Set several controls (by position or name; ``None`` leaves one as it is), all checked first, then redraw
        once."""
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


# a slider's label and read-out take their room from its width: keep the track wide enough to drag
_TRACK_PX, _PX_PER_CHAR, _READOUT_PX, _LABEL_PX = 190, 7.5, 80, 90


def _widen_sliders(w) -> None:
    if isinstance(w, widgets.Box):
        for child in w.children:
            _widen_sliders(child)
        return
    if not isinstance(w, (widgets.IntSlider, widgets.FloatSlider, widgets.SelectionSlider)):
        return
    need = round(max(len(w.description) * _PX_PER_CHAR, _LABEL_PX) + _TRACK_PX + _READOUT_PX)
    width = w.layout.width
    if width is None or (width.endswith("px") and float(width[:-2]) < need):
        w.layout.width = f"{need}px"


def image() -> widgets.Image:
    # flex-start: never stretched wider than the PNG (Voila stretches flex children to the page width)
    return widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto", align_self="flex-start"))


def readout_table(rows) -> str:
    """An explorer's read-out: (label, value markup) rows in the course's table style."""
    return html_table(None, [(Cell(k, tone="muted"), Cell(html=v)) for k, v in rows], mono=True)


def error_html(message: str) -> str:
    return f"<div style='color: {TONES['bad']}; font-family: monospace'>{html.escape(message)}</div>"


def failure_html(message: str) -> str:
    """An explorer's read-out line at the failure its lesson is about, as an ``amp-failure`` element."""
    return (
        f"<div class='amp-failure' style='color: {TONES['bad']}; font-weight: bold'>"
        f"\N{WARNING SIGN} {html.escape(message)}</div>"
    )


def num(v: float) -> str:
    """A constant for a table: 7 significant digits when exact, else the shortest exact text; and its power of
    two when it is one."""
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
