"""Lesson 07's model: :class:`Fp8Linear`, a miniature fp8 linear layer built on the lesson's own fp8 linear Function
(:class:`~.key_code.Fp8LinearFn`), as fp8 training recipes assemble one; :func:`.experiments.fp8_linear_check`
measures it against fp32. :class:`Fp8LinearFn` is the lesson's Function with its arguments checked.
"""

from __future__ import annotations

import torch

from .._validate import allocation, count, flag
from ..formats import get_format
from . import key_code
from ._records import MAX_DIM

__all__ = [
    "Fp8Linear",
    "Fp8LinearFn",
]


def _float_tensor_arg(t, what: str, dims: int) -> torch.Tensor:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(t).__name__} {t!r}"[:200])
    if not t.is_floating_point():
        raise TypeError(f"{what} must be a real floating-point tensor (float32, float16, bfloat16, ...), got {t.dtype}")
    if t.dim() != dims:
        raise ValueError(f"{what} must be {dims}-D, got shape {tuple(t.shape)}")
    return t


class Fp8LinearFn(key_code.Fp8LinearFn):
    """The lesson's fp8 linear Function (``key_code.Fp8LinearFn``: ``y = x @ w.T + b`` with x and w cast to
    ``fwd_fmt``, the output gradient to ``bwd_fmt``) with its arguments checked before it runs:
    ``Fp8LinearFn.apply(x, weight, bias=None, fwd_fmt="fp8_e4m3", bwd_fmt="fp8_e5m2")`` with ``x`` a real
    floating-point batch x in matrix, ``weight`` out x in, ``bias`` None or a real floating-point vector of
    ``out`` values, all on one device, and the formats names of :data:`amp_lessons.formats.FORMATS`."""

    @classmethod
    def apply(cls, x, weight, bias=None, fwd_fmt="fp8_e4m3", bwd_fmt="fp8_e5m2"):
        _float_tensor_arg(x, "x", 2)
        _float_tensor_arg(weight, "weight", 2)
        if weight.shape[1] != x.shape[1]:
            raise ValueError(
                f"weight must be out x in with in = x.shape[1] = {x.shape[1]}, got weight of shape {tuple(weight.shape)}"
            )
        if bias is not None:
            _float_tensor_arg(bias, "bias (None or a tensor)", 1)
            if bias.shape[0] != weight.shape[0]:
                raise ValueError(
                    f"bias must hold weight.shape[0] = {weight.shape[0]} values, got shape {tuple(bias.shape)}"
                )
        for t, what in ((x, "x"), (weight, "weight")):
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{what} holds inf or NaN: no fp8 scale fits it ({what} must hold finite values)")
        devices = {t.device for t in (x, weight, bias) if t is not None}
        if len(devices) > 1:
            raise ValueError(f"x, weight and bias must be on one device, got {sorted(map(str, devices))}")
        fwd, bwd = get_format(fwd_fmt, what="fwd_fmt").name, get_format(bwd_fmt, what="bwd_fmt").name
        return super().apply(x, weight, bias, fwd, bwd)


# --- an fp8 linear layer ---------------------------------------------------------------------------


class Fp8Linear(torch.nn.Module):
    """A miniature fp8 linear layer, assembled as fp8 training recipes do (a model: inputs rounded
    bit-exactly to fp8, matmuls in fp32):
    fp32 master weight (what the optimizer updates); forward: input and weight cast to e4m3 with
    per-tensor current scales, product accumulated in fp32; backward: the output gradient cast to
    e5m2 with its own scale, dgrad and wgrad accumulated in fp32. Takes 2-D inputs (batch x in)."""

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, *, fwd_fmt="fp8_e4m3", bwd_fmt="fp8_e5m2"
    ):
        super().__init__()
        in_features = count(in_features, "in_features", 1, MAX_DIM)
        out_features = count(out_features, "out_features", 1, MAX_DIM)
        allocation(in_features * out_features, f"a {out_features}x{in_features} weight")
        ref = torch.nn.Linear(in_features, out_features, bias=flag(bias, "bias"))
        self.weight = ref.weight
        self.bias = ref.bias
        self.fwd_fmt, self.bwd_fmt = get_format(fwd_fmt, what="fwd_fmt").name, get_format(bwd_fmt, what="bwd_fmt").name

    @classmethod
    def from_linear(cls, linear: torch.nn.Linear, **kwargs) -> Fp8Linear:
        """An Fp8Linear with a copy of ``linear``'s weight and bias."""
        if not isinstance(linear, torch.nn.Linear):
            raise TypeError(f"linear must be a torch.nn.Linear, got {type(linear).__name__}")
        new = cls(linear.in_features, linear.out_features, linear.bias is not None, **kwargs)
        with torch.no_grad():
            new.weight.copy_(linear.weight)
            if linear.bias is not None:
                new.bias.copy_(linear.bias)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise ValueError(f"Fp8Linear takes 2-D inputs (batch x features), got shape {tuple(x.shape)}")
        return key_code.Fp8LinearFn.apply(x, self.weight, self.bias, self.fwd_fmt, self.bwd_fmt)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.weight.shape[1]}, out_features={self.weight.shape[0]}, "
            f"bias={self.bias is not None}, forward {self.fwd_fmt}, backward {self.bwd_fmt}"
        )
