"""Instructor solutions for lesson 03's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

import math

# Exercise 1: adding 1.0 gets stuck where the gap between fp16 neighbours is 2: in [2048, 4096)
# the gap is 2**(11 - 10) = 2, so 2048 + 1 is a tie that rounds to the even neighbour, 2048.
STALL_VALUE = 2048.0


def smallest_update(w):
    """Exercise 2: half the gap between fp16 neighbours around w (w not a power of two)."""
    exponent = math.floor(math.log2(w))
    return 2.0 ** (exponent - 10) / 2
