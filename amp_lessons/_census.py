"""Where a value lands once rounded to a format: :data:`CLASSES`, their meanings, and :class:`Census`, the counts
per class (:meth:`amp_lessons.formats.FloatFormat.census`); exported by :mod:`amp_lessons.formats`."""

from __future__ import annotations

from dataclasses import dataclass

from ._table import TableRecord

__all__ = ["CLASS_MEANINGS", "CLASSES", "Census"]

CLASSES = ("zero", "flushed", "subnormal", "normal", "saturated", "inf", "nan")
"""Where a float32 value lands once rounded to a format: the course's one vocabulary (:meth:`FloatFormat.classify`)."""
CLASS_MEANINGS = {
    "zero": "it is zero",
    "flushed": "a non-zero value that rounds to zero (underflow)",
    "subnormal": "it rounds to a non-zero subnormal: kept, with fewer significant bits",
    "normal": "it rounds to a normal value (a value just above max that rounds down to max is normal)",
    "saturated": "beyond the format's range, clamped to +-max (overflow mode 'saturate')",
    "inf": "beyond the format's range, or infinite, and stored as +-inf",
    "nan": "NaN: a NaN input, or an overflow in a format whose overflow gives NaN",
}


def choices(values) -> str:
    """Allowed values as an error message lists them (the engine's messages: "use one of 'a', 'b'")."""
    return ", ".join(repr(v) for v in values)


@dataclass(frozen=True, repr=False)
class Census(TableRecord):
    """How many values landed in each class of :data:`CLASSES` when rounded to ``format``: ``census["flushed"]`` a
    count, ``census.fraction("flushed")`` a fraction; shown as a table."""

    format: str
    rounding: str
    overflow: str
    counts: tuple[int, ...]  # one per class of CLASSES, in that order

    @property
    def total(self) -> int:
        return sum(self.counts)

    def _index(self, cls: str) -> int:
        if cls not in CLASSES:
            raise KeyError(f"unknown class {cls!r}: use one of {choices(CLASSES)}")
        return CLASSES.index(cls)

    def __getitem__(self, cls: str) -> int:
        return self.counts[self._index(cls)]

    def fraction(self, cls: str) -> float:
        """The fraction of all values in class ``cls`` (0.0 for an empty census)."""
        return self[cls] / self.total if self.total else 0.0

    def as_dict(self) -> dict[str, int]:
        return dict(zip(CLASSES, self.counts))

    def _table(self):
        rows = [(c, f"{n:,}", f"{self.fraction(c):.2%}", CLASS_MEANINGS[c]) for c, n in zip(CLASSES, self.counts)]
        title = f"{self.total:,} values rounded to {self.format} ({self.rounding}, overflow {self.overflow!r})"
        return ("class", "values", "share", "meaning"), rows, title, ()
