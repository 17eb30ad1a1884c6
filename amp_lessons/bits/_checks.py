"""Checkers for lesson 01's exercises (largest finite value, ulp, decoding bits, choosing a format)."""

from __future__ import annotations

import math

import torch

from .. import _emulate, formats
from .._exercise import attempt, calls_seen, correct, exercise, finish, not_yet, placeholder
from .._validate import positive
from ..checks import CheckResult, off_by, same_value

__all__ = ["check_decode_bits", "check_format_choice", "check_max_finite", "check_ulp"]


# (exponent_bits, mantissa_bits) pairs that cover wide, narrow and degenerate IEEE formats
_IEEE_CASES = [(5, 10), (8, 7), (8, 23), (5, 2), (8, 10), (3, 4), (2, 1), (6, 0)]

_ENGINE_FILES = {formats.__file__, _emulate.__file__}


# the engine's functions that find a value's neighbours (reading a format's constants is allowed in ulp)
_NEIGHBOUR_FUNCTIONS = frozenset(
    {"to_bits", "from_bits", "quantize", "quantize_emulated", "decompose", "compose", "representable_values"}
)


def _own_work(fn, *args, what: str, only=None):
    """``fn(*args)``, ended with "Not yet" if it called the formats engine (or the functions in ``only``)."""
    with calls_seen(lambda code: code.co_filename in _ENGINE_FILES and (only is None or code.co_name in only)) as used:
        got = attempt(fn, *args)
    if used:
        finish(
            not_yet(
                f"{what} calls the course's formats engine (amp_lessons.formats): that looks the answer up; "
                "compute it from the format's widths yourself"
            )
        )
    return got


def _element_format(fmt):
    f = formats.get_format(fmt)
    if f.encoding in formats.SCALE_ENCODINGS:
        raise ValueError(
            f"fmt={f.name!r} is a scale format (no sign, no zero, powers of two only): use an element format, one "
            f"of {', '.join(formats.FORMATS)}"
        )
    return f


@exercise
def check_max_finite(fn) -> CheckResult:
    """Exercise: ``fn(exponent_bits, mantissa_bits)`` returns the largest finite value of the IEEE format
    with those widths."""
    for e, m in _IEEE_CASES:
        want = formats.FloatFormat(f"e{e}m{m}", e, m).max
        got = _own_work(fn, e, m, what="max_finite")
        placeholder(
            got,
            f"write max_finite(exponent_bits, mantissa_bits): it returns {got!r} so far. The largest finite "
            "value has the largest exponent field that is not all ones, and an all-ones mantissa",
        )
        if not same_value(got, want):
            if same_value(got, math.ldexp(2 - 2.0**-m, 2 ** (e - 1))):
                hint = "the all-ones exponent is inf/NaN, so the largest exponent field is 2**e - 2"
            elif same_value(got, math.ldexp(1.0, 2 ** (e - 1))):
                hint = "the mantissa of the largest value is all ones: 1.11...1 in binary = 2 - 2**-m"
            else:
                hint = (
                    "the largest finite value has the largest exponent field that is not all ones, "
                    "and an all-ones mantissa"
                )
            return not_yet(f"for e={e}, m={m} you returned {got!r}: {off_by(got, want)}. Hint: {hint}", hide=want)
    return correct(
        f"your formula gives the right max for all {len(_IEEE_CASES)} formats tried, from fp32 to 4-bit formats"
    )


@exercise
def check_ulp(fn, fmt: str = "bf16") -> CheckResult:
    """Exercise: ``fn(x)`` returns the gap from positive ``x`` (a value of ``fmt``) to the next larger value."""
    f = _element_format(fmt)
    probes = [1.0, 1.5, 3.0, 1000.0, f.max / 2, f.smallest_normal, f.smallest_normal * 2, f.smallest_subnormal * 3]
    probes += [f.smallest_normal * (1 - f.eps), f.max * (1 - f.eps)]  # the largest subnormal, the top binade
    rounded = formats.quantize(torch.tensor(probes, dtype=torch.float32), f).tolist()
    # positive values below max (max has no larger neighbour; 1000 saturates in a narrow format), each once
    values = list(dict.fromkeys(v for v in rounded if 0 < v < f.max))
    for x in values:
        nxt = formats.from_bits(formats.to_bits(torch.tensor([x]), f) + 1, f).item()
        want = nxt - x
        got = _own_work(fn, x, what="ulp", only=_NEIGHBOUR_FUNCTIONS)
        placeholder(got, f"write ulp(x): the gap from x to the next larger {f.name} value; it returns {got!r} so far")
        if not same_value(got, want):
            hint = (
                "below the smallest normal the gap stops shrinking: every subnormal is the same distance apart"
                if x < f.smallest_normal
                else "the gap depends only on the power of two at or below x and on the number of mantissa bits"
            )
            return not_yet(
                f"ulp({x!r}) in {f.name}: you returned {got!r}: {off_by(got, want)}. Hint: {hint}", hide=want
            )
    return correct(f"right gap for all {len(values)} {f.name} values tried, subnormals included")


@exercise
def check_decode_bits(answer, code: int, fmt: str = "fp8_e4m3") -> CheckResult:
    """Exercise: decode the bit pattern ``code`` of ``fmt`` by hand; ``answer`` is the value."""
    f = _element_format(fmt)
    if isinstance(code, bool) or not isinstance(code, int):
        raise TypeError(f"code must be an int in 0..{2**f.bits - 1} for {f.name}, got {code!r} ({type(code).__name__})")
    if not 0 <= code < 2**f.bits:
        raise ValueError(f"code must be an int in 0..{2**f.bits - 1} for {f.name}, got {code!r}")
    want = formats.from_bits(torch.tensor([code]), f).item()
    placeholder(answer, f"replace `...` with your value for 0b{code:0{f.bits}b}")
    if same_value(answer, want):
        return correct(f"0b{code:0{f.bits}b} in {f.name} is {want!r}")
    s, e, m = (int(v) for v in formats.decompose(torch.tensor([want]), f))
    return not_yet(
        f"{answer!r} is not it. Hint: sign {s}, exponent field {e} "
        f"(minus bias {f.bias}), mantissa field {m} of {2**f.mantissa_bits}",
        hide=want,
    )


@exercise
def check_format_choice(name, low: float, high: float, max_rel_error: float) -> CheckResult:
    """Exercise: pick the format with the fewest bits that holds every magnitude from ``low`` to
    ``high`` as a normal number with relative rounding error at most ``max_rel_error``."""
    low, high = positive(low, "low"), positive(high, "high")
    max_rel_error = positive(max_rel_error, "max_rel_error")
    if not (0 < low < high) or not 0 < max_rel_error < 1:
        raise ValueError(f"need 0 < low < high and 0 < max_rel_error < 1, got {low}, {high}, {max_rel_error}")

    def fits(f):
        return f.smallest_normal <= low and f.max >= high and f.unit_roundoff <= max_rel_error

    if not any(fits(g) for g in formats.FORMATS.values()):
        raise ValueError(
            f"no format of the course holds low={low:g} .. high={high:g} with max_rel_error={max_rel_error:g}: "
            "the exercise has no answer; widen max_rel_error or narrow the range (fp32 holds 1.2e-38 .. 3.4e+38 "
            "within 6e-08)"
        )
    placeholder(
        name,
        f"replace `...` with the name of a format (one of {', '.join(formats.FORMATS)}) that holds "
        f"{low:g}..{high:g} with relative error at most {max_rel_error:g}",
    )
    if not isinstance(name, str) or name not in formats.FORMATS:
        return not_yet(f"{name!r} is not a format name; choose one of {', '.join(formats.FORMATS)}")

    f = formats.FORMATS[name]
    if f.max < high:
        return not_yet(f"{name} overflows: its max is {f.max:g} < {high:g}")
    if f.smallest_normal > low:
        return not_yet(f"{name} cannot hold {low:g} as a normal number (smallest normal {f.smallest_normal:g})")
    if f.unit_roundoff > max_rel_error:
        return not_yet(f"{name} rounds with relative error up to {f.unit_roundoff:g} > {max_rel_error:g}")
    fewest = min(g.bits for g in formats.FORMATS.values() if fits(g))
    if f.bits > fewest:
        return not_yet(f"{name} works, but a {fewest}-bit format works too")
    return correct(f"{name} ({f.bits} bits) holds {low:g}..{high:g} with relative error <= {f.unit_roundoff:g}")
