"""Checkers for lesson 09's exercises: the bytes per parameter of a fully sharded rank, and a bf16 ring sum.

Each returns a :class:`amp_lessons.checks.CheckResult` and never raises on a learner's answer."""

from __future__ import annotations

import math

import torch

from .._validate import seed as _seed
from ..checks import CheckResult, call_learner, is_placeholder
from ..distributed.experiments import pairwise_sum, ring_sum
from ..formats import quantize

__all__ = [
    "check_ring_sum_bf16",
    "check_sharded_bytes",
]

_SHARD_CASES = ((4, 4, 8, 2), (4, 4, 8, 8), (2, 2, 4, 4), (4, 4, 8, 1), (4, 4, 8, 1024))


def check_sharded_bytes(fn) -> CheckResult:
    """Exercise: ``fn(param_bytes, grad_bytes, optimizer_bytes, world_size)`` returns the bytes per parameter
    ONE rank holds when parameters, gradients and optimizer states are all sharded over ``world_size`` ranks
    (FSDP's full sharding, ZeRO stage 3). Checked on five cases against the arithmetic that the lesson's
    measurement matched."""
    if is_placeholder(fn):
        return CheckResult(
            False, "write fn(param_bytes, grad_bytes, optimizer_bytes, world_size) and pass the function", todo=True
        )
    for p, g, o, n in _SHARD_CASES:
        got, err = call_learner(fn, p, g, o, n)
        if err:
            return CheckResult(False, err)
        if is_placeholder(got):
            return CheckResult(
                False,
                f"so far sharded_bytes returns {'...' if got is ... else repr(got)}: return the bytes per parameter "
                "that one of world_size ranks "
                "holds when parameters, gradients and optimizer states are all sharded",
                todo=True,
            )
        try:
            got = float(got)
        except (TypeError, ValueError):
            return CheckResult(False, f"fn{(p, g, o, n)} returned {got!r}, not a number of bytes")
        want = (p + g + o) / n
        if math.isclose(got, want, rel_tol=1e-9):
            continue
        if math.isclose(got, p + g + o, rel_tol=1e-9):
            hint = "that is what every rank holds without sharding (DDP): each rank keeps only 1/N of every tensor"
        elif math.isclose(got, p / n + g + o, rel_tol=1e-9):
            hint = "you sharded only the parameters: FSDP shards the gradients and the optimizer states too"
        elif math.isclose(got, (p + g) / n + o, rel_tol=1e-9) or math.isclose(got, p / n + g / n + o, rel_tol=1e-9):
            hint = "the optimizer states are sharded too: they are created from the sharded parameters"
        else:
            hint = "add the three, then divide by the number of ranks that share them"
        return CheckResult(False, f"fn{(p, g, o, n)} gave {got:g} bytes, which is not it: {hint}")
    return CheckResult(
        True, "16 bytes per parameter (fp32 weights, gradients and two Adam states) become 16/N on each of N ranks"
    )


def check_ring_sum_bf16(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(grads)`` (a float32 tensor, one row per rank, bf16-representable values) returns the
    sum of the rows accumulated rank 0, 1, 2, ... with the running sum rounded to bf16 after every add (as
    a bf16 ring reduce-scatter does), as a float32 tensor. Compared bit for bit with
    :func:`amp_lessons.distributed.ring_sum`."""
    seed = _seed(seed)
    if is_placeholder(fn):
        return CheckResult(False, "write fn(grads) and pass the function itself", todo=True)
    gen = torch.Generator().manual_seed(seed)
    for n in (2, 7, 64):
        grads = quantize(torch.randn(n, 32, generator=gen), "bf16")
        got, err = call_learner(fn, grads.clone())
        if err:
            return CheckResult(False, err)
        if not isinstance(got, torch.Tensor):
            return CheckResult(False, f"return a tensor, got {type(got).__name__}")
        if got.shape != (32,):
            return CheckResult(False, f"with {n} ranks of 32 values the sum has shape (32,), got {tuple(got.shape)}")
        got = got.float()
        want = ring_sum(grads, "bf16")
        if torch.equal(got, want):
            continue
        if torch.equal(got, grads.sum(0)):
            return CheckResult(
                False,
                "so far this sums in fp32, like reduce_dtype=float32. In a bf16 ring reduction every partial sum is "
                "a bf16 value: add rank 0, 1, 2, ... and round to bf16 after each add",
                todo=True,
            )
        once = quantize(grads.sum(0), "bf16")
        if torch.equal(got, once):
            return CheckResult(
                False,
                f"with {n} ranks your result equals the sum accumulated in fp32 (rounded once at most): that is "
                "reduce_dtype=float32. In a bf16 reduction every partial sum is a bf16 value: round after each add",
            )
        if torch.equal(got, pairwise_sum(grads, "bf16")):
            return CheckResult(False, "that is a tree (pairwise) order; the ring adds rank 0, then 1, then 2, ...")
        wrong = int((got != want).sum())
        return CheckResult(False, f"with {n} ranks {wrong} of 32 sums differ from the bf16 ring sum")
    return CheckResult(True, "bit for bit the bf16 ring sum for 2, 7 and 64 ranks")
