"""Lesson 09's experiments: mixed precision on a real ``torch.distributed`` process group of CPU processes (gloo,
:func:`run_group`) running the lesson's own steps (:mod:`.key_code`) under an op log, and the precision of gradient
reduction EMULATED in one process (checked bit for bit against gloo by :func:`gloo_allreduce_check`). NCCL, its
algorithms and NVLink bandwidth are out of a laptop's reach."""

from __future__ import annotations

import math
import warnings

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook, bf16_compress_hook
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel

from .. import _validate
from .._launch import (
    MAX_WORLD_SIZE,
    ForkUnsafe,
    GroupTimeout,
    GroupUnavailable,
    WorkerError,
    check_world_size,
    fork_runs_backward,
    loopback_interface,
    run_group,
)
from .._validate import int_at_least, selection
from ..checks import is_placeholder
from ..formats import quantize
from ._observe import OpLog, name_of, to_local
from ._records import (
    AllreduceCheck,
    BuildCheck,
    DdpStep,
    FsdpStages,
    MemoryRow,
    ReductionError,
    ReductionSweep,
    ScalerOutcome,
    distinct,
)
from .key_code import tiny_mlp

__all__ = [
    "MAX_WORLD_SIZE",
    "MEMORY_SETTINGS",
    "REDUCTION_FORMATS",
    "REDUCTION_METHODS",
    "GroupTimeout",
    "ForkUnsafe",
    "GroupUnavailable",
    "WorkerError",
    "bytes_per_parameter",
    "ddp_bf16_hook_build_check",
    "fork_runs_backward",
    "fsdp_inf_sync",
    "gloo_allreduce_check",
    "loopback_interface",
    "observe_ddp_step",
    "observe_fp16_fsdp_step",
    "observe_fsdp_step",
    "reduction_error",
    "reduction_sweep",
    "pairwise_sum",
    "ring_sum",
    "run_group",
]

REDUCTION_FORMATS = ("bf16", "fp16", "fp32")
MAX_EMULATED_WORLD_SIZE = 65536  # emulated ranks: one row of a tensor each
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# DTensor warns when GradScaler's found_inf (shape [1], not a scalar) meets DTensor gradients; the scaler
# still reduces it over the mesh (torch/distributed/tensor/_dispatch.py, found_inf_reduce_handler).
_DTENSOR_FOUND_INF_WARNING = "Found a non-scalar tensor with numel=1"


def _check_step(step, what: str):
    if not callable(step):
        raise TypeError(f"step must be the lesson's {what} function step(rank, world_size, batches, ...), got {step!r}")
    return step


def _batch(rank: int, seed: int, rows: int = 8, cols: int = 16) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed((seed * 1000 + rank) % 2**63))


def _two_ranks(world_size) -> int:
    world_size = check_world_size(world_size)
    if world_size < 2:
        raise ValueError(f"world_size={world_size!r} is not allowed: this needs at least 2 ranks")
    return world_size


def _rank_below(rank, name: str, world_size: int) -> int:
    rank = int_at_least(rank, name, 0)
    if rank >= world_size:
        raise ValueError(f"{name}={rank!r} is not allowed: it must be a rank below world_size={world_size}")
    return rank


def _batches(world_size: int, seed: int, overflow_rank: int | None = None) -> list[torch.Tensor]:
    """One batch per rank; on ``overflow_rank`` one input value beyond fp16's largest, 65504."""
    batches = [_batch(r, seed) for r in range(world_size)]
    if overflow_rank is not None:
        batches[overflow_rank][0, 0] = 1e5
    return batches


def _ddp_observed(rank: int, world_size: int, step, dtype_name: str, inf_rank, seed: int) -> dict:
    dtype = _DTYPES[dtype_name]
    log = OpLog()
    with log:
        model, scaler = step(rank, world_size, _batches(world_size, seed, inf_rank), dtype)
    initial = tiny_mlp()
    params = dict(model.module.named_parameters())
    grads = torch.cat([p.grad.flatten() for p in params.values()])
    stepped = any(not torch.equal(p.detach(), q) for p, q in zip(params.values(), initial.parameters()))
    everyone = [None] * world_size
    dist.all_gather_object(everyone, grads)
    equal = all(torch.allclose(everyone[0], g, rtol=0, atol=0, equal_nan=True) for g in everyone)
    reduces = log.find("allreduce")

    refused = ""
    try:  # DDP refuses the hook by name on a build without CUDA/ROCm and NCCL >= 2.10 (or XPU and XCCL)
        DistributedDataParallel(tiny_mlp()).register_comm_hook(None, bf16_compress_hook)
    except TypeError as e:
        refused = str(e)

    def bf16_hook_on_gloo(state, bucket):  # the same function, called under another name: gloo sums bf16
        return bf16_compress_hook(state, bucket)

    pair = []
    for comm in (allreduce_hook, bf16_hook_on_gloo):
        m, _ = step(rank, world_size, _batches(world_size, seed), dtype, comm)
        pair.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    return {
        "params": {n: name_of(p.dtype) for n, p in params.items()},
        "acts": [o["out"] for o in log.find("addmm")],
        "grads": {n: name_of(p.grad.dtype) for n, p in params.items()},
        "buckets": [o["dtypes"][0] for o in reduces],
        "local_finite": all(o["finite"] for o in reduces),
        "reduced_finite": bool(torch.isfinite(grads).all()),
        "scale_after": scaler.get_scale(),
        "stepped": stepped,
        "equal": equal,
        "rel": float((pair[1] - pair[0]).norm() / pair[0].norm()),
        "hook_grad_dtype": name_of(pair[1].dtype),
        "refused": refused,
    }


def observe_ddp_step(
    step, world_size: int = 2, dtype: str = "fp16", inf_rank: int | None = 1, seed: int = 0, *, timeout: float = 60.0
) -> DdpStep:
    """Runs the lesson's DDP step ``step(rank, world_size, batches, dtype, comm_hook=None) -> (model, scaler)`` on
    ``world_size`` real gloo ranks under an op log (dtypes of every matmul and of each all-reduce). Rank ``inf_rank``
    (None: none) gets an input beyond fp16's range. Then the same step without overflow, reduced in fp32 and by
    ``bf16_compress_hook``: their relative difference. Returns a :class:`DdpStep`."""
    step = _check_step(step, "DDP")
    world_size = _two_ranks(world_size)
    if dtype not in ("fp16", "bf16"):
        raise ValueError(f"dtype={dtype!r} is not allowed: use 'fp16' or 'bf16'")
    if inf_rank is not None:
        inf_rank = _rank_below(inf_rank, "inf_rank", world_size)
    seed = _validate.seed(seed)
    rs = run_group(_ddp_observed, world_size, (step, dtype, inf_rank, seed), timeout=timeout)
    return DdpStep(
        world_size=world_size,
        autocast_dtype=name_of(_DTYPES[dtype]),
        param_dtypes=[r["params"] for r in rs],
        activation_dtypes=[r["acts"] for r in rs],
        grad_dtypes=[r["grads"] for r in rs],
        bucket_dtypes=[r["buckets"] for r in rs],
        local_grad_finite=[r["local_finite"] for r in rs],
        reduced_grad_finite=[r["reduced_finite"] for r in rs],
        scale_after=[r["scale_after"] for r in rs],
        stepped=[r["stepped"] for r in rs],
        grads_equal_across_ranks=all(r["equal"] for r in rs),
        bf16_hook_rel_error=max(r["rel"] for r in rs),
        bf16_hook_grad_dtypes=[r["hook_grad_dtype"] for r in rs],
        inf_rank=inf_rank,
        bf16_hook_refused=rs[0]["refused"],
    )


def ddp_bf16_hook_build_check() -> BuildCheck:
    """The condition under which DDP accepts ``bf16_compress_hook``, evaluated on the installed torch."""
    gpu = f"CUDA {torch.version.cuda}" if torch.version.cuda else ""
    hip = getattr(torch.version, "hip", None)
    gpu = gpu or (f"ROCm {hip}" if hip else "")
    nccl = ""
    if dist.is_available() and dist.is_nccl_available():
        try:
            v = torch.cuda.nccl.version()
            nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
        except (RuntimeError, AttributeError):
            nccl = ""
    xccl = getattr(dist, "is_xccl_available", None)
    xpu = bool(xccl is not None and xccl() and hasattr(torch, "xpu") and torch.xpu.is_available())
    return BuildCheck(gpu, nccl, xpu)


def _stages_from(log: OpLog, model) -> list[tuple[str, str, str]]:
    gathers = log.find("allgather_base", "all_gather_into_tensor")
    mms = log.find("addmm", "mm")
    forward = log.find("addmm")
    scatters = log.find("reduce_scatter_base", "reduce_scatter_tensor")
    w = model[0].weight
    return [
        (
            "sharded parameter (optimizer's copy)",
            name_of(w.dtype),
            f"local shard {tuple(to_local(w).shape)} of {tuple(w.shape)}",
        ),
        ("all-gathered parameter", distinct(o["dtypes"][0] for o in gathers), f"{len(gathers)} all-gather"),
        (
            "matmul operands",
            distinct(d for o in mms for d in o["dtypes"]),
            f"{len(forward)} forward, {len(mms) - len(forward)} backward matmuls",
        ),
        ("module output", forward[-1]["out"] if forward else "-", "output_dtype=None: the compute dtype"),
        ("gradient reduce-scatter", distinct(o["dtypes"][0] for o in scatters), "the reduce_dtype"),
        ("sharded gradient", name_of(w.grad.dtype), f"local shard {tuple(to_local(w.grad).shape)}"),
    ]


def _fsdp_observed(rank: int, world_size: int, step, param_name: str, seed: int) -> dict:
    stages, errors = {}, {}
    batches = _batches(world_size, seed)
    for reduce_dtype in (torch.float32, torch.bfloat16):
        log = OpLog()
        with log:
            model = step(rank, world_size, batches, _DTYPES[param_name], reduce_dtype)
        stages[name_of(reduce_dtype)] = _stages_from(log, model)
        reference = tiny_mlp().double()
        sum(reference(x.double()).square().mean() for x in batches).backward()
        want = torch.cat([p.grad.flatten() / world_size for p in reference.parameters()])
        got = [p.grad.full_tensor().double().flatten() for p in model.parameters()]
        errors[name_of(reduce_dtype)] = float((torch.cat(got) - want).norm() / want.norm())
    return {"stages": stages, "errors": errors}


def observe_fsdp_step(
    step, world_size: int = 2, param_dtype: str = "bf16", seed: int = 0, *, timeout: float = 60.0
) -> FsdpStages:
    """Runs the lesson's FSDP2 step ``step(rank, world_size, batches, param_dtype, reduce_dtype) -> model`` on
    ``world_size`` real gloo ranks, for reduce_dtype float32 then bfloat16, and reads the dtype of each stage from
    the operations it dispatches; the gradient error is against fp64. Returns :class:`FsdpStages`."""
    step = _check_step(step, "FSDP2")
    world_size = check_world_size(world_size)
    if param_dtype not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"param_dtype={param_dtype!r} is not allowed: use 'bf16', 'fp16' or 'fp32'")
    seed = _validate.seed(seed)
    rs = run_group(_fsdp_observed, world_size, (step, param_dtype, seed), timeout=timeout)
    return FsdpStages(world_size, name_of(_DTYPES[param_dtype]), rs[0]["stages"], rs[0]["errors"])


def _fp16_step_observed(rank: int, world_size: int, fn, seed: int, overflow_rank: int) -> dict:
    """In each worker: the learner's ``fn`` on finite batches, then with an overflow, under the op log."""
    out = {}
    warnings.filterwarnings("ignore", message=_DTENSOR_FOUND_INF_WARNING, category=UserWarning)
    for case, overflow in (("finite", None), ("overflow", overflow_rank)):
        batches = _batches(world_size, seed, overflow)
        log = OpLog()
        with warnings.catch_warnings(record=True) as caught, log:
            warnings.simplefilter("always")
            warnings.filterwarnings("ignore", message=_DTENSOR_FOUND_INF_WARNING, category=UserWarning)
            got = fn(rank, world_size, batches)
        if is_placeholder(got):
            return {"placeholder": True}
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.nn.Module)):
            return {"bad_return": type(got).__name__ if not isinstance(got, tuple) else f"a tuple of {len(got)}"}
        model, scaler = got
        params = list(model.parameters())
        sharded = all(isinstance(p, DTensor) for p in params)
        initial = list(tiny_mlp().parameters())
        full = [p.full_tensor() if isinstance(p, DTensor) else p for p in params]
        grads = [p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad for p in params]
        if len(full) != len(initial) or any(f.shape != q.shape for f, q in zip(full, initial)):
            return {"bad_return": "a model that is not tiny_mlp()"}
        stepped = any(not torch.equal(f.detach().float(), q) for f, q in zip(full, initial))
        ratio = err = math.nan
        if all(g is not None for g in grads) and overflow is None:
            reference = tiny_mlp().double()
            sum(reference(x.double()).square().mean() for x in batches).backward()
            want = torch.cat([q.grad.flatten() / world_size for q in reference.parameters()])
            g = torch.cat([t.detach().double().flatten() for t in grads])
            ratio = float(g.norm() / want.norm())
            err = float((g - want).norm() / want.norm())
        get_scale = getattr(scaler, "get_scale", None)
        is_enabled = getattr(scaler, "is_enabled", None)
        out[case] = {
            "sharded": sharded,
            "gather": sorted({o["dtypes"][0] for o in log.find("allgather_base", "all_gather_into_tensor")}),
            "scatter": sorted({o["dtypes"][0] for o in log.find("reduce_scatter_base", "reduce_scatter_tensor")}),
            "scaler": type(scaler).__name__,
            "scale": float(get_scale()) if callable(get_scale) else None,
            # a GradScaler made for "cuda" (the default device) on a machine without CUDA turns itself off, with
            # a warning that stays in this worker's stderr: scale(loss) is then the loss, step() always steps
            "enabled": bool(is_enabled()) if callable(is_enabled) else None,
            "scaler_device": str(getattr(scaler, "_device", "")),
            "warnings": sorted({str(w.message) for w in caught}),
            "stepped": stepped,
            "has_grads": all(g is not None for g in grads),
            "ratio": ratio,
            "err": err,
        }
    return out


def observe_fp16_fsdp_step(
    fn, world_size: int = 2, seed: int = 0, *, overflow_rank: int = 1, timeout: float = 120.0
) -> list[dict]:
    """A learner's fp16 FSDP2 step ``fn(rank, world_size, batches) -> (model, scaler)`` on real gloo ranks, with
    finite batches and with rank ``overflow_rank``'s input beyond fp16's range. Per rank ``{"placeholder": True}``,
    ``{"bad_return": ...}``, or per case ("finite", "overflow") what the step dispatched and left behind."""
    return run_group(_fp16_step_observed, world_size, (fn, seed, overflow_rank), timeout=timeout)


def _inf_sync_rank(rank: int, world_size: int, inf_rank: int, seed: int) -> dict[str, ScalerOutcome]:
    out_rows = {}
    warnings.filterwarnings("ignore", message=_DTENSOR_FOUND_INF_WARNING, category=UserWarning)
    for cls in (ShardedGradScaler, torch.amp.GradScaler):
        torch.manual_seed(seed)
        model = nn.Linear(16, 2 * world_size)  # two output rows per rank: rank 0 owns rows 0 and 1
        policy = MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32)
        fully_shard(model, mesh=init_device_mesh("cpu", (world_size,)), mp_policy=policy)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = cls("cpu")
        out = model(_batch(rank, seed))
        if rank == inf_rank:  # an inf in output column 0: row 0 of this rank's weight gradient, owned by rank 0
            out.register_hook(lambda g: g.index_fill(1, torch.tensor([0]), math.inf))
        scaler.scale(out.float().square().mean()).backward()
        local = [to_local(p.grad) for p in model.parameters()]
        before = [to_local(p).detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        out_rows[cls.__name__] = ScalerOutcome(
            rank=rank,
            scaler=cls.__name__,
            local_shard_finite=all(bool(torch.isfinite(t).all()) for t in local),
            grad_type=type(model.weight.grad).__name__,
            scale_after=scaler.get_scale(),
            stepped=any(not torch.equal(b, to_local(p).detach()) for b, p in zip(before, model.parameters())),
        )
    return out_rows


def fsdp_inf_sync(
    world_size: int = 2, inf_rank: int = 1, seed: int = 0, *, timeout: float = 60.0
) -> list[dict[str, ScalerOutcome]]:
    """fp16 FSDP2 on one Linear layer: rank ``inf_rank`` puts an inf in one output column's gradient, which
    reduce-scatter delivers to rank 0's shard only. Per rank: scaler class name ("ShardedGradScaler",
    "GradScaler") -> its :class:`ScalerOutcome` (local shard finite, scale after ``update()``, stepped)."""
    world_size = _two_ranks(world_size)
    inf_rank = _rank_below(inf_rank, "inf_rank", world_size)
    seed = _validate.seed(seed)
    return run_group(_inf_sync_rank, world_size, (inf_rank, seed), timeout=timeout)


def _storage_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        s = to_local(t).untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


MEMORY_SETTINGS = {
    # name: (how the model is wrapped, dtype of the model, autocast dtype, expected bytes per parameter)
    "fp32": ("ddp", torch.float32, None, lambda n: 4 + 4 + 8),
    "AMP (bf16 autocast)": ("ddp", torch.float32, torch.bfloat16, lambda n: 4 + 4 + 8),
    "bf16-true": ("ddp", torch.bfloat16, None, lambda n: 2 + 2 + 4),
    "FSDP fp32": ("fsdp", torch.float32, None, lambda n: 16 / n),
    "FSDP + MixedPrecisionPolicy(bf16)": ("fsdp-mp", torch.float32, None, lambda n: 16 / n),
    "FSDP bf16-true": ("fsdp", torch.bfloat16, None, lambda n: 8 / n),
}


def _memory_rank(rank: int, world_size: int, width: int, seed: int) -> list[dict]:
    rows = []
    for setting, (wrap, dtype, autocast, _) in MEMORY_SETTINGS.items():
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)).to(dtype)
        n_params = sum(p.numel() for p in model.parameters())
        if wrap == "ddp":
            # .grad as views of DDP's buckets: otherwise the buckets are a second copy these counts would not see
            model = DistributedDataParallel(model, gradient_as_bucket_view=True)
        else:
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16) if wrap == "fsdp-mp" else MixedPrecisionPolicy()
            mesh = init_device_mesh("cpu", (world_size,))  # left out, fully_shard would use an accelerator
            for layer in (model[0], model[2]):
                fully_shard(layer, mesh=mesh, mp_policy=policy)
            fully_shard(model, mesh=mesh, mp_policy=policy)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = _batch(rank, seed, rows=4, cols=width).to(dtype)
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            out = model(x)
        out.float().square().mean().backward()
        opt.step()
        params = list(model.parameters())
        if wrap == "ddp" and len({p.grad.untyped_storage().data_ptr() for p in params}) != 1:
            raise RuntimeError("DDP's gradients are not views of one bucket: the grads column would be wrong")
        states = [v for st in opt.state.values() for k, v in st.items() if k in ("exp_avg", "exp_avg_sq")]
        rows.append(
            {
                "setting": setting,
                "params": _storage_bytes(params) / n_params,
                "grads": _storage_bytes([p.grad for p in params]) / n_params,
                "optimizer": _storage_bytes(states) / n_params,
            }
        )
    return rows


def bytes_per_parameter(
    world_size: int = 2, width: int = 64, seed: int = 0, *, timeout: float = 60.0
) -> list[MemoryRow]:
    """Measured on ``world_size`` real gloo ranks: the bytes per parameter rank 0 holds after one Adam step of a
    two-layer ``width`` x ``width`` MLP under each of :data:`MEMORY_SETTINGS`. ``width``: a multiple of
    ``world_size`` (no padded shard). Returns a list of :class:`MemoryRow`."""
    world_size = check_world_size(world_size)
    width = int_at_least(width, "width", 1)
    if width % world_size or width > 1024:
        raise ValueError(f"width={width!r} is not allowed: a multiple of world_size={world_size}, at most 1024")
    seed = _validate.seed(seed)
    rs = run_group(_memory_rank, world_size, (width, seed), timeout=timeout)
    return [
        MemoryRow(
            r["setting"],
            world_size,
            r["params"],
            r["grads"],
            r["optimizer"],
            MEMORY_SETTINGS[r["setting"]][3](world_size),
        )
        for r in rs[0]
    ]


def _check_grads(grads, fmt) -> torch.Tensor:
    if fmt not in REDUCTION_FORMATS:
        raise ValueError(f"fmt={fmt!r} is not allowed: use one of {', '.join(map(repr, REDUCTION_FORMATS))}")
    if not isinstance(grads, torch.Tensor) or grads.dim() != 2 or not grads.is_floating_point():
        raise TypeError("grads must be a 2-d floating-point tensor: one row per rank")
    if not 1 <= grads.shape[0] <= MAX_EMULATED_WORLD_SIZE:
        raise ValueError(f"grads has {grads.shape[0]} rows (ranks): 1 to {MAX_EMULATED_WORLD_SIZE} are allowed")
    return grads.float()


def _round(x: torch.Tensor, fmt: str) -> torch.Tensor:
    return x if fmt == "fp32" else quantize(x, fmt)


def ring_sum(grads: torch.Tensor, fmt: str = "bf16", start: int = 0) -> torch.Tensor:
    """The sum of the rows of ``grads`` (one per rank) accumulated around the ring from rank ``start``, the running
    sum rounded to ``fmt`` ("bf16", "fp16" or "fp32") after every add, as a ring reduce-scatter accumulates a chunk
    hop by hop (each add: an fp32 add of two ``fmt`` values, then one rounding). Returned as float32."""
    g = _check_grads(grads, fmt)
    n = g.shape[0]
    start = int_at_least(start, "start", 0)
    if start >= n:
        raise ValueError(f"start={start} is not allowed: it must be a rank, from 0 to {n - 1} (grads has {n} rows)")
    g = _round(g, fmt)
    acc = g[start].clone()
    for i in range(1, n):
        acc = _round(acc + g[(start + i) % n], fmt)
    return acc


def pairwise_sum(grads: torch.Tensor, fmt: str = "bf16") -> torch.Tensor:
    """The sum of the rows of ``grads`` by a binary tree (pairs, then pairs of pairs), rounded to ``fmt`` after
    every add. Returned as float32."""
    g = _check_grads(grads, fmt)
    level = _round(g, fmt)
    while level.shape[0] > 1:
        if level.shape[0] % 2:
            level = torch.cat([_round(level[:-2:2] + level[1:-1:2], fmt), level[-1:]])
        else:
            level = _round(level[0::2] + level[1::2], fmt)
    return level[0]


REDUCTION_METHODS = ("bf16 ring", "bf16 pairwise", "fp32 ring")


def reduction_error(world_sizes=(2, 8, 64, 512, 4096), elements: int = 256, seed: int = 0) -> ReductionError:
    """For each N of ``world_sizes``: N ranks' gradients (each N(0, 1) per element, rounded to bf16 as a bf16
    backward produces them; ``elements`` per rank) summed in bf16 in ring order, in bf16 pairwise, and in fp32
    in ring order; the normwise error against the exact (fp64) sum. Emulated: one row per rank."""
    sizes = sorted(
        {check_world_size(n, MAX_EMULATED_WORLD_SIZE) for n in selection(world_sizes, "world_sizes", "ints")}
    )
    if not sizes or any(n < 2 for n in sizes):
        raise ValueError(f"world_sizes={world_sizes!r} is not allowed: give world sizes of at least 2")
    elements = int_at_least(elements, "elements", 1)
    if elements * sizes[-1] > 2**24:
        raise ValueError(f"elements * world size = {elements * sizes[-1]} is too large here (at most 2**24 values)")
    seed = _validate.seed(seed)
    errors: dict[str, list[float]] = {m: [] for m in REDUCTION_METHODS}
    gen = torch.Generator().manual_seed(seed)
    for n in sizes:
        grads = quantize(torch.randn(n, elements, generator=gen), "bf16")
        exact = grads.double().sum(0)
        for method, got in (
            ("bf16 ring", ring_sum(grads, "bf16")),
            ("bf16 pairwise", pairwise_sum(grads, "bf16")),
            ("fp32 ring", ring_sum(grads, "fp32")),
        ):
            errors[method].append(float((got.double() - exact).norm() / exact.norm()))
    return ReductionError(sizes, errors, elements)


REDUCTION_ORDERS = ("ring", "pairwise")


def reduction_sweep(
    fmt: str = "bf16", order: str = "ring", scale: float = 1.0, *, max_world_size: int = 4096, elements: int = 64,
    seed: int = 0,
) -> ReductionSweep:  # fmt: skip
    """:class:`ReductionSweep` of ``fmt`` and ``order`` for N = 2, 4, ..., ``max_world_size``; the ring sums of all N
    from one pass over the ranks. ``scale`` sets the gradients' magnitude (fp16's range shows: flushes, overflows)."""
    g = torch.randn(max_world_size, elements, generator=torch.Generator().manual_seed(seed)) * scale
    sent = _round(g, fmt)  # each rank's gradient in the communication dtype
    flushed = float(((sent == 0) & (g != 0)).float().mean())
    cast_overflowed = float((torch.isinf(sent) & torch.isfinite(g)).float().mean())
    sizes = tuple(2**k for k in range(1, max_world_size.bit_length()))
    exact = g.double().cumsum(0)
    sums = {}
    if order == "ring":
        acc = sent[0].clone()
        for i in range(1, max_world_size):
            acc = _round(acc + sent[i], fmt)
            if i + 1 in sizes:
                sums[i + 1] = acc
    else:
        sums = {n: pairwise_sum(sent[:n], fmt) for n in sizes}
    errors, overflowed = [], []
    for n in sizes:
        got, want = sums[n], exact[n - 1]
        over = not bool(torch.isfinite(got).all())
        overflowed.append(over)
        errors.append(math.inf if over else float((got.double() - want).norm() / want.norm()))
    return ReductionSweep(sizes, fmt, order, float(scale), elements, tuple(errors), tuple(overflowed), flushed,
                          cast_overflowed)  # fmt: skip


def _allreduce_rank(rank: int, world_size: int, elements: int, seed: int) -> dict:
    grads = quantize(torch.randn(world_size, elements, generator=torch.Generator().manual_seed(seed)), "bf16")
    out = {}
    for fmt, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        t = grads[rank].to(dtype, copy=True)
        dist.all_reduce(t)
        out[fmt] = t.float()
    return {"grads": grads, **out}


def gloo_allreduce_check(
    world_size: int = 2, elements: int = 256, seed: int = 0, *, timeout: float = 60.0
) -> dict[str, AllreduceCheck]:
    """The real gloo ``all_reduce`` (bf16 and fp32) of ``world_size`` ranks' gradients against the emulation:
    format name -> :class:`AllreduceCheck` (the share of elements equal bit for bit to :func:`ring_sum` from some
    rank in some direction, whether ranks agree, the errors of gloo and of the emulation against the exact sum)."""
    world_size = _two_ranks(world_size)
    elements = int_at_least(elements, "elements", 1)
    if elements > 2**16:
        raise ValueError(f"elements={elements!r} is not allowed: at most {2**16}")
    seed = _validate.seed(seed)
    rs = run_group(_allreduce_rank, world_size, (elements, seed), timeout=timeout)
    grads = rs[0]["grads"]
    exact = grads.double().sum(0)
    report = {}
    for fmt in ("bf16", "fp32"):
        got = rs[0][fmt]
        orders = []
        for start in range(world_size):
            orders.append(ring_sum(grads, fmt, start))
            orders.append(ring_sum(grads.flip(0), fmt, world_size - 1 - start))
        match = torch.zeros(elements, dtype=torch.bool)
        for o in orders:
            match |= o == got
        report[fmt] = AllreduceCheck(
            fmt=fmt,
            ranks_agree=all(torch.equal(r[fmt], got) for r in rs),
            matching_some_ring_order=float(match.float().mean()),
            gloo_error=float((got.double() - exact).norm() / exact.norm()),
            emulated_error=float((orders[0].double() - exact).norm() / exact.norm()),
        )
    return report
