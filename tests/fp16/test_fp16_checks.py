"""Tests of amp_lessons.fp16.checks, on lesson 03's exercises: each wrong answer gets its own hint (the contract
every checker keeps, starter, solution and no answer in a message, is tests/test_checker_contract.py)."""

import math

import torch

from amp_lessons import formats, fp16
from tests.test_checks import solution


def _stall(fmt="fp16", v=1.0):
    """Where a running sum of copies of v stalls, computed here with the formats engine."""
    total = 0.0
    while True:
        nxt = formats.quantize(torch.tensor([total + v]), fmt).item()
        if nxt == total:
            return total
        total = nxt


def test_stall_value_names_the_miss():
    s = solution("03")
    want = _stall()
    assert s.STALL_VALUE == want
    wrong = {want * 2: "too large", want / 2: "too small", want - 1: "too small", "x": "not a number"}
    for answer, word in wrong.items():
        r = fp16.check_stall_value(answer, 1.0, "fp16")
        assert word in r.message, r.message


def test_lost_update_names_the_miss():
    s = solution("03")
    f = formats.FORMATS["fp16"]
    w = formats.quantize(torch.tensor([1.5]), f).item()  # the first weight the checker tries
    assert s.smallest_update(w) == 2.0 ** (math.frexp(w)[1] - 2 - f.mantissa_bits) == 2.0**-11  # the contract's
    wrong = [
        fp16.check_lost_update(lambda w: s.smallest_update(w) * 2),  # the whole gap
        fp16.check_lost_update(lambda w: s.smallest_update(w) / 4),
    ]
    assert "too large by a factor of 2" in wrong[0].message and "too small by a factor of 4" in wrong[1].message
