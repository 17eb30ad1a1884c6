"""Lesson 09, mixed precision at scale: DDP and FSDP2 on a real gloo process group of CPU processes,
memory per parameter, and the precision of gradient reduction.

`from amp_lessons import distributed` gives every public name of the topic's modules: :mod:`.records`,
:mod:`.experiments`, :mod:`.plots`, :mod:`.explorers`, :mod:`.checks`, :mod:`.support`."""

from ._checks import (
    check_fsdp_fp16_step,
    check_ring_sum_bf16,
)
from ._experiments import (
    REDUCTION_METHODS,
    WorkerError,
    bytes_per_parameter,
    ddp_bf16_hook_build_check,
    fsdp_inf_sync,
    gloo_allreduce_check,
    observe_ddp_step,
    observe_fsdp_step,
    reduction_error,
    ring_sum,
    run_group,
)
from ._explorers import (
    reduction_explorer,
)
from ._plots import (
    plot_memory_per_parameter,
    plot_reduction_error,
)

__all__ = [
    "REDUCTION_METHODS",
    "WorkerError",
    "bytes_per_parameter",
    "check_fsdp_fp16_step",
    "check_ring_sum_bf16",
    "ddp_bf16_hook_build_check",
    "fsdp_inf_sync",
    "gloo_allreduce_check",
    "observe_ddp_step",
    "observe_fsdp_step",
    "plot_memory_per_parameter",
    "plot_reduction_error",
    "reduction_error",
    "reduction_explorer",
    "ring_sum",
    "run_group",
]
