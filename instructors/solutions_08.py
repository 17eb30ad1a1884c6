"""Instructor solutions for lesson 08's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

from amp_lessons import debug

# Exercise 1: debug.trace_overflow(broken, xb, autocast=torch.float16).first_nonfinite().label. The model's
# block 4 has weights large enough that its wo output reaches about 2e5 (fp16's largest value is 65504); its input
# is finite, its output holds inf, and every module after it (norm4, head) only passes the inf/NaN on.
FIRST_BAD_LAYER = "block4.wo"


# Exercise 2: keep that one layer in fp32 (autocast off, fp32 inputs); the LayerNorm after it brings the values back
# into fp16's range, so every other Linear layer keeps running in fp16.
def fix(model):
    model.block4.wo = debug.KeepFP32(model.block4.wo)
    return model
