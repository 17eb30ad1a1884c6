"""Tests of amp_lessons.fp16._checks, on lesson 03's exercises: each wrong answer gets its own hint (the contract
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


def _kahan_answer(values):  # the idiomatic answer, written as a learner would
    total = torch.tensor(0.0, dtype=torch.float16)
    c = torch.tensor(0.0, dtype=torch.float16)
    for v in values:
        y = v - c
        t = total + y
        c = (t - total) - y
        total = t
    return total


def test_kahan16_accepts_the_idiomatic_answer_and_the_solution():
    r = fp16.check_kahan16(_kahan_answer)
    assert r and "2548" in r.message and "ends at 2048" in r.message
    flipped = fp16.check_kahan16(_flipped)  # the other sign convention: c = y - (t - total), added to the next addend
    assert flipped, flipped.message


def _flipped(values):
    total = torch.tensor(0.0, dtype=torch.float16)
    c = torch.tensor(0.0, dtype=torch.float16)
    for v in values:
        y = v + c
        t = total + y
        c = y - (t - total)
        total = t
    return total


def test_kahan16_inputs_break_a_plain_running_sum_and_hold_the_edges():
    # every input with two or more values is one where a plain fp16 running sum misses the exact sum by over an ulp;
    # the edges are there: no values, one value, 65504 (the largest), 2**-14 (the smallest normal), subnormals
    from amp_lessons.fp16._checks import _kahan_inputs

    cases = _kahan_inputs()
    assert all(v.dtype == torch.float16 for v in cases.values())
    assert {0, 1} <= {v.numel() for v in cases.values()}
    for name, v in cases.items():
        if v.numel() > 1:
            exact = float(v.double().sum())
            ulp = 2.0 ** (math.floor(math.log2(abs(exact))) - 10)
            assert abs(float(fp16.running_sum(v.float(), "fp16")[-1]) - exact) > ulp, name
    values = torch.cat([v.float() for v in cases.values()])
    assert values.max() == 65504 and bool((values == 2.0**-14).any()) and bool((values.abs() < 2.0**-14).any())


def test_kahan16_names_each_mistake():
    def no_feedback(values):  # the compensation is computed but never taken off the next addend
        total = torch.tensor(0.0, dtype=torch.float16)
        for v in values:
            t = total + v
            _ = (t - total) - v
            total = t
        return total

    def in_float64(values):  # Kahan in Python floats: not fp16 operations
        total = c = 0.0
        for v in values.tolist():
            y = v - c
            t = total + y
            c = (t - total) - y
            total = t
        return total

    cases = {
        no_feedback: "plain fp16 running sum",
        (lambda values: values.sum()): "correctly rounded sum",
        in_float64: "not an fp16 number",
        (lambda values: fp16.kahan_sum(values.float(), "fp16")): "calls the course's own kahan_sum",
        (lambda values: fp16.running_sum(values.float(), "fp16")[-1]): "calls the course's own running_sum",
        (lambda values: torch.tensor(1.0, dtype=torch.float16)): "ulps off the exact sum",
        (lambda values: [1.0, 2.0]): "expected a number",
    }
    for fn, words in cases.items():
        r = fp16.check_kahan16(fn)
        assert not r and words in r.message, (words, r.message)
        assert "Hint" in r.message or "course's own" in r.message or "expected a number" in r.message
    assert "Your turn" in str(fp16.check_kahan16(lambda values: None)) or not fp16.check_kahan16(lambda v: None)


def test_kahan16_tries_the_edges_and_refuses_naive_answers_there():
    # each naive answer below passes the plain cases of a textbook and fails one of the checker's edges
    from tests.fp16.contract import _from_first as from_first  # Kahan from values[0]: IndexError on none

    def none_when_empty(values):
        return None if len(values) == 0 else solution("03").kahan16(values)

    def compensation_in_fp32(values):  # the total in fp16, what was lost kept in fp32: more exact than fp16 Kahan
        total, c = torch.tensor(0.0, dtype=torch.float16), torch.tensor(0.0)
        for v in values:
            y = v.float() - c
            t = (total.float() + y).half()
            c = (t.float() - total.float()) - y
            total = t
        return total

    def fp32_sum_rounded_once(values):
        return values.float().sum().half()

    cases = {
        from_first: "IndexError",
        none_when_empty: "no values",
        compensation_in_fp32: "correctly rounded sum",
        fp32_sum_rounded_once: "correctly rounded sum",
    }
    for fn, words in cases.items():
        r = fp16.check_kahan16(fn)
        assert not r and words in r.message, (fn.__name__, r.message)
    assert "Hints: (1)" in fp16.check_kahan16(fp32_sum_rounded_once).message


def test_stall_value_hint_for_a_negative_v():
    r = fp16.check_stall_value(2048.0, -1.0, "fp16")  # a negative v: the gap in the hint is a positive size
    assert not r and "reaches 2" in r.message and "-2" not in r.message
