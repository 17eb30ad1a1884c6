"""Checkers for lesson 07's exercises (an amax scale, choosing e4m3 or e5m2, an fp8 linear forward)."""

from __future__ import annotations

import math

import torch

from .. import formats
from .._exercise import attempt, correct, exercise, not_yet, your_turn
from ..checks import CheckResult, call_learner, is_placeholder, off_by
from .key_code import Fp8LinearFn, amax_scale, fake_quantize

__all__ = [
    "check_amax_scale",
    "check_fp8_format_choice",
    "check_fp8_linear_forward",
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


@exercise
def check_amax_scale(fn) -> CheckResult:
    """Exercise: ``fn(x, fmt_max)`` returns the per-tensor scale ``fmt_max / amax`` with
    ``amax = max |x|`` (so the largest magnitude lands on the format's max), and 1.0 for an all-zero
    tensor (no scale can help it, and dividing by zero must not happen). Checked on several tensors
    (to float32 precision)."""
    for what, x, fmax in _amax_cases():
        got, err = call_learner(fn, x.clone(), fmax)
        if err:
            if float(x.abs().max()) == 0:
                return not_yet(f"{err}. Hint: for an all-zero tensor amax is 0; return 1.0 instead of dividing")
            return not_yet(err)
        try:
            got = float(got)
        except (TypeError, ValueError, RuntimeError):
            return not_yet(f"for {what} it returned {got!r}; return a number (a float or a 1-element tensor)")
        amax = float(x.abs().max())
        if got == 1.0 and amax != 0 and fmax / amax != 1.0:
            return your_turn(
                "so far it returns 1.0 (no scaling): return the number that, multiplied into x, puts its largest "
                "magnitude exactly on fmt_max (and 1.0 only for an all-zero x)"
            )
        if amax == 0:
            if got != 1.0:
                return not_yet(
                    f"for {what} it returned {got!r}; the scale of an all-zero tensor should be 1.0 "
                    "(amax is 0: guard against dividing by it)"
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
        return not_yet(
            f"for {what} (fmt_max {fmax:g}) it returned {got!r}, {off_by(got, want).split(' by ')[0]}. Hint: {hint}",
            hide=want,
        )
    return correct("amax(x * s) lands on the format's max for every tensor, and an all-zero tensor keeps scale 1")


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
# hints for a wrong choice: they point at the property that decides, without naming the format
_FP8_HINT = {
    "e4m3": "forward tensors need precision more than range (a per-tensor or per-block scale places them): "
    "which format has more mantissa bits?",
    "e5m2": "gradients span many more binades and have outliers: which format reaches 57344, with subnormals "
    "down to 2^-16 (about 32 binades), at the cost of one mantissa bit?",
}
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


@exercise
def check_fp8_format_choice(answers: dict) -> CheckResult:
    """Exercise: which fp8 format for ``"weights"``, ``"activations"`` and ``"gradients"`` in the
    usual "hybrid" fp8 training recipe: e4m3 for the forward pass (weights, activations), e5m2 for
    the gradients. Accepts "e4m3"/"fp8_e4m3"/torch.float8_e4m3fn and the e5m2 spellings."""
    if not isinstance(answers, dict):
        return not_yet(f"expected a dict such as {{'weights': 'e4m3', ...}}, got {type(answers).__name__}")
    todo = []
    for kind, want in _FP8_CHOICE.items():
        if is_placeholder(answers.get(kind)):
            todo.append(kind)
            continue
        got = _fp8_name(answers[kind])
        if got is None:
            return not_yet(f"{kind}: {answers[kind]!r} is not an fp8 format; answer 'e4m3' or 'e5m2'")
        if got != want:
            return not_yet(f"{kind}: not {got}. Hint: {_FP8_HINT[want]}")
    if todo:
        return your_turn(f"give an answer for {', '.join(map(repr, todo))}: replace \"...\" with 'e4m3' or 'e5m2'")
    return correct(f"weights and activations in e4m3, gradients in e5m2: {_FP8_REASON['e4m3']}; {_FP8_REASON['e5m2']}")


def _linear_cases():
    g = torch.Generator().manual_seed(11)
    return [
        (
            "x 16x32, weight 8x32, bias",
            torch.randn(16, 32, generator=g),
            torch.randn(8, 32, generator=g) * 0.1,
            torch.randn(8, generator=g),
        ),
        (
            "x with an outlier",
            torch.cat([torch.randn(15, 32, generator=g), torch.full((1, 32), 300.0)]),
            torch.randn(8, 32, generator=g) * 0.1,
            torch.zeros(8),
        ),
        (
            "small weights (1e-4)",
            torch.randn(4, 64, generator=g),
            torch.randn(8, 64, generator=g) * 1e-4,
            torch.randn(8, generator=g),
        ),
        ("an all-zero x", torch.zeros(4, 32), torch.randn(8, 32, generator=g), torch.randn(8, generator=g)),
    ]


@exercise
def check_fp8_linear_forward(fn) -> CheckResult:
    """Exercise: ``fn(x, weight, bias)`` returns the forward pass of an fp8 linear layer with per-tensor
    current scales: ``x`` and ``weight`` cast to e4m3 with their own amax scales (``fake_quantize`` and
    ``amax_scale``), multiplied in fp32, plus the fp32 bias. Compared with :class:`Fp8LinearFn`'s forward
    to 1e-5 of the largest output (the fp8 products are exact in fp32; only the order of the sums may
    differ, a few fp32 ulps)."""
    for what, x, w, b in _linear_cases():
        got = attempt(fn, x.clone(), w.clone(), b.clone())
        if not isinstance(got, torch.Tensor) or got.shape != (x.shape[0], w.shape[0]):
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return not_yet(f"for {what} it returned {shape}; expected a tensor of shape {(x.shape[0], w.shape[0])}")
        want = Fp8LinearFn.apply(x, w, b, "fp8_e4m3", "fp8_e5m2")
        tol = 1e-5 * max(float(want.abs().max()), 1e-30)
        if torch.isfinite(got).all() and float((got.float() - want).abs().max()) <= tol:
            continue
        plain = x @ w.t() + b
        unscaled = fake_quantize(x, "fp8_e4m3") @ fake_quantize(w, "fp8_e4m3").t() + b
        e5 = (
            fake_quantize(x, "fp8_e5m2", amax_scale(x, "fp8_e5m2"))
            @ fake_quantize(w, "fp8_e5m2", amax_scale(w, "fp8_e5m2")).t()
            + b
        )

        def close(a, got=got, tol=tol):
            return float((got.float() - a).abs().max()) <= tol

        if close(plain):
            return your_turn(
                "so far this is the fp32 layer: the inputs never went through fp8. Cast x and weight to e4m3, "
                "each with its own amax scale, multiply in fp32 and add the bias"
            )
        elif close(unscaled):
            hint = "you cast to fp8 without a scale: small values flush and large ones saturate"
        elif close(e5):
            hint = "the forward pass of the classic recipe casts to e4m3 (precision), not e5m2"
        else:
            hint = "each of x and weight needs its own per-tensor scale, applied before the cast and undone after it"
        return not_yet(f"for {what} the output differs from an fp8 linear layer's. Hint: {hint}")
    return correct(
        "x and weight cast to e4m3 with their own amax scales, fp32 products, fp32 bias: "
        "the forward pass of an fp8 training recipe"
    )
