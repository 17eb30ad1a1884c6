"""Lesson 04's results: :class:`Trace` (of :class:`OpRecord` s), :class:`ProfileTree` (of :class:`ProfileNode` s)
and :class:`CastCost`, and how each one shows."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import torch

from .._table import Cell, TableRecord, html_table

__all__ = ["AUTOGRAD_BOOKKEEPING", "CastCost", "OpRecord", "ProfileNode", "ProfileTree", "Trace"]


def dtype_name(d) -> str:
    return str(d).replace("torch.", "")


def bare_op_name(op) -> str:
    if isinstance(op, str):
        name = op
    elif isinstance(op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        name = op._schema.name if isinstance(op, torch._ops.OpOverload) else op._qualified_op_name
    else:
        raise TypeError(
            f"op_name must be an op name like 'mm' or 'aten::layer_norm' (or torch.ops.aten.mm), got {op!r}"
        )
    for prefix in ("aten::", "aten."):
        if name.startswith(prefix):
            name = name[len(prefix) :]
    return name.split(".", 1)[0]


@dataclass(frozen=True)
class OpRecord:
    """One ATen op as the dispatcher ran it (below autocast and autograd)."""

    phase: str  # "forward" or "backward"
    name: str  # op name without namespace and overload ("mm", "_to_copy", "native_layer_norm")
    in_dtypes: tuple  # dtypes of the tensor inputs, in argument order (lists flattened)
    in_shapes: tuple  # their shapes, as tuples
    out_dtypes: tuple
    out_shapes: tuple
    is_cast: bool  # a _to_copy / to that changed the dtype
    is_weight_cast: bool = False  # ... of a parameter or a leaf tensor that requires grad (forward)

    def describe(self) -> str:
        """``name(in) -> out`` with dtypes and shapes, e.g. ``mm(bfloat16[2, 4], bfloat16[4, 3]) -> bfloat16[2, 3]``."""
        return (
            f"{self.name}({_tensors_text(self.in_dtypes, self.in_shapes)}) -> "
            f"{_tensors_text(self.out_dtypes, self.out_shapes)}"
        )


def _tensors_text(dtypes, shapes) -> str:
    return ", ".join(f"{dtype_name(d)}{list(s)}" for d, s in zip(dtypes, shapes))


_SHORT_DTYPES = {
    torch.float32: "fp32",
    torch.float16: "fp16",
    torch.bfloat16: "bf16",
    torch.float64: "fp64",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.bool: "bool",
}


def _compact_text(dtypes, shapes) -> list[str]:
    return [f"{_SHORT_DTYPES.get(d, dtype_name(d))}[{','.join(map(str, s))}]" for d, s in zip(dtypes, shapes)]


def _wrap(items: list[str], width: int) -> list[str]:
    lines, line = [], ""
    for it in items:
        if line and len(line) + 2 + len(it) > width:
            lines.append(line + ",")
            line = it
        else:
            line = f"{line}, {it}" if line else it
    return [*lines, line]


DTYPE_KEY = "fp32 = float32, bf16 = bfloat16, fp16 = float16, fp64 = float64, i64 = int64"


#: ops autograd adds to a forward pass it records and a trace without autograd (the fake CUDA preview) lacks:
#: ``detach``, by which an op whose backward needs its own output (``_softmax``, ``exp``...) saves it.
AUTOGRAD_BOOKKEEPING = ("detach",)


def _signature(op) -> str:
    ins = ", ".join(dtype_name(d) for d in op.in_dtypes)
    outs = ", ".join(dtype_name(d) for d in op.out_dtypes)
    return f"{op.name}({ins}) -> {outs}"


def _where(device_type: str, fake: bool, device_name) -> str:
    if device_type == "cpu":
        return "CPU autocast, measured on this machine"
    return "CUDA autocast policy previewed with fake CUDA tensors" if fake else f"CUDA autocast on {device_name}"


@dataclass
class Trace:
    """What :func:`trace` recorded: ``ops`` (:class:`OpRecord` s, in order), ``casts`` (those that changed a dtype),
    ``weight_casts`` (forward casts of parameters and leaf tensors that require grad), ``output`` (what the function
    returned). Shown as a table with the casts marked."""

    ops: list
    device_type: str
    dtype: torch.dtype
    fake: bool
    output: Any = field(default=None, repr=False)
    device_name: str | None = None  # the GPU's name for a real CUDA trace

    @property
    def casts(self) -> list:
        return [op for op in self.ops if op.is_cast]

    @property
    def weight_casts(self) -> int:
        return sum(op.is_weight_cast for op in self.ops)

    @property
    def header(self) -> str:
        text = f"{_where(self.device_type, self.fake, self.device_name)} (autocast dtype {dtype_name(self.dtype)})"
        if self.fake:
            text += "; no autograd, so no weight-cast cache: every call casts its weights"
        return text

    def forward_ops(self) -> list:
        """The forward pass's ops, in order, without autograd's bookkeeping ops (:data:`AUTOGRAD_BOOKKEEPING`)."""
        return [op for op in self.ops if op.phase == "forward" and op.name not in AUTOGRAD_BOOKKEEPING]

    def forward_differences(self, other: Trace) -> list[str]:
        """Where the forward passes of this trace and ``other`` differ, op by op (names and dtypes, not shapes;
        :data:`AUTOGRAD_BOOKKEEPING` left out); an empty list if they ran the same ops in the same dtypes."""
        if not isinstance(other, Trace):
            raise TypeError(f"other must be a Trace (what autocast.trace returns), got {type(other).__name__}")
        mine, theirs = self.forward_ops(), other.forward_ops()
        out = []
        for i in range(max(len(mine), len(theirs))):
            a = _signature(mine[i]) if i < len(mine) else "(no op)"
            b = _signature(theirs[i]) if i < len(theirs) else "(no op)"
            if a != b:
                out.append(f"forward op {i}: {a} here, {b} in the other trace")
        return out

    def named(self, name: str) -> list:
        """The records of op ``name`` ("mm", "aten::mm" or "aten.mm.default" all work)."""
        name = bare_op_name(name)
        return [op for op in self.ops if op.name == name]

    def _rows(self, width: int = 1_000):
        for i, op in enumerate(self.ops):
            mark = "weight cast" if op.is_weight_cast else ("cast" if op.is_cast else "")
            yield (
                str(i),
                "fwd" if op.phase == "forward" else "bwd",
                op.name,
                _wrap(_compact_text(op.in_dtypes, op.in_shapes), width),
                _wrap(_compact_text(op.out_dtypes, op.out_shapes), width),
                mark,
            )

    def _summary(self) -> str:
        n = len(self.casts)
        return (
            f"{len(self.ops)} ops, {n} cast{'s' if n != 1 else ''} "
            f"({self.weight_casts} of parameters or leaf tensors that require grad)"
        )

    def __repr__(self) -> str:
        head = ("#", "phase", "op", ["inputs"], ["outputs"], "")
        rows = [head, *self._rows(width=44)]
        widths = [max(len(r[i]) if isinstance(r[i], str) else max(map(len, r[i])) for r in rows) for i in range(6)]
        lines = [self.header]
        for j, r in enumerate(rows):
            for k in range(max(len(r[3]), len(r[4]))):
                first = k == 0
                cells = [
                    (r[0] if first else "").rjust(widths[0]),
                    *((c if first else "").ljust(w) for c, w in zip(r[1:3], widths[1:3])),
                    (r[3][k] if k < len(r[3]) else "").ljust(widths[3]),
                    (r[4][k] if k < len(r[4]) else "").ljust(widths[4]),
                    r[5] if first else "",
                ]
                lines.append(("* " if j and r[5] and first else "  ") + "  ".join(cells).rstrip())
        lines.append(self._summary() + "; * marks the casts; " + DTYPE_KEY)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        def lines(cell: list) -> Cell:
            return Cell(html="<br>".join(html.escape(x) for x in cell), nowrap=True)

        rows = [[*r[:3], lines(r[3]), lines(r[4]), Cell(r[5], bold=True)] for r in self._rows(width=44)]
        marked = [i for i, r in enumerate(rows) if r[5].text]
        head = ("#", "phase", "op", "inputs", "outputs", "")
        return html_table(head, rows, title=self.header, notes=[self._summary(), DTYPE_KEY], marked=marked)


@dataclass
class ProfileNode:
    """One op of a :class:`ProfileTree`: times in microseconds; ``total_us`` includes the children."""

    name: str
    input_shapes: list
    input_dtypes: list
    self_us: float
    total_us: float
    children: list = field(default_factory=list)
    start_us: float = 0.0

    def line(self) -> str:
        text = self.name
        if self.input_shapes:
            text += f"  {self.input_shapes}"
        if self.input_dtypes:
            text += f"  [{', '.join(self.input_dtypes)}]"
        return text + f"  (self {_us(self.self_us)}, total {_us(self.total_us)})"


def _us(x: float) -> str:
    return f"{x:.0f} us" if x >= 10 else f"{x:.1f} us"


@dataclass(repr=False)
class ProfileTree:
    """The CPU op tree :func:`profile_tree` recorded: ``roots`` (:class:`ProfileNode` s, children nested) and
    ``chrome_trace``, the exported trace's path (open it in https://ui.perfetto.dev)."""

    roots: list
    chrome_trace: str
    device_type: str
    dtype: torch.dtype
    device_name: str | None = None

    def walk(self):
        """Every node with its depth, depth first, in time order."""
        stack = [(0, n) for n in reversed(self.roots)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, c) for c in reversed(node.children))

    def __repr__(self) -> str:
        where = _where(self.device_type, False, self.device_name)
        lines = [
            f"{where} (autocast dtype {dtype_name(self.dtype)}); torch.profiler CPU ops; times vary from run to run"
        ]
        lines += ["  " * depth + node.line() for depth, node in self.walk()]
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class CastCost(TableRecord):
    """The median timings of :func:`cast_cost` in seconds, ``cast_over_layer_norm`` = ``cast_s /
    layer_norm_fp32_s``, whether autocast inserted the upcast, and what was measured."""

    autocast_layer_norm_s: float
    upcast_then_layer_norm_s: float
    upcast_into_buffer_then_layer_norm_s: float
    cast_s: float
    layer_norm_fp32_s: float
    cast_over_layer_norm: float
    autocast_inserts_upcast: bool
    size: tuple[int, int]
    repeats: int
    device: str

    LABELS = {
        "autocast_layer_norm_s": "ln(x) under autocast",
        "upcast_then_layer_norm_s": "ln(x.float())",
        "upcast_into_buffer_then_layer_norm_s": "ln(buf.copy_(x))",
        "cast_s": "x.float()",
        "layer_norm_fp32_s": "ln(x32), no cast",
    }

    def _table(self):
        rows = [(label, f"{getattr(self, f) * 1e3:.3f} ms") for f, label in self.LABELS.items()]
        rows.append(("cast / fp32 layer norm", f"{self.cast_over_layer_norm:.2f}x"))
        rows.append(("autocast inserts the upcast", str(self.autocast_inserts_upcast)))
        rows_n, features = self.size
        title = f"bf16 x ({rows_n} x {features}) into an fp32 LayerNorm on {self.device}, median of {self.repeats}"
        return None, rows, title, ()
