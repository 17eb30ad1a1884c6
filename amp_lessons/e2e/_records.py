"""Lesson 06's results as frozen records (:class:`StepTimes`, :class:`LaunchBoundDemo`, :class:`TrainingPlan`,
:class:`TrainRun`, :class:`OverflowDemo`) and the tables that show them with their spread; the tables that need no
record are in :mod:`._tables`."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import timing
from .._table import Cell, TableRecord, html_table, text_table
from ..device import DeviceReport, device_report
from ._tables import (
    NOISY_RANGE,
    InferenceTable,
    RateTable,
    SpecRatioTable,
    ThroughputTable,
    need,
    spread_text,
    verdict,
)

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


TENSOR_CORE_GENERATIONS: tuple[tuple[int, str, str, int, str], ...] = (
    (1, "Volta", "V100, Titan V", 2017, "fp16"),
    (2, "Turing", "T4, RTX 2080", 2018, "int8, int4"),
    (3, "Ampere", "A100, A10, RTX 3090", 2020, "TF32, bf16, 2:4 sparsity"),
    (4, "Hopper (and Ada Lovelace)", "H100, H200; Ada: L4, L40S, RTX 4090", 2022, "fp8"),
    (5, "Blackwell", "B200, GB200, RTX 5090", 2024, "fp4, fp6"),
)
"""(generation, architecture, example GPUs, year, formats added); Ada Lovelace is counted with Hopper (fp8)."""

_TABLE_HEADER = ("gen", "architecture", "example GPUs", "year", "formats added")
_TABLE_TITLE = "NVIDIA tensor-core generations (each adds formats to those before it)"


@dataclass(frozen=True, repr=False)
class TensorCoreTable:
    """:data:`TENSOR_CORE_GENERATIONS` with this machine's generation ``marked`` (or None) and a line on what it has."""

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


@dataclass(frozen=True)
class StepTimes:
    """One model's training steps in :func:`launch_bound_demo`: ``flops_per_step``, the fp32 and bf16 autocast medians
    and every timed step, ``speedup`` (fp32 median / bf16 median), ``cut_short`` (a sentence where the budget cut the
    timing short), and the fp32 steps timed at ``growth`` times the ``batch``."""

    model: str
    flops_per_step: float
    fp32_step_s: float
    bf16_autocast_step_s: float
    speedup: float
    fp32_times_s: tuple[float, ...]
    bf16_autocast_times_s: tuple[float, ...]
    cut_short: str | None = None
    batch: int | None = None
    growth: int | None = None
    fp32_grown_times_s: tuple[float, ...] = ()

    @property
    def time_growth(self) -> float | None:
        """How many times longer the fastest fp32 step took at ``growth`` times the batch (None: not timed)."""
        if not self.fp32_grown_times_s or not self.growth:
            return None
        return min(self.fp32_grown_times_s) / min(self.fp32_times_s)

    @property
    def arithmetic_share(self) -> float | None:
        """The share of the fp32 step that grows with the batch, ``(time_growth - 1) / (growth - 1)`` clipped to [0, 1]
        (a step time of ``overhead + per_sample * batch``); the rest is per-op overhead."""
        g = self.time_growth
        return None if g is None else min(1.0, max(0.0, (g - 1) / (self.growth - 1)))

    @property
    def most_from_faster_arithmetic(self) -> float | None:
        """The largest speed-up any faster arithmetic could give the fp32 step (Amdahl's law): ``1 / (1 - arithmetic_share)``."""
        share = self.arithmetic_share
        return None if share is None else (math.inf if share >= 1 else 1 / (1 - share))


@dataclass(frozen=True, repr=False)
class LaunchBoundDemo(TableRecord):
    """What :func:`launch_bound_demo` timed: the :class:`StepTimes` of the ``tiny`` and ``large`` model, ``width_chosen``
    (a sentence) and ``bf16_over_fp32`` (the measured matmul rates). Shown as its :class:`LaunchTable`."""

    tiny: StepTimes
    large: StepTimes
    width_chosen: str
    bf16_over_fp32: float | None = None

    def reading(self) -> list[str]:
        """What the timings say, one sentence per model and one on bf16."""
        out = []
        for name, r in self.runs.items():
            share, most = r.arithmetic_share, r.most_from_faster_arithmetic
            if share is None:
                continue
            head = (
                f"{name}: {r.growth}x the batch made the fastest fp32 step {r.time_growth:.2g}x longer, so about "
                f"{100 * share:.0f}% of its time grows with the work"
            )
            if math.isinf(most):
                out.append(head + ": the step is its arithmetic, which faster matmuls speed up")
            else:
                out.append(
                    head + f"; the rest is per-op overhead, and even free arithmetic would make the step at most "
                    f"{most:.3g}x faster"
                )
        ratio = self.bf16_over_fp32
        if ratio is not None and ratio < 1:
            out.append(
                f"bf16 autocast: bf16 matmuls run at {ratio:.2g}x the fp32 rate on this machine (measured), so its "
                "bf16 columns time that slow path, not AMP; with bf16 tensor cores or instructions, only the part of "
                "a step that grows with the work can gain"
            )
        elif ratio is not None:
            out.append(
                f"bf16 autocast: bf16 matmuls run at {ratio:.2g}x the fp32 rate on this machine (measured); a step "
                "gains at most what its arithmetic share allows"
            )
        return out

    @property
    def runs(self) -> dict[str, StepTimes]:
        return {"tiny": self.tiny, "large": self.large}

    def _table(self):
        return LaunchTable.of(self)._table()

    def _marked(self):
        return LaunchTable.of(self)._marked()


@dataclass(frozen=True, repr=False)
class TrainingPlan(TableRecord):
    """What :func:`training_plan` chose: ``model`` (:class:`TinyTransformer` arguments), ``batch``, ``steps``, the
    ``configs`` that run here, ``predicted_s`` per config (CPU only), ``scaled_down`` and a ``note``. Shown as a table."""

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
    """One run of :func:`train`: ``config`` and ``ran``; a run that did not run has only its ``reason``. A run that ran has
    ``loss`` (per step), ``final_loss``, ``step_time_s`` (median) and ``step_times_s`` (each timed block's time per
    step), ``peak_memory_bytes`` of the last step (above what existed before it), ``device``, ``steps`` run and
    ``planned_steps``, ``stopped_early`` (None, or why), ``model`` (its arguments and the batch) and ``sync_every``.
    Shown as its :class:`TrainingTable`."""

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
    sync_every: int = 1

    def _table(self):
        return TrainingTable.of([self])._table()


@dataclass(frozen=True, repr=False)
class OverflowDemo(TableRecord):
    """What :func:`overflow_demo`'s layer did in each dtype: ``max_activation``, ``fp16_max``, ``outputs`` per dtype,
    whether the fp16 and bf16 outputs are finite, and the bf16 outputs' largest difference from fp32's. Shown as a table."""

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


@dataclass(frozen=True, repr=False)
class LaunchTable(TableRecord):
    """``e2e.launch_bound_demo``'s two models: ``comparisons[name]`` the :class:`timing.TimingComparison` of the fp32
    and bf16-autocast steps, ``models[name]`` the model's description, ``note`` the large one's width."""

    comparisons: dict
    models: dict
    note: str
    cut_short: tuple = ()
    growth: dict = field(default_factory=dict)
    reading: tuple = ()

    @property
    def verdicts(self) -> dict:
        """``{model: "faster" | "slower" | "within the run-to-run spread" | "too noisy to conclude"}``: bf16 autocast's
        step against fp32's, from the quartiles."""
        return {name: verdict(c.baseline, c.candidate) for name, c in self.comparisons.items()}

    @classmethod
    def of(cls, launch) -> LaunchTable:
        if not isinstance(launch, LaunchBoundDemo):
            need(launch, "launch", "the LaunchBoundDemo returned by e2e.launch_bound_demo")
        comparisons = {
            name: timing.TimingComparison.of(
                r.fp32_times_s, r.bf16_autocast_times_s, labels=("fp32", "bf16 autocast"), what="training step"
            )
            for name, r in launch.runs.items()
        }
        models = {name: r.model for name, r in launch.runs.items()}
        cut = tuple(f"{name}: {r.cut_short}" for name, r in launch.runs.items() if r.cut_short)
        growth = {name: r for name, r in launch.runs.items() if r.arithmetic_share is not None}
        return cls(comparisons, models, launch.width_chosen, cut, growth, tuple(launch.reading()))

    def _table(self) -> tuple:
        unit, size = max(
            (s for c in self.comparisons.values() for s in (c.baseline, c.candidate)), key=lambda s: s.median
        ).unit()
        grown = f"fp32 at {next(iter(self.growth.values())).growth}x the batch ({unit})" if self.growth else None
        header = (
            "model",
            f"fp32 step ({unit})",
            *((grown, "share growing with the batch") if grown else ()),
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
                    spread_text(c.baseline, size),
                    *(self._grown_cells(name, size) if grown else ()),
                    spread_text(c.candidate, size),
                    f"{c.speedup:.2f}x",
                    f"{lo:.2f}x to {hi:.2f}x",
                    verdict,
                ]
            )
        notes = [
            "step times: median (lower to upper quartile) of the timed steps",
            f"large model: {self.note}" if self.note else "",
        ]
        if grown:
            notes.append(
                "share growing with the batch: from the fastest fp32 steps at the two batches, (time ratio - 1) / "
                "(batch ratio - 1); the rest of the step is per-op overhead"
            )
        notes += list(self.reading) + list(self.cut_short)
        if "too noisy to conclude" in self.verdicts.values():
            notes.append(
                f"too noisy to conclude: the quartiles allow speed-ups more than {NOISY_RANGE:g}x apart (a machine "
                "busy with other work); run the cell again when it is idle"
            )
        return header, rows, "one training step, fp32 against bf16 autocast", notes

    def _grown_cells(self, name: str, size: float) -> list:
        r = self.growth.get(name)
        if r is None:
            return ["", ""]
        return [spread_text(timing.Spread.of(r.fp32_grown_times_s), size), f"{100 * r.arithmetic_share:.0f}%"]


@dataclass(frozen=True, repr=False)
class TrainingTable(TableRecord):
    """``e2e.train``'s runs: ``ran`` rows of (config, step-time spread, peak memory bytes, final loss); ``not_run`` of
    (config, reason)."""

    ran: tuple
    not_run: tuple
    stopped: tuple = ()
    sync_every: tuple = ()
    steps: tuple = ()

    @classmethod
    def of(cls, runs) -> TrainingTable:
        if not isinstance(runs, (list, tuple)) or not runs or not all(isinstance(r, TrainRun) for r in runs):
            need(runs, "runs", "a list of the TrainRuns of e2e.train")
        ran, not_run, stopped, sync, steps = [], [], [], [], []
        for r in runs:
            if r.ran:
                ran.append((r.config, timing.Spread.of(r.step_times_s), r.peak_memory_bytes, r.final_loss))
                sync.append((r.config, r.sync_every))
                steps.append((r.config, r.steps))
                if r.stopped_early:
                    stopped.append((r.config, r.stopped_early))
            else:
                not_run.append((r.config, r.reason))
        return cls(tuple(ran), tuple(not_run), tuple(stopped), tuple(sync), tuple(steps))

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
                words = verdict(fp32, s)
                if words == "too noisy to conclude":
                    notes.append(f"{c}: step times too noisy to compare with fp32's (a machine busy with other work)")
                elif words == "within the run-to-run spread":
                    notes.append(f"{c}: step times within the run-to-run spread of fp32's")
        notes += [f"{c}: {why}" for c, why in self.stopped]
        if len({n for _, n in self.steps}) > 1:
            notes.append(
                "final loss after different numbers of steps ("
                + ", ".join(f"{c} {n}" for c, n in self.steps)
                + "): compare the losses after the same step, not these"
            )
        if self.sync_every:

            def how(k: int) -> str:
                if k == 1:
                    return "each step timed alone, its loss read inside the timer"
                return f"each block of up to {k} steps timed between two host syncs, divided by its steps"

            kinds = dict.fromkeys(k for _, k in self.sync_every)
            if len(kinds) == 1:
                notes.append(f"step times: {how(next(iter(kinds)))}")
            else:
                notes.append("step times: " + "; ".join(f"{c}: {how(k)}" for c, k in self.sync_every))
        notes += [f"{c} not run: {why.removeprefix('not run: ')}" for c, why in self.not_run]
        return header, rows, "training runs", notes
