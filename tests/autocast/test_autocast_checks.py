"""Tests of amp_lessons.autocast.checks, on lesson 04's exercises: each wrong answer gets "Not yet" with its own
hint, and no message of a starter or a wrong answer states the answer (the starter's Your turn and the solution's
Correct are tests/test_checker_contract.py's)."""

import torch
import torch.nn.functional as F

from amp_lessons import autocast
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

STARTER = {
    "cpu: cumsum(a @ b, 0)": "...",
    "cuda: cumsum(a @ b, 0)": "...",
    "cuda: norm(h)": "...",
    "cpu: addcmul(a, h, h)": "...",
    "cuda: gelu(a @ b)": "...",
    "cpu: a @ b + a": "...",
    "cpu: embedding_bag(i, h, offsets)": "...",
    "cpu: bmm(a[None].double(), b[None])": "...",
}


def _truth(expr: str) -> str:
    """The dtype of one of the exercise's expressions, traced here under autocast."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    fns = {  # written out here again, independently of the checker's table
        "cpu: cumsum(a @ b, 0)": ("cpu", lambda a, b, h: torch.cumsum(a @ b, 0)),
        "cuda: norm(h)": ("cuda", lambda a, b, h: torch.norm(h)),
        "cpu: a @ b + a": ("cpu", lambda a, b, h: a @ b + a),
    }
    device_type, fn = fns[expr]
    return str(autocast.trace(fn, a, b, h, device_type=device_type).output.dtype)


def test_the_predictions_hold_on_the_policies():
    """The answers, from the policies: CPU cumsum/add/addcmul/embedding_bag on no list (type promotion), CUDA
    cumsum fp32_set_opt_dtype, norm fp32_append_dtype, gelu on no list (the fp16 of the mm), and bmm's fp64 input
    left alone while its fp32 input is cast to bf16: a mixed-dtype bmm, refused."""
    s = solution("04")
    assert autocast.policy_of("cumsum", "cpu") is None and autocast.policy_of("cumsum", "cuda") == "fp32_set_opt_dtype"
    assert autocast.policy_of("norm", "cuda") == "fp32_append_dtype" and autocast.policy_of("gelu", "cuda") is None
    assert autocast.policy_of("embedding_bag", "cpu") is None and autocast.policy_of("bmm", "cpu") == "lower_precision"
    assert s.DTYPE_PREDICTIONS["cpu: bmm(a[None].double(), b[None])"] == "error"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        try:
            torch.bmm(torch.ones(1, 2, 2, dtype=torch.float64), torch.ones(1, 2, 2))
            raised = False
        except RuntimeError:
            raised = True
    assert raised


def test_dtype_predictions_exercise():
    s = solution("04")
    assert set(STARTER) == set(s.DTYPE_PREDICTIONS)
    starter = autocast.check_dtype_predictions(STARTER)
    assert "8 of 8 still to predict" in starter.message
    # half done, all right so far: still the learner's turn
    half = dict(STARTER, **{k: s.DTYPE_PREDICTIONS[k] for k in list(STARTER)[:4]})
    assert_your_turn(autocast.check_dtype_predictions(half))
    for expr in ("cpu: cumsum(a @ b, 0)", "cuda: norm(h)", "cpu: a @ b + a"):
        truth = _truth(expr)
        assert s.DTYPE_PREDICTIONS[expr] == truth
        guess = "torch.float16" if truth != "torch.float16" else "torch.float32"
        r = autocast.check_dtype_predictions(dict(STARTER, **{expr: guess}))
        assert_not_yet(r)
        assert f"{expr}: not {guess}" in r.message and "policy_of" in r.message
        for message in (r.message, starter.message):
            assert not reveals(message, truth) and not reveals(message, truth.removeprefix("torch.")), message


def test_bce_fix_exercise():
    g = torch.Generator().manual_seed(1)  # the checker's inputs
    logits, target = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    want = F.binary_cross_entropy(torch.sigmoid(logits), target).item()
    starter = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y))
    assert "refuses" in starter.message and "unsafe to autocast" in starter.message
    # an edited answer still refused gets a hint, not the starter's "your turn"
    edited = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z).clamp(1e-6, 1 - 1e-6), y))
    assert_not_yet(edited)
    assert "the op itself" in edited.message and "softplus" in edited.message
    assert autocast.check_bce_fix(lambda z, y: (F.softplus(-z) * y + F.softplus(z) * (1 - y)).mean())
    assert "with_logits" not in starter.message and "logits" not in starter.message
    wrong = [
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum")),
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y).half()),
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y).item()),
    ]
    for r in wrong:
        assert_not_yet(r)
    assert "your loss is" in wrong[0].message
    for r in [starter, *wrong]:
        assert not reveals(r.message, want), r.message
