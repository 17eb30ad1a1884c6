"""Lesson 09's results: what :mod:`.experiments` returns, as plain picklable dataclasses with their displays."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = [
    "AllreduceCheck",
    "BuildCheck",
    "MemoryRow",
    "ScalerOutcome",
]


@dataclass
class DdpStep:
    """What :func:`observe_ddp_step` saw, one entry per rank (lists indexed by rank)."""

    world_size: int
    autocast_dtype: str
    param_dtypes: list[dict[str, str]]
    activation_dtypes: list[list[str]]  # outputs of the forward's matmuls
    grad_dtypes: list[dict[str, str]]
    bucket_dtypes: list[list[str]]  # what each rank's all-reduce carried, per bucket
    local_grad_finite: list[bool]  # what each rank sent into the all-reduce
    reduced_grad_finite: list[bool]  # its gradients after it
    scale_after: list[float]
    stepped: list[bool]  # did optimizer.step() change the parameters
    grads_equal_across_ranks: bool
    bf16_hook_rel_error: float  # |bf16_compress_hook - fp32 all-reduce| / |fp32 all-reduce|, over all grads
    bf16_hook_grad_dtypes: list[str] = field(default_factory=list)
    inf_rank: int | None = None
    bf16_hook_refused: str = ""  # DDP's error when bf16_compress_hook is registered ("" if accepted: a CUDA build)

    def table(self) -> str:
        rows = [
            f"{'rank':>4}  {'params':8} {'activations':12} {'grads':8} {'all-reduce':10} {'sent finite':12} "
            f"{'reduced finite':14} {'scale after':11}  stepped"
        ]
        for r in range(self.world_size):
            rows.append(
                f"{r:>4}  {distinct(self.param_dtypes[r].values()):8} {distinct(self.activation_dtypes[r]):12} "
                f"{distinct(self.grad_dtypes[r].values()):8} {distinct(self.bucket_dtypes[r]):10} "
                f"{self.local_grad_finite[r]!s:12} {self.reduced_grad_finite[r]!s:14} "
                f"{_pow2(self.scale_after[r]):11}  {self.stepped[r]}"
            )
        return "\n".join(rows)


def distinct(values) -> str:
    """The distinct values, sorted, joined by "/" ("-" for none): one dtype, or the mix a stage holds."""
    return "/".join(sorted(set(values))) or "-"


def _pow2(v: float) -> str:
    k = math.log2(v) if v > 0 else float("nan")
    return f"2^{int(k)}" if k == int(k) else f"{v:g}"


@dataclass(frozen=True)
class BuildCheck:
    """What DDP's ``register_comm_hook`` checks before it accepts ``bf16_compress_hook`` (by the hook's name), read
    from the installed torch: a CUDA or ROCm build with NCCL 2.10 or newer, or an XPU with XCCL. It is a check on the
    *build*, not on the process group: a CUDA build accepts the hook for a gloo group of CPU processes too."""

    gpu_build: str  # "CUDA 12.8", "ROCm 6.2", or "" for a CPU-only build
    nccl: str  # NCCL version compiled in ("2.27.3"), or "" if none
    xpu_xccl: bool

    @property
    def accepts(self) -> bool:
        nccl = tuple(int(v) for v in self.nccl.split(".")[:2]) if self.nccl else ()
        return (bool(self.gpu_build) and nccl >= (2, 10)) or self.xpu_xccl

    def __str__(self) -> str:
        build = self.gpu_build or "CPU-only build"
        nccl = f"NCCL {self.nccl}" if self.nccl else "no NCCL"
        verdict = "accepts" if self.accepts else "refuses"
        return f"this torch: {build}, {nccl}: DDP {verdict} bf16_compress_hook"


@dataclass
class FsdpStages:
    """The dtype at each stage of one FSDP2 training step, per ``reduce_dtype`` (keys "float32", "bfloat16"):
    ``stages[reduce_dtype]`` is a list of (stage, dtype, detail) rows, read on rank 0."""

    world_size: int
    param_dtype: str
    stages: dict[str, list[tuple[str, str, str]]]
    grad_error: dict[str, float]  # relative error of the sharded fp32 gradient against an fp64 reference

    def table(self, reduce_dtype: str) -> str:
        rows = self.stages[reduce_dtype]
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{stage:<{width}}  {dtype:9} {detail}" for stage, dtype, detail in rows)


@dataclass(frozen=True)
class ScalerOutcome:
    """What one gradient scaler class did on one rank in :func:`fsdp_inf_sync`."""

    rank: int
    scaler: str
    local_shard_finite: bool
    grad_type: str
    scale_after: float
    stepped: bool


@dataclass(frozen=True)
class MemoryRow:
    """Bytes per parameter one rank holds under one setting, by component, counted from the storages;
    ``expected`` is the arithmetic."""

    setting: str
    world_size: int
    params: float
    grads: float
    optimizer: float
    expected: float

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer


@dataclass
class ReductionError:
    """Normwise relative error ||sum - exact|| / ||exact|| of each reduction method at each world size
    (EMULATED in one process; ``exact`` is the fp64 sum of the same bf16 gradients)."""

    world_sizes: list[int]
    errors: dict[str, list[float]]  # method -> error per world size
    elements: int

    def at(self, method: str, world_size: int) -> float:
        return self.errors[method][self.world_sizes.index(world_size)]


@dataclass(frozen=True)
class ReductionSweep:
    """The sum of the first N ranks' gradients (cast to ``fmt``, then summed in ``order`` with a rounding after
    every add) for each N of ``world_sizes``: ``errors`` against the exact sum (inf where ``overflowed``), the
    shares the cast ``flushed`` and made inf (``cast_overflowed``). EMULATED in one process."""

    world_sizes: tuple[int, ...]
    fmt: str
    order: str
    scale: float
    elements: int
    errors: tuple[float, ...]
    overflowed: tuple[bool, ...]
    flushed: float
    cast_overflowed: float = 0.0

    def at(self, world_size: int) -> float:
        if world_size not in self.world_sizes:
            raise ValueError(f"world_size={world_size!r} was not swept: one of {list(self.world_sizes)}")
        return self.errors[self.world_sizes.index(world_size)]


@dataclass(frozen=True)
class AllreduceCheck:
    """What the real gloo ``all_reduce`` of :func:`gloo_allreduce_check` gave in one format."""

    fmt: str
    ranks_agree: bool
    matching_some_ring_order: float
    gloo_error: float
    emulated_error: float
