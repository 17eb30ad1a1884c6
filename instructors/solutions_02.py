"""Instructor solutions for lesson 02's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

from amp_lessons.formats import quantize


def tf32_matmul(a, b):
    """Exercise 1: the course's model of a TF32 matmul: both inputs rounded to TF32 to nearest,
    ties to even (what an H100 was measured to do; cuBLAS does not document its rounding), then an
    IEEE fp32 product."""
    return quantize(a, "tf32", "nearest_even") @ quantize(b, "tf32", "nearest_even")


# Exercise 2: bf16 has 7 mantissa bits, TF32 has 10: eps is 2**3 = 8 times larger, and the matmul
# error (dominated by the rounding of the inputs) scales with it.
ERROR_RATIO = 2 ** (10 - 7)
