"""Checkers for lesson 02's exercises (the course's TF32 matmul model, the bf16/TF32 error ratio)."""

from __future__ import annotations

import math
import sys
from contextlib import contextmanager

import torch

from .. import formats
from .._exercise import attempt, correct, exercise, not_yet, placeholder, your_turn
from ..checks import CheckResult, is_placeholder, off_by
from ..tf32.experiments import emulated_matmul, error_vs_k

__all__ = [
    "check_error_ratio",
    "check_tf32_matmul",
]


@contextmanager
def _calls_to(*functions):
    """Record, in the yielded set, which of ``functions`` (Python functions) were called inside the block,
    however the caller got hold of them (an imported name, the module attribute, a wrapper)."""
    codes = {f.__code__: f.__name__ for f in functions}
    seen: set = set()
    previous = sys.getprofile()

    def profiler(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            seen.add(codes[frame.f_code])

    sys.setprofile(profiler)
    try:
        yield seen
    finally:
        sys.setprofile(previous)


def _rounding_inputs() -> torch.Tensor:
    """float32 values for a TF32 rounding: random normals of both signs, zeros, and exact ties (the 13 dropped
    bits 1000000000000b) whose kept last bit is even and odd, so ties-to-even and ties-away differ."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4096, generator=g) * torch.exp2(torch.randint(-20, 20, (4096,), generator=g).float())
    bits = x.view(torch.int32)
    bits[::4] = (bits[::4] & ~0x3FFF) | 0x1000  # ties, kept last bit 0
    bits[1::4] = (bits[1::4] & ~0x3FFF) | 0x3000  # ties, kept last bit 1
    x[2::64] = 0.0
    return x


def _check_rounding(rounding) -> CheckResult | str | None:
    """None if ``rounding(x)`` rounds float32 to TF32 as the course's model does, "unchanged" if it returns x as it
    is (the starter); otherwise the feedback."""
    x = _rounding_inputs()
    want = formats.quantize(x, "tf32", "nearest_even")
    with _calls_to(formats.quantize, emulated_matmul) as used:
        got = attempt(rounding, x.clone(), prefix="round_to_tf32: ")
    if used:
        return not_yet(
            f"round_to_tf32 calls the course's {sorted(used)[0]}: write the rounding yourself, on the bits "
            "(x.view(torch.int32)): add what rounds the 13 dropped bits to nearest, then clear them"
        )
    if not isinstance(got, torch.Tensor) or got.shape != x.shape or got.dtype != torch.float32:
        what = f"{got.dtype} {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
        return not_yet(f"round_to_tf32 must return a float32 tensor of x's shape, got {what}")
    if torch.equal(got, x):
        return "unchanged"  # the starter's: judged with the matmul below
    if torch.equal(got, want):
        return None
    low = (got.view(torch.int32) & 0x1FFF) != 0
    if low.any():
        return not_yet(
            f"round_to_tf32 leaves bits below TF32's 10 mantissa bits in {int(low.sum())} of {x.numel()} values: "
            "the 13 low bits of each result must be 0"
        )
    for rule, text in (
        (
            "toward_zero",
            "you cut the 13 bits off (toward zero); round to nearest: add half a unit of the kept last bit (0x1000) before clearing them",
        ),
        (
            "nearest_away",
            "ties go away from zero in yours; the H100 measured in this lesson rounds ties to even (the kept last "
            "bit decides whether a tie rounds up)",
        ),
    ):
        if torch.equal(got, formats.quantize(x, "tf32", rule)):
            return not_yet(f"round_to_tf32: {text}")
    ties = ((x.view(torch.int32) & 0x1FFF) == 0x1000) & (got != want)
    if ties.any():
        return not_yet(
            f"round_to_tf32 rounds {int(ties.sum())} exact ties wrongly: to even means a tie rounds up only when "
            "the kept last bit (bit 13) is 1"
        )
    n = int((got != want).sum())
    return not_yet(f"round_to_tf32 differs from round-to-nearest-even in {n} of {x.numel()} values")


@exercise
def check_tf32_matmul(fn, rounding=None) -> CheckResult:
    """Exercise: ``fn(a, b)`` is the course's model of a TF32 matmul of float32 matrices: both
    inputs rounded to TF32 to nearest with ties to even (what an H100 was measured to do: the reference
    ``tf32_rounding_per_op``), products summed in IEEE fp32. Compared bit for bit with the course's model (not
    with a tensor core, whose summation is not IEEE fp32) on random inputs that include exact ties.

    ``rounding``: the learner's own ``round_to_tf32(x)``, written on the bits. Given, it is checked on its own
    (exact ties of both parities, both signs, zeros) against the formats engine, and neither it nor ``fn`` may
    call the course's ``formats.quantize`` or ``tf32.emulated_matmul``."""
    bad = None
    if rounding is not None:
        if is_placeholder(rounding) or not callable(rounding):
            return not_yet("pass your rounding function itself: check_tf32_matmul(my_tf32_matmul, round_to_tf32)")
        bad = _check_rounding(rounding)
        if isinstance(bad, CheckResult):
            return bad
    rounding_unchanged = rounding is not None and bad == "unchanged"

    g = torch.Generator().manual_seed(7)
    a = torch.randn(64, 96, generator=g)
    b = torch.randn(96, 48, generator=g)
    # plant exact ties of TF32 (the 13 dropped bits are 1000000000000b) so the rounding rule shows
    a.view(torch.int32)[:, ::3] = (a.view(torch.int32)[:, ::3] & ~0x1FFF) | 0x1000
    b.view(torch.int32)[::3] = (b.view(torch.int32)[::3] & ~0x1FFF) | 0x1000
    want = emulated_matmul(a, b, "tf32", "nearest_even")
    with _calls_to(formats.quantize, emulated_matmul) as used:
        got = attempt(fn, a.clone(), b.clone())
    if rounding is not None and used:
        return not_yet(
            f"my_tf32_matmul calls the course's {sorted(used)[0]}: use your own round_to_tf32 on both inputs, then "
            "multiply in fp32"
        )
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return not_yet(
            f"expected a tensor of shape {tuple(want.shape)}, got {type(got).__name__} "
            f"{tuple(getattr(got, 'shape', ()))}"
        )
    if got.dtype == torch.float32 and torch.equal(got, a @ b) and rounding is not None and not rounding_unchanged:
        return not_yet(
            "your round_to_tf32 is right; my_tf32_matmul still multiplies the inputs as they are: round both with it, "
            "then multiply in fp32"
        )
    if got.dtype == torch.float32 and torch.equal(got, a @ b):
        return your_turn(
            "so far this is the plain fp32 product: round both inputs as the course's TF32 model does "
            + (
                "(quantize to 'tf32', to nearest with ties to even), then multiply in fp32"
                if rounding is None
                else "(to nearest with ties to even, with your round_to_tf32 written on the bits), then multiply "
                "in fp32"
            )
        )
    if got.dtype != torch.float32:
        return not_yet(f"the result of a TF32 matmul is float32, yours is {got.dtype}")
    if rounding_unchanged:
        return not_yet(
            "round_to_tf32 still returns x as it is: write the rounding there, then use it in my_tf32_matmul"
        )
    if torch.equal(got, want):
        return correct(
            "matches the course's TF32 model bit for bit: inputs rounded to TF32 (ties to even), fp32 products"
        )
    for rounding in ("nearest_away", "toward_zero"):
        if torch.equal(got, emulated_matmul(a, b, "tf32", rounding)):
            return not_yet(
                f"you rounded the inputs with {rounding!r}; the H100 measured in this lesson rounds its TF32 inputs "
                "to nearest with ties to even, and so does the course's model (the exact ties in these inputs show "
                "the difference)"
            )
    one_side = [formats.quantize(a, "tf32", "nearest_even") @ b, a @ formats.quantize(b, "tf32", "nearest_even")]
    if any(torch.equal(got, c) for c in one_side):
        return not_yet("only one input was rounded: TF32 math rounds both")
    rel = ((got.double() - want.double()).abs().max() / want.double().abs().mean()).item()
    return not_yet(
        f"differs from the course's TF32 model (relative difference {rel:.2g}); "
        + (
            "hint: round each input with quantize (format 'tf32', to nearest with ties to even), then multiply in fp32"
            if rounding is None
            else "hint: round each input with your round_to_tf32 (checked above: it is right), then multiply in fp32"
        )
    )


@exercise
def check_error_ratio(answer, low: str = "bf16", high: str = "tf32") -> CheckResult:
    """Exercise: predict how many times larger the matmul error is with ``low`` inputs than with
    ``high`` inputs (both accumulated in fp32). Checked against a measurement made now (within a
    factor of 1.5 of the measured ratio)."""

    fl, fh = formats.get_format(low), formats.get_format(high)
    placeholder(answer, "replace `...` with your predicted ratio (a number)")
    try:
        answer = float(answer)
    except (TypeError, ValueError):
        return not_yet(f"the answer must be a number, got {answer!r}")
    data = error_vs_k([256, 1024], (fl, fh), m=96, n=96, seed=3)
    measured = sum(data.rms[fl.name]) / sum(data.rms[fh.name])
    hint = (
        f"each input's relative rounding error is about eps/2, so the error scales with eps: "
        f"{fl.name} eps = 2**-{fl.mantissa_bits}, {fh.name} eps = 2**-{fh.mantissa_bits}"
    )
    if answer <= 0 or not math.isfinite(answer):
        return not_yet(f"{answer!r} cannot be a ratio of errors. Hint: {hint}", hide=(measured, fl.eps / fh.eps))
    if 1 / 1.5 <= answer / measured <= 1.5:
        return correct(
            f"measured now: {measured:.3g}; the eps ratio is "
            f"2**{fh.mantissa_bits - fl.mantissa_bits} = {fl.eps / fh.eps:g}"
        )
    return not_yet(
        f"{answer:g} is {off_by(answer, measured).split(' by ')[0]}: not within a factor 1.5 of the ratio "
        f"measured now. Hint: {hint}",
        hide=(measured, fl.eps / fh.eps),
    )
