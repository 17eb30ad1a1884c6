"""How long a function takes, on the CPU or on a CUDA GPU, and how far that is from the spec sheet.

``time_fn`` times ``repeats`` runs after a warm-up (CUDA events on a GPU, ``time.perf_counter`` or, with
``block_s``, ``torch.utils.benchmark.Timer`` on the CPU) and returns a :class:`Timing` that prints the median and
the interquartile range. ``Spread.of(runs)`` gives min / quartiles / median / max; ``TimingComparison.of`` puts
two settings side by side with a verdict. ``SPEC_PEAKS`` (from ``amp_lessons._spec``) holds NVIDIA's spec-sheet
dense peaks for a few GPUs; a CPU has none.
"""

from __future__ import annotations

import contextlib
import logging
import math
import statistics
import time
from dataclasses import dataclass

import torch

from ._runtime import parse_device
from ._spec import DTYPE_KEYS, SPEC_PEAKS, GPUSpec, check_dtype_key, gpu_spec, spec_peak_tflops
from ._table import Cell, TableRecord
from ._validate import count, flag, is_int, is_real, number, positive

__all__ = [
    "DTYPE_KEYS", "GPUSpec", "L2_FLUSH_BYTES", "NOISY_QUARTILE_RATIO", "SPEC_PEAKS", "Spread", "Timing",
    "TimingComparison", "format_seconds", "gpu_spec", "matmul_flops", "spec_peak_tflops", "time_fn"
]  # fmt: skip

MAX_REPEATS = 100_000
"""The most warm-up or timed calls :func:`time_fn` makes (a typo must not hang a kernel)."""

L2_FLUSH_BYTES = 256 * 2**20
"""Size of the buffer zeroed before each timed call when ``flush_l2=True``: larger than the L2 of every GPU in
``SPEC_PEAKS``."""

_METHODS = ("cuda events", "benchmark.Timer", "perf_counter")
MAX_BLOCK_CALLS = 1000
"""The most calls :func:`time_fn` groups into one timed run (``block_s``)."""


def _fmt_rate(x: float) -> str:
    """3 significant digits in fixed notation: 989, 89.4, 16.0, 0.213."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    digits = max(0, 2 - math.floor(math.log10(abs(x))))
    return f"{x:.{digits}f}"


def format_seconds(s: float) -> str:
    """A duration with 3 significant digits in s, ms or µs: "1.23 s", "16.0 ms", "157 µs"."""
    if isinstance(s, torch.Tensor) and s.numel() == 1:
        s = float(s)
    number(s, "s", "a number of seconds")
    a = abs(s)
    if a >= 1 or a == 0 or not math.isfinite(s):
        return f"{_fmt_rate(s)} s"
    if a >= 1e-3:
        return f"{_fmt_rate(s * 1e3)} ms"
    return f"{_fmt_rate(s * 1e6)} µs"


_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _time_unit(seconds: float) -> tuple[str, float]:
    if not is_real(seconds, -math.inf, math.inf, open_low=True, open_high=True):
        raise ValueError(f"seconds must be a finite number of seconds, got {seconds!r}")
    a = abs(seconds)
    for name, size in _UNITS:
        if a >= size:
            return name, size
    return _UNITS[-1]


def _seconds_tuple(times, what: str) -> tuple[float, ...]:
    if isinstance(times, Timing):
        return times.times_s
    try:
        out = tuple(times)
    except TypeError:
        raise TypeError(f"{what} must be a Timing or a sequence of durations in seconds, got {times!r}") from None
    if not out or not all(is_real(t, 0, math.inf, open_low=True, open_high=True) for t in out):
        raise ValueError(f"{what} must hold one or more positive, finite durations in seconds, got {times!r}")
    return tuple(float(t) for t in out)


@dataclass(frozen=True, repr=False)
class Spread:
    """Several runs of one measurement: ``min``, ``median``, ``max``, the number of runs ``n`` and the quartiles
    ``q1``, ``q3`` (``min`` and ``max`` where not given), in the measurement's unit."""

    min: float
    median: float
    max: float
    n: int
    q1: float | None = None
    q3: float | None = None

    def __post_init__(self):
        for name in ("min", "median", "max", "q1", "q3"):
            v = getattr(self, name)
            if not (v is None and name in ("q1", "q3")) and not is_real(v):
                raise TypeError(f"{name} must be a real number (a time in seconds or another quantity), got {v!r}")
        if not (0 < self.min <= self.median <= self.max) or not math.isfinite(self.max):
            raise ValueError(f"need 0 < min <= median <= max < inf, got {self.min!r}, {self.median!r}, {self.max!r}")
        count(self.n, "n", 1, None, "runs")
        if self.q1 is None:
            object.__setattr__(self, "q1", self.min)
        if self.q3 is None:
            object.__setattr__(self, "q3", self.max)
        if not (self.min <= self.q1 <= self.median <= self.q3 <= self.max):
            raise ValueError(
                f"need min <= q1 <= median <= q3 <= max, got {self.min!r}, {self.q1!r}, {self.median!r}, "
                f"{self.q3!r}, {self.max!r}"
            )

    @property
    def quartile_ratio(self) -> float:
        """``q3 / q1``: how far apart the typical runs are, as a factor."""
        return self.q3 / self.q1

    def quartiles_overlap(self, other: Spread) -> bool:
        """Whether the interquartile ranges [q1, q3] of the two share a value."""
        if not isinstance(other, Spread):
            raise TypeError(f"other must be a Spread, got {other!r}")
        return max(self.q1, other.q1) <= min(self.q3, other.q3)

    def overlaps(self, other: Spread) -> bool:
        """Whether the ranges [min, max] of the two share a value."""
        if not isinstance(other, Spread):
            raise TypeError(f"other must be a Spread, got {other!r}")
        return max(self.min, other.min) <= min(self.max, other.max)

    def inverse(self, numerator: float = 1.0) -> Spread:
        """``numerator / x`` of each run (times to rates): the fastest run gives the largest rate."""
        if not is_real(numerator, 0, open_low=True):
            raise ValueError(f"numerator must be a positive number, got {numerator!r}")
        x = numerator
        return Spread(x / self.max, x / self.median, x / self.min, self.n, x / self.q3, x / self.q1)

    def seconds_text(self) -> str:
        """As a duration: "322 µs (300–410 µs, 5 runs)"."""
        unit, size = _time_unit(self.median)
        return (
            f"{_fmt_rate(self.median / size)} {unit} ({_fmt_rate(self.min / size)}–{_fmt_rate(self.max / size)}"
            f" {unit}, {self.n} {'run' if self.n == 1 else 'runs'})"
        )

    def unit(self) -> tuple[str, float]:
        """The unit to show these durations in, and its size in seconds: ``("ms", 1e-3)`` for 0.0123 s."""
        return _time_unit(self.median)

    def quartile_cells(self, size: float = 1.0) -> list[str]:
        """q1, median, q3 divided by ``size`` (e.g. 1e-3 for ms), 3 significant digits each."""
        if not is_real(size, 0, math.inf, open_low=True, open_high=True):
            raise ValueError(f"size must be a positive, finite number (the unit, e.g. 1e-3 for ms), got {size!r}")
        return [_fmt_rate(v / size) for v in (self.q1, self.median, self.q3)]

    def cells(self, size: float = 1.0) -> list[str]:
        """min, median, max divided by ``size`` (e.g. 1e-3 for ms), 3 significant digits each."""
        return [_fmt_rate(v / size) for v in (self.min, self.median, self.max)]

    def __str__(self) -> str:
        return f"{_fmt_rate(self.median)} ({_fmt_rate(self.min)}–{_fmt_rate(self.max)}, {self.n} runs)"

    __repr__ = __str__

    @classmethod
    def of(cls, values) -> Spread:
        """min / median / max of several runs (a :class:`Timing`, or a sequence of positive numbers)."""
        v = _seconds_tuple(values, "values")
        q1, med, q3 = statistics.quantiles(v, n=4, method="inclusive") if len(v) > 1 else (v[0],) * 3
        lo, hi = min(v), max(v)  # the clamps absorb the last bit of rounding in the interpolation
        return cls(lo, statistics.median(v), hi, len(v), min(max(q1, lo), med), max(min(q3, hi), med))


@dataclass(frozen=True, repr=False)
class Timing:
    """The result of :func:`time_fn`: the median and every timed run, in seconds."""

    median_s: float
    times_s: tuple[float, ...]
    device: str  # "cpu", or the GPU's name
    flops: float | None = None
    dtype_key: str | None = None
    method: str = "perf_counter"  # "cuda events", "benchmark.Timer" (time_fn on a CPU) or "perf_counter"
    l2_flushed: bool = False
    calls_per_run: int = 1  # calls averaged in each run (time_fn's block_s); times_s are per call

    def __post_init__(self):
        if not isinstance(self.times_s, tuple) or not self.times_s:
            raise ValueError(f"times_s must be a non-empty tuple of seconds, got {self.times_s!r}")
        if self.method not in _METHODS:
            raise ValueError(f"method must be one of {_METHODS}, got {self.method!r}")
        check_dtype_key(self.dtype_key, allow_none=True)
        count(self.calls_per_run, "calls_per_run", 1, MAX_BLOCK_CALLS, "calls averaged in one run")

    @property
    def min_s(self) -> float:
        return min(self.times_s)

    @property
    def max_s(self) -> float:
        return max(self.times_s)

    @property
    def spread(self) -> Spread:
        """min / median / max of the timed runs, in seconds."""
        return Spread.of(self.times_s)

    @property
    def iqr_s(self) -> float:
        """The interquartile range of the runs (q3 - q1, interpolated as ``torch.quantile``); 0 for one run."""
        if len(self.times_s) < 2:
            return 0.0
        q1, _, q3 = statistics.quantiles(self.times_s, n=4, method="inclusive")
        return q3 - q1

    @property
    def tflops_spread(self) -> Spread | None:
        """Achieved TFLOP/s of the slowest, the median and the fastest run (None without ``flops``)."""
        if self.flops is None:
            return None
        return self.spread.inverse(self.flops / 1e12)

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s: flops / median / 1e12 (None without ``flops``)."""
        if self.flops is None or self.median_s <= 0:
            return None
        return self.flops / self.median_s / 1e12

    @property
    def peak_tflops(self) -> float | None:
        """Spec-sheet peak of this GPU in ``dtype_key`` math; None on a CPU or if unknown."""
        if self.method != "cuda events" or self.dtype_key is None:
            return None
        return spec_peak_tflops(self.device, self.dtype_key)

    @property
    def percent_of_peak(self) -> float | None:
        rate, peak = self.tflops, self.peak_tflops
        if rate is None or not peak:
            return None
        return 100.0 * rate / peak

    def __str__(self) -> str:
        how = self.method + (", L2 flushed" if self.l2_flushed else "")
        if self.calls_per_run > 1:
            how += f", {self.calls_per_run} calls a run"
        n = len(self.times_s)
        spread = (
            f" (IQR {format_seconds(self.iqr_s)}; min {format_seconds(self.min_s)}, max {format_seconds(self.max_s)})"
        )
        runs = "run" if n == 1 else "runs"
        text = (
            f"median {format_seconds(self.median_s)}{spread if n > 1 else ''} over {n} {runs} on {self.device} ({how})"
        )
        rate = self.tflops
        if rate is None:
            return text
        text += f": {_fmt_rate(rate)} TFLOP/s"
        if self.method != "cuda events":
            return text + " (no spec peak known for CPUs)"
        if self.dtype_key is None:
            return text + " (give dtype_key to compare with the spec peak)"
        peak = self.peak_tflops
        if peak is None:
            if gpu_spec(self.device) is None:
                return text + f" (no spec peak known for {self.device})"
            return text + f" (the {self.device} has no {self.dtype_key} spec peak)"
        return text + f" = {self.percent_of_peak:.0f}% of the {_fmt_rate(peak)} TFLOP/s {self.dtype_key} spec peak"

    __repr__ = __str__


def matmul_flops(m: int, k: int, n: int) -> float:
    """Floating-point operations of an (m, k) @ (k, n) matmul: 2*m*k*n."""
    for label, v in (("m", m), ("k", k), ("n", n)):
        if not is_int(v, 1):
            raise ValueError(f"{label} must be a positive int, got {v!r}")
    return float(2 * m * k * n)


def _l2_flush_buffer(device: torch.device) -> torch.Tensor:
    return torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device=device)


def _call_s(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _benchmark():
    """``torch.utils.benchmark``, imported without ``cpp_extension``'s "No CUDA runtime is found" log line."""
    log = logging.getLogger("torch.utils.cpp_extension")
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        import torch.utils.benchmark as benchmark
    finally:
        log.setLevel(level)
    return benchmark


def time_fn(
    fn,
    *,
    device="cpu",
    warmup: int = 3,
    repeats: int = 10,
    flush_l2: bool = False,
    flops: float | None = None,
    dtype_key: str | None = None,
    block_s: float | None = None,
) -> Timing:
    """Time ``fn()`` on ``device``: ``warmup`` untimed calls, then ``repeats`` timed runs; the median is reported.

    On CUDA each call sits between two CUDA events (GPU time); ``flush_l2=True`` zeroes a 256 MiB buffer before
    each (a cold L2; ignored on the CPU). On the CPU ``time.perf_counter`` brackets each call; with ``block_s``,
    a call faster than ``block_s`` is timed in blocks by ``torch.utils.benchmark.Timer`` (each run the mean of up
    to :data:`MAX_BLOCK_CALLS` calls; it runs extra calls, so only for ``fn`` without side effects).
    ``flops`` (e.g. ``matmul_flops(m, k, n)``) gives the achieved TFLOP/s; ``dtype_key`` (one of ``DTYPE_KEYS``)
    compares it with the GPU's spec-sheet peak.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a callable taking no arguments, got {fn!r}")
    count(warmup, "warmup", 0, MAX_REPEATS, "calls of fn, each timed in turn")
    count(repeats, "repeats", 1, MAX_REPEATS, "calls of fn, each timed in turn")
    if flops is not None and not is_real(flops, 0, math.inf, open_low=True, open_high=True):
        raise ValueError(f"flops must be a positive number or None, got {flops!r}")
    check_dtype_key(dtype_key, allow_none=True)
    flag(flush_l2, "flush_l2")
    if block_s is not None:
        block_s = positive(block_s, "block_s")
        if block_s > 10:
            raise ValueError(f"block_s={block_s!r} is not allowed: a block of calls lasts at most 10 s (or None)")
    dev = parse_device(device, require_available=False)

    if dev.type == "cpu":
        fastest = min((_call_s(fn) for _ in range(warmup)), default=math.inf)
        if block_s is None or not 0 < fastest < block_s:  # one call a run
            times = [_call_s(fn) for _ in range(repeats)]
            method, number = "perf_counter", 1
        else:
            number = min(MAX_BLOCK_CALLS, math.ceil(block_s / fastest))
            timer = _benchmark().Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
            # Timer.timeit runs max(number // 100, 2) calls of its own first, then times the block: seconds per call
            times = [timer.timeit(number).median for _ in range(repeats)]
            method = "benchmark.Timer"
        return Timing(
            statistics.median(times), tuple(times), "cpu", flops and float(flops), dtype_key, method, False, number
        )
    if block_s is not None:
        raise ValueError(f"block_s={block_s!r} is for the CPU only: on {dev} each run is timed by CUDA events")

    if not torch.cuda.is_available():
        raise RuntimeError(
            f"time_fn(device={device!r}) needs a CUDA GPU, but torch.cuda.is_available() is False "
            f"on this machine (torch {torch.__version__}); use device='cpu'"
        )
    name = torch.cuda.get_device_name(dev)
    buffer = _l2_flush_buffer(dev) if flush_l2 else None
    pairs = []
    # Events record on the current device's stream: make "cuda:N" current while timing.
    with torch.cuda.device(dev.index) if dev.index is not None else contextlib.nullcontext():
        torch.cuda.synchronize(dev)
        for _ in range(warmup):
            fn()
        torch.cuda.synchronize(dev)
        for _ in range(repeats):
            if buffer is not None:
                buffer.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize(dev)
    times = [start.elapsed_time(end) / 1e3 for start, end in pairs]  # elapsed_time is in ms
    return Timing(
        statistics.median(times), tuple(times), name, flops and float(flops), dtype_key, "cuda events", flush_l2
    )


NOISY_QUARTILE_RATIO = 1.5
"""Two settings' runs are too noisy to compare when the product of their quartile ratios (``q3 / q1``) exceeds this."""


@dataclass(frozen=True, repr=False)
class TimingComparison(TableRecord):
    """Runs of a ``baseline`` and a ``candidate`` setting (seconds each): a table of min / quartiles / median / max
    with a verdict read from the quartiles (too noisy, within the run-to-run spread, or faster / slower).
    ``speedup`` is baseline median / candidate median; ``speedup_quartiles`` and ``speedup_range`` the speed-ups
    the typical and the extreme runs allow."""

    labels: tuple[str, str]
    baseline_s: tuple[float, ...]
    candidate_s: tuple[float, ...]
    what: str = "time"

    def __post_init__(self):
        if not (
            isinstance(self.labels, tuple)
            and len(self.labels) == 2
            and all(isinstance(x, str) and x for x in self.labels)
        ):
            raise ValueError(f"labels must be two non-empty strings (baseline, candidate), got {self.labels!r}")
        _seconds_tuple(self.baseline_s, "baseline_s")
        _seconds_tuple(self.candidate_s, "candidate_s")

    @property
    def baseline(self) -> Spread:
        return Spread.of(self.baseline_s)

    @property
    def candidate(self) -> Spread:
        return Spread.of(self.candidate_s)

    @property
    def speedup(self) -> float:
        return self.baseline.median / self.candidate.median

    @property
    def speedup_range(self) -> tuple[float, float]:
        b, c = self.baseline, self.candidate
        return b.min / c.max, b.max / c.min

    @property
    def speedup_quartiles(self) -> tuple[float, float]:
        b, c = self.baseline, self.candidate
        return b.q1 / c.q3, b.q3 / c.q1

    @property
    def overlap(self) -> bool:
        """Whether the two settings' interquartile ranges share a value."""
        return self.baseline.quartiles_overlap(self.candidate)

    @property
    def too_noisy(self) -> bool:
        """Whether the typical runs spread too far to judge (:data:`NOISY_QUARTILE_RATIO`)."""
        return self.baseline.quartile_ratio * self.candidate.quartile_ratio > NOISY_QUARTILE_RATIO

    @property
    def verdict(self) -> str:
        base, cand = self.labels
        lo, hi = self.speedup_quartiles
        text = (
            f"{cand} runs at {self.speedup:.2f}x the speed of {base} (medians; "
            f"{lo:.2f}x to {hi:.2f}x between the quartiles): "
        )
        if self.too_noisy:
            return text + "too noisy to judge: the typical runs vary too much (a busy machine); run it again"
        if self.overlap:
            return text + "within the run-to-run spread, so these runs do not show either one faster"
        return text + ("faster" if self.speedup > 1 else "slower") + ", beyond the run-to-run spread"

    def _table(self) -> tuple:
        unit, size = _time_unit(max(self.baseline.median, self.candidate.median))
        header = ("setting", "runs", f"min ({unit})", f"q1 ({unit})", f"median ({unit})", f"q3 ({unit})",
                  f"max ({unit})")  # fmt: skip
        rows = [
            [Cell(label, nowrap=True), str(s.n), *(_fmt_rate(v / size) for v in (s.min, s.q1, s.median, s.q3, s.max))]
            for label, s in zip(self.labels, (self.baseline, self.candidate))
        ]
        return header, rows, f"{self.what}: {self.labels[1]} against {self.labels[0]}", [self.verdict]

    @classmethod
    def of(cls, baseline, candidate, *, labels=("baseline", "candidate"), what: str = "time") -> TimingComparison:
        """Compare two settings' runs (each a :class:`Timing` or a sequence of seconds)."""
        b = _seconds_tuple(baseline, "baseline")
        c = _seconds_tuple(candidate, "candidate")
        if isinstance(labels, list):
            labels = tuple(labels)
        if not isinstance(what, str) or not what:
            raise ValueError(f"what must be a non-empty string, such as 'training step', got {what!r}")
        return cls(labels, b, c, what)
