"""Checkers for lesson 02's exercises (the course's TF32 matmul model, the bf16/TF32 error ratio)."""

from __future__ import annotations

import math

import torch

from .. import formats
from ..checks import CheckResult, call_learner, is_placeholder, off_by
from ..tf32.experiments import emulated_matmul, error_vs_k

__all__ = [
    "check_error_ratio",
    "check_tf32_matmul",
]


def check_tf32_matmul(fn) -> CheckResult:
    """Exercise: ``fn(a, b)`` is the course's model of a TF32 matmul of float32 matrices: both
    inputs rounded to TF32 to nearest with ties to even (what an H100 was measured to do: the reference
    ``tf32_rounding_per_op``), products summed in IEEE fp32. Compared bit for bit with the course's model (not
    with a tensor core, whose summation is not IEEE fp32) on random inputs that include exact ties."""

    g = torch.Generator().manual_seed(7)
    a = torch.randn(64, 96, generator=g)
    b = torch.randn(96, 48, generator=g)
    # plant exact ties of TF32 (the 13 dropped bits are 1000000000000b) so the rounding rule shows
    a.view(torch.int32)[:, ::3] = (a.view(torch.int32)[:, ::3] & ~0x1FFF) | 0x1000
    b.view(torch.int32)[::3] = (b.view(torch.int32)[::3] & ~0x1FFF) | 0x1000
    want = emulated_matmul(a, b, "tf32", "nearest_even")
    got, err = call_learner(fn, a.clone(), b.clone())
    if err:
        return CheckResult(False, err)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return CheckResult(
            False,
            f"expected a tensor of shape {tuple(want.shape)}, got {type(got).__name__} "
            f"{tuple(getattr(got, 'shape', ()))}",
        )
    if got.dtype == torch.float32 and torch.equal(got, a @ b):
        return CheckResult(
            False,
            "so far this is the plain fp32 product: round both inputs as the course's TF32 model does "
            "(quantize to 'tf32', to nearest with ties to even), then multiply in fp32",
            todo=True,
        )
    if got.dtype != torch.float32:
        return CheckResult(False, f"the result of a TF32 matmul is float32, yours is {got.dtype}")
    if torch.equal(got, want):
        return CheckResult(
            True, "matches the course's TF32 model bit for bit: inputs rounded to TF32 (ties to even), fp32 products"
        )
    for rounding in ("nearest_away", "toward_zero"):
        if torch.equal(got, emulated_matmul(a, b, "tf32", rounding)):
            return CheckResult(
                False,
                f"you rounded the inputs with {rounding!r}; the H100 measured in this lesson rounds its TF32 inputs "
                "to nearest with ties to even, and so does the course's model (the exact ties in these inputs show "
                "the difference)",
            )
    one_side = [formats.quantize(a, "tf32", "nearest_even") @ b, a @ formats.quantize(b, "tf32", "nearest_even")]
    if any(torch.equal(got, c) for c in one_side):
        return CheckResult(False, "only one input was rounded: TF32 math rounds both")
    rel = ((got.double() - want.double()).abs().max() / want.double().abs().mean()).item()
    return CheckResult(
        False,
        f"differs from the course's TF32 model (relative difference {rel:.2g}); "
        "hint: round each input with quantize (format 'tf32', to nearest with ties to even), then multiply in fp32",
    )


def check_error_ratio(answer, low: str = "bf16", high: str = "tf32") -> CheckResult:
    """Exercise: predict how many times larger the matmul error is with ``low`` inputs than with
    ``high`` inputs (both accumulated in fp32). Checked against a measurement made now (within a
    factor of 1.5 of the measured ratio)."""

    fl, fh = formats.get_format(low), formats.get_format(high)
    if is_placeholder(answer):
        return CheckResult(False, "replace `...` with your predicted ratio (a number)", todo=True)
    try:
        answer = float(answer)
    except (TypeError, ValueError):
        return CheckResult(False, f"the answer must be a number, got {answer!r}")
    data = error_vs_k([256, 1024], (fl, fh), m=96, n=96, seed=3)
    measured = sum(data["rms"][fl.name]) / sum(data["rms"][fh.name])
    hint = (
        f"each input's relative rounding error is about eps/2, so the error scales with eps: "
        f"{fl.name} eps = 2**-{fl.mantissa_bits}, {fh.name} eps = 2**-{fh.mantissa_bits}"
    )
    if answer <= 0 or not math.isfinite(answer):
        return CheckResult(False, f"{answer!r} cannot be a ratio of errors. Hint: {hint}")
    if 1 / 1.5 <= answer / measured <= 1.5:
        return CheckResult(
            True,
            f"measured now: {measured:.3g}; the eps ratio is "
            f"2**{fh.mantissa_bits - fl.mantissa_bits} = {fl.eps / fh.eps:g}",
        )
    return CheckResult(
        False,
        f"{answer:g} is {off_by(answer, measured).split(' by ')[0]}: not within a factor 1.5 of the ratio "
        f"measured now. Hint: {hint}",
    )
