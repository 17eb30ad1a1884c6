"""Lesson 08's records: the results the debugging tools return, frozen or shown as tables. The statistics of one
tensor (:class:`TensorStats`), the tracer's :class:`ModuleRecord` and :class:`OverflowTrace` with their table
(:class:`TraceTable`), the triage of "why is AMP not faster" (:class:`Triage`) and the dtype map of one training step
(:class:`DtypeMap`, several side by side in a :class:`DtypeTable`). :mod:`.experiments` makes them.
"""

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
    "OUTCOMES",
    "OverflowTrace",
    "TensorStats",
    "TraceTable",
    "Triage",
]


# --- statistics of one tensor -----------------------------------------------------------------------


@dataclass(frozen=True)
class TensorStats:
    """Magnitudes of a tensor (or of all floating tensors of a module's output) and where they would land
    in each format: ``fractions[fmt]`` is the share of the finite values in each class of
    :data:`amp_lessons.formats.CLASSES` (:meth:`~amp_lessons.formats.FloatFormat.census` of them, made
    float32 first; a non-zero float64 value that float32 rounds to zero is "flushed"). An overflow lands in
    the format's :meth:`~amp_lessons.formats.FloatFormat.overflow_class` ("inf" in fp16 and bf16; see
    :meth:`overflow`), a value that rounds to zero in "flushed". Values that are already inf or NaN are
    counted in ``nonfinite``, not in the fractions."""

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


# --- the overflow/underflow tracer ------------------------------------------------------------------


@dataclass
class ModuleRecord:
    """One call of one module: its name (``"block1.wo"``; ``"(model)"`` for the model itself), type,
    which call of it this is (1 unless a module runs several times), the statistics of its input (first
    positional tensor arguments) and output, and, after backward, of the gradient of its output."""

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
    """What :func:`trace_overflow` saw: ``records`` in forward order, ``grad_order`` the labels of the
    records in the order their gradients arrived (backward order), ``loss`` (float or None), the
    ``setting`` traced and the ``formats`` whose fractions were computed."""

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
        """The first module (forward order for ``"output"``, backward order for ``"grad"``) whose output
        or output gradient holds an inf or a NaN; None if there is none."""
        if kind == "output":
            return next((r for r in self.records if r.output is not None and r.output.has_nonfinite), None)
        if kind == "grad":
            by_label = {r.label: r for r in self.records}
            for label in self.grad_order:
                r = by_label[label]
                if r.grad is not None and r.grad.has_nonfinite:
                    return r
            return None
        raise ValueError(f"kind={kind!r} is not allowed: use 'output' or 'grad'")

    def first_overflow(self, fmt="fp16", kind: str = "output") -> ModuleRecord | None:
        """The first module whose finite output (or gradient) has values beyond ``fmt``'s range: where a
        run in ``fmt`` would get its first inf, found from a run in a wider format."""
        name = get_format(fmt).name
        if name not in self.formats:
            raise ValueError(f"fmt={fmt!r} was not traced: this trace has {self.formats}")
        if kind not in ("output", "grad"):
            raise ValueError(f"kind={kind!r} is not allowed: use 'output' or 'grad'")
        order = self.records if kind == "output" else [self.record(label) for label in self.grad_order]
        for r in order:
            s = getattr(r, kind)
            if s is not None and s.overflow(name) > 0:
                return r
        return None

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
                continue  # traced in this format already: its overflows are the inf/NaN lines above
            o = self.first_overflow(fmt)
            lines.append(f"first output that would overflow {fmt}: {'none' if o is None else o.label}")
        return "\n".join(lines)

    def table(self, leaves_only: bool = True) -> str:
        fmts = self.formats
        head = f"{'module':<22} {'dtype':<9} {'abs max':>9} {'min |x|>0':>9} {'inf/NaN':>7}" + "".join(
            f" {fmt + ' ovf':>9} {fmt + ' 0':>8}" for fmt in fmts
        )
        lines = [head]
        for row in self.rows(leaves_only):
            cells = (
                f"{row['module']:<22.22} {row['dtype']:<9.9} {row['absmax']:>9.3g} {row['absmin_nonzero']:>9.3g} "
                f"{row['nonfinite']:>7}"
            )
            for fmt in fmts:
                cells += f" {_pct(row[f'{fmt} overflow']):>9} {_pct(row[f'{fmt} flushed']):>8}"
            lines.append(cells)
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary() + "\n\n" + self.table()


@dataclass(frozen=True, repr=False)
class TraceTable(TableRecord):
    """An :class:`OverflowTrace` module by module (``OverflowTrace.rows``): output dtype, abs max, smallest
    nonzero |x|, inf/NaN count, and for each traced format the share of the output that would overflow or
    flush to zero. ``rows`` keeps the row dicts; ``setting`` the trace's setting."""

    rows: tuple
    formats: tuple
    setting: str

    @classmethod
    def of(cls, trace, *, leaves_only: bool = True) -> TraceTable:
        if not isinstance(trace, OverflowTrace):
            raise TypeError(f"trace must be the OverflowTrace of debug.trace_overflow, got {trace!r}"[:300])
        if not isinstance(leaves_only, bool):
            raise TypeError(f"leaves_only must be True or False, got {leaves_only!r}")
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


# --- "why is AMP not faster here?" -------------------------------------------------------------------

#: How far a measured speed-up may exceed Amdahl's bound before the triage calls the runs contradictory: the bound
#: counts only the matmuls getting faster; ops on halved activations can add a little, not a quarter.
AMDAHL_SLACK = 1.25

#: The outcomes of :attr:`Triage.outcome`.
OUTCOMES = ("no verdict", "faster", "not faster", "slower")


@dataclass(frozen=True, repr=False)
class Triage(TableRecord):
    """What :func:`why_not_faster` measured, and what it concludes from it.

    Measured: the seconds of every timed step (``fp32_times_s``, ``amp_times_s``, ``fp32_2x_times_s`` at twice the
    batch: ``rounds`` rounds of equally many steps each, in that order), the profiler's medians over the rounds
    (``matmul_share_fp32`` and ``matmul_share_amp``: the share of the step's op time in matmuls/convolutions;
    ``casts``: ``aten::_to_copy`` calls per autocast step; ``cast_share``: their share of it), per round the model's
    own matmuls' fp32 time over their autocast time (``model_rate_ratios``) and, on the CPU, a 256^3 matmul's fp32
    time over its low-precision time (``rate_ratios``); the device probe (``hardware``, ``fast_hardware``),
    the Linear/Conv dimensions that are not multiples of 8, whether the fp32 baseline used TF32, the thread count
    the steps ran with (None: the caller's), and ``launch_ratio``, the overhead-bound threshold.

    Concluded, all from medians: ``speedup``, :attr:`outcome` (it reads the data: "no verdict" when the runs
    contradict each other, see :attr:`disturbance`), :attr:`findings` and :attr:`causes`, the findings that hold,
    named only when AMP was not faster; :attr:`verdict` says it in a sentence or two."""

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

    def __post_init__(self):
        k = self.rounds
        if not (isinstance(k, int) and k >= 1):
            raise ValueError(f"rounds must be an int >= 1, got {k!r}")
        for what in ("fp32_times_s", "amp_times_s", "fp32_2x_times_s"):
            times = getattr(self, what)
            if not isinstance(times, tuple) or not times or len(times) % k:
                raise ValueError(f"{what} must be a non-empty tuple of seconds, {k} rounds of equal length: {times!r}")
            timing.Spread.of(times)  # positive, finite
        if len(self.model_rate_ratios) != k or not all(r > 0 for r in self.model_rate_ratios):
            raise ValueError(
                f"model_rate_ratios must hold one positive ratio per round, got {self.model_rate_ratios!r}"
            )

    # --- what the runs say ---

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
    def within_spread(self) -> bool:
        """Whether the fp32 and autocast step times' interquartile ranges overlap: then the runs do not show either
        one faster."""
        return self.timings.overlap

    @property
    def amdahl_bound(self) -> float:
        """Amdahl's law: the speed-up if only the matmuls/convolutions (share p of the fp32 step) got
        faster, and infinitely so: 1 / (1 - p). An upper bound for what faster matmuls can give; ops
        on halved activations moving half the bytes can add a little on a memory-bound GPU."""
        return 1.0 / max(1.0 - self.matmul_share_fp32, 1e-12)

    @property
    def predicted_speedup(self) -> float:
        """Amdahl's law with the rate the model's own matmuls ran at under autocast (``model_rate_ratio``,
        profiler): 1 / ((1 - p) + p / r). It leaves out the casts, so it predicts, it does not bound."""
        p, r = self.matmul_share_fp32, self.model_rate_ratio
        return 1.0 / ((1.0 - p) + p / r)

    @property
    def disturbance(self) -> str | None:
        """Why these runs cannot be trusted, or None: the typical steps spread too widely
        (:attr:`amp_lessons.timing.TimingComparison.too_noisy`), the rounds' speed-ups differ by more than
        :data:`amp_lessons.timing.NOISY_QUARTILE_RATIO` (a burst of other work slowed one round), or the speed-up
        exceeds Amdahl's bound by more than :data:`AMDAHL_SLACK` (one setting was slowed for the whole run)."""
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
        """One of :data:`OUTCOMES`: "no verdict" (:attr:`disturbance`), else "faster" or "slower" beyond the
        run-to-run spread (the two interquartile ranges do not overlap), else "not faster"."""
        if self.disturbance is not None:
            return "no verdict"
        if self.within_spread:
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
        """The outcome in a sentence, and the causes where AMP was not faster (their evidence is the table's)."""
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


# --- dtype map ----------------------------------------------------------------------------------------


@dataclass
class DtypeMap:
    """Dtypes under one precision setting. ``parameters``, ``gradients``: name -> dtype;
    ``activations``: module name -> output dtype; ``optimizer_states``: parameter name -> {state: dtype};
    ``bytes_per_parameter``: component -> bytes per model parameter (weights, gradients, each optimizer
    state, and the low-precision weight copies autocast makes, measured from its casts)."""

    setting: str
    parameters: dict
    activations: dict
    gradients: dict
    optimizer_states: dict
    bytes_per_parameter: dict

    @property
    def total_bytes_per_parameter(self) -> float:
        return sum(self.bytes_per_parameter.values())

    def _repr_html_(self) -> str:
        return DtypeTable.of([self])._repr_html_()

    def __repr__(self) -> str:
        def short(d):
            return ", ".join(f"{v}" for v in sorted({str(x).removeprefix("torch.") for x in d.values()}))

        states = {f"{k}": v for s in self.optimizer_states.values() for k, v in s.items()}
        lines = [
            f"{self.setting}:",
            f"  parameters   {short(self.parameters)}",
            f"  activations  {short(self.activations)}",
            f"  gradients    {short(self.gradients)}",
            "  optimizer    " + ", ".join(f"{k} {str(v).removeprefix('torch.')}" for k, v in sorted(states.items())),
            "  bytes/param  "
            + ", ".join(f"{k} {v:.3g}" for k, v in self.bytes_per_parameter.items())
            + f"  (total {self.total_bytes_per_parameter:.3g})",
        ]
        return "\n".join(lines)


def _dtypes(d: dict) -> str:
    return ", ".join(sorted({str(x).removeprefix("torch.") for x in d.values()}))


def _states_by_dtype(states: dict) -> str:
    """Optimizer states grouped by dtype, short enough for a table cell: "float32: exp_avg, exp_avg_sq, step"."""
    by: dict[str, list[str]] = {}
    for k, v in sorted(states.items()):
        by.setdefault(str(v).removeprefix("torch."), []).append(k)
    return "; ".join(f"{dtype}: {', '.join(names)}" for dtype, names in by.items())


@dataclass(frozen=True, repr=False)
class DtypeTable(TableRecord):
    """Several :class:`DtypeMap` side by side, one row per precision setting: the dtypes of parameters,
    activations, gradients and optimizer states, and the bytes per parameter (``maps`` keeps the maps)."""

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
