"""A learner's typos against the public API: every public callable of ``amp_lessons``, called on an otherwise
valid small call with one argument at a time replaced by a bad value of its kind, and each answer classified.

- ``clear``: a TypeError or ValueError whose message names the argument (or quotes the bad value) and what is
  allowed: the answer the course promises;
- ``unclear``: any other exception, or a message that names neither;
- ``silent``: the call returned: the bad value was accepted;
- ``slow``: still running after ``LIMIT_S`` (a hang in a kernel with a slider), and again after five times as
  long (so that a machine busy with parallel tests is not taken for a hang).

Checkers (``check_*``) must not raise at all on a learner's answer: for their answer parameter every value is
"bad" and the only good outcome is a returned :class:`amp_lessons.checks.CheckResult`.

Run ``python -m tests.api_contract`` for a report by kind and by callable; the test in
``tests/test_api_contract.py`` holds the counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import signal
import sys
import types
import warnings
from collections import Counter

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from amp_lessons.course import TOPICS as COURSE_TOPICS  # noqa: E402

MODULES = ["formats", "device", "course", "timing", "style", "checks", "reference"]
TOPICS = list(COURSE_TOPICS)  # the course's lesson registry
LIMIT_S = 2.0

# Parameters whose bad values are drawn from a kind (by name). Names not listed get a kind from their default.
COUNT_NAMES = {
    "n", "m", "k", "n_steps", "steps", "repeats", "warmup", "size", "batch", "seq_len", "vocab", "n_layers",
    "in_features", "out_features", "speed_size", "max_fp16_cpu_size", "threads",
}  # fmt: skip
SEED_NAMES = {"seed"}
DEVICE_NAMES = {"device"}
DEVICE_TYPE_NAMES = {"device_type"}
FORMAT_NAMES = {"fmt", "acc_fmt", "fwd_fmt", "bwd_fmt", "low", "high"}
FREE_TEXT = {"name", "label", "title", "text", "what", "caption", "command", "source", "header", "limit_label",
             "lesson", "mode", "detail", "summary", "notebook", "experiment", "device_name", "machine", "shape",
             "setting", "dtype_key", "method", "kind", "how", "phase", "arch", "torch", "cuda", "date", "end",
             "chrome_trace", "python_version", "torch_version", "capability", "start", "minus"}  # fmt: skip


@dataclasses.dataclass
class Outcome:
    callable: str
    argument: str
    value: str
    kind: str  # clear, unclear, silent, slow, raised (a checker raised), harness
    detail: str = ""


class _Slow(BaseException):
    pass


@contextlib.contextmanager
def _time_limit(seconds: float):
    def handler(signum, frame):
        raise _Slow()

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def public_callables() -> dict[str, object]:
    out = {}
    for m in MODULES + TOPICS:
        try:
            mod = importlib.import_module(f"amp_lessons.{m}")
        except ModuleNotFoundError:
            continue
        for n in getattr(mod, "__all__", []):
            o = getattr(mod, n)
            if isinstance(o, types.ModuleType) or not callable(o) or isinstance(o, torch.dtype):
                continue
            try:
                inspect.signature(o)
            except (TypeError, ValueError):
                continue
            out.setdefault(f"{m}.{n}", o)
    return out


@functools.lru_cache(maxsize=None)
def _census():
    from amp_lessons import scaling

    return scaling.small_loss_census()


def _model():
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _valid_value(name: str, qualname: str):
    """A small valid value for a required parameter, by name (None: unknown)."""
    from amp_lessons import formats

    table = {
        "x": lambda: torch.randn(8, 16),
        "a": lambda: torch.randn(8, 16),
        "b": lambda: torch.randn(16, 8),
        "values": lambda: torch.randn(16),
        "weights": lambda: torch.ones(8),
        "updates": lambda: torch.full((8,), 1e-4),
        "fmt": lambda: "fp16",
        "fmt_names": lambda: ["fp16", "bf16"],
        "f": lambda: formats.get_format("fp16"),
        "rounding": lambda: "nearest_even",
        "code": lambda: 60,
        "sign": lambda: 0,
        "exponent": lambda: 15,
        "mantissa": lambda: 0,
        "value": lambda: 0.1,
        "v": lambda: 1.0,
        "n": lambda: 8,
        "m": lambda: 8,
        "k": lambda: 8,
        "size": lambda: 16,
        "n_steps": lambda: 10,
        "inf_steps": lambda: (2,),
        "census": _census,
        "fn": lambda: lambda *a, **k: 0.0,
        "answer": lambda: 0,
        "answers": lambda: {},
        "predictions": lambda: {},
        "fix": lambda: lambda m: m,
        "device_type": lambda: "cpu",
        "op_name": lambda: "mm",
        "model": _model,
        "inputs": lambda: torch.randn(4, 8),
        "batch": lambda: (torch.randn(4, 8), torch.randint(0, 2, (4,))),
        "loss_fn": lambda: lambda out, *rest: out.float().pow(2).mean(),
        "tensors": lambda: {"t": torch.randn(4, 128)},
        "scale": lambda: 1024.0,
        "weight": lambda: 1.0,
        "update": lambda: 1e-4,
        "low": lambda: 1e-6,
        "high": lambda: 1e6,
        "lo": lambda: 1.0,
        "hi": lambda: 2.0,
        "max_rel_error": lambda: 0.01,
        "ks": lambda: [16, 64],
        "sizes": lambda: [16],
        "config": lambda: "fp32",
        "name": lambda: "NVIDIA H100 80GB HBM3",
        "dtype_key": lambda: "bf16",
        "experiment": lambda: "tf32_matmul",
        "this_machine": lambda: {"x": 1.0},
        "label": lambda: "measured here",
        "s": lambda: 0.001,
        "seed": lambda: 0,
        "in_features": lambda: 8,
        "out_features": lambda: 4,
        "module": lambda: torch.nn.Linear(4, 4),
        "obj": lambda: torch.randn(2),
        "report": lambda: importlib.import_module("amp_lessons.device").device_report(),
    }
    by_callable = {
        "formats.FloatFormat": {"name": lambda: "e5m2x", "exponent_bits": lambda: 5, "mantissa_bits": lambda: 2},
        "device.GPUInfo": {"name": lambda: "NVIDIA H100", "capability": lambda: (9, 0), "memory_bytes": lambda: 2**36},
        "device.CPUInfo": {
            "name": lambda: "x",
            "arch": lambda: "x86_64",
            "capability": lambda: "AVX2",
            "threads": lambda: 2,
        },
        "e2e.make_batches": {
            "seed": lambda: 0,
            "n": lambda: 2,
            "batch": lambda: 2,
            "seq_len": lambda: 4,
            "vocab": lambda: 8,
        },
        "tf32.plot_error_vs_k": {"data": lambda: importlib.import_module("amp_lessons.tf32").error_vs_k([16, 64])},
        "tf32.plot_matmul_errors": {
            "errors": lambda: importlib.import_module("amp_lessons.tf32").matmul_errors(8, 8, 8)
        },
        "fp16.plot_running_sums": {
            "values_by_label": lambda: importlib.import_module("amp_lessons.fp16").running_sums_of_copies(1.0, 8)
        },
        "scaling.plot_scaler_history": {
            "history": lambda: importlib.import_module("amp_lessons.scaling").simulate_scaler(10, (2,))
        },
        "scaling.plot_scale_sweep": {
            "sweep": lambda: importlib.import_module("amp_lessons.scaling").scale_sweep(_census())
        },
        "scaling.safe_window": {"sweep": lambda: importlib.import_module("amp_lessons.scaling").scale_sweep(_census())},
        **{f"compiled.{f}": {"name": lambda: "chain"} for f in ("workload", "make_inputs", "compile_workload")},
        "compiled.plot_errors": {"errors": lambda: {"eager": (1e-2, 1e-3), "compiled": (1e-2, 1e-3)}},
        "compiled.plot_step_times": {
            "times": lambda: {
                "eager fp32": importlib.import_module("amp_lessons.timing").time_fn(lambda: None, repeats=1)
            }
        },
        "compiled.EagerCasts": {
            "workload": lambda: "chain",
            "ops": lambda: ("mul",),
            "casts": lambda: 0,
            "bf16_outputs": lambda: 1,
        },
        "compiled.CodeSummary": {
            "kernels": lambda: (),
            "library_calls": lambda: (),
            "bf16_writes": lambda: 0,
            "fp32_writes": lambda: 0,
            "conversions": lambda: 0,
        },
        "compiled.CapturedGraph": {
            "workload": lambda: "chain",
            "dynamo": lambda: (),
            "aten": lambda: (),
            "graphs": lambda: 1,
        },
        "distributed.ring_sum": {"grads": lambda: torch.randn(4, 16)},
        "distributed.pairwise_sum": {"grads": lambda: torch.randn(4, 16)},
        "micro.kahan_add": {
            "w": lambda: torch.ones(8),
            "c": lambda: torch.zeros(8),
            "update": lambda: torch.full((8,), 1e-4),
        },
        "micro.mx_scale_exponents": {"amax": lambda: torch.tensor([1.0, 300.0, 1e-3])},
        **{
            f"micro.{f}": {"recipe": lambda: "per-tensor current", "kind": lambda: "gradient"}
            for f in ("recipe_quantize", "recipe_table", "recipe_tensor")
        },
        "micro.recipe_stats": {"x": lambda: torch.randn(64), "q": lambda: torch.randn(64)},
        "micro.check_sr_probability": {"p": lambda: 0.5},
        "checks.CheckResult": {"ok": lambda: False, "message": lambda: "not yet"},
        "checks.off_by": {"got": lambda: 2.0, "want": lambda: 1.0},
        "checks.same_value": {"got": lambda: 1.0, "want": lambda: 1.0},
        "e2e.amp_step": {
            "model": _model,
            "optimizer": lambda: torch.optim.SGD(_model().parameters(), lr=0.1),
            "config": lambda: "fp32",
            "device_type": lambda: "cpu",
        },
        "debug.tensor_stats": {"tensors": lambda: [torch.randn(8)], "formats": lambda: ("fp16",)},
        "debug.plot_trace": {
            "trace": lambda: (d := importlib.import_module("amp_lessons.debug")).trace_overflow(
                d.t5_like_model(), (torch.randn(2, 16),)
            )
        },
        "reference.save": {"records": lambda: [], "path": lambda: None},
        "fp8.block_scale_map": {
            "x": lambda: torch.randn(4, 8),
            "f": lambda: formats.get_format("fp8_e4m3"),
            "br": lambda: 1,
            "bc": lambda: 4,
        },
    }
    if qualname in by_callable:
        return by_callable[qualname][name]() if name in by_callable[qualname] else None
    return table[name]() if name in table else None


_SKIP = object()


# Result records: dataclasses the course's functions build and return, whose constructors a learner does not
# call (they hold a result; their fields are typed and filled by the course). Those a learner does build
# (CheckResult, GPUInfo, CPUInfo, FloatFormat, ...) have valid calls above and are probed.
def is_result_record(qualname: str, fn) -> bool:
    return dataclasses.is_dataclass(fn) and isinstance(fn, type) and qualname not in _BUILT_BY_LEARNERS


_BUILT_BY_LEARNERS = {"checks.CheckResult", "device.GPUInfo", "device.CPUInfo", "formats.FloatFormat"}


def valid_call(qualname: str, fn) -> tuple[tuple, dict] | None:
    """Positional and keyword arguments of a small valid call, or None if the harness has none."""
    args, kwargs = [], {}
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is not p.empty:
            continue
        v = _valid_value(p.name, qualname)
        if v is None:
            return None
        if p.kind == p.KEYWORD_ONLY:
            kwargs[p.name] = v
        else:
            args.append(v)
    return tuple(args), kwargs


def _kind(p: inspect.Parameter) -> str | None:
    name, d = p.name, p.default
    if name in SEED_NAMES:
        return "seed"
    if name in DEVICE_NAMES:
        return "device"
    if name in DEVICE_TYPE_NAMES:
        return "device_type"
    if name in FORMAT_NAMES:
        return (
            "format"
            if (d is p.empty or isinstance(d, str)) and name not in ("low", "high") or isinstance(d, str)
            else None
        )
    if name in COUNT_NAMES:
        return "count"
    if name in FREE_TEXT:
        return None
    if isinstance(d, bool):
        return "bool"
    if isinstance(d, int):
        return "int"
    if isinstance(d, float):
        return "float"
    if name == "rounding":
        return "choice"
    return None


# Calls whose acceptance of a value the harness calls bad is right, with the reason.
ALLOWED = {
    ("timing.matmul_flops", "m"): "arithmetic on a hypothetical matmul's size: no work is done",
    ("timing.matmul_flops", "k"): "arithmetic on a hypothetical matmul's size: no work is done",
    ("timing.matmul_flops", "n"): "arithmetic on a hypothetical matmul's size: no work is done",
}

BAD = {
    "seed": ["x", 1.5, True, -1],
    "device": ["tpu", 3],
    "device_type": ["tpu", 3],
    "format": ["fp12", 3],
    "count": [True, 1.5, "x", -1, 10**12],
    "bool": ["no", 2],
    "int": [True, 1.5, "x"],
    "float": ["x", None],
    "choice": ["sideways", 3],
}


def _clear(exc: BaseException, name: str, value) -> bool:
    if not isinstance(exc, (TypeError, ValueError)):
        return False
    msg = str(exc)
    return name in msg or repr(value) in msg or (isinstance(value, str) and value in msg)


def probe(qualname: str, fn) -> list[Outcome]:
    call = valid_call(qualname, fn)
    if call is None and is_result_record(qualname, fn):
        return [Outcome(qualname, "", "", "record", "a result record, built by the course")]
    if call is None:
        return [Outcome(qualname, "", "", "harness", "no valid call known")]
    args, kwargs = call
    is_checker = qualname.split(".")[-1].startswith("check_")
    out = []
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    for i, p in enumerate(params):
        kind = _kind(p)
        if kind is None:
            continue
        if (qualname, p.name) in ALLOWED:
            continue
        for bad in BAD[kind]:
            a, kw = list(args), dict(kwargs)
            if p.kind == p.KEYWORD_ONLY or (p.default is not p.empty and i >= len(a)):
                kw[p.name] = bad
            else:
                a[i] = bad
            o = _run(qualname, fn, a, kw, p.name, bad, is_checker)
            if o.kind == "slow":  # a busy machine (parallel tests) can slow anything: look again, longer
                o = _run(qualname, fn, a, kw, p.name, bad, is_checker, limit=5 * LIMIT_S)
            out.append(o)
    return out


def _run(qualname, fn, args, kwargs, name, bad, is_checker=False, limit=LIMIT_S) -> Outcome:
    try:
        with warnings.catch_warnings(), _time_limit(limit), torch.random.fork_rng(devices=[]):
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except _Slow:
        return Outcome(qualname, name, repr(bad), "slow", f"still running after {limit} s")
    except Exception as e:  # noqa: BLE001 - every exception is classified
        kind = "clear" if _clear(e, name, bad) else "unclear"
        return Outcome(qualname, name, repr(bad), kind, f"{type(e).__name__}: {str(e)[:160]}")
    finally:
        plt.close("all")
    return Outcome(qualname, name, repr(bad), "silent", "returned")


def probe_all() -> list[Outcome]:
    out = []
    for q, fn in sorted(public_callables().items()):
        out += probe(q, fn)
    return out


def report(outcomes: list[Outcome]) -> str:
    counts = Counter(o.kind for o in outcomes)
    lines = [f"{len(outcomes)} calls: " + ", ".join(f"{k} {v}" for k, v in counts.most_common())]
    for o in outcomes:
        if o.kind != "clear":
            lines.append(f"  {o.kind:8} {o.callable}({o.argument}={o.value})  {o.detail}")
    return "\n".join(lines)


if __name__ == "__main__":
    results = probe_all()
    print(report(results))
    sys.exit(0)
