"""How every exercise checker answers: a function decorated with :func:`exercise`, in which :func:`placeholder`
ends the check with "Your turn" on an untouched starter, :func:`attempt` calls the learner's function (an
exception becomes "Not yet" feedback, never a traceback), :func:`correct`, :func:`not_yet` and :func:`your_turn`
build the result (masking the ``hide`` answers, :func:`reveals`), and :func:`finish` ends the check at once."""

from __future__ import annotations

import contextlib
import functools
import math
import re
import sys

from .checks import CheckResult, call_learner, is_placeholder

__all__ = [
    "MASK", "attempt", "calls_seen", "correct", "exercise", "finish", "is_exercise", "not_yet", "placeholder",
    "reveals", "your_turn"
]  # fmt: skip

#: what stands in a message where it would state a hidden answer
MASK = "(the answer)"


class _Verdict(Exception):  # noqa: N818 - not an error: how a helper ends the check with its result
    def __init__(self, result: CheckResult):
        super().__init__(result.message)
        self.result = result


def exercise(check):
    """Decorate a checker: a :func:`finish` inside it ends the check with its result; it must return a
    :class:`CheckResult`."""
    if not callable(check):
        raise TypeError(f"exercise decorates a checker function, got {type(check).__name__} {check!r}")

    @functools.wraps(check)
    def checker(*args, **kwargs):
        try:
            result = check(*args, **kwargs)
        except _Verdict as verdict:
            result = verdict.result
        if not isinstance(result, CheckResult):
            raise TypeError(f"{check.__name__} returned {type(result).__name__}, not a CheckResult")
        return result

    checker.__exercise__ = True
    return checker


def is_exercise(fn) -> bool:
    """Whether ``fn`` is a checker made with :func:`exercise`."""
    return getattr(fn, "__exercise__", False) is True


def finish(result: CheckResult):
    """End the check now with ``result`` (inside a function decorated with :func:`exercise`)."""
    if not isinstance(result, CheckResult):
        raise TypeError(f"finish takes a CheckResult, got {type(result).__name__} {result!r}")
    raise _Verdict(result)


def attempt(fn, *args, prefix: str = "", call: str | None = None):
    """``fn(*args)``, the learner's function called; an exception (or no function) ends the check with "Not yet:
    <prefix>calling it with (...) raised <type>: <message>" (``call``: "<call> raised ...")."""
    if call is None:
        got, err = call_learner(fn, *args)
    elif not callable(fn):
        err = f"expected a function {call}, got {type(fn).__name__}"
    else:
        try:
            got, err = fn(*args), None
        except Exception as exc:  # noqa: BLE001 - any error in the learner's code is feedback
            err = f"{call} raised {type(exc).__name__}: {exc}"
    if err:
        finish(not_yet(prefix + err))
    return got


def placeholder(answer, message: str, *, hide=()) -> None:
    """End the check with "Your turn: <message>" if ``answer`` is a starter's placeholder (``...``, None, "..."
    or "")."""
    if is_placeholder(answer):
        finish(your_turn(message, hide=hide))


def correct(message: str) -> CheckResult:
    return CheckResult(True, message)


def not_yet(message: str, *, hide=()) -> CheckResult:
    """A wrong answer: ``message`` says what is wrong, with any of the answers in ``hide`` masked."""
    return CheckResult(False, _masked(message, hide))


def hint_list(first: str, items, *, hide=()) -> CheckResult:
    """Not yet: ``first``, then ``items`` as a short list, one "- ..." line each, most important first."""
    return not_yet(first + ":\n" + "\n".join(f"- {h}" for h in items), hide=hide)


def your_turn(message: str, *, hide=()) -> CheckResult:
    """The starter, untouched (a muted line): ``message`` says what to do."""
    return CheckResult(False, _masked(message, hide), todo=True)


def _forms(value) -> set[str]:
    """The spellings of ``value`` a message could state it in."""
    if isinstance(value, str):
        return {value} if value.strip() else set()
    v = float(value)
    if not math.isfinite(v):
        return {repr(v)}
    forms = {repr(v), f"{v:g}", f"{v:.6g}", f"{v:.4g}", f"{v:.3g}", f"{v:.2g}"}
    if v.is_integer():
        forms.add(str(int(v)))
    mantissa, exponent = math.frexp(abs(v))
    if v > 0 and mantissa == 0.5:
        k = exponent - 1
        forms |= {f"2**{k}", f"2^{k}", f"2 ** {k}", f"2.0**{k}", f"2.0 ** {k}", f"2**({k})"}
    return forms


def _pattern(form: str) -> str:
    return rf"(?<![\w.\-]){re.escape(form)}(?!\d)(?!\.\d)"


def reveals(message: str, value) -> bool:
    """Whether ``message`` states ``value``: a number in any of its usual spellings, or a string as it is."""
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__} {message!r}")
    return any(re.search(_pattern(f), message) for f in _forms(_secret(value)))


def _secret(value):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise TypeError(f"a hidden answer must be a number or a str, got {type(value).__name__} {value!r}")
    return value


def _masked(message: str, hide) -> str:
    if not isinstance(message, str):
        raise TypeError(f"message must be a str, got {type(message).__name__} {message!r}")
    hidden = [hide] if isinstance(hide, (int, float, str)) else list(hide)
    # the longest spellings first; a single digit is prose, not masked
    forms = sorted({f for v in hidden for f in _forms(_secret(v)) if len(f) > 1}, key=len, reverse=True)
    for form in forms:
        message = re.sub(_pattern(form), MASK, message)
    return message


@contextlib.contextmanager
def calls_seen(wanted):
    """Record, in the yielded set, the names of the functions called inside the block whose code object
    ``wanted(code)`` accepts, however the caller got hold of them."""
    seen: set = set()
    previous = sys.getprofile()

    def profiler(frame, event, arg):
        if event == "call" and wanted(frame.f_code):
            seen.add(frame.f_code.co_name)

    sys.setprofile(profiler)
    try:
        yield seen
    finally:
        sys.setprofile(previous)
