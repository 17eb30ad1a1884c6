"""Checkers for lesson 07's exercises (choosing e4m3 or e5m2, an amax scale, an fp8 linear layer's backward)."""

from __future__ import annotations

import math
import re

import torch

from .. import formats
from .._exercise import calls_seen, correct, exercise, not_yet, placeholder, your_turn
from ..checks import CheckResult, call_learner, is_placeholder, off_by
from . import _checked, key_code
from .key_code import Fp8LinearFn, amax_scale, fake_quantize

__all__ = [
    "check_amax_scale",
    "check_fp8_format_choice",
    "check_fp8_linear_backward",
]


def _amax_cases():
    """(what, x, fmt_max, hint if the answer is wrong here): each breaks a naive scale."""
    g = torch.Generator().manual_seed(7)
    e4, e5 = formats.FORMATS["fp8_e4m3"].max, formats.FORMATS["fp8_e5m2"].max
    low = ("compute the scale as a Python float or in float32 (float(x.abs().max())): fmt_max / amax in fp16 or bf16 "
           "is rounded to that dtype, and in fp16 it overflows past 65504")  # fmt: skip
    eps = ("an epsilon (amax + 1e-12, or clamp(min=1e-12)) swamps a tensor this small: divide by amax itself and "
           "treat amax == 0 apart")  # fmt: skip
    return [
        ("random normal x 3", torch.randn(1000, generator=g) * 3, e4, None),
        ("small gradients", torch.randn(1000, generator=g) * 1e-6, e5, None),
        ("an outlier", torch.cat([torch.randn(100, generator=g), torch.tensor([500.0])]), e4, None),
        ("all negative", -torch.rand(50, generator=g) - 0.5, e4, None),
        ("a 2-D tensor", torch.randn(8, 16, generator=g) * 1e3, e5, None),
        ("one element", torch.tensor([-3.0]), e4, None),
        ("all zeros", torch.zeros(10), e4, None),
        ("fp16 activations of about 1e-3 (448 / amax is past fp16's 65504)",
         (torch.randn(1000, generator=g) * 3e-4).half(), e4, low),
        ("bf16 weights", (torch.randn(1000, generator=g) * 0.05).bfloat16(), e4, low),
        ("gradients of about 1e-30 (float32)", torch.randn(100, generator=g) * 1e-30, e5, eps),
    ]  # fmt: skip


def _calls_to_lessons_scale():
    """Calls of the lesson's own ``amax_scale`` / ``scale_from_amax`` inside the block."""
    where, names = {key_code.__file__, _checked.__file__}, {"amax_scale", "scale_from_amax"}
    return calls_seen(lambda code: code.co_filename in where and code.co_name in names)


@exercise
def check_amax_scale(fn) -> CheckResult:
    """Exercise: ``fn(x, fmt_max)`` returns the per-tensor scale ``fmt_max / max |x|``, and 1.0 for an all-zero
    tensor. Checked to float32 precision on tensors that break naive scales (fp16 and bf16 tensors, values of 1e-30,
    one element, all zeros); the lesson's own ``amax_scale`` is refused."""
    for what, x, fmax, trap in _amax_cases():
        with _calls_to_lessons_scale() as used:
            got, err = call_learner(fn, x.clone(), fmax)
        if used:
            return not_yet("it calls the lesson's own amax_scale: compute the scale from x yourself")
        if err:
            if float(x.abs().max()) == 0:
                return not_yet(f"{err}. Hint: for an all-zero tensor amax is 0; return 1.0 instead of dividing")
            return not_yet(err)
        try:
            got = float(got)
        except (TypeError, ValueError, RuntimeError):
            return not_yet(f"for {what} it returned {got!r}; return a number (a float or a 1-element tensor)")
        amax = float(x.float().abs().max())
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
        hint = trap or "which number, multiplied into x, puts its largest magnitude exactly on fmt_max?"
        if math.isfinite(got) and got > 0 and abs(got - amax / fmax) <= 1e-6 * amax / fmax:
            hint = "you returned amax / fmt_max, the inverse (that is what _scaled_mm's scale_a takes); the scale multiplies x"
        elif (
            float(x.max()) != amax
            and math.isfinite(got)
            and abs(got - fmax / float(x.max())) <= 1e-6 * abs(fmax / float(x.max()))
        ):
            hint = "use the largest MAGNITUDE, x.abs().max(): negative values count too"
        return not_yet(
            f"for {what} (fmt_max {fmax:g}) it returned {got!r}"
            + (f", {off_by(got, want).split(' by ')[0]}" if math.isfinite(got) else "")
            + f". Hint: {hint}",
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


def _backward_cases():
    """(what, x, weight, bias or None, output gradient): each breaks a naive backward."""
    g = torch.Generator().manual_seed(11)
    return [
        ("gradients of about 1e-6 (below e5m2's smallest subnormal, 1.5e-5, unscaled)",
         torch.randn(16, 32, generator=g), torch.randn(8, 32, generator=g) * 0.1, torch.randn(8, generator=g),
         torch.randn(16, 8, generator=g) * 1e-6),
        ("gradients up to about 3e5 (past e5m2's largest value, 57344, unscaled)",
         torch.randn(16, 32, generator=g), torch.randn(8, 32, generator=g), torch.randn(8, generator=g),
         torch.randn(16, 8, generator=g) * 1e5),
        ("a layer without a bias", torch.randn(4, 64, generator=g), torch.randn(8, 64, generator=g), None,
         torch.randn(4, 8, generator=g) * 1e-3),
        ("an all-zero output gradient", torch.randn(4, 32, generator=g), torch.randn(8, 32, generator=g),
         torch.randn(8, generator=g), torch.zeros(4, 8)),
    ]  # fmt: skip


def _calls_to_lessons_backward():
    """Calls of the lesson's own ``Fp8LinearFn.backward`` inside the block."""
    return calls_seen(lambda code: code.co_filename == key_code.__file__ and code.co_name == "backward")


def _grads(fn, x, w, b, dy):
    """(y, dx, dw, db) of ``fn.apply`` (a Function class) on copies of the inputs, or the error as feedback."""
    x, w = x.clone().requires_grad_(True), w.clone().requires_grad_(True)
    b = None if b is None else b.clone().requires_grad_(True)
    y = fn.apply(x, w, b, "fp8_e4m3", "fp8_e5m2")
    y.backward(dy.clone())
    return y, x.grad, w.grad, None if b is None else b.grad


def _close(got, want) -> bool:
    if not isinstance(got, torch.Tensor) or got.shape != want.shape or not bool(torch.isfinite(got).all()):
        return False
    # fp8 products are exact in fp32: only the order of the fp32 sums may differ, a few ulps of the largest value
    return float((got.float() - want).abs().max()) <= 1e-5 * max(float(want.abs().max()), 1e-30)


def _backward_mistakes(w, dy):
    """(hint, dx it would give) for the usual wrong backward passes."""
    w8 = fake_quantize(w, "fp8_e4m3", amax_scale(w, "fp8_e4m3"))
    return [
        ("the output gradient never went through fp8: cast dy to ctx.bwd_fmt with its own amax scale before the "
         "two matmuls", dy @ w8),
        ("dy was cast without a scale: small gradients flush to zero and large ones overflow. Scale it by its own "
         "amax first (amax_scale), as the forward scales x and w", fake_quantize(dy, "fp8_e5m2") @ w8),
        ("dy was cast to e4m3: gradients need range more than precision, so the backward pass uses ctx.bwd_fmt "
         "(e5m2)", fake_quantize(dy, "fp8_e4m3", amax_scale(dy, "fp8_e4m3")) @ w8),
        ("the input gradient was computed from x and w at full precision; use the fp8 copies the forward saved "
         "(ctx.saved_tensors)", fake_quantize(dy, "fp8_e5m2", amax_scale(dy, "fp8_e5m2")) @ w),
    ]  # fmt: skip


@exercise
def check_fp8_linear_backward(fn) -> CheckResult:
    """Exercise: ``fn`` is a ``torch.autograd.Function`` with the lesson's fp8 linear forward, whose backward casts
    ``dy`` to ``ctx.bwd_fmt`` with its own amax scale and returns ``dy8 @ w8``, ``dy8.T @ x8``, ``dy.sum(0)`` (None
    without a bias) and None for the two formats (or that backward alone). Compared with the lesson's Function on
    tiny and huge gradients, a layer without a bias and a zero gradient; the lesson's own Function is refused."""
    placeholder(fn, "write MyFp8LinearFn's backward and pass the class itself")
    own = "that is the lesson's own Fp8LinearFn: write the backward yourself, in MyFp8LinearFn"
    if isinstance(fn, type):
        if not issubclass(fn, torch.autograd.Function):
            return not_yet(f"pass the class MyFp8LinearFn (a torch.autograd.Function), got the class {fn.__name__}")
        if issubclass(fn, Fp8LinearFn) or fn.backward is Fp8LinearFn.backward:
            return not_yet(own)
    elif callable(fn):  # a backward(ctx, dy) alone: run it under the lesson's forward
        if fn is Fp8LinearFn.backward:
            return not_yet(own)
        fn = type("YourFp8LinearFn", (Fp8LinearFn,), {"backward": staticmethod(fn)})
    else:
        return not_yet(f"pass the class MyFp8LinearFn (a torch.autograd.Function), got {fn!r}"[:200])
    for what, x, w, b, dy in _backward_cases():
        want = _grads(Fp8LinearFn, x, w, b, dy)
        got, err = None, None
        with _calls_to_lessons_backward() as used:
            try:
                got = _grads(fn, x, w, b, dy)
            except Exception as exc:  # noqa: BLE001 - any error in the learner's code is feedback
                err = f"for {what}, its forward and backward raised {type(exc).__name__}: {exc}"
        if used:
            return not_yet("its backward calls the lesson's Fp8LinearFn.backward: write the three products yourself")
        if err:
            if "returned an incorrect number of gradients" in err or "expected 5" in err:
                return not_yet(f"{err}. Hint: backward returns one gradient per input of forward, five: "
                               "dx, dw, db, and None for each of the two formats")  # fmt: skip
            if "not a Variable" in err or "different than None" in err:
                return not_yet(f"{err}. Hint: an input that is not a tensor (a format name), or a bias that is None, "
                               "gets None as its gradient")  # fmt: skip
            bad = re.search(r"invalid gradient at index (\d)", err)
            if bad and bad.group(1) in "012":
                name = ("dx", "dw", "the bias gradient db")[int(bad.group(1))]
                return not_yet(f"{err}. Hint: {name} must have the shape of the input it is the gradient of")
            return not_yet(err)
        _, dx, dw, db = got
        if dx is None and dw is None:
            return your_turn("so far backward returns no gradients: compute dx and dw from dy's fp8 copy and the "
                             "fp8 copies of x and w the forward saved, and db from dy")  # fmt: skip
        for name, g_, w_ in (("the input gradient dx", dx, want[1]), ("the weight gradient dw", dw, want[2])):
            if g_ is None or g_.shape != w_.shape:
                shape = None if g_ is None else tuple(g_.shape)
                return not_yet(f"for {what}, {name} has shape {shape}; expected {tuple(w_.shape)} (the shape of "
                               "the input it is the gradient of)")  # fmt: skip
        if not _close(dx, want[1]):
            for hint, wrong in _backward_mistakes(w, dy):
                if _close(dx, wrong):
                    return not_yet(f"for {what}: {hint}")
            return not_yet(f"for {what}, dx differs from the fp8 layer's: cast dy to ctx.bwd_fmt with "
                           "amax_scale and fake_quantize, then multiply by the saved w8")  # fmt: skip
        if not _close(dw, want[2]):
            return not_yet(f"for {what}, dx is right but dw differs: dw is dy8.T @ x8, the fp8 output gradient "
                           "against the saved fp8 input")  # fmt: skip
        if b is not None:
            if db is None or not _close(db, want[3]):
                hint = "the bias gradient is dy summed over the batch (dim 0), in fp32"
                if db is not None and _close(db, fake_quantize(dy, "fp8_e5m2", amax_scale(dy, "fp8_e5m2")).sum(0)):
                    hint = "you summed dy's fp8 copy: the bias gradient is a cheap sum, so recipes take it from fp32 dy"
                return not_yet(f"for {what}, dx and dw are right but the bias gradient is not: {hint}")
    return correct("dy cast to e5m2 with its own scale, dx and dw from the saved fp8 copies, db from fp32 dy: "
                   "the backward pass of an fp8 linear layer")  # fmt: skip
