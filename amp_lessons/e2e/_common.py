"""Lesson 06's measuring tools, private to the topic: the probe that times this machine's matmuls (which sizes the
lesson's work and decides whether fp16 is worth running), the timed matmul of each format, and peak memory."""

from __future__ import annotations

import contextlib
import functools

import torch

from .. import timing
from .._runtime import exact_fp32, fp32_precision, one_thread, parse_device, quiet_fd2

MAX_SIZE = 65_536
"""The largest size, count or number of repeats this lesson's experiments accept."""

TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


RATE_DTYPES = ("fp32", "bf16", "fp16")
RATE_PROBE_SIZE = 256
"""The size n of the n^3 matmuls whose rates :func:`matmul_rates` measures."""


PROBE_ROUNDS = 8
"""How many short probes :func:`matmul_rates` takes of each dtype."""


def probe_runs(time_call, dtypes=RATE_DTYPES, rounds: int = PROBE_ROUNDS) -> dict[str, tuple[float, ...]]:
    """``{dtype: seconds of each probe}``: ``rounds`` rounds, each timing one call of every dtype in turn
    (``time_call(dtype, round)``). Interleaved, so that a burst of other work slows a round, not every probe of one
    dtype; the rate is read from the fastest probe."""
    out: dict[str, list[float]] = {dt: [] for dt in dtypes}
    for r in range(rounds):
        for dt in dtypes:
            out[dt].append(time_call(dt, r))
    return {dt: tuple(v) for dt, v in out.items()}


@functools.lru_cache(maxsize=None)
def cached_runs(device: str) -> tuple[tuple[str, tuple[float, ...]], ...]:
    d = torch.device(device)
    g = torch.Generator().manual_seed(0)
    a32 = torch.randn(RATE_PROBE_SIZE, RATE_PROBE_SIZE, generator=g).to(d)
    operands = {dt: a32.to(TORCH_DTYPES[dt]) for dt in RATE_DTYPES}

    def time_call(dt: str, r: int) -> float:
        # on a CPU, every other round on one thread: under load a multi-threaded matmul waits for its slowest thread
        threads = one_thread() if d.type == "cpu" and r % 2 else contextlib.nullcontext()
        a = operands[dt]
        with threads:
            return timing.time_fn(lambda: a @ a, device=d.type, warmup=1 if r < 2 else 0, repeats=1).times_s[0]

    with exact_fp32(d):
        return tuple(probe_runs(time_call).items())


def matmul_rate_runs(device="cpu") -> dict[str, tuple[float, ...]]:
    """The timed probes behind :func:`matmul_rates` (seconds, cached once per process), for ``e2e.RateTable``."""
    d = parse_device(device)
    return dict(cached_runs(str(d)))


def cached_rates(device: str) -> tuple[tuple[str, float], ...]:
    flops = timing.matmul_flops(RATE_PROBE_SIZE, RATE_PROBE_SIZE, RATE_PROBE_SIZE)
    return tuple((dt, flops / min(times)) for dt, times in cached_runs(device))


def matmul_rates(device="cpu") -> dict[str, float]:
    """FLOP/s of a 256x256x256 matmul in fp32 (IEEE), bf16 and fp16 on ``device``: the fastest of
    :data:`PROBE_ROUNDS` interleaved calls of each (on a CPU every other one on one thread), measured once per process.
    The lessons size their work from these rates, so that a CPU without a fast bf16 or fp16 path (tens to hundreds of
    times slower than fp32) runs a smaller experiment, and decide from them whether fp16 is worth running."""
    d = parse_device(device)
    return dict(cached_rates(str(d)))


def rate_note(dtype: str, rates: dict[str, float]) -> str:
    here = f"{dtype} matmuls run at {rates[dtype] / 1e9:.3g} GFLOP/s here"
    return here if dtype == "fp32" else f"{here} against {rates['fp32'] / 1e9:.3g} for fp32"


SLOW_FP16_RATIO = 0.25
"""fp16 counts as slow where its measured matmul rate is under this share of fp32's: a fast fp16 path runs at about
the fp32 rate or faster, the generic CPU fallback at 0.009x to 0.02x (measured on an AVX2 CPU); a quarter sits far
from both."""


def fp16_over_fp32(d: torch.device) -> float:
    rates = matmul_rates(d)
    return rates["fp16"] / rates["fp32"]


def slow_fp16(d: torch.device) -> bool:
    """fp16 matmuls run at under ``SLOW_FP16_RATIO`` of the fp32 rate here (measured)."""
    return fp16_over_fp32(d) < SLOW_FP16_RATIO


def slow_fp16_note(d: torch.device) -> str:
    where = "this CPU" if d.type == "cpu" else "this GPU"
    return (
        f"fp16 matmuls run at {fp16_over_fp32(d):.2g}x the fp32 rate here (measured at "
        f"{RATE_PROBE_SIZE}^3): no fast fp16 path on {where}"
    )


def matmul_fn(dtype: str, size: int, d: torch.device):
    g = torch.Generator().manual_seed(size)
    a = torch.randn(size, size, generator=g).to(d)
    b = torch.randn(size, size, generator=g).to(d)
    if dtype == "fp8":
        a8 = a.to(torch.float8_e4m3fn)
        b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()  # _scaled_mm wants b column-major
        one = torch.tensor(1.0, device=d)
        return lambda: torch._scaled_mm(
            a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16
        ), contextlib.nullcontext()
    a, b = a.to(TORCH_DTYPES[dtype]), b.to(TORCH_DTYPES[dtype])
    if dtype == "tf32":
        ctx = fp32_precision(matmul="tf32")
    elif dtype == "fp32":
        ctx = exact_fp32(d)
    else:
        ctx = contextlib.nullcontext()
    return (lambda: a @ b), ctx


def peak_memory(fn, *, device="cpu") -> int:
    """Peak bytes allocated while ``fn()`` runs, above what was allocated when it started.

    CUDA: from ``torch.cuda.max_memory_allocated``. CPU: the running sum of the allocations and frees that
    ``torch.profiler.profile(profile_memory=True)`` logs, at its maximum; memory that is not a torch tensor is not seen,
    and the profiler slows ``fn`` down: do not time inside this."""
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {fn!r}")
    d = parse_device(device)
    if d.type == "cuda":
        torch.cuda.synchronize(d)
        before = torch.cuda.memory_allocated(d)
        torch.cuda.reset_peak_memory_stats(d)
        fn()
        torch.cuda.synchronize(d)
        return int(torch.cuda.max_memory_allocated(d) - before)
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CPU], profile_memory=True)
    with quiet_fd2():
        prof.__enter__()
    try:
        fn()
    finally:
        with quiet_fd2():
            prof.__exit__(None, None, None)
    events = sorted(
        (e.start_ns(), e.nbytes())
        for e in prof.profiler.kineto_results.events()
        if e.name() == "[memory]" and e.device_type() == torch.autograd.DeviceType.CPU
    )
    current = peak = 0
    for _, nbytes in events:
        current += nbytes
        peak = max(peak, current)
    return int(peak)
