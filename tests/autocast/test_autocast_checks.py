"""Tests of amp_lessons.autocast.checks, on lesson 04's exercises: (a) the starter gets "your turn", (b) the
instructors' solution is correct, (c) a wrong answer gets "Not yet" with a hint, (d) no message of a starter or a
wrong answer states the answer."""

import torch
import torch.nn.functional as F

from amp_lessons import autocast
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

STARTER = {
    "cpu: a @ b": "...",
    "cpu: (a @ b).sum()": "...",
    "cpu: layer_norm(h)": "...",
    "cpu: cat([h, a])": "...",
    "cpu: a.double() @ b.double()": "...",
    "cuda: (a @ b).sum()": "...",
    "cuda: softmax(a @ b)": "...",
    "cuda: cat([h, a])": "...",
}


def _truth(expr: str) -> str:
    """The dtype of one of the exercise's expressions, traced here under autocast."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    fns = {
        "cpu: a @ b": ("cpu", lambda a, b, h: a @ b),
        "cuda: (a @ b).sum()": ("cuda", lambda a, b, h: (a @ b).sum()),
    }
    device_type, fn = fns[expr]
    return str(autocast.trace(fn, a, b, h, device_type=device_type).output.dtype)


def test_dtype_predictions_exercise():
    s = solution("04")
    assert set(STARTER) == set(s.DTYPE_PREDICTIONS)
    starter = autocast.check_dtype_predictions(STARTER)
    assert_your_turn(starter)
    assert "8 of 8 still to predict" in starter.message
    assert autocast.check_dtype_predictions(s.DTYPE_PREDICTIONS)
    # half done, all right so far: still the learner's turn
    half = dict(STARTER, **{k: s.DTYPE_PREDICTIONS[k] for k in list(STARTER)[:4]})
    assert_your_turn(autocast.check_dtype_predictions(half))
    for expr in ("cpu: a @ b", "cuda: (a @ b).sum()"):
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
    assert_your_turn(starter)
    assert "refuses" in starter.message and "unsafe to autocast" in starter.message
    assert autocast.check_bce_fix(solution("04").bce_fix)
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
