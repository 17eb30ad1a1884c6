"""Lesson 08's records: the results the debugging tools return, frozen or shown as tables. The statistics of one
tensor (:class:`TensorStats`), the tracer's :class:`ModuleRecord` and :class:`OverflowTrace` with their table
(:class:`TraceTable`), the triage of "why is AMP not faster" (:class:`Triage`) and the dtype map of one training step
(:class:`DtypeMap`, several side by side in a :class:`DtypeTable`). :mod:`.experiments` makes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .. import timing
from .._table import Cell, TableRecord
from .._validate import flag
from ..formats import get_format

__all__ = [
    "DtypeMap",
    "DtypeTable",
    "ModuleRecord",
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


@dataclass(repr=False)
class Triage(TableRecord):
    """What :func:`why_not_faster` measured and concluded. ``findings`` is a list of ``(name, holds,
    evidence)``; ``verdict`` a few sentences built from the findings that hold. ``fp32_step_s`` and
    ``amp_step_s`` are the fastest timed steps; ``fp32_times_s`` and ``amp_times_s`` all of them
    (``timings`` compares the two with their spread)."""

    device: str
    dtype: str
    fp32_step_s: float
    amp_step_s: float
    matmul_share_fp32: float  # share of the fp32 step's op time in matmuls/convolutions (profiler)
    matmul_share_amp: float
    casts: int  # aten::_to_copy calls in one autocast step
    cast_share: float  # their share of the autocast step's op time
    batch_time_ratio: float  # fp32 step time at 2x batch / at 1x batch
    rate_ratio: float | None  # low-precision / fp32 matmul rate on this device (256^3), measured
    model_rate_ratio: float  # the model's own matmuls: their fp32 time / their autocast time (profiler)
    hardware: str
    odd_dims: list
    tf32_baseline: bool
    findings: list = field(default_factory=list)
    fp32_times_s: tuple = ()
    amp_times_s: tuple = ()

    @property
    def speedup(self) -> float:
        """fp32 step time / autocast step time, of the fastest steps."""
        return self.fp32_step_s / self.amp_step_s

    @property
    def timings(self) -> timing.TimingComparison:
        """The timed fp32 and autocast steps side by side: min / median / max, and whether they overlap."""
        return timing.TimingComparison.of(
            self.fp32_times_s or (self.fp32_step_s,),
            self.amp_times_s or (self.amp_step_s,),
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
    def verdict(self) -> str:
        held = [f for f in self.findings if f[1]]
        if self.timings.too_noisy:
            head = (
                f"AMP is {self.speedup:.2f}x the fp32 speed here (fastest steps), but the step times varied too much "
                "to judge (a machine busy with other work): run it again when the machine is idle."
            )
        elif self.within_spread:
            head = (
                f"AMP is {self.speedup:.2f}x the fp32 speed here (fastest steps), within the run-to-run spread: "
                "no difference shown."
            )
        elif self.speedup >= 1.1 and not held:
            return f"AMP is faster here: {self.speedup:.2f}x."
        else:
            head = f"AMP is {self.speedup:.2f}x the fp32 speed here" + (
                " (slower)." if self.speedup < 0.95 else "." if self.speedup < 1.1 else " (faster)."
            )
        return " ".join([head] + [f"{name}: {evidence}." for name, _, evidence in held])

    def _table(self) -> tuple:
        rows = [
            [Cell("yes", tone="warn", bold=True) if holds else Cell("no", tone="muted"), name, evidence]
            for name, holds, evidence in self.findings
        ]
        t = self.timings
        unit, size = max(t.baseline, t.candidate, key=lambda x: x.median).unit()
        head = (
            f"fp32 step {_spread_text(t.baseline, size, unit)}, {self.dtype} autocast step "
            f"{_spread_text(t.candidate, size, unit)} on {self.device}: {self.speedup:.2f}x (fastest steps)"
        )
        notes = [t.verdict, "verdict: " + self.verdict]
        return ("holds", "finding", "evidence"), rows, head, notes


def _spread_text(s: timing.Spread, size: float, unit: str) -> str:
    lo, mid, hi = s.cells(size)
    return f"{mid} {unit} (min {lo}, max {hi}, {s.n} runs)"


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
            "weights + gradients (bytes/param)",
            "optimizer (bytes/param)",
            "autocast copies (bytes/param)",
            "total (bytes/param)",
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
                    ", ".join(f"{k} {str(v).removeprefix('torch.')}" for k, v in sorted(states.items())),
                    f"{b.get('weights', 0) + b.get('gradients', 0):.3g}",
                    f"{opt:.3g}",
                    f"{b.get('low-precision weight copies', 0):.3g}",
                    f"{m.total_bytes_per_parameter:.3g}",
                ]
            )
        notes = [
            "autocast copies: the low-precision weight copies autocast makes; autograd saves them for the "
            "backward pass, so they live until backward frees the graph"
        ]
        return header, rows, "dtypes and bytes per parameter in one training step", notes
