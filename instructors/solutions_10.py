"""Solutions of the microscaling lesson's exercises (run through the checkers by tests/test_solutions.py)."""

import torch

from amp_lessons.micro.key_code import MX_ELEMENTS


def rceil_shared_exponent(amax, element_format="fp8_e4m3"):
    # the smallest k with amax / 2**k <= max_elem: k = ceil(log2(amax / max_elem)), read exactly with frexp
    # (amax / max_elem = m * 2**e, m in [0.5, 1): ceil(log2) is e, or e - 1 when m is exactly 0.5, a power of two).
    # The quotient in float64: a bf16, fp16 or float32 amax divided there neither underflows nor rounds onto a
    # power of two (in amax's own dtype it can: fp16's 2**-24 / 448 underflows to 0)
    max_elem = MX_ELEMENTS[element_format][3]
    m, e = torch.frexp(amax.double() / max_elem)
    k = torch.where(m == 0.5, e - 1, e)
    k = torch.where(amax == 0, -127, k)  # a block of zeros fits under any scale: e8m0's smallest, as the floor rule
    return k.clamp(-127, 127)  # e8m0 holds 2**-127 .. 2**127


def my_stochastic_round(x, noise):
    # bf16 keeps the top 16 bits of a float32. Added to the 16 dropped bits, the noise (uniform in [0, 2**16))
    # carries into bit 16, one bf16 step up in magnitude, with probability (dropped bits) / 2**16. The sign bit sits
    # above the magnitude: a negative value's low bits are those of its absolute value, so it rounds away from zero
    # as often, and no finite value carries into the sign.
    bits = x.view(torch.int32)
    rounded = (bits + noise) & ~0xFFFF  # clear the 16 low bits
    return rounded.view(torch.float32)


# (the former Exercise 2's answer, now shown in the cell after Exercise 2) float32(1 + 1e-4) lies between bf16's 1
# and 1 + 2**-7; SR goes up with probability distance / gap = 839 / 2**16
SR_PROBABILITY = (1.00010001659393310546875 - 1.0) / 2**-7
