"""Lesson 09, mixed precision at scale: DDP and FSDP2 on a real gloo process group of CPU processes,
memory per parameter, and the precision of gradient reduction.

`from amp_lessons import distributed` gives the names its lesson, the presenter and the instructors' solutions call
(its ``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_explorers``, ``_observe``, ``_plots``, ``_records``, ``_support``."""

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
