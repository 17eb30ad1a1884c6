"""Lesson 09, mixed precision at scale: DDP and FSDP2 on a real gloo process group of CPU processes,
memory per parameter, and the precision of gradient reduction.

`from amp_lessons import distributed` gives every public name of the topic's modules: :mod:`.experiments`,
:mod:`.plots`, :mod:`.checks`."""

from .checks import (
    check_ring_sum_bf16,
    check_sharded_bytes,
)
from .experiments import (
    MAX_EMULATED_WORLD_SIZE,
    MAX_WORLD_SIZE,
    MEMORY_SETTINGS,
    REDUCTION_METHODS,
    BuildCheck,
    DdpStep,
    FsdpStages,
    GroupTimeout,
    GroupUnavailable,
    MemoryRow,
    ReductionError,
    WorkerError,
    bytes_per_parameter,
    ddp_amp_step,
    ddp_bf16_hook_build_check,
    fsdp_inf_sync,
    fsdp_stages,
    gloo_allreduce_check,
    loopback_interface,
    pairwise_sum,
    reduction_error,
    ring_sum,
    run_group,
)
from .plots import (
    plot_memory_per_parameter,
    plot_reduction_error,
)

__all__ = [
    "BuildCheck",
    "DdpStep",
    "FsdpStages",
    "GroupTimeout",
    "GroupUnavailable",
    "MAX_EMULATED_WORLD_SIZE",
    "MAX_WORLD_SIZE",
    "MEMORY_SETTINGS",
    "MemoryRow",
    "REDUCTION_METHODS",
    "ReductionError",
    "WorkerError",
    "bytes_per_parameter",
    "check_ring_sum_bf16",
    "check_sharded_bytes",
    "ddp_amp_step",
    "ddp_bf16_hook_build_check",
    "fsdp_inf_sync",
    "fsdp_stages",
    "gloo_allreduce_check",
    "loopback_interface",
    "pairwise_sum",
    "plot_memory_per_parameter",
    "plot_reduction_error",
    "reduction_error",
    "ring_sum",
    "run_group",
]
