"""Lesson 07's model: :class:`Fp8Linear`, a miniature fp8 linear layer on the lesson's fp8 linear Function
(:class:`~.key_code.Fp8LinearFn`)."""

from __future__ import annotations

import torch

from .._validate import allocation, count, flag
from ..formats import get_format
from . import key_code
from ._records import MAX_DIM

__all__ = ["Fp8Linear"]


class Fp8Linear(torch.nn.Module):
    """A miniature fp8 linear layer, assembled as fp8 training recipes do (inputs rounded bit-exactly to fp8, matmuls
    in fp32): an fp32 master weight; forward: input and weight cast to e4m3 with per-tensor current scales;
    backward: the output gradient cast to e5m2 with its own scale. Takes 2-D inputs (batch x in)."""

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
