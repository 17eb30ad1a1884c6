"""Lesson 01's face answers nonsense with a ValueError or TypeError that names the argument and what is allowed."""

import pytest

from amp_lessons import bits


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: bits.check_decode_bits(2.75, True), TypeError, ["code", "True", "0..255"]),
        (lambda: bits.check_decode_bits(2.75, 2.0), TypeError, ["code", "2.0", "0..255"]),
        (lambda: bits.check_decode_bits(2.75, 256), ValueError, ["code", "256", "0..255"]),
        (lambda: bits.check_decode_bits(2.75, 1, "e8m0"), ValueError, ["fmt='e8m0'", "scale format", "fp16"]),
        (lambda: bits.check_decode_bits(2.75, 1, None), ValueError, ["fmt=None", "fp8_e4m3"]),
        (lambda: bits.check_ulp(lambda x: x, "e8m0"), ValueError, ["fmt='e8m0'", "element format"]),
        (lambda: bits.check_ulp(lambda x: x, "fp99"), ValueError, ["fmt='fp99'", "bf16"]),
        (lambda: bits.check_format_choice("fp16", 1e-3, 1e39, 0.01), ValueError, ["high=1e+39", "no answer"]),
        (lambda: bits.check_format_choice("fp16", 1e-3, 10, 1e-9), ValueError, ["max_rel_error=1e-09", "no answer"]),
        (lambda: bits.check_format_choice("fp16", True, 10, 0.01), TypeError, ["low", "True"]),
        (lambda: bits.check_format_choice("fp16", 10, 1, 0.01), ValueError, ["low < high"]),
    ],
)
def test_bad_exercise_parameters_are_named(call, error, words):
    with pytest.raises(error) as info:
        call()
    for w in words:
        assert w in str(info.value), str(info.value)
