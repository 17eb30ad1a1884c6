"""Tests of amp_lessons.bits._checks."""

import math

import pytest

from amp_lessons import bits, formats
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


def test_max_finite():
    r = bits.check_max_finite(lambda e, m: (2 - 2.0**-m) * 2.0 ** (2 ** (e - 1)))
    assert not r and "all-ones exponent" in r.message and "too large by a factor of 2" in r.message
    r = bits.check_max_finite(lambda e, m: 2.0 ** (2 ** (e - 1)))
    assert not r and "mantissa of the largest" in r.message
    r = bits.check_max_finite(lambda e, m: None)
    assert_your_turn(r)
    # the starter's message points the way without the formula (the exercise cell's stored output shows it)
    assert "largest exponent field that is not all ones" in r.message and "all-ones mantissa" in r.message
    assert "2**" not in r.message and "bias" not in r.message
    r = bits.check_max_finite(lambda e, m: 3.0)
    assert_not_yet(r)
    assert "largest exponent field that is not all ones" in r.message and "too small" in r.message
    assert "expected a function" in bits.check_max_finite(3).message


def test_ulp():
    r = bits.check_ulp(lambda x: 2.0 ** (math.floor(math.log2(x)) - 7))
    assert not r and "below the smallest normal" in r.message and "2**" not in r.message
    r = bits.check_ulp(lambda x: 2.0 ** (math.floor(math.log2(x)) - 6))
    assert not r and "power of two at or below x" in r.message and "2**" not in r.message
    assert "too large by a factor of 2" in r.message
    assert not bits.check_ulp(lambda x: x * 2**-7)


def test_decode_bits():
    assert bits.check_decode_bits(2.75, 0b0_1000_011)  # 1.375 * 2
    r = bits.check_decode_bits(3.0, 0b0_1000_011)
    assert not r and "exponent field 8" in r.message and "bias 7" in r.message
    assert "`...`" in bits.check_decode_bits(None, 0b0_1000_011).message
    assert bits.check_decode_bits(448.0, 0x7E)


def test_format_choice():
    assert bits.check_format_choice("bf16", 1e-30, 1e30, 0.01)
    assert "overflows" in bits.check_format_choice("fp16", 1e-30, 1e30, 0.01).message
    assert "normal" in bits.check_format_choice("fp16", 1e-6, 1e3, 0.01).message
    assert "relative error" in bits.check_format_choice("bf16", 1e-3, 1e3, 1e-3).message
    assert "works, but a 16-bit" in bits.check_format_choice("fp32", 1e-3, 1e3, 1e-3).message
    assert "not a format name" in bits.check_format_choice("fp64", 1, 2, 0.1).message
    with pytest.raises(ValueError, match="low < high"):
        bits.check_format_choice("bf16", 10, 1, 0.1)


# Exercise 3 as lesson 01 gives it, both limits (tests/test_checker_contract.py has the first): each has one answer
# among the formats, and no other format's message names it.


def test_format_choice_exercise():
    s = solution("01")
    exercises = [((1e-6, 1e6, 0.01), s.FORMAT_CHOICE_A), ((1e-2, 1e2, 0.001), s.FORMAT_CHOICE_B)]
    for limits, want in exercises:
        assert want == next(n for n in formats.FORMATS if bits.check_format_choice(n, *limits))
        r = bits.check_format_choice(..., *limits)
        assert_your_turn(r)
        assert not reveals(r.message.split("one of")[0], want)  # the list of all formats names it, among the rest
        assert bits.check_format_choice(want, *limits)
        for name in formats.FORMATS:
            if name != want:
                r = bits.check_format_choice(name, *limits)
                assert_not_yet(r)
                assert not reveals(r.message, want), r.message


# The checkers cannot be fooled: the course's own engine does not count as an answer, and a formula that holds in the
# middle of the range but not at its edges (subnormals, the top binade of a narrow format) is refused.


def test_max_finite_and_ulp_may_not_look_the_answer_up():
    import torch

    def next_code(x):  # the checker's own way: the neighbour's code
        return (formats.from_bits(formats.to_bits(torch.tensor([x]), "bf16") + 1, "bf16") - x).item()

    for r in (bits.check_max_finite(lambda e, m: formats.FloatFormat("mine", e, m).max), bits.check_ulp(next_code)):
        assert_not_yet(r)
        assert "formats engine" in r.message


def test_ulp_of_float32_arithmetic_fails():
    # the spacing of fp32 (float32 arithmetic's own next value), not bf16's
    assert_not_yet(bits.check_ulp(lambda x: math.ulp(x) * 2**29 if x >= 2.0**-126 else 2.0**-149))


@pytest.mark.parametrize("name", list(formats.FORMATS))
def test_ulp_checker_holds_for_every_element_format(name):
    # an answer written from the widths alone passes in every format (fp8, fp6, fp4 included: their max has no
    # larger neighbour and 1000 saturates, so the checker only asks about values below max)
    f = formats.FORMATS[name]
    smallest_normal, smallest_subnormal, m = f.smallest_normal, f.smallest_subnormal, f.mantissa_bits

    def right(x):
        return smallest_subnormal if x < smallest_normal else 2.0 ** (math.floor(math.log2(x)) - m)

    assert bits.check_ulp(right, name), name
    assert not bits.check_ulp(lambda x: 2.0 ** (math.floor(math.log2(x)) - m), name)  # subnormals forgotten
