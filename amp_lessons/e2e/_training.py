"""Lesson 06's training runs: the plan that sizes them to this machine (:func:`training_plan`), the checked AMP step
(:func:`amp_step`) and :func:`train`."""

from __future__ import annotations

import inspect
import math
import statistics
import time

import torch
from torch import nn

from .. import _validate
from .._runtime import Progress, budget_seconds, exact_fp32, fp32_precision, parse_device
from .._validate import count, flag
from ..device import DeviceReport, device_report
from . import key_code
from ._common import MAX_SIZE, matmul_rates, peak_memory, rate_note, slow_fp16, slow_fp16_note
from ._models import CPU_MODEL, GPU_MODEL, TinyTransformer, make_batches, step_flops
from ._records import TrainingPlan, TrainRun

CONFIGS = ("fp32", "tf32", "bf16 autocast", "fp16 autocast + GradScaler")
"""The training configurations of :func:`train`."""


_CPU_RUN = dict(steps=40, batch=16)
_GPU_RUN = dict(steps=100, batch=32)


def _not_run_reason(config: str, d: torch.device, report: DeviceReport, allow_slow_fp16: bool) -> str | None:
    g = report.gpu if d.type == "cuda" else None
    if config == "tf32" and not (g is not None and g.tf32):
        where = "this CPU" if d.type == "cpu" else f"the {g.name if g else 'GPU'}"
        return (
            f"not run: TF32 is a math mode of NVIDIA tensor cores (Ampere and newer) and {where} has none "
            "(on a CPU the 'tf32' setting changes nothing: it would be the fp32 run again)"
        )
    if config == "fp16 autocast + GradScaler" and not allow_slow_fp16 and slow_fp16(d):
        return (
            f"not run: {slow_fp16_note(d)}, so the run would take minutes and measure nothing "
            "about mixed precision (pass allow_slow_fp16=True with a tiny model to run it anyway)"
        )
    if config == "bf16 autocast" and g is not None and not g.bf16:
        return f"not run: the {g.name} has no bf16 tensor cores (Ampere and newer have them)"
    return None


# Smaller and smaller CPU sizes for :func:`training_plan`, the default first: (model kwargs, batch).
_CPU_LADDER = (
    (CPU_MODEL, _CPU_RUN["batch"]),
    (dict(CPU_MODEL, d_model=128, seq_len=32), 16),
    (dict(CPU_MODEL, d_model=64, seq_len=32), 16),
    (dict(CPU_MODEL, d_model=64, seq_len=32), 8),
)


_CONFIG_DTYPE = {"fp32": "fp32", "tf32": "fp32", "bf16 autocast": "bf16", "fp16 autocast + GradScaler": "fp16"}


def training_plan(*, device="cpu", budget_s: float = 8.0, allow_slow_fp16: bool = False) -> TrainingPlan:
    """The model and batch that :func:`train` uses by default on ``device``, chosen from a measurement.

    On a GPU: d_model 768, 6 layers, 256 tokens, batch 32, 100 steps. On a CPU: the first of four sizes, from d_model
    256 / 64 tokens / batch 16 (40 steps) down to d_model 64 / 32 tokens / batch 8, whose runs of every configuration
    that runs here are predicted (from :func:`matmul_rates` and the step's FLOPs) to take at most ``budget_s`` seconds
    together; the smallest if none fits. Every configuration gets the same size, so the runs stay comparable.

    Returns the :class:`TrainingPlan`."""
    d = parse_device(device)
    budget_s = budget_seconds(budget_s, "budget_s")
    if not isinstance(allow_slow_fp16, bool):
        raise TypeError(f"allow_slow_fp16 must be True or False, got {allow_slow_fp16!r}")
    report = device_report()
    configs = [c for c in CONFIGS if _not_run_reason(c, d, report, allow_slow_fp16) is None]
    if d.type != "cpu":
        return TrainingPlan(
            model=dict(GPU_MODEL),
            batch=_GPU_RUN["batch"],
            steps=_GPU_RUN["steps"],
            configs=tuple(configs),
            predicted_s=None,
            scaled_down=False,
            note="GPU: the full-size model (d_model 768, 6 layers, 256 tokens, batch 32, 100 steps)",
        )
    rates = matmul_rates(d)
    steps = _CPU_RUN["steps"]

    def predicted(mk, batch):
        return {c: steps * step_flops(mk, batch) / rates[_CONFIG_DTYPE[c]] for c in configs}

    for mk, batch in _CPU_LADDER:
        pred = predicted(mk, batch)
        if sum(pred.values()) <= budget_s:
            break
    scaled = mk is not CPU_MODEL or batch != _CPU_RUN["batch"]
    size = f"d_model {mk['d_model']}, {mk['n_layers']} layers, {mk['seq_len']} tokens, batch {batch}, {steps} steps"
    if scaled:
        full = predicted(CPU_MODEL, _CPU_RUN["batch"])
        slowest = min(configs, key=lambda c: rates[_CONFIG_DTYPE[c]])
        note = (
            f"scaled down to {size} for every configuration: "
            f"{rate_note(_CONFIG_DTYPE[slowest], rates)} (measured), so the full-size model "
            f"(d_model 256, 64 tokens, batch 16) would take about {sum(full.values()):.0f} s "
            f"over the budget of {budget_s:g} s"
        )
    else:
        note = f"full size: {size} (about {sum(pred.values()):.1f} s predicted for {len(configs)} runs)"
    return TrainingPlan(
        model=dict(mk),
        batch=batch,
        steps=steps,
        configs=tuple(configs),
        predicted_s=pred,
        scaled_down=scaled,
        note=note,
    )


def amp_step(model: nn.Module, optimizer, config: str, device_type: str, max_norm: float | None = 1.0):
    """The training step of ``config`` (one of :data:`CONFIGS`), the AMP recipe's way: lesson 06's ``make_step``.
    Returns ``step(x, y)``: forward and loss (on logits upcast to fp32) under ``torch.autocast``,
    scaled backward, ``unscale_``, ``clip_grad_norm_`` to ``max_norm`` (``None``: no clipping), optimizer step and
    ``GradScaler`` update (enabled for fp16 only); it returns the loss."""
    return key_code.make_step(model, optimizer, config, device_type, max_norm)


MIN_TRAIN_STEPS = 6
"""The fewest steps :func:`train` runs before its ``budget_s`` may stop it: by then the loss of every CPU size of
:func:`training_plan` has fallen by more than 40% (measured in fp32: from 4.4-4.5 to 0.9-2.6), so a stopped run
still shows the model learning."""


def _sync(d: torch.device) -> None:
    if d.type == "cuda":
        torch.cuda.synchronize(d)


def _model_kwargs(model_kwargs) -> dict:
    allowed = tuple(inspect.signature(TinyTransformer.__init__).parameters)[1:]
    if not isinstance(model_kwargs, dict):
        raise TypeError(f"model_kwargs must be a dict of TinyTransformer arguments ({', '.join(allowed)}), "
                        f"got {model_kwargs!r}")  # fmt: skip
    unknown = [k for k in model_kwargs if k not in allowed]
    if unknown:
        raise ValueError(
            f"model_kwargs has unknown keys {', '.join(map(repr, unknown))}: TinyTransformer takes "
            + ", ".join(allowed)
        )
    return dict(model_kwargs)


SYNC_EVERY = 10
""":func:`train`'s default ``sync_every``: steps timed as one block, with one host synchronisation at its end."""


def _loss_of(loss):
    """The loss a step returned, unread: a detached 0-dim float tensor or a float."""
    if isinstance(loss, torch.Tensor):
        if loss.dim() == 0 and loss.is_floating_point():
            return loss.detach()
    elif _validate.is_real(loss):
        return float(loss)
    raise TypeError(
        "the step made by make_step must return the loss as a float or a 0-dim float tensor (loss.detach()), "
        f"got {loss!r}"[:300]
    )


def train(
    config: str,
    *,
    steps: int | None = None,
    device="cpu",
    seed: int = 0,
    progress: bool = True,
    model_kwargs: dict | None = None,
    batch: int | None = None,
    lr: float = 3e-3,
    allow_slow_fp16: bool = False,
    make_step=None,
    budget_s: float = math.inf,
    sync_every: int = SYNC_EVERY,
) -> TrainRun:
    """Train a :class:`TinyTransformer` on :func:`make_batches` data in one of :data:`CONFIGS`: the :class:`TrainRun`.

    Each step is ``make_step(model, optimizer, config, device_type)(x, y)`` (default :func:`amp_step`), returning its
    loss as a 0-dim tensor or a float. TF32 through :func:`amp_lessons.tf32.fp32_precision`; fp32 runs with IEEE fp32
    matmuls. AdamW, the same start and data for every config of a seed. Sizes from :func:`training_plan` unless
    ``model_kwargs`` (:class:`TinyTransformer`'s arguments), ``batch`` or ``steps`` say otherwise.

    Timing: the first step is a warm-up, not counted; then blocks of ``sync_every`` steps are timed between two host
    synchronisations, their losses read after the timer (``sync_every=1``: each step timed alone, its loss read inside
    the timer). Each entry of ``step_times_s`` is a block's time over its steps.

    ``budget_s``: the run stops adding steps once it has taken that long (after at least :data:`MIN_TRAIN_STEPS`).
    A config that cannot run meaningfully here (TF32 without an Ampere+ GPU; fp16 where its measured matmul rate is
    under a quarter of fp32's, unless ``allow_slow_fp16``) returns ``ran`` False with its ``reason``."""
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}: use one of {', '.join(map(repr, CONFIGS))}")
    make_step = amp_step if make_step is None else make_step
    if not callable(make_step):
        raise TypeError(
            f"make_step must be a function (model, optimizer, config, device_type) -> step(x, y), got {make_step!r}"
        )
    if model_kwargs is not None:
        model_kwargs = _model_kwargs(model_kwargs)
    sync_every = count(sync_every, "sync_every", 1, MAX_SIZE)
    d = parse_device(device)
    reason = _not_run_reason(config, d, device_report(), allow_slow_fp16)
    if reason:
        return TrainRun(config, False, reason)
    plan = training_plan(device=d, allow_slow_fp16=allow_slow_fp16)
    steps = count(steps if steps is not None else plan.steps, "steps", 2, MAX_SIZE)
    batch = count(batch if batch is not None else plan.batch, "batch", 1, MAX_SIZE)
    seed, progress = _validate.seed(seed), flag(progress, "progress")
    budget_s = budget_seconds(budget_s, "budget_s")
    mk = dict(plan.model, **(model_kwargs or {}))
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"lr must be a positive number, got {lr!r}")

    torch.manual_seed(seed)
    model = TinyTransformer(**mk).to(d)
    data = make_batches(seed, steps, batch, mk["seq_len"], mk["vocab"]).to(d)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)

    precision = fp32_precision(matmul="tf32") if config == "tf32" else exact_fp32(d)
    step_fn = make_step(model, opt, config, d.type)
    if not callable(step_fn):
        raise TypeError(
            f"make_step(model, optimizer, config, device_type) must return a callable step(x, y), got {step_fn!r}"
        )

    def step(i: int):
        return _loss_of(step_fn(data[i, :, :-1], data[i, :, 1:]))

    losses: list[float] = []
    times: list[float] = []
    warm_up, stopped = None, None
    looped = steps - 1  # the last step runs under peak_memory, below
    least = min(MIN_TRAIN_STEPS, steps) - 1  # steps before the budget may stop the run
    started = time.perf_counter()
    with precision:
        bar = Progress(total=looped, desc=config, disable=not progress)
        i = 0
        while i < looped:
            k = 1 if i == 0 else min(sync_every, looped - i)  # the first step alone: the warm-up
            if i > 0 and math.isfinite(budget_s):
                # the steps the budget's rest has room for at the last block's pace, at least up to the fewest
                room = int((budget_s - (time.perf_counter() - started)) / (times[-1] if times else warm_up))
                k = min(k, max(room, least - i, 1))
            _sync(d)
            t0 = time.perf_counter()
            block = [step(i + j) for j in range(k)]
            if sync_every == 1:
                block = [float(v) for v in block]  # read inside the timer: a host sync per step
            _sync(d)
            took = time.perf_counter() - t0
            losses += [float(v) for v in block]  # read after the timer: the block's only wait for the GPU
            if i == 0:
                warm_up = took
            else:
                times.append(took / k)
            i += k
            bar.update(k)
            spent = time.perf_counter() - started
            if spent >= budget_s and i >= least and i < looped:
                stopped = (
                    f"stopped after {i + 1} of {steps} steps: the run's time budget of {budget_s:.3g} s was "
                    f"spent ({spent:.3g} s, {statistics.median(times or [warm_up]) * 1e3:.3g} ms per step here)"
                )
                break
        bar.close()
        box = []
        peak = peak_memory(lambda: box.append(float(step(len(losses)))), device=d)
        losses.append(box[0])
    times = times or [warm_up]
    return TrainRun(
        config=config,
        ran=True,
        loss=tuple(losses),
        final_loss=losses[-1],
        step_time_s=statistics.median(times),
        step_times_s=tuple(times),
        peak_memory_bytes=peak,
        device=str(d) if d.type == "cpu" else torch.cuda.get_device_name(d),
        steps=len(losses),
        planned_steps=steps,
        stopped_early=stopped,
        model=dict(mk, batch=batch),
        sync_every=sync_every,
    )
