"""Instructor solutions for lesson 03's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

import torch


def kahan16(values):
    """Exercise 1: compensated (Kahan) summation with every operation in fp16. `values` is a 1-D float16 tensor;
    iterating over it gives 0-d float16 tensors, and float16 tensors stay float16 through + and -."""
    total = torch.tensor(0.0, dtype=torch.float16)
    lost = torch.tensor(0.0, dtype=torch.float16)  # what the last addition could not hold (with its sign flipped)
    for v in values:
        y = v - lost  # the addend, corrected by what was lost so far
        t = total + y  # rounded to fp16: the low part of y may be lost here ...
        lost = (t - total) - y  # ... and this recovers it: (what was really added) - (what was meant)
        total = t
    return total


# Exercise 2: adding 1.0 gets stuck where the gap between fp16 neighbours is 2: in [2048, 4096)
# the gap is 2**(11 - 10) = 2, so 2048 + 1 is a tie that rounds to the even neighbour, 2048.
STALL_VALUE = 2048.0
