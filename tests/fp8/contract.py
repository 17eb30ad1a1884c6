"""Lesson 07's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.fp8._checks``, keyed by its name."""

import math

import torch

from amp_lessons.fp8 import amax_scale, fake_quantize
from tests.checker_rows import Row


class _Starter(torch.autograd.Function):
    """The notebook's starter: the given forward, a backward that returns no gradients yet."""

    @staticmethod
    def forward(ctx, x, weight, bias, fwd_fmt, bwd_fmt):
        x8 = fake_quantize(x, fwd_fmt, amax_scale(x, fwd_fmt))
        w8 = fake_quantize(weight, fwd_fmt, amax_scale(weight, fwd_fmt))
        ctx.save_for_backward(x8, w8)
        ctx.bwd_fmt, ctx.has_bias = bwd_fmt, bias is not None
        y = x8 @ w8.t()
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        return None, None, None, None, None


class _UnscaledGradient(_Starter):
    """A naive backward: dy cast to e5m2 without a scale (tiny gradients flush, huge ones overflow)."""

    @staticmethod
    def backward(ctx, dy):
        x8, w8 = ctx.saved_tensors
        dy8 = fake_quantize(dy, ctx.bwd_fmt)
        return dy8 @ w8, dy8.t() @ x8, dy.sum(0) if ctx.has_bias else None, None, None


ROWS: dict[str, Row] = {
    "check_amax_scale": Row(
        lambda s: s.amax_scale,
        lambda x, fmt_max: 1.0,
        lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0,
    ),
    "check_fp8_format_choice": Row(
        lambda s: s.FP8_FORMAT_CHOICE,
        {"weights": ..., "activations": ..., "gradients": ...},
        {"weights": "e4m3", "activations": "e4m3", "gradients": "e4m3"},
        hidden=("e5m2",),
        starter_lists_all=True,
    ),
    "check_fp8_linear_backward": Row(
        lambda s: s.MyFp8LinearFn.backward, _Starter, (_UnscaledGradient, _UnscaledGradient.backward)
    ),
}


BAD_CALLS = {
    "scaling_errors": {
        "delayed_history": [[None, 0.9], [math.nan], [-1.0], []],
        "tensors": [lambda: {"nan": torch.tensor([1.0, math.nan])}],
    },
    "amax_scale": {
        "x": [lambda: torch.tensor([1.0, math.nan]), lambda: torch.ones(3, dtype=torch.int32), [1.0]],
        "margin": [10**6],
    },
    "fake_quantize": {
        "x": [lambda: torch.ones(3, dtype=torch.complex64)],
        "scale": [lambda: torch.tensor([2.0, 0.0, 2.0]), lambda: torch.full((5,), 2.0)],
    },
    "blockwise_fake_quantize": {
        "x": [lambda: torch.tensor([[1.0, math.inf]]), lambda: torch.ones(8), lambda: torch.ones(2, 2, 2)],
        "block": [(1, 2, 3)],
        "fmt": ["int8"],
    },
    "fp8_cast_costs": {"shapes": [[(16, 32)], [(16, 0, 16)], []], "compiled": ["yes"]},
    "fp8_scaling_explorer": {"tensor": [lambda: torch.empty(0), lambda: torch.empty(0, 4), lambda: torch.empty(3, 0)]},
}
"""Bad calls of lesson 07's public functions that once got an unclear error, or none (joined to
tests/api_contract.py's)."""
