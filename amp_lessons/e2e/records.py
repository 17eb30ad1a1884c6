"""Lesson 06's results as frozen records: what its experiments (:mod:`.experiments`) return, the
:class:`StepTimes`, :class:`LaunchBoundDemo`, :class:`TrainingPlan`, :class:`TrainRun` and :class:`OverflowDemo`, and the
tables that show them with their spread (:class:`TensorCoreTable`, :class:`SpecRatioTable`, :class:`RateTable`,
:class:`ThroughputTable`, :class:`LaunchTable`, :class:`TrainingTable`, :class:`InferenceTable`): each keeps the
figures as fields for asserts and shows itself as an HTML table in JupyterLab and as aligned text in a terminal."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import timing
from .._table import Cell, TableRecord, html_table, text_table
from .._validate import count
from ..device import DeviceReport, device_report
from ._common import MAX_SIZE, RATE_PROBE_SIZE, matmul_rate_runs

__all__ = [
    "InferenceTable",
    "LaunchBoundDemo",
    "LaunchTable",
    "NOISY_RANGE",
    "OverflowDemo",
    "RateTable",
    "SpecRatioTable",
    "StepTimes",
    "TENSOR_CORE_GENERATIONS",
    "TensorCoreTable",
    "ThroughputTable",
    "TrainRun",
    "TrainingPlan",
    "TrainingTable",
    "tensor_core_table",
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
# Launch-bound: tiny work per op gains nothing (launch_bound_demo)
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


# --------------------------------------------------------------------------------------------
# Training (training_plan, train)
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# An overflowing layer (overflow_demo)
# --------------------------------------------------------------------------------------------


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
        multiple = count(multiple, "multiple", 2, MAX_SIZE)
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
