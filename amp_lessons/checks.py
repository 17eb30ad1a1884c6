"""Checkers for the exercises: a :class:`CheckResult` that is correct, not yet (with a hint, never the answer) or
your turn (an untouched starter); a checker never raises on a learner's answer."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import torch

from ._table import TONES
from ._validate import flag, real

__all__ = ["CheckResult", "call_learner", "is_placeholder", "off_by", "same_value"]


@dataclass(frozen=True)
class CheckResult:
    """``ok``: the answer is right; ``todo``: it is still the starter (muted, not red)."""

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
    """How ``got`` misses ``want`` without stating it: "too large by a factor of 2" for a power-of-two ratio up to
    2**16, else "too large" / "too small", "of the wrong sign", "zero", "not it" or "not a number"."""
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
