"""Instructor solutions for lesson 05's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

# Exercise 2a: the lesson's default census (fp16.gradient_census()): only 0.03% of the non-zero
# activation gradients round to zero in fp16 unscaled, under the 1% limit, so no scaling is needed.
SMALLEST_SCALE_DEFAULT = 2**0

# Exercise 2b (as in the notebook): the small-loss census (scaling.small_loss_census()): of the NON-ZERO activation
# gradients (the share the sweep, the scale explorer and the checker all show), 1.05% still underflow at 2**10 and
# 0.55% at 2**11 (nothing overflows until 2**32).
SMALLEST_SCALE_SMALL_LOSS = 2**11


# Exercise 1 (section 4, before the lesson's own DynamicScaler): GradScaler's update rule, written out.
def scaler_update(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    if found_inf:
        return scale * backoff_factor, 0  # back off, and count clean steps from scratch
    growth_tracker += 1
    if growth_tracker == growth_interval:
        return scale * growth_factor, 0  # enough clean steps in a row: grow
    return scale, growth_tracker
