"""Lesson 11, ``torch.compile`` and mixed precision, on the CPU (Inductor generates C++): the casts eager autocast
runs (:func:`eager_casts`), the graphs Dynamo and AOTAutograd capture (:func:`captured_graph`), the code Inductor
generates (:func:`compile_workload`, :func:`summarize_code`), compiled bf16 numerics against eager and fp64
(:func:`precision_errors`) and step times (:func:`step_times`). Compiling is slow on a small CPU: the functions take
a compiled result and reuse it."""

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

WORKLOADS = ("mlp", "chain")
"""The functions the lesson compiles (:func:`workload`): ``"mlp"``, a SwiGLU block under bf16 autocast,
``rms_norm(silu(x @ w_gate) * (x @ w_up))``; ``"chain"``, its pointwise chain alone on bf16 tensors,
``rms_norm(silu(g) * h)``."""

MAX_ROWS = 4096
MAX_WIDTH = 1024


class InductorUnavailable(RuntimeError):
    """Inductor cannot compile here (no C++ compiler); the message says what to install."""


def inductor_status() -> tuple[bool, str]:
    """Whether Inductor's CPU backend can run here, and a sentence saying why (the C++ compiler it found, or
    what to install)."""
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
    """Keep what torch logs in the block (``torch._logging.set_logs(...)`` inside it, Dynamo's warnings) in the
    yielded list of lines, without torch's prefix, instead of on stderr; torch's default logging is back after."""
    import io

    lines: list = []
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stderr(buffer):
            torch._logging.set_logs()  # handlers made again, writing to the buffer
            yield lines
    finally:
        torch._logging.set_logs()
        lines += [_LOG_PREFIX.sub("", line) for line in buffer.getvalue().splitlines()]


def import_inductor():
    with warnings.catch_warnings():  # torch.utils.mkldnn's TorchScript deprecation warning: torch's, not the learner's
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._inductor.compile_fx
        import torch._inductor.config
    return torch._inductor.compile_fx, torch._inductor.config


def _require_inductor() -> None:
    ok, why = inductor_status()
    if not ok:
        raise InductorUnavailable(why)
    import_inductor()


def _check_workload(name) -> str:
    if name not in WORKLOADS:
        raise ValueError(f"name={name!r} is not allowed: a workload, one of {', '.join(map(repr, WORKLOADS))}")
    return name


def workload(name: str, *, autocast: bool = True):
    """The function of workload ``name`` (one of :data:`WORKLOADS`); ``autocast=False``: the same in fp32."""
    if name == "chain":
        return key_code.chain
    out = functools.partial(key_code.mlp, autocast=autocast)
    out.__name__ = f"{name}_{'autocast' if autocast else 'fp32'}"
    return out


def make_inputs(name: str, seed: int = 0, *, rows: int = 32, width: int = 64) -> tuple:
    """Random inputs of workload ``name``: fp32 ``rows`` x ``width`` activations and ``width`` x ``2*width`` weights
    scaled by ``1/sqrt(width)``; ``"chain"`` gets bf16 ``h`` and ``g`` of ``rows`` x ``2*width``."""
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
    return randn(rows, width), randn(width, hidden) / math.sqrt(width), randn(width, hidden) / math.sqrt(width)


@dataclass(frozen=True)
class EagerCasts:
    """What eager mode ran: ``ops`` ATen ops, of which ``casts`` changed a dtype and ``bf16_outputs`` wrote a bf16
    result (casts to bf16 included)."""

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
    """Run workload ``name`` eagerly under lesson 04's tracer and count its casts and bf16 outputs. ``inputs``:
    from :func:`make_inputs` (the default)."""
    name = _check_workload(name)
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    with torch.no_grad():
        t = trace(workload(name), *args, device_type="cpu", dtype=LOW)
    ops = tuple(op.name for op in t.ops)
    bf16 = sum(LOW in op.out_dtypes for op in t.ops)
    return EagerCasts(name, ops, len(t.casts), bf16)


def _check_inputs(inputs, name: str) -> tuple:
    """``inputs`` checked to be workload ``name``'s: its number of float tensors, on which it runs eagerly."""
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
    Inductor (``aten``; ``casts``: its cast nodes)."""

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
    """Trace workload ``name`` with Dynamo and AOTAutograd only (no Inductor: fast) and return both graphs, kept
    by two of lesson 11's ``GraphRecorder``. ``inputs``: from :func:`make_inputs` (the default)."""
    from torch._dynamo.backends.common import aot_autograd

    name = _check_workload(name)
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    import_inductor()
    aten = GraphRecorder()
    dynamo = GraphRecorder(then=aot_autograd(fw_compiler=aten))
    torch._dynamo.reset()  # trace afresh, whatever was compiled before
    try:
        with torch.no_grad():
            torch.compile(workload(name), backend=dynamo, dynamic=False)(*args)
    finally:
        torch._dynamo.reset()
    return CapturedGraph(name, _graph_lines(dynamo.graphs[0]), _graph_lines(aten.graphs[0]), len(dynamo.graphs))


_KERNEL = re.compile(r"^(\w+) = async_compile\.cpp_pybinding\(\[([^\]]*)\]", re.M)
_EXTERN = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.\w+\.\w+(?:\.\w+)?)\(")
_CONVERT = re.compile(r"\bconvert<|static_cast<(?:at::BFloat16|float|bfloat16)>")


@dataclass(frozen=True)
class CodeSummary:
    """What Inductor generated for one graph, counted from its code: ``kernels`` the generated C++ kernels' names,
    ``library_calls`` calls to ATen/oneDNN kernels, ``bf16_writes`` / ``fp32_writes`` the tensors the kernels write
    in each dtype, ``conversions`` dtype conversions in the C++ source (this one depends on the CPU)."""

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
    """The :class:`CodeSummary` of Inductor's generated CPU code (the Python wrapper with its C++ kernels)."""
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
    """A workload compiled by Inductor: ``fn``, the ``output`` of its first call, the generated ``code`` and its
    :class:`CodeSummary`, and ``compile_seconds`` (how long the first call took)."""

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

    # compile_threads=1: on a small machine a pool of compile workers costs seconds and saves nothing
    with ic.patch(emulate_precision_casts=emulate, compile_threads=1):
        yield


def compile_workload(
    name: str, inputs: tuple | None = None, *, autocast: bool = True, emulate_precision_casts: bool = False
) -> CompiledWorkload:
    """Compile workload ``name`` with ``torch.compile(dynamic=False)`` (Inductor), run it once on ``inputs``
    (default: :func:`make_inputs`) and keep the generated code. ``emulate_precision_casts=True``: Inductor rounds to
    bf16 wherever eager mode would. Raises :class:`InductorUnavailable` without a C++ compiler."""
    from torch._inductor.utils import run_and_get_code

    name = _check_workload(name)
    flag(autocast, "autocast")
    flag(emulate_precision_casts, "emulate_precision_casts")
    args = make_inputs(name) if inputs is None else _check_inputs(inputs, name)
    _require_inductor()
    fn = workload(name, autocast=autocast)
    with _inductor_settings(emulate_precision_casts):
        # a fresh function object: Dynamo caches per code object and does not guard on Inductor's settings
        compiled = torch.compile(functools.partial(fn), dynamic=False)
        t0 = time.perf_counter()
        with torch.no_grad():
            out, codes = run_and_get_code(compiled, *args)
        seconds = time.perf_counter() - t0
    if emulate_precision_casts:
        # a later call may compile again: keep the setting for that compile
        plain = compiled

        def compiled(*a):
            with _inductor_settings(True):
                return plain(*a)

    return CompiledWorkload(name, autocast, emulate_precision_casts, compiled, args, out, "\n".join(codes), seconds)


def _reference(name: str, args: tuple) -> torch.Tensor:
    """The workload in fp64 on its inputs rounded to bf16 (as autocast casts them)."""
    if name == "chain":
        return key_code.chain(*(a.double() for a in args))
    return key_code.mlp(*(a.to(LOW).double() for a in args), autocast=False)


@dataclass(frozen=True)
class RunErrors:
    """One run's output against fp64 (``max_error``, ``mean_error``: element-wise relative) and against eager
    (``equals_eager`` bit for bit, ``ulps_from_eager`` the largest difference in bf16 ulps, ``fraction_differing``)."""

    max_error: float
    mean_error: float
    equals_eager: bool
    ulps_from_eager: float
    fraction_differing: float


@dataclass(frozen=True, repr=False)
class PrecisionErrors(TableRecord):
    """The errors of :func:`precision_errors`: a :class:`RunErrors` for ``eager``, ``compiled`` and ``emulated``
    (None when not given); :attr:`runs` holds those present by name. Shown as a table."""

    workload: str
    eager: RunErrors
    compiled: RunErrors
    emulated: RunErrors | None = None

    @property
    def runs(self) -> dict[str, RunErrors]:
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
    """The :class:`PrecisionErrors` of eager mode, ``compiled`` and (if given) ``emulated`` on ``compiled``'s
    inputs, against fp64 and against eager. ``emulated``: the same workload compiled with
    ``emulate_precision_casts=True``, or the output tensor of such a function on ``compiled.inputs``."""
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
        rel = (out.double() - ref).abs() / ref.abs().clamp_min(torch.finfo(torch.float64).tiny)
        return RunErrors(
            float(rel.max()),
            float(rel.mean()),
            equals_eager=bool(torch.equal(out, eager)),
            ulps_from_eager=ulps(out),
            fraction_differing=float((out != eager).double().mean()),
        )

    return PrecisionErrors(name, run(eager), run(compiled.output), None if emul_out is None else run(emul_out))


def step_times(compiled_autocast: CompiledWorkload, compiled_fp32: CompiledWorkload, *, repeats: int = 20) -> dict:
    """Time of one call of the workload, eager and compiled, fp32 and bf16 autocast (``repeats`` runs of about
    1 ms blocks of calls; compile time excluded): ``{"eager fp32": Timing, "eager autocast": ..., "compiled fp32":
    ..., "compiled autocast": ...}``."""
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
    # one thread, 1 ms blocks: on a busy small machine a descheduled thread would dominate calls of microseconds
    with torch.no_grad(), one_thread():
        for label, fn in fns.items():
            out[label] = timing.time_fn(functools.partial(fn, *args), warmup=3, repeats=repeats, block_s=1e-3)
    return out


def _to_e4m3(x):
    return x.to(torch.float8_e4m3fn).float()


@dataclass(frozen=True, repr=False)
class Fp8Saturation(TableRecord):
    """What :func:`fp8_saturation`'s casts to ``float8_e4m3fn`` gave back for ``values``, ``eager`` and ``compiled``
    (448 where it saturates, NaN where not), and ``compile_seconds``. Shown as a table."""

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
    """Cast ``values`` (fp32) to ``float8_e4m3fn`` eagerly and compiled, on this torch and CPU: the
    :class:`Fp8Saturation`. Raises :class:`InductorUnavailable` without a C++ compiler."""
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
