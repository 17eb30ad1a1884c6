"""Instructor solutions for lesson 07's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

# Exercise 1 (section 1, before the lesson explains the choice): the "hybrid" recipe: precision for the forward pass, range for the gradients.
FP8_FORMAT_CHOICE = {"weights": "e4m3", "activations": "e4m3", "gradients": "e5m2"}


# Exercise 2 (section 2, before the lesson's amax_scale): the per-tensor ("current") scale: the largest magnitude
# lands on the format's max.
def amax_scale(x, fmt_max):
    amax = float(x.abs().max())
    if amax == 0:
        return 1.0  # nothing to scale; never divide by zero
    return fmt_max / amax


# Exercise 3 (section 4, before the lesson's Fp8LinearFn): an fp8 linear forward with per-tensor (current) scales, as fp8 training recipes do.
def fp8_linear_forward(x, weight, bias):
    from amp_lessons.fp8 import amax_scale, fake_quantize

    x8 = fake_quantize(x, "fp8_e4m3", amax_scale(x, "fp8_e4m3"))  # cast to e4m3 and back, scaled
    w8 = fake_quantize(weight, "fp8_e4m3", amax_scale(weight, "fp8_e4m3"))
    return x8 @ w8.t() + bias  # fp8 values, fp32 products and sums, fp32 bias
