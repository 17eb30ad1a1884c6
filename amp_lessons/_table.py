"""The course's one table renderer: every table as HTML and as aligned plain text. Colours are semantic
(``tone``), from JupyterLab's theme variables with fallbacks, so a table reads the same in both themes."""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["Cell", "TONES", "Table", "TableRecord", "duration_text", "html_table", "nbytes_text", "table", "text_table"]

TONES = {
    "good": "color-mix(in srgb, var(--jp-success-color1, #2e7d32) 60%, var(--jp-content-font-color1, #000))",
    "warn": "color-mix(in srgb, var(--jp-warn-color1, #b26a00) 60%, var(--jp-content-font-color1, #000))",
    "bad": "color-mix(in srgb, var(--jp-error-color1, #c62828) 50%, var(--jp-content-font-color1, #000))",
    "muted": "color-mix(in srgb, var(--jp-ui-font-color1, #000) 75%, transparent)",
}
"""Text colours by meaning: the theme's colour mixed with its text colour, to keep WCAG AA contrast in both themes
(https://www.w3.org/TR/WCAG21/#contrast-minimum)."""

_MARK = "background: rgba(255, 193, 7, 0.25)"  # a highlighted row, on light and dark backgrounds
_CELL = "text-align: left; padding: 1px 14px 1px 0"
_NOWRAP = "; white-space: nowrap"
_IDENTIFIER = re.compile(r"\S+|.{1,12}")
"""Text kept on one line: one word or at most 12 characters."""


@dataclass(frozen=True)
class Cell:
    """A table cell: ``text`` (escaped) or ``html`` (trusted markup), with a ``tone`` from :data:`TONES` and bold.
    ``nowrap``: keep it on one line (None: for a single word or at most 12 characters)."""

    text: str = ""
    tone: str | None = None
    bold: bool = False
    html: str | None = None
    nowrap: bool | None = None

    def __post_init__(self):
        if self.tone is not None and self.tone not in TONES:
            raise ValueError(f"tone={self.tone!r} is not one of {', '.join(map(repr, TONES))}")
        if self.nowrap is not None and not isinstance(self.nowrap, bool):
            raise TypeError(f"nowrap must be True, False or None (automatic), got {self.nowrap!r}")

    @property
    def keeps_whole(self) -> bool:
        if self.nowrap is not None:
            return self.nowrap
        return self.html is None and _IDENTIFIER.fullmatch(self.text) is not None

    def markup(self) -> str:
        inner = self.html if self.html is not None else html.escape(self.text)
        if self.bold:
            inner = f"<b>{inner}</b>"
        if self.tone:
            inner = f"<span style='color: {TONES[self.tone]}'>{inner}</span>"
        return inner


def _cell(c) -> Cell:
    return c if isinstance(c, Cell) else Cell(str(c))


def _style(c: Cell) -> str:
    return _CELL + _NOWRAP if c.keeps_whole else _CELL


def html_table(
    header: Sequence | None, rows: Iterable[Sequence], *, title: str = "", notes: Iterable[str] = (),
    marked: Iterable[int] = (), mono: bool = False, row_headers: bool = False
) -> str:  # fmt: skip
    """An HTML table: ``header`` (or None), ``rows`` of cells (str or :class:`Cell`), a bold ``title`` above and
    ``notes`` under it; ``marked`` rows highlighted, ``mono`` font, ``row_headers``: first cells as headers."""
    marked = set(marked)
    font = "font-family: var(--jp-code-font-family, monospace); font-size: 13px" if mono else ""
    head = ""
    if header is not None:
        head = "<tr>" + "".join(f"<th style='{_style(_cell(h))}'>{_cell(h).markup()}</th>" for h in header) + "</tr>"
    body = []
    for i, row in enumerate(rows):
        cells = [_cell(c) for c in row]
        tds = "".join(
            f"<{tag} style='{_style(c)}'>{c.markup()}</{tag}>"
            for j, c in enumerate(cells)
            for tag in ["th" if row_headers and j == 0 else "td"]
        )
        style = f" style='{_MARK}'" if i in marked else ""
        body.append(f"<tr{style}>{tds}</tr>")
    out = f"<b>{html.escape(title)}</b>" if title else ""
    out += f"<table style='{font}'>{head}{''.join(body)}</table>"
    notes = [n for n in notes if n]
    if notes:
        items = "".join(f"<li>{html.escape(n)}</li>" for n in notes)
        out += f"<ul style='font-size: smaller; color: {TONES['muted']}'>{items}</ul>"
    return out


def text_table(
    header: Sequence | None, rows: Iterable[Sequence], *, title: str = "", notes: Iterable[str] = (), rule: bool = True
) -> str:
    """The same table as aligned plain text, with a rule under the header (``rule``)."""
    table = [[_cell(c).text for c in r] for r in rows]
    if header is not None:
        table.insert(0, [_cell(h).text for h in header])
    n = max((len(r) for r in table), default=0)
    widths = [max((len(r[c]) for r in table if c < len(r)), default=0) for c in range(n)]
    lines = [title] if title else []
    for k, r in enumerate(table):
        lines.append("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if k == 0 and header is not None and rule:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines + [x for x in notes if x])


class TableRecord:
    """A result shown as a small table: a subclass defines ``_table()`` -> ``(header, rows, title, notes)`` (and
    optionally ``_marked()``, rows to highlight; ``_row_headers``: first cells as headers) and gets ``_repr_html_``,
    ``__repr__`` and ``__str__``."""

    _row_headers = False

    def _table(self) -> tuple:
        raise NotImplementedError

    def _marked(self) -> Iterable[int]:
        return ()

    def _repr_html_(self) -> str:
        header, rows, title, notes = self._table()
        return html_table(header, rows, title=title, notes=notes, marked=self._marked(), row_headers=self._row_headers)

    def __str__(self) -> str:
        header, rows, title, notes = self._table()
        return text_table(header, rows, title=title, notes=notes)

    def __repr__(self) -> str:
        return self.__str__()


class Table(TableRecord):
    """A table a lesson builds from its own rows (made by :func:`table`)."""

    def __init__(self, header, rows, title: str = "", notes=()):
        self._parts = (tuple(header), [list(r) for r in rows], title, list(notes))

    def _table(self) -> tuple:
        return self._parts


def table(header, rows, *, title: str = "", notes=()) -> Table:
    """The rows under ``header`` as a table (``rows``: sequences of str, numbers or :class:`Cell`, one per column),
    with an optional ``title`` and ``notes``."""
    if isinstance(header, (str, bytes)) or not isinstance(header, (list, tuple)) or not header:
        raise TypeError(f"header must be a non-empty list or tuple of column names, got {header!r}")
    if not all(isinstance(h, str) for h in header):
        raise TypeError(f"header must hold column names (str), got {header!r}")
    if isinstance(rows, (str, bytes)) or not isinstance(rows, (list, tuple)):
        raise TypeError(f"rows must be a list or tuple of rows, got {type(rows).__name__}")
    for i, r in enumerate(rows):
        if isinstance(r, (str, bytes)) or not isinstance(r, (list, tuple)) or len(r) != len(header):
            raise ValueError(f"rows[{i}] must be a list or tuple of {len(header)} cells (one per column), got {r!r}")
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {title!r}")
    if isinstance(notes, (str, bytes)) or not isinstance(notes, (list, tuple)):
        raise TypeError(f"notes must be a list or tuple of str, got {notes!r}")
    if not all(isinstance(n, str) for n in notes):
        raise TypeError(f"notes must hold str only, got {notes!r}")
    return Table(header, rows, title, notes)


def duration_text(seconds: float) -> str:
    """A duration in words, to two significant figures: ``about 3.2 years``."""
    for unit, length in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= length:
            return f"about {seconds / length:.2g} {unit}"
    return f"about {seconds:.2g} s"


def nbytes_text(n: float) -> str:
    """A byte count in words: ``7.3 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"  # unreachable
