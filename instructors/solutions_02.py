"""Instructor solutions for lesson 02's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

import torch


def round_to_tf32(x):
    """Exercise 1a: float32 -> float32 with 10 mantissa bits, the 13 dropped bits rounded to nearest, ties to even,
    on the bits: add 0xFFF plus the kept last bit (so an exact tie, 0x1000, carries only when that bit is 1), then
    clear the 13 low bits. A carry out of the mantissa raises the exponent, as rounding should (up to inf past
    TF32's max). A NaN is kept as it is: clearing the low bits of a NaN whose payload lies only there would make it
    inf."""
    bits = x.view(torch.int32)
    kept_last_bit = (bits >> 13) & 1
    rounded = ((bits + 0x0FFF + kept_last_bit) & ~0x1FFF).view(torch.float32)
    return torch.where(x.isnan(), x, rounded)


def tf32_matmul(a, b):
    """Exercise 1b: the course's model of a TF32 matmul: both inputs rounded to TF32 to nearest,
    ties to even (what an H100 was measured to do; cuBLAS does not document its rounding), then an
    IEEE fp32 product."""
    return round_to_tf32(a) @ round_to_tf32(b)


def predicted_ratio(fmt, than):
    """Exercise 2: with fp32 sums, a matmul's error comes from rounding its inputs, and rounding to nearest moves a
    normal value by up to eps/2 = 2**-(mantissa_bits + 1) of itself (on random data, a fixed share of that). The
    error is proportional to eps: the ratio of two formats' errors is the ratio of their eps, 2 to the power of
    the difference of their mantissa bits (the exponent bits do not enter while the values are in range)."""
    return 2.0 ** (than.mantissa_bits - fmt.mantissa_bits)
