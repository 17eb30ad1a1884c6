"""Lesson 06's experiments: mixed precision end to end, where the speed comes from and where not.

What runs where: everything here measures on the device it is given (``"cpu"`` or ``"cuda"``).
On a CPU, bf16 and fp16 matmuls are fast only where oneDNN has a path for them (bf16: AVX512-BF16 or
AMX; fp16: AVX512-FP16, AVX-NE-CONVERT or AMX-FP16); elsewhere they take a generic fallback, tens to
hundreds of times slower than fp32 depending on the CPU and the size. What decides is the rate
measured here (:func:`matmul_rates`), not a flag: where fp16 runs at under a quarter of the fp32 rate,
fp16 work is kept tiny or skipped, with the measured ratio in the reason. TF32 and fp8 are measured on GPUs that have them
and skipped elsewhere. GPU figures are recorded with :mod:`amp_lessons.reference`
("e2e_matmul_throughput", "e2e_training"). The pictures are in :mod:`.plots`.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import math
import statistics
import time
from dataclasses import dataclass

import torch
from torch import nn

from .. import _validate, timing
from .._runtime import (
    Progress,
    exact_fp32,
    fp32_precision,
    parse_device,
    quiet_fd2,
)
from .._table import Cell, TableRecord, html_table, text_table
from .._validate import allocation, count, flag, sequence
from ..device import DeviceReport, device_report
from . import key_code

__all__ = [
    "CONFIGS",
    "InferenceTable",
    "LaunchBoundDemo",
    "LaunchTable",
    "MIN_TRAIN_STEPS",
    "NOISY_RANGE",
    "OverflowDemo",
    "RATE_PROBE_SIZE",
    "RateTable",
    "SLOW_FP16_RATIO",
    "SpecRatioTable",
    "StepTimes",
    "TENSOR_CORE_GENERATIONS",
    "TensorCoreTable",
    "ThroughputTable",
    "TinyTransformer",
    "TrainRun",
    "TrainingPlan",
    "TrainingTable",
    "amp_step",
    "first_rates",
    "inference_compare",
    "launch_bound_demo",
    "make_batches",
    "matmul_rate_runs",
    "matmul_rates",
    "matmul_throughput",
    "odd_size_effect",
    "overflow_demo",
    "peak_memory",
    "tensor_core_table",
    "train",
    "training_plan",
]

# --------------------------------------------------------------------------------------------
# Tensor-core generations
# --------------------------------------------------------------------------------------------

TENSOR_CORE_GENERATIONS: tuple[tuple[int, str, str, int, str], ...] = (
    (1, "Volta", "V100, Titan V", 2017, "fp16"),
    (2, "Turing", "T4, RTX 2080", 2018, "int8, int4"),
    (3, "Ampere", "A100, A10, RTX 3090", 2020, "TF32, bf16, 2:4 sparsity"),
    (4, "Hopper (and Ada Lovelace)", "H100, H200; Ada: L4, L40S, RTX 4090", 2022, "fp8"),
    (5, "Blackwell", "B200, GB200, RTX 5090", 2024, "fp4, fp6"),
)
"""(generation, architecture, example GPUs, year, formats added): each generation also runs the
formats of the ones before it. Ada Lovelace (2022) is counted with Hopper: its tensor cores run fp8."""

_TABLE_HEADER = ("gen", "architecture", "example GPUs", "year", "formats added")
_TABLE_TITLE = "NVIDIA tensor-core generations (each adds formats to those before it)"


@dataclass(frozen=True, repr=False)
class TensorCoreTable:
    """:data:`TENSOR_CORE_GENERATIONS` with this machine's row marked (``marked``: its generation,
    or None) and one line that says what this machine has."""

    rows: tuple[tuple[int, str, str, int, str], ...]
    marked: int | None
    machine: str

    def _cells(self) -> list[list[str]]:
        return [[str(g), a, e, str(y), f] for g, a, e, y, f in self.rows]

    def _marked_rows(self) -> list[int]:
        return [i for i, row in enumerate(self.rows) if row[0] == self.marked]

    def __str__(self) -> str:
        rows = [c + (["<- this machine"] if i in self._marked_rows() else []) for i, c in enumerate(self._cells())]
        return text_table(_TABLE_HEADER, rows, title=_TABLE_TITLE, notes=[self.machine])

    __repr__ = __str__

    def _repr_html_(self) -> str:
        marked = self._marked_rows()
        rows = [c + (["\u25c0 this machine" if i in marked else ""]) for i, c in enumerate(self._cells())]
        return html_table((*_TABLE_HEADER, ""), rows, title=_TABLE_TITLE, notes=[self.machine], marked=marked)


def tensor_core_table(report: DeviceReport | None = None) -> TensorCoreTable:
    """The tensor-core generations, this machine's (``report``, default :func:`device_report`) marked."""
    if report is None:
        report = device_report()
    if not isinstance(report, DeviceReport):
        raise TypeError(f"report must be a DeviceReport (amp_lessons.device.device_report()), got {report!r}")
    yes = {True: "yes", False: "no"}
    g, c = report.gpu, report.cpu
    if g is None:
        return TensorCoreTable(
            TENSOR_CORE_GENERATIONS,
            None,
            f"this machine: no NVIDIA GPU — CPU: bf16 instructions {yes[c.bf16_hardware]}, "
            f"fp16 instructions {yes[c.fp16_hardware]}",
        )
    gen = g.tensor_core_generation
    cap = f"compute capability {g.capability[0]}.{g.capability[1]}"
    if gen == 0:
        why = "a ROCm GPU (not in this NVIDIA table)" if g.rocm else f"{g.architecture}: no tensor cores"
        return TensorCoreTable(TENSOR_CORE_GENERATIONS, None, f"this machine: {g.name} ({cap}), {why}")
    return TensorCoreTable(
        TENSOR_CORE_GENERATIONS, gen, f"this machine: {g.name} ({cap}, {g.architecture}): generation {gen} tensor cores"
    )


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------


MAX_SIZE = 65_536
"""The largest size, count or number of repeats this lesson's experiments accept (a typo must not hang a kernel)."""


def _int(v, name: str, least: int = 1, most: int = MAX_SIZE) -> int:
    return count(v, name, least, most)


def _positive(v, name: str) -> float:
    if not _validate.is_real(v, 0, open_low=True):
        raise ValueError(f"{name} must be a positive number of seconds (math.inf: no limit), got {v!r}")
    return float(v)


def _sync(d: torch.device) -> None:
    if d.type == "cuda":
        torch.cuda.synchronize(d)


_FEWEST_RUNS = 3
"""The fewest timed runs a budget leaves a measurement (a spread needs a few)."""


def _time_until(fn, d: torch.device, warmup: int, repeats: int, deadline: float) -> tuple[tuple[float, ...], bool]:
    """``(seconds of each timed call, cut)``: :func:`timing.time_fn` one call at a time, after ``warmup`` untimed
    calls, until ``repeats`` calls are timed or ``time.perf_counter()`` passes ``deadline`` (with at least
    :data:`_FEWEST_RUNS` timed, or ``repeats`` if fewer); ``cut`` says whether the deadline stopped it."""
    times: list[float] = []
    least = min(_FEWEST_RUNS, repeats)
    while len(times) < repeats:
        if len(times) >= least and time.perf_counter() >= deadline:
            return tuple(times), True
        times += timing.time_fn(fn, device=d.type, warmup=warmup if not times else 0, repeats=1).times_s
    return tuple(times), False


SLOW_FP16_RATIO = 0.25
"""fp16 counts as slow where its measured matmul rate is under this share of fp32's. A fast fp16 path
(a GPU's tensor cores, oneDNN's fp16 kernels) runs at about the fp32 rate or faster; the generic CPU
fallback ran at 0.009x to 0.02x of fp32 at 256^3 on the AVX2 CPU the course was checked on. A quarter
sits far from both, so timing noise cannot flip the decision."""


def _fp16_over_fp32(d: torch.device) -> float:
    rates = matmul_rates(d)
    return rates["fp16"] / rates["fp32"]


def _slow_fp16(d: torch.device) -> bool:
    """fp16 matmuls run at under ``SLOW_FP16_RATIO`` of the fp32 rate here (measured, :func:`matmul_rates`)."""
    return _fp16_over_fp32(d) < SLOW_FP16_RATIO


def _slow_fp16_note(d: torch.device) -> str:
    where = "this CPU" if d.type == "cpu" else "this GPU"
    return (
        f"fp16 matmuls run at {_fp16_over_fp32(d):.2g}x the fp32 rate here (measured at "
        f"{_RATE_PROBE_SIZE}^3): no fast fp16 path on {where}"
    )


# --------------------------------------------------------------------------------------------
# Sizing the work by what this machine measures
# --------------------------------------------------------------------------------------------

_RATE_DTYPES = ("fp32", "bf16", "fp16")
RATE_PROBE_SIZE = 256
"""The size n of the n^3 matmuls whose rates :func:`matmul_rates` measures."""
_RATE_PROBE_SIZE = RATE_PROBE_SIZE


@functools.lru_cache(maxsize=None)
def _cached_runs(device: str) -> tuple[tuple[str, tuple[float, ...]], ...]:
    d = torch.device(device)
    out = []
    g = torch.Generator().manual_seed(0)
    a32 = torch.randn(_RATE_PROBE_SIZE, _RATE_PROBE_SIZE, generator=g).to(d)
    with exact_fp32(d):
        for dt in _RATE_DTYPES:
            a = a32.to(_TORCH_DTYPES[dt])
            out.append((dt, timing.time_fn(lambda a=a: a @ a, device=d.type, warmup=1, repeats=5).times_s))
    return tuple(out)


def _cached_rates(device: str) -> tuple[tuple[str, float], ...]:
    flops = timing.matmul_flops(_RATE_PROBE_SIZE, _RATE_PROBE_SIZE, _RATE_PROBE_SIZE)
    # the fastest call: a busy machine only ever makes calls slower, and the rate is a capability
    return tuple((dt, flops / min(times)) for dt, times in _cached_runs(device))


def matmul_rate_runs(device="cpu") -> dict[str, tuple[float, ...]]:
    """The timed runs (seconds, 5 each) behind :func:`matmul_rates`: the same measurement, cached once per process,
    so that the rates can be shown with their spread (``e2e.RateTable.of(device)``)."""
    d = parse_device(device)
    return dict(_cached_runs(str(d)))


def matmul_rates(device="cpu") -> dict[str, float]:
    """FLOP/s of a 256x256x256 matmul in fp32 (IEEE), bf16 and fp16 on ``device``, measured once per
    process (the fastest of 5 calls after a warm-up call: a few ms where the formats are fast, ~0.15 s
    each where they take a slow fallback) and cached. The lessons size their work from these rates, so that a laptop whose CPU
    has no fast bf16 or fp16 path (tens to hundreds of times slower than fp32 there) runs a smaller
    experiment instead of running for minutes, and they decide from them whether fp16 is worth running. Times predicted from these rates are estimates: fast kernels run
    larger matmuls faster per FLOP, slow fallbacks run them slower (measured on an AVX2 CPU: bf16 at
    3 GFLOP/s for 128^3, 1.4 for 256^3), so 256^3, the size of the lessons' matmuls, is what is timed."""
    d = parse_device(device)
    return dict(_cached_rates(str(d)))


def first_rates(device="cpu") -> dict[str, float]:
    """The rates that predict the first size of each dtype in :func:`matmul_throughput`: :func:`matmul_rates` on a
    CPU, where a 256^3 matmul runs at the rate of larger ones (or faster, on a slow fallback); none on a GPU, where a
    256^3 matmul is bound by its launch (an H200 measured 1.86 TFLOP/s in bf16 there, against about 800 at 8192^3), so
    that it would predict seconds for a matmul that takes a millisecond: there the first size runs, and the later
    ones are predicted from it."""
    d = parse_device(device)
    return {} if d.type == "cuda" else matmul_rates(d)


def _rate_note(dtype: str, rates: dict[str, float]) -> str:
    here = f"{dtype} matmuls run at {rates[dtype] / 1e9:.3g} GFLOP/s here"
    return here if dtype == "fp32" else f"{here} against {rates['fp32'] / 1e9:.3g} for fp32"


def _halve_to_budget(label: str, start: int, predicted, budget_s: float, dtype: str, d: torch.device):
    """``(size, sentence)``: ``start`` halved (down to 64) until ``predicted(size)`` seconds fit ``budget_s``;
    the sentence says which size was used and, if it is not ``start``, why."""
    size = start
    while size > 64 and predicted(size) > budget_s:
        size //= 2
    if size == start:
        return size, f"{label} {size}"
    return size, (
        f"{label} {size}, not {start}: {_rate_note(dtype, matmul_rates(d))}, and {start} would take "
        f"about {predicted(start):.2g} s (budget_s={budget_s:g})"
    )


# --------------------------------------------------------------------------------------------
# Matmul throughput
# --------------------------------------------------------------------------------------------

_TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
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
    if dtype == "fp16" and size > max_fp16_cpu_size and _slow_fp16(d):
        return f"{_slow_fp16_note(d)}; measured only up to {max_fp16_cpu_size}"
    return None


def _matmul_fn(dtype: str, size: int, d: torch.device):
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
    a, b = a.to(_TORCH_DTYPES[dtype]), b.to(_TORCH_DTYPES[dtype])
    if dtype == "tf32":
        ctx = fp32_precision(matmul="tf32")
    elif dtype == "fp32":
        ctx = exact_fp32(d)
    else:
        ctx = contextlib.nullcontext()
    return (lambda: a @ b), ctx


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
        sizes = [_int(s, "each size") for s in sizes]
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
    repeats = _int(repeats, "repeats")
    max_fp16_cpu_size = _int(max_fp16_cpu_size, "max_fp16_cpu_size", 0)
    budget_s = _positive(budget_s, "budget_s")
    total_budget_s = _positive(total_budget_s, "total_budget_s")
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
                fn, ctx = _matmul_fn(dt, size, d)
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
    offs = [_int(o, "each offset", 0) for o in sequence(offsets, "offsets", "ints >= 0")]
    if not offs:
        raise ValueError("offsets is empty: give at least one offset (0 is the base size)")
    d = parse_device(device)
    repeats = _int(repeats, "repeats")
    budget_s = _positive(budget_s, "budget_s")
    if base is not None:
        base = _int(base, "base")
        why = f"base {base}, as asked"
    else:
        base = 1024 if d.type == "cpu" else 4096
        rate = matmul_rates(d).get(dtype)
        why = f"base {base}"
        if rate:

            def predicted(n):
                return sum((2 + repeats) * timing.matmul_flops(n + o, n + o, n + o) for o in offs) / rate

            base, why = _halve_to_budget("base", base, predicted, budget_s, dtype, d)
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


@dataclass(frozen=True)
class StepTimes:
    """One model's training steps in :func:`launch_bound_demo`: ``model`` its description, ``flops_per_step`` the
    matmul FLOPs of a step, ``fp32_step_s`` and ``bf16_autocast_step_s`` the medians, ``speedup`` = fp32 median /
    bf16 median, ``fp32_times_s`` and ``bf16_autocast_times_s`` every timed step (for the spread), ``cut_short``
    a sentence when fewer steps than asked were timed (the time budget was spent), else None."""

    model: str
    flops_per_step: float
    fp32_step_s: float
    bf16_autocast_step_s: float
    speedup: float
    fp32_times_s: tuple[float, ...]
    bf16_autocast_times_s: tuple[float, ...]
    cut_short: str | None = None


@dataclass(frozen=True, repr=False)
class LaunchBoundDemo(TableRecord):
    """What :func:`launch_bound_demo` timed: the :class:`StepTimes` of the ``tiny`` and the ``large`` model, and
    ``width_chosen``, a sentence saying which width the large one has and why. Shown as its
    :class:`LaunchTable`."""

    tiny: StepTimes
    large: StepTimes
    width_chosen: str

    @property
    def runs(self) -> dict[str, StepTimes]:
        """The two models' step times by name: "tiny" and "large"."""
        return {"tiny": self.tiny, "large": self.large}

    def _table(self):
        return LaunchTable.of(self)._table()

    def _marked(self):
        return LaunchTable.of(self)._marked()


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
        t32, cut32 = _time_until(step(False), d, 2, repeats, deadline)
        if bar is not None:
            bar.update()
        t16, cut16 = _time_until(step(True), d, 2, repeats, deadline)
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
    repeats = _int(repeats, "repeats")
    budget_s = _positive(budget_s, "budget_s")
    progress = flag(progress, "progress")
    deadline = time.perf_counter() + 2 * budget_s
    large_repeats = max(3, repeats // 4)
    if large_width is not None:
        width = _int(large_width, "large_width")
        why = f"width {width}, as asked"
    else:
        rate = matmul_rates(d)["bf16"]

        def predicted(w):  # 3 layers x (forward + 2 backward) matmuls of w^3, warm-up 2
            return (2 + large_repeats) * 9 * timing.matmul_flops(w, w, w) / rate

        width, why = _halve_to_budget("width", 512 if d.type == "cpu" else 4096, predicted, budget_s, "bf16", d)
    with Progress(total=4, desc="timing steps", disable=not progress) as bar:
        tiny = _mlp_step_times(64, 8, d, repeats, deadline, bar)
        large = _mlp_step_times(width, width, d, large_repeats, deadline, bar)
    return LaunchBoundDemo(tiny, large, why)


# --------------------------------------------------------------------------------------------
# Peak memory
# --------------------------------------------------------------------------------------------


def peak_memory(fn, *, device="cpu") -> int:
    """Peak bytes allocated while ``fn()`` runs, above what was allocated when it started
    (tensors that already existed are not counted).

    CUDA: ``torch.cuda.reset_peak_memory_stats`` then ``max_memory_allocated`` minus the bytes
    allocated before. CPU (torch keeps no CPU peak counter): ``fn`` runs under
    ``torch.profiler.profile(profile_memory=True)``, which logs every allocation and free of
    torch's CPU allocator with its size and time; the running sum of those, in time order, has
    its maximum at the high-water mark. Memory that is not a torch tensor (Python objects, numpy
    arrays) is not seen, and the profiler slows ``fn`` down: do not time inside this."""
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


# --------------------------------------------------------------------------------------------
# A tiny transformer and its data
# --------------------------------------------------------------------------------------------


class TinyTransformer(nn.Module):
    """A small decoder-only (causal) transformer: token + position embeddings, ``n_layers``
    pre-norm ``nn.TransformerEncoderLayer`` blocks with a causal mask, a final LayerNorm and a
    linear head. ``forward(tokens)`` takes (batch, seq) token ids, returns (batch, seq, vocab) logits."""

    def __init__(self, vocab: int = 64, d_model: int = 128, n_heads: int = 4, n_layers: int = 2, seq_len: int = 32):
        super().__init__()
        for name, v in (
            ("vocab", vocab),
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("n_layers", n_layers),
            ("seq_len", seq_len),
        ):
            _int(v, name)
        allocation(
            n_layers * 12 * d_model**2 + 2 * vocab * d_model + seq_len * d_model, "this TinyTransformer's weights"
        )
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.vocab, self.seq_len = int(vocab), int(seq_len)
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, d_model) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True, norm_first=True
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        if tokens.dim() != 2 or tokens.shape[1] > self.seq_len:
            raise ValueError(f"tokens must be (batch, seq) with seq <= {self.seq_len}, got shape {tuple(tokens.shape)}")
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:n].to(self.embed.weight.dtype)
        mask = nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))


def make_batches(seed: int, n: int, batch: int, seq_len: int, vocab: int, *, noise: float = 0.1) -> torch.Tensor:
    """``n`` batches of token sequences, shape (n, batch, seq_len + 1), int64, generated from ``seed``.

    Each sequence starts at a random token and then follows one fixed random permutation of the
    vocabulary (the same for every batch of a seed): the next token is ``perm[token]``, except
    with probability ``noise`` a random token. A model learns the rule within a few dozen steps;
    the best achievable loss is about the noise's entropy. Inputs are ``b[:, :-1]``, targets ``b[:, 1:]``."""
    seed = _validate.seed(seed)
    n, batch, seq_len, vocab = (
        _int(v, name) for v, name in ((n, "n"), (batch, "batch"), (seq_len, "seq_len"), (vocab, "vocab"))
    )
    if vocab < 2:
        raise ValueError(f"vocab must be at least 2, got {vocab}")
    if not (isinstance(noise, (int, float)) and 0 <= noise <= 1):
        raise ValueError(f"noise must be a probability in [0, 1], got {noise!r}")
    g = torch.Generator().manual_seed(seed)
    perm = torch.randperm(vocab, generator=g)
    allocation(n * batch * (seq_len + 1), f"{n} batches of {batch} x {seq_len + 1} tokens", 8)
    out = torch.empty(n, batch, seq_len + 1, dtype=torch.long)
    out[:, :, 0] = torch.randint(vocab, (n, batch), generator=g)
    flip = torch.rand(n, batch, seq_len, generator=g) < noise
    rand = torch.randint(vocab, (n, batch, seq_len), generator=g)
    for t in range(seq_len):
        out[:, :, t + 1] = torch.where(flip[:, :, t], rand[:, :, t], perm[out[:, :, t]])
    return out


# --------------------------------------------------------------------------------------------
# Training, the AMP recipe's way
# --------------------------------------------------------------------------------------------

CONFIGS = ("fp32", "tf32", "bf16 autocast", "fp16 autocast + GradScaler")
"""The training configurations of :func:`train`."""

_CPU_MODEL = dict(vocab=64, d_model=256, n_heads=4, n_layers=2, seq_len=64)
_GPU_MODEL = dict(vocab=512, d_model=768, n_heads=12, n_layers=6, seq_len=256)
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
    if config == "fp16 autocast + GradScaler" and not allow_slow_fp16 and _slow_fp16(d):
        return (
            f"not run: {_slow_fp16_note(d)}, so the run would take minutes and measure nothing "
            "about mixed precision (pass allow_slow_fp16=True with a tiny model to run it anyway)"
        )
    if config == "bf16 autocast" and g is not None and not g.bf16:
        return f"not run: the {g.name} has no bf16 tensor cores (Ampere and newer have them)"
    return None


# Smaller and smaller CPU sizes for :func:`training_plan`, the default first: (model kwargs, batch).
_CPU_LADDER = (
    (_CPU_MODEL, _CPU_RUN["batch"]),
    (dict(_CPU_MODEL, d_model=128, seq_len=32), 16),
    (dict(_CPU_MODEL, d_model=64, seq_len=32), 16),
    (dict(_CPU_MODEL, d_model=64, seq_len=32), 8),
)
_CONFIG_DTYPE = {"fp32": "fp32", "tf32": "fp32", "bf16 autocast": "bf16", "fp16 autocast + GradScaler": "fp16"}


def _step_flops(mk: dict, batch: int) -> float:
    """Matmul FLOPs of one training step of a :class:`TinyTransformer` (forward x 3 for the backward):
    per layer 12 d^2 weights (attention 4 d^2, feed-forward 8 d^2) per token, the head d x vocab,
    and attention's two (seq x seq x d) products."""
    d, n, seq, vocab = mk["d_model"], mk["n_layers"], mk["seq_len"], mk["vocab"]
    tokens = batch * seq
    forward = 2 * tokens * (n * 12 * d * d + d * vocab) + n * 2 * 2 * batch * seq * seq * d
    return 3.0 * forward


@dataclass(frozen=True, repr=False)
class TrainingPlan(TableRecord):
    """What :func:`training_plan` chose: ``model`` the :class:`TinyTransformer` keyword arguments, ``batch``,
    ``steps``, ``configs`` the configurations of :data:`CONFIGS` that run here, ``predicted_s`` configuration ->
    predicted seconds (CPU only, else None), ``scaled_down`` whether the model is smaller than the full size,
    ``note`` a sentence saying what was chosen and why. Shown as a small table."""

    model: dict
    batch: int
    steps: int
    configs: tuple[str, ...]
    predicted_s: dict[str, float] | None
    scaled_down: bool
    note: str

    def _table(self):
        model = ", ".join(f"{k} {v}" for k, v in self.model.items())
        rows = [
            ("model", model),
            ("batch", str(self.batch)),
            ("steps", str(self.steps)),
            ("configurations", ", ".join(self.configs)),
            ("scaled down", str(self.scaled_down)),
        ]
        return None, rows, "the training runs' plan", (self.note,)


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
    budget_s = _positive(budget_s, "budget_s")
    if not isinstance(allow_slow_fp16, bool):
        raise TypeError(f"allow_slow_fp16 must be True or False, got {allow_slow_fp16!r}")
    report = device_report()
    configs = [c for c in CONFIGS if _not_run_reason(c, d, report, allow_slow_fp16) is None]
    if d.type != "cpu":
        return TrainingPlan(
            model=dict(_GPU_MODEL),
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
        return {c: steps * _step_flops(mk, batch) / rates[_CONFIG_DTYPE[c]] for c in configs}

    for mk, batch in _CPU_LADDER:
        pred = predicted(mk, batch)
        if sum(pred.values()) <= budget_s:
            break
    scaled = mk is not _CPU_MODEL or batch != _CPU_RUN["batch"]
    size = f"d_model {mk['d_model']}, {mk['n_layers']} layers, {mk['seq_len']} tokens, batch {batch}, {steps} steps"
    if scaled:
        full = predicted(_CPU_MODEL, _CPU_RUN["batch"])
        slowest = min(configs, key=lambda c: rates[_CONFIG_DTYPE[c]])
        note = (
            f"scaled down to {size} for every configuration: "
            f"{_rate_note(_CONFIG_DTYPE[slowest], rates)} (measured), so the full-size model "
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


@dataclass(frozen=True, repr=False)
class TrainRun(TableRecord):
    """One run of :func:`train`: ``config`` (one of :data:`CONFIGS`) and ``ran``. A run that did not run has only
    ``reason``, a sentence saying why. A run that ran has ``loss`` (per step), ``final_loss``, ``step_time_s`` (the
    median step time, synchronised on a GPU), ``step_times_s`` (every timed step, the first, a warm-up, left out),
    ``peak_memory_bytes`` (:func:`peak_memory` of the last step: activations, gradients, optimizer temporaries;
    not the parameters and optimizer state that already existed), ``device``, ``steps`` (run), ``planned_steps``,
    ``stopped_early`` (None, or a sentence saying after how many steps and seconds the budget stopped the run) and
    ``model`` (the :class:`TinyTransformer` arguments and the batch). Shown as its :class:`TrainingTable`."""

    config: str
    ran: bool
    reason: str | None = None
    loss: tuple[float, ...] = ()
    final_loss: float | None = None
    step_time_s: float | None = None
    step_times_s: tuple[float, ...] = ()
    peak_memory_bytes: int | None = None
    device: str | None = None
    steps: int = 0
    planned_steps: int = 0
    stopped_early: str | None = None
    model: dict | None = None

    def _table(self):
        return TrainingTable.of([self])._table()


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
    steps = _int(steps if steps is not None else plan.steps, "steps", 2)
    batch = _int(batch if batch is not None else plan.batch, "batch")
    seed, progress = _validate.seed(seed), flag(progress, "progress")
    budget_s = _positive(budget_s, "budget_s")
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
    batch, repeats = _int(batch, "batch"), _int(repeats, "repeats")
    budget_s = _positive(budget_s, "budget_s")
    deadline = time.perf_counter() + budget_s
    if model is None:
        torch.manual_seed(_validate.seed(seed))
        model = TinyTransformer(**(_CPU_MODEL if d.type == "cpu" else _GPU_MODEL))
    if not isinstance(model, TinyTransformer):
        raise TypeError(f"model must be a TinyTransformer, got {type(model).__name__}")
    model = model.to(d).eval()
    tokens = make_batches(seed, 1, batch, model.seq_len, model.vocab)[0, :, :-1].to(d)
    slow16 = _slow_fp16(d)
    variants = [
        ("fp32", model, False, ""),
        ("bf16 autocast", model, True, "weights stay fp32; autocast casts them per matmul"),
        ("bf16 weights", copy.deepcopy(model).to(torch.bfloat16), False, ".to(torch.bfloat16): everything bf16"),
        (
            "fp16 weights",
            copy.deepcopy(model).half(),
            False,
            ".half(): everything fp16" + (f"; {_slow_fp16_note(d)}: timed once" if slow16 else ""),
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
            times, cut = _time_until(fwd, d, warm, 1 if few else repeats, deadline)
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


@dataclass(frozen=True, repr=False)
class OverflowDemo(TableRecord):
    """What :func:`overflow_demo`'s layer did in each dtype: ``max_activation`` its largest activation (in fp32),
    ``fp16_max`` fp16's largest value, ``outputs`` dtype name ("fp32", "fp16", "bf16") -> the outputs,
    ``fp16_finite`` and ``bf16_finite`` whether those outputs are all finite, ``bf16_max_abs_error`` the largest
    difference of the bf16 outputs from fp32's. Shown as a small table."""

    max_activation: float
    fp16_max: float
    outputs: dict[str, tuple[float, ...]]
    fp16_finite: bool
    bf16_finite: bool
    bf16_max_abs_error: float

    def _table(self):
        rows = [
            ("largest activation", f"{self.max_activation:.0f}"),
            ("fp16's largest value", f"{self.fp16_max:.0f}"),
            ("fp16 outputs finite", str(self.fp16_finite)),
            ("bf16 outputs finite", str(self.bf16_finite)),
            ("bf16 outputs' largest error against fp32", f"{self.bf16_max_abs_error:.1g}"),
        ]
        return None, rows, "an overflowing layer in fp32, fp16 and bf16", ()


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


# --------------------------------------------------------------------------------------------
# Reference experiments (recorded on a GPU; runnable small on a CPU)
# --------------------------------------------------------------------------------------------


def record_matmul_throughput(device: str = "cuda", size: int = 8192) -> dict:
    """size^3 matmul TFLOP/s in fp32, TF32, bf16, fp16 and fp8 (where the GPU has them), with the
    share of the spec peak, and time_fn against triton's do_bench on the bf16 matmul."""
    d = parse_device(device)
    dtypes = ("fp32", "tf32", "bf16", "fp16", "fp8") if d.type == "cuda" else ("fp32", "bf16")
    out = {"shape": f"{size}^3"}
    # a recorder measures what it is asked to: no time budget (a lesson's budget protects a slow CPU)
    for r in matmul_throughput([size], dtypes, device=d, repeats=10, budget_s=math.inf):
        k = r["dtype"]
        if r["skipped"]:
            out[f"{k}_skipped"] = r["skipped"]
            continue
        out[f"{k}_time_s"] = r["median_s"]
        out[f"{k}_tflops"] = r["tflops"]
        if r["percent_of_peak"] is not None:
            out[f"{k}_percent_of_spec_peak"] = r["percent_of_peak"]
    if d.type == "cuda":
        try:
            from triton.testing import do_bench
        except ImportError:
            out["do_bench"] = "triton not installed: no comparison"
        else:
            fn, _ = _matmul_fn("bf16", size, d)
            ms = do_bench(fn, return_mode="median")
            out["bf16_do_bench_time_s"] = ms / 1e3
            if "bf16_time_s" in out:
                out["time_fn_over_do_bench"] = out["bf16_time_s"] / (ms / 1e3)
    return out


def record_training(
    device: str = "cuda", steps: int | None = None, model_kwargs: dict | None = None, batch: int | None = None
) -> dict:
    """Step time, peak memory of a step and final loss of :func:`train` for each config that runs."""
    d = parse_device(device)
    out = {}
    for cfg in CONFIGS:
        r = train(cfg, steps=steps, device=d, progress=False, model_kwargs=model_kwargs, batch=batch)
        key = cfg.split()[0]
        if not r.ran:
            out[f"{key}_not_run"] = r.reason
            continue
        out[f"{key}_step_time_s"] = r.step_time_s
        out[f"{key}_peak_memory_bytes"] = r.peak_memory_bytes
        out[f"{key}_final_loss"] = r.final_loss
        out["model"] = ", ".join(f"{k}={v}" for k, v in r.model.items())
    return out


# ============================================================================================
# Results as small tables: each record is built from what an experiment returned (``Record.of(result)``),
# keeps the figures as fields for asserts, and shows itself as an HTML table in JupyterLab and as aligned
# text in a terminal (amp_lessons._table.TableRecord). Timings come with their spread (timing.Spread).
# ============================================================================================


def _need(value, what: str, want: str):
    raise TypeError(f"{what} must be {want}, got {type(value).__name__}: {value!r}"[:300])


def _rows_of(rows, keys: set, what: str, want: str) -> list[dict]:
    if not isinstance(rows, (list, tuple)) or not rows or not all(isinstance(r, dict) and keys <= set(r) for r in rows):
        _need(rows, what, want)
    return list(rows)


NOISY_RANGE = timing.NOISY_QUARTILE_RATIO
"""Two sets of timed runs are too noisy to compare when the ratio of their medians could lie anywhere in a range
wider than this factor between the quartiles (one's upper quartile over the other's lower one, against the
reverse), as on a machine busy with other work. Then no verdict is drawn, "within the spread" included. Quartiles,
not the extreme runs: one run slowed down by another program moves the extremes only."""


def _too_noisy(a: timing.Spread, b: timing.Spread) -> bool:
    return a.quartile_ratio * b.quartile_ratio > NOISY_RANGE


def _verdict(base: timing.Spread, cand: timing.Spread, faster: str = "faster", slower: str = "slower") -> str:
    """What two sets of timed runs (seconds) show: too noisy, within the spread, or ``faster`` / ``slower``."""
    if _too_noisy(base, cand):
        return "too noisy to conclude"
    if base.quartiles_overlap(cand):
        return "within the run-to-run spread"
    return faster if base.median > cand.median else slower


def _fmt(x: float) -> str:
    """3 significant digits, fixed notation where it reads well: 989, 89.4, 0.213, 0.00123."""
    if not math.isfinite(x) or x == 0 or abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.3g}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


# --------------------------------------------------------------------------------------------
# Spec sheets: tensor-core rate over fp32 rate
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class SpecRatioTable(TableRecord):
    """Spec-sheet fp16 tensor-core and fp32 peaks of the GPUs in ``timing.SPEC_PEAKS`` that have both:
    ``rows`` of (GPU, fp16 TFLOP/s, fp32 TFLOP/s); ``ratio(name)`` is fp16 / fp32."""

    rows: tuple

    @classmethod
    def of(cls, specs=timing.SPEC_PEAKS) -> SpecRatioTable:
        if not isinstance(specs, (list, tuple)) or not all(isinstance(s, timing.GPUSpec) for s in specs):
            _need(specs, "specs", "a sequence of timing.GPUSpec, such as timing.SPEC_PEAKS")
        return cls(tuple((s.name, s.fp16, s.fp32) for s in specs if s.fp16 and s.fp32))

    def ratio(self, name: str) -> float:
        for n, f16, f32 in self.rows:
            if n == name:
                return f16 / f32
        raise KeyError(f"no GPU {name!r} here; GPUs: {[r[0] for r in self.rows]}")

    def _table(self) -> tuple:
        rows = [[Cell(n, nowrap=True), f"{a:.0f}", f"{b:.1f}", f"{a / b:.1f}"] for n, a, b in self.rows]
        header = ("GPU", "fp16 tensor cores (TFLOP/s)", "fp32 (TFLOP/s)", "fp16 / fp32")
        return header, rows, "dense spec-sheet peaks", ["from NVIDIA's datasheets (see amp_lessons/timing.py)"]


# --------------------------------------------------------------------------------------------
# Matmul rates of this machine (the probe the lessons size their work from)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class RateTable(TableRecord):
    """The runs behind ``e2e.matmul_rates``: ``runs[dtype]`` the seconds of each timed n^3 matmul (n =
    ``size``), shown as GFLOP/s of the slowest, median and fastest run, and against fp32."""

    runs: dict
    size: int
    device: str

    @classmethod
    def of(cls, device="cpu") -> RateTable:
        runs = matmul_rate_runs(device)
        return cls(runs, RATE_PROBE_SIZE, str(device))

    def rates(self, dtype: str) -> timing.Spread:
        """GFLOP/s of the slowest, the median and the fastest run."""
        return timing.Spread.of(self.runs[dtype]).inverse(timing.matmul_flops(self.size, self.size, self.size) / 1e9)

    def overlaps_fp32(self, dtype: str) -> bool:
        return self.rates(dtype).quartiles_overlap(self.rates("fp32"))

    def too_noisy(self, dtype: str) -> bool:
        """Whether ``dtype``'s runs and fp32's vary too much to compare (:data:`NOISY_RANGE`)."""
        return _too_noisy(self.rates(dtype), self.rates("fp32"))

    def _table(self) -> tuple:
        f32 = self.rates("fp32")
        rows = []
        for dt in self.runs:
            r = self.rates(dt)
            against = "1" if dt == "fp32" else _fmt(r.median / f32.median)
            if dt != "fp32" and _too_noisy(r, f32):
                against += " (too noisy to compare)"
            elif dt != "fp32" and self.overlaps_fp32(dt):
                against += " (within the run-to-run spread)"
            rows.append([dt, str(r.n), *(_fmt(v) for v in (r.min, r.median, r.max)), against])
        header = ("dtype", "runs", "min (GFLOP/s)", "median (GFLOP/s)", "max (GFLOP/s)", "median / fp32 median")
        return header, rows, f"{self.size}^3 matmuls on {self.device}", []


# --------------------------------------------------------------------------------------------
# Throughput by dtype and size
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class ThroughputTable(TableRecord):
    """The rows of ``e2e.matmul_throughput`` (or ``e2e.odd_size_effect``) with their spread: ``measured`` rows
    of (dtype, n, TFLOP/s spread, % of the spec peak at the median or None); ``skipped`` the reasons of
    the rows not run; ``note`` (odd_size_effect: the base chosen)."""

    measured: tuple
    skipped: tuple
    note: str = ""

    @classmethod
    def of(cls, rows) -> ThroughputTable:
        rows = _rows_of(
            rows,
            {"size", "dtype", "tflops", "percent_of_peak", "skipped", "times_s"},
            "rows",
            "the list returned by e2e.matmul_throughput or e2e.odd_size_effect",
        )
        measured, skipped = [], []
        for r in rows:
            if r["skipped"] or not r["times_s"]:
                skipped.append(r["skipped"])
                continue
            flops = timing.matmul_flops(r["size"], r["size"], r["size"])
            measured.append(
                (r["dtype"], r["size"], timing.Spread.of(r["times_s"]).inverse(flops / 1e12), r["percent_of_peak"])
            )
        return cls(tuple(measured), tuple(dict.fromkeys(skipped)), rows[0].get("base_chosen", ""))

    def alignment_verdict(self, multiple: int = 8) -> str:
        """One sentence on what these rows measured for sizes that are multiples of ``multiple`` against sizes
        that are not, per dtype: slower, faster, within the run-to-run spread, or too noisy to conclude."""
        multiple = _int(multiple, "multiple", 2)
        out = []
        for dt in dict.fromkeys(dt for dt, _, _, _ in self.measured):
            rows = [(n, s) for d, n, s, _ in self.measured if d == dt]
            aligned = [(n, s) for n, s in rows if n % multiple == 0]
            odd = [(n, s) for n, s in rows if n % multiple]
            if not aligned or not odd:
                out.append(f"{dt}: too few sizes measured here to compare multiples of {multiple} with other sizes")
                continue
            best = max(aligned, key=lambda r: r[1].median)
            parts = []
            for n, s in odd:
                # rates: the odd size is "slower" where its rate is below the aligned one's
                words = _verdict(best[1], s, faster="slower", slower="faster")
                ratio = s.median / best[1].median
                parts.append(f"n={n} at {ratio:.2f}x the rate of n={best[0]} ({words})")
            out.append(f"{dt} on this machine: " + "; ".join(parts))
        return ". ".join(out) + "." if out else "nothing was measured here."

    def tflops(self, dtype: str, size: int) -> timing.Spread:
        for dt, n, s, _ in self.measured:
            if (dt, n) == (dtype, size):
                return s
        raise KeyError(f"no measured row for {dtype} at n={size}")

    def _table(self) -> tuple:
        peak = any(p is not None for *_, p in self.measured)
        # TFLOP/s where the rates reach 1 TFLOP/s (GPUs), else GFLOP/s (CPUs): no column of 1e-05s
        unit, k = (
            ("TFLOP/s", 1.0) if max((s.median for _, _, s, _ in self.measured), default=1) >= 1 else ("GFLOP/s", 1e3)
        )
        header = ("dtype", "n", f"min ({unit})", f"median ({unit})", f"max ({unit})") + (
            ("median / spec peak (%)",) if peak else ()
        )
        rows = []
        for dt, n, s, p in self.measured:
            row = [dt, str(n), *(_fmt(v * k) for v in (s.min, s.median, s.max))]
            if peak:
                row.append("" if p is None else f"{p:.0f}")
            rows.append(row)
        notes = [self.note] + [f"not run: {why}" for why in self.skipped]
        notes.append(f"n^3 matmuls, {unit} of the slowest, the median and the fastest run")
        return header, rows, "matmul throughput by dtype and size", notes


# --------------------------------------------------------------------------------------------
# Launch-bound: a tiny model and a large one, fp32 against bf16 autocast
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class LaunchTable(TableRecord):
    """``e2e.launch_bound_demo``'s two models: ``comparisons[name]`` a :class:`timing.TimingComparison`
    of the fp32 and bf16-autocast training steps; ``models[name]`` the model's description; ``note`` the width
    chosen for the large one."""

    comparisons: dict
    models: dict
    note: str
    cut_short: tuple = ()

    @property
    def verdicts(self) -> dict:
        """``{model: "faster" | "slower" | "within the run-to-run spread" | "too noisy to conclude"}``: bf16
        autocast's step against fp32's, from the runs' quartiles (:data:`NOISY_RANGE`)."""
        return {name: _verdict(c.baseline, c.candidate) for name, c in self.comparisons.items()}

    @classmethod
    def of(cls, launch) -> LaunchTable:
        if not isinstance(launch, LaunchBoundDemo):
            _need(launch, "launch", "the LaunchBoundDemo returned by e2e.launch_bound_demo")
        comparisons = {
            name: timing.TimingComparison.of(
                r.fp32_times_s, r.bf16_autocast_times_s, labels=("fp32", "bf16 autocast"), what="training step"
            )
            for name, r in launch.runs.items()
        }
        models = {name: r.model for name, r in launch.runs.items()}
        cut = tuple(f"{name}: {r.cut_short}" for name, r in launch.runs.items() if r.cut_short)
        return cls(comparisons, models, launch.width_chosen, cut)

    def _table(self) -> tuple:
        unit, size = max(
            (s for c in self.comparisons.values() for s in (c.baseline, c.candidate)), key=lambda s: s.median
        ).unit()
        header = (
            "model",
            f"fp32 step ({unit})",
            f"bf16 autocast step ({unit})",
            "speed-up (medians)",
            "between the quartiles",
            "verdict",
        )
        rows = []
        tones = {"faster": "good", "slower": "bad"}
        for name, c in self.comparisons.items():
            lo, hi = c.speedup_quartiles
            words = self.verdicts[name]
            verdict = Cell(words, tone=tones.get(words, "muted"))
            rows.append(
                [
                    f"{name}: {self.models[name]}",
                    _spread_text(c.baseline, size),
                    _spread_text(c.candidate, size),
                    f"{c.speedup:.2f}x",
                    f"{lo:.2f}x to {hi:.2f}x",
                    verdict,
                ]
            )
        notes = [
            "step times: median (lower to upper quartile) of the timed steps",
            f"large model: {self.note}" if self.note else "",
        ]
        notes += list(self.cut_short)
        if "too noisy to conclude" in self.verdicts.values():
            notes.append(
                f"too noisy to conclude: the quartiles allow speed-ups more than {NOISY_RANGE:g}x apart (a machine "
                "busy with other work); run the cell again when it is idle"
            )
        return header, rows, "one training step, fp32 against bf16 autocast", notes


def _spread_text(s: timing.Spread, size: float) -> str:
    lo, mid, hi = s.quartile_cells(size)
    return f"{mid} ({lo} to {hi})"


# --------------------------------------------------------------------------------------------
# Training runs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class TrainingTable(TableRecord):
    """``e2e.train``'s runs: ``ran`` rows of (config, step-time spread in s, peak memory bytes, final loss);
    ``not_run`` of (config, reason)."""

    ran: tuple
    not_run: tuple
    stopped: tuple = ()

    @classmethod
    def of(cls, runs) -> TrainingTable:
        if not isinstance(runs, (list, tuple)) or not runs or not all(isinstance(r, TrainRun) for r in runs):
            _need(runs, "runs", "a list of the TrainRuns of e2e.train")
        ran, not_run, stopped = [], [], []
        for r in runs:
            if r.ran:
                ran.append((r.config, timing.Spread.of(r.step_times_s), r.peak_memory_bytes, r.final_loss))
                if r.stopped_early:
                    stopped.append((r.config, r.stopped_early))
            else:
                not_run.append((r.config, r.reason))
        return cls(tuple(ran), tuple(not_run), tuple(stopped))

    def step_times(self, config: str) -> timing.Spread:
        for c, s, _, _ in self.ran:
            if c == config:
                return s
        raise KeyError(f"{config!r} did not run here; ran: {[r[0] for r in self.ran]}")

    def _table(self) -> tuple:
        if not self.ran:
            return ("configuration",), [[c] for c, _ in self.not_run], "training runs", [r for _, r in self.not_run]
        unit, size = max((s for _, s, _, _ in self.ran), key=lambda s: s.median).unit()
        header = (
            "configuration",
            f"step min ({unit})",
            f"step median ({unit})",
            f"step max ({unit})",
            "peak memory (MiB)",
            "final loss",
        )
        rows = [[c, *s.cells(size), f"{m / 2**20:.1f}", f"{loss:.3f}"] for c, s, m, loss in self.ran]
        rows += [[c, Cell("not run", tone="muted"), "", "", "", ""] for c, _ in self.not_run]
        fp32 = next((s for c, s, _, _ in self.ran if c == "fp32"), None)
        notes = []
        for c, s, _, _ in self.ran:
            if fp32 is not None and c != "fp32":
                words = _verdict(fp32, s)
                if words == "too noisy to conclude":
                    notes.append(f"{c}: step times too noisy to compare with fp32's (a machine busy with other work)")
                elif words == "within the run-to-run spread":
                    notes.append(f"{c}: step times within the run-to-run spread of fp32's")
        notes += [f"{c}: {why}" for c, why in self.stopped]
        notes += [f"{c} not run: {why.removeprefix('not run: ')}" for c, why in self.not_run]
        return header, rows, "training runs", notes


# --------------------------------------------------------------------------------------------
# Inference
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class InferenceTable(TableRecord):
    """``e2e.inference_compare``'s rows: ``rows`` of (variant, max |logit error| against fp32, forward-time
    spread in s, parameter bytes, output dtype, note)."""

    rows: tuple

    @classmethod
    def of(cls, rows) -> InferenceTable:
        keys = {"variant", "max_abs_error", "times_s", "param_bytes", "output_dtype", "note"}
        rows = _rows_of(rows, keys, "rows", "the list returned by e2e.inference_compare")
        return cls(
            tuple(
                (
                    r["variant"],
                    r["max_abs_error"],
                    timing.Spread.of(r["times_s"]),
                    r["param_bytes"],
                    r["output_dtype"],
                    r["note"],
                )
                for r in rows
            )
        )

    def _table(self) -> tuple:
        unit, size = max((r[2] for r in self.rows), key=lambda s: s.median).unit()
        header = (
            "variant",
            "max |logit error| vs fp32",
            f"forward min ({unit})",
            f"forward median ({unit})",
            f"forward max ({unit})",
            "parameters (MiB)",
            "output dtype",
        )
        rows = [
            [v, f"{e:.2g}", *s.cells(size), f"{b / 2**20:.2f}", Cell(dt, nowrap=True)]
            for v, e, s, b, dt, _ in self.rows
        ]
        notes = [f"{v}: {n}" for v, _, _, _, _, n in self.rows if n]
        return header, rows, "one batch of logits, four ways", notes
