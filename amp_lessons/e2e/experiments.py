"""Lesson 06's experiments: mixed precision end to end, where the speed comes from and where not.

What runs where: everything here measures on the device it is given (``"cpu"`` or ``"cuda"``).
On a CPU, bf16 and fp16 matmuls are fast only where oneDNN has a path for them (bf16: AVX512-BF16 or
AMX; fp16: AVX512-FP16, AVX-NE-CONVERT or AMX-FP16); elsewhere they take a generic fallback, tens to
hundreds of times slower than fp32 depending on the CPU and the size. What decides is the rate
measured here (:func:`matmul_rates`), not a flag: where fp16 runs at under a quarter of the fp32 rate,
fp16 work is kept tiny or skipped, with the measured ratio in the reason. TF32 and fp8 are measured on GPUs that have them
and skipped elsewhere. GPU figures are recorded with :mod:`amp_lessons.reference`
("e2e_matmul_throughput", "e2e_training"). What they return is in :mod:`.records`, the model they train in
:mod:`.models`, the pictures are in :mod:`.plots`.
"""

from __future__ import annotations

import copy
import math
import statistics
import time

import torch
from torch import nn

from .. import _validate, timing
from .._runtime import (
    Progress,
    budget_seconds,
    exact_fp32,
    fp32_precision,
    halve_to_budget,
    parse_device,
    time_until,
)
from .._validate import count, flag, sequence
from ..device import DeviceReport, device_report
from . import key_code
from ._common import (
    MAX_SIZE,
    RATE_PROBE_SIZE,
    SLOW_FP16_RATIO,
    matmul_fn,
    matmul_rate_runs,
    matmul_rates,
    peak_memory,
    rate_note,
    slow_fp16,
    slow_fp16_note,
)
from .models import CPU_MODEL, GPU_MODEL, TinyTransformer, make_batches, step_flops
from .records import LaunchBoundDemo, OverflowDemo, StepTimes, TrainingPlan, TrainRun

__all__ = [
    "CONFIGS",
    "MIN_TRAIN_STEPS",
    "RATE_PROBE_SIZE",
    "SLOW_FP16_RATIO",
    "amp_step",
    "first_rates",
    "inference_compare",
    "launch_bound_demo",
    "matmul_rate_runs",
    "matmul_rates",
    "matmul_throughput",
    "odd_size_effect",
    "overflow_demo",
    "peak_memory",
    "train",
    "training_plan",
]

# --------------------------------------------------------------------------------------------
# Matmul throughput
# --------------------------------------------------------------------------------------------


def first_rates(device="cpu") -> dict[str, float]:
    """The rates that predict the first size of each dtype in :func:`matmul_throughput`: :func:`matmul_rates` on a
    CPU, where a 256^3 matmul runs at the rate of larger ones (or faster, on a slow fallback); none on a GPU, where a
    256^3 matmul is bound by its launch (an H200 measured 1.86 TFLOP/s in bf16 there, against about 800 at 8192^3), so
    that it would predict seconds for a matmul that takes a millisecond: there the first size runs, and the later
    ones are predicted from it."""
    d = parse_device(device)
    return {} if d.type == "cuda" else matmul_rates(d)


_THROUGHPUT_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


def _skip_reason(dtype: str, size: int, d: torch.device, report: DeviceReport, max_fp16_cpu_size: int):
    g = report.gpu if d.type == "cuda" else None
    if dtype == "tf32" and not (g is not None and g.tf32):
        return "TF32 is a math mode of NVIDIA tensor cores (Ampere and newer); " + (
            "this machine has no such GPU" if d.type == "cpu" else f"the {g.name if g else 'GPU'} has none"
        )
    if dtype == "fp8":
        if not (g is not None and g.fp8):
            return "fp8 matmuls need fp8 tensor cores (Ada Lovelace / Hopper and newer); " + (
                "this machine has no such GPU" if d.type == "cpu" else f"the {g.name if g else 'GPU'} has none"
            )
        if size % 16:
            return f"fp8 matmuls (torch._scaled_mm) need sizes divisible by 16, got {size}"
    if dtype == "fp16" and size > max_fp16_cpu_size and slow_fp16(d):
        return f"{slow_fp16_note(d)}; measured only up to {max_fp16_cpu_size}"
    return None


def matmul_throughput(
    sizes,
    dtypes=("fp32", "bf16", "fp16"),
    *,
    device="cpu",
    repeats: int = 5,
    max_fp16_cpu_size: int = 256,
    budget_s: float = 1.0,
    total_budget_s: float = math.inf,
) -> list[dict]:
    """TFLOP/s of square size^3 matmuls in each of ``dtypes`` ("fp32", "tf32", "bf16", "fp16",
    "fp8"), timed with :func:`amp_lessons.timing.time_fn` (median of ``repeats``).

    Rows ``{"size", "dtype", "median_s", "tflops", "percent_of_peak", "skipped", "times_s"}`` (``times_s``: every
    timed run, for the spread; ``e2e.ThroughputTable.of(rows)`` shows them as a table): ``percent_of_peak``
    is the share of the GPU's spec-sheet peak (None on a CPU, or for a GPU not in ``SPEC_PEAKS``);
    ``skipped`` is None for a measured row, else the reason (then the figures are None). Skipped:
    "tf32"/"fp8" without a GPU that has them; "fp16" above ``max_fp16_cpu_size`` where its
    :func:`matmul_rates` rate is under a quarter of fp32's (a CPU without a fast fp16 path); and any row whose
    predicted time (warm-up and repeats, from the rate measured at the dtype's previous size, or from
    :func:`matmul_rates` for its first) exceeds ``budget_s`` seconds, with the prediction in the reason:
    a CPU without bf16 instructions runs bf16 matmuls tens of times slower than fp32, and the lesson must not
    wait minutes for it. The predictions are re-checked as the rows run: once the rows have taken
    ``total_budget_s`` seconds together (a machine busy with other work runs everything slower than predicted),
    the remaining rows are skipped, with the time spent in the reason (the first row that can run always runs)."""
    d = parse_device(device)
    try:
        sizes = [count(s, "each size", 1, MAX_SIZE) for s in sizes]
    except TypeError:
        raise TypeError(f"sizes must be a list of positive ints, got {sizes!r}") from None
    if not sizes:
        raise ValueError("sizes is empty: give at least one matrix size")
    dtypes = [dtypes] if isinstance(dtypes, str) else list(sequence(dtypes, "dtypes", "dtype names"))
    for dt in dtypes:
        if dt not in _THROUGHPUT_DTYPES:
            raise ValueError(f"unknown dtype {dt!r}: use some of {', '.join(map(repr, _THROUGHPUT_DTYPES))}")
    if not dtypes:
        raise ValueError("dtypes is empty: give at least one of " + ", ".join(_THROUGHPUT_DTYPES))
    repeats = count(repeats, "repeats", 1, MAX_SIZE)
    max_fp16_cpu_size = count(max_fp16_cpu_size, "max_fp16_cpu_size", 0, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    total_budget_s = budget_seconds(total_budget_s, "total_budget_s")
    report = device_report()
    warmup = 1 if d.type == "cpu" else 3
    started = time.perf_counter()
    rate = {dt: r for dt, r in first_rates(d).items() if dt in dtypes}  # FLOP/s, updated as rows run
    rows = []
    for size in sizes:
        for dt in dtypes:
            flops = timing.matmul_flops(size, size, size)
            row = {
                "size": size,
                "dtype": dt,
                "median_s": None,
                "tflops": None,
                "percent_of_peak": None,
                "skipped": _skip_reason(dt, size, d, report, max_fp16_cpu_size),
                "times_s": None,
            }
            spent = time.perf_counter() - started
            if row["skipped"] is None and spent >= total_budget_s and any(r["times_s"] for r in rows):
                row["skipped"] = (
                    f"the time budget of {total_budget_s:g} s for these matmuls was spent "
                    f"({spent:.2g} s when the remaining sizes came up)"
                )
            if row["skipped"] is None and dt in rate:
                predicted = (warmup + repeats) * flops / rate[dt]
                if predicted > budget_s:
                    row["skipped"] = (
                        f"{dt} at n={size} would take about {predicted:.2g} s here "
                        f"({rate[dt] / 1e9:.3g} GFLOP/s measured), over budget_s={budget_s:g}"
                    )
            if row["skipped"] is None:
                fn, ctx = matmul_fn(dt, size, d)
                with ctx:
                    t = timing.time_fn(fn, device=d.type, warmup=warmup, repeats=repeats, flops=flops, dtype_key=dt)
                row.update(median_s=t.median_s, tflops=t.tflops, percent_of_peak=t.percent_of_peak, times_s=t.times_s)
                rate[dt] = flops / t.median_s
            rows.append(row)
    return rows


def odd_size_effect(
    base: int | None = None,
    offsets=(0, 1, 7, 8),
    dtype: str = "bf16",
    *,
    device="cpu",
    repeats: int = 5,
    budget_s: float = 2.0,
) -> list[dict]:
    """TFLOP/s of (base+offset)^3 matmuls in ``dtype``: the AMP recipe's "try batch 513" point
    (tensor cores like sizes that are multiples of 8). Rows as :func:`matmul_throughput`, plus
    ``"offset"`` and ``"relative_to_first"`` (this row's TFLOP/s over the first measured row's).
    On a CPU the effect may be small or absent: measured, not assumed.

    ``base=None`` (the default): 1024 on a CPU, 4096 on a GPU, halved (down to 64) until all the
    rows are predicted to take at most ``budget_s`` seconds by :func:`matmul_rates` (on a CPU
    without bf16 instructions a 1024^3 bf16 matmul takes over a second). Each row also carries
    ``"base_chosen"``: a sentence saying which base was used and why."""
    offs = [count(o, "each offset", 0, MAX_SIZE) for o in sequence(offsets, "offsets", "ints >= 0")]
    if not offs:
        raise ValueError("offsets is empty: give at least one offset (0 is the base size)")
    d = parse_device(device)
    repeats = count(repeats, "repeats", 1, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    if base is not None:
        base = count(base, "base", 1, MAX_SIZE)
        why = f"base {base}, as asked"
    else:
        base = 1024 if d.type == "cpu" else 4096
        rate = matmul_rates(d).get(dtype)
        why = f"base {base}"
        if rate:

            def predicted(n):
                return sum((2 + repeats) * timing.matmul_flops(n + o, n + o, n + o) for o in offs) / rate

            base, why = halve_to_budget("base", base, predicted, budget_s, lambda: rate_note(dtype, matmul_rates(d)))
    rows = matmul_throughput(
        [base + o for o in offs], (dtype,), device=d, repeats=repeats, budget_s=math.inf, total_budget_s=2 * budget_s
    )  # sized above; a busy machine stops it at twice the budget
    first = next((r["tflops"] for r in rows if r["tflops"]), None)
    for r, o in zip(rows, offs):
        r["offset"] = o
        r["relative_to_first"] = r["tflops"] / first if r["tflops"] and first else None
        r["base_chosen"] = why
    return rows


# --------------------------------------------------------------------------------------------
# Launch-bound: tiny work per op gains nothing
# --------------------------------------------------------------------------------------------


def _mlp_step_times(
    width: int, batch: int, d: torch.device, repeats: int, deadline: float = math.inf, bar=None
) -> StepTimes:
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(3)]).to(d)
    x = torch.randn(batch, width, generator=g).to(d)

    def step(amp: bool):
        def fn():
            with torch.autocast(d.type, dtype=torch.bfloat16, enabled=amp):
                loss = model(x).float().square().mean()
            loss.backward()
            model.zero_grad(set_to_none=True)

        return fn

    with exact_fp32(d):
        t32, cut32 = time_until(step(False), d, 2, repeats, deadline, time_fn=timing.time_fn)
        if bar is not None:
            bar.update()
        t16, cut16 = time_until(step(True), d, 2, repeats, deadline, time_fn=timing.time_fn)
        if bar is not None:
            bar.update()
    cut = f"timed {len(t32)} and {len(t16)} steps, not {repeats}: the time budget was spent"
    return StepTimes(
        model=f"3 x Linear({width}, {width}), batch {batch}",
        flops_per_step=3 * 3 * 2.0 * batch * width * width,  # forward + 2 backward matmuls per layer
        fp32_step_s=statistics.median(t32),
        bf16_autocast_step_s=statistics.median(t16),
        speedup=statistics.median(t32) / statistics.median(t16),
        fp32_times_s=tuple(t32),
        bf16_autocast_times_s=tuple(t16),
        cut_short=cut if cut32 or cut16 else None,
    )


def launch_bound_demo(
    *, device="cpu", repeats: int = 20, large_width: int | None = None, budget_s: float = 2.0, progress: bool = True
) -> LaunchBoundDemo:
    """One training step (forward, backward) of a tiny MLP (3 x Linear(64, 64), batch 8) in fp32
    and under bf16 autocast, measured: with so little work per op the time is per-op overhead
    (Python, dispatch, autocast's casts, kernel launches), so bf16 buys nothing. The same step of a
    large MLP (batch = width) for contrast: ``large_width`` if given, else 512 on a CPU, 4096 on a
    GPU, halved (down to 64) until its bf16 steps are predicted by :func:`matmul_rates` to take at
    most ``budget_s`` seconds (a CPU without bf16 instructions runs them tens of times slower than fp32).

    Returns the :class:`LaunchBoundDemo`: the :class:`StepTimes` of the tiny and the large model (speedup = fp32
    median / bf16 median; every timed step, for the spread: ``e2e.LaunchTable.of(result)``) and ``width_chosen``, a
    sentence saying which width the large one has and why. The timing stops adding repeats once twice
    ``budget_s`` has been spent (a machine busy with other work); a model timed fewer times than asked has a
    ``cut_short`` sentence saying so. ``progress``: a progress bar over the four timings."""
    d = parse_device(device)
    repeats = count(repeats, "repeats", 1, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    progress = flag(progress, "progress")
    deadline = time.perf_counter() + 2 * budget_s
    large_repeats = max(3, repeats // 4)
    if large_width is not None:
        width = count(large_width, "large_width", 1, MAX_SIZE)
        why = f"width {width}, as asked"
    else:
        rate = matmul_rates(d)["bf16"]

        def predicted(w):  # 3 layers x (forward + 2 backward) matmuls of w^3, warm-up 2
            return (2 + large_repeats) * 9 * timing.matmul_flops(w, w, w) / rate

        width, why = halve_to_budget(
            "width", 512 if d.type == "cpu" else 4096, predicted, budget_s, lambda: rate_note("bf16", matmul_rates(d))
        )
    with Progress(total=4, desc="timing steps", disable=not progress) as bar:
        tiny = _mlp_step_times(64, 8, d, repeats, deadline, bar)
        large = _mlp_step_times(width, width, d, large_repeats, deadline, bar)
    return LaunchBoundDemo(tiny, large, why)


# --------------------------------------------------------------------------------------------
# Training, the AMP recipe's way
# --------------------------------------------------------------------------------------------

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

    On a GPU: d_model 768, 6 layers, 256 tokens, batch 32, 100 steps. On a CPU: the first of four
    sizes, from d_model 256 / 64 tokens / batch 16 (40 steps) down to d_model 64 / 32 tokens / batch 8,
    whose run of every configuration that runs here (see :func:`train`) is predicted to take at most
    ``budget_s`` seconds, predicted from each dtype's :func:`matmul_rates` and the step's matmul FLOPs
    (an estimate: on the AVX2 CPU it was checked on, about 2x the time the runs took). On a CPU with bf16 instructions the default fits; on one without
    (most laptops), bf16 matmuls run tens of times slower than fp32 and the model is scaled down for every
    configuration alike, so that the runs stay comparable. The smallest size is used if none fits.

    Returns the :class:`TrainingPlan`: the model's keyword arguments, the batch, the steps, the configurations
    that run here, the predicted seconds (CPU only), whether the model was scaled down and a sentence saying what
    was chosen and why."""
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
    """The training step of ``config`` (one of :data:`CONFIGS`), the AMP recipe's way: lesson 06's ``make_step``
    (written in the notebook, exported to :mod:`.key_code`), with its arguments checked. Returns ``step(x, y)`` that
    runs forward and loss under ``torch.autocast``, the scaled backward, ``unscale_`` and ``clip_grad_norm_`` to
    ``max_norm`` (``None``: no clipping), the optimizer step and the scaler's update through ``torch.amp.GradScaler``
    (enabled for fp16 only), and returns the loss.

    The loss is computed from logits upcast to fp32: under CUDA autocast ``cross_entropy`` has no
    autocast entry and would take fp16/bf16 logits as they are."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer, got {type(optimizer).__name__}")
    if config not in CONFIGS:
        raise ValueError(f"config must be one of {', '.join(map(repr, CONFIGS))}, got {config!r}")
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"device_type must be 'cpu' or 'cuda' (torch.autocast's device types), got {device_type!r}")
    if max_norm is not None:
        _validate.number(max_norm, "max_norm", "a positive number or None (no clipping)")
        if not _validate.is_real(max_norm, 0, math.inf, open_low=True, open_high=True):
            raise ValueError(f"max_norm must be a positive, finite number or None (no clipping), got {max_norm!r}")
    return key_code.make_step(model, optimizer, config, device_type, max_norm)


MIN_TRAIN_STEPS = 6
"""The fewest steps :func:`train` runs before its ``budget_s`` may stop it: by then the loss of every CPU size of
:func:`training_plan` has fallen by more than 40% (measured in fp32: from 4.4-4.5 to 0.9-2.6), so a stopped run
still shows the model learning."""


def _sync(d: torch.device) -> None:
    if d.type == "cuda":
        torch.cuda.synchronize(d)


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
) -> TrainRun:
    """Train a :class:`TinyTransformer` on :func:`make_batches` data in one of :data:`CONFIGS`.

    One loop for all four: each step is ``make_step(model, optimizer, config, device_type)(x, y)``,
    by default :func:`amp_step` (lesson 06's ``make_step``, exported from the notebook to :mod:`.key_code`: the
    AMP recipe with ``torch.autocast(device, dtype, enabled=...)``, ``torch.amp.GradScaler(device, enabled=...)``
    and gradient clipping); lesson 06 passes the one its cell defines.
    TF32 through :func:`amp_lessons.tf32.fp32_precision` (fp32 runs with IEEE fp32 matmuls). AdamW,
    a fresh batch each step, same start and data for every config of a seed.

    Defaults: :func:`training_plan` (with ``allow_slow_fp16``): on a CPU a small model (d_model 256,
    2 layers, 64 tokens; 40 steps of batch 16: about 2 s per config on a 2-core CPU with bf16
    instructions), scaled down for every config alike where the measured bf16/fp16 matmul rate says
    the runs would take too long; on a GPU a larger one (d_model 768, 6 layers, 256 tokens; 100 steps
    of batch 32). ``model_kwargs`` overrides the model's sizes, ``batch`` and ``steps`` the run's.

    ``budget_s``: the run stops adding steps once it has taken that long (after at least :data:`MIN_TRAIN_STEPS`
    steps), so that a machine busy with other work does not turn a predicted few seconds into minutes; the data of
    each step stays that of the planned run, so runs stopped at different steps compare step by step.

    Returns the :class:`TrainRun`: its losses, median and every step time, the peak memory of a step, the steps
    run and planned, and whether the budget stopped it early; or, with ``ran`` False and its ``reason``, where the
    config cannot be run meaningfully here (TF32 without an Ampere+ GPU; fp16 where its
    measured matmul rate is under a quarter of fp32's, unless ``allow_slow_fp16``)."""
    if config not in CONFIGS:
        raise ValueError(f"unknown config {config!r}: use one of {', '.join(map(repr, CONFIGS))}")
    make_step = amp_step if make_step is None else make_step
    if not callable(make_step):
        raise TypeError(
            f"make_step must be a function (model, optimizer, config, device_type) -> step(x, y), got {make_step!r}"
        )
    d = parse_device(device)
    reason = _not_run_reason(config, d, device_report(), allow_slow_fp16)
    if reason:
        return TrainRun(config, False, reason)
    plan = training_plan(device=d, allow_slow_fp16=allow_slow_fp16)
    steps = count(steps if steps is not None else plan.steps, "steps", 2, MAX_SIZE)
    batch = count(batch if batch is not None else plan.batch, "batch", 1, MAX_SIZE)
    seed, progress = _validate.seed(seed), flag(progress, "progress")
    budget_s = budget_seconds(budget_s, "budget_s")
    mk = plan.model
    if model_kwargs is not None:
        if not isinstance(model_kwargs, dict):
            raise TypeError(f"model_kwargs must be a dict of TinyTransformer arguments, got {model_kwargs!r}")
        mk.update(model_kwargs)
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

    def step(i: int) -> float:
        loss = step_fn(data[i, :, :-1], data[i, :, 1:])
        if not _validate.is_real(loss):
            raise TypeError(f"the step made by make_step must return the loss as a float (loss.item()), got {loss!r}")
        return float(loss)

    losses, times, stopped = [], [], None
    least = min(MIN_TRAIN_STEPS, steps) - 1  # timed steps before the budget may stop the run (the last is below)
    started = time.perf_counter()
    with precision:
        bar = Progress(range(steps - 1), desc=config, disable=not progress)
        for i in bar:
            _sync(d)
            t0 = time.perf_counter()
            losses.append(step(i))  # .item() waits for the GPU
            times.append(time.perf_counter() - t0)
            spent = time.perf_counter() - started
            if spent >= budget_s and i + 1 >= least and i + 1 < steps - 1:
                stopped = (
                    f"stopped after {i + 2} of {steps} steps: the run's time budget of {budget_s:.3g} s was "
                    f"spent ({spent:.3g} s, {statistics.median(times) * 1e3:.3g} ms per step here)"
                )
                break
        bar.close()
        box = []
        peak = peak_memory(lambda: box.append(step(len(losses))), device=d)
        losses.append(box[0])
    return TrainRun(
        config=config,
        ran=True,
        loss=tuple(losses),
        final_loss=losses[-1],
        step_time_s=statistics.median(times[1:] if len(times) > 1 else times),
        step_times_s=tuple(times[1:] if len(times) > 1 else times),
        peak_memory_bytes=peak,
        device=str(d) if d.type == "cpu" else torch.cuda.get_device_name(d),
        steps=len(losses),
        planned_steps=steps,
        stopped_early=stopped,
        model=dict(mk, batch=batch),
    )


# --------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------


def _param_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def inference_compare(
    *,
    device="cpu",
    seed: int = 0,
    model: nn.Module | None = None,
    batch: int = 4,
    repeats: int = 5,
    budget_s: float = math.inf,
) -> list[dict]:
    """Logits of one model (default: a seeded, freshly initialised :class:`TinyTransformer`;
    pass a trained ``model`` to compare that) run four ways on one batch of :func:`make_batches`:
    "fp32"; "bf16 autocast" (fp32 weights, matmuls in bf16); "bf16 weights" (``.to(torch.bfloat16)``,
    everything bf16); "fp16 weights" (``.half()``).

    Rows ``{"variant", "max_abs_error" (max |logits - fp32 logits|), "time_s" (median forward), "times_s" (every
    timed forward),
    "param_bytes", "output_dtype", "note"}``. Where fp16 matmuls are slow (measured, as in
    :func:`train`) the fp16 row is timed once: the note says so. Once ``budget_s`` seconds are spent (a machine
    busy with other work), each remaining variant is timed the fewest times a spread needs, and its note says so."""
    d = parse_device(device)
    batch, repeats = count(batch, "batch", 1, MAX_SIZE), count(repeats, "repeats", 1, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    deadline = time.perf_counter() + budget_s
    if model is None:
        torch.manual_seed(_validate.seed(seed))
        model = TinyTransformer(**(CPU_MODEL if d.type == "cpu" else GPU_MODEL))
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    model = model.to(d).eval()
    tokens = make_batches(seed, 1, batch, model.seq_len, model.vocab)[0, :, :-1].to(d)
    slow16 = slow_fp16(d)
    variants = [
        ("fp32", model, False, ""),
        ("bf16 autocast", model, True, "weights stay fp32; autocast casts them per matmul"),
        ("bf16 weights", copy.deepcopy(model).to(torch.bfloat16), False, ".to(torch.bfloat16): everything bf16"),
        (
            "fp16 weights",
            copy.deepcopy(model).half(),
            False,
            ".half(): everything fp16" + (f"; {slow_fp16_note(d)}: timed once" if slow16 else ""),
        ),
    ]
    rows, ref = [], None
    with torch.inference_mode(), exact_fp32(d):
        for name, m, amp, note in variants:

            def fwd(m=m, amp=amp):
                with torch.autocast(d.type, dtype=torch.bfloat16, enabled=amp):
                    return m(tokens)

            out = fwd()
            few = name == "fp16 weights" and slow16
            # the call above was the first warm-up; past the deadline no more
            warm = 0 if few or time.perf_counter() >= deadline else 1
            times, cut = time_until(fwd, d, warm, 1 if few else repeats, deadline, time_fn=timing.time_fn)
            if cut:
                note = (
                    note + "; " if note else ""
                ) + f"timed {len(times)} times, not {repeats}: the time budget was spent"
            if ref is None:
                ref = out.float()
            rows.append(
                {
                    "variant": name,
                    "max_abs_error": (out.float() - ref).abs().max().item(),
                    "time_s": statistics.median(times),
                    "times_s": times,
                    "param_bytes": _param_bytes(m),
                    "output_dtype": str(out.dtype).replace("torch.", ""),
                    "note": note,
                }
            )
    return rows


def overflow_demo() -> OverflowDemo:
    """A tiny layer whose activations exceed fp16's largest value (65504): Linear(8, 8) with
    weights 100 x identity on inputs up to 2000 (activations up to 2e5), then LayerNorm and a
    Linear(8, 4) head, in fp32, ``.half()`` and ``.to(torch.bfloat16)`` (CPU, a few µs).

    fp16 stores the big activations as inf, LayerNorm turns inf - inf into NaN; bf16 has fp32's
    range and stays finite (with bf16's ~3-digit precision). Returns the :class:`OverflowDemo`."""
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8), nn.Linear(8, 4))
    with torch.no_grad():
        model[0].weight.copy_(100.0 * torch.eye(8))
        model[0].bias.zero_()
        model[2].weight.copy_(torch.randn(4, 8, generator=g) / math.sqrt(8))
        model[2].bias.zero_()
    x = torch.linspace(-2000.0, 2000.0, 8).reshape(1, 8) + torch.tensor([[0, 7, 0, 3, 0, 1, 0, 5.0]])
    outs, act = {}, None
    with torch.inference_mode(), fp32_precision(cpu_matmul="ieee"):
        act = model[0](x).abs().max().item()
        for name, dtype in (("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)):
            outs[name] = copy.deepcopy(model).to(dtype)(x.to(dtype)).float()
    return OverflowDemo(
        max_activation=act,
        fp16_max=torch.finfo(torch.float16).max,
        outputs={k: tuple(v.reshape(-1).tolist()) for k, v in outs.items()},
        fp16_finite=bool(torch.isfinite(outs["fp16"]).all()),
        bf16_finite=bool(torch.isfinite(outs["bf16"]).all()),
        bf16_max_abs_error=(outs["bf16"] - outs["fp32"]).abs().max().item(),
    )
