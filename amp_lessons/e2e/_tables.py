"""Lesson 06's tables of measurements that need no record of the lesson (``Table.of(result)``), shown with their
spread, and the helpers every table of the lesson uses."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import timing
from .._table import Cell, TableRecord
from .._validate import count
from ._common import MAX_SIZE, RATE_PROBE_SIZE, matmul_rate_runs


def need(value, what: str, want: str):
    raise TypeError(f"{what} must be {want}, got {type(value).__name__}: {value!r}"[:300])


def rows_of(rows, keys: set, what: str, want: str) -> list[dict]:
    if not isinstance(rows, (list, tuple)) or not rows or not all(isinstance(r, dict) and keys <= set(r) for r in rows):
        need(rows, what, want)
    return list(rows)


NOISY_RANGE = timing.NOISY_QUARTILE_RATIO
"""Two sets of timed runs whose interquartile ranges overlap are too noisy to compare when the ratio of their medians
could lie anywhere in a range wider than this factor between the quartiles (as on a machine busy with other work)."""


def too_noisy(a: timing.Spread, b: timing.Spread) -> bool:
    return a.quartile_ratio * b.quartile_ratio > NOISY_RANGE


def verdict(base: timing.Spread, cand: timing.Spread, faster: str = "faster", slower: str = "slower") -> str:
    """What two sets of timed runs show: ``faster`` / ``slower`` where their interquartile ranges do not overlap; where
    they overlap, "too noisy to conclude" if they vary by more than :data:`NOISY_RANGE` together, else "within the
    run-to-run spread"."""
    if not base.quartiles_overlap(cand):
        return faster if base.median > cand.median else slower
    if too_noisy(base, cand):
        return "too noisy to conclude"
    return "within the run-to-run spread"


def fmt(x: float) -> str:
    """3 significant digits, fixed notation where it reads well: 989, 89.4, 0.213, 0.00123."""
    if not math.isfinite(x) or x == 0 or abs(x) < 1e-3 or abs(x) >= 1e5:
        return f"{x:.3g}"
    return f"{x:.{max(0, 2 - math.floor(math.log10(abs(x))))}f}"


@dataclass(frozen=True, repr=False)
class SpecRatioTable(TableRecord):
    """Spec-sheet fp16 tensor-core and fp32 peaks of the GPUs in ``timing.SPEC_PEAKS`` that have both: ``rows`` of
    (GPU, fp16 TFLOP/s, fp32 TFLOP/s); ``ratio(name)`` is fp16 / fp32."""

    rows: tuple

    @classmethod
    def of(cls, specs=timing.SPEC_PEAKS) -> SpecRatioTable:
        if not isinstance(specs, (list, tuple)) or not all(isinstance(s, timing.GPUSpec) for s in specs):
            need(specs, "specs", "a sequence of timing.GPUSpec, such as timing.SPEC_PEAKS")
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


@dataclass(frozen=True, repr=False)
class RateTable(TableRecord):
    """The runs behind ``e2e.matmul_rates``: ``runs[dtype]`` the seconds of each timed n^3 matmul (n = ``size``), shown
    as GFLOP/s of the slowest, median and fastest run, and the fastest against fp32's fastest."""

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

    def too_noisy(self, dtype: str) -> bool:
        """Whether ``dtype``'s runs and fp32's overlap and vary too much to compare (:data:`NOISY_RANGE`)."""
        return verdict(self.rates(dtype), self.rates("fp32")) == "too noisy to conclude"

    def _table(self) -> tuple:
        f32 = self.rates("fp32")
        rows = []
        for dt in self.runs:
            r = self.rates(dt)
            against = "1" if dt == "fp32" else fmt(r.max / f32.max)
            rows.append([dt, str(r.n), *(fmt(v) for v in (r.min, r.median, r.max)), against])
        header = ("dtype", "runs", "min (GFLOP/s)", "median (GFLOP/s)", "max (GFLOP/s)", "max / fp32 max")
        notes = ["the probes of the dtypes were timed in turn, round after round"]
        if self.device.startswith("cpu"):
            notes[0] += ", every other round on one thread"
        notes[0] += "; the lesson sizes its work from each dtype's fastest probe"
        return header, rows, f"{self.size}^3 matmuls on {self.device}", notes


@dataclass(frozen=True, repr=False)
class ThroughputTable(TableRecord):
    """The rows of ``e2e.matmul_throughput`` (or ``e2e.odd_size_effect``) with their spread: ``measured`` rows of
    (dtype, n, TFLOP/s spread, % of the spec peak or None), ``skipped`` the reasons of the rows not run, ``note``."""

    measured: tuple
    skipped: tuple
    note: str = ""

    @classmethod
    def of(cls, rows) -> ThroughputTable:
        rows = rows_of(
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
        """One sentence per dtype on what these rows measured for sizes that are not multiples of ``multiple`` against
        their nearest multiple (the smaller on a tie): slower, faster, within the run-to-run spread, or too noisy."""
        multiple = count(multiple, "multiple", 2, MAX_SIZE)
        out = []
        for dt in dict.fromkeys(dt for dt, _, _, _ in self.measured):
            rows = [(n, s) for d, n, s, _ in self.measured if d == dt]
            aligned = [(n, s) for n, s in rows if n % multiple == 0]
            odd = [(n, s) for n, s in rows if n % multiple]
            if not aligned or not odd:
                out.append(f"{dt}: too few sizes measured here to compare multiples of {multiple} with other sizes")
                continue
            parts = []
            for n, s in odd:
                near = min(aligned, key=lambda r: (abs(r[0] - n), r[0]))
                # rates: the odd size is "slower" where its rate is below the aligned one's
                words = verdict(near[1], s, faster="slower", slower="faster")
                ratio = s.median / near[1].median
                shown = f"{ratio:.2f}" if f"{ratio:.2f}" != "1.00" else f"{ratio:.4f}"  # never "1.00x (slower)"
                parts.append(f"n={n} at {shown}x the rate of n={near[0]} ({words})")
            out.append(f"{dt} on this machine: " + "; ".join(parts))
        return ". ".join(out) + "." if out else "nothing was measured here."

    def tflops(self, dtype: str, size: int) -> timing.Spread:
        for dt, n, s, _ in self.measured:
            if (dt, n) == (dtype, size):
                return s
        raise KeyError(f"no measured row for {dtype} at n={size}")

    def _table(self) -> tuple:
        peak = any(p is not None for *_, p in self.measured)
        # TFLOP/s where the rates reach 1 TFLOP/s (GPUs), else GFLOP/s (CPUs)
        unit, k = (
            ("TFLOP/s", 1.0) if max((s.median for _, _, s, _ in self.measured), default=1) >= 1 else ("GFLOP/s", 1e3)
        )
        header = ("dtype", "n", f"min ({unit})", f"median ({unit})", f"max ({unit})") + (
            ("median / spec peak (%)",) if peak else ()
        )
        rows = []
        for dt, n, s, p in self.measured:
            row = [dt, str(n), *(fmt(v * k) for v in (s.min, s.median, s.max))]
            if peak:
                row.append("" if p is None else f"{p:.0f}")
            rows.append(row)
        notes = [self.note] + [f"not run: {why}" for why in self.skipped]
        notes.append(f"n^3 matmuls, {unit} of the slowest, the median and the fastest run")
        return header, rows, "matmul throughput by dtype and size", notes


def spread_text(s: timing.Spread, size: float) -> str:
    lo, mid, hi = s.quartile_cells(size)
    return f"{mid} ({lo} to {hi})"


@dataclass(frozen=True, repr=False)
class InferenceTable(TableRecord):
    """``e2e.inference_compare``'s rows: ``rows`` of (variant, max |logit error| against fp32, forward-time
    spread in s, parameter bytes, output dtype, note)."""

    rows: tuple

    @classmethod
    def of(cls, rows) -> InferenceTable:
        keys = {"variant", "max_abs_error", "times_s", "param_bytes", "output_dtype", "note"}
        rows = rows_of(rows, keys, "rows", "the list returned by e2e.inference_compare")
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
