"""Checkers for lesson 06's exercises: an AMP training step with gradient clipping, and one optimizer step
accumulated over micro-batches."""

from __future__ import annotations

import torch
from torch import nn

from .._exercise import correct, exercise, not_yet, placeholder, your_turn
from ..checks import CheckResult, call_learner

__all__ = [
    "check_accumulated_amp_step",
    "check_clipped_amp_step",
]


def _run(step_fn, accumulated: bool = False, seed: int = 0):
    """``step_fn(model, optimizer, scaler, *args)`` on a fresh model for each step's arguments (six batches, or four
    lists of micro-batches): the parameters, the scale after each call, and the first error."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    if accumulated:
        calls = [(list(batch),) for batch in _micro_batches(seed)]
    else:
        g = torch.Generator().manual_seed(seed)
        calls = [(torch.randn(16, 8, generator=g) * 10, torch.randn(16, 4, generator=g)) for _ in range(6)]
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
    scales = []
    for args in calls:
        _, err = call_learner(step_fn, model, opt, scaler, *args)
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


def _same_bits(got, params) -> bool:
    """Whether two lists of parameters are equal bit for bit, NaN included (``params`` None: a run that failed)."""
    return params is not None and all(
        torch.equal(a.view(torch.int32), b.view(torch.int32)) for a, b in zip(got, params)
    )


def _judge(got, scales, accumulated, reference, starter, right, start, variants, wrong_scales, wrong_params):
    """The verdict on a run that raised nothing: ``right(want_scales)`` if it is ``reference``'s bit for bit, ``start``
    if the ``starter``'s, "close, but" the hint of the first of ``variants`` ((keyword arguments of ``reference``,
    hint)) it matches, else ``wrong_scales(scales)`` or ``wrong_params``."""
    want, want_scales, _ = _run(reference, accumulated)
    if _same_bits(got, want) and scales == want_scales:
        return correct(right(want_scales))
    params, sc, _ = _run(starter, accumulated)  # an fp32 run through an overflow ends in NaN
    if _same_bits(got, params) and scales == sc:
        return your_turn(start)
    for kwargs, hint in variants:
        params, sc, _ = _run(lambda *a, kw=kwargs: reference(*a, **kw), accumulated)
        if _same_bits(got, params) and scales == sc:
            return not_yet(f"close, but {hint}")
    return not_yet(wrong_scales(scales) if scales != want_scales else wrong_params)


@exercise
def check_clipped_amp_step(fn) -> CheckResult:
    """Exercise: ``fn(model, optimizer, scaler, x, y)`` runs one training step of ``model`` under fp16 autocast
    (``torch.autocast("cpu", dtype=torch.float16)``; MSE loss on the fp32-upcast output) with ``scaler``
    (a ``torch.amp.GradScaler``) and the gradients clipped to a total norm of 1.0 before the optimizer step.
    Six steps of a small seeded model are compared with the recipe's bit for bit (parameters and scales)."""
    placeholder(fn, "write fn(model, optimizer, scaler, x, y) and pass the function itself")
    if not callable(fn):
        return not_yet(f"expected a function, got {type(fn).__name__} {fn!r:.60}")
    got, scales, err = _run(fn)
    if err and "unscale_() is being called after step()" in err:  # GradScaler's error when update() is missing
        return not_yet(f"{err.rstrip('.')}. Hint: call scaler.update() after scaler.step(optimizer), every step")
    if err:
        return not_yet(err)
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
    return _judge(
        got,
        scales,
        False,
        _reference,
        _starter,
        lambda _: "autocast forward, scaled backward, unscale_, clip, step, update: the recipe's step",
        "so far this is the starter's plain fp32 step: it uses neither autocast nor the scaler, and nothing "
        "limits the gradients' norm. The exercise names the pieces; where each goes is yours to work out",
        variants,
        lambda scales: (
            f"the scaler's scale went {scales}, not as in the recipe: use scaler.scale(loss), "
            "scaler.step(optimizer) and scaler.update()"
        ),
        "the scale moved as in the recipe, but the parameters after six steps differ from "
        "the recipe's: check that model(x) and the loss (the MSE of model(x).float()) run under "
        "torch.autocast('cpu', dtype=torch.float16), that the clip is to a total norm of 1.0, "
        "and what the gradients hold at the moment you clip them",
    )


# ---- Exercise 2: gradient accumulation under AMP ----

_MICRO = 3  # micro-batches per optimizer step
_OVERFLOW_STEP = 1  # the optimizer step whose second micro-batch overflows fp16 (inputs of 1e5 > 65504)


def _micro_batches(seed: int):
    """Four optimizer steps' worth of micro-batches; in step 1, one micro-batch's inputs overflow fp16."""
    g = torch.Generator().manual_seed(seed + 1000)
    steps = []
    for k in range(4):
        batch = [(torch.randn(8, 8, generator=g), torch.randn(8, 4, generator=g)) for _ in range(_MICRO)]
        if k == _OVERFLOW_STEP:
            x, y = batch[1]
            batch[1] = (x * 1e5, y)  # cast to fp16 by autocast: inf, so this step's gradients hold inf/NaN
        steps.append(batch)
    return steps


def _accumulate(model, optimizer, scaler, micro_batches, *, divide=True, step_each=False, zero=True, autocast=True):
    n = len(micro_batches)
    for x, y in micro_batches:
        with torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss / n if divide else loss).backward()
        if step_each:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad(set_to_none=True)
    if not step_each:
        scaler.step(optimizer)
        scaler.update()
        if zero:
            optimizer.zero_grad(set_to_none=True)


def _accumulation_starter(model, optimizer, scaler, micro_batches):
    """The exercise's starter: an fp32 optimizer step per micro-batch."""
    for x, y in micro_batches:
        loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


@exercise
def check_accumulated_amp_step(fn) -> CheckResult:
    """Exercise: ``fn(model, optimizer, scaler, micro_batches)`` makes ONE optimizer step from the list
    ``micro_batches`` of equal-sized ``(x, y)`` batches, as one step on their concatenation would: each
    micro-batch's forward and loss (the MSE of ``model(x).float()``) under
    ``torch.autocast("cpu", dtype=torch.float16)``, its scaled backward adding to the gradients, then one
    ``scaler.step`` and one ``scaler.update``. The checker makes four such steps of a small seeded model, one of
    them with a micro-batch that overflows fp16, and compares every parameter and the scale, bit for bit, with the
    recipe's (https://docs.pytorch.org/docs/stable/notes/amp_examples.html#gradient-accumulation)."""
    placeholder(fn, "write fn(model, optimizer, scaler, micro_batches) and pass the function itself")
    if not callable(fn):
        return not_yet(f"expected a function, got {type(fn).__name__} {fn!r:.60}")
    got, scales, err = _run(fn, True)
    if err and "No inf checks were recorded" in err:
        return not_yet(
            f"{err.rstrip('.')}. Hint: update() reads the inf checks that step() records; call scaler.update() once "
            "per optimizer step, right after scaler.step(optimizer), not once per micro-batch"
        )
    if err and "unscale_() has already been called" in err:
        return not_yet(
            f"{err.rstrip('.')}. Hint: unscale_ divides the ACCUMULATED gradients once, just before the step "
            "(and only if you need them unscaled, e.g. to clip); not after every micro-batch"
        )
    if err:
        return not_yet(err)
    variants = (
        (
            {"step_each": True},
            "this makes one optimizer step per micro-batch (a smaller batch, more steps), not one step for all of "
            "them: let the gradients add up over the micro-batches, then step and update once",
        ),
        (
            {"divide": False},
            "the accumulated gradient is the SUM of the micro-batches' mean gradients, len(micro_batches) times the "
            "large batch's: divide each micro-batch's loss by len(micro_batches) before scaling it",
        ),
        (
            {"zero": False},
            "the gradients of one call carry over into the next: zero them after the optimizer step",
        ),
        (
            {"autocast": False},
            "the forward ran in fp32: run model(x) and the loss under torch.autocast('cpu', dtype=torch.float16)",
        ),
    )
    return _judge(
        got,
        scales,
        True,
        _accumulate,
        _accumulation_starter,
        lambda want: (
            "one scaled backward per micro-batch, each loss divided by their number, then one step and one update: "
            f"the step whose micro-batch overflowed was skipped whole, and the scale halved once "
            f"({want[_OVERFLOW_STEP - 1]:g} to {want[_OVERFLOW_STEP]:g})"
        ),
        "so far this is the starter: an fp32 optimizer step per micro-batch, with neither autocast nor the scaler. "
        "The exercise asks for one step per call, as if the micro-batches were one large batch",
        variants,
        lambda scales: (
            f"the scaler's scale went {scales} over the four calls, not as in the recipe: one scaler.update() per "
            "call, after scaler.step(optimizer), and every backward through scaler.scale(...)"
        ),
        "the scale moved as in the recipe, but the parameters after four calls differ from the recipe's: check that "
        "every micro-batch's forward and loss run under torch.autocast('cpu', dtype=torch.float16), and what each "
        "backward adds to the gradients",
    )
