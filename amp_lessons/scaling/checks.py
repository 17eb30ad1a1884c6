"""Checkers for lesson 05's exercises (the smallest safe scale, predicting the scaler, the update rule)."""

from __future__ import annotations

import math

from .._validate import real
from ..checks import CheckResult, call_learner, same_value
from ..fp16.experiments import gradient_census
from ..scaling.experiments import safe_window, scale_sweep, simulate_scaler

__all__ = [
    "check_scale_prediction",
    "check_scaler_update",
    "check_smallest_scale",
]


def _power_of_two(answer):
    """``answer`` as a float if it is a positive power of two, else None (a bool is not a number here)."""
    if isinstance(answer, bool):
        return None
    try:
        v = float(answer)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and math.isfinite(v) and math.frexp(v)[0] == 0.5 else None


def check_smallest_scale(answer, census=None, max_underflow: float = 0.01) -> CheckResult:
    """Exercise: the smallest power-of-two loss scale (1, 2, 4, ...) at which at most
    ``max_underflow`` of the non-zero activation gradients of ``census`` (default: the lesson's
    :func:`amp_lessons.fp16.gradient_census`) round to zero in fp16, with none overflowing.
    Computed now with :func:`amp_lessons.scaling.scale_sweep` over the scales 2**0 .. 2**63."""

    max_underflow = real(max_underflow, "max_underflow")
    if not 0 <= max_underflow < 1:
        raise ValueError(f"max_underflow={max_underflow!r} is not allowed: it must be a fraction in [0, 1)")
    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with a scale such as 2**10")
    census = gradient_census() if census is None else census
    sweep = scale_sweep(census, range(0, 64), "fp16", "activations")
    window = safe_window(sweep, max_underflow, 0.0)
    if window is None:
        raise ValueError("no power-of-two scale from 2**0 to 2**63 meets the limits for this census")
    want = window[0]
    v = _power_of_two(answer)
    if v is None:
        return CheckResult(
            False,
            f"{answer!r} is not a power of two: loss scales are powers of two, so that "
            "scaling and unscaling are exact. Try 2**k",
        )
    k = round(math.log2(v))
    rows = dict(zip(sweep["exponent"], zip(sweep["underflow"], sweep["overflow"])))
    limit = f"{100 * max_underflow:g}%"
    if v == want:
        extra = "" if want > 1 else " (no scaling needed for this census)"
        return CheckResult(
            True,
            f"2^{k}: {100 * rows[k][0]:.3g}% of the non-zero activation gradients still "
            f"underflow, at most {limit}{extra}; the safe window goes up to 2^{round(math.log2(window[1]))}",
        )
    if k in rows and rows[k][1] > 0:
        return CheckResult(
            False,
            f"at 2^{k}, {100 * rows[k][1]:.3g}% of the non-zero activation gradients overflow to inf. "
            "Hint: a smaller scale",
        )
    if v < want:
        under = rows[k][0] if k in rows else 1.0
        return CheckResult(
            False,
            f"at 2^{k}, {100 * under:.3g}% of the non-zero activation gradients still round "
            f"to zero (limit {limit}). Hint: a larger scale",
        )
    return CheckResult(
        False,
        f"2^{k} works, but it is not the smallest: 2^{k - 1} also keeps underflow at most {limit}. "
        "Hint: use scale_sweep and look for the first scale under the limit",
    )


def check_scale_prediction(answer, n_steps: int, inf_steps, **params) -> CheckResult:
    """Exercise: the loss scale after ``n_steps`` steps of GradScaler's rule when the gradients
    overflow at ``inf_steps`` (0-based), with ``params`` (init_scale, growth_factor, backoff_factor,
    growth_interval; GradScaler's defaults otherwise). Checked with
    :func:`amp_lessons.scaling.simulate_scaler`."""

    history = simulate_scaler(n_steps, inf_steps, **params)
    want = history["scale_after"][-1] if n_steps else simulate_scaler(1, (), **params)["scale"][0]
    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with the scale you predict")
    if same_value(answer, want):
        return CheckResult(
            True,
            f"{want:g}: {sum(history['skipped'])} back-off(s) and "
            f"{sum(b > a for a, b in zip(history['scale'], history['scale_after']))} growth(s)",
        )
    backoffs = sum(history["skipped"])
    return CheckResult(
        False,
        f"{answer!r} is not it. Hint: each overflow multiplies the scale by the backoff factor "
        f"and restarts the count of good steps; the scale grows only after growth_interval good "
        f"steps in a row ({backoffs} overflow(s) here)",
    )


# (initial scale, growth factor, back-off factor, growth interval, overflow steps): GradScaler's defaults, short
# intervals, overflows in a row, and an interval of 1 (the scale grows at every clean step)
_UPDATE_CASES = [
    (2.0**16, 2.0, 0.5, 3, (0, 1, 2, 9)),
    (2.0**10, 2.0, 0.5, 1, (4, 5)),
    (1.0, 4.0, 0.25, 2, (1, 3, 4, 5, 11)),
    (2.0**20, 2.0, 0.5, 5, ()),
]


def check_scaler_update(fn) -> CheckResult:
    """Exercise: ``fn(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval)``
    returns ``(new_scale, new_growth_tracker)``: GradScaler's update rule. Replayed over 16 steps of four
    scenarios against :func:`amp_lessons.scaling.simulate_scaler` (exactly: the factors are powers of two)."""
    if fn is None or fn is ...:
        return CheckResult(False, "write fn(scale, growth_tracker, found_inf, growth_factor, backoff_factor, "
                                  "growth_interval) and pass the function itself")  # fmt: skip
    for init, growth, backoff, interval, infs in _UPDATE_CASES:
        want = simulate_scaler(16, infs, init_scale=init, growth_factor=growth, backoff_factor=backoff,
                               growth_interval=interval)["scale_after"]  # fmt: skip
        scale, tracker = init, 0
        for step in range(16):
            found = step in infs
            got, err = call_learner(fn, scale, tracker, found, growth, backoff, interval)
            if err:
                return CheckResult(False, err)
            if not (isinstance(got, tuple) and len(got) == 2):
                return CheckResult(False, f"return a pair (new_scale, new_growth_tracker), got {got!r:.60}")
            scale, tracker = got
            if not same_value(scale, want[step]):
                case = f"growth_interval {interval}, overflows at steps {list(infs)}"
                if found:
                    hint = "after an overflow the scale is multiplied by backoff_factor and the count starts again"
                elif scale > want[step]:
                    hint = "the scale grows only after growth_interval clean steps IN A ROW, then the count restarts"
                else:
                    hint = "count the clean steps; when the count reaches growth_interval, multiply by growth_factor"
                return CheckResult(
                    False,
                    f"step {step} ({'overflow' if found else 'clean'}; {case}): scale {scale!r}, "
                    f"GradScaler has {want[step]!r}. Hint: {hint}",
                )
    return CheckResult(True, "your update rule gives GradScaler's scale at every step of four scenarios")
