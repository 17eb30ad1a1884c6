"""Instructor solutions for lesson 07's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

import torch

from amp_lessons import fp8

# Exercise 1 (section 1, before the lesson explains the choice): the "hybrid" recipe: precision for the forward pass, range for the gradients.
FP8_FORMAT_CHOICE = {"weights": "e4m3", "activations": "e4m3", "gradients": "e5m2"}


# Exercise 2 (section 2, before the lesson's amax_scale): the per-tensor ("current") scale: the largest magnitude
# lands on the format's max.
def amax_scale(x, fmt_max):
    amax = float(x.abs().max())
    if amax == 0:
        return 1.0  # nothing to scale; never divide by zero
    return fmt_max / amax


# Exercise 3 (section 4, before the lesson's Fp8LinearFn): the backward pass of an fp8 linear layer whose forward the
# notebook gives: dy cast to e5m2 with its own amax scale, the forward's fp8 copies reused, db from the fp32 dy.
class MyFp8LinearFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, fwd_fmt, bwd_fmt):  # given in the notebook
        x8 = fp8.fake_quantize(x, fwd_fmt, fp8.amax_scale(x, fwd_fmt))
        w8 = fp8.fake_quantize(weight, fwd_fmt, fp8.amax_scale(weight, fwd_fmt))
        ctx.save_for_backward(x8, w8)
        ctx.bwd_fmt, ctx.has_bias = bwd_fmt, bias is not None
        y = x8 @ w8.t()
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        x8, w8 = ctx.saved_tensors
        dy = dy.float()
        dy8 = fp8.fake_quantize(dy, ctx.bwd_fmt, fp8.amax_scale(dy, ctx.bwd_fmt))  # e5m2, its own scale
        dx = dy8 @ w8  # fp8 values, fp32 products and sums
        dw = dy8.t() @ x8
        db = dy.sum(0) if ctx.has_bias else None  # a cheap sum: from the fp32 gradient
        return dx, dw, db, None, None  # no gradient for the two format names
