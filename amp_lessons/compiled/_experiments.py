"""Lesson 11, ``torch.compile`` and mixed precision: what Dynamo captures of an autocast region, where the casts
go in the code Inductor generates, why compiled bf16 results differ from eager ones, and what it does to speed.

Everything here runs on the CPU, where Inductor generates C++ and compiles it with the system's C++ compiler
(on a GPU the same graphs become Triton kernels). Three views of one function:

- :func:`eager_casts`: the ops eager autocast runs (lesson 04's tracer): every cast is a kernel that writes a
  new tensor, every bf16 op output is a rounding to bf16 stored in memory.
- :func:`captured_graph`: the graph Dynamo captures (autocast enter/exit become graph nodes) and the ATen
  graph AOTAutograd hands to Inductor, where autocast's casts are explicit ``convert_element_type`` nodes.
- :func:`compile_workload`: the function compiled by Inductor, its generated code summarised by
  :func:`summarize_code` (kernels, library calls, tensors written in bf16), the compile time measured.

:func:`precision_errors` compares eager, compiled and compiled with
``torch._inductor.config.emulate_precision_casts=True`` against an fp64 reference; :func:`step_times` times
eager and compiled, fp32 and autocast. Compiling is slow on a small CPU (seconds per graph, the first one
in a process more): the functions take a compiled result and reuse it rather than compiling again.
"""

from __future__ import annotations

import contextlib
import functools
import math
import re
import shutil
import time
import warnings
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .. import _validate, timing
from .._runtime import one_thread
from .._table import TableRecord
from .._validate import count, flag
from ..autocast._experiments import trace
from . import key_code
from .key_code import GraphRecorder

__all__ = [
    "WORKLOADS",
    "CapturedGraph",
    "CodeSummary",
    "CompiledWorkload",
    "EagerCasts",
    "Fp8Saturation",
    "InductorUnavailable",
    "PrecisionErrors",
    "RunErrors",
    "captured_graph",
    "compile_workload",
    "eager_casts",
    "fp8_saturation",
    "inductor_status",
    "make_inputs",
    "precision_errors",
    "step_times",
    "summarize_code",
    "torch_logs",
    "workload",
]

LOW = torch.bfloat16

WORKLOADS = ("mlp", "chain", "layer_norm", "rms_norm")
"""The functions the lesson compiles (:func:`workload`):

- ``"mlp"``: a SwiGLU MLP block under bf16 autocast, ``rms_norm(silu(x @ w_gate) * (x @ w_up))``: two matmuls
  (autocast casts ``x`` and both weights to bf16) and a pointwise chain on their bf16 outputs;
- ``"chain"``: the pointwise chain alone on bf16 tensors, ``rms_norm(silu(g) * h)`` (three bf16 ops eagerly);
- ``"layer_norm"`` / ``"rms_norm"``: ``norm(x @ w)`` under bf16 autocast, with the norm's fp32 weight and bias
  (``rms_norm`` has no bias). On the CPU, autocast leaves both norms out of its lists: they get the bf16 output
  of the matmul and return bf16.
"""

MAX_ROWS = 4096
MAX_WIDTH = 1024


class InductorUnavailable(RuntimeError):
    """Inductor cannot compile on this machine (no C++ compiler for its CPU backend); the message says what to
    install."""


def inductor_status() -> tuple[bool, str]:
    """Whether Inductor's CPU backend can run here, and a sentence saying why (the C++ compiler it found, or
    what to install). Inductor compiles the C++ it generates with ``$CXX`` or ``g++``/``clang++``."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        cxx = get_cpp_compiler()
    except Exception as exc:  # noqa: BLE001 - any failure means the same thing to the learner
        return False, (
            f"Inductor's CPU backend needs a C++ compiler and found none ({type(exc).__name__}: {exc}); install "
            "one (Debian/Ubuntu: apt install g++; macOS: xcode-select --install; conda: conda install gxx) "
            "and restart the kernel"
        )
    path = shutil.which(cxx) or cxx
    return True, f"Inductor's CPU backend compiles its C++ with {path}"


_LOG_PREFIX = re.compile(r"^[A-Z]\d{4} [\d:.]+ +\d+ \S+:\d+\] (?:\[[\d/_]+\] )?(?:\[__\w+\] ?)?")


@contextlib.contextmanager
def torch_logs():
    """Keep what torch logs in the block (``torch._logging.set_logs(...)`` inside it, Dynamo's warnings) in a list
    of lines, without torch's prefix (level, time, process, file and line, frame), instead of writing it to stderr,
    which Jupyter shows as a pink block, as it shows errors. Afterwards torch's default logging is back
    (``torch._logging.set_logs()``), writing to stderr again."""
    import io

    lines: list = []
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stderr(buffer):
            torch._logging.set_logs()  # torch's handlers made again, now writing to the buffer
            yield lines
    finally:
        torch._logging.set_logs()  # made again after stderr is back, so later logs reach it
        lines += [_LOG_PREFIX.sub("", line) for line in buffer.getvalue().splitlines()]


def _require_inductor_import() -> None:
    with warnings.catch_warnings():
        # importing Inductor imports torch.utils.mkldnn, whose TorchScript classes warn that TorchScript is
        # deprecated: a warning about torch's own code, not the learner's
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._inductor.compile_fx  # noqa: F401


def _require_inductor() -> None:
    ok, why = inductor_status()
    if not ok:
        raise InductorUnavailable(why)
    _require_inductor_import()


# --------------------------------------------------------------------------------------------
# The workloads
# --------------------------------------------------------------------------------------------


# ``"mlp"`` and ``"chain"`` are lesson 11's own cells (key_code: mlp, chain); the two norms only the tests use.


def _layer_norm(x, w, weight, bias, *, autocast: bool = True):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = x @ w
        return F.layer_norm(y, (y.shape[-1],), weight, bias)


def _rms_norm(x, w, weight, *, autocast: bool = True):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = x @ w
        # rms_norm has no mixed-dtype kernel: a bf16 input with an fp32 weight takes the composite path
        # (and eagerly warns about it); multiplying by the weight afterwards is the same function
        return F.rms_norm(y, (y.shape[-1],)) * weight


def _check_workload(name) -> str:
    if name not in WORKLOADS:
        raise ValueError(f"name={name!r} is not allowed: a workload, one of {', '.join(map(repr, WORKLOADS))}")
    return name


def workload(name: str, *, autocast: bool = True):
    """The function of workload ``name`` (one of :data:`WORKLOADS`); ``autocast=False`` runs the same
    function in fp32 (``torch.autocast(..., enabled=False)``; ``"chain"`` has no autocast region)."""
    name = _check_workload(name)
    flag(autocast, "autocast")
    if name == "chain":
        return key_code.chain
    fn = {"mlp": key_code.mlp, "layer_norm": _layer_norm, "rms_norm": _rms_norm}[name]
    out = functools.partial(fn, autocast=autocast)
    out.__name__ = f"{name}_{'autocast' if autocast else 'fp32'}"
    return out


def make_inputs(name: str, seed: int = 0, *, rows: int = 32, width: int = 64) -> tuple:
    """Random inputs of workload ``name``: ``rows`` x ``width`` activations, weights ``width`` x ``2*width``
    scaled by ``1/sqrt(width)`` (fp32, as a model keeps them; ``"chain"`` gets bf16 ``h`` and ``g``, as the
    output of bf16 matmuls would be). No tensor requires grad: the lesson compiles inference graphs."""
    name = _check_workload(name)
    seed = _validate.seed(seed)
    rows = count(rows, "rows", 1, MAX_ROWS, "kept small: compiled and bf16 work is slow on a CPU")
    width = count(width, "width", 1, MAX_WIDTH, "kept small: compiled and bf16 work is slow on a CPU")
    gen = torch.Generator().manual_seed(seed)
    hidden = 2 * width

    def randn(*shape):
        return torch.randn(*shape, generator=gen)

    if name == "chain":
        return randn(rows, hidden).to(LOW), randn(rows, hidden).to(LOW)
    x, w = randn(rows, width), randn(width, hidden) / math.sqrt(width)
    if name == "mlp":
        return x, w, randn(width, hidden) / math.sqrt(width)
    weight = 1 + 0.1 * randn(hidden)
    if name == "layer_norm":
        return x, w, weight, 0.1 * randn(hidden)
    return x, w, weight


# --------------------------------------------------------------------------------------------
# Eager: the casts autocast runs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EagerCasts:
    """What eager mode ran: ``ops`` ATen ops, of which ``casts`` changed a dtype (each a kernel writing a new
    tensor), and ``bf16_outputs`` ops that wrote a bf16 result (each a rounding to bf16 stored in memory,
    casts to bf16 included)."""

    workload: str
    ops: tuple
    casts: int
    bf16_outputs: int

    def __repr__(self) -> str:
        return (
            f"eager {self.workload}: {len(self.ops)} ops ({', '.join(self.ops)}); {self.casts} casts; "
            f"{self.bf16_outputs} bf16 tensors written"
        )


def eager_casts(name: str, inputs: tuple | None = None) -> EagerCasts:
    """Run workload ``name`` eagerly under lesson 04's tracer (:func:`amp_lessons.autocast.trace`) and count
    its casts and its bf16 outputs. ``inputs``: from :func:`make_inputs` (the default)."""
    name = _check_workload(name)
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    with torch.no_grad():
        t = trace(workload(name), *args, device_type="cpu", dtype=LOW)
    ops = tuple(op.name for op in t.ops)
    bf16 = sum(LOW in op.out_dtypes for op in t.ops)
    return EagerCasts(name, ops, len(t.casts), bf16)


def _check_inputs(inputs, name: str) -> tuple:
    """``inputs`` of workload ``name``: as many floating-point tensors as :func:`make_inputs` gives, on which the
    workload runs eagerly (checked with one eager call, before anything is traced or compiled)."""
    if not isinstance(inputs, (tuple, list)) or not all(isinstance(t, torch.Tensor) for t in inputs):
        raise TypeError(f"inputs must be a tuple of tensors (from make_inputs), got {type(inputs).__name__}")
    want = make_inputs(name, rows=1, width=1)
    if len(inputs) != len(want) or not all(t.is_floating_point() for t in inputs):
        raise ValueError(
            f"inputs must be the {len(want)} floating-point tensors of workload {name!r} (from make_inputs({name!r})), "
            f"got {len(inputs)}: {[f'{tuple(t.shape)} {t.dtype}' for t in inputs]}"
        )
    try:
        with torch.no_grad():
            workload(name)(*inputs)
    except RuntimeError as e:
        shapes = [tuple(t.shape) for t in inputs]
        raise ValueError(
            f"inputs of shapes {shapes} do not fit workload {name!r} ({e}): they must have the shapes "
            f"make_inputs({name!r}) gives, e.g. {[tuple(t.shape) for t in want]} for rows=1, width=1"
        ) from e
    return tuple(inputs)


# --------------------------------------------------------------------------------------------
# Dynamo's graph and the ATen graph Inductor receives
# --------------------------------------------------------------------------------------------


def _target_name(target) -> str:
    if isinstance(target, str):
        return target
    name = getattr(target, "__name__", None) or str(target)
    if isinstance(target, torch._ops.OpOverload):
        return f"{target.namespace}.{target.__name__.split('.')[0]}"
    return name.lstrip("_") if "autocast" in name else name


def _arg_text(a) -> str:
    if isinstance(a, torch.fx.Node):
        return a.name
    if isinstance(a, torch.dtype):
        return str(a).removeprefix("torch.")
    if isinstance(a, (tuple, list)):
        return "(" + ", ".join(_arg_text(v) for v in a) + ")"
    return repr(a)


def _graph_lines(gm: torch.fx.GraphModule) -> tuple:
    lines = []
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            lines.append(f"{n.name} = input")
        elif n.op == "output":
            lines.append(f"return {_arg_text(n.args[0])}")
        elif n.op in ("call_function", "call_method"):
            args = [_arg_text(a) for a in n.args] + [f"{k}={_arg_text(v)}" for k, v in n.kwargs.items()]
            lines.append(f"{n.name} = {_target_name(n.target)}({', '.join(args)})")
        else:
            lines.append(f"{n.name} = {n.op} {n.target}")
    return tuple(lines)


_CAST_TARGETS = ("prims.convert_element_type", "aten._to_copy")


@dataclass(frozen=True)
class CapturedGraph:
    """The graph Dynamo captured (``dynamo``: one line per node) and the ATen graph AOTAutograd made of it for
    Inductor (``aten``), where autocast's casts are explicit nodes (``casts``: their lines)."""

    workload: str
    dynamo: tuple
    aten: tuple
    graphs: int  # how many graphs Dynamo produced (1: no graph break)

    @property
    def casts(self) -> tuple:
        return tuple(line for line in self.aten if any(f"= {t}(" in line for t in _CAST_TARGETS))

    @property
    def autocast_nodes(self) -> tuple:
        return tuple(line for line in self.dynamo if "autocast" in line)

    def __repr__(self) -> str:
        return "\n".join(
            [
                f"Dynamo's graph of {self.workload} ({self.graphs} graph{'s' if self.graphs != 1 else ''}):",
                *("  " + s for s in self.dynamo),
                f"the ATen graph Inductor receives ({len(self.casts)} casts, marked *):",
                *(("* " if s in self.casts else "  ") + s for s in self.aten),
            ]
        )


def captured_graph(name: str, inputs: tuple | None = None) -> CapturedGraph:
    """Trace workload ``name`` with Dynamo and AOTAutograd only (no Inductor, no C++ compiler: fast) and
    return both graphs. ``inputs``: from :func:`make_inputs` (the default).

    Lesson 11's ``GraphRecorder`` backend keeps Dynamo's graph and hands it on to AOTAutograd, whose forward
    compiler, a second ``GraphRecorder``, keeps the ATen graph and runs it unchanged."""
    from torch._dynamo.backends.common import aot_autograd

    name = _check_workload(name)
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    _require_inductor_import()
    aten = GraphRecorder()
    dynamo = GraphRecorder(then=aot_autograd(fw_compiler=aten))
    torch._dynamo.reset()  # trace afresh, whatever was compiled before
    try:
        with torch.no_grad():
            torch.compile(workload(name), backend=dynamo, dynamic=False)(*args)
    finally:
        torch._dynamo.reset()
    return CapturedGraph(name, _graph_lines(dynamo.graphs[0]), _graph_lines(aten.graphs[0]), len(dynamo.graphs))


# --------------------------------------------------------------------------------------------
# Inductor's generated code
# --------------------------------------------------------------------------------------------

_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(\[([^\]]*)\]", re.M)
_EXTERN = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")
_CONVERT = re.compile(r"\bconvert<|static_cast<(?:at::BFloat16|float|bfloat16)>")


@dataclass(frozen=True)
class CodeSummary:
    """What Inductor generated for one graph, counted from its code (``torch._inductor.utils.run_and_get_code``).

    ``kernels``: the names of the C++ kernels it generated (each fuses several ops; the name lists them);
    ``library_calls``: the calls to ATen/oneDNN kernels (matmuls); ``bf16_writes`` / ``fp32_writes``: the
    tensors the kernels write in each dtype (their output pointers); ``conversions``: dtype conversions
    written in the C++ source. The first four do not depend on the CPU; ``conversions`` does (a vectorized
    kernel has a vector loop and a scalar tail, a CPU without AVX2 gets scalar code), so the lesson shows it
    but never compares it."""

    kernels: tuple
    library_calls: tuple
    bf16_writes: int
    fp32_writes: int
    conversions: int

    def __repr__(self) -> str:
        return (
            f"{len(self.kernels)} generated kernels ({', '.join(self.kernels)}); library calls: "
            f"{', '.join(self.library_calls) or 'none'}; tensors written by the kernels: {self.bf16_writes} bf16, "
            f"{self.fp32_writes} fp32"
        )


def summarize_code(code: str) -> CodeSummary:
    """Count kernels, library calls, bf16/fp32 tensors written and conversions in Inductor's generated code for
    the CPU (the Python wrapper with its C++ kernels, one string)."""
    if not isinstance(code, str):
        raise TypeError(f"code must be Inductor's generated code as a str, got {type(code).__name__}")
    kernels, bf16, fp32 = [], 0, 0
    for m in _KERNEL.finditer(code):
        kernels.append(m.group(1))
        types = [t.strip().strip("'\"") for t in m.group(2).split(",") if t.strip()]
        bf16 += sum(t == "at::BFloat16*" for t in types)
        fp32 += sum(t == "float*" for t in types)
    wrapper = code[code.find("def call(") :] if "def call(" in code else ""
    calls = tuple(m.group(1) for m in _EXTERN.finditer(wrapper))
    return CodeSummary(tuple(kernels), calls, bf16, fp32, len(_CONVERT.findall(code)))


@dataclass
class CompiledWorkload:
    """A workload compiled by Inductor: ``fn`` (call it with the inputs again), the ``output`` of its first call,
    the generated ``code`` and its :class:`CodeSummary`, and ``compile_seconds``: how long the first call took
    (tracing, C++ generation and compilation; much more for the first graph of a process and with an empty
    Inductor cache)."""

    workload: str
    autocast: bool
    emulate_precision_casts: bool
    fn: object = field(repr=False)
    inputs: tuple = field(repr=False)
    output: torch.Tensor = field(repr=False)
    code: str = field(repr=False)
    compile_seconds: float

    @property
    def summary(self) -> CodeSummary:
        return summarize_code(self.code)


@contextlib.contextmanager
def _inductor_settings(emulate: bool):
    import torch._inductor.config as ic

    # compile_threads=1: on a 2-core machine the pool of compile workers costs seconds to start and saves nothing
    with ic.patch(emulate_precision_casts=emulate, compile_threads=1):
        yield


def compile_workload(
    name: str, inputs: tuple | None = None, *, autocast: bool = True, emulate_precision_casts: bool = False
) -> CompiledWorkload:
    """Compile workload ``name`` with ``torch.compile(dynamic=False)`` (Inductor), run it once on ``inputs``
    (default: :func:`make_inputs`) and keep the generated code. ``emulate_precision_casts=True`` sets
    ``torch._inductor.config.emulate_precision_casts``: Inductor then rounds to bf16 wherever eager mode would,
    inside its fused kernels. Raises :class:`InductorUnavailable` when no C++ compiler is installed."""
    from torch._inductor.utils import run_and_get_code

    name = _check_workload(name)
    flag(autocast, "autocast")
    flag(emulate_precision_casts, "emulate_precision_casts")
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    _require_inductor()
    fn = workload(name, autocast=autocast)
    with _inductor_settings(emulate_precision_casts):
        # a fresh function object each time: Dynamo caches per code object (it does not guard on Inductor's
        # settings: a compiled function keeps those of its first compile)
        compiled = torch.compile(functools.partial(fn), dynamic=False)
        t0 = time.perf_counter()
        with torch.no_grad():
            out, codes = run_and_get_code(compiled, *args)
        seconds = time.perf_counter() - t0
    if emulate_precision_casts:
        # a later call may compile again (new input shapes, a failed guard): keep the setting for that compile
        plain = compiled

        def compiled(*a):
            with _inductor_settings(True):
                return plain(*a)

    return CompiledWorkload(name, autocast, emulate_precision_casts, compiled, args, out, "\n".join(codes), seconds)


# --------------------------------------------------------------------------------------------
# Numerics
# --------------------------------------------------------------------------------------------


def _reference(name: str, args: tuple) -> torch.Tensor:
    """fp64 on the values the bf16 kernels see: activations and weights rounded to bf16 where autocast casts
    them, then everything in fp64 (so the errors are those of the roundings after the inputs)."""
    if name == "chain":
        return key_code.chain(*(a.double() for a in args))
    x, w, *rest = args
    xd, wd = x.to(LOW).double(), w.to(LOW).double()
    if name == "mlp":
        return key_code.mlp(xd, wd, rest[0].to(LOW).double(), autocast=False)
    if name == "layer_norm":
        return _layer_norm(xd, wd, rest[0].double(), rest[1].double(), autocast=False)
    return _rms_norm(xd, wd, rest[0].double(), autocast=False)


def _rel_errors(out: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
    rel = (out.double() - ref).abs() / ref.abs().clamp_min(torch.finfo(torch.float64).tiny)
    return float(rel.max()), float(rel.mean())


@dataclass(frozen=True)
class RunErrors:
    """One run's output against the fp64 reference and against eager mode (a part of :class:`PrecisionErrors`):
    ``max_error`` and ``mean_error`` the element-wise relative error against fp64; ``equals_eager`` whether the
    output equals eager's bit for bit, ``ulps_from_eager`` the largest difference from eager in bf16 units in the
    last place, ``fraction_differing`` the fraction of elements that differ from eager."""

    max_error: float
    mean_error: float
    equals_eager: bool
    ulps_from_eager: float
    fraction_differing: float


@dataclass(frozen=True, repr=False)
class PrecisionErrors(TableRecord):
    """The errors of :func:`precision_errors` for ``workload``: a :class:`RunErrors` for ``eager``, ``compiled``
    and (None when not given) ``emulated``; :attr:`runs` holds those present by name. Shown as a table, the errors
    to 3 digits."""

    workload: str
    eager: RunErrors
    compiled: RunErrors
    emulated: RunErrors | None = None

    @property
    def runs(self) -> dict[str, RunErrors]:
        """The runs present, by name: eager, compiled and, if measured, emulated."""
        runs = {"eager": self.eager, "compiled": self.compiled, "emulated": self.emulated}
        return {k: v for k, v in runs.items() if v is not None}

    def _table(self):
        header = ("run", "max relative error", "mean", "equals eager", "bf16 ulps from eager", "elements differing")
        rows = [
            (run, f"{e.max_error:.2e}", f"{e.mean_error:.2e}", str(e.equals_eager), f"{e.ulps_from_eager:.0f}",
             f"{e.fraction_differing:.1%}")
            for run, e in self.runs.items()
        ]  # fmt: skip
        return header, rows, f"{self.workload}: bf16 errors against fp64, and differences from eager", ()


def precision_errors(compiled: CompiledWorkload, emulated=None) -> PrecisionErrors:
    """Max and mean element-wise relative error against an fp64 reference of eager mode, of ``compiled``
    and (if given) of ``emulated``, on ``compiled``'s inputs. ``emulated``: the same workload compiled with
    ``emulate_precision_casts=True`` (a :class:`CompiledWorkload`), or the output tensor of such a compiled
    function called on ``compiled.inputs`` (lesson 11 compiles it in a cell). Also: whether compiled and emulated outputs equal eager's bit for bit, and the
    largest difference from eager in bf16 units in the last place (ulps) of each element, and the fraction of
    elements that differ from eager. Emulation reproduces eager's roundings, not its fp32 arithmetic: where ATen's
    and Inductor's fp32 ``exp``/``rsqrt`` differ in the last bit, a value next to a bf16 rounding boundary can round
    the other way (seen: 2 of 4096 elements, 1 ulp, with ATen's scalar kernels).

    Returns the :class:`PrecisionErrors` (``emulated`` None when not given)."""
    if not isinstance(compiled, CompiledWorkload) or compiled.emulate_precision_casts or not compiled.autocast:
        raise TypeError("compiled must be a CompiledWorkload from compile_workload(name) with autocast on")
    if (
        emulated is not None
        and not isinstance(emulated, torch.Tensor)
        and (
            not isinstance(emulated, CompiledWorkload)
            or not emulated.emulate_precision_casts
            or emulated.workload != compiled.workload
        )
    ):
        raise TypeError(
            "emulated must be compile_workload(name, emulate_precision_casts=True) of the same workload, its output "
            f"tensor on compiled.inputs, or None; got {type(emulated).__name__}"
        )
    args, name = compiled.inputs, compiled.workload
    with torch.no_grad():
        eager = workload(name)(*args)
        emul_out = emulated if emulated is None or isinstance(emulated, torch.Tensor) else emulated.fn(*args)
    if isinstance(emulated, torch.Tensor) and (emulated.shape != eager.shape or emulated.dtype != eager.dtype):
        raise ValueError(
            f"emulated has shape {tuple(emulated.shape)} and dtype {emulated.dtype}; the workload's output on "
            f"compiled.inputs has {tuple(eager.shape)} and {eager.dtype}: pass its output on those inputs"
        )
    if isinstance(emulated, CompiledWorkload) and not torch.equal(emul_out, emulated.output):
        raise ValueError("emulated was compiled on other inputs than compiled: compile both on the same inputs")
    ref = _reference(name, args)
    ulp = ref.abs().clamp_min(torch.finfo(LOW).tiny)
    ulp = torch.finfo(LOW).eps * torch.exp2(torch.floor(torch.log2(ulp)))

    def ulps(a):
        return float(((a.double() - eager.double()).abs() / ulp).max())

    def run(out) -> RunErrors:
        return RunErrors(
            *_rel_errors(out, ref),
            equals_eager=bool(torch.equal(out, eager)),
            ulps_from_eager=ulps(out),
            fraction_differing=float((out != eager).double().mean()),
        )

    return PrecisionErrors(name, run(eager), run(compiled.output), None if emul_out is None else run(emul_out))


# --------------------------------------------------------------------------------------------
# Speed
# --------------------------------------------------------------------------------------------


def step_times(compiled_autocast: CompiledWorkload, compiled_fp32: CompiledWorkload, *, repeats: int = 20) -> dict:
    """Time of one call of the workload, eager and compiled, fp32 and bf16 autocast, measured here with
    :func:`amp_lessons.timing.time_fn` (compile time excluded: it is in each ``compile_seconds``): ``repeats`` runs
    of each, a run the mean of a block of calls that lasts about 1 ms (``block_s``; the calls take microseconds).

    Returns ``{"eager fp32": Timing, "eager autocast": ..., "compiled fp32": ..., "compiled autocast": ...}``."""
    for what, c, ac in (("compiled_autocast", compiled_autocast, True), ("compiled_fp32", compiled_fp32, False)):
        if not isinstance(c, CompiledWorkload) or c.autocast is not ac or c.emulate_precision_casts:
            raise TypeError(
                f"{what} must be compile_workload(name, autocast={ac}) (without emulate_precision_casts), "
                f"got {type(c).__name__}"
            )
    if compiled_autocast.workload != compiled_fp32.workload:
        raise ValueError("compiled_autocast and compiled_fp32 must be the same workload")
    repeats = count(repeats, "repeats", 1, 10_000, "timed calls")
    name, args = compiled_autocast.workload, compiled_autocast.inputs
    fns = {
        "eager fp32": workload(name, autocast=False),
        "eager autocast": workload(name),
        "compiled fp32": compiled_fp32.fn,
        "compiled autocast": compiled_autocast.fn,
    }
    out = {}
    # one thread: these calls take microseconds to milliseconds, and on a busy small machine waiting for
    # descheduled worker threads would dominate them
    with torch.no_grad(), one_thread():
        for label, fn in fns.items():
            # runs of 1 ms blocks: a call takes microseconds, and one descheduling would otherwise be a whole run
            out[label] = timing.time_fn(functools.partial(fn, *args), warmup=3, repeats=repeats, block_s=1e-3)
    return out


# --------------------------------------------------------------------------------------------
# Pitfall: fp8 casts
# --------------------------------------------------------------------------------------------


def _to_e4m3(x):
    return x.to(torch.float8_e4m3fn).float()


@dataclass(frozen=True, repr=False)
class Fp8Saturation(TableRecord):
    """What :func:`fp8_saturation`'s casts to ``float8_e4m3fn`` gave: ``values`` the fp32 values cast, ``eager`` and
    ``compiled`` what each cast gave back (448 where it saturates, NaN where it does not), ``compile_seconds`` the
    time of the first compiled call (compilation included). :attr:`agree`: whether the two casts gave the same
    value (NaN and NaN agree) for every value. Shown as a table, one row per value."""

    values: tuple[float, ...]
    eager: tuple[float, ...]
    compiled: tuple[float, ...]
    compile_seconds: float

    @property
    def agree(self) -> bool:
        """Whether eager and compiled casts agree on every value (NaN and NaN agree)."""
        return all(e == c or (math.isnan(e) and math.isnan(c)) for e, c in zip(self.eager, self.compiled))

    def _table(self):
        rows = [(f"{v:g}", f"{e:g}", f"{c:g}") for v, e, c in zip(self.values, self.eager, self.compiled)]
        title = f"fp32 -> float8_e4m3fn on torch {torch.__version__.split('+')[0]}"
        return ("value", "eager cast", "compiled cast"), rows, title, ()


def fp8_saturation(values=(448.0, 500.0, 1e5, float("inf"))) -> Fp8Saturation:
    """Cast ``values`` (fp32) to ``float8_e4m3fn`` eagerly and in a compiled function, on this torch and CPU.

    Returns the :class:`Fp8Saturation`: what each cast gives back (448 where it saturates, NaN where it does not)
    and the compile time. Raises :class:`InductorUnavailable` when no C++ compiler is installed."""
    if isinstance(values, torch.Tensor):
        values = values.tolist()
    if not isinstance(values, (tuple, list)) or not values or not all(isinstance(v, (int, float)) for v in values):
        raise TypeError(f"values must be a non-empty list of numbers, got {values!r}")
    count(len(values), "len(values)", 1, 1000, "values cast")
    _require_inductor()
    x = torch.tensor([float(v) for v in values], dtype=torch.float32)
    eager = _to_e4m3(x)
    with _inductor_settings(False):
        fn = torch.compile(functools.partial(_to_e4m3), dynamic=False)
        t0 = time.perf_counter()
        compiled = fn(x)
        seconds = time.perf_counter() - t0
    return Fp8Saturation(tuple(x.tolist()), tuple(eager.tolist()), tuple(compiled.tolist()), seconds)
