"""Tests of amp_lessons.fp16.checks, on lesson 03's exercises: (a) the starter gets "your turn", (b) the
instructors' solution is correct, (c) a wrong answer gets "Not yet" with a hint, (d) no message of a starter or a
wrong answer states the answer."""

import math

import torch

from amp_lessons import formats, fp16
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


def _stall(fmt="fp16", v=1.0):
    """Where a running sum of copies of v stalls, computed here with the formats engine."""
    total = 0.0
    while True:
        nxt = formats.quantize(torch.tensor([total + v]), fmt).item()
        if nxt == total:
            return total
        total = nxt


def test_stall_value_exercise():
    s = solution("03")
    want = _stall()
    assert s.STALL_VALUE == want
    starter = fp16.check_stall_value(..., 1.0, "fp16")
    assert_your_turn(starter)
    assert fp16.check_stall_value(s.STALL_VALUE, 1.0, "fp16")
    wrong = {want * 2: "too large", want / 2: "too small", want - 1: "too small", "x": "not a number"}
    results = [starter]
    for answer, word in wrong.items():
        r = fp16.check_stall_value(answer, 1.0, "fp16")
        assert_not_yet(r)
        assert word in r.message, r.message
        results.append(r)
    for r in results:
        assert not reveals(r.message, want), r.message


def test_lost_update_exercise():
    s = solution("03")
    f = formats.FORMATS["fp16"]
    w = formats.quantize(torch.tensor([1.5]), f).item()  # the first weight the checker tries
    half_gap = 2.0 ** (math.frexp(w)[1] - 2 - f.mantissa_bits)
    starter = fp16.check_lost_update(lambda w: None, "fp16")
    assert_your_turn(starter)
    assert fp16.check_lost_update(s.smallest_update, "fp16")
    wrong = [
        fp16.check_lost_update(lambda w: s.smallest_update(w) * 2),  # the whole gap
        fp16.check_lost_update(lambda w: s.smallest_update(w) / 4),
        fp16.check_lost_update(lambda w: 1e-3),
        fp16.check_lost_update(lambda w: -1.0),
        fp16.check_lost_update(lambda w: "x"),
    ]
    for r in wrong:
        assert_not_yet(r)
    assert "too large by a factor of 2" in wrong[0].message and "too small by a factor of 4" in wrong[1].message
    for r in [starter, *wrong]:
        assert not reveals(r.message, half_gap), r.message
