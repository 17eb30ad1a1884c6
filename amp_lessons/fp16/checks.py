"""Checkers for lesson 03's exercises (where a running sum stalls, a lost update)."""

from __future__ import annotations

import math

import torch

from .. import formats
from .._exercise import attempt, correct, exercise, not_yet, placeholder
from .._validate import finite
from ..checks import CheckResult, off_by, same_value
from ..fp16.experiments import running_sum, update_survives

__all__ = [
    "check_lost_update",
    "check_stall_value",
]


@exercise
def check_stall_value(answer, v: float = 1.0, fmt: str = "fp16") -> CheckResult:
    """Exercise: the value at which a true ``fmt`` running sum of copies of ``v`` stops growing.
    Checked against a running sum done now with the formats engine."""

    f = formats.get_format(fmt)
    v = finite(v, "v")
    if v == 0:
        raise ValueError("v=0 is not allowed: a sum of zeros never grows; v must be a finite non-zero number")
    placeholder(answer, "replace `...` with the value where the sum gets stuck")
    n = 2 ** (f.mantissa_bits + 3)
    sums = running_sum(torch.full((n,), float(v)), f)
    stuck = (sums[1:] == sums[:-1]).nonzero()
    if len(stuck) == 0:
        raise ValueError(f"a {f.name} running sum of {v} does not stall within {n} terms")
    want = sums[int(stuck[0])].item()
    if same_value(answer, want):
        return correct(
            f"{want:g}: there the gap between {f.name} neighbours is {2 * v:g}, so adding "
            f"{v:g} is a tie that rounds back to the even neighbour"
        )
    miss = off_by(answer, want)
    where = (
        " (the sum is stuck before it gets there)"
        if miss.startswith("too large")
        else " (there the sum still grows)"
        if miss.startswith("too small")
        else ""
    )
    return not_yet(
        f"{answer!r} is {miss.split(' by ')[0]}{where}. Hint: find where the gap between neighbours "
        f"(2**(exponent - {f.mantissa_bits})) reaches {2 * v:g}",
        hide=want,
    )


@exercise
def check_lost_update(fn, fmt: str = "fp16") -> CheckResult:
    """Exercise: ``fn(w)`` returns the threshold below which an update ``u`` to a positive weight
    ``w`` (a normal value of ``fmt``, not a power of two) is lost: ``w - u`` rounds back to ``w``
    for ``u`` below it and changes for ``u`` above it. Checked by rounding ``w - u`` just below
    and just above the learner's threshold."""

    f = formats.get_format(fmt)
    ws = formats.quantize(torch.tensor([1.5, 3.0, 1000.0, 0.1, 3e-3, 60000.0]), f).tolist()
    ws = [w for w in ws if w <= f.max and w >= f.smallest_normal and math.frexp(w)[0] != 0.5]
    for w in ws:
        got = attempt(fn, w)
        placeholder(
            got,
            f"write smallest_update(w): the threshold below which an update to w is lost in {f.name}; "
            f"it returns {got!r} so far",
        )
        try:
            t = float(got)
        except (TypeError, ValueError):
            return not_yet(f"smallest_update({w!r}) returned {got!r}; expected a number")
        if not (t > 0 and math.isfinite(t)):
            return not_yet(f"smallest_update({w!r}) returned {got!r}; expected a positive number")
        below, above = t * (1 - 1e-3), t * (1 + 1e-3)
        if update_survives(w, below, f) or not update_survives(w, above, f):
            half_gap = 2.0 ** (math.frexp(w)[1] - 2 - f.mantissa_bits)
            return not_yet(
                f"for w = {w!r} your threshold {t:g} is {off_by(t, half_gap)}. Hint: an update u is lost while "
                f"w - u is nearer to w than to its {f.name} neighbour below",
                hide=half_gap,
            )
    return correct(
        f"right for all {len(ws)} weights tried: half the gap between neighbours, "
        f"(2**(exponent - {f.mantissa_bits})) / 2"
    )
