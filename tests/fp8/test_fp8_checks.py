"""Tests of amp_lessons.fp8._checks, on lesson 07's exercises: each wrong answer gets "Not yet" with its own hint,
and no message of a starter or a wrong answer states the answer (the starter's Your turn and the solution's Correct
are tests/test_checker_contract.py's)."""

import torch

from amp_lessons.fp8 import key_code
from tests.faces import internals
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

fp8 = internals("fp8")


def test_amax_scale_exercise():
    s = solution("07")
    wrong = {
        (lambda x, m: 2 * s.amax_scale(x, m)): "too large",
        (lambda x, m: 0.5 * s.amax_scale(x, m)): "too small",
        (lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0): "inverse",
        (lambda x, m: m / float(x.max()) if x.abs().max() > 0 else 1.0): "MAGNITUDE",
        (lambda x, m: m / float(x.abs().max())): "all-zero",
        (lambda x, m: m / x.abs().max()): "1.0",  # a tensor, inf for an all-zero x: the hint gives zeros' scale
        (lambda x, m: "x"): "return a number",
        # naive scales that only fp16/bf16 inputs or tiny values break, and the lesson's own function
        (lambda x, m: m / x.abs().max() if x.abs().max() > 0 else 1.0): "in float32",
        (lambda x, m: (m / x.float().abs().max().clamp(min=1e-12)).item() if x.abs().max() > 0 else 1.0): "epsilon",
        (lambda x, m: fp8.amax_scale(x) * m / 448): "lesson's own amax_scale",
    }
    for fn, words in wrong.items():
        r = fp8.check_amax_scale(fn)
        assert_not_yet(r)
        assert words in r.message, r.message


STARTER = {"weights": "...", "activations": "...", "gradients": "..."}


def test_fp8_format_choice_exercise():
    s = solution("07")
    assert_your_turn(fp8.check_fp8_format_choice(dict(STARTER, weights=s.FP8_FORMAT_CHOICE["weights"])))
    other = {"e4m3": "e5m2", "e5m2": "e4m3"}
    for kind in STARTER:
        want = str(s.FP8_FORMAT_CHOICE[kind]).removeprefix("torch.").removeprefix("fp8_").removeprefix("float8_")
        r = fp8.check_fp8_format_choice(dict(STARTER, **{kind: other[want]}))
        assert_not_yet(r)
        assert r.message.startswith(f"{kind}: not {other[want]}") and "Hint" in r.message
        assert not reveals(r.message, want) and not reveals(r.message, f"fp8_{want}"), r.message
    r = fp8.check_fp8_format_choice(dict(s.FP8_FORMAT_CHOICE, gradients="fp16"))
    assert_not_yet(r)
    assert "not an fp8 format" in r.message
    # any spelling of a format counts; each mistake gets its reason: e4m3's range (57344 is e5m2's max) for the
    # gradients, e4m3's extra mantissa bit for the weights, the missing key by name
    assert fp8.check_fp8_format_choice({"weights": torch.float8_e4m3fn, "activations": "fp8_e4m3", "gradients": "E5M2"})
    r = fp8.check_fp8_format_choice(dict.fromkeys(STARTER, "e4m3"))
    assert not r and "57344" in r.message
    r = fp8.check_fp8_format_choice({"weights": "e5m2", "activations": "e4m3", "gradients": "e5m2"})
    assert not r and "weights" in r.message and "mantissa" in r.message
    assert "gradients" in fp8.check_fp8_format_choice({"weights": "e4m3", "activations": "e4m3"}).message


def _layer(backward):
    """A Function with the notebook's given forward and ``backward`` as its backward."""
    from tests.fp8.contract import _Starter

    return type("Learners", (_Starter,), {"backward": staticmethod(backward)})


def _dy8(dy, fmt="fp8_e5m2", scaled=True):
    return fp8.fake_quantize(dy, fmt, fp8.amax_scale(dy, fmt) if scaled else 1.0)


def test_fp8_linear_backward_exercise():
    s = solution("07")
    assert fp8.check_fp8_linear_backward(s.MyFp8LinearFn.backward)  # the backward alone, under the given forward
    assert_your_turn(fp8.check_fp8_linear_backward(...))

    def grads(dy8, ctx, dy, db=None):
        x8, w8 = ctx.saved_tensors
        return dy8 @ w8, dy8.t() @ x8, (dy.sum(0) if db is None else db) if ctx.has_bias else None, None, None

    wrong = {
        _layer(lambda ctx, dy: grads(dy, ctx, dy)): "never went through fp8",
        _layer(lambda ctx, dy: grads(_dy8(dy, scaled=False), ctx, dy)): "without a scale",
        _layer(lambda ctx, dy: grads(_dy8(dy, "fp8_e4m3"), ctx, dy)): "e4m3",
        _layer(lambda ctx, dy: grads(_dy8(dy), ctx, dy, db=_dy8(dy).sum(0))): "fp8 copy",
        _layer(lambda ctx, dy: grads(_dy8(dy), ctx, dy)[:3]): "five",
        _layer(lambda ctx, dy: (*grads(_dy8(dy), ctx, dy)[:2], dy.sum(0), None, None)): "None",
        _layer(lambda ctx, dy: (*grads(_dy8(dy), ctx, dy)[:2], dy.sum(1), None, None)): "bias",
        _layer(lambda ctx, dy: (grads(_dy8(dy), ctx, dy)[0], grads(_dy8(dy), ctx, dy)[1].t(), *grads(_dy8(dy), ctx, dy)[2:])): "dw must have the shape",
        _layer(lambda ctx, dy: (grads(_dy8(dy), ctx, dy)[0], grads(_dy8(dy), ctx, dy)[1] * 1.01,
                                *grads(_dy8(dy), ctx, dy)[2:])): "dw differs",
        _layer(lambda ctx, dy: key_code.Fp8LinearFn.backward(ctx, dy)): "calls the lesson's",
        key_code.Fp8LinearFn: "lesson's own",
        key_code.Fp8LinearFn.backward: "lesson's own",
        torch.nn.Linear: "pass the class MyFp8LinearFn",
        42: "pass the class MyFp8LinearFn",
    }  # fmt: skip
    for fn, words in wrong.items():
        r = fp8.check_fp8_linear_backward(fn)
        assert_not_yet(r)
        assert words in r.message, (words, r.message)
