"""Lesson 04's reading of torch's autocast lists: ops from the dispatcher, CUDA classes parsed from the installed
``ATen/autocast_mode.h``, the rest measured on sample inputs built from each op's schema in a fresh process, combined
by :func:`classify`."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import math
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

SOURCES = ("header", "measured", "fallback")
"""How :func:`~.experiments.policy_sources` says an op's class was found."""

_DISPATCH_KEYS = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}
_PROBE_TIMEOUT_S = 120

_CAST_OPS = {"_to_copy", "to", "convert_element_type", "_autocast_to_reduced_precision", "_autocast_to_full_precision"}


def is_cast_op(func) -> bool:
    return getattr(func, "__name__", "").split(".")[0] in _CAST_OPS


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


def parse_header(text: str) -> dict[str, str]:
    """``{"aten::name.overload": policy}`` from the ``#define AT_FORALL_X(_)`` macros of ``ATen/autocast_mode.h``."""
    out: dict[str, str] = {}
    macros = re.findall(
        r"^[ \t]*#[ \t]*define[ \t]+(AT_FORALL_\w+)[ \t]*\(_\)[^\n]*\\\s*?\n((?:[^\n]*\\[ \t\r]*\n)*[^\n]*)", text, re.M
    )
    for macro, body in macros:
        if macro not in _HEADER_MACROS:
            continue
        body = " ".join(line.rstrip().rstrip("\\") for line in body.splitlines())
        if macro == "AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE":
            for qualified, how in re.findall(
                r'"(\w+(?:\.\w+)?)"[^"]*?\b(fp32\w*|lower_precision\w*|promote)\s*\)', body
            ):
                out[f"aten::{qualified}"] = "lower_precision" if how == "lower_precision_fp" else how
            continue
        for name, overload in re.findall(r"(?<![\w)])_\(\s*(\w+)\s*(?:,\s*(\w+)\s*)?\)", body):
            out[f"aten::{name}" + (f".{overload}" if overload else "")] = _HEADER_MACROS[macro]
    return out


@functools.lru_cache(maxsize=None)
def header_policies() -> dict[str, str]:
    """The CUDA policy of the ops listed in the installed header ({} if it is not shipped)."""
    try:
        return parse_header(_header_path().read_text())
    except OSError:
        return {}


def autocast_ops(device_type: str) -> list[str]:
    """Every ``aten::name[.overload]`` with a kernel of its own for autocast on ``device_type``."""
    key = _DISPATCH_KEYS[device_type]
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    return sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::") and has(n, key))


class CannotBuild(Exception):
    """The generic sample builder has no rule for an argument of this op."""


_INDEX_NAMES = ("index", "indices")
_PIVOT_NAMES = ("pivots", "LU_pivots")
_INT_FILL = {"padding": 0, "output_padding": 0, "pad": 0, "blank": 0}


def _float_sample(shape, dtype, device) -> torch.Tensor:
    """Values in (0, 1); square matrices symmetric positive definite, so factorizations succeed."""
    t = torch.full(shape, 0.1, device=device)
    if len(shape) >= 2 and shape[-1] == shape[-2]:
        t = t + 0.5 * torch.eye(shape[-1], device=device)
    return t.to(dtype)


class Sampler:
    """Makes the tensors of one call: floating ones take their dtypes from ``dtypes`` in order (the last repeats)."""

    def __init__(self, dtypes, device):
        self.dtypes, self.device, self.n_float = dtypes, device, 0

    def float(self, shape, invertible: bool = False) -> torch.Tensor:
        """A floating tensor of ``shape``; ``invertible``: its elements make an SPD n x n matrix."""
        d = self.dtypes[min(self.n_float, len(self.dtypes) - 1)]
        self.n_float += 1
        if invertible:
            n = round(math.prod(shape) ** 0.5)
            return _float_sample((n, n), d, self.device).reshape(shape)
        return _float_sample(tuple(shape), d, self.device)

    def long(self, shape, value=0, dtype=torch.long) -> torch.Tensor:
        return torch.full(tuple(shape), value, dtype=dtype, device=self.device)


def generic_sample(schema, sampler: Sampler, s: int, r: int, variant: dict):
    """Positional arguments for ``schema``: tensors of shape ``(s,)*r`` (except where ``variant`` says), optional
    ones None, defaults left out, small harmless numbers."""
    shape = (s,) * r
    args = []
    for a in schema.arguments:
        if a.alias_info is not None and a.alias_info.is_write:
            raise CannotBuild("writes into an argument")
        if a.has_default_value() or a.kwarg_only:
            break
        kind, name = a.type.kind(), a.name
        if kind == "TensorType":
            if name in _INDEX_NAMES:
                v = sampler.long(shape if variant["index_full"] else (s,))
            elif name in _PIVOT_NAMES:
                v = sampler.long(shape[:-1], 1, torch.int32)
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
                raise CannotBuild(f"list of {element}")
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
            raise CannotBuild(f"argument {name} of kind {kind}")
        args.append(v)
    return args, {}


# Ops the generic rules cannot feed: a hand-made sample each, (sampler) -> (args, kwargs).
def _ctc_sample(t: Sampler, tensor_lengths: bool):
    T, N, C, L = 4, 2, 3, 2
    lengths_in, lengths_t = [T] * N, [L] * N
    if tensor_lengths:
        lengths_in, lengths_t = t.long((N,), T), t.long((N,), L)
    return [t.float((T, N, C)), t.long((N, L), 1), lengths_in, lengths_t], {}


def _mha_sample(t: Sampler):
    B, L, E, H = 1, 2, 4, 2
    q, k, v = t.float((B, L, E)), t.float((B, L, E)), t.float((B, L, E))
    return [q, k, v, E, H, t.float((3 * E, E)), t.float((3 * E,)), t.float((E, E)), t.float((E,))], {}


def _rnn_sample(t: Sampler):
    T, B, In, Hd = 2, 1, 2, 2
    x = t.float((T, B, In))
    w0, w1, w2, w3 = t.float((4 * Hd, In)), t.float((4 * Hd, Hd)), t.float((4 * Hd,)), t.float((4 * Hd,))
    hx, cx = t.float((B, Hd)), t.float((B, Hd))
    # reverse, batch_sizes, mode (2 = LSTM), hidden_size, num_layers, has_biases, bidirectional, batch_first, train
    return [x, w0, w1, w2, w3, hx, cx, False, [], 2, Hd, 1, True, False, False, False], {}


SAMPLES = {
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

SHAPES = ((2, 2), (2, 3), (2, 4), (2, 1), (2, 5), (3, 2), (3, 3), (3, 1), (3, 4), (3, 5))
VARIANTS = tuple(
    {"target": target, "index_full": index_full, "vectors": vectors}
    for vectors in ((), ("bias", "tau", "input2"), ("weight", "bias", "tau", "input2"))
    for target in ("float", "long_batch", "long_same")
    for index_full in (False, True)
)

_COMPLEX_PARTS = {torch.complex32: torch.float16, torch.complex64: torch.float32, torch.complex128: torch.float64}


def first_float(out):
    """The first floating or complex tensor of ``out``, or None."""
    return next(
        (t for t in tree_leaves(out) if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())), None
    )


def result_dtype(out):
    """The dtype of the first floating (complex: its real part) output tensor."""
    t = first_float(out)
    return None if t is None else _COMPLEX_PARTS.get(t.dtype, t.dtype)


class _FirstCasts(TorchDispatchMode):
    """Records the dtype changes of the casts that run before the op proper."""

    def __init__(self):
        super().__init__()
        self.casts, self.done = [], False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if not self.done:
            if is_cast_op(func) and isinstance(args[0], torch.Tensor) and isinstance(out, torch.Tensor):
                self.casts.append((args[0].dtype, out.dtype))
            else:
                self.done = True
        return out


def measure(qualified: str, device: str, low: torch.dtype) -> str | None:
    """The autocast class of one op overload under the entered autocast of ``device`` (None if no sample worked),
    from its output dtype on fp32, ``low`` and mixed inputs, or else from the casts autocast puts before it."""
    name, _, overload = qualified.partition(".")
    schema = torch._C._get_schema(name, overload)
    op = getattr(getattr(torch.ops.aten, name.split("::", 1)[1]), overload or "default")
    fp32 = torch.float32

    def call(dtypes, build, mode=None):
        sampler = Sampler(dtypes, device)
        args, kwargs = build(sampler)
        with mode or contextlib.nullcontext():
            return op(*args, **kwargs), sampler.n_float

    builds = (
        [SAMPLES[qualified]]
        if qualified in SAMPLES
        else [
            functools.partial(generic_sample, schema, s=s, r=r, variant=variant)
            for s, r in SHAPES
            for variant in VARIANTS
        ]
    )
    for build in builds:
        try:
            out_a, n_float = call([fp32], build)
        except CannotBuild:
            return None
        except Exception as e:  # any failure of a sample: try the next one
            if "unsafe to autocast" in str(e):
                return "banned"
            continue
        if n_float == 0:
            return None
        a = result_dtype(out_a)
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
            b = result_dtype(call([low], build)[0])
        except Exception:
            b = None
        if b == fp32:
            return "fp32"
        if n_float >= 2:
            try:
                c = result_dtype(call([low, fp32], build)[0])
            except Exception:
                c = None
            if c == fp32 and b != fp32:
                return "promote"
        return None
    return None


@contextlib.contextmanager
def cuda_autocast_on_fake(dtype: torch.dtype, cache: bool):
    """CUDA autocast switched on without ``torch.autocast``'s availability check (for fake CUDA tensors)."""
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


def probe_all() -> dict:
    """``{"cpu": {op: policy | None}, "cuda": {...}}``: every CPU op measured, and the CUDA ops the header does not
    list, on fake CUDA tensors."""
    header = header_policies()
    cuda_ops = [op for op in autocast_ops("cuda") if op not in header]
    result = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
            result["cpu"] = {op: measure(op, "cpu", torch.bfloat16) for op in autocast_ops("cpu")}
        before = logging.root.manager.disable
        logging.disable(logging.CRITICAL)  # fake tensors log every failed sample with its traceback
        try:
            with torch.no_grad(), FakeTensorMode(), cuda_autocast_on_fake(torch.float16, cache=False):
                result["cuda"] = {op: measure(op, "cuda", torch.float16) for op in cuda_ops}
        finally:
            logging.disable(before)
    return result


@functools.lru_cache(maxsize=None)
def _probe_results() -> dict:
    """:func:`probe_all`, once per session in a fresh process, so its warnings do not touch the learner's."""
    root = str(Path(__file__).resolve().parent.parent)
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); "
        "from amp_lessons.autocast._policy import probe_all; print(json.dumps(probe_all()))"
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


def base(qualified: str) -> str:
    return qualified.split("::", 1)[-1].split(".", 1)[0]


@functools.lru_cache(maxsize=None)
def classify(device_type: str) -> tuple[dict[str, str], dict[str, str]]:
    """(policy table, source table), both keyed by op name without overload."""
    measured = _probe_results()[device_type]
    header = header_policies() if device_type == "cuda" else {}
    by_name: dict[str, list[tuple[str, str]]] = {}
    for qualified in autocast_ops(device_type):
        found = by_name.setdefault(base(qualified), [])
        if qualified in header:
            found.append((header[qualified], "header"))
        elif measured.get(qualified) is not None:
            found.append((measured[qualified], "measured"))
    table, sources = {}, {}
    for name, found in sorted(by_name.items()):
        if found:
            found.sort(key=lambda pr: SOURCES.index(pr[1]))
            table[name], sources[name] = found[0]
            continue
        fallback = _fallback(name, device_type)
        if fallback is not None:
            table[name], sources[name] = fallback, "fallback"
    return table, sources


# Ops no sample can call here, with their class: a CPU op whose samples need AVX512, in
# https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.cpp, and a CUDA op registered outside
# autocast_mode.h that fake tensors cannot run (a CUDA build only), in
# https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/native/cudnn/AutocastRNN.cpp
_LISTED = {"cpu": {"mkldnn_rnn_layer": "lower_precision"}, "cuda": {"_cudnn_rnn": "lower_precision"}}


def _fallback(name: str, device_type: str) -> str | None:
    """The class of an op neither the header nor a sample gave: the listed ones, the header's for the same name,
    the other device type's, or the header's for the longest op name inside this one."""
    if name in _LISTED[device_type]:
        return _LISTED[device_type][name]
    header = {base(q): p for q, p in sorted(header_policies().items())}
    if name in header:
        return header[name]
    other = "cuda" if device_type == "cpu" else "cpu"
    for qualified, policy in sorted(_probe_results()[other].items()):
        if base(qualified) == name and policy is not None:
            return policy
    inside = sorted((n for n in header if len(n) >= 4 and n in name), key=len)
    return header[inside[-1]] if inside else None
