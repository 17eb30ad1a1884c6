"""Tests of amp_lessons.micro.checks, on lesson 10's exercises: (a) the starter gets "your turn", (b) the
instructors' solution is correct, (c) a wrong answer gets "Not yet" with a hint, (d) no message of a starter or a
wrong answer states the answer."""

import math

import torch

from amp_lessons import formats, micro
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


def test_floor_scale_exponent_exercise():
    s = solution("10")
    f = formats.FORMATS["fp8_e4m3"]
    want = math.floor(math.log2(1.0)) - f.emax  # the first amax the checker tries is 1.0
    starter = micro.check_floor_scale_exponent(lambda amax: math.nan)
    assert_your_turn(starter)
    assert micro.check_floor_scale_exponent(s.floor_scale_exponent)
    wrong = {
        (lambda a: s.floor_scale_exponent(a) + 1): "one too large",
        (lambda a: math.floor(math.log2(a))): "largest exponent",
        (lambda a: 0.5): "gave 0.5",
        (lambda a: "x"): "gave 'x'",
    }
    results = [starter]
    for fn, words in wrong.items():
        r = micro.check_floor_scale_exponent(fn)
        assert_not_yet(r)
        assert words in r.message, r.message
        results.append(r)
    for r in results:
        assert not reveals(r.message, want), r.message


def test_sr_probability_exercise():
    s = solution("10")
    x = float(torch.tensor(1 + 1e-4, dtype=torch.float32))
    gap = formats.FORMATS["bf16"].eps  # between bf16's 1 and its next value
    want = (x - 1.0) / gap
    starter = micro.check_sr_probability(None)
    assert_your_turn(starter)
    assert micro.check_sr_probability(s.SR_PROBABILITY)
    results = [starter]
    for answer, words in ((1e-4, "distance itself"), (0.5, "too large"), (want / 3, "too small"), (2.0, "not a")):
        r = micro.check_sr_probability(answer)
        assert_not_yet(r)
        assert words in r.message, r.message
        results.append(r)
    for r in results:
        assert not reveals(r.message, want), r.message
