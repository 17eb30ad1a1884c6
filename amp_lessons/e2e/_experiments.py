"""Lesson 06's experiments: mixed precision end to end, where the speed comes from and where not. Everything measures
on the device it is given; what decides whether bf16/fp16 work is sized down or skipped on a CPU is the rate
measured here (:func:`matmul_rates`), not a flag. TF32 and fp8 are measured on GPUs that have them, skipped
elsewhere. What they return is in :mod:`._records`, the training runs in :mod:`._training` (exported here)."""

from __future__ import annotations

import contextlib
import copy
import math
import statistics
import time

import torch
from torch import nn

from .. import _validate, timing
from .._runtime import (
    FEWEST_RUNS,
    Progress,
    budget_seconds,
    exact_fp32,
    fp32_precision,
    halve_to_budget,
    one_thread,
    parse_device,
    time_until,
)
from .._validate import count, flag, selection
from ..device import DeviceReport, device_report
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
from ._models import CPU_MODEL, GPU_MODEL, TinyTransformer, make_batches
from ._records import LaunchBoundDemo, OverflowDemo, StepTimes
from ._training import CONFIGS, MIN_TRAIN_STEPS, SYNC_EVERY, amp_step, train, training_plan

__all__ = [
    "BATCH_GROWTH",
    "CONFIGS",
    "MIN_TRAIN_STEPS",
    "RATE_PROBE_SIZE",
    "SLOW_FP16_RATIO",
    "SYNC_EVERY",
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


def first_rates(device="cpu") -> dict[str, float]:
    """The rates that predict the first size of each dtype in :func:`matmul_throughput`: :func:`matmul_rates` on a
    CPU; none on a GPU, where a 256^3 matmul is bound by its launch (there the first size runs, and predicts the next)."""
    d = parse_device(device)
    return {} if d.type == "cuda" else matmul_rates(d)


_THROUGHPUT_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


def _skip_reason(dtype: str, size: int, d: torch.device, report: DeviceReport, max_fp16_cpu_size: int):
    g = report.gpu if d.type == "cuda" else None
    none = "this machine has no such GPU" if d.type == "cpu" else f"the {g.name if g else 'GPU'} has none"
    if dtype == "tf32" and not (g is not None and g.tf32):
        return f"TF32 is a math mode of NVIDIA tensor cores (Ampere and newer); {none}"
    if dtype == "fp8":
        if not (g is not None and g.fp8):
            return f"fp8 matmuls need fp8 tensor cores (Ada Lovelace / Hopper and newer); {none}"
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
    """TFLOP/s of square size^3 matmuls in each of ``dtypes`` ("fp32", "tf32", "bf16", "fp16", "fp8"), the median of
    ``repeats`` runs.

    Rows ``{"size", "dtype", "median_s", "tflops", "percent_of_peak", "skipped", "times_s"}``: ``percent_of_peak`` of
    the GPU's spec-sheet peak (None on a CPU or an unknown GPU); ``skipped`` None for a measured row, else the reason
    (then the figures are None). Skipped: "tf32"/"fp8" without a GPU that has them; "fp16" above
    ``max_fp16_cpu_size`` where its :func:`matmul_rates` rate is under a quarter of fp32's; a row whose predicted time
    (from the dtype's previous size, or its first from :func:`matmul_rates`) exceeds ``budget_s``; and every row left
    once the rows have taken ``total_budget_s`` together (the first row that can run always runs)."""
    d = parse_device(device)
    try:
        sizes = [count(s, f"sizes[{i}]", 1, MAX_SIZE) for i, s in enumerate(sizes)]
    except TypeError:
        raise TypeError(f"sizes must be a list of positive ints, got {sizes!r}") from None
    if not sizes:
        raise ValueError("sizes is empty: give at least one matrix size")
    dtypes = [dtypes] if isinstance(dtypes, str) else list(selection(dtypes, "dtypes", "dtype names"))
    for i, dt in enumerate(dtypes):
        if dt not in _THROUGHPUT_DTYPES:
            raise ValueError(
                f"dtypes[{i}]={dt!r} is not a dtype it times: use some of {', '.join(map(repr, _THROUGHPUT_DTYPES))}"
            )
    if not dtypes:
        raise ValueError("dtypes is empty: give at least one of " + ", ".join(_THROUGHPUT_DTYPES))
    repeats = count(repeats, "repeats", 1, MAX_SIZE)
    max_fp16_cpu_size = count(max_fp16_cpu_size, "max_fp16_cpu_size", 0, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    total_budget_s = budget_seconds(total_budget_s, "total_budget_s")
    report = device_report()
    warmup = 1 if d.type == "cpu" else 3
    started = time.perf_counter()
    probe = {dt: r for dt, r in first_rates(d).items() if dt in dtypes}
    rate = dict(probe)  # FLOP/s, updated as rows run
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
                # the fastest run, never below the probe's: a run stalled by other work must not skip larger sizes
                rate[dt] = max(flops / min(t.times_s), probe.get(dt, 0.0))
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
    """TFLOP/s of (base+offset)^3 matmuls in ``dtype``: the AMP recipe's "try batch 513" point (tensor cores like
    multiples of 8). Rows as :func:`matmul_throughput`, plus ``"offset"``, ``"relative_to_first"`` (TFLOP/s over the
    first measured row's) and ``"base_chosen"`` (a sentence). ``base=None``: 1024 on a CPU, 4096 on a GPU, halved (down
    to 64) until the rows are predicted to take at most ``budget_s`` seconds."""
    if not (isinstance(dtype, str) and dtype in _THROUGHPUT_DTYPES):
        raise ValueError(f"dtype={dtype!r} is not allowed: use one of {', '.join(map(repr, _THROUGHPUT_DTYPES))}")
    offs = [count(o, "each offset", 0, MAX_SIZE) for o in selection(offsets, "offsets", "ints >= 0")]
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


BATCH_GROWTH = 8
""":func:`launch_bound_demo` times each model's fp32 step at its batch and at this many times that batch."""


def _mlp_step_times(
    width: int, batch: int, d: torch.device, repeats: int, deadline: float = math.inf, bar=None
) -> StepTimes:
    g = torch.Generator().manual_seed(0)
    model = nn.Sequential(*[nn.Linear(width, width) for _ in range(3)]).to(d)
    x = torch.randn(batch, width, generator=g).to(d)
    x_grown = torch.randn(BATCH_GROWTH * batch, width, generator=g).to(d)

    def step(amp: bool, x=x):
        def fn():
            with torch.autocast(d.type, dtype=torch.bfloat16, enabled=amp):
                loss = model(x).float().square().mean()
            loss.backward()
            model.zero_grad(set_to_none=True)

        return fn

    fns = (step(False), step(False, x_grown), step(True))
    runs: tuple[list[float], ...] = ([], [], [])
    with exact_fp32(d):
        for fn in fns:
            timing.time_fn(fn, device=d.type, warmup=2, repeats=1)  # warm-up
        while len(runs[0]) < repeats and (len(runs[0]) < min(FEWEST_RUNS, repeats) or time.perf_counter() < deadline):
            for fn, out in zip(fns, runs):
                out += timing.time_fn(fn, device=d.type, warmup=0, repeats=1).times_s
    if bar is not None:
        bar.update()
    t32, tg, t16 = runs
    return StepTimes(
        model=f"3 x Linear({width}, {width}), batch {batch}",
        flops_per_step=3 * 3 * 2.0 * batch * width * width,  # forward + 2 backward matmuls per layer
        fp32_step_s=statistics.median(t32),
        bf16_autocast_step_s=statistics.median(t16),
        speedup=statistics.median(t32) / statistics.median(t16),
        fp32_times_s=tuple(t32),
        bf16_autocast_times_s=tuple(t16),
        cut_short=(
            f"timed {len(t32)} and {len(t16)} steps, not {repeats}: the time budget was spent"
            if len(t32) < repeats
            else None
        ),
        batch=batch,
        growth=BATCH_GROWTH,
        fp32_grown_times_s=tuple(tg),
    )


def launch_bound_demo(
    *, device="cpu", repeats: int = 20, large_width: int | None = None, budget_s: float = 2.0, progress: bool = True
) -> LaunchBoundDemo:
    """Where a training step's time goes, for a tiny MLP (3 x Linear(64, 64), batch 8) and a large one (batch =
    width): ``large_width`` if given, else 512 on a CPU, 4096 on a GPU, halved (down to 64) until its steps are
    predicted to take at most ``budget_s`` seconds.

    Each model's fp32 step is timed at its batch and at :data:`BATCH_GROWTH` times that batch: the part that grows
    with the batch is arithmetic, the rest per-op overhead that no faster format removes. The bf16 autocast step is
    timed at the model's batch; ``bf16_over_fp32`` (the measured matmul rates) says whether bf16 takes a slow path.
    The steps are timed in turn, round after round (on a CPU on one thread); rounds stop once twice ``budget_s`` is
    spent, after at least three. Returns the :class:`LaunchBoundDemo`. ``progress``: a progress bar."""
    d = parse_device(device)
    repeats = count(repeats, "repeats", 1, MAX_SIZE)
    budget_s = budget_seconds(budget_s, "budget_s")
    progress = flag(progress, "progress")
    deadline = time.perf_counter() + 2 * budget_s
    large_repeats = max(3, repeats // 4)
    rates = matmul_rates(d)
    # on a CPU, one thread: under load a multi-threaded matmul waits for its slowest thread
    threads = one_thread() if d.type == "cpu" else contextlib.nullcontext()
    slowdown = torch.get_num_threads() if d.type == "cpu" else 1  # the rates were measured on every thread
    if large_width is not None:
        width = count(large_width, "large_width", 1, MAX_SIZE)
        why = f"width {width}, as asked"
    else:

        def predicted(w):  # 3 layers x (forward + 2 backward) matmuls of w^3, warm-up 2; bf16, and fp32 grown
            per = 9 * timing.matmul_flops(w, w, w)
            return slowdown * (2 + large_repeats) * per * (1 / rates["bf16"] + BATCH_GROWTH / rates["fp32"])

        width, why = halve_to_budget(
            "width", 512 if d.type == "cpu" else 4096, predicted, budget_s, lambda: rate_note("bf16", rates)
        )
    with Progress(total=2, desc="timing steps", disable=not progress) as bar, threads:
        tiny = _mlp_step_times(64, 8, d, repeats, deadline, bar)
        large = _mlp_step_times(width, width, d, large_repeats, deadline, bar)
    return LaunchBoundDemo(tiny, large, why, rates["bf16"] / rates["fp32"])


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
    """Logits of one model (default: a seeded :class:`TinyTransformer`; or a trained ``model``) run four ways on one
    batch: "fp32", "bf16 autocast", "bf16 weights" (``.to(torch.bfloat16)``) and "fp16 weights" (``.half()``).

    Rows ``{"variant", "max_abs_error" (against fp32's logits), "time_s" (median forward), "times_s", "param_bytes",
    "output_dtype", "note"}``. Where fp16 matmuls are slow (measured) the fp16 row is timed once; once ``budget_s`` is
    spent, each remaining variant is timed the fewest times a spread needs. The notes say so."""
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
    """A tiny layer whose activations exceed fp16's largest value (65504): Linear(8, 8) with weights 100 x identity on
    inputs up to 2000, then LayerNorm and a Linear(8, 4) head, in fp32, fp16 and bf16 (CPU). fp16 stores the big
    activations as inf and LayerNorm makes NaN of them; bf16 has fp32's range. Returns the :class:`OverflowDemo`."""
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
