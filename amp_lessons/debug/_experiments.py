"""Lesson 08's toolkit for any ``nn.Module``, on CPU or CUDA: :func:`trace_overflow` (per-module magnitudes and the
first inf/NaN), :func:`why_not_faster` (a measured triage of AMP's speed) and :func:`dtype_map` (the dtypes and
bytes of one training step). They return the records of :mod:`._records`."""

from __future__ import annotations

import contextlib
import copy
import math
import re
import statistics
from collections import OrderedDict

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .. import timing
from .._runtime import quiet_fd2
from .._validate import count, int_at_least, model_call, positive
from ..autocast._experiments import DEVICE_TYPES
from ..device import cpu_info, gpu_info
from ..formats import CLASSES, get_format
from ._records import DtypeMap, ModuleRecord, OverflowTrace, TensorStats, Triage

__all__ = ["PRECISION_SETTINGS", "dtype_map", "tensor_stats", "trace_overflow", "why_not_faster"]

_AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _check_autocast(dtype, what: str = "autocast", *, none: bool = True) -> torch.dtype | None:
    """None (no autocast, where ``none``), torch.float16/torch.bfloat16, or 'fp16'/'bf16'."""
    if dtype is None and none:
        return None
    if isinstance(dtype, str) and dtype in _AUTOCAST_DTYPES:
        return _AUTOCAST_DTYPES[dtype]
    if dtype in (torch.float16, torch.bfloat16):
        return dtype
    allowed = "None, torch.float16" if none else "torch.float16"
    raise ValueError(f"{what}={dtype!r} is not allowed: use {allowed}, torch.bfloat16, 'fp16' or 'bf16'")


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


def _check_run(model, inputs, loss_fn, device_type, *, loss_required: bool = True) -> tuple:
    """The arguments every tool takes, checked: (the inputs as a tuple, loss_fn, the device type)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__} {model!r:.60}")
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    elif not (isinstance(inputs, (tuple, list)) and any(isinstance(t, torch.Tensor) for t in inputs)):
        raise TypeError(
            f"inputs must be a tensor or a tuple/list of the model's positional arguments holding at least one "
            f"tensor, got {type(inputs).__name__}"
        )
    if not callable(loss_fn) and (loss_fn is not None or loss_required):
        raise TypeError(
            f"loss_fn must be a callable taking the model's output and returning a scalar loss, got {loss_fn!r}"
        )
    return tuple(inputs), loss_fn, _device_type(model, tuple(inputs), device_type)


def _floats(tree) -> list[torch.Tensor]:
    return [t for t in tree_leaves(tree) if isinstance(t, torch.Tensor) and t.is_floating_point()]


@contextlib.contextmanager
def _saved_grads(model: nn.Module):
    """Set every parameter's .grad aside while a tool runs its own backward, and put it back after."""
    params = list(model.parameters())
    saved = [p.grad for p in params]
    for p in params:
        p.grad = None
    try:
        yield
    finally:
        for p, g in zip(params, saved):
            p.grad = g


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


def _setting(device_type: str, dtype: torch.dtype | None) -> str:
    if dtype is None:
        return f"no autocast ({device_type})"
    return f"torch.autocast({device_type!r}, dtype={dtype})"


def trace_overflow(
    model: nn.Module, inputs, *, loss_fn=None, autocast=None, device_type: str | None = None, formats=("fp16", "bf16")
) -> OverflowTrace:
    """Run ``model(*inputs)`` once with a forward hook on every module (and, with ``loss_fn``,
    ``loss_fn(output).backward()`` with a hook on each output's gradient) and return an :class:`OverflowTrace`.

    ``autocast``: None, ``torch.float16``/``"fp16"`` or ``torch.bfloat16``/``"bf16"`` (the forward runs under
    ``torch.autocast(device_type, dtype)``). ``formats``: the formats whose class fractions are computed for each
    output. Run it in fp32 to ask where fp16 would overflow. The model's ``.grad`` are restored and every hook is
    removed, also when the model raises."""
    args, loss_fn, dev = _check_run(model, inputs, loss_fn, device_type, loss_required=False)
    dtype = _check_autocast(autocast)
    many = isinstance(formats, (tuple, list))
    fmts = tuple(
        get_format(f, what=f"formats[{i}]" if many else "formats").name
        for i, f in enumerate(formats if many else [formats])
    )
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
        with _saved_grads(model):
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


_MATMUL_OP = re.compile(r"^aten::(mm|addmm|bmm|baddbmm|_addmm_activation|.*conv.*|_scaled_mm|mkldnn_.*linear.*)$")
_CAST_OP = "aten::_to_copy"
_PROBE_SIZE = 256  # the n of the n^3 matmul whose low-precision/fp32 rate the triage measures (CPU)


def _profile_shares(step, device_type: str, calls: int = 3) -> tuple[float, int, float, float]:
    """(matmul share, casts per call, cast share, matmul time in µs) of ``calls`` calls of ``step`` (profiler)."""
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
            out.append(f"'{name}' ({', '.join(bad)})")
    return out


def _tf32_baseline(device_type: str) -> bool:
    if device_type == "cuda":
        return torch.backends.cuda.matmul.fp32_precision == "tf32" or torch.backends.cudnn.conv.fp32_precision == "tf32"
    return torch.backends.mkldnn.matmul.fp32_precision in ("tf32", "bf16")


def _hardware(device_type: str, dtype: torch.dtype) -> tuple[str, bool]:
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


@contextlib.contextmanager
def _torch_threads(n: int | None):
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _probe_rate_ratios(low: torch.dtype, rounds: int, calls: int = 3) -> tuple[float, ...]:
    """fp32 time / ``low`` time of a 256^3 matmul on this CPU, once per round: the fastest of ``calls`` calls."""
    a32 = torch.randn(_PROBE_SIZE, _PROBE_SIZE, generator=torch.Generator().manual_seed(0))
    alow = a32.to(low)
    ratios = []
    for r in range(rounds):
        warm = 1 if r == 0 else 0
        t32 = timing.time_fn(lambda: a32 @ a32, warmup=warm, repeats=calls).min_s
        tlow = timing.time_fn(lambda: alow @ alow, warmup=warm, repeats=calls).min_s
        ratios.append(t32 / tlow)
    return tuple(ratios)


def why_not_faster(
    model: nn.Module,
    inputs,
    *,
    loss_fn,
    dtype=torch.bfloat16,
    device_type: str | None = None,
    repeats: int = 7,
    rounds: int = 3,
    threads: int | None = 1,
    batch_dim: int = 0,
    launch_ratio: float = 1.3,
) -> Triage:
    """Time one training step (forward, ``loss_fn(output).backward()``) of ``model`` in fp32 and under
    ``torch.autocast(device_type, dtype)`` and return the :class:`Triage`: whether AMP was faster and, only where
    it was not, why (the findings: matmuls not faster, matmuls a small share (Amdahl's law), overhead-bound, casts,
    dimensions not multiples of 8, a TF32 fp32 baseline).

    ``rounds`` rounds of ``repeats`` steps each of fp32, autocast and fp32 at twice the batch (inputs concatenated
    along ``batch_dim``; overhead-bound below ``launch_ratio``), interleaved, with ``threads`` torch threads on the
    CPU (None: as set); every figure is a median, and there is no verdict where the runs contradict each other.
    The model's ``.grad`` are restored. Keep the model small on a CPU without bf16/fp16 instructions."""
    args, loss_fn, dev = _check_run(model, inputs, loss_fn, device_type)
    low = _check_autocast(dtype, "dtype", none=False)  # the autocast dtype to compare with fp32
    repeats = count(repeats, "repeats", 1, 1_000, "timed steps of each setting in each round")
    rounds = count(rounds, "rounds", 1, 100, "rounds of timed steps")
    if threads is not None:
        threads = count(threads, "threads", 1, 1_024, "torch threads while timing (or None: as set)")
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

    steps = {
        "fp32": make_step(False, args),
        "amp": make_step(True, args),
        "2x": make_step(False, _double_batch(args, batch_dim)),
    }
    times: dict[str, list[float]] = {k: [] for k in steps}
    shares32, shares_amp, casts, cast_shares, model_ratios = [], [], [], [], []
    threads = threads if dev == "cpu" else None
    with _saved_grads(model), _torch_threads(threads):
        for r in range(rounds):
            order = ("fp32", "amp", "2x") if r % 2 == 0 else ("amp", "fp32", "2x")
            for k in order:
                times[k] += timing.time_fn(steps[k], device=dev, warmup=2 if r == 0 else 1, repeats=repeats).times_s
            p32, _, _, mm32 = _profile_shares(steps["fp32"], dev)
            pamp, n_casts, cast_share, mm_amp = _profile_shares(steps["amp"], dev)
            shares32.append(p32)
            shares_amp.append(pamp)
            casts.append(n_casts)
            cast_shares.append(cast_share)
            model_ratios.append(mm32 / mm_amp if mm_amp > 0 else 1.0)
        rate_ratios = _probe_rate_ratios(low, rounds) if dev == "cpu" else ()
    hw, fast = _hardware(dev, low)
    return Triage(
        device=dev,
        dtype="fp16" if low == torch.float16 else "bf16",
        threads=threads,
        rounds=rounds,
        fp32_times_s=tuple(times["fp32"]),
        amp_times_s=tuple(times["amp"]),
        fp32_2x_times_s=tuple(times["2x"]),
        matmul_share_fp32=statistics.median(shares32),
        matmul_share_amp=statistics.median(shares_amp),
        casts=int(statistics.median(casts)),
        cast_share=statistics.median(cast_shares),
        model_rate_ratios=tuple(model_ratios),
        rate_ratios=rate_ratios,
        hardware=hw,
        fast_hardware=fast,
        odd_dims=_odd_dims(model, 8),
        tf32_baseline=_tf32_baseline(dev),
        launch_ratio=launch_ratio,
    )


class _ParameterCasts(TorchDispatchMode):
    """The bytes of every cast (``aten._to_copy``) of a parameter: ``copies[id(param)]``."""

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


def dtype_map(
    model: nn.Module,
    inputs,
    *,
    loss_fn,
    setting: str = "autocast bf16",
    optimizer=torch.optim.Adam,
    device_type: str | None = None,
) -> DtypeMap:
    """One training step of a copy of ``model`` under ``setting`` (a key of :data:`PRECISION_SETTINGS`) with
    ``optimizer`` (a class taking ``(params, lr=...)``): the :class:`DtypeMap` of every parameter, module output,
    gradient and optimizer state, and the bytes per parameter, autocast's weight copies counted from its casts."""

    args, loss_fn, dev = _check_run(model, inputs, loss_fn, device_type)
    if not isinstance(setting, str) or setting not in PRECISION_SETTINGS:
        raise ValueError(f"setting={setting!r} is not allowed: use one of {list(PRECISION_SETTINGS)}")
    if not (isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer)):
        raise TypeError(f"optimizer must be a torch.optim.Optimizer class such as torch.optim.Adam, got {optimizer!r}")
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
