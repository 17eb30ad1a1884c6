"""Checkers for lesson 06's exercise (an AMP training step with gradient clipping)."""

from __future__ import annotations

import torch
from torch import nn

from ..checks import CheckResult, call_learner, is_placeholder

__all__ = [
    "check_clipped_amp_step",
]


def _setup(seed: int):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    g = torch.Generator().manual_seed(seed)
    batches = [(torch.randn(16, 8, generator=g) * 10, torch.randn(16, 4, generator=g)) for _ in range(6)]
    return model, batches


def _run(step_fn, seed: int = 0):
    """Six steps of ``step_fn(model, optimizer, scaler, x, y)`` on a fresh model; the parameters and scales."""
    model, batches = _setup(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
    scales = []
    for x, y in batches:
        _, err = call_learner(step_fn, model, opt, scaler, x, y)
        if err:
            return None, None, err
        scales.append(scaler.get_scale())
    return [p.detach().clone() for p in model.parameters()], scales, None


def _reference(model, optimizer, scaler, x, y, *, clip=True, clip_first=False, update=True, autocast=True):
    with torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    if clip and clip_first:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.unscale_(optimizer)
    if clip and not clip_first:
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    if update:
        scaler.update()
    optimizer.zero_grad(set_to_none=True)


def _starter(model, optimizer, scaler, x, y):
    """The exercise's starter: a plain fp32 step (no autocast, no scaler, no clipping)."""
    loss = nn.functional.mse_loss(model(x).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def check_clipped_amp_step(fn) -> CheckResult:
    """Exercise: ``fn(model, optimizer, scaler, x, y)`` runs one training step of ``model`` under fp16 autocast
    (``torch.autocast("cpu", dtype=torch.float16)``; MSE loss on the fp32-upcast output) with ``scaler``
    (a ``torch.amp.GradScaler``) and the gradients clipped to a total norm of 1.0 before the optimizer step.
    Six steps of a small seeded model are compared with the recipe's bit for bit (parameters and scales)."""
    if is_placeholder(fn):
        return CheckResult(False, "write fn(model, optimizer, scaler, x, y) and pass the function itself", todo=True)
    if not callable(fn):
        return CheckResult(False, f"expected a function, got {type(fn).__name__} {fn!r:.60}")
    got, scales, err = _run(fn)
    if err and "unscale_() is being called after step()" in err:  # GradScaler's error when update() is missing
        return CheckResult(
            False, f"{err.rstrip('.')}. Hint: call scaler.update() after scaler.step(optimizer), every step"
        )
    if err:
        return CheckResult(False, err)
    want, want_scales, _ = _run(_reference)

    def same(params):
        return params is not None and all(torch.equal(a, b) for a, b in zip(got, params))

    if same(want) and scales == want_scales:
        return CheckResult(True, "autocast forward, scaled backward, unscale_, clip, step, update: the recipe's step")
    params, sc, _ = _run(_starter)
    if same(params) and scales == sc:
        return CheckResult(
            False,
            "so far this is the starter's plain fp32 step: it uses neither autocast nor the scaler, and nothing "
            "limits the gradients' norm. The exercise names the pieces; where each goes is yours to work out",
            todo=True,
        )
    variants = (
        (
            {"clip_first": True},
            "you clipped the SCALED gradients (multiplied by the scale, so their norm is far above 1.0 and the "
            "clip shrinks them too much): call scaler.unscale_(optimizer) before clip_grad_norm_",
        ),
        ({"clip": False}, "the gradients were not clipped: nn.utils.clip_grad_norm_(model.parameters(), 1.0)"),
        ({"update": False}, "the scale never changes: call scaler.update() after scaler.step(optimizer)"),
        (
            {"autocast": False},
            "the forward ran in fp32: run model(x) and the loss under torch.autocast('cpu', dtype=torch.float16)",
        ),
    )
    for kwargs, hint in variants:
        params, sc, _ = _run(lambda *a, kw=kwargs: _reference(*a, **kw))
        if same(params) and scales == sc:
            return CheckResult(False, f"close, but {hint}")
    if scales != want_scales:
        return CheckResult(False, f"the scaler's scale went {scales}, not as in the recipe: use scaler.scale(loss), "
                                  "scaler.step(optimizer) and scaler.update()")  # fmt: skip
    return CheckResult(False, "the scale moved as in the recipe, but the parameters after six steps differ from "
                              "the recipe's: check that model(x) and the loss (the MSE of model(x).float()) run under "
                              "torch.autocast('cpu', dtype=torch.float16), that the clip is to a total norm of 1.0, "
                              "and what the gradients hold at the moment you clip them")  # fmt: skip
