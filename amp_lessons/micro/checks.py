"""Exercise checkers of the microscaling lesson: each returns a CheckResult and never raises on an answer."""

from __future__ import annotations

import math

import torch

from ..checks import CheckResult, call_learner, is_placeholder, off_by, same_value
from ..formats import get_format
from .experiments import mx_scale_exponents

__all__ = ["check_floor_scale_exponent", "check_sr_probability"]

_AMAXES = (1.0, 448.0, 500.0, 0.01, 3.0e5, 2.0**-100, 6.0, 1e30)


def check_floor_scale_exponent(fn, element_format="fp8_e4m3") -> CheckResult:
    """Exercise: ``fn(amax) -> int``, the OCP MX floor rule's scale exponent k (the block is divided by 2**k) for a
    block whose largest magnitude is ``amax`` (a positive normal float32), for ``element_format``'s elements."""
    f = get_format(element_format)
    for amax in _AMAXES:
        want = int(mx_scale_exponents(torch.tensor([amax]), f, "floor")[0])
        got, error = call_learner(fn, amax)
        if error:
            return CheckResult(False, error)
        if is_placeholder(got) or (isinstance(got, float) and math.isnan(got)):
            return CheckResult(
                False,
                f"so far it returns {'...' if got is ... else repr(got)}: return the int k of the floor rule for "
                f"a block whose largest magnitude is amax ({f.name} elements)",
                todo=True,
            )
        if isinstance(got, bool) or not isinstance(got, (int, float)) or got != want:
            hint = ""
            if isinstance(got, (int, float)) and not isinstance(got, bool) and math.isfinite(got):
                if got == want + 1:
                    hint = " (one too large: that is the round-up rule, or floor of log2(amax / max))"
                elif got == want + f.emax:
                    hint = f" (subtract the element format's largest exponent, {f.emax} for {f.name})"
            return CheckResult(False, f"fn({amax!r}) gave {got!r}{hint}")
    return CheckResult(True, f"floor(log2(amax)) - {f.emax} for {len(_AMAXES)} amaxes, 448 and 500 included")


def check_sr_probability(p) -> CheckResult:
    """Exercise: the probability that stochastic rounding sends float32(1 + 1e-4) up to bf16's next value
    above 1 (1 + 2**-7)."""
    want = (float(torch.tensor(1 + 1e-4, dtype=torch.float32)) - 1.0) / 2.0**-7
    if is_placeholder(p):
        return CheckResult(False, "replace None with your probability, a number in [0, 1]", todo=True)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p):
        return CheckResult(False, f"answer with a probability (a number in [0, 1]), got {p!r}")
    if not 0 <= p <= 1:
        return CheckResult(False, f"{p!r} is not a probability")
    if same_value(p, want) or abs(p - want) <= 1e-6:
        return CheckResult(True, f"{want:.6f}: the distance to 1 over bf16's gap 2**-7 above 1")
    if abs(p - 1e-4) < 1e-6:
        return CheckResult(False, "that is the distance itself; divide it by the gap between the two bf16 neighbours")
    return CheckResult(
        False,
        f"{p!r} is {off_by(p, want).split(' by ')[0]}: which two bf16 values surround 1 + 1e-4, and how far apart "
        "are they?",
    )
