"""Checkers for lesson 05's exercises (the smallest safe scale, predicting the scaler, the update rule)."""

from __future__ import annotations

import math
from pathlib import Path

from .._exercise import attempt, calls_seen, correct, exercise, not_yet, placeholder, your_turn
from .._validate import real
from ..checks import CheckResult, call_learner, off_by, same_value
from ..fp16._experiments import gradient_census
from ..scaling._experiments import safe_window, scale_sweep, simulate_scaler

__all__ = ["check_scaler_update", "check_smallest_scale"]


def _power_of_two(answer):
    """``answer`` as a float if it is a positive power of two, else None (a bool is not a number here)."""
    if isinstance(answer, bool):
        return None
    try:
        v = float(answer)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and math.isfinite(v) and math.frexp(v)[0] == 0.5 else None


@exercise
def check_smallest_scale(answer, census=None, max_underflow: float = 0.01) -> CheckResult:
    """Exercise: the smallest power-of-two loss scale (1, 2, 4, ...) at which at most
    ``max_underflow`` of the non-zero activation gradients of ``census`` (default: the lesson's
    :func:`amp_lessons.fp16.gradient_census`) round to zero in fp16, with none overflowing.
    Computed now with :func:`amp_lessons.scaling.scale_sweep` over the scales 2**0 .. 2**63."""

    max_underflow = real(max_underflow, "max_underflow")
    if not 0 <= max_underflow < 1:
        raise ValueError(f"max_underflow={max_underflow!r} is not allowed: it must be a fraction in [0, 1)")
    placeholder(answer, "replace `...` with your scale, a power of two written as 2.0 ** k")
    census = gradient_census() if census is None else census
    sweep = scale_sweep(census, range(0, 64), "fp16", "activations")
    window = safe_window(sweep, max_underflow, 0.0)
    if window is None:
        raise ValueError("no power-of-two scale from 2**0 to 2**63 meets the limits for this census")
    want = window[0]
    v = _power_of_two(answer)
    if v is None:
        return not_yet(
            f"{answer!r} is not a power of two: loss scales are powers of two, so that "
            "scaling and unscaling are exact. Try 2**k",
            hide=want,
        )
    k = round(math.log2(v))
    rows = dict(zip(sweep.exponent, zip(sweep.flushed, sweep.overflowed)))
    limit = f"{100 * max_underflow:g}%"
    if v == want:
        extra = "" if want > 1 else " (no scaling needed for this census)"
        return correct(
            f"2^{k}: {100 * rows[k][0]:.3g}% of the non-zero activation gradients still "
            f"underflow, at most {limit}{extra}; the safe window goes up to 2^{round(math.log2(window[1]))}"
        )
    if k in rows and rows[k][1] > 0:
        return not_yet(
            f"at 2^{k}, {100 * rows[k][1]:.3g}% of the non-zero activation gradients overflow to inf. "
            "Hint: a smaller scale",
            hide=want,
        )
    if v < want:
        under = rows[k][0] if k in rows else 1.0
        return not_yet(
            f"at 2^{k}, {100 * under:.3g}% of the non-zero activation gradients still round "
            f"to zero (limit {limit}). Hint: a larger scale",
            hide=want,
        )
    return not_yet(
        f"2^{k} works, but it is not the smallest: a smaller power of two also keeps underflow at most {limit}. "
        "Hint: use scale_sweep and look for the first scale under the limit",
        hide=want,
    )


# (initial scale, growth factor, back-off factor, growth interval, overflow steps): overflows at the start and in a
# row (GradScaler's factors), an interval of 1 (the scale grows at every clean step), other factors, no overflow
# (growth exactly at each interval's end), and an overflow on the very step whose count would reach the interval
# (steps 3 and 8 here: a back-off, not a growth, and the count starts again)
_UPDATE_CASES = [
    (2.0**16, 2.0, 0.5, 3, (0, 1, 2, 9)),
    (2.0**10, 2.0, 0.5, 1, (4, 5)),
    (1.0, 4.0, 0.25, 2, (1, 3, 4, 5, 11)),
    (2.0**20, 2.0, 0.5, 5, ()),
    (2.0**8, 2.0, 0.5, 4, (3, 8, 9, 15)),
]

_PACKAGE = Path(__file__).resolve().parent.parent
#: the course's own versions of the rule, which an answer must not call
_RULES = {"update_scale", "simulate_scaler", "update", "scaler_update"}


def _returns(fn, args, pair) -> bool:
    """Whether the learner's ``fn(*args)`` returns exactly the tuple ``pair`` (never raises)."""
    got, err = call_learner(fn, *args)
    try:
        return (
            err is None
            and isinstance(got, tuple)
            and len(got) == 2
            and all(type(g) in (int, float) and g == p for g, p in zip(got, pair))
        )
    except Exception:  # noqa: BLE001 - a learner's odd return value is not the starter
        return False


def _less(a, b) -> bool:
    try:
        return float(a) < float(b)
    except (TypeError, ValueError, RuntimeError):
        return False


@exercise
def check_scaler_update(fn) -> CheckResult:
    """Exercise: ``fn(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)``
    returns ``(new_scale, new_growth_tracker)``: GradScaler's update rule. Replayed over 16 steps of five
    scenarios (:data:`_UPDATE_CASES`) against :func:`amp_lessons.scaling.simulate_scaler` (exactly: the factors are
    powers of two); an answer that calls the course's own rule is refused."""
    placeholder(
        fn,
        "write fn(scale, growth_tracker, found_inf, growth_factor, backoff_factor, "
        "growth_interval) and pass the function itself",
    )
    # the starter returns its inputs: after a clean step the count must move, after an overflow the scale
    probes = [(2.0**10, 1, False, 2.0, 0.5, 3), (2.0**10, 0, True, 2.0, 0.5, 3)]
    if callable(fn) and all(_returns(fn, p, p[:2]) for p in probes):
        return your_turn(
            "so far it returns scale and growth_tracker unchanged: back off after an "
            "overflow; grow after growth_interval clean steps in a row"
        )
    for init, growth, backoff, interval, infs in _UPDATE_CASES:
        want = simulate_scaler(16, infs, init_scale=init, growth_factor=growth, backoff_factor=backoff,
                               growth_interval=interval).scale_after  # fmt: skip
        scale, tracker = init, 0
        for step in range(16):
            found = step in infs
            with calls_seen(lambda c: c.co_name in _RULES and c.co_filename.startswith(str(_PACKAGE))) as called:
                got = attempt(fn, scale, tracker, found, growth, backoff, interval)
            if called:
                return not_yet(
                    f"your function calls the course's own {sorted(called)[0]}: write the rule yourself "
                    "(an if for the overflow, a count of clean steps, a comparison with growth_interval)"
                )
            if not (isinstance(got, tuple) and len(got) == 2):
                return not_yet(f"return a pair (new_scale, new_growth_tracker), got {got!r:.60}")
            before, (scale, tracker) = scale, got
            if not same_value(scale, want[step]):
                case = f"growth_interval {interval}, overflows at steps {list(infs)}"
                miss = off_by(scale, want[step])
                if found and same_value(scale, before):
                    hint = "after an overflow the scale must shrink: multiply it by backoff_factor"
                elif found and miss.startswith("too large"):
                    hint = "you grew the scale on an overflow step: an overflow multiplies it by backoff_factor"
                elif found:
                    hint = "after an overflow the scale is multiplied by backoff_factor and the count starts again"
                elif miss.startswith("too small") and _less(scale, before):
                    hint = "you backed off on a clean step: only an overflow shrinks the scale"
                elif miss.startswith("too large"):
                    hint = "the scale grows only after growth_interval clean steps IN A ROW, then the count restarts"
                else:
                    hint = "count the clean steps; when the count reaches growth_interval, multiply by growth_factor"
                return not_yet(
                    f"step {step} ({'overflow' if found else 'clean'}; {case}): your scale {scale!r} is {miss}. "
                    f"Hints: (1) {hint}; (2) replay this case by hand, the scale and the count of clean steps after "
                    "each step, and compare with what your function returns",
                    hide=want[step],
                )
    return correct(
        f"your update rule gives GradScaler's scale at every step of {len(_UPDATE_CASES)} scenarios: overflows at the "
        "start and in a row, an interval of 1, growth at each interval's end, an overflow on an interval's last step"
    )
