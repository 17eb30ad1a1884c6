"""Checkers for the exercises: each says what is right, or exactly what is wrong and a hint.

A checker never raises on a wrong or unfinished answer (a learner's "Run All" must go on); it
returns a :class:`CheckResult`, which shows as a coloured line in a notebook. Answers are checked
against the formats engine, never against a stored number."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from ._table import TONES

__all__ = [
    "CheckResult",
    "call_learner",
    "same_value",
]


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return ("Correct: " if self.ok else "Not yet: ") + self.message

    def _repr_html_(self) -> str:
        tone, mark = ("good", "&#10004; Correct") if self.ok else ("bad", "&#10008; Not yet")
        return f"<div style='color: {TONES[tone]}'><b>{mark}:</b> {html.escape(self.message)}</div>"


def call_learner(fn, *args):
    """Call the learner's function; turn an exception into a message instead of raising."""
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__} {fn!r}"
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - any error in the learner's code is feedback
        return None, f"calling it with {args} raised {type(exc).__name__}: {exc}"


def same_value(got, want: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    return got == want or (math.isnan(got) and math.isnan(want))
