"""Lesson 04's experiments: what autocast does to each op, seen three ways.

- **The policy tables** (:func:`policy_table`, :func:`policy_groups`, :func:`policy_of`,
  :func:`policy_sources`): for every ATen op that has an autocast kernel in the *installed* torch,
  whether autocast runs it in lower precision, in fp32, promotes its inputs to the widest dtype,
  or refuses it. No public torch API returns this, so it is derived: which ops have a kernel comes
  from the dispatcher; the CUDA classes come from the header ``ATen/autocast_mode.h`` that ships
  in the wheel, and every class the header does not give (all of them for the CPU, whose lists
  live in a ``.cpp`` that is not shipped) is *measured*: the op is called under autocast with
  small sample inputs and the dtype it returns says the class. CPU and CUDA policies differ:
  ``layer_norm``, ``softmax``, ``exp`` and ``sum`` are fp32 ops under CUDA autocast and on no list
  at all under CPU autocast.
- **The tracer** (:func:`trace`): runs a function under autocast while a ``TorchDispatchMode``
  records every ATen op with its input and output dtypes, including the ``_to_copy`` casts that
  autocast inserts, and optionally the backward pass. The CUDA policy can be previewed on a
  machine without a GPU with fake CUDA tensors (no data, no kernels, only dtypes and shapes).
- **The profiler tree** (:func:`profile_tree`): the same story from ``torch.profiler``, with
  timings, as the indented op tree the seed notebook printed, plus a Chrome trace file.

:func:`cast_cost` times the fp32 upcast that a CUDA-style fp32 op (layer norm) needs for a
low-precision input against the op itself.

Every function returns data; nothing here draws.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import html
import json
import logging
import math
import os
import re
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .._runtime import quiet_fd2
from .._table import Cell, TableRecord, html_table
from .._validate import count, int_in, is_int, path_or_none, sequence
from ..timing import time_fn

__all__ = [
    "CastCost",
    "DEVICE_TYPES",
    "OpRecord",
    "POLICIES",
    "ProfileNode",
    "ProfileTree",
    "SOURCES",
    "Trace",
    "cast_cost",
    "fake_cuda",
    "output_dtypes",
    "policy_groups",
    "policy_of",
    "policy_sources",
    "policy_table",
    "profile_tree",
    "trace",
]

POLICIES = ("lower_precision", "fp32", "fp32_set_opt_dtype", "fp32_append_dtype", "promote", "banned")
"""What autocast does to an op: the five values of ``CastPolicy`` in PyTorch's ``autocast_mode.h``
(https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h), and one kernel that is not a
policy.

- ``"lower_precision"`` (``lower_precision_fp``): cast the floating inputs to fp16/bf16;
- ``"fp32"``: cast the floating inputs to float32 (a separate cast before the op);
- ``"fp32_set_opt_dtype"``: no cast; call the op with ``dtype=torch.float32`` so that it *writes* fp32,
  unless the caller passed a ``dtype`` (then it is left alone): softmax, log_softmax, sum, prod, cumsum...;
- ``"fp32_append_dtype"``: no cast; call the overload that takes an output dtype, with float32 (``norm``);
- ``"promote"``: cast all floating inputs to the widest floating dtype among them;
- ``"banned"``: a kernel that raises (``binary_cross_entropy`` under CUDA autocast).

The CPU lists (``autocast_mode.cpp``) use only ``lower_precision``, ``fp32`` and ``promote``."""

SOURCES = ("header", "measured", "fallback")
"""How :func:`policy_sources` says an op's class was found: read from the installed
``ATen/autocast_mode.h`` (``"header"``), measured by calling the op under autocast
(``"measured"``), or taken from elsewhere because neither worked (``"fallback"``, see
:func:`policy_sources`)."""

DEVICE_TYPES = ("cpu", "cuda")

_DISPATCH_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}
_DEFAULT_DTYPES = {"cpu": torch.bfloat16, "cuda": torch.float16}
_AUTOCAST_DTYPES = (torch.bfloat16, torch.float16)
_PROBE_TIMEOUT_S = 120


# --------------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------------


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str) or device_type not in DEVICE_TYPES:
        raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")
    return device_type


def _check_dtype(dtype, device_type: str) -> torch.dtype:
    if dtype is None:
        return _DEFAULT_DTYPES[device_type]
    if not isinstance(dtype, torch.dtype) or dtype not in _AUTOCAST_DTYPES:
        raise ValueError(
            f"dtype must be torch.bfloat16 or torch.float16 (the low-precision dtypes autocast "
            f"runs in), or None for the default of {device_type!r} "
            f"({_DEFAULT_DTYPES[device_type]}), got {dtype!r}"
        )
    return dtype


def _dtype_name(d) -> str:
    return str(d).replace("torch.", "")


# --------------------------------------------------------------------------------------------
# Policy tables
# --------------------------------------------------------------------------------------------


def _header_path() -> Path:
    return Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"


# macro of ATen/autocast_mode.h -> the policy of the ops it lists (for CUDA, as autocast_mode.cpp uses them)
_HEADER_MACROS = {
    "AT_FORALL_LOWER_PRECISION_FP": "lower_precision",
    "AT_FORALL_FP32": "fp32",
    "AT_FORALL_FP32_SET_OPT_DTYPE": "fp32_set_opt_dtype",
    "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE": "fp32_append_dtype",  # each entry names its own policy
    "AT_FORALL_PROMOTE": "promote",
}


def _parse_header(text: str) -> dict[str, str]:
    """``{"aten::name.overload": policy}`` from the text of ``ATen/autocast_mode.h``.

    Each macro is ``#define AT_FORALL_X(_) \\`` followed by continuation lines of entries
    ``_(name)``, ``_(name, overload)`` or, in ``AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE``,
    ``_(ADD_NS(norm), "norm.Scalar", <signatures>, fp32_append_dtype)``."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = re.match(r"\s*#\s*define\s+(AT_FORALL_\w+)\s*\(_\)", lines[i])
        if not m or m.group(1) not in _HEADER_MACROS:
            i += 1
            continue
        body = [lines[i]]
        while body[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            body.append(lines[i])
        i += 1
        policy = _HEADER_MACROS[m.group(1)]
        macro_body = " ".join(line.rstrip().rstrip("\\") for line in body[1:])
        if m.group(1) == "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE":
            for qualified, how in re.findall(
                r'"(\w+(?:\.\w+)?)"[^"]*?\b(fp32\w*|lower_precision\w*|promote)\s*\)', macro_body
            ):
                out[f"aten::{qualified}"] = "lower_precision" if how == "lower_precision_fp" else how
            continue
        for name, overload in re.findall(r"(?<![\w)])_\(\s*(\w+)\s*(?:,\s*(\w+)\s*)?\)", macro_body):
            out[f"aten::{name}" + (f".{overload}" if overload else "")] = policy
    return out


@functools.lru_cache(maxsize=None)
def _header_policies() -> dict[str, str]:
    """The CUDA policy of the ops listed in the installed header ({} if it is not shipped)."""
    try:
        return _parse_header(_header_path().read_text())
    except OSError:
        return {}


def _autocast_ops(device_type: str) -> list[str]:
    """Every ``aten::name[.overload]`` with a kernel of its own for autocast on ``device_type``
    (ops without one fall through autocast untouched; ``aten::add.Tensor`` is one of them)."""
    key = _DISPATCH_KEYS[device_type]
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::") and has(n, key))


# --- measuring: sample inputs from the schema ---------------------------------------------------


class _CannotBuild(Exception):
    """The generic sample builder has no rule for an argument of this op."""


_INDEX_NAMES = ("index", "indices")
_PIVOT_NAMES = ("pivots", "LU_pivots")
_INT_FILL = {"padding": 0, "output_padding": 0, "pad": 0, "blank": 0}


def _float_sample(shape, dtype, device) -> torch.Tensor:
    """Values in (0, 1) (valid probabilities, logs, roots); square matrices symmetric positive
    definite (0.1 everywhere plus 0.5 on the diagonal), so factorizations succeed."""
    t = torch.full(shape, 0.1, device=device)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        t = t + 0.5 * torch.eye(shape[-1], device=device)
    return t.to(dtype)


class _Sampler:
    """Makes the tensors of one call: floating ones take their dtypes from ``dtypes`` in order
    (the last one repeats), so ``[bf16, fp32]`` gives a bf16 first input and fp32 for the rest."""

    def __init__(self, dtypes, device):
        self.dtypes, self.device, self.n_float = dtypes, device, 0

    def float(self, shape, invertible: bool = False) -> torch.Tensor:
        """A floating tensor of ``shape``; ``invertible``: one whose elements, read as an n x n
        matrix, make a symmetric positive definite one."""
        d = self.dtypes[min(self.n_float, len(self.dtypes) - 1)]
        self.n_float += 1
        if invertible:
            n = round(math.prod(shape) ** 0.5)
            return _float_sample((n, n), d, self.device).reshape(shape)
        return _float_sample(tuple(shape), d, self.device)

    def long(self, shape, value=0) -> torch.Tensor:
        return torch.full(tuple(shape), value, dtype=torch.long, device=self.device)

    def int32(self, shape, value=1) -> torch.Tensor:
        return torch.full(tuple(shape), value, dtype=torch.int32, device=self.device)


def _generic_sample(schema, sampler: _Sampler, s: int, r: int, variant: dict):
    """Positional arguments for ``schema`` from simple rules: every tensor of shape ``(s,)*r``
    (with the exceptions ``variant`` switches on), every optional argument None, every argument
    with a default left out, ints/bools/floats small and harmless."""
    shape = (s,) * r
    args = []
    for a in schema.arguments:
        if a.alias_info is not None and a.alias_info.is_write:
            raise _CannotBuild("writes into an argument")
        if a.has_default_value() or a.kwarg_only:
            break
        kind, name = a.type.kind(), a.name
        if kind == "TensorType":
            if name in _INDEX_NAMES:
                v = sampler.long(shape if variant["index_full"] else (s,))
            elif name in _PIVOT_NAMES:
                v = sampler.int32(shape[:-1])
            elif name in ("target", "targets") and variant["target"] != "float":
                v = sampler.long(shape[:-1] if variant["target"] == "long_batch" else shape)
            elif name in variant["vectors"]:
                v = sampler.float((s,))
            else:
                v = sampler.float(shape)
        elif kind == "OptionalType":
            v = None
        elif kind == "ListType":
            element = a.type.getElementType().kind()
            if element in ("TensorType", "OptionalType"):
                v = [sampler.long((s,))] if name in _INDEX_NAMES else [sampler.float(shape), sampler.float(shape)]
            elif element == "IntType":
                n = a.N or max(r - 2, 1)
                v = [0] if name == "dim" else [s if name == "output_size" else _INT_FILL.get(name, 1)] * n
            else:
                raise _CannotBuild(f"list of {element}")
        elif kind == "IntType":
            v = 0 if name == "dim" else (s if name == "n_fft" else _INT_FILL.get(name, 1))
        elif kind == "BoolType":
            v = False
        elif kind == "FloatType":
            v = 0.5
        elif kind == "NumberType":
            v = 2
        elif kind == "StringType":
            letters = "abcde"[:r]
            v = f"{letters},{letters}->{letters}" if name == "equation" else "fro"
        else:
            raise _CannotBuild(f"argument {name} of kind {kind}")
        args.append(v)
    return args, {}


# Ops the generic rules cannot feed: a hand-made sample each, (sampler) -> (args, kwargs).
def _ctc_sample(t: _Sampler, tensor_lengths: bool):
    T, N, C, L = 4, 2, 3, 2
    lengths_in, lengths_t = [T] * N, [L] * N
    if tensor_lengths:
        lengths_in, lengths_t = t.long((N,), T), t.long((N,), L)
    return [t.float((T, N, C)), t.long((N, L), 1), lengths_in, lengths_t], {}


def _mha_sample(t: _Sampler):
    B, L, E, H = 1, 2, 4, 2
    q, k, v = t.float((B, L, E)), t.float((B, L, E)), t.float((B, L, E))
    return [q, k, v, E, H, t.float((3 * E, E)), t.float((3 * E,)), t.float((E, E)), t.float((E,))], {}


def _rnn_sample(t: _Sampler):
    T, B, In, Hd = 2, 1, 2, 2
    x = t.float((T, B, In))
    w0, w1, w2, w3 = t.float((4 * Hd, In)), t.float((4 * Hd, Hd)), t.float((4 * Hd,)), t.float((4 * Hd,))
    hx, cx = t.float((B, Hd)), t.float((B, Hd))
    # reverse, batch_sizes, mode (2 = LSTM), hidden_size, num_layers, has_biases, bidirectional, batch_first, train
    return [x, w0, w1, w2, w3, hx, cx, False, [], 2, Hd, 1, True, False, False, False], {}


_SAMPLES = {
    "aten::ctc_loss.IntList": lambda t: _ctc_sample(t, False),
    "aten::ctc_loss.Tensor": lambda t: _ctc_sample(t, True),
    "aten::_native_multi_head_attention": _mha_sample,
    "aten::mkldnn_rnn_layer": _rnn_sample,
    "aten::fake_quantize_per_tensor_affine": lambda t: ([t.float((2, 2)), 0.5, 0, 0, 255], {}),
    "aten::fractional_max_pool2d": lambda t: ([t.float((1, 1, 4, 4)), [2, 2], [2, 2], t.float((1, 1, 2))], {}),
    "aten::fractional_max_pool3d": lambda t: ([t.float((1, 1, 4, 4, 4)), [2, 2, 2], [2, 2, 2], t.float((1, 1, 3))], {}),
    "aten::linalg_tensorsolve": lambda t: ([t.float((2, 2)), t.float((2,))], {}),
    "aten::linalg_tensorinv": lambda t: ([t.float((2, 2, 2, 2), invertible=True)], {}),
    "aten::addbmm": lambda t: ([t.float((2, 2)), t.float((3, 2, 2)), t.float((3, 2, 2))], {}),
    "aten::stft": lambda t: ([t.float((8,)), 4], {"window": t.float((4,)), "return_complex": True}),
    "aten::stft.center": lambda t: ([t.float((8,)), 4], {"window": t.float((4,)), "return_complex": True}),
}

_SHAPES = ((2, 2), (2, 3), (2, 4), (2, 1), (2, 5), (3, 2), (3, 3), (3, 1), (3, 4), (3, 5))
_VARIANTS = tuple(
    {"target": target, "index_full": index_full, "vectors": vectors}
    for vectors in ((), ("bias", "tau", "input2"), ("weight", "bias", "tau", "input2"))
    for target in ("float", "long_batch", "long_same")
    for index_full in (False, True)
)

_COMPLEX_PARTS = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def _result_dtype(out):
    """The dtype of the first floating (or complex: its real part) tensor among the outputs."""
    for t in tree_leaves(out):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
            return _COMPLEX_PARTS.get(t.dtype, t.dtype)
    return None


class _FirstCasts(TorchDispatchMode):
    """Records the dtype changes of the casts that run before the op proper."""

    def __init__(self):
        super().__init__()
        self.casts, self.done = [], False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not self.done:
            if _is_cast_op(func) and isinstance(args[0], torch.Tensor) and isinstance(out, torch.Tensor):
                self.casts.append((args[0].dtype, out.dtype))
            else:
                self.done = True
        return out


def _measure(qualified: str, device: str, low: torch.dtype) -> str | None:
    """The autocast class of one op overload, found by calling it under the (already entered)
    autocast of ``device`` with low-precision dtype ``low``; None if no sample input worked.

    A: all floating inputs fp32; B: all ``low``; C: the first ``low``, the rest fp32.
    lower_precision: A returns ``low``. fp32: B returns fp32. promote: C returns fp32 while B
    stays ``low``. banned: the call raises "unsafe to autocast". For ops whose outputs are not
    floating (``linalg_matrix_rank``), the casts autocast inserts before the op decide instead."""
    name, _, overload = qualified.partition(".")
    schema = torch._C._get_schema(name, overload)
    op = getattr(getattr(torch.ops.aten, name.split("::", 1)[1]), overload or "default")
    fp32 = torch.float32

    def call(dtypes, build, mode=None):
        sampler = _Sampler(dtypes, device)
        args, kwargs = build(sampler)
        with mode or contextlib.nullcontext():
            return op(*args, **kwargs), sampler.n_float

    builds = []
    if qualified in _SAMPLES:
        builds.append(_SAMPLES[qualified])
    else:
        for s, r in _SHAPES:
            for variant in _VARIANTS:
                builds.append(
                    functools.partial(
                        lambda sampler, s, r, variant: _generic_sample(schema, sampler, s, r, variant),
                        s=s,
                        r=r,
                        variant=variant,
                    )
                )
    for build in builds:
        try:
            out_a, n_float = call([fp32], build)
        except _CannotBuild:
            return None
        except Exception as e:  # any failure of a sample: try the next one
            if "unsafe to autocast" in str(e):
                return "banned"
            continue
        if n_float == 0:
            return None
        a = _result_dtype(out_a)
        if a is None:  # no floating output: look at the casts autocast puts in front of the op
            for dtypes, policy in (([fp32], "lower_precision"), ([low], "fp32")):
                rec = _FirstCasts()
                try:
                    call(dtypes, build, rec)
                except Exception:
                    continue
                if rec.casts and rec.casts[0][0] == dtypes[0] and rec.casts[0][1] != dtypes[0]:
                    return policy
            return None
        if a == low:
            return "lower_precision"
        try:
            b = _result_dtype(call([low], build)[0])
        except Exception:
            b = None
        if b == fp32:
            return "fp32"
        if n_float >= 2:
            try:
                c = _result_dtype(call([low, fp32], build)[0])
            except Exception:
                c = None
            if c == fp32 and b != fp32:
                return "promote"
        return None
    return None


@contextlib.contextmanager
def _cuda_autocast_on_fake(dtype: torch.dtype, cache: bool):
    """CUDA autocast switched on without the availability check that ``torch.autocast`` makes
    (meant for fake CUDA tensors); restores the previous switches and clears the cast cache."""
    prev = (torch.is_autocast_enabled("cuda"), torch.get_autocast_dtype("cuda"), torch.is_autocast_cache_enabled())
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.set_autocast_cache_enabled(cache)
    try:
        yield
    finally:
        torch.set_autocast_enabled("cuda", prev[0])
        torch.set_autocast_dtype("cuda", prev[1])
        torch.set_autocast_cache_enabled(prev[2])
        torch.clear_autocast_cache()


def _probe_all(cuda_ops=None) -> dict:
    """Measure the autocast ops of both device types (run in a fresh process by
    :func:`_probe_results`): ``{"cpu": {op: policy | None}, "cuda": {...}}``. Every CPU op is
    measured; for CUDA the ops ``cuda_ops`` (default: those the installed header does not list),
    on fake CUDA tensors."""
    if cuda_ops is None:
        header = _header_policies()
        cuda_ops = [op for op in _autocast_ops("cuda") if op not in header]
    result = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            result["cpu"] = {op: _measure(op, "cpu", torch.bfloat16) for op in _autocast_ops("cpu")}
        before = logging.root.manager.disable
        logging.disable(logging.CRITICAL)  # fake tensors log every failed sample with its traceback
        try:
            with torch.no_grad(), FakeTensorMode(), _cuda_autocast_on_fake(torch.float16, cache=False):
                result["cuda"] = {op: _measure(op, "cuda", torch.float16) for op in cuda_ops}
        finally:
            logging.disable(before)
    return result


@functools.lru_cache(maxsize=None)
def _probe_results() -> dict:
    """:func:`_probe_all`, run once per session in a fresh Python process: the probes call about
    250 ops, some of which print C++ warnings or use up warn-once messages, and the CUDA ones
    run on fake tensors; none of that should touch the learner's process."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from amp_lessons.autocast.experiments import _probe_all; print(json.dumps(_probe_all()))"
    )
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    proc = subprocess.run(
        [sys.executable, "-c", code, root], capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, env=env
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"measuring the autocast policies in a subprocess failed (exit code "
            f"{proc.returncode}):\n{proc.stderr[-2000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _base(qualified: str) -> str:
    return qualified.split("::", 1)[-1].split(".", 1)[0]


@functools.lru_cache(maxsize=None)
def _classify(device_type: str) -> tuple[dict[str, str], dict[str, str]]:
    """(policy table, source table), both keyed by op name without overload."""
    measured = _probe_results()[device_type]
    header = _header_policies() if device_type == "cuda" else {}
    by_name: dict[str, list[tuple[str, str]]] = {}
    for qualified in _autocast_ops(device_type):
        found = by_name.setdefault(_base(qualified), [])
        if qualified in header:
            found.append((header[qualified], "header"))
        elif measured.get(qualified) is not None:
            found.append((measured[qualified], "measured"))
    table, sources = {}, {}
    for name, found in sorted(by_name.items()):
        if found:
            # the header first, then a measurement (the overloads of an op all have the same
            # class in torch 2.13; if they ever differ, the header's or the first overload's wins)
            found.sort(key=lambda pr: SOURCES.index(pr[1]))
            table[name], sources[name] = found[0]
            continue
        fallback = _fallback(name, device_type)
        if fallback is not None:
            table[name], sources[name] = fallback, "fallback"
    return table, sources


# CPU autocast ops whose sample inputs run only on some CPUs, with their class as registered in
# aten/src/ATen/autocast_mode.cpp (https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp,
# ``KERNEL_CPU(mkldnn_rnn_layer, lower_precision_fp)``). Measured with torch 2.13: on a CPU with AVX512 the
# op runs under bf16 autocast and returns bf16; on an AVX2-only CPU oneDNN refuses it ("could not create a
# primitive descriptor for the LSTM forward propagation primitive", also what nn.LSTM raises under CPU
# bf16 autocast there), so measuring gives a class on one machine and none on another.
_CPU_LISTED = {"mkldnn_rnn_layer": "lower_precision"}
# CUDA ops whose autocast kernel a CUDA build registers outside autocast_mode.h, which fake tensors cannot run:
# aten/src/ATen/native/cudnn/AutocastRNN.cpp registers _cudnn_rnn, casting its inputs and weights to half
# (https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cudnn/AutocastRNN.cpp). The CPU-only wheel
# has no kernel for it, so it appears in the CUDA table of a CUDA build only.
_CUDA_LISTED = {"_cudnn_rnn": "lower_precision"}


def _fallback(name: str, device_type: str) -> str | None:
    """For an op that neither the header lists nor a sample input could call, in this order:
    for the CPU, the class :data:`_CPU_LISTED` copies from ``autocast_mode.cpp`` (ops that run only on
    some CPUs), for CUDA the class :data:`_CUDA_LISTED` copies from ``AutocastRNN.cpp`` (``_cudnn_rnn``, on a CUDA
    build); the class the CUDA header gives an op of the same name; the class measured for the other
    device type; the header's class of the longest op name (4 letters or more) inside this one
    (``cudnn_convolution`` -> ``convolution``)."""
    if device_type == "cpu" and name in _CPU_LISTED:
        return _CPU_LISTED[name]
    if device_type == "cuda" and name in _CUDA_LISTED:
        return _CUDA_LISTED[name]
    header = {_base(q): p for q, p in sorted(_header_policies().items())}
    if name in header:
        return header[name]
    other = "cuda" if device_type == "cpu" else "cpu"
    for qualified, policy in sorted(_probe_results()[other].items()):
        if _base(qualified) == name and policy is not None:
            return policy
    inside = sorted((n for n in header if len(n) >= 4 and n in name), key=len)
    return header[inside[-1]] if inside else None


def policy_table(device_type: str) -> dict[str, str]:
    """``{op name: policy}`` for every ATen op with an autocast kernel for ``device_type``
    (``"cpu"`` or ``"cuda"``) in the installed torch; the policy is one of :data:`POLICIES`.

    Names have no overload (``"mm"``, ``"layer_norm"``, ``"conv_transpose2d"``); ops without an
    autocast kernel (``add``, ``relu``, ``embedding``...) are absent: autocast leaves them alone,
    so they run in whatever dtype their inputs have. Works for ``"cuda"`` without a GPU.

    How it is derived (see :func:`policy_sources` for each op): the op list is every operator
    for which the dispatcher holds a kernel of its own under the ``AutocastCPU`` /
    ``AutocastCUDA`` key. CUDA classes are read from the macro lists of the installed
    ``torch/include/ATen/autocast_mode.h``; the rest (the banned ``binary_cross_entropy``, and
    every CPU op, as the CPU lists are in a ``.cpp`` the wheel does not ship) are measured by
    calling each op under autocast with small sample inputs built from its schema and reading
    the dtype it returns (bfloat16 for the CPU; fp16 on fake CUDA tensors for CUDA). The
    measurements run once per session, for both device types, in a separate Python process
    (about 4 s on a 2-core CPU); later calls are instant. An op that could be classified in no
    way would be left out; in torch 2.13 there is none.
    """
    return dict(_classify(_check_device_type(device_type))[0])


def policy_sources(device_type: str) -> dict[str, str]:
    """``{op name: how its class was found}`` for the ops of :func:`policy_table`, one of
    :data:`SOURCES`: ``"header"`` (CUDA only: listed in the installed ``autocast_mode.h``),
    ``"measured"`` (the dtype the op returned under autocast on this machine, on fake CUDA
    tensors for CUDA, for at least one overload) or ``"fallback"``: no sample input could call
    the op, so its class is borrowed, in this order: for the CPU, from the few ops whose class the
    module copies from ``autocast_mode.cpp`` because they run only on some CPUs (``mkldnn_rnn_layer``:
    measured where the CPU has AVX512, a fallback on AVX2-only CPUs, where oneDNN refuses it); from
    an op of the same name in the CUDA header, from the class measured for the other device type, or
    from the longest header op name inside its name (a guess: in torch 2.13 only CUDA's
    ``cudnn_convolution`` and ``cudnn_convolution_transpose``, which fake tensors cannot run, get
    their class this way, from ``convolution``: lower_precision, which is what ``autocast_mode.cpp``
    registers). Which ops are "measured" therefore depends on the CPU; the table does not."""
    return dict(_classify(_check_device_type(device_type))[1])


def policy_groups(device_type: str) -> dict[str, list[str]]:
    """``{policy: sorted op names}`` for every policy in :data:`POLICIES` (empty lists included)."""
    groups: dict[str, list[str]] = {p: [] for p in POLICIES}
    for name, policy in policy_table(device_type).items():
        groups[policy].append(name)
    return {p: sorted(names) for p, names in groups.items()}


def _op_name(op) -> str:
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


def policy_of(op_name, device_type: str) -> str | None:
    """The autocast policy of one op (``"mm"``, ``"aten::mm"``, ``"aten.mm.default"`` or
    ``torch.ops.aten.mm``) on ``device_type``, or None if autocast has no kernel for it there."""
    name = _op_name(op_name)
    return policy_table(device_type).get(name)


# --------------------------------------------------------------------------------------------
# The tracer
# --------------------------------------------------------------------------------------------

_CAST_OPS = {"_to_copy", "to", "convert_element_type", "_autocast_to_reduced_precision", "_autocast_to_full_precision"}


def _is_cast_op(func) -> bool:
    return getattr(func, "__name__", "").split(".")[0] in _CAST_OPS


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
    return ", ".join(f"{_dtype_name(d)}{list(s)}" for d, s in zip(dtypes, shapes))


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
    """Each tensor as ``bf16[8,32]``: the short dtype names of the trace tables (the key is in their notes)."""
    return [f"{_SHORT_DTYPES.get(d, _dtype_name(d))}[{','.join(map(str, s))}]" for d, s in zip(dtypes, shapes)]


def _wrap(items: list[str], width: int) -> list[str]:
    """``items`` joined by ", " into lines of at most ``width`` characters (an item longer than that on its own)."""
    lines, line = [], ""
    for it in items:
        if line and len(line) + 2 + len(it) > width:
            lines.append(line + ",")
            line = it
        else:
            line = f"{line}, {it}" if line else it
    return [*lines, line]


#: the trace tables' dtype names
DTYPE_KEY = "fp32 = float32, bf16 = bfloat16, fp16 = float16, fp64 = float64, i64 = int64"


def _tensors(tree) -> list[torch.Tensor]:
    return [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor)]


class _Recorder(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops: list[OpRecord] = []
        self.phase = "forward"
        self.paused = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if self.paused or func.namespace == "prim":
            return out
        ins, outs = _tensors((args, kwargs)), _tensors(out)
        is_cast = _is_cast_op(func) and bool(ins) and bool(outs) and ins[0].dtype != outs[0].dtype
        is_weight_cast = (
            is_cast
            and self.phase == "forward"
            and (isinstance(ins[0], torch.nn.Parameter) or (ins[0].is_leaf and ins[0].requires_grad))
        )
        name = func.__name__.split(".")[0]
        if func.namespace != "aten":
            name = f"{func.namespace}::{name}"
        self.ops.append(
            OpRecord(
                self.phase,
                name,
                tuple(t.dtype for t in ins),
                tuple(tuple(t.shape) for t in ins),
                tuple(t.dtype for t in outs),
                tuple(tuple(t.shape) for t in outs),
                is_cast,
                is_weight_cast,
            )
        )
        return out


_HEADERS = {
    ("cpu", False): "CPU autocast, measured on this machine",
    ("cuda", True): "CUDA autocast policy previewed with fake CUDA tensors",
}


@dataclass
class Trace:
    """What :func:`trace` recorded: every ATen op of the call, in order.

    ``ops`` holds :class:`OpRecord` s; ``casts`` the ones that changed a dtype; ``weight_casts``
    counts the forward casts of parameters (and of other leaf tensors that require grad): the
    casts autocast caches for the rest of the autocast region, except in a fake CUDA preview,
    which has no cache. ``output`` is what the function returned (fake tensors in a fake CUDA
    preview: dtypes and shapes, no values). Printed (``repr``) or shown in a notebook
    (``_repr_html_``) it is a table with the casts marked, under a line saying where it ran."""

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
        """Where this ran, e.g. "CPU autocast, measured on this machine (autocast dtype bfloat16)"."""
        where = _HEADERS.get((self.device_type, self.fake)) or f"CUDA autocast on {self.device_name}"
        text = f"{where} (autocast dtype {_dtype_name(self.dtype)})"
        if self.fake:
            text += "; no autograd, so no weight-cast cache: every call casts its weights"
        return text

    def named(self, name: str) -> list:
        """The records of op ``name`` ("mm", "aten::mm" or "aten.mm.default" all work)."""
        name = _op_name(name)
        return [op for op in self.ops if op.name == name]

    def _rows(self, width: int = 1_000):
        """One row per op; the inputs and outputs cells are lists of lines of at most ``width`` characters."""
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
        # inputs and outputs wrapped at 44 characters: a backward op's inputs stay within about 110 columns
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


def _fake_tensor(t: torch.Tensor, mode) -> torch.Tensor:
    with mode:
        return torch.empty_strided(tuple(t.shape), tuple(t.stride()), dtype=t.dtype, device="cuda")


def _convert(obj, mode, memo: dict):
    """Fake CUDA copies of the tensors and modules in ``obj`` (lists, tuples and dicts walked)."""
    if isinstance(obj, torch.Tensor):
        if isinstance(obj, FakeTensor) and obj.fake_mode is mode:
            return obj
        if id(obj) not in memo:
            memo[id(obj)] = _fake_tensor(obj.detach(), mode)
        return memo[id(obj)]
    if isinstance(obj, torch.nn.Module):
        tensors = [*obj.parameters(), *obj.buffers()]
        if tensors and all(isinstance(t, FakeTensor) and t.fake_mode is mode for t in tensors):
            return obj  # converted already (by fake_cuda)
        clone = copy.deepcopy(obj)
        clone._apply(lambda t: _convert(t, mode, memo))
        for p in clone.parameters():
            p.requires_grad_(False)  # autograd on fake CUDA tensors needs the CUDA runtime
        return clone
    if isinstance(obj, (list, tuple)):
        converted = [_convert(o, mode, memo) for o in obj]
        return type(obj)(converted) if not hasattr(obj, "_fields") else type(obj)(*converted)
    if isinstance(obj, dict):
        return type(obj)((k, _convert(v, mode, memo)) for k, v in obj.items())
    return obj


def fake_cuda(obj, mode=None):
    """Fake CUDA copies of the tensors and ``nn.Module`` s in ``obj`` (a tensor, a module, or
    lists/tuples/dicts of them; anything else is returned as is), for ``mode`` (a
    ``FakeTensorMode``; a new one if None). Module copies are
    deep copies whose parameters and buffers are fake and do not require grad; tensors keep
    shape, stride and dtype, not values. The original objects are not changed.

    :func:`trace` does this itself for its arguments; call this to build fake inputs yourself
    (then trace uses their fake mode), e.g. to look at shapes inside the mode."""
    mode = FakeTensorMode() if mode is None else mode
    if not isinstance(mode, FakeTensorMode):
        raise TypeError(f"mode must be a FakeTensorMode or None, got {type(mode).__name__}")
    return _convert(obj, mode, {})


def _existing_fake_mode(tree):
    for leaf in tree_leaves(tree):
        if isinstance(leaf, FakeTensor):
            return leaf.fake_mode
        if isinstance(leaf, torch.nn.Module):
            for t in (*leaf.parameters(), *leaf.buffers()):
                if isinstance(t, FakeTensor):
                    return t.fake_mode
    return None


def _check_devices(tree, device_type: str, fake: bool) -> None:
    def tensors_of(leaf):
        if isinstance(leaf, torch.Tensor):
            yield "a tensor argument", leaf
        elif isinstance(leaf, torch.nn.Module):
            for n, t in (*leaf.named_parameters(), *leaf.named_buffers()):
                yield f"{type(leaf).__name__}.{n}", t

    for leaf in tree_leaves(tree):
        for what, t in tensors_of(leaf):
            if fake:
                continue  # everything is converted
            if isinstance(t, FakeTensor):
                raise ValueError(f"{what} is a fake tensor, but fake=False: pass real tensors, or fake=True")
            if t.device.type != device_type and t.dim() > 0:
                hint = (
                    " (move them with .cuda(), or preview the CUDA policy with fake=True)"
                    if device_type == "cuda"
                    else " (move them with .cpu())"
                )
                raise ValueError(
                    f"{what} is on {t.device}, but device_type={device_type!r} runs autocast "
                    f"on {device_type} tensors{hint}"
                )


def _all_real_cuda(tree) -> bool:
    """Every tensor in ``tree`` (and every parameter and buffer of a module in it) is a real CUDA tensor."""
    for leaf in tree_leaves(tree):
        if isinstance(leaf, torch.nn.Module):
            tensors = [*leaf.parameters(), *leaf.buffers()]
        elif isinstance(leaf, torch.Tensor):
            tensors = [leaf]
        else:
            continue
        if any(isinstance(t, FakeTensor) or t.device.type != "cuda" for t in tensors):
            return False
    return True


def _first_output_tensor(out):
    for t in tree_leaves(out):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
            return t
    return None


def trace(fn, *args, device_type: str = "cpu", dtype=None, fake=None, backward: bool = False, **kwargs) -> Trace:
    """Run ``fn(*args, **kwargs)`` under ``torch.autocast(device_type, dtype)`` and record every
    ATen op the dispatcher runs: name, input and output dtypes and shapes, and whether it is a
    cast (a ``_to_copy`` that changes the dtype: those in the forward pass are autocast's).

    ``dtype``: ``torch.bfloat16`` or ``torch.float16``; None means bfloat16 on the CPU, float16
    for CUDA. With ``backward=True`` the backward pass of ``fn``'s (first floating) output runs
    too, outside autocast as it should (a non-scalar output gets a gradient of ones), and its ops
    are recorded with phase "backward"; the gradients accumulate into the parameters as any
    backward would.

    ``device_type="cuda"``: ``fake=False`` runs everything for real, on a GPU, and the tensors and
    modules must already be on it. ``fake=None`` (the default) runs for real only where torch sees a
    GPU *and* every tensor and module is already on it; otherwise (CPU tensors, on any machine, or
    ``fake=True``) the CUDA policy is *previewed*: ``args``, ``kwargs`` and ``fn`` itself if it is an ``nn.Module`` are
    replaced by fake CUDA copies (:func:`fake_cuda`; fake tensors have dtypes and shapes, no
    values, and run no kernels), and CUDA autocast is switched on for them directly. So pass
    every tensor and module ``fn`` uses as an argument, ``trace(lambda m, x: m(x).sum(), model,
    x, device_type="cuda")``, not through a closure: a real tensor met inside the fake region is
    an error. Tensors created inside ``fn`` with ``device="cuda"`` are fake. Fake tensors cannot
    take part in autograd in a CPU-only torch (it asks the CUDA runtime for a stream), so the
    preview runs under ``torch.no_grad()`` with the autocast cast cache off: every call casts
    its weights again (on a GPU, casts of parameters are cached once per autocast region), and
    ``backward=True`` is refused.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    device_type = _check_device_type(device_type)
    dtype = _check_dtype(dtype, device_type)
    if fake not in (None, True, False):
        raise ValueError(f"fake must be None (automatic), True or False, got {fake!r}")
    if not isinstance(backward, bool):
        raise ValueError(f"backward must be True or False, got {backward!r}")
    has_cuda = torch.cuda.is_available()
    if device_type == "cpu":
        if fake:
            raise ValueError(
                "fake=True previews the CUDA policy: use device_type='cuda' "
                "(device_type='cpu' runs CPU autocast for real)"
            )
        fake = False
    elif fake is None:
        fake = not (has_cuda and _all_real_cuda((fn, args, kwargs)))
    elif not fake and not has_cuda:
        raise RuntimeError(
            "device_type='cuda' with fake=False needs a CUDA GPU, and torch sees none here; "
            "preview the CUDA policy with fake=True (or fake=None)"
        )
    if fake and backward:
        raise ValueError(
            "backward=True cannot run on fake CUDA tensors (autograd needs the CUDA runtime); "
            "trace the backward pass with device_type='cpu', or on a GPU"
        )
    everything = (fn, args, kwargs)
    _check_devices(everything, device_type, fake)
    if fake:
        return _trace_fake(fn, args, kwargs, dtype)
    return _trace_real(fn, args, kwargs, device_type, dtype, backward)


def _trace_real(fn, args, kwargs, device_type, dtype, backward) -> Trace:
    rec = _Recorder()
    with rec:
        with torch.autocast(device_type, dtype=dtype):
            out = fn(*args, **kwargs)
        if backward:
            root = _first_output_tensor(out)
            if root is None or not root.requires_grad:
                raise ValueError(
                    "backward=True, but fn's output has no floating tensor that requires grad: "
                    "give fn a module with parameters, or inputs with requires_grad=True"
                )
            rec.paused = True
            grad = torch.ones_like(root)
            rec.paused = False
            rec.phase = "backward"
            root.backward(grad)
    name = torch.cuda.get_device_name() if device_type == "cuda" else None
    return Trace(rec.ops, device_type, dtype, False, out, name)


def _trace_fake(fn, args, kwargs, dtype) -> Trace:
    mode = _existing_fake_mode((fn, args, kwargs)) or FakeTensorMode()
    memo: dict = {}
    fn_c = _convert(fn, mode, memo) if isinstance(fn, torch.nn.Module) else fn
    args_c, kwargs_c = _convert(args, mode, memo), _convert(kwargs, mode, memo)
    rec = _Recorder()
    try:
        with torch.no_grad(), mode, rec, _cuda_autocast_on_fake(dtype, cache=False):
            out = fn_c(*args_c, **kwargs_c)
    except Exception as e:
        text = str(e)
        if "FakeTensor" in text and ("non-Fake" in text or "nonfake" in text.lower() or "convert all Tensors" in text):
            raise ValueError(
                "fn used a real tensor inside the fake CUDA preview (probably through a closure or a "
                "global): pass every tensor and module fn needs as an argument of trace, so that it "
                "can be converted, or create it inside fn"
            ) from e
        raise
    return Trace(rec.ops, "cuda", dtype, True, out, None)


# --------------------------------------------------------------------------------------------
# The profiler tree
# --------------------------------------------------------------------------------------------


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

    def line(self, times: bool = True) -> str:
        text = self.name
        if self.input_shapes:
            text += f"  {self.input_shapes}"
        if self.input_dtypes:
            text += f"  [{', '.join(self.input_dtypes)}]"
        if times:
            text += f"  (self {_us(self.self_us)}, total {_us(self.total_us)})"
        return text


def _us(x: float) -> str:
    return f"{x:.0f} us" if x >= 10 else f"{x:.1f} us"


_NOT_TENSORS = {"Scalar", "ScalarList", "", "GenericList", "None", "Device", "Layout", "bool", "int"}


def _clean_inputs(dims, types) -> tuple[list, list]:
    """The tensor inputs of a profiler event: shapes and dtypes ("float", "BFloat16", "Half")."""
    dims, types = list(dims or []), list(types or [])
    if len(dims) != len(types):
        return dims, [t.replace("c10::", "") for t in types]
    keep = [i for i, t in enumerate(types) if t not in _NOT_TENSORS]
    return [dims[i] for i in keep], [types[i].replace("c10::", "") for i in keep]


class ProfileTree:
    """The CPU op tree :func:`profile_tree` recorded: ``roots`` are the top-level ops
    (:class:`ProfileNode`, children nested), ``chrome_trace`` the path of the exported Chrome
    trace (open it in https://ui.perfetto.dev or chrome://tracing). ``walk()`` yields every node
    with its depth, ``find(name)`` the nodes of one op, ``total_us(name)`` their time. Timings
    change from run to run; ``render(times=False)`` gives the structure alone."""

    def __init__(
        self, roots: list, chrome_trace: str, device_type: str, dtype: torch.dtype, device_name: str | None = None
    ):
        self.roots, self.chrome_trace = roots, chrome_trace
        self.device_type, self.dtype, self.device_name = device_type, dtype, device_name

    def walk(self):
        """Every node with its depth, depth first, in time order."""
        stack = [(0, n) for n in reversed(self.roots)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, c) for c in reversed(node.children))

    def find(self, name: str) -> list:
        """Every node called ``name`` ("aten::mm" or just "mm")."""
        name = name if "::" in name else f"aten::{name}"
        return [n for _, n in self.walk() if n.name == name]

    def total_us(self, name: str) -> float:
        """Total time of the ops called ``name`` ("aten::mm" or "mm"), in microseconds; an op
        nested inside another of the same name (``aten::matmul`` in ``aten::matmul``) is not
        counted twice."""
        name = name if "::" in name else f"aten::{name}"

        def total(nodes):
            return sum(n.total_us if n.name == name else total(n.children) for n in nodes)

        return total(self.roots)

    def render(self, times: bool = True, max_depth: int | None = None) -> str:
        """The tree as indented text, one op a line: name, input shapes, input dtypes and, with
        ``times``, self and total time; ``max_depth`` (0 = top-level ops only) cuts it short."""
        if max_depth is not None:
            int_in(max_depth, "max_depth", 0, allowed="None or an int >= 0")
        where = (
            "CPU autocast, measured on this machine"
            if self.device_type == "cpu"
            else f"CUDA autocast on {self.device_name}"
        )
        lines = [
            f"{where} (autocast dtype {_dtype_name(self.dtype)}); torch.profiler CPU ops"
            + ("; times vary from run to run" if times else "")
        ]
        for depth, node in self.walk():
            if max_depth is None or depth <= max_depth:
                lines.append("  " * depth + node.line(times))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.render()


def _build_tree(events: list) -> list:
    """Nest Chrome-trace CPU events by time containment, per thread."""
    by_thread: dict = {}
    for e in events:
        by_thread.setdefault(e.get("tid"), []).append(e)
    roots = []
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e.get("dur", 0))))
        stack: list[tuple[float, ProfileNode]] = []
        for e in evs:
            start, dur = float(e["ts"]), float(e.get("dur", 0))
            a = e.get("args", {})
            shapes, dtypes = _clean_inputs(a.get("Input Dims"), a.get("Input type"))
            node = ProfileNode(e["name"], shapes, dtypes, dur, dur, [], start)
            while stack and start >= stack[-1][0] - 1e-3:  # the previous op ended before this one started
                stack.pop()
            (stack[-1][1].children if stack else roots).append(node)
            stack.append((start + dur, node))
    roots.sort(key=lambda n: n.start_us)

    def settle(node):
        for c in node.children:
            settle(c)
        node.self_us = max(node.total_us - sum(c.total_us for c in node.children), 0.0)

    for r in roots:
        settle(r)
    return roots


def profile_tree(fn, *args, device_type: str = "cpu", dtype=None, trace_dir=None, **kwargs) -> ProfileTree:
    """Run ``fn(*args, **kwargs)`` under ``torch.autocast(device_type, dtype)`` inside
    ``torch.profiler.profile(record_shapes=True)`` and return its CPU op tree
    (:class:`ProfileTree`): each op with its tensor inputs' shapes and dtypes, self and total
    time, its children indented below it; autocast's casts appear as ``aten::to`` ->
    ``aten::_to_copy`` -> ``aten::copy_`` children of the op that needed them.

    ``fn`` runs once, unwarmed (the first call of an op includes one-time setup), so read times
    as rough. On a GPU (``device_type="cuda"``) CUDA activity is recorded too; the GPU kernels
    are in the Chrome trace, the tree shows the CPU side. The Chrome trace is written to a new
    file in ``trace_dir`` (created if needed; default a new temporary folder). This measures
    real kernels: ``device_type="cuda"`` needs a GPU (use :func:`trace` to preview the CUDA
    policy without one)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    device_type = _check_device_type(device_type)
    dtype = _check_dtype(dtype, device_type)
    if device_type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "profile_tree(device_type='cuda') times real CUDA kernels, and torch sees no GPU here; "
            "use device_type='cpu', or trace(..., device_type='cuda') to preview the CUDA policy"
        )
    _check_devices((fn, args, kwargs), device_type, False)
    if path_or_none(trace_dir, "trace_dir") is None:
        trace_dir = tempfile.mkdtemp(prefix="amp_profile_")
    trace_dir = Path(trace_dir)
    trace_dir.mkdir(parents=True, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="autocast_", suffix=".json", dir=trace_dir)
    os.close(fd)

    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device_type == "cuda" else [])
    with quiet_fd2():  # kineto's start/stop lines and torch 2.11's per-start UserWarning
        with profile(activities=activities, record_shapes=True) as prof:
            with torch.autocast(device_type, dtype=dtype):
                fn(*args, **kwargs)
            if device_type == "cuda":
                torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path) as f:
        data = json.load(f)
    events = data.get("traceEvents", data) if isinstance(data, dict) else data
    cpu = [
        e
        for e in events
        if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation") and "ts" in e
    ]
    name = torch.cuda.get_device_name() if device_type == "cuda" else None
    return ProfileTree(_build_tree(cpu), path, device_type, dtype, name)


# --------------------------------------------------------------------------------------------
# The cost of an upcast
# --------------------------------------------------------------------------------------------


def _check_size(size) -> tuple[int, int]:
    if is_int(size):
        size = (int(size), int(size))
    if not isinstance(size, (tuple, list)) or len(size) != 2 or not all(is_int(v, 1) for v in size):
        raise ValueError(f"size must be a positive int or a pair (rows, features) of positive ints, got {size!r}")
    rows, features = int(size[0]), int(size[1])
    if rows * features > 2**26:
        raise ValueError(f"size {rows} x {features} is over 2**26 elements; keep it smaller")
    return rows, features


@dataclass(frozen=True, repr=False)
class CastCost(TableRecord):
    """The timings of :func:`cast_cost` (medians, in seconds): ``autocast_layer_norm_s``,
    ``upcast_then_layer_norm_s``, ``upcast_into_buffer_then_layer_norm_s``, ``cast_s`` and
    ``layer_norm_fp32_s``; ``cast_over_layer_norm`` = ``cast_s / layer_norm_fp32_s``;
    ``autocast_inserts_upcast`` whether autocast inserted the bf16 -> fp32 cast (traced); ``size`` (rows,
    features), ``repeats`` and ``device`` (``"cpu"`` or the GPU's name) as measured. Shown as a table of the
    timings in ms."""

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


def cast_cost(size=(4096, 1024), repeats: int = 20, *, device: str = "cpu") -> CastCost:
    """Time an fp32 layer norm fed a low-precision activation, and the cast it needs.

    ``x`` is a bfloat16 ``(rows, features)`` tensor (``size``; an int means square) and
    ``ln`` an ``nn.LayerNorm(features)`` with fp32 weight and bias. Medians of ``repeats`` timed
    calls (after 3 untimed ones; :func:`amp_lessons.timing.time_fn`), in seconds, without
    autograd:

    - ``"autocast_layer_norm_s"``: ``ln(x)`` under ``torch.autocast(device, bfloat16)``, what
      autocast really does here. On CUDA, layer_norm is an fp32 op, so autocast inserts the
      upcast; under CPU autocast it is on no list, so no cast is inserted and the mixed
      bf16-input/fp32-weight kernel runs (``"autocast_inserts_upcast"`` says which, traced).
    - ``"upcast_then_layer_norm_s"``: ``ln(x.float())``, the CUDA policy spelled out.
    - ``"upcast_into_buffer_then_layer_norm_s"``: the same with the fp32 copy written into a
      buffer allocated once (``ln(buf.copy_(x))``): the arithmetic and memory traffic without
      a fresh allocation. On Linux the difference can be large: ``ln(x.float())`` frees two
      big temporaries per call, glibc's ``malloc`` gives that memory back to the OS and every
      call faults it in again (on the 2-core CI machine at 4096 x 1024: about 10 ms instead of
      about 1.5 ms; with trimming switched off through ``mallopt`` the two agree). That is the
      allocator, not the cast.
    - ``"cast_s"``: ``x.float()`` alone.
    - ``"layer_norm_fp32_s"``: ``ln(x32)`` on an fp32 copy of ``x``, no cast.
    - ``"cast_over_layer_norm"``: ``cast_s / layer_norm_fp32_s``.

    Returned as the :class:`CastCost`, with the ``size``, ``repeats`` and ``device`` (``"cpu"`` or the GPU's
    name) measured. CPU times are noisy: the first large allocations of a process can add page-fault time, so run it
    twice before reading much into one result.
    """
    rows, features = _check_size(size)
    count(repeats, "repeats", 1, 10_000, "timed calls of each of four ops")
    if device not in DEVICE_TYPES:
        raise ValueError(f"device must be 'cpu' or 'cuda', got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("cast_cost(device='cuda') needs a CUDA GPU, and torch sees none here; use device='cpu'")
    g = torch.Generator().manual_seed(0)
    x32 = torch.randn(rows, features, generator=g).to(device)
    x = x32.to(torch.bfloat16)
    ln = torch.nn.LayerNorm(features).to(device)
    buf = torch.empty_like(x32)

    def autocast_ln():
        with torch.autocast(device, dtype=torch.bfloat16):
            return ln(x)

    probe = trace(lambda m, t: m(t), ln, x[:2], device_type=device, dtype=torch.bfloat16, fake=False)
    inserts = any(
        op.is_cast and op.in_dtypes[0] == torch.bfloat16 and op.out_dtypes[0] == torch.float32 for op in probe.ops
    )
    with torch.no_grad():
        times = {
            "autocast_layer_norm_s": time_fn(autocast_ln, device=device, repeats=int(repeats)).median_s,
            "upcast_then_layer_norm_s": time_fn(lambda: ln(x.float()), device=device, repeats=int(repeats)).median_s,
            "upcast_into_buffer_then_layer_norm_s": time_fn(
                lambda: ln(buf.copy_(x)), device=device, repeats=int(repeats)
            ).median_s,
            "cast_s": time_fn(lambda: x.float(), device=device, repeats=int(repeats)).median_s,
            "layer_norm_fp32_s": time_fn(lambda: ln(x32), device=device, repeats=int(repeats)).median_s,
        }
    return CastCost(
        **times,
        cast_over_layer_norm=times["cast_s"] / times["layer_norm_fp32_s"],
        autocast_inserts_upcast=inserts,
        size=(rows, features),
        repeats=int(repeats),
        device=torch.cuda.get_device_name() if device == "cuda" else "cpu",
    )


def output_dtypes(exprs: dict, *args, device_types=DEVICE_TYPES) -> dict:
    """``{label: {device_type: dtype name}}``: the output dtype of each ``exprs[label](*args)`` traced under
    each device type's autocast (:func:`trace`: CPU autocast measured here; CUDA autocast on a GPU, or
    previewed with fake CUDA tensors). A call that raises gives ``"error"``. ``exprs`` maps a label to a
    function of ``args``; the names are ``torch.float32``'s without ``torch.``, e.g. ``"bfloat16"``."""
    if not isinstance(exprs, dict) or not exprs:
        raise TypeError(f"exprs must be a non-empty dict {{label: function}}, got {exprs!r}")
    bad = [k for k, f in exprs.items() if not isinstance(k, str) or not callable(f)]
    if bad:
        raise TypeError(f"exprs must map string labels to functions; these do not: {bad}")
    if isinstance(device_types, str):
        device_types = (device_types,)
    device_types = tuple(_check_device_type(d) for d in sequence(device_types, "device_types", "'cpu'/'cuda'"))
    out = {}
    for label, fn in exprs.items():
        row = {}
        for d in device_types:
            try:
                with _quiet_fake_errors():
                    row[d] = _dtype_name(trace(fn, *args, device_type=d).output.dtype)
            except (RuntimeError, TypeError, ValueError) as exc:
                if any(m in str(exc) for m in _PREVIEW_LIMITS):
                    raise  # a limit of the fake CUDA preview, not a refusal by autocast
                row[d] = "error"
        out[label] = row
    return out


#: errors that come from the fake CUDA preview itself (a CPU-only torch, a real tensor in a fake region)
_PREVIEW_LIMITS = ("not linked with support for cuda", "real tensor inside the fake CUDA preview")


@contextlib.contextmanager
def _quiet_fake_errors():
    """Silence the fake-tensor logger's traceback for an op whose meta function refuses its inputs (the
    error itself is raised and becomes the ``"error"`` answer)."""
    log = logging.getLogger("torch._subclasses.fake_tensor")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)
