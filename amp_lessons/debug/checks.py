"""Checkers for lesson 08's exercises: find the first layer of a broken model that overflows fp16, and fix it.

Each returns a :class:`amp_lessons.checks.CheckResult` and never raises on a learner's answer."""

from __future__ import annotations

import copy

import torch
from torch import nn

from .. import _validate
from .._exercise import attempt, correct, exercise, not_yet, placeholder, your_turn
from .._validate import flag, positive
from ..checks import CheckResult
from .experiments import trace_overflow
from .models import KeepFP32, broken_training_setup

__all__ = [
    "check_first_bad_layer",
    "check_fp16_fix",
]


@exercise
def check_first_bad_layer(answer, seed: int = 3) -> CheckResult:
    """Exercise: the name of the first module of :func:`amp_lessons.debug.broken_training_setup`
    (``seed``) whose output holds an inf or a NaN under fp16 autocast (as ``named_modules`` spells it,
    e.g. ``"block0.wi"``). Checked with :func:`amp_lessons.debug.trace_overflow`, run now."""
    seed = _validate.seed(seed)
    placeholder(answer, "replace `...` with a module name as named_modules() spells it, such as 'block0.wi'")
    if not isinstance(answer, str):
        return not_yet(f"give the module's name as a string, e.g. 'block0.wi', not {type(answer).__name__}")
    model, x, _ = broken_training_setup(seed)
    trace = trace_overflow(model, x, autocast=torch.float16)
    first = trace.first_nonfinite("output")
    names = [r.label for r in trace.records]
    if answer == first.label:
        inp = first.input
        return correct(
            f"{first.label} ({first.type}) is the first module whose fp16 output holds inf/NaN; its input was "
            f"finite (abs max about {inp.absmax:.0e}), so the overflow happens inside it"
        )
    if answer not in names:
        return not_yet(f"{answer!r} is not a module of this model; its modules are {names}")
    rec = trace.record(answer)
    if rec.output is None or not rec.output.has_nonfinite:
        seen = "" if rec.output is None else f" (abs max about {rec.output.absmax:.0e})"
        return not_yet(
            f"{answer}'s output is finite under fp16 autocast{seen}. Hint: "
            "trace the exercise's model on its batch, debug.trace_overflow(broken, xb, autocast=torch.float16), "
            "and ask the trace for .first_nonfinite()",
            hide=first.label,
        )
    if first.label.startswith(answer + "."):
        return not_yet(f"{answer} is a container; which module inside it overflows first?", hide=first.label)
    return not_yet(
        f"{answer}'s output holds inf/NaN, but it only passes on what an earlier module produced: its input "
        "already held inf/NaN. Look for the first one in forward order",
        hide=first.label,
    )


def _unchanged(fixed: nn.Module, model: nn.Module) -> bool:
    """Whether ``fixed`` is still ``model`` (the exercise's starter returns the model as it was): the same modules
    and the same parameters."""
    a, b = dict(fixed.named_parameters()), dict(model.named_parameters())
    return (
        repr(fixed) == repr(model)
        and type(fixed) is type(model)
        and a.keys() == b.keys()
        and all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)
    )


@exercise
def check_fp16_fix(fix, seed: int = 3, tolerance: float = 0.05, *, own_wrapper: bool = True) -> CheckResult:
    """Exercise: ``fix(model)`` changes (or wraps parts of) :func:`amp_lessons.debug.broken_training_setup`'s
    model so that under fp16 autocast its output is finite and within ``tolerance`` (relative to the
    largest fp32 output; fp16 rounds every layer, so a few per cent is the scale of honest error) of the
    fp32 model's output, while most Linear layers still run in fp16 (switching autocast off for the
    whole model is not a fix). ``fix`` returns the fixed model (or None if it changed it in place).
    ``own_wrapper``: the exercise asks for the learner's own fp32 wrapper, so the toolkit's
    :class:`~amp_lessons.debug.KeepFP32` is refused; False accepts it."""
    tolerance = positive(tolerance, "tolerance")
    own_wrapper = flag(own_wrapper, "own_wrapper")
    placeholder(fix, "write fix(model) and pass the function itself")
    model, x, _ = broken_training_setup(seed)
    with torch.no_grad():
        want = model(x)
    candidate = copy.deepcopy(model)
    if not callable(fix):
        return not_yet(f"expected a function fix(model), got {type(fix).__name__}")
    got = attempt(fix, candidate, call="fix(model)")
    fixed = candidate if got is None else got
    if not isinstance(fixed, nn.Module):
        return not_yet(f"fix(model) must return the model (or None), got {type(fixed).__name__}")
    try:
        with torch.no_grad():
            trace = trace_overflow(fixed, x, autocast=torch.float16)
            with torch.autocast("cpu", dtype=torch.float16):
                out = fixed(x).float()
    except Exception as exc:  # noqa: BLE001 - any error of the learner's model is feedback
        return not_yet(f"the fixed model raised {type(exc).__name__}: {exc}")
    if own_wrapper and any(isinstance(m, KeepFP32) for m in fixed.modules()):
        return not_yet(
            "fix(model) uses the toolkit's debug.KeepFP32: write the wrapper yourself, a module of your own whose "
            "forward runs the layer with autocast switched off (torch.autocast(device_type, enabled=False)) on "
            "fp32 inputs"
        )
    bad = trace.first_nonfinite("output")
    if bad is not None:
        # the layer is not named: it is the answer to the exercise before this one
        still = (
            "under fp16 autocast the model still produces inf/NaN: find the layer with debug.trace_overflow and "
            "keep just that one out of fp16"
        )
        if _unchanged(fixed, model):
            return your_turn("so far fix(model) leaves the model as it was: " + still)
        return not_yet(still)
    linears = [r for r in trace.records if r.type == "Linear"]
    in_fp16 = [r for r in linears if r.output is not None and r.output.dtype == "float16"]
    if len(in_fp16) < len(linears) // 2:
        return not_yet(
            f"only {len(in_fp16)} of {len(linears)} Linear layers still run in fp16: keep just the layer that "
            "overflows in fp32 and let autocast do the rest"
        )
    if out.shape != want.shape:
        return not_yet(f"the fixed model's output has shape {tuple(out.shape)}, not {tuple(want.shape)}")
    rel = float((out - want).abs().max() / want.abs().max())
    if rel > tolerance:
        return not_yet(
            f"the output is finite but {rel:.1%} away from the fp32 model's (limit {tolerance:.0%}): the fix "
            "changed what the model computes"
        )
    return correct(
        f"finite under fp16 autocast, {len(in_fp16)} of {len(linears)} Linear layers still in fp16, output within "
        f"{tolerance:.0%} of fp32"
    )
