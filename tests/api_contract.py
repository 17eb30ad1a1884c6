"""A learner's typos against the public API: every public callable of ``amp_lessons``, called on a small valid
call with one argument at a time replaced by a bad value of its kind, and each answer classified: ``clear`` (a
TypeError or ValueError raised by the course, naming the argument or quoting the value, and what is allowed),
``unclear`` (anything else), ``silent`` (the call returned), ``slow`` (still running after ``LIMIT_S``, and again
after five times as long), ``huge`` (peak memory grew by more than :data:`HUGE_BYTES`). Checkers (``check_*``) must
answer any answer with a CheckResult. Bad values come from a parameter's name, annotation and default and from its
valid value's type, plus :data:`EXTRA`, the bad calls only one callable can have.

``python -m tests.api_contract`` prints a report; ``tests/test_api_contract.py`` holds the counts.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import inspect
import math
import os
import re
import resource
import signal
import sys
import types
import warnings
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import torch  # noqa: E402

from amp_lessons.lessons import TOPICS as COURSE_TOPICS  # noqa: E402
from tests.load import patience  # noqa: E402

MODULES = ["", "formats", "device", "course", "lessons", "timing", "style", "checks", "reference"]  # "": the package
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
             "chrome_trace", "python_version", "torch_version", "capability", "start", "minus", "description",
             "arch_name", "encoding"}  # fmt: skip


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
    """Every public callable named in an ``__all__`` of the base modules, of each topic of the lesson registry and
    of ``amp_lessons`` itself, once (a name re-exported elsewhere is the same object, probed under its first name).
    A topic that does not import is an error, not a topic skipped."""
    out, seen = {}, set()
    for m in MODULES[1:] + TOPICS + MODULES[:1]:
        mod = importlib.import_module(f"amp_lessons.{m}" if m else "amp_lessons")
        for n in getattr(mod, "__all__", []):
            o = getattr(mod, n)
            if isinstance(o, types.ModuleType) or not callable(o) or isinstance(o, torch.dtype) or id(o) in seen:
                continue
            seen.add(id(o))
            out[f"{m or 'amp_lessons'}.{n}"] = o
    return out


@functools.lru_cache(maxsize=None)
def _census():
    from amp_lessons import scaling

    return scaling.small_loss_census()


def _loss_fn(out, *rest):
    return out.float().pow(2).mean()


def _fake_compiled(autocast: bool = True):
    """A CompiledWorkload of the eager chain workload (no compilation: the harness only needs its type)."""
    from tests.faces import internals

    compiled = internals("compiled")

    inputs = compiled.make_inputs("chain", rows=4, width=8)
    fn = compiled.workload("chain")
    return compiled.CompiledWorkload("chain", autocast, False, fn, inputs, fn(*inputs), "", 0.0)


def _model():
    return torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


def _m(name: str):
    return importlib.import_module(f"amp_lessons.{name}")


def _valid_value(name: str, qualname: str):
    """A small valid value for a required parameter, by name (None: unknown)."""
    from amp_lessons import formats

    # fmt: off
    table = {
        "x": lambda: torch.randn(8, 16), "a": lambda: torch.randn(8, 16), "b": lambda: torch.randn(16, 8),
        "values": lambda: torch.randn(16), "fmt": lambda: "fp16", "fmt_names": lambda: ["fp16", "bf16"],
        "f": lambda: formats.get_format("fp16"), "rounding": lambda: "nearest_even", "code": lambda: 60,
        "sign": lambda: 0, "exponent": lambda: 15, "mantissa": lambda: 0, "v": lambda: 1.0, "n": lambda: 8,
        "m": lambda: 8, "k": lambda: 8, "size": lambda: 16, "n_steps": lambda: 10, "census": _census,
        "fn": lambda: lambda *a, **k: 0.0, "answer": lambda: 0, "answers": lambda: {}, "predictions": lambda: {},
        "fix": lambda: lambda m: m, "device_type": lambda: "cpu", "op_name": lambda: "mm", "model": _model,
        "inputs": lambda: torch.randn(4, 8), "loss_fn": lambda: lambda out, *rest: out.float().pow(2).mean(),
        "tensors": lambda: {"t": torch.randn(4, 128)}, "weight": lambda: 1.0, "update": lambda: 1e-4,
        "low": lambda: 1e-6, "high": lambda: 1e6, "lo": lambda: 1.0, "hi": lambda: 2.0, "max_rel_error": lambda: 0.01,
        "ks": lambda: [16, 64], "sizes": lambda: [16], "config": lambda: "fp32",
        "name": lambda: "NVIDIA H100 80GB HBM3", "dtype_key": lambda: "bf16", "experiment": lambda: "tf32_matmul",
        "this_machine": lambda: {"x": 1.0}, "label": lambda: "measured here", "s": lambda: 0.001,
        "in_features": lambda: 8, "out_features": lambda: 4, "module": lambda: torch.nn.Linear(4, 4),
        "obj": lambda: torch.randn(2), "report": lambda: _m("device").device_report(), "feature": lambda: "fp8",
        "no_gpu": lambda: "no CUDA GPU", "record": lambda: _m("reference").find("fp8_cast_costs", published=False)[0],
    }
    # fmt: on
    # fmt: off
    by_callable = {
        "amp_lessons.table": {"header": lambda: ("a", "b"), "rows": lambda: [["1", "2"], ["3", "4"]]},
        "style.explorer_figsize": {"figsize": lambda: (6.0, 3.0)},
        "style.fit_colors": {"fig": lambda: plt.figure()},
        "style.recolor": {"fig": lambda: plt.figure(), "theme": lambda: "dark"},
        "formats.FloatFormat": {"name": lambda: "e5m2x", "exponent_bits": lambda: 5, "mantissa_bits": lambda: 2},
        "device.GPUInfo": {"name": lambda: "NVIDIA H100", "capability": lambda: (9, 0), "memory_bytes": lambda: 2**36},
        "device.CPUInfo": {"name": lambda: "x", "arch": lambda: "x86_64", "capability": lambda: "AVX2",
                           "threads": lambda: 2},
        "tf32.plot_error_vs_k": {"data": lambda: _m("tf32").error_vs_k([16, 64])},
        "tf32.plot_matmul_errors": {"errors": lambda: _m("tf32").matmul_errors(8, 8, 8)},
        "fp16.plot_running_sums": {"values_by_label": lambda: _m("fp16").running_sums_of_copies(1.0, 8)},
        "scaling.plot_scaler_history": {"history": lambda: _m("scaling").simulate_scaler(10, (2,))},
        "scaling.plot_scale_sweep": {"sweep": lambda: _m("scaling").scale_sweep(_census())},
        "scaling.safe_window": {"sweep": lambda: _m("scaling").scale_sweep(_census())},
        **{f"compiled.{f}": {"name": lambda: "chain"}
           for f in ("make_inputs", "compile_workload", "captured_graph", "eager_casts")},
        "compiled.plot_errors": {"errors": lambda: {"eager": (1e-2, 1e-3), "compiled": (1e-2, 1e-3)}},
        "compiled.plot_step_times": {"times": lambda: {"eager fp32": _m("timing").time_fn(lambda: None, repeats=1)}},
        "compiled.precision_errors": {"compiled": lambda: _fake_compiled()},
        "compiled.step_times": {"compiled_autocast": lambda: _fake_compiled(),
                                "compiled_fp32": lambda: _fake_compiled(False)},
        "bits.plot_number_line": {"fmt": lambda: "fp8_e4m3"},
        "micro.mx_quantize": {"x": lambda: torch.randn(4, 64)},
        "micro.scale_rule_clipping": {"x": lambda: torch.randn(4, 64)},
        "autocast.output_dtypes": {"exprs": lambda: {"sum": lambda *a: torch.ones(2).sum()}},
        "distributed.observe_ddp_step": {"step": lambda: _m("distributed.key_code").ddp_amp_step},
        "distributed.observe_fsdp_step": {"step": lambda: _m("distributed.key_code").fsdp_step},
        "debug.why_not_faster": {"model": _model, "inputs": lambda: torch.randn(4, 8), "loss_fn": lambda: _loss_fn},
        "debug.dtype_map": {"model": _model, "inputs": lambda: torch.randn(4, 8), "loss_fn": lambda: _loss_fn},
        "distributed.ring_sum": {"grads": lambda: torch.randn(4, 16)},
        **{f"micro.{f}": {"kind": lambda: "gradient"} for f in ("recipe_table", "recipe_tensor")},
        "checks.off_by": {"got": lambda: 2.0, "want": lambda: 1.0},
        "checks.same_value": {"got": lambda: 1.0, "want": lambda: 1.0},
        "debug.plot_trace": {"trace": lambda: _m("debug").trace_overflow(_m("debug").t5_like_model(),
                                                                           (torch.randn(2, 16),))},
        "reference.save": {"records": lambda: _m("reference").load()[:1]},
    }
    # fmt: on
    if qualname in by_callable:
        return by_callable[qualname][name]() if name in by_callable[qualname] else None
    return table[name]() if name in table else None


_SKIP = object()

# Learner-facing classes a learner builds (probed with a valid call); every other public dataclass or class that a
# public function returns is a result record the course fills in (classified, and the classification checked).
_BUILT_BY_LEARNERS = {"device.GPUInfo", "device.CPUInfo", "formats.FloatFormat"}


def _returned_by_the_course(fn) -> bool:
    """Whether some public callable's return annotation names class ``fn``."""
    name = fn.__name__
    for other in public_callables().values():
        try:
            ret = inspect.signature(other).return_annotation
        except (TypeError, ValueError):
            continue
        if ret is fn or (isinstance(ret, str) and re.search(rf"\b{re.escape(name)}\b", ret)):
            return True
    return False


def is_result_record(qualname: str, fn) -> bool:
    """A result record: a class the course builds and returns (a dataclass, or a class some public function
    returns), whose constructor a learner does not call."""
    if not isinstance(fn, type) or qualname in _BUILT_BY_LEARNERS or issubclass(fn, BaseException):
        return False
    return dataclasses.is_dataclass(fn) or _returned_by_the_course(fn)


def is_picture(qualname: str, fn) -> bool:
    """A picture of a result: ``plot_*`` drawing a result of the course on ``ax`` and returning the Axes (its
    arguments are results the course built; the harness checks only that it is one)."""
    if not qualname.split(".")[-1].startswith("plot_") or not callable(fn):
        return False
    sig = inspect.signature(fn)
    return "ax" in sig.parameters and "Axes" in str(sig.return_annotation)


def is_exception(qualname: str, fn) -> bool:
    return isinstance(fn, type) and issubclass(fn, BaseException)


def classify(qualname: str, fn) -> str:
    """``probed`` (a valid call is known), ``record``, ``picture``, ``exception`` or ``uncovered``."""
    if is_exception(qualname, fn):
        return "exception"
    try:
        inspect.signature(fn)
    except (TypeError, ValueError):
        return "uncovered"
    if valid_call(qualname, fn) is not None:
        return "probed"
    for kind, test in (("record", is_result_record), ("picture", is_picture)):
        if test(qualname, fn):
            return kind
    return "uncovered"


def valid_call(qualname: str, fn) -> tuple[tuple, dict] | None:
    """Positional and keyword arguments of a small valid call, or None if the harness has none."""
    args, kwargs = [], {}
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    for p in sig.parameters.values():
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


# Names of int parameters that are sizes or counts (a size of 0, -1 or 10**12 is refused; see ZERO_ALLOWED)
COUNT_NAMES |= {
    "br", "bc", "rows", "width", "hidden", "blocks", "channels", "elements", "world_size", "d_model", "n_heads",
    "history_len", "kmax", "growth_interval", "break_every", "days", "block", "budget_steps", "max_exponent",
}  # fmt: skip
# Sizes where 0 is a valid value (no warm-up call), with the reason
ZERO_ALLOWED = {"warmup": "no warm-up call", "max_fp16_cpu_size": "no fp16 matmul on a CPU"}
# Real parameters that must be positive (a scale, a rate, a time budget, a tolerance)
POSITIVE_NAMES = {
    "scale", "lr", "budget_s", "timeout", "tolerance", "init_scale", "gain", "launch_ratio", "target_scale",
    "grad_scale", "growth_factor", "backoff_factor", "max_rel_error", "noise_scale",
}  # fmt: skip


def _kind(p: inspect.Parameter) -> str | None:
    """The kind of bad values a parameter gets, from its name, annotation and default."""
    name, d = p.name, p.default
    ann = p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")
    for names, kind in ((SEED_NAMES, "seed"), (DEVICE_NAMES, "device"), (DEVICE_TYPE_NAMES, "device_type")):
        if name in names:
            return kind
    if name in FORMAT_NAMES:
        return "format" if (d is p.empty and name not in ("low", "high")) or isinstance(d, str) else None
    if name in COUNT_NAMES and (isinstance(d, int) and not isinstance(d, bool) or (d is p.empty and ann == "int")):
        return "count"
    if name in FREE_TEXT:
        return None
    if isinstance(d, bool) or (d is p.empty and ann == "bool"):
        return "bool"
    if isinstance(d, int) or (d is p.empty and ann == "int"):
        return "int"
    if isinstance(d, float) or (d is p.empty and ann == "float"):
        return "positive" if name in POSITIVE_NAMES else "float"
    if name == "rounding":
        return "choice"
    if isinstance(d, str):
        return "text"
    return None


def _value_kind(value) -> str | None:
    """The kind of a required parameter's valid value: tensors, models, functions, mappings, course objects."""
    kinds = (
        (torch.Tensor, "tensor"),
        (torch.nn.Module, "module"),
        ((types.FunctionType, functools.partial), "function"),
    )
    for types_, kind in (*kinds, (dict, "mapping")):
        if isinstance(value, types_):
            return kind
    return "object" if type(value).__module__.startswith("amp_lessons") else None


HUGE = 10**12

# Calls whose acceptance of a value the harness calls bad is right, with the reason: (callable, parameter) for every
# bad value, (callable, parameter, repr(value)) for one.
# fmt: off
ALLOWED = {
    **{("timing.matmul_flops", p): "arithmetic on a hypothetical matmul's size: no work is done" for p in "mkn"},
    ("checks.call_learner", "fn"): "calls a learner's answer, whatever it is, and reports what went wrong",
    ("checks.same_value", "want"): "a checker's comparison: answers False, never raises",
    ("autocast.fake_cuda", "obj"): "moves what it can to the fake CUDA device and returns anything else unchanged",
    **{("bits.bit_explorer", "value", repr(v)): "a NaN or an infinity is a value to look at bit by bit"
       for v in (math.nan, math.inf, -math.inf)},
    ("fp8.values_in", "lo", "-inf"): "the count of values below hi: an infinite bound is a half line",
    ("fp8.values_in", "hi", "inf"): "the count of values above lo: an infinite bound is a half line",
    ("lessons.workshop_schedule", "break_every", "huge"): "a schedule's arithmetic: no break at all",
    **{(f"e2e.{q}", p, "inf"): "documented: math.inf means no time limit"
       for q, p in [(q, "budget_s") for q in ("inference_compare", "launch_bound_demo", "matmul_throughput",
                                               "odd_size_effect", "train", "training_plan")]
       + [("matmul_throughput", "total_budget_s")]},
    ("checks.is_placeholder", "answer"): "asks whether any answer is the untouched `...`: never raises",
    ("checks.off_by", "got"): "a checker's hint on any answer: never raises",
    ("checks.off_by", "want"): "a checker's hint: never raises",
    ("checks.same_value", "got"): "a checker's comparison of any answer: answers False, never raises",
    ("formats.FloatFormat", "description"): "free text shown with the format",
    ("formats.float32_input", "what"): "the name its errors give the tensor (free text)",
    **{("tf32.fp32_precision", p): "a context manager: the setting is checked when it is entered (`with ...`)"
       for p in ("matmul", "conv", "cpu_matmul")},
    ("tf32.check_tf32_matmul", "rounding"): "a learner's answer (their rounding function): answered with a CheckResult",
    ("scaling.simulate_scaler", "n_steps", "0"): "zero steps: the scale's empty history",
    **{("timing.format_seconds", "s", repr(v)): "a missing or unbounded time is printed as such (nan s, inf s)"
       for v in (math.nan, math.inf, -math.inf)},
}
# fmt: on

# fmt: off
BAD = {
    "seed": ["x", 1.5, True, -1], "device": ["tpu", 3], "device_type": ["tpu", 3], "format": ["fp12", 3],
    "count": [True, 1.5, "x", 0, -1, HUGE], "bool": ["no", 2], "int": [True, 1.5, "x"],
    "float": ["x", None, math.nan, math.inf, -math.inf], "positive": ["x", None, math.nan, math.inf, 0.0, -1.0],
    "choice": ["sideways", 3], "text": ["sideways", 3],
    "tensor": ["x", lambda: torch.ones(4, 16, dtype=torch.complex64)], "module": [3, "model"], "function": [3, "f"],
    "mapping": ["x", 3], "object": ["x", 3],
}
# fmt: on


def _t(*shape, dtype=torch.float32):
    return lambda: torch.randn(*shape).to(dtype)


PACKAGE_DATA = str(Path(__file__).resolve().parent.parent / "amp_lessons" / "data")  # a folder, not a file

# Bad calls that only one callable can have: wrong shapes, mismatched widths, NaN where a finite value is needed.
# Values are factories (called for each try) or plain values.
# fmt: off
EXTRA: dict[str, dict[str, list]] = {
    "lessons.what_runs_where": {"report": ["abc", 3, None]},
    "fp8.blockwise_fake_quantize": {"block": [(0, 128), (1,), "x", (HUGE, 1), (1.5, 2)]},
    "debug.trace_overflow": {"inputs": [lambda: (torch.randn(2, 7),), "x", lambda: ()]},
    "debug.why_not_faster": {"inputs": [lambda: (torch.randn(4, 7),), "x"], "batch_dim": [5, -3, "x", 1.5]},
    "debug.dtype_map": {"inputs": [lambda: (torch.randn(4, 7),), "x"]},
    **{f"compiled.{f}": {"inputs": [lambda: (torch.randn(2, 4),), lambda: (torch.randn(2, 3), torch.randn(5, 7)), "x"]}
       for f in ("captured_graph", "eager_casts", "compile_workload")},
    "micro.tiny_updates": {"start": [math.nan]},
    "tf32.emulated_matmul": {"a": [_t(8), _t(8, 7)], "b": [_t(7, 8), _t(16)]},
    "scaling.simulate_scaler": {"inf_steps": [(-1,), ("x",), 3]},
    # wrong answers that once came without an error: fractional or out-of-range bit fields, empty selections,
    # out-of-range fractions and steps, a folder for a file, a bare int for a generator or a device tuple
    "formats.compose": {"exponent": [2.5, True, [2.5], 32], "sign": [1.5, 2], "mantissa": [0.5, [0.5]]},
    "formats.get_format": {"fmt": [None]},
    "formats.quantize": {"fmt": [None], "rounding": ["stochastic"], "overflow": ["wrap"], "emulate": ["yes"],
                         "x": [lambda: torch.arange(3), lambda: torch.ones(2, dtype=torch.float64), [1.0]]},
    "formats.FloatFormat": {"exponent_bits": [9], "mantissa_bits": [24, 2.0], "encoding": ["posit"]},
    "formats.representable_values": {"fmt": ["fp32"]},
    "device.device_report": {"mps": ["Apple M2"], "no_gpu": ["yes"]},
    "device.GPUInfo": {"bf16_supported": ["yes"], "rocm": [1], "multiprocessors": [-1], "name": [""]},
    "timing.time_fn": {"block_s": [0, -1.0, math.nan, math.inf, 11.0, "1ms", True], "device": ["mps", "gpu", 0],
                       "dtype_key": ["float16"], "flops": [-1.0], "warmup": [-1], "fn": [42]},
    "formats.from_bits": {"code": [[1.5], True]},
    "reference.overview": {"path": [lambda: PACKAGE_DATA]},
    "reference.load": {"path": [lambda: PACKAGE_DATA]},
    "scaling.safe_window": {"max_underflow": [1.5, -0.1]},
    "scaling.compare_with_gradscaler": {"inf_steps": [[-1], [10**6]]},
    "scaling.scale_sweep": {"exponents": [[10**6], [-(10**6)]]},
    "micro.stochastic_round": {"generator": [0]},
    "micro.recipe_table": {"recipes": [[]]},
    "micro.train_low_precision": {"methods": [[]]},
    "autocast.output_dtypes": {"device_types": [()]},
    "fp8.scaling_errors": {"methods": [[]], "tensors": [lambda: {"e": torch.empty(0)}]},
    "e2e.train": {"model_kwargs": [{"a": 1}]},
    "e2e.matmul_throughput": {"dtypes": [[]]},
    "tf32.error_vs_k": {"fmts": [[]]},
    "tf32.matmul_errors": {"variants": [[]]},
    # a file written without any record; a schedule from a folder that is not there; cells that are not text
    "reference.save": {"records": [[]]},
    "lessons.workshop_schedule": {"notebooks_dir": ["/no/such/folder"], "start": ["9am", "25:00"],
                                  "lunch_minutes": [-5], "days": [3]},
    "amp_lessons.table": {"header": [[None, "b"]], "notes": [[None]]},
}
# fmt: on


def _topic_bad_calls() -> None:
    """Each topic's own bad calls (``BAD_CALLS`` in ``tests/<topic>/contract.py``, beside its checker rows)
    join :data:`EXTRA`."""
    for t in TOPICS:
        try:
            rows = getattr(importlib.import_module(f"tests.{t}.contract"), "BAD_CALLS", {})
        except ModuleNotFoundError as e:
            if e.name not in (f"tests.{t}", f"tests.{t}.contract"):
                raise
            continue
        for name, params in rows.items():
            for param, values in params.items():
                EXTRA.setdefault(f"{t}.{name}", {}).setdefault(param, []).extend(values)


_topic_bad_calls()


class Odd:
    """An object of no type any parameter takes: what a parameter that no kind covers gets."""

    def __repr__(self):
        return "<an odd object>"


def cases(qualname: str, fn) -> list[tuple[str, object]]:
    """(parameter, bad value or factory) for every bad call of ``qualname`` the harness tries."""
    call = valid_call(qualname, fn)
    if call is None:
        return []
    args, kwargs = call
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    valid = dict(zip([p.name for p in params], args)) | kwargs
    out = []
    for p in params:
        if (qualname, p.name) in ALLOWED:
            continue
        kind = _kind(p)
        if kind is None and p.default is p.empty:
            kind = _value_kind(valid.get(p.name))
        if kind is not None:
            bads = BAD[kind]
            if kind == "count" and p.name in ZERO_ALLOWED:
                bads = [b for b in bads if b != 0 or isinstance(b, bool)]
            out += [(p.name, b) for b in bads]
        out += [(p.name, b) for b in EXTRA.get(qualname, {}).get(p.name, [])]
        if not any(n == p.name for n, _ in out) and p.name != "ax" and not is_picture(qualname, fn):
            out.append((p.name, Odd()))  # a parameter no kind covers: an object of no type it takes
    return [(n, b) for n, b in out if callable(b) or not allowed(qualname, n, b)]


def allowed(qualname: str, name: str, value) -> bool:
    """Whether :data:`ALLOWED` says ``qualname`` may accept ``value`` for ``name`` ("huge": any int >= 10**9)."""
    if (qualname, name) in ALLOWED or (qualname, name, "huge") in ALLOWED and _is_huge(value):
        return True
    try:
        return (qualname, name, repr(value)) in ALLOWED
    except Exception:  # noqa: BLE001 - an odd repr
        return False


def probe(qualname: str, fn) -> list[Outcome]:
    kind = classify(qualname, fn)
    if kind != "probed":
        detail = {"uncovered": "no valid call known, and neither a record, a picture nor an exception"}.get(kind, kind)
        return [Outcome(qualname, "", "", "harness" if kind == "uncovered" else kind, detail)]
    args, kwargs = valid_call(qualname, fn)
    is_checker = qualname.split(".")[-1].startswith("check_")
    params = [p for p in inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    names = [p.name for p in params]
    tried = cases(qualname, fn)
    unprobed = [n for n in names if (qualname, n) not in ALLOWED and not any(t[0] == n for t in tried)]
    if is_checker:
        unprobed = unprobed[1:] if unprobed[:1] == names[:1] else unprobed  # the answer: the checker tests
    out = [Outcome(qualname, "", "", "probed", f"{len(tried)} bad calls; not probed: {', '.join(unprobed) or '-'}")]
    for name, bad in tried:
        if is_checker and name == names[0]:
            continue  # a checker's answer: tests/test_api_contract.py gives it any answer
        i = names.index(name)
        p = params[i]
        value = (
            bad() if callable(bad) and not isinstance(bad, type) and getattr(bad, "__name__", "") == "<lambda>" else bad
        )
        a, kw = list(args), dict(kwargs)
        if p.kind == p.KEYWORD_ONLY or (p.default is not p.empty and i >= len(a)):
            kw[name] = value
        else:
            a[i] = value
        o = _run(qualname, fn, a, kw, name, value, is_checker)
        if o.kind == "slow":  # a busy machine (parallel tests) can slow anything: look again, longer
            o = _run(qualname, fn, a, kw, name, value, is_checker, limit=5 * LIMIT_S)
        out.append(o)
    return out


# a refused call may not grow the peak memory by more than this; while a huge size's call runs, the address space is
# limited to what the process has plus 4 GiB, so a request the course failed to refuse fails in the allocator
HUGE_BYTES = 512 * 1024**2

_REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_COURSE_DIR = os.path.join(_REPO, "amp_lessons") + os.sep
ALLOWED_WORDS = (
    "must", "one of", "allowed", "expected", "at most", "at least", "only", "use ", "choose", "pass ", ">=", "<=",
    "in [", "in (", "should", "need", "between", "not ", "instead", "is a ", "takes", "give ", "accepts", "range",
)  # fmt: skip


def _raised_by_course(exc: BaseException, own_file: str | None = None) -> bool:
    """Whether the innermost frame of ``exc``'s traceback is the course's (or, for the harness's own tests, in
    the file that defines the callable probed)."""
    tb, last = exc.__traceback__, None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    if last is None:
        return False
    last = os.path.abspath(last)
    return last.startswith(_COURSE_DIR) or (own_file is not None and last == os.path.abspath(own_file))


def _clear(exc: BaseException, name: str, value) -> bool:
    if not isinstance(exc, (TypeError, ValueError)):
        return False
    msg = str(exc)
    try:
        quoted = repr(value) in msg or (isinstance(value, str) and value in msg)
    except Exception:  # noqa: BLE001 - a tensor's repr
        quoted = False
    named = name in msg or quoted
    return named and any(w in msg for w in ALLOWED_WORDS)


def _vm_bytes() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


@contextlib.contextmanager
def _memory_limit(headroom: int = 4 * 1024**3):
    vm = _vm_bytes()
    try:
        old = resource.getrlimit(resource.RLIMIT_AS)
    except (ValueError, OSError):
        old = None
    if not vm or old is None or (old[1] != resource.RLIM_INFINITY and old[1] < vm + headroom):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (vm + headroom, old[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, old)


def _peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _is_huge(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) >= 10**9
    if isinstance(value, (tuple, list)):
        return any(_is_huge(v) for v in value)
    return False


def _run(qualname, fn, args, kwargs, name, bad, is_checker=False, limit=LIMIT_S) -> Outcome:
    limit = round(patience(limit), 1)  # the idle machine's limit, stretched on a busy one (tests/load.py)
    huge = _is_huge(bad)
    peak = _peak_bytes()
    try:
        with (
            warnings.catch_warnings(),
            _time_limit(limit),
            torch.random.fork_rng(devices=[]),
            _memory_limit() if huge else contextlib.nullcontext(),
        ):
            warnings.simplefilter("ignore")
            fn(*args, **kwargs)
    except _Slow:
        return Outcome(qualname, name, _short(bad), "slow", f"still running after {limit} s")
    except Exception as e:  # noqa: BLE001 - every exception is classified
        grown = _peak_bytes() - peak
        if isinstance(e, MemoryError) or "can't allocate" in str(e) or grown > HUGE_BYTES:
            return Outcome(qualname, name, _short(bad), "huge", f"tried to allocate: {type(e).__name__}: {e}"[:200])
        own = getattr(fn, "__code__", None)
        if not _raised_by_course(
            e, own.co_filename if own is not None and not fn.__module__.startswith("amp") else None
        ):
            return Outcome(qualname, name, _short(bad), "unclear", f"raised outside the course: {_describe(e)}")
        kind = "clear" if _clear(e, name, bad) else "unclear"
        return Outcome(qualname, name, _short(bad), kind, _describe(e))
    finally:
        plt.close("all")
    if _peak_bytes() - peak > HUGE_BYTES and huge:
        return Outcome(qualname, name, _short(bad), "huge", "returned after growing the peak memory")
    return Outcome(qualname, name, _short(bad), "silent", "returned")


def _describe(e: BaseException) -> str:
    return f"{type(e).__name__}: {str(e)[:160]}"


def _short(value) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{tuple(value.shape)} {value.dtype}".replace("torch.", "")
    if isinstance(value, tuple) and any(isinstance(v, torch.Tensor) for v in value):
        return "(" + ", ".join(_short(v) for v in value) + ",)"
    return repr(value)[:60]


def probe_module(module: str) -> list[Outcome]:
    """The outcomes of the public callables listed under ``module`` ("scaling", "formats", "amp_lessons")."""
    out = []
    for q, fn in sorted(public_callables().items()):
        if q.split(".")[0] == module:
            out += probe(q, fn)
    return out


#: The modules whose callables the contract probes, by the first part of a callable's name.
MODULE_NAMES = [m or "amp_lessons" for m in MODULES[1:] + TOPICS + MODULES[:1]]


def probe_all() -> list[Outcome]:
    return [o for m in MODULE_NAMES for o in probe_module(m)]


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
