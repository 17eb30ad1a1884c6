"""Instructor solutions for lesson 01's exercises (tests/test_solutions.py runs them through the
same checkers the learners use, so they stay correct)."""

import math


def max_finite(exponent_bits, mantissa_bits):
    """Exercise 1: the largest finite value of an IEEE-style format."""
    bias = 2 ** (exponent_bits - 1) - 1
    emax = (2**exponent_bits - 2) - bias  # the all-ones exponent is reserved for inf/NaN
    return (2 - 2.0**-mantissa_bits) * 2.0**emax  # mantissa all ones: 1.11...1b


def ulp_bf16(x):
    """Exercise 2: the gap from a positive bf16 value x to the next bf16 value."""
    mantissa_bits, emin = 7, -126
    if x < 2.0**emin:  # subnormal: constant spacing
        return 2.0 ** (emin - mantissa_bits)
    return 2.0 ** (math.floor(math.log2(x)) - mantissa_bits)


# Exercise 3: 0b0_1000_011 in fp8 e4m3: sign 0, exponent 8 - bias 7 = 1, mantissa 1.011b = 1.375
DECODED_E4M3 = 1.375 * 2**1

# Exercise 4a: magnitudes from 1e-6 to 1e6 with relative error at most 1%: fp16 overflows (max
# 65504) and 1e-6 is below its smallest normal; bf16 has fp32's range and unit roundoff 2**-8 < 1%.
FORMAT_CHOICE_A = "bf16"
# Exercise 4b: magnitudes from 0.01 to 100 with relative error at most 0.1%: bf16's unit roundoff
# 2**-8 = 0.0039 is too coarse; fp16's 2**-11 = 0.00049 is fine and its range suffices.
FORMAT_CHOICE_B = "fp16"
