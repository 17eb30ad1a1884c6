"""Exercise checkers of the microscaling lesson: each returns a CheckResult and never raises on an answer."""

from __future__ import annotations

import math

import torch

from ..checks import CheckResult, call_learner, is_placeholder, off_by, same_value
from .key_code import MX_ELEMENTS

__all__ = ["check_rceil_shared_exponent", "check_sr_probability"]

# Block maxima (float32) that tell the mistakes apart: the lesson's 470, an exact fit (448 = max * 2**0 and
# max * 2**10), the float32 number just above max * 2**10 (float32's log2 rounds its log to exactly 10), small and
# large amaxes, and 1.5 * 2**-125, whose scale would lie below e8m0's smallest, 2**-127.
_NEAR = float(torch.nextafter(torch.tensor(448.0 * 2**10), torch.tensor(math.inf)))
_AMAXES = (470.0, 448.0, 449.0, 448.0 * 2**10, _NEAR, 1.0, 0.01, 3.0e5, 2.0**-100, 1.5 * 2.0**-125, 3.0e38)
_FORMATS = ("fp8_e4m3", "fp4_e2m1")


def _exact_rceil(amax: float, max_elem: float, clamp: bool = True) -> int:
    """The smallest k with amax / 2**k <= max_elem, in exact arithmetic (float64 products by powers of two)."""
    k = math.ceil(math.log2(amax / max_elem))
    while amax > math.ldexp(max_elem, k):
        k += 1
    while amax <= math.ldexp(max_elem, k - 1):
        k -= 1
    return max(-127, min(127, k)) if clamp else k


def _mistakes(amaxes: list[float], fmt: str) -> dict[str, list[int]]:
    """What some wrong rules give for ``amaxes``, each with the hint it deserves."""
    _, _, emax, max_elem = MX_ELEMENTS[fmt]
    clamp = lambda k: max(-127, min(127, k))  # noqa: E731
    t = torch.tensor(amaxes, dtype=torch.float32)
    f32_log = torch.ceil(torch.log2(t / max_elem)).int().clamp(-127, 127).tolist()
    right = [_exact_rceil(a, max_elem) for a in amaxes]
    other = {} if fmt == "fp8_e4m3" else {
        f"that is the rule for fp8_e4m3's max 448, but these are {fmt} elements (max {max_elem:g}): read the max "
        "from MX_ELEMENTS[element_format]": [_exact_rceil(a, 448.0) for a in amaxes]
    }  # fmt: skip
    return {
        **other,
        "that is the spec's floor rule (the key code's floor_shared_exponent): where amax's mantissa is large, "
        "amax / 2**k lies above the max and saturates; round up instead": [
            clamp(math.frexp(a)[1] - 1 - emax) for a in amaxes
        ],
        "one too large where amax / max_elem is exactly a power of two (amax = max_elem * 2**j fits with k = j): "
        "floor(...) + 1 is not ceil(...)": [clamp(math.floor(math.log2(a / max_elem)) + 1) for a in amaxes],
        "divide by the element format's max (MX_ELEMENTS[element_format][3]), not by 2**emax_elem: the largest "
        "element is max_elem, e.g. 448 = 1.75 * 2**8 for fp8_e4m3": [
            clamp(math.ceil(math.log2(a)) - emax) for a in amaxes
        ],
        "not clamped: e8m0 holds the scales 2**-127 .. 2**127, so k must stay in -127..127": [
            _exact_rceil(a, max_elem, clamp=False) for a in amaxes
        ],
        "that is the stored E8M0 code (k + 127): return the exponent k itself": [k + 127 for k in right],
        "the sign is flipped: the block is divided by 2**k, so a block larger than max_elem needs a positive k": [
            -k for k in right
        ],
        "float32's log2 rounds: just above max_elem * 2**10 the log is 10.0000001, which float32 rounds to exactly "
        "10, so ceil gives 10 and the block saturates; torch.frexp reads the exponent exactly (as the floor rule "
        "does)": f32_log,
    }


def _as_exponents(got, shape) -> tuple[list[int] | None, str]:
    """The learner's k as a list of ints, or (None, what is wrong with it)."""
    if not isinstance(got, torch.Tensor):
        return None, (
            f"it returned {type(got).__name__} {got!r}: return a tensor shaped like amax (one k per block), as the "
            "key code's floor_shared_exponent does"
        )
    if tuple(got.shape) != tuple(shape):
        return None, f"it returned a tensor of shape {tuple(got.shape)}: return one k per block, amax's shape {shape}"
    v = got.detach().double().flatten()
    if not bool(torch.isfinite(v).all()) or not bool((v == v.round()).all()):
        return None, f"k must be whole numbers (a power-of-two scale 2**k), got {got.flatten()[:4].tolist()} ..."
    return [int(k) for k in v.tolist()], ""


def check_rceil_shared_exponent(fn) -> CheckResult:
    """Exercise: ``fn(amax, element_format) -> k``, the round-up ("RCEIL") rule of cuBLAS and torchao: the
    smallest k for which each block's largest magnitude ``amax`` (a float32 tensor of shape (blocks, 1), positive
    and finite) divided by 2**k is at most the element format's max, clamped to e8m0's -127..127. It must plug into
    the lesson's ``mx_block_quantize(x, element_format, shared_exponent=fn)``."""
    for fmt in _FORMATS:
        max_elem = MX_ELEMENTS[fmt][3]
        amax = torch.tensor(_AMAXES, dtype=torch.float32).reshape(-1, 1)
        values = [float(a) for a in amax.flatten()]
        got, error = call_learner(fn, amax.clone(), fmt)
        if error:
            return CheckResult(False, error)
        if is_placeholder(got):
            return CheckResult(
                False,
                "so far it returns nothing: return k, the exponent of each block's scale, as a tensor shaped like amax",
                todo=True,
            )
        ks, problem = _as_exponents(got, tuple(amax.shape))
        if ks is None:
            return CheckResult(False, problem)
        want = [_exact_rceil(a, max_elem) for a in values]
        if ks == want:
            continue
        for hint, wrong in _mistakes(values, fmt).items():
            if ks == wrong:
                return CheckResult(False, f"for {fmt} elements: {hint}")
        i = next(i for i, (k, w) in enumerate(zip(ks, want)) if k != w)
        a, k = values[i], ks[i]
        where = f"for {fmt} elements (max {max_elem:g}) and amax = {a!r}, it gave k = {k}"
        if not -127 <= k <= 127:
            return CheckResult(False, f"{where}: e8m0 holds only the scales 2**-127 .. 2**127 (clamp k)")
        if a > math.ldexp(max_elem, k):
            return CheckResult(
                False, f"{where}: amax / 2**k = {math.ldexp(a, -k):.9g} is above {max_elem:g}, so it would saturate"
            )
        return CheckResult(
            False,
            f"{where}: too large, k - 1 fits the block too (amax / 2**(k-1) = {math.ldexp(a, 1 - k):.9g} <= "
            f"{max_elem:g}), and the smallest k keeps the most precision",
        )
    return CheckResult(
        True,
        f"the smallest power of two that fits each block under the element max, for {len(_AMAXES)} amaxes "
        f"(exact fits, the float32 number just above one, and e8m0's lower clamp) and {' and '.join(_FORMATS)}",
    )


def check_sr_probability(p) -> CheckResult:
    """Exercise: the probability that stochastic rounding sends float32(1 + 1e-4) up to bf16's next value
    above 1 (1 + 2**-7)."""
    x = float(torch.tensor(1 + 1e-4, dtype=torch.float32))
    want = (x - 1.0) / 2.0**-7
    if is_placeholder(p):
        return CheckResult(False, "replace None with your probability, a number in [0, 1]", todo=True)
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not math.isfinite(p):
        return CheckResult(False, f"answer with a probability (a number in [0, 1]), got {p!r}")
    if not 0 <= p <= 1:
        return CheckResult(False, f"{p!r} is not a probability")
    if same_value(p, want) or abs(p - want) <= 1e-6:
        return CheckResult(True, f"{want:.6f}: float32(1 + 1e-4)'s distance to 1 over bf16's gap 2**-7 above 1")
    if abs(p - 1e-4) < 1e-6:
        return CheckResult(False, "that is the distance itself; divide it by the gap between the two bf16 neighbours")
    if abs(p - 1e-4 / 2.0**-7) < 1e-9:
        return CheckResult(
            False,
            "the gap is right, but the value rounded to bf16 is float32(1 + 1e-4), not 1 + 1e-4: float32 has "
            "already rounded the sum (to a multiple of 2**-23), so its distance to 1 is not exactly 1e-4. "
            "Compute it, e.g. with torch.tensor(1 + 1e-4, dtype=torch.float32)",
        )
    if abs(p - 1e-4 / 2.0**-8) < 1e-9 or abs(p - (x - 1.0) / 2.0**-8) < 1e-9:
        return CheckResult(False, "too large by a factor of 2: bf16's gap just above 1 is 2**-7 (7 stored bits)")
    return CheckResult(
        False,
        f"{p!r} is {off_by(p, want).split(' by ')[0]}: which two bf16 values surround float32(1 + 1e-4), how far "
        "apart are they, and how far is float32(1 + 1e-4) from the lower one?",
    )
