"""Checkers for lesson 11's exercises: the pointwise chain ``rms_norm(silu(g) * h)`` on bf16 tensors, written
out the two ways a compiler can round it. They run eagerly (no compilation), in milliseconds.

Each returns a :class:`amp_lessons.checks.CheckResult` and never raises on a learner's answer."""

from __future__ import annotations

import torch

from .._validate import seed as _seed
from ..checks import CheckResult, call_learner
from .experiments import make_inputs, round_once, workload

__all__ = [
    "check_round_every_op",
    "check_round_once",
]

_HALF_ULP = 2.0**-8  # bf16 keeps 8 significant bits: one correct rounding is off by at most 2**-8 relatively


def _answer(fn, seed: int):
    h, g = make_inputs("chain", seed, rows=16, width=32)
    with torch.no_grad():
        out, err = call_learner(fn, h, g)
    if err is not None:
        return h, g, None, err
    if not isinstance(out, torch.Tensor):
        return h, g, None, f"your function returned {type(out).__name__}, not a tensor"
    if out.shape != h.shape:
        return h, g, None, f"your function returned shape {tuple(out.shape)}; h and g have shape {tuple(h.shape)}"
    if out.dtype != torch.bfloat16:
        return (
            h,
            g,
            None,
            f"your function returned {out.dtype}; the chain's result is bf16 (round it: .to(torch.bfloat16))",
        )
    return h, g, out, None


def check_round_once(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(h, g)`` computes ``rms_norm(silu(g) * h)`` of bf16 ``h``, ``g`` the way Inductor's fused
    kernel does: in fp32 throughout, rounded to bf16 once at the end. Checked against an fp64 reference: every
    element must be within one correct rounding (relative error at most 2**-8)."""
    seed = _seed(seed)
    h, g, out, err = _answer(fn, seed)
    if err is not None:
        return CheckResult(False, err)
    ref = workload("chain")(h.double(), g.double())
    rel = float(((out.double() - ref).abs() / ref.abs()).max())
    eager = workload("chain")(h, g)
    if rel <= _HALF_ULP:
        return CheckResult(
            True,
            f"largest relative error {rel:.2e} <= 2**-8 = {_HALF_ULP:.2e}: one rounding. Eager mode's three roundings "
            f"give {float(((eager.double() - ref).abs() / ref.abs()).max()):.2e} on the same inputs",
        )
    if torch.equal(out, eager):
        return CheckResult(
            False,
            "so far this equals eager mode's result, rounded after every op: compute in fp32 (h.float(), g.float()) "
            "and round to bf16 once, at the end",
            todo=True,
        )
    return CheckResult(
        False,
        f"largest relative error {rel:.2e} is more than one rounding allows (2**-8 = {_HALF_ULP:.2e}). Hint: "
        "h.float() and g.float() first, and .to(torch.bfloat16) only on the final result",
    )


def check_round_every_op(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(h, g)`` computes ``rms_norm(silu(g) * h)`` of bf16 ``h``, ``g`` the way eager mode does
    (and Inductor with ``emulate_precision_casts=True``): each op in fp32, its result rounded to bf16 before
    the next op. Checked bit for bit against eager mode."""
    seed = _seed(seed)
    h, g, out, err = _answer(fn, seed)
    if err is not None:
        return CheckResult(False, err)
    eager = workload("chain")(h, g)
    if torch.equal(out, eager):
        return CheckResult(True, "equal to eager mode bit for bit: silu, mul and rms_norm each round to bf16")
    diff = int((out != eager).sum())
    if torch.equal(out, round_once(h, g)):
        return CheckResult(
            False,
            "so far this equals the fused result (one rounding at the end): round to bf16 after silu, after the "
            "multiplication, and after rms_norm",
            todo=True,
        )
    hint = "round to bf16 after silu, after the multiplication, and after rms_norm (computed from fp32)"
    return CheckResult(False, f"{diff} of {out.numel()} elements differ from eager mode; {hint}")
