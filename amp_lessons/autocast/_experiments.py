"""Lesson 04's experiments: the autocast policy tables of the installed torch (:func:`policy_table` and friends),
the op tracer (:func:`trace`, with a fake CUDA preview), the profiler tree (:func:`profile_tree`) and the cost of an
upcast (:func:`cast_cost`). They return the records of :mod:`._records`; the list reading is in :mod:`._policy`."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import os
import tempfile
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .._runtime import quiet_fd2
from .._validate import count, is_int, path_or_none, sequence
from ..timing import time_fn
from ._policy import SOURCES, classify, cuda_autocast_on_fake, first_float, is_cast_op
from ._records import CastCost, OpRecord, ProfileNode, ProfileTree, Trace, bare_op_name, dtype_name

__all__ = [
    "DEVICE_TYPES",
    "POLICIES",
    "SOURCES",
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
(https://github.com/pytorch/pytorch/blob/main/aten/src/ATen/autocast_mode.h) and ``"banned"`` (a kernel that
raises)."""

DEVICE_TYPES = ("cpu", "cuda")

_DEFAULT_DTYPES = {"cpu": torch.bfloat16, "cuda": torch.float16}
_AUTOCAST_DTYPES = (torch.bfloat16, torch.float16)


def _check_device_type(device_type, what: str = "device_type") -> str:
    if not isinstance(device_type, str) or device_type not in DEVICE_TYPES:
        raise ValueError(f"{what} must be 'cpu' or 'cuda', got {device_type!r}")
    return device_type


def _check_call(fn, device_type, dtype) -> tuple[str, torch.dtype]:
    """``trace``'s and ``profile_tree``'s common arguments, checked: (device_type, dtype)."""
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    device_type = _check_device_type(device_type)
    return device_type, _check_dtype(dtype, device_type)


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


def policy_table(device_type: str) -> dict[str, str]:
    """``{op name: policy}`` (one of :data:`POLICIES`) for every ATen op with an autocast kernel for
    ``device_type`` (``"cpu"`` or ``"cuda"``; works for ``"cuda"`` without a GPU) in the installed torch.

    Names have no overload (``"mm"``); ops without an autocast kernel (``add``, ``relu``) are absent: they run in
    their inputs' dtype. CUDA classes are read from the installed ``ATen/autocast_mode.h``, the rest measured by
    calling each op under autocast on small samples, once per session in a separate process (a few seconds)."""
    return dict(classify(_check_device_type(device_type))[0])


def policy_sources(device_type: str) -> dict[str, str]:
    """``{op name: how its class was found}`` for the ops of :func:`policy_table`, one of :data:`SOURCES`:
    ``"header"`` (CUDA: the installed ``autocast_mode.h``), ``"measured"`` (the dtype the op returned under autocast
    here) or ``"fallback"`` (no sample could call it: the class copied from ``autocast_mode.cpp``, from the same op in
    the header or the other device type, or from the longest header op name inside its name). Which ops are
    "measured" depends on the CPU (``mkldnn_rnn_layer`` needs AVX512); the table does not."""
    return dict(classify(_check_device_type(device_type))[1])


def policy_groups(device_type: str) -> dict[str, list[str]]:
    """``{policy: sorted op names}`` for every policy in :data:`POLICIES` (empty lists included)."""
    groups: dict[str, list[str]] = {p: [] for p in POLICIES}
    for name, policy in policy_table(device_type).items():
        groups[policy].append(name)
    return {p: sorted(names) for p, names in groups.items()}


def policy_of(op_name, device_type: str) -> str | None:
    """The autocast policy of one op (``"mm"``, ``"aten::mm"``, ``"aten.mm.default"`` or
    ``torch.ops.aten.mm``) on ``device_type``, or None if autocast has no kernel for it there. A name that is no
    ATen operator of the installed torch (``"sideways"``, ``""``) is a ValueError."""
    name = bare_op_name(op_name)
    if not isinstance(getattr(torch.ops.aten, name, None), torch._ops.OpOverloadPacket):
        raise ValueError(
            f"op_name must name an ATen operator of the installed torch, such as 'mm' or 'layer_norm' "
            f"(torch.ops.aten.<name>), got {op_name!r}"
        )
    return policy_table(device_type).get(name)


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
        is_cast = is_cast_op(func) and bool(ins) and bool(outs) and ins[0].dtype != outs[0].dtype
        is_weight_cast = (
            is_cast
            and self.phase == "forward"
            and (isinstance(ins[0], torch.nn.Parameter) or (ins[0].is_leaf and ins[0].requires_grad))
        )
        name = func.__name__.split(".")[0]
        if func.namespace != "aten":
            name = f"{func.namespace}::{name}"
        layout = [(tuple(t.dtype for t in ts), tuple(tuple(t.shape) for t in ts)) for ts in (ins, outs)]
        self.ops.append(OpRecord(self.phase, name, *layout[0], *layout[1], is_cast, is_weight_cast))
        return out


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
    """Fake CUDA copies of the tensors and ``nn.Module`` s in ``obj`` (lists, tuples and dicts walked; anything else
    returned as is) for ``mode`` (a ``FakeTensorMode``; a new one if None): shapes, strides and dtypes, no values;
    module copies' parameters do not require grad. :func:`trace` does this itself for its arguments."""
    mode = FakeTensorMode() if mode is None else mode
    if not isinstance(mode, FakeTensorMode):
        raise TypeError(f"mode must be a FakeTensorMode or None, got {type(mode).__name__}")
    return _convert(obj, mode, {})


def _tensors_in(tree):
    """(what, tensor) for the tensors of ``tree`` and the parameters and buffers of its modules."""
    for leaf in tree_leaves(tree):
        if isinstance(leaf, torch.Tensor):
            yield "a tensor argument", leaf
        elif isinstance(leaf, torch.nn.Module):
            for n, t in (*leaf.named_parameters(), *leaf.named_buffers()):
                yield f"{type(leaf).__name__}.{n}", t


def _check_devices(tree, device_type: str) -> None:
    for what, t in _tensors_in(tree):
        if isinstance(t, FakeTensor):
            raise ValueError(f"{what} is a fake tensor, but fake=False: pass real tensors, or fake=True")
        if t.device.type != device_type and t.dim() > 0:
            hint = (
                " (move them with .cuda(), or preview the CUDA policy with fake=True)"
                if device_type == "cuda"
                else " (move them with .cpu())"
            )
            raise ValueError(
                f"{what} is on {t.device}, but device_type={device_type!r} runs autocast on {device_type} tensors{hint}"
            )


def trace(fn, *args, device_type: str = "cpu", dtype=None, fake=None, backward: bool = False, **kwargs) -> Trace:
    """Run ``fn(*args, **kwargs)`` under ``torch.autocast(device_type, dtype)`` and record every ATen op the
    dispatcher runs (name, input and output dtypes and shapes, whether it is a cast) as a :class:`Trace`.

    ``dtype``: ``torch.bfloat16`` or ``torch.float16`` (None: bfloat16 on the CPU, float16 for CUDA).
    ``backward=True`` also runs and records the backward pass of ``fn``'s first floating output (gradient of ones).
    ``device_type="cuda"`` runs for real where torch sees a GPU and every tensor and module is on it (or
    ``fake=False``); otherwise (or ``fake=True``) it previews the CUDA policy on fake CUDA copies of ``args``,
    ``kwargs`` and a module ``fn`` (:func:`fake_cuda`), under ``torch.no_grad()`` without the cast cache, so pass
    every tensor ``fn`` uses as an argument, not through a closure; ``backward=True`` is refused there."""
    device_type, dtype = _check_call(fn, device_type, dtype)
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
        fake = not (
            has_cuda
            and all(
                not isinstance(t, FakeTensor) and t.device.type == "cuda" for _, t in _tensors_in((fn, args, kwargs))
            )
        )
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
    if fake:
        return _trace_fake(fn, args, kwargs, dtype)
    _check_devices((fn, args, kwargs), device_type)
    return _trace_real(fn, args, kwargs, device_type, dtype, backward)


def _trace_real(fn, args, kwargs, device_type, dtype, backward) -> Trace:
    rec = _Recorder()
    with rec:
        with torch.autocast(device_type, dtype=dtype):
            out = fn(*args, **kwargs)
        if backward:
            root = first_float(out)
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
    fakes = (t.fake_mode for _, t in _tensors_in((fn, args, kwargs)) if isinstance(t, FakeTensor))
    mode = next(fakes, None) or FakeTensorMode()
    memo: dict = {}
    fn_c = _convert(fn, mode, memo) if isinstance(fn, torch.nn.Module) else fn
    args_c, kwargs_c = _convert(args, mode, memo), _convert(kwargs, mode, memo)
    rec = _Recorder()
    try:
        with torch.no_grad(), mode, rec, cuda_autocast_on_fake(dtype, cache=False):
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


_NOT_TENSORS = {"Scalar", "ScalarList", "", "GenericList", "None", "Device", "Layout", "bool", "int"}


def _clean_inputs(dims, types) -> tuple[list, list]:
    dims, types = list(dims or []), list(types or [])
    if len(dims) != len(types):
        return dims, [t.replace("c10::", "") for t in types]
    keep = [i for i, t in enumerate(types) if t not in _NOT_TENSORS]
    return [dims[i] for i in keep], [types[i].replace("c10::", "") for i in keep]


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
    """Run ``fn(*args, **kwargs)`` once, unwarmed, under ``torch.autocast(device_type, dtype)`` inside
    ``torch.profiler`` and return its CPU op tree (:class:`ProfileTree`: shapes, dtypes, self and total times;
    autocast's casts appear as ``aten::to`` children). The Chrome trace is written to a new file in ``trace_dir``
    (default: a new temporary folder). ``device_type="cuda"`` needs a GPU."""
    device_type, dtype = _check_call(fn, device_type, dtype)
    if device_type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            "profile_tree(device_type='cuda') times real CUDA kernels, and torch sees no GPU here; "
            "use device_type='cpu', or trace(..., device_type='cuda') to preview the CUDA policy"
        )
    _check_devices((fn, args, kwargs), device_type)
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


def _check_size(size) -> tuple[int, int]:
    if is_int(size):
        size = (int(size), int(size))
    if not isinstance(size, (tuple, list)) or len(size) != 2 or not all(is_int(v, 1) for v in size):
        raise ValueError(f"size must be a positive int or a pair (rows, features) of positive ints, got {size!r}")
    rows, features = int(size[0]), int(size[1])
    if rows * features > 2**26:
        raise ValueError(f"size {rows} x {features} is over 2**26 elements; keep it smaller")
    return rows, features


def cast_cost(size=(4096, 1024), repeats: int = 20, *, device: str = "cpu") -> CastCost:
    """Time an fp32 ``nn.LayerNorm`` fed a bfloat16 ``(rows, features)`` activation (``size``; an int means square),
    and the cast it needs: medians of ``repeats`` calls (:func:`amp_lessons.timing.time_fn`) of ``ln(x)`` under
    autocast, ``ln(x.float())``, ``ln(buf.copy_(x))`` (the upcast into a buffer allocated once: no fresh
    allocation), ``x.float()`` alone and ``ln(x32)``, and whether autocast inserts the upcast (traced: yes on CUDA,
    where layer_norm is an fp32 op; no on the CPU). Returns a :class:`CastCost`; CPU times are noisy."""
    rows, features = _check_size(size)
    count(repeats, "repeats", 1, 10_000, "timed calls of each of four ops")
    if _check_device_type(device, "device") == "cuda" and not torch.cuda.is_available():
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
    calls = {
        "autocast_layer_norm_s": autocast_ln,
        "upcast_then_layer_norm_s": lambda: ln(x.float()),
        "upcast_into_buffer_then_layer_norm_s": lambda: ln(buf.copy_(x)),
        "cast_s": lambda: x.float(),
        "layer_norm_fp32_s": lambda: ln(x32),
    }
    with torch.no_grad():
        times = {k: time_fn(f, device=device, repeats=int(repeats)).median_s for k, f in calls.items()}

    return CastCost(
        **times,
        cast_over_layer_norm=times["cast_s"] / times["layer_norm_fp32_s"],
        autocast_inserts_upcast=inserts,
        size=(rows, features),
        repeats=int(repeats),
        device=torch.cuda.get_device_name() if device == "cuda" else "cpu",
    )


def output_dtypes(exprs: dict, *args, device_types=DEVICE_TYPES) -> dict:
    """``{label: {device_type: dtype name}}``: the output dtype (``"bfloat16"``...) of each ``exprs[label](*args)``
    traced under each device type's autocast (:func:`trace`; CUDA previewed without a GPU); ``"error"`` where the
    call raises."""
    if not isinstance(exprs, dict) or not exprs:
        raise TypeError(f"exprs must be a non-empty dict {{label: function}}, got {exprs!r}")
    bad = [k for k, f in exprs.items() if not isinstance(k, str) or not callable(f)]
    if bad:
        raise TypeError(f"exprs must map string labels to functions; these do not: {bad}")
    if isinstance(device_types, str):
        device_types = (device_types,)
    device_types = tuple(
        _check_device_type(d, f"device_types[{i}]")
        for i, d in enumerate(sequence(device_types, "device_types", "'cpu'/'cuda'"))
    )
    if not device_types:
        raise ValueError("device_types must name at least one of 'cpu' and 'cuda', got an empty selection ()")
    if len(set(device_types)) != len(device_types):
        raise ValueError(f"device_types must name each device type once, got {device_types!r}")
    out = {}
    for label, fn in exprs.items():
        row = {}
        for d in device_types:
            try:
                with _quiet_fake_errors():
                    row[d] = dtype_name(trace(fn, *args, device_type=d).output.dtype)
            except (RuntimeError, TypeError, ValueError) as exc:
                if any(m in str(exc) for m in _PREVIEW_LIMITS):
                    raise  # a limit of the fake CUDA preview, not a refusal by autocast
                row[d] = "error"
        out[label] = row
    return out


_PREVIEW_LIMITS = ("not linked with support for cuda", "real tensor inside the fake CUDA preview")


@contextlib.contextmanager
def _quiet_fake_errors():
    """Silence the fake-tensor logger's traceback for an op its meta function refuses."""

    log = logging.getLogger("torch._subclasses.fake_tensor")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        log.setLevel(level)
