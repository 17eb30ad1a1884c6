"""Checkers for lesson 07's exercises (an amax scale, choosing e4m3 or e5m2)."""

from __future__ import annotations

import math

import torch

from .. import formats
from ..checks import CheckResult, call_learner

__all__ = [
    "check_amax_scale",
    "check_fp8_format_choice",
]


def _amax_cases():
    g = torch.Generator().manual_seed(7)
    e4, e5 = formats.FORMATS["fp8_e4m3"].max, formats.FORMATS["fp8_e5m2"].max
    return [
        ("random normal x 3", torch.randn(1000, generator=g) * 3, e4),
        ("small gradients", torch.randn(1000, generator=g) * 1e-6, e5),
        ("an outlier", torch.cat([torch.randn(100, generator=g), torch.tensor([500.0])]), e4),
        ("all negative", -torch.rand(50, generator=g) - 0.5, e4),
        ("a 2-D tensor", torch.randn(8, 16, generator=g) * 1e3, e5),
        ("all zeros", torch.zeros(10), e4),
    ]


def check_amax_scale(fn) -> CheckResult:
    """Exercise: ``fn(x, fmt_max)`` returns the per-tensor scale ``fmt_max / amax`` with
    ``amax = max |x|`` (so the largest magnitude lands on the format's max), and 1.0 for an all-zero
    tensor (no scale can help it, and dividing by zero must not happen). Checked on several tensors
    (to float32 precision)."""
    for what, x, fmax in _amax_cases():
        got, err = call_learner(fn, x.clone(), fmax)
        if err:
            if float(x.abs().max()) == 0:
                return CheckResult(
                    False, f"{err}. Hint: for an all-zero tensor amax is 0; return 1.0 instead of dividing"
                )
            return CheckResult(False, err)
        try:
            got = float(got)
        except (TypeError, ValueError, RuntimeError):
            return CheckResult(
                False, f"for {what} it returned {got!r}; return a number (a float or a 1-element tensor)"
            )
        amax = float(x.abs().max())
        if amax == 0:
            if got != 1.0:
                return CheckResult(
                    False,
                    f"for {what} it returned {got!r}; the scale of an all-zero tensor should be 1.0 "
                    "(amax is 0: guard against dividing by it)",
                )
            continue
        want = fmax / amax
        if math.isfinite(got) and abs(got - want) <= 1e-6 * want:
            continue
        hint = "which number, multiplied into x, puts its largest magnitude exactly on fmt_max?"
        if math.isfinite(got) and got > 0 and abs(got - amax / fmax) <= 1e-6 * amax / fmax:
            hint = "you returned amax / fmt_max, the inverse (that is what _scaled_mm's scale_a takes); the scale multiplies x"
        elif (
            float(x.max()) != amax
            and math.isfinite(got)
            and abs(got - fmax / float(x.max())) <= 1e-6 * abs(fmax / float(x.max()))
        ):
            hint = "use the largest MAGNITUDE, x.abs().max(): negative values count too"
        return CheckResult(
            False, f"for {what} (fmt_max {fmax:g}) it returned {got!r}, expected {want:.6g}. Hint: {hint}"
        )
    return CheckResult(
        True, "amax(x * s) lands on the format's max for every tensor, and an all-zero tensor keeps scale 1"
    )


_FP8_NAMES = {
    "e4m3": "e4m3",
    "fp8_e4m3": "e4m3",
    "float8_e4m3fn": "e4m3",
    "e4m3fn": "e4m3",
    "e5m2": "e5m2",
    "fp8_e5m2": "e5m2",
    "float8_e5m2": "e5m2",
}
_FP8_CHOICE = {"weights": "e4m3", "activations": "e4m3", "gradients": "e5m2"}
_FP8_REASON = {
    "e4m3": "forward tensors need precision more than range: e4m3 has 3 mantissa bits (relative step 1/8) and, "
    "with a per-tensor or per-block scale, its range up to 448 is enough",
    "e5m2": "gradients span many more binades and have outliers: e5m2 reaches 57344 with subnormals down to 2^-16 "
    "(about 32 binades against e4m3's 18), at the cost of one mantissa bit",
}


def _fp8_name(v):
    if isinstance(v, torch.dtype):
        v = str(v).removeprefix("torch.")
    return _FP8_NAMES.get(str(v).strip().lower()) if isinstance(v, (str, torch.dtype)) else None


def check_fp8_format_choice(answers: dict) -> CheckResult:
    """Exercise: which fp8 format for ``"weights"``, ``"activations"`` and ``"gradients"`` in the
    usual "hybrid" fp8 training recipe: e4m3 for the forward pass (weights, activations), e5m2 for
    the gradients. Accepts "e4m3"/"fp8_e4m3"/torch.float8_e4m3fn and the e5m2 spellings."""
    if not isinstance(answers, dict):
        return CheckResult(False, f"expected a dict such as {{'weights': 'e4m3', ...}}, got {type(answers).__name__}")
    missing = [k for k in _FP8_CHOICE if k not in answers]
    if missing:
        return CheckResult(False, f"give an answer for {', '.join(map(repr, missing))} ('e4m3' or 'e5m2')")
    for kind, want in _FP8_CHOICE.items():
        got = _fp8_name(answers[kind])
        if got is None:
            return CheckResult(False, f"{kind}: {answers[kind]!r} is not an fp8 format; answer 'e4m3' or 'e5m2'")
        if got != want:
            return CheckResult(False, f"{kind}: not {got}. Hint: {_FP8_REASON[want]}")
    return CheckResult(
        True, f"weights and activations in e4m3, gradients in e5m2: {_FP8_REASON['e4m3']}; {_FP8_REASON['e5m2']}"
    )
