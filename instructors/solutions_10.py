"""Solutions of the microscaling lesson's exercises (run through the checkers by tests/test_solutions.py)."""

import math


def floor_scale_exponent(amax):
    # OCP MX v1.0: X = 2**(floor(log2(amax)) - emax_elem); e4m3's largest exponent is 8 (448 = 1.75 * 2**8)
    return math.frexp(amax)[1] - 1 - 8


# float32(1 + 1e-4) lies between bf16's 1 and 1 + 2**-7; SR goes up with probability distance / gap
SR_PROBABILITY = (1.00010001659393310546875 - 1.0) / 2**-7
