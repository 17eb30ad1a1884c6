"""Tests of amp_lessons.micro.checks, on lesson 10's exercises: (a) the starter gets "your turn", (b) the
instructors' solution is correct, (c) each kind of wrong answer gets "Not yet" with its own hint, (d) no message of a
starter or a wrong answer states the answer."""

import math

import torch

from amp_lessons import formats, micro
from amp_lessons.micro import checks as micro_checks
from amp_lessons.micro.key_code import MX_ELEMENTS, floor_shared_exponent, mx_block_quantize
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


def _rule(fn):
    return lambda amax, element_format="fp8_e4m3": fn(amax, MX_ELEMENTS[element_format][3])


def test_rceil_shared_exponent_exercise():
    s = solution("10")
    starter = micro.check_rceil_shared_exponent(lambda amax, element_format="fp8_e4m3": None)
    assert_your_turn(starter)
    assert micro.check_rceil_shared_exponent(s.rceil_shared_exponent)
    wrong = {
        _rule(lambda a, m: floor_shared_exponent(a)): "floor rule",
        _rule(lambda a, m: torch.ceil(torch.log2(a / m)).clamp(-127, 127)): "float32's log2 rounds",
        _rule(lambda a, m: torch.ceil(torch.log2(a.double() / m))): "not clamped",
        _rule(lambda a, m: torch.ceil(torch.log2(a.double() / 448)).clamp(-127, 127)): "fp8_e4m3's max 448",
        _rule(lambda a, m: (torch.ceil(torch.log2(a.double())) - 8).clamp(-127, 127)): "not by 2**emax_elem",
        _rule(lambda a, m: (torch.floor(torch.log2(a.double() / m)) + 1).clamp(-127, 127)): "floor(...) + 1",
        _rule(lambda a, m: s.rceil_shared_exponent(a) + 127): "stored E8M0 code",
        _rule(lambda a, m: -s.rceil_shared_exponent(a)): "sign is flipped",
        _rule(lambda a, m: s.rceil_shared_exponent(a) - 1): "so it would saturate",
        _rule(lambda a, m: s.rceil_shared_exponent(a) + 2): "k - 1 fits the block too",
        _rule(lambda a, m: s.rceil_shared_exponent(a).float() + 0.5): "whole numbers",
        _rule(lambda a, m: s.rceil_shared_exponent(a).flatten()): "shape",
        _rule(lambda a, m: 3): "return a tensor",
        (lambda amax: s.rceil_shared_exponent(amax)): "raised TypeError",
        (lambda a, f: 1 / 0): "ZeroDivisionError",
        "x": "expected a function",
    }
    results = [starter]
    for fn, words in wrong.items():
        r = micro.check_rceil_shared_exponent(fn)
        assert_not_yet(r)
        assert words in r.message, (words, r.message)
        results.append(r)
    # no message states the answer for the amaxes tried (the exponents of all of them, in order)
    amax = torch.tensor(micro_checks._AMAXES).reshape(-1, 1)
    want = s.rceil_shared_exponent(amax).flatten().tolist()
    for r in results:
        assert str(want) not in r.message and not reveals(r.message, str(want)), r.message
    # the solution plugs into the lesson's quantizer: 470 goes up to the scale 2**1 and is stored as 480
    block = torch.zeros(1, 32)
    block[0, 0] = 470.0
    values, _, k, saturated = mx_block_quantize(block, "fp8_e4m3", s.rceil_shared_exponent)
    assert float(values[0, 0]) == 480 and int(k[0, 0]) == 1 and not saturated.any()


def test_the_exercise_amaxes_tell_the_float32_log_apart():
    """The float32 number just above 448 * 2**10 is where float32's log2 loses the answer (it rounds the log to
    exactly 10) while frexp keeps it: the checker's "float32's log2 rounds" hint is about a real mistake."""
    near = torch.tensor([micro_checks._NEAR])
    assert float(torch.log2(near / 448)) == 10.0 and float(near) > 448 * 2**10
    assert micro_checks._exact_rceil(micro_checks._NEAR, 448.0) == 11
    assert int(solution("10").rceil_shared_exponent(near)) == 11


def test_sr_probability_exercise():
    s = solution("10")
    x = float(torch.tensor(1 + 1e-4, dtype=torch.float32))
    gap = formats.FORMATS["bf16"].eps  # between bf16's 1 and its next value
    want = (x - 1.0) / gap
    starter = micro.check_sr_probability(None)
    assert_your_turn(starter)
    assert micro.check_sr_probability(s.SR_PROBABILITY)
    results = [starter]
    answers = (
        (1e-4, "distance itself"),
        (1e-4 / gap, "float32(1 + 1e-4), not 1 + 1e-4"),  # 0.0128: float32's rounding of the sum missed
        (1e-4 / 2**-8, "factor of 2"),
        (0.5, "too large"),
        (want / 3, "too small"),
        (2.0, "not a"),
        ("x", "answer with a probability"),
    )
    for answer, words in answers:
        r = micro.check_sr_probability(answer)
        assert_not_yet(r)
        assert words in r.message, r.message
        results.append(r)
    for r in results:
        assert not reveals(r.message, want), r.message
    assert math.isclose(want, 0.0128, rel_tol=0.01) and want != 1e-4 / gap
