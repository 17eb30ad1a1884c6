"""Lesson 09's observers: an op log of the dtypes every matmul and collective of a step dispatches."""

from __future__ import annotations

import torch
from torch.distributed.tensor import DTensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

__all__ = ["OpLog", "name_of", "to_local"]


class OpLog(TorchDispatchMode):
    """Records every matmul and collective a step dispatches: op, input dtypes and shapes, output dtype, and
    whether the inputs were finite before it ran (a collective's inputs: what this rank sends)."""

    COLLECTIVES = ("allgather", "all_gather", "reduce_scatter", "allreduce")

    def __init__(self):
        super().__init__()
        self.ops: list[dict] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__.strip("_")
        keep = name in ("mm", "addmm") or any(k in name for k in self.COLLECTIVES)
        if keep:
            tensors = [a for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
            finite = all(bool(torch.isfinite(t).all()) for t in tensors if t.is_floating_point())
        out = func(*args, **kwargs)
        if keep:
            outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.ops.append(
                {
                    "op": name,
                    "dtypes": tuple(name_of(t.dtype) for t in tensors),
                    "shapes": tuple(tuple(t.shape) for t in tensors),
                    "out": name_of(outs[0].dtype) if outs else "",
                    "finite": finite,
                }
            )
        return out

    def find(self, *names: str) -> list[dict]:
        return [o for o in self.ops if o["op"] in names or any(n in o["op"] for n in names if len(n) > 5)]


def name_of(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def to_local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t
