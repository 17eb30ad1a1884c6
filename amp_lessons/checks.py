"""Checkers for the exercises: each says what is right, or exactly what is wrong and a hint.

A checker never raises on a wrong or unfinished answer (a learner's "Run All" must go on); it
returns a :class:`CheckResult`, which shows as a coloured line in a notebook. Answers are checked
against the formats engine, never against a stored number.

A result has three states: correct (green), not yet (red: a wrong answer, with a hint that names
what is wrong) and your turn (muted: the exercise's starter, untouched, so nothing is red before
the learner has tried). No message, of a wrong answer or of a starter, states the answer."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import torch

from ._table import TONES
from ._validate import flag, real

__all__ = [
    "CheckResult",
    "call_learner",
    "is_placeholder",
    "off_by",
    "same_value",
]


@dataclass(frozen=True)
class CheckResult:
    """``ok``: the answer is right; ``todo``: the answer is still the exercise's starter (``ok`` is then
    False, and the result shows in a muted tone, not in red)."""

    ok: bool
    message: str
    todo: bool = False

    def __post_init__(self):
        flag(self.todo, "todo")
        if self.ok and self.todo:
            raise ValueError("a CheckResult cannot be both ok=True and todo=True (your turn)")

    def __bool__(self) -> bool:
        return self.ok

    @property
    def label(self) -> str:
        return "Correct" if self.ok else "Your turn" if self.todo else "Not yet"

    def __repr__(self) -> str:
        return f"{self.label}: {self.message}"

    def _repr_html_(self) -> str:
        tone, mark = ("good", "&#10004;") if self.ok else ("muted", "&#9998;") if self.todo else ("bad", "&#10008;")
        return f"<div style='color: {TONES[tone]}'><b>{mark} {self.label}:</b> {html.escape(self.message).replace(chr(10), '<br>')}</div>"


def call_learner(fn, *args):
    """Call the learner's function; turn an exception into a message instead of raising."""
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__} {fn!r}"
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - any error in the learner's code is feedback
        return None, f"calling it with ({', '.join(map(_short, args))}) raised {type(exc).__name__}: {exc}"


def _short(arg) -> str:
    """An argument as a call's message shows it: a tensor by shape and dtype, a model or optimizer by its type."""
    if isinstance(arg, torch.Tensor):
        return f"a {str(arg.dtype).removeprefix('torch.')} tensor of shape {tuple(arg.shape)}"
    if isinstance(arg, (bool, int, float, str, type(None))):
        return repr(arg)
    return f"a {type(arg).__name__}"


def same_value(got, want: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    return got == want or (math.isnan(got) and math.isnan(want))


def is_placeholder(answer) -> bool:
    """True for the placeholders an exercise's starter cell leaves: ``...``, None, "..." or ""."""
    if answer is None or answer is ...:
        return True
    return isinstance(answer, str) and answer.strip() in ("", "...")


def off_by(got, want) -> str:
    """How the learner's ``got`` misses the right ``want`` without stating ``want``: "too large by a factor of 2"
    when the ratio is a power of two up to 2**16 (the size of a typical exponent slip), else "too large" or "too
    small"; "not a number" for a ``got`` that is not one (a learner's answer is feedback, never an error)."""
    want = real(want, "want")
    try:
        got = float(got)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        return "not a number"
    if not (math.isfinite(got) and math.isfinite(want)) or want == 0 or got == want:
        return "not it" if got != want else "right"
    if (got < 0) != (want < 0) or got == 0:
        return "of the wrong sign" if got != 0 else "zero"
    ratio = got / want
    word, r = ("too large", ratio) if ratio > 1 else ("too small", 1 / ratio)
    if math.frexp(r)[0] == 0.5 and r <= 2**16:
        return f"{word} by a factor of {int(r)}"
    return word
