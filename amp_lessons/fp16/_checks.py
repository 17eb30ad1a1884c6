"""Checkers for lesson 03's exercises (compensated summation in fp16, where a running sum stalls, a lost update)."""

from __future__ import annotations

import math
from pathlib import Path

import torch

from .. import formats
from .._exercise import attempt, calls_seen, correct, exercise, not_yet, placeholder
from .._validate import finite
from ..checks import CheckResult, off_by, same_value
from ..fp16._experiments import kahan_sum, running_sum

__all__ = ["check_kahan16", "check_stall_value"]


@exercise
def check_stall_value(answer, v: float = 1.0, fmt: str = "fp16") -> CheckResult:
    """Exercise: the value at which a ``fmt`` running sum of copies of ``v`` stops growing."""
    f = formats.get_format(fmt)
    v = finite(v, "v")
    if v == 0:
        raise ValueError("v=0 is not allowed: a sum of zeros never grows; v must be a finite non-zero number")
    held = formats.quantize(torch.tensor([v]), f).item()
    if held == 0 or not math.isfinite(held):
        raise ValueError(
            f"v={v!r} is not allowed: in {f.name} it rounds to {held:g}; v must be a non-zero number that {f.name} "
            f"holds as a finite value (from {f.smallest_subnormal:g} to {f.max:g} in magnitude)"
        )
    placeholder(answer, "replace `...` with the value where the sum gets stuck")
    n = 2 ** (f.mantissa_bits + 3)
    sums = running_sum(torch.full((n,), float(v)), f)
    stuck = (sums[1:] == sums[:-1]).nonzero()
    if len(stuck) == 0:
        raise ValueError(f"a {f.name} running sum of {v} does not stall within {n} terms")
    want = sums[int(stuck[0])].item()
    if same_value(answer, want):
        return correct(
            f"{want:g}: there the gap between {f.name} neighbours is {2 * abs(v):g}, so adding "
            f"{v:g} is a tie that rounds back to the even neighbour"
        )
    miss = off_by(answer, want).split(" by ")[0]
    where = {"too large": " (the sum is stuck before it gets there)", "too small": " (there the sum still grows)"}
    return not_yet(
        f"{answer!r} is {miss}{where.get(miss, '')}. Hint: find where the gap between neighbours "
        f"(2**(exponent - {f.mantissa_bits})) reaches {2 * abs(v):g}",
        hide=want,
    )


_PACKAGE = Path(__file__).resolve().parent.parent
_SUMMERS = {"kahan_sum", "kahan_add", "running_sum", "running_sums_of_copies", "sum_copies"}


def _kahan_inputs() -> dict[str, torch.Tensor]:
    """fp16 addends that break a plain fp16 running sum (large then small, near 65504, subnormal, random of both
    signs), then the edges: no values, and one value."""
    g = torch.Generator().manual_seed(3)
    mixed = torch.randn(600, generator=g) * torch.exp2(torch.randint(-8, 6, (600,), generator=g).float())
    cases = {
        "0.01 x 1000": torch.full((1000,), 0.01),
        "2048, then 0.5 x 1000": torch.cat([torch.tensor([2048.0]), torch.full((1000,), 0.5)]),
        "60000, then 1.0 x 1000": torch.cat([torch.tensor([60000.0]), torch.full((1000,), 1.0)]),
        "49152, then 15.5 x 1000 (up to near 65504)": torch.cat([torch.tensor([49152.0]), torch.full((1000,), 15.5)]),
        "1.0, then 2**-14 x 1024": torch.cat([torch.tensor([1.0]), torch.full((1024,), 2.0**-14)]),
        "2**-4, then the subnormal 2**-20 x 1000": torch.cat([torch.tensor([2.0**-4]), torch.full((1000,), 2.0**-20)]),
        "-2048, then -0.5 x 1000": torch.cat([torch.tensor([-2048.0]), torch.full((1000,), -0.5)]),
        "600 random values of both signs": mixed,
        "no values (an empty tensor)": torch.empty(0),
        "one value, 65504": torch.tensor([65504.0]),
    }
    return {name: v.to(torch.float16) for name, v in cases.items()}


_KAHAN_HINTS = (
    "keep a second fp16 variable with what the last addition lost: (new total - old total) - what you meant to add",
    "take it off the next addend before adding that addend to the total",
    "start the total and the compensation at an fp16 zero and loop over every value: no values sum to 0, one value "
    "to itself",
)


def _hints(*hints: str) -> str:
    return "Hints: " + "; ".join(f"({i}) {h}" for i, h in enumerate(hints, start=1))


def _as_float(got):
    """The learner's sum as a float, or None."""
    if isinstance(got, torch.Tensor):
        return float(got.reshape(-1)[0]) if got.numel() == 1 else None
    if isinstance(got, bool):
        return None
    try:
        return float(got)
    except (TypeError, ValueError, OverflowError):
        return None


@exercise
def check_kahan16(fn) -> CheckResult:
    """Exercise: ``fn(values)`` sums a 1-D ``torch.float16`` tensor by Kahan summation with every operation in
    fp16; checked bit for bit against :func:`amp_lessons.fp16.kahan_sum`. Calling the course's summation functions is
    refused."""
    hint = _hints(*_KAHAN_HINTS)
    cases = _kahan_inputs()
    for name, values in cases.items():
        with calls_seen(lambda c: c.co_name in _SUMMERS and c.co_filename.startswith(str(_PACKAGE))) as called:
            got = attempt(fn, values.clone(), call="kahan16(values)")
        if values.numel() > 1:  # an empty sum's None is a missing case, not the untouched starter
            placeholder(got, f"write kahan16(values): the compensated fp16 sum of values; it returns {got!r} so far")
        if called:
            return not_yet(
                f"kahan16 calls the course's own {sorted(called)[0]}: write the loop yourself, with fp16 tensors"
            )
        v = _as_float(got)
        if v is None:
            more = f" {_hints(_KAHAN_HINTS[2])}" if values.numel() <= 1 else ""
            return not_yet(f"kahan16 returned {got!r} for {name}; expected a number (an fp16 scalar tensor).{more}")
        exact = float(values.double().sum())  # the exact sum of the fp16 addends (float64 holds it here)
        want = kahan_sum(values.float(), "fp16")
        if v == want:
            continue
        if values.numel() <= 1:
            what = "0 (the sum of no values)" if values.numel() == 0 else "that value itself"
            return not_yet(f"for {name}, kahan16 gave {v!r}; the sum must be {what}. {_hints(_KAHAN_HINTS[2])}")
        ulp = 2.0 ** (math.floor(math.log2(abs(exact))) - 10)
        naive = float(running_sum(values.float(), "fp16")[-1])
        rounded = float(torch.tensor(exact, dtype=torch.float64).to(torch.float16))
        if v == naive:
            why = (
                "that is what a plain fp16 running sum gives: the compensation is not fed back (or not kept), "
                f"so every addition still loses its low part ({abs(naive - exact) / ulp:.3g} ulps off the exact sum)"
            )
        elif v == rounded or v == float(values.sum()):
            why = (
                "that is the correctly rounded sum, which a sum in higher precision gives (torch.sum, or .float() "
                "along the way); here each operation must be an fp16 one, whose compensation cannot be that exact"
            )
        elif v != float(torch.tensor(v).to(torch.float16)):
            why = "that is not an fp16 number: keep the total and the compensation as fp16 tensors"
        else:
            why = f"that is {abs(v - exact) / ulp:.3g} ulps off the exact sum, and not what Kahan's fp16 steps give"
        return not_yet(f"for {name}, kahan16 gave {v!r}: {why}. {hint}", hide=(want,))
    shown = cases["2048, then 0.5 x 1000"]
    plain, exact = float(running_sum(shown.float(), "fp16")[-1]), float(shown.double().sum())
    return correct(
        f"bit for bit Kahan's algorithm in fp16 on all {len(cases)} inputs. On 2048 followed by a thousand 0.5s a "
        f"plain fp16 running sum ends at {plain:g} (0.5 is a quarter of the gap there); yours, like the exact sum, "
        f"at {kahan_sum(shown.float(), 'fp16'):g} (exact: {exact:g})"
    )
