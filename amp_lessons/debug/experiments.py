"""Lesson 08's toolkit: three tools that work on any ``nn.Module`` a learner brings, on CPU or CUDA.

- :func:`trace_overflow`: one forward (and backward) pass with hooks on every module; per module the
  output dtype, its largest and smallest non-zero magnitude, the fraction of values that would
  overflow, flush to zero or go subnormal in fp16 and bf16 (the formats engine's thresholds), and the
  FIRST module whose output, or whose gradient, holds an inf or a NaN. Hooks are removed afterwards,
  also when the model raises.
- :func:`why_not_faster`: "AMP is not faster here": fp32 and autocast step times measured with
  :func:`amp_lessons.timing.time_fn`, explained by measured facts (the profiler's share of matmul and
  convolution time, the casts autocast inserts, time against batch size, the low-precision matmul rate
  of this device, matmul dimensions, TF32 in the fp32 baseline) and a verdict that cites them.
- :func:`dtype_map`: the dtype of every parameter, activation, gradient and optimizer state under a
  precision setting, and the bytes each parameter costs.

Plus the small models the lesson breaks on purpose (:func:`t5_like_model`, :func:`broken_training_setup`)
and :class:`KeepFP32` (lesson 08's own cell, :mod:`.key_code`), the fix that runs one module in fp32 inside an
autocast region.
"""

from __future__ import annotations

import copy
import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .. import _validate, timing
from .._runtime import quiet_fd2
from .._table import Cell, TableRecord
from .._validate import (
    count,
    flag,
    int_at_least,
    model_call,
    positive,
)
from ..autocast.experiments import DEVICE_TYPES
from ..device import cpu_info, gpu_info
from ..e2e.experiments import matmul_rates
from ..formats import CLASSES, get_format
from .key_code import KeepFP32

__all__ = [
    "KeepFP32",
    "ModuleRecord",
    "OverflowTrace",
    "PRECISION_SETTINGS",
    "DtypeMap",
    "DtypeTable",
    "TensorStats",
    "TraceTable",
    "Triage",
    "broken_training_setup",
    "dtype_map",
    "t5_like_batch",
    "t5_like_model",
    "tensor_stats",
    "trace_overflow",
    "why_not_faster",
]

_AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "float16": torch.float16, "bfloat16": torch.bfloat16}


# --- argument checks --------------------------------------------------------------------------------


def _check_model(model) -> nn.Module:
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__} {model!r:.60}")
    return model


def _check_inputs(inputs) -> tuple:
    """The positional arguments of the model: a tensor, or a tuple/list holding at least one tensor."""
    if isinstance(inputs, torch.Tensor):
        return (inputs,)
    if isinstance(inputs, (tuple, list)) and any(isinstance(t, torch.Tensor) for t in inputs):
        return tuple(inputs)
    raise TypeError(
        f"inputs must be a tensor or a tuple/list of the model's positional arguments holding at least one "
        f"tensor, got {type(inputs).__name__}"
    )


def _check_autocast(dtype) -> torch.dtype | None:
    """None (no autocast), torch.float16/torch.bfloat16, or 'fp16'/'bf16'."""
    if dtype is None:
        return None
    if isinstance(dtype, str) and dtype in _AUTOCAST_DTYPES:
        return _AUTOCAST_DTYPES[dtype]
    if dtype in (torch.float16, torch.bfloat16):
        return dtype
    raise ValueError(f"autocast={dtype!r} is not allowed: use None, torch.float16, torch.bfloat16, 'fp16' or 'bf16'")


def _device_type(model: nn.Module, inputs: tuple, device_type) -> str:
    if device_type is not None:
        if device_type not in DEVICE_TYPES:
            raise ValueError(f"device_type={device_type!r} is not allowed: use one of {DEVICE_TYPES}")
        return device_type
    for t in (*model.parameters(), *(i for i in inputs if isinstance(i, torch.Tensor))):
        if t.device.type not in DEVICE_TYPES:
            raise ValueError(f"tensors on {t.device.type!r} are not supported: use one of {DEVICE_TYPES}")
        return t.device.type
    return "cpu"


def _check_loss_fn(loss_fn, required: bool):
    if loss_fn is None and not required:
        return None
    if not callable(loss_fn):
        raise TypeError(
            f"loss_fn must be a callable taking the model's output and returning a scalar loss, got {loss_fn!r}"
        )
    return loss_fn


def _floats(tree) -> list[torch.Tensor]:
    return [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor) and t.is_floating_point()]


class _SavedGrads:
    """Set every parameter's .grad aside while a tool runs its own backward, and put it back after."""

    def __init__(self, model: nn.Module):
        self.params = list(model.parameters())

    def __enter__(self):
        self.saved = [p.grad for p in self.params]
        for p in self.params:
            p.grad = None
        return self

    def __exit__(self, *exc):
        for p, g in zip(self.params, self.saved):
            p.grad = g
        return False


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


def tensor_stats(tensors, formats) -> TensorStats | None:
    ts = _floats(tensors)
    if not ts:
        return None
    flat = torch.cat([t.detach().reshape(-1).to(torch.float64) for t in ts])
    finite = torch.isfinite(flat)
    a = flat[finite].abs()
    nz = a[a > 0]
    fractions = {}
    values = flat[finite]
    x = values.float()  # the engine works in float32 (exact for every dtype of at most 32 bits)
    float32_flushed = (x == 0) & (values != 0)
    if not isinstance(formats, (str, list, tuple)):
        raise TypeError(f"formats must be a format name or a list/tuple of them, got {formats!r}")
    for fmt in [formats] if isinstance(formats, str) else formats:
        f = get_format(fmt)
        codes = f.classify(x)
        codes[float32_flushed] = CLASSES.index("flushed")
        counts = torch.bincount(codes, minlength=len(CLASSES)).tolist()
        fractions[f.name] = {c: n / max(int(x.numel()), 1) for c, n in zip(CLASSES, counts)}
    dtypes = sorted({str(t.dtype).removeprefix("torch.") for t in ts})
    return TensorStats(
        dtype="/".join(dtypes),
        shape=tuple(ts[0].shape),
        numel=int(flat.numel()),
        absmax=float(a.max()) if a.numel() else 0.0,
        absmin_nonzero=float(nz.min()) if nz.numel() else math.inf,
        nonfinite=int((~finite).sum()),
        fractions=fractions,
    )


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


def _setting(device_type: str, dtype: torch.dtype | None) -> str:
    if dtype is None:
        return f"no autocast ({device_type})"
    return f"torch.autocast({device_type!r}, dtype={dtype})"


def trace_overflow(
    model: nn.Module,
    inputs,
    *,
    loss_fn=None,
    autocast=None,
    device_type: str | None = None,
    formats=("fp16", "bf16"),
) -> OverflowTrace:
    """Run ``model(*inputs)`` once with a forward hook on every module (and, when ``loss_fn`` is given,
    ``loss_fn(output).backward()`` with a hook on every module output's gradient) and return an
    :class:`OverflowTrace`.

    ``autocast``: None (run as the model is), ``torch.float16``/``"fp16"`` or ``torch.bfloat16``/``"bf16"``
    (inside ``torch.autocast(device_type, dtype)``; the backward runs outside it, as in the AMP recipe).
    ``device_type`` defaults to the device of the model's parameters. ``formats``: the formats whose
    fractions per class of :data:`amp_lessons.formats.CLASSES` are computed for each output (names of
    :data:`amp_lessons.formats.FORMATS`). Run it in fp32 to ask where fp16 WOULD overflow, under fp16
    autocast to see where it does.

    The model's existing ``.grad`` are set aside and restored; every hook is removed before returning,
    also when the model or the loss raises (the exception then propagates)."""
    model = _check_model(model)
    args = _check_inputs(inputs)
    dtype = _check_autocast(autocast)
    dev = _device_type(model, args, device_type)
    loss_fn = _check_loss_fn(loss_fn, required=False)
    fmts = tuple(get_format(f).name for f in (formats if isinstance(formats, (tuple, list)) else [formats]))
    if not fmts:
        raise ValueError("formats is empty: give at least one format name, e.g. ('fp16', 'bf16')")

    records: list[ModuleRecord] = []
    grad_order: list[str] = []
    calls: dict[str, int] = {}
    handles = []

    def on_grad(record):
        def hook(g):
            record.grad = tensor_stats(g, fmts)
            if record.label not in grad_order:
                grad_order.append(record.label)

        return hook

    def make_hook(name):
        def hook(module, hook_args, output):
            calls[name] = calls.get(name, 0) + 1
            rec = ModuleRecord(
                name=name or "(model)",
                type=type(module).__name__,
                call=calls[name],
                input=tensor_stats(hook_args, fmts),
                output=tensor_stats(output, fmts),
            )
            records.append(rec)
            if loss_fn is not None and torch.is_grad_enabled():
                outs = [t for t in _floats(output) if t.requires_grad]
                if outs:
                    outs[0].register_hook(on_grad(rec))  # the tensor hook dies with the graph

        return hook

    loss_value = None
    try:
        for name, module in model.named_modules():
            handles.append(module.register_forward_hook(make_hook(name)))
        with _SavedGrads(model):
            with torch.autocast(dev, dtype=dtype or torch.bfloat16, enabled=dtype is not None):
                out = model_call(model, args)
                loss = loss_fn(out) if loss_fn is not None else None
            if loss is not None:
                if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
                    raise TypeError(f"loss_fn must return a one-element tensor, got {type(loss).__name__}")
                loss_value = float(loss.detach().float())
                loss.backward()
    finally:
        for h in handles:
            h.remove()
    return OverflowTrace(records, grad_order, loss_value, _setting(dev, dtype), fmts, dev)


# --- models that fail the way users report it ---------------------------------------------------------


class _FFN(nn.Sequential):
    def __init__(self, d: int, hidden: int):
        super().__init__(OrderedDict(wi=nn.Linear(d, hidden), act=nn.ReLU(), wo=nn.Linear(hidden, d)))


def t5_like_model(seed: int = 0, *, blocks: int = 3, bad_block: int | None = 1, gain: float = 2.5e5) -> nn.Module:
    """A small fp32 model shaped like T5's feed-forward stack: ``embed`` (Linear 16 -> 32), then
    ``blocks`` times a feed-forward block (``block{i}.wi`` Linear 32 -> 64, ReLU, ``block{i}.wo`` Linear
    64 -> 32) followed by a LayerNorm ``norm{i}``, then ``head`` (Linear 32 -> 4).

    In block ``bad_block`` (None: none) the ``wi`` and ``wo`` weights are each multiplied by
    ``sqrt(gain)``, so its ``wo`` outputs reach about 2e5 on :func:`t5_like_batch` inputs (``wi``'s stay
    near 1e3), as T5's did (trained in bf16, its FFN outputs exceeded
    fp16's 65504): harmless in fp32 and bf16 (the LayerNorm after it rescales), inf in fp16. The first
    module to overflow fp16 is therefore ``f"block{bad_block}.wo"``, known in advance."""
    seed = _validate.seed(seed)
    blocks = count(blocks, "blocks", 1, 256)
    gain = positive(gain, "gain")
    if bad_block is not None and not (
        isinstance(bad_block, int) and not isinstance(bad_block, bool) and 0 <= bad_block < blocks
    ):
        raise ValueError(f"bad_block={bad_block!r} is not allowed: use None or an int in [0, {blocks})")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = OrderedDict(embed=nn.Linear(16, 32))
        for i in range(blocks):
            layers[f"block{i}"] = _FFN(32, 64)
            layers[f"norm{i}"] = nn.LayerNorm(32)
        layers["head"] = nn.Linear(32, 4)
        model = nn.Sequential(layers)
    if bad_block is not None:
        with torch.no_grad():
            ffn = model[2 * bad_block + 1]
            ffn.wi.weight.mul_(math.sqrt(gain))
            ffn.wo.weight.mul_(math.sqrt(gain))
    return model


def t5_like_batch(seed: int = 0, batch: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``: inputs (batch, 16) of magnitude about 30 and regression targets (batch, 4), seeded."""
    g = torch.Generator().manual_seed(_validate.seed(seed))
    batch = count(batch, "batch", 1, 1_000_000, "rows of 16 inputs")
    return 30 * torch.randn(batch, 16, generator=g), torch.randn(batch, 4, generator=g)


def broken_training_setup(seed: int = 3):
    """The lesson's "broken training script": ``(model, x, y)`` where the model is a
    :func:`t5_like_model` with 5 blocks, one of which (chosen by ``seed``) overflows fp16. Its fp16
    autocast loss is NaN; its fp32 loss is finite."""
    seed = _validate.seed(seed)
    bad_block = 1 + (seed * 7 + 2) % 4  # one of blocks 1..4, not the same for every seed
    model = t5_like_model(seed, blocks=5, bad_block=bad_block)
    x, y = t5_like_batch(seed)
    return model, x, y


# --- "why is AMP not faster here?" -------------------------------------------------------------------

_MATMUL_OP = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|_addmm_activation|.*conv.*|_scaled_mm|mkldnn_.*linear.*)$")
_CAST_OP = "aten::_to_copy"


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


def _profile_shares(step, device_type: str, calls: int = 3) -> tuple[float, int, float, float]:
    """(matmul share, number of casts per call, cast share, matmul time in µs) of ``calls`` calls of ``step``,
    from the profiler's self times (device time on CUDA, CPU time on the CPU)."""
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with quiet_fd2(), profile(activities=acts) as prof:
        for _ in range(calls):
            step()
        if device_type == "cuda":
            torch.cuda.synchronize()
    events = prof.key_averages()

    def self_time(e):
        if device_type == "cuda":
            return getattr(e, "self_device_time_total", 0.0)
        return e.self_cpu_time_total

    aten = [e for e in events if e.key.startswith("aten::")]
    total = sum(self_time(e) for e in aten) or 1.0
    mm = sum(self_time(e) for e in aten if _MATMUL_OP.match(e.key))
    casts = [e for e in aten if e.key == _CAST_OP]
    n_casts = sum(e.count for e in casts) // calls
    # a cast is _to_copy plus the copy_ it calls: its inclusive time
    cast_t = sum((e.device_time_total if device_type == "cuda" else e.cpu_time_total) for e in casts)
    return mm / total, n_casts, min(cast_t / total, 1.0), mm


def _double_batch(args: tuple, batch_dim: int) -> tuple:
    return tuple(
        torch.cat([a, a], dim=batch_dim) if isinstance(a, torch.Tensor) and a.dim() > batch_dim else a for a in args
    )


def _odd_dims(model: nn.Module, multiple: int) -> list[str]:
    out = []
    for name, m in model.named_modules():
        if isinstance(m, nn.Linear):
            dims = {"in_features": m.in_features, "out_features": m.out_features}
        elif isinstance(m, nn.modules.conv._ConvNd):
            dims = {"in_channels": m.in_channels, "out_channels": m.out_channels}
        else:
            continue
        bad = [f"{k}={v}" for k, v in dims.items() if v % multiple]
        if bad:
            out.append(f"{name} ({', '.join(bad)})")
    return out


def _tf32_baseline(device_type: str) -> bool:
    if device_type == "cuda":
        return torch.backends.cuda.matmul.fp32_precision == "tf32" or torch.backends.cudnn.conv.fp32_precision == "tf32"
    return torch.backends.mkldnn.matmul.fp32_precision in ("tf32", "bf16")


def _hardware(device_type: str, dtype: torch.dtype) -> tuple[str, bool]:
    """(description, has fast low-precision matmuls) from the device probes."""
    name = "fp16" if dtype == torch.float16 else "bf16"
    if device_type == "cuda":
        g = gpu_info()
        if g is None:
            return "no CUDA GPU", False
        fast = g.fp16_tensor_cores if dtype == torch.float16 else g.bf16
        return f"{g.name}: {name} tensor cores {'yes' if fast else 'no'}", fast
    c = cpu_info()
    fast = c.fp16_hardware if dtype == torch.float16 else c.bf16_hardware
    return f"{c.name} ({c.capability}): {name} matrix instructions {'yes' if fast else 'no'}", fast


def why_not_faster(
    model: nn.Module,
    inputs,
    *,
    loss_fn,
    dtype=torch.bfloat16,
    device_type: str | None = None,
    repeats: int = 5,
    batch_dim: int = 0,
    launch_ratio: float = 1.3,
) -> Triage:
    """Measure one training step (forward, ``loss_fn(output).backward()``) of ``model`` on ``inputs`` in
    fp32 and under ``torch.autocast(device_type, dtype)`` (the fastest of ``repeats`` calls after 2 warm-up
    calls, :func:`amp_lessons.timing.time_fn`: a busy machine only makes calls slower), then explain the ratio from measured facts:

    - the matmul/convolution share of the fp32 step (profiler self time): AMP speeds up only those, so
      faster matmuls give at most ``1 / (1 - p)`` (Amdahl's law), and ``1 / ((1 - p) + p / r)`` is the
      prediction with r the rate ratio the model's own matmuls ran at (profiler: their fp32 time over
      their autocast time); the 256^3 rate ratio of this device (:func:`amp_lessons.e2e.matmul_rates`,
      CPU only, on CUDA the tensor-core table says it) decides the hardware finding;
    - the number of ``aten::_to_copy`` casts autocast adds and their share of the step;
    - launch/overhead bound: the fp32 step at twice the batch (inputs concatenated along
      ``batch_dim``) takes less than ``launch_ratio`` times as long;
    - Linear/Conv dimensions that are not multiples of 8 (tensor-core tiles);
    - whether the "fp32" baseline already uses TF32 (or bf16) math;
    - whether the device has fast matrix instructions for ``dtype`` (device probes).

    The model's ``.grad`` are set aside and restored. Keep the model small on a CPU without
    bf16/fp16 instructions: there low-precision matmuls run tens to hundreds of times slower."""
    model = _check_model(model)
    args = _check_inputs(inputs)
    loss_fn = _check_loss_fn(loss_fn, required=True)
    low = _check_autocast(dtype)
    if low is None:
        raise ValueError("dtype=None is not allowed here: give the autocast dtype to compare, e.g. torch.bfloat16")
    dev = _device_type(model, args, device_type)
    repeats = count(repeats, "repeats", 1, 1_000, "timed steps of each setting")
    launch_ratio = positive(launch_ratio, "launch_ratio")
    if launch_ratio <= 1:
        raise ValueError(f"launch_ratio={launch_ratio!r} is not allowed: it must be a number > 1 (e.g. 1.3)")
    batch_dim = int_at_least(batch_dim, "batch_dim", 0)
    if not any(isinstance(a, torch.Tensor) and a.dim() > batch_dim for a in args):
        dims = [a.dim() for a in args if isinstance(a, torch.Tensor)]
        raise ValueError(
            f"batch_dim={batch_dim} is not allowed: no input has that dimension (their dimensions: {dims}); "
            "it must be the inputs' batch dimension, e.g. 0"
        )
    with torch.no_grad():
        model_call(model, args)  # inputs that do not fit the model are refused before any timing

    def make_step(amp: bool, a: tuple):
        def step():
            with torch.autocast(dev, dtype=low, enabled=amp):
                loss = loss_fn(model(*a))
            loss.backward()
            for p in model.parameters():
                p.grad = None

        return step

    with _SavedGrads(model):
        # the fastest call of each: a busy machine only ever makes calls slower
        runs32 = timing.time_fn(make_step(False, args), device=dev, warmup=2, repeats=repeats).times_s
        runs_amp = timing.time_fn(make_step(True, args), device=dev, warmup=2, repeats=repeats).times_s
        t32, tamp = min(runs32), min(runs_amp)
        big = _double_batch(args, batch_dim)
        t2 = min(timing.time_fn(make_step(False, big), device=dev, warmup=1, repeats=repeats).times_s)
        p32, _, _, mm32 = _profile_shares(make_step(False, args), dev)
        pamp, casts, cast_share, mm_amp = _profile_shares(make_step(True, args), dev)
    rate_ratio = None
    if dev == "cpu":
        rates = matmul_rates("cpu")
        rate_ratio = rates["fp16" if low == torch.float16 else "bf16"] / rates["fp32"]
    hw, fast = _hardware(dev, low)
    name = "fp16" if low == torch.float16 else "bf16"
    tri = Triage(
        device=dev,
        dtype=name,
        fp32_step_s=t32,
        amp_step_s=tamp,
        matmul_share_fp32=p32,
        matmul_share_amp=pamp,
        casts=casts,
        cast_share=cast_share,
        batch_time_ratio=t2 / t32,
        rate_ratio=rate_ratio,
        model_rate_ratio=mm32 / mm_amp if mm_amp > 0 else 1.0,
        hardware=hw,
        odd_dims=_odd_dims(model, 8),
        tf32_baseline=_tf32_baseline(dev),
        fp32_times_s=runs32,
        amp_times_s=runs_amp,
    )
    slow_hw = (rate_ratio is not None and rate_ratio < 1.0) or (rate_ratio is None and not fast)
    rate_text = "" if rate_ratio is None else f"; measured {name}/fp32 matmul rate {rate_ratio:.2g}x at 256^3"
    rate_text += f", {tri.model_rate_ratio:.2g}x at this model's matmul shapes (profiler)"
    tri.findings = [
        ("no fast low-precision hardware", slow_hw, f"{hw}{rate_text}"),
        (
            "matmuls are a small share",
            p32 < 0.5,
            f"matmuls/convolutions take {p32:.0%} of the fp32 step: even infinitely fast matmuls would make "
            f"it at most {tri.amdahl_bound:.2g}x faster (Amdahl's law); at the rate they ran at here, "
            f"predicted {tri.predicted_speedup:.2g}x before casts"
            + (
                f"; the measured {tri.speedup:.2g}x beats the bound: the timings were disturbed (a busy machine) "
                "or ops besides the matmuls got faster"
                if tri.speedup > tri.amdahl_bound
                else ""
            ),
        ),
        (
            "overhead-bound",
            tri.batch_time_ratio < launch_ratio,
            f"twice the batch takes {tri.batch_time_ratio:.2f}x the time: per-op overhead, not arithmetic",
        ),
        ("casts", cast_share > 0.1, f"{casts} casts (aten::_to_copy) take {cast_share:.0%} of the autocast step"),
        (
            "dimensions not multiples of 8",
            bool(tri.odd_dims) and dev == "cuda",
            ", ".join(tri.odd_dims[:4]) + ("" if len(tri.odd_dims) <= 4 else ", ...")
            if tri.odd_dims
            else "all Linear/Conv dimensions are multiples of 8",
        ),
        (
            "the fp32 baseline already uses TF32",
            tri.tf32_baseline,
            "TF32 (or bf16) math is on for fp32 matmuls" if tri.tf32_baseline else "fp32 matmuls are IEEE fp32",
        ),
    ]
    return tri


# --- dtype map ----------------------------------------------------------------------------------------


class _ParameterCasts(TorchDispatchMode):
    """Records the bytes of every cast (``aten._to_copy``) of a parameter: ``copies[id(param)]``."""

    def __init__(self, ptrs: dict):
        super().__init__()
        self.ptrs, self.copies = ptrs, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten._to_copy.default and isinstance(args[0], torch.Tensor):
            src = self.ptrs.get(args[0].data_ptr())
            if src is not None and src.shape == args[0].shape:
                self.copies[id(src)] = out.numel() * out.element_size()
        return out


#: name -> (autocast dtype or None, dtype the model and inputs are cast to)
PRECISION_SETTINGS = {
    "fp32": (None, torch.float32),
    "autocast bf16": (torch.bfloat16, torch.float32),
    "autocast fp16": (torch.float16, torch.float32),
    "pure bf16": (None, torch.bfloat16),
    "pure fp16": (None, torch.float16),
}


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


def dtype_map(
    model: nn.Module,
    inputs,
    *,
    loss_fn,
    setting: str = "autocast bf16",
    optimizer=torch.optim.Adam,
    device_type: str | None = None,
) -> DtypeMap:
    """One training step (forward, backward, ``optimizer`` step) of a COPY of ``model`` under
    ``setting`` (a key of :data:`PRECISION_SETTINGS`), recording the dtype of every parameter, module
    output, gradient and optimizer state, and the bytes per parameter of each. The low-precision weight
    copies of autocast are counted from the casts of parameters it really makes (a dispatch mode sees
    them); autograd saves them for backward, so they live until the backward pass frees the graph. ``optimizer`` is an optimizer class taking
    ``(params, lr=...)``. The model passed in is not changed."""
    model = _check_model(model)
    args = _check_inputs(inputs)
    loss_fn = _check_loss_fn(loss_fn, required=True)
    if setting not in PRECISION_SETTINGS:
        raise ValueError(f"setting={setting!r} is not allowed: use one of {list(PRECISION_SETTINGS)}")
    if not (isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer)):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer class such as torch.optim.Adam, got {optimizer!r}")
    dev = _device_type(model, args, device_type)
    amp, cast_to = PRECISION_SETTINGS[setting]
    m = copy.deepcopy(model).to(cast_to)
    args = tuple(a.to(cast_to) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args)
    for p in m.parameters():
        p.grad = None
    names = {id(p): n for n, p in m.named_parameters()}
    ptrs = {p.data_ptr(): p for p in m.parameters()}
    casts = _ParameterCasts(ptrs)
    activations = {}
    handles = [
        mod.register_forward_hook(
            lambda mod_, a_, out, name=name: activations.__setitem__(
                name or "(model)", next((t.dtype for t in _floats(out)), None)
            )
        )
        for name, mod in m.named_modules()
    ]
    opt = optimizer(m.parameters(), lr=1e-6)
    try:
        with casts, torch.autocast(dev, dtype=amp or torch.bfloat16, enabled=amp is not None):
            loss = loss_fn(model_call(m, args))
        loss.backward()
        opt.step()
    finally:
        for h in handles:
            h.remove()
    params = list(m.parameters())
    n = sum(p.numel() for p in params) or 1
    per = OrderedDict(weights=sum(p.numel() * p.element_size() for p in params) / n)
    per["gradients"] = sum(p.grad.numel() * p.grad.element_size() for p in params if p.grad is not None) / n
    states = {}
    for p in params:
        st = opt.state.get(p, {})
        states[names[id(p)]] = {k: v.dtype for k, v in st.items() if isinstance(v, torch.Tensor)}
        for k, v in st.items():
            if isinstance(v, torch.Tensor) and v.shape == p.shape:
                per[f"optimizer {k}"] = per.get(f"optimizer {k}", 0.0) + v.numel() * v.element_size() / n
    if amp is not None:
        per["low-precision weight copies"] = sum(casts.copies.values()) / n
    return DtypeMap(
        setting=setting,
        parameters={names[id(p)]: p.dtype for p in params},
        activations=activations,
        gradients={names[id(p)]: (None if p.grad is None else p.grad.dtype) for p in params},
        optimizer_states=states,
        bytes_per_parameter=dict(per),
    )
