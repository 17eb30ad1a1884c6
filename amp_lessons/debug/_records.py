"""Lesson 08's records: what the debugging tools of :mod:`._experiments` return, and their tables."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from .. import timing
from .._table import Cell, TableRecord
from .._validate import flag
from ..formats import get_format

__all__ = [
    "AMDAHL_SLACK",
    "DtypeMap",
    "DtypeTable",
    "ModuleRecord",
    "OverflowTrace",
    "TensorStats",
    "TraceTable",
    "Triage",
]


@dataclass(frozen=True)
class TensorStats:
    """Magnitudes of a tensor (or of a module output's floating tensors): ``fractions[fmt]`` is the share of the
    finite values in each class of :data:`amp_lessons.formats.CLASSES` in ``fmt``; inf and NaN are ``nonfinite``."""

    dtype: str
    shape: tuple
    numel: int
    absmax: float  # largest finite magnitude (0.0 if none)
    absmin_nonzero: float  # smallest finite non-zero magnitude (inf if none)
    nonfinite: int
    fractions: dict

    @property
    def has_nonfinite(self) -> bool:
        return self.nonfinite > 0

    def overflow(self, fmt) -> float:
        """The share of the finite values beyond ``fmt``'s range: ``fractions[fmt]`` of its overflow class."""
        f = get_format(fmt)
        if f.name not in self.fractions:
            raise ValueError(f"fmt={fmt!r} was not counted: these statistics have {tuple(self.fractions)}")
        return self.fractions[f.name][f.overflow_class()]


@dataclass
class ModuleRecord:
    """One call of one module (``"(model)"`` for the model itself): statistics of its input, output and, after
    backward, its output's gradient."""

    name: str
    type: str
    call: int
    input: TensorStats | None
    output: TensorStats | None
    grad: TensorStats | None = None

    @property
    def label(self) -> str:
        return self.name if self.call == 1 else f"{self.name} (call {self.call})"


@dataclass
class OverflowTrace:
    """What :func:`trace_overflow` saw: ``records`` in forward order, ``grad_order`` the labels in backward order,
    the ``loss``, the ``setting`` and the ``formats`` counted."""

    records: list
    grad_order: list
    loss: float | None
    setting: str
    formats: tuple
    device_type: str

    def record(self, label: str) -> ModuleRecord:
        for r in self.records:
            if r.label == label:
                return r
        raise KeyError(f"no module {label!r} in this trace; modules: {[r.label for r in self.records]}")

    def first_nonfinite(self, kind: str = "output") -> ModuleRecord | None:
        """The first module whose output (``kind="output"``, forward order) or output gradient (``"grad"``,
        backward order) holds an inf or a NaN; None if there is none."""
        if kind == "output":
            return next((r for r in self.records if r.output is not None and r.output.has_nonfinite), None)
        if kind == "grad":
            grads = {r.label: r for r in self.records if r.grad is not None and r.grad.has_nonfinite}
            return next((grads[label] for label in self.grad_order if label in grads), None)
        raise ValueError(f"kind={kind!r} is not allowed: use 'output' or 'grad'")

    def first_overflow(self, fmt="fp16") -> ModuleRecord | None:
        """The first module whose finite output has values beyond ``fmt``'s range; None if none."""
        name = get_format(fmt).name
        if name not in self.formats:
            raise ValueError(f"fmt={fmt!r} was not traced: this trace has {self.formats}")
        return next((r for r in self.records if r.output is not None and r.output.overflow(name) > 0), None)

    def rows(self, leaves_only: bool = False) -> list[dict]:
        leaves_only = flag(leaves_only, "leaves_only")
        out = []
        for r in self.records:
            if r.output is None or (leaves_only and r.type == "Sequential"):
                continue
            row = {
                "module": r.label,
                "type": r.type,
                "dtype": r.output.dtype,
                "absmax": r.output.absmax,
                "absmin_nonzero": r.output.absmin_nonzero,
                "nonfinite": r.output.nonfinite,
                "grad_nonfinite": None if r.grad is None else r.grad.nonfinite,
            }
            for fmt in self.formats:
                for k, v in r.output.fractions[fmt].items():
                    row[f"{fmt} {k}"] = v
                row[f"{fmt} overflow"] = r.output.overflow(fmt)  # the share in the format's overflow class
            out.append(row)
        return out

    def summary(self) -> str:
        """The findings in a few lines: facts that do not depend on the CPU's last digits."""
        lines = [f"trace of one forward{' and backward' if self.grad_order else ''} pass: {self.setting}"]
        if self.loss is not None:
            lines.append(f"loss: {'finite' if math.isfinite(self.loss) else self.loss}")
        bad = self.first_nonfinite("output")
        if bad is None:
            lines.append("no inf/NaN in any module output")
        else:
            inp = bad.input
            where = "" if inp is None else f" (its input: abs max about {inp.absmax:.0e}, {inp.nonfinite} inf/NaN)"
            lines.append(f"first inf/NaN in an output: {bad.label} [{bad.type}]{where}")
        if self.grad_order:
            g = self.first_nonfinite("grad")
            lines.append("no inf/NaN in any output gradient" if g is None else f"first inf/NaN gradient: {g.label}")
        traced_in = {"torch.float16": "fp16", "torch.bfloat16": "bf16"}
        running = next((f for d, f in traced_in.items() if f"dtype={d})" in self.setting), None)
        for fmt in self.formats:
            if fmt == running:
                continue
            o = self.first_overflow(fmt)
            lines.append(f"first output that would overflow {fmt}: {'none' if o is None else o.label}")
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class TraceTable(TableRecord):
    """An :class:`OverflowTrace` module by module (``OverflowTrace.rows``), with each format's overflow and
    flush-to-zero shares."""

    rows: tuple
    formats: tuple
    setting: str

    @classmethod
    def of(cls, trace, *, leaves_only: bool = True) -> TraceTable:
        if not isinstance(trace, OverflowTrace):
            raise TypeError(f"trace must be the OverflowTrace of debug.trace_overflow, got {trace!r}"[:300])
        return cls(tuple(trace.rows(leaves_only)), tuple(trace.formats), trace.setting)

    def _table(self) -> tuple:
        header = ["module", "dtype", "abs max", "min |x| > 0", "inf/NaN"]
        for fmt in self.formats:
            header += [f"{fmt} overflow (%)", f"{fmt} to zero (%)"]
        rows = []
        for r in self.rows:
            row = [
                Cell(r["module"], nowrap=True),
                Cell(str(r["dtype"]).removeprefix("torch."), nowrap=True),
                f"{r['absmax']:.3g}",
                f"{r['absmin_nonzero']:.3g}",
                Cell(str(r["nonfinite"]), tone="bad" if r["nonfinite"] else None),
            ]
            for fmt in self.formats:
                row += [_pct(r[f"{fmt} overflow"]).removesuffix("%"), _pct(r[f"{fmt} flushed"]).removesuffix("%")]
            rows.append(row)
        return header, rows, f"module outputs, {self.setting}", []


def _pct(x: float) -> str:
    if x == 0:
        return "0"
    if x < 1e-4:
        return "<0.01%"
    return f"{100 * x:.3g}%"


#: How far a measured speed-up may exceed Amdahl's bound before the triage calls the runs contradictory.
AMDAHL_SLACK = 1.25


@dataclass(frozen=True, repr=False)
class Triage(TableRecord):
    """What :func:`why_not_faster` measured (every timed step of each setting, in ``rounds`` rounds; the
    profiler's matmul and cast shares; matmul rate ratios; the device probe) and what it concludes from the medians:
    :attr:`speedup`, :attr:`outcome`, :attr:`findings`, :attr:`causes` and :attr:`verdict`."""

    device: str
    dtype: str
    threads: int | None
    rounds: int
    fp32_times_s: tuple
    amp_times_s: tuple
    fp32_2x_times_s: tuple
    matmul_share_fp32: float
    matmul_share_amp: float
    casts: int
    cast_share: float
    model_rate_ratios: tuple
    rate_ratios: tuple
    hardware: str
    fast_hardware: bool
    odd_dims: list
    tf32_baseline: bool
    launch_ratio: float = 1.3

    @property
    def fp32_step_s(self) -> float:
        """The median fp32 step."""
        return statistics.median(self.fp32_times_s)

    @property
    def amp_step_s(self) -> float:
        """The median autocast step."""
        return statistics.median(self.amp_times_s)

    @property
    def speedup(self) -> float:
        """fp32 step time / autocast step time, of the medians (above 1: AMP is faster)."""
        return self.fp32_step_s / self.amp_step_s

    def _per_round(self, times: tuple) -> list[float]:
        n = len(times) // self.rounds
        return [statistics.median(times[i * n : (i + 1) * n]) for i in range(self.rounds)]

    @property
    def round_speedups(self) -> tuple:
        """Each round's speed-up: its median fp32 step over its median autocast step."""
        return tuple(a / b for a, b in zip(self._per_round(self.fp32_times_s), self._per_round(self.amp_times_s)))

    @property
    def batch_time_ratio(self) -> float:
        """The median fp32 step at twice the batch over the median fp32 step."""
        return statistics.median(self.fp32_2x_times_s) / self.fp32_step_s

    @property
    def model_rate_ratio(self) -> float:
        """The median over the rounds of the model's own matmuls' fp32 time over their autocast time (profiler)."""
        return statistics.median(self.model_rate_ratios)

    @property
    def rate_ratio(self) -> float | None:
        """The median over the rounds of a 256^3 matmul's fp32 time over its low-precision time (CPU; None on CUDA,
        where ``hardware`` says whether tensor cores serve the dtype)."""
        return statistics.median(self.rate_ratios) if self.rate_ratios else None

    @property
    def timings(self) -> timing.TimingComparison:
        """The timed fp32 and autocast steps side by side: min / quartiles / median / max, and a verdict."""
        return timing.TimingComparison.of(
            self.fp32_times_s,
            self.amp_times_s,
            labels=("fp32", f"{self.dtype} autocast"),
            what=f"one training step on {self.device}",
        )

    @property
    def amdahl_bound(self) -> float:
        """Amdahl's law: 1 / (1 - p), the speed-up if the matmuls (share p of the fp32 step) took no time."""
        return 1.0 / max(1.0 - self.matmul_share_fp32, 1e-12)

    @property
    def predicted_speedup(self) -> float:
        """Amdahl's law at the rate r the model's matmuls ran at under autocast: 1 / ((1 - p) + p / r)."""
        p, r = self.matmul_share_fp32, self.model_rate_ratio
        return 1.0 / ((1.0 - p) + p / r)

    @property
    def disturbance(self) -> str | None:
        """Why these runs cannot be trusted, or None: the steps spread too widely, the rounds' speed-ups disagree,
        or the speed-up exceeds Amdahl's bound by more than :data:`AMDAHL_SLACK`."""
        t = self.timings
        if t.too_noisy:
            b, c = t.baseline.quartile_ratio, t.candidate.quartile_ratio
            return (
                f"the typical steps spread too widely (upper over lower quartile: fp32 {b:.2f}x, "
                f"{self.dtype} autocast {c:.2f}x)"
            )
        rs = self.round_speedups
        if max(rs) / min(rs) > timing.NOISY_QUARTILE_RATIO:
            return f"the rounds disagree: their speed-ups run from {min(rs):.2g}x to {max(rs):.2g}x"
        if self.speedup > AMDAHL_SLACK * self.amdahl_bound:
            return (
                f"a speed-up of {self.speedup:.2g}x beats Amdahl's bound of {self.amdahl_bound:.2g}x for a step whose "
                f"matmuls take {self.matmul_share_fp32:.0%} of it: one setting was slowed for the whole run"
            )
        return None

    @property
    def outcome(self) -> str:
        """One of "no verdict" (:attr:`disturbance`), else "faster" or "slower" beyond the
        run-to-run spread, else "not faster"."""
        if self.disturbance is not None:
            return "no verdict"
        if self.timings.overlap:
            return "not faster"
        return "faster" if self.speedup > 1 else "slower"

    @property
    def findings(self) -> list:
        """``[(name, holds, evidence)]``: the measured facts that can keep AMP from being faster."""
        r, p = self.model_rate_ratio, self.matmul_share_fp32
        probe = "" if self.rate_ratio is None else f"; a 256^3 matmul: {self.rate_ratio:.2g}x"
        beats = self.speedup > self.amdahl_bound
        odd = ", ".join(self.odd_dims[:4]) + ("" if len(self.odd_dims) <= 4 else ", ...")
        if not self.odd_dims:
            dims = "all Linear/Conv dimensions are multiples of 8"
        elif self.device == "cuda":
            dims = odd
        else:
            dims = f"{odd}: tensor-core tiles are a GPU matter, not one of the CPU"
        return [
            (
                "low-precision matmuls not faster",
                r < 1.0,
                f"this model's matmuls ran at {r:.2g}x their fp32 speed under {self.dtype} autocast (profiler, "
                f"median of {self.rounds} rounds){probe}; {self.hardware}",
            ),
            (
                "matmuls are a small share",
                p < 0.5,
                f"matmuls/convolutions take {p:.0%} of the fp32 step: at most {self.amdahl_bound:.2g}x faster with "
                f"infinitely fast matmuls (Amdahl's law), {self.predicted_speedup:.2g}x predicted at the rate they "
                "ran at" + (f"; measured {self.speedup:.2g}x, beyond the bound" if beats else ""),
            ),
            (
                "overhead-bound",
                self.batch_time_ratio < self.launch_ratio,
                f"twice the batch takes {self.batch_time_ratio:.2f}x the time (under {self.launch_ratio:g}x: "
                "per-op overhead, not arithmetic)",
            ),
            ("casts", self.cast_share > 0.1, f"{self.casts} casts take {self.cast_share:.0%} of the autocast step"),
            ("dimensions not multiples of 8", bool(self.odd_dims) and self.device == "cuda", dims),
            (
                "the fp32 baseline already uses TF32",
                self.tf32_baseline,
                "TF32 (or bf16) math is on for fp32 matmuls" if self.tf32_baseline else "fp32 matmuls are IEEE fp32",
            ),
        ]

    @property
    def causes(self) -> list:
        """The names of the findings that hold, where AMP was not faster ("not faster" or "slower"); else none."""
        if self.outcome not in ("not faster", "slower"):
            return []
        return [name for name, holds, _ in self.findings if holds]

    @property
    def verdict(self) -> str:
        """The outcome in a sentence, and the causes where AMP was not faster."""
        s, n = self.speedup, len(self.fp32_times_s)
        ratio = f"{s:.2f}x the fp32 speed (medians of {n} steps each"
        outcome = self.outcome
        if outcome == "no verdict":
            return f"No verdict: {self.disturbance}. Run it again when the machine is idle."
        if outcome == "faster":
            return f"AMP is faster here: {ratio}, beyond the run-to-run spread)."
        head = (
            f"AMP is slower here: {ratio}, beyond the run-to-run spread)."
            if outcome == "slower"
            else f"AMP is not faster here: {ratio}, within the run-to-run spread)."
        )
        if not self.causes:
            return head + " None of the findings holds: profile the step (torch.profiler) to see where its time goes."
        return head + " Causes found: " + "; ".join(self.causes) + "."

    def _table(self) -> tuple:
        rows = [
            [Cell("yes", tone="warn", bold=True) if holds else Cell("no", tone="muted"), Cell(name, nowrap=True), ev]
            for name, holds, ev in self.findings
        ]
        t = self.timings
        unit, size = max(t.baseline, t.candidate, key=lambda x: x.median).unit()
        threads = "" if self.threads is None else f", {self.threads} thread{'s' if self.threads > 1 else ''}"
        head = (
            f"fp32 step {_spread_text(t.baseline, size, unit)}, {self.dtype} autocast step "
            f"{_spread_text(t.candidate, size, unit)} on {self.device}{threads}: {self.speedup:.2f}x (medians)"
        )
        return ("holds", "finding", "evidence"), rows, head, ["verdict: " + self.verdict]


def _spread_text(s: timing.Spread, size: float, unit: str) -> str:
    q1, mid, q3 = s.quartile_cells(size)
    return f"{mid} {unit} (quartiles {q1}–{q3}, {s.n} steps)"


@dataclass
class DtypeMap:
    """Dtypes under one precision setting, by parameter or module name, and ``bytes_per_parameter`` by component
    (weights, gradients, each optimizer state, autocast's weight copies)."""

    setting: str
    parameters: dict
    activations: dict
    gradients: dict
    optimizer_states: dict
    bytes_per_parameter: dict

    @property
    def total_bytes_per_parameter(self) -> float:
        return sum(self.bytes_per_parameter.values())


def _dtypes(d: dict) -> str:
    return ", ".join(sorted({str(x).removeprefix("torch.") for x in d.values()}))


def _states_by_dtype(states: dict) -> str:
    """Optimizer states grouped by dtype: "float32: exp_avg, exp_avg_sq, step"."""
    by: dict[str, list[str]] = {}
    for k, v in sorted(states.items()):
        by.setdefault(str(v).removeprefix("torch."), []).append(k)
    return "; ".join(f"{dtype}: {', '.join(names)}" for dtype, names in by.items())


@dataclass(frozen=True, repr=False)
class DtypeTable(TableRecord):
    """Several :class:`DtypeMap` side by side, one row per precision setting."""

    maps: tuple

    @classmethod
    def of(cls, maps) -> DtypeTable:
        maps = tuple(maps) if isinstance(maps, (list, tuple)) else maps
        if not isinstance(maps, tuple) or not maps or not all(isinstance(m, DtypeMap) for m in maps):
            raise TypeError(f"maps must be a non-empty list of debug.dtype_map results, got {maps!r}"[:300])
        return cls(maps)

    @property
    def bytes_per_parameter(self) -> dict:
        """setting -> total bytes per parameter."""
        return {m.setting: m.total_bytes_per_parameter for m in self.maps}

    def _table(self) -> tuple:
        header = (
            "setting",
            "parameters",
            "activations",
            "gradients",
            "optimizer states",
            "weights + grads (B/param)",
            "optimizer (B/param)",
            "autocast copies (B/param)",
            "total (B/param)",
        )
        rows = []
        for m in self.maps:
            b = m.bytes_per_parameter
            states = {k: v for st in m.optimizer_states.values() for k, v in st.items()}
            opt = sum(v for k, v in b.items() if k.startswith("optimizer "))
            rows.append(
                [
                    Cell(m.setting, nowrap=True),
                    _dtypes(m.parameters),
                    _dtypes(m.activations),
                    _dtypes(m.gradients),
                    _states_by_dtype(states),
                    f"{b.get('weights', 0) + b.get('gradients', 0):.3g}",
                    f"{opt:.3g}",
                    f"{b.get('low-precision weight copies', 0):.3g}",
                    f"{m.total_bytes_per_parameter:.3g}",
                ]
            )
        notes = [
            "B/param: bytes per parameter; autocast copies: the low-precision weight copies autocast makes; autograd saves them for the "
            "backward pass, so they live until backward frees the graph"
        ]
        return header, rows, "dtypes and bytes per parameter in one training step", notes
