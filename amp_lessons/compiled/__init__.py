"""Lesson 11, torch.compile and mixed precision: the graph Dynamo captures of an autocast region, the casts that
survive in Inductor's generated code, compiled bf16 numerics against eager and fp64, and step times.

`from amp_lessons import compiled` gives every public name of the topic's modules: :mod:`.experiments`,
:mod:`.plots`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_compile_matching_eager,
    check_fused_chain,
)
from .experiments import (
    WORKLOADS,
    CapturedGraph,
    CodeSummary,
    CompiledWorkload,
    EagerCasts,
    Fp8Saturation,
    InductorUnavailable,
    PrecisionErrors,
    RunErrors,
    captured_graph,
    compile_workload,
    eager_casts,
    fp8_saturation,
    inductor_status,
    make_inputs,
    precision_errors,
    step_times,
    summarize_code,
    torch_logs,
    workload,
)
from .plots import (
    plot_errors,
    plot_step_times,
)
from .support import LESSON, runs_where

__all__ = [
    "LESSON",
    "WORKLOADS",
    "CapturedGraph",
    "CodeSummary",
    "CompiledWorkload",
    "EagerCasts",
    "Fp8Saturation",
    "InductorUnavailable",
    "PrecisionErrors",
    "RunErrors",
    "captured_graph",
    "check_compile_matching_eager",
    "check_fused_chain",
    "compile_workload",
    "eager_casts",
    "fp8_saturation",
    "inductor_status",
    "make_inputs",
    "plot_errors",
    "plot_step_times",
    "precision_errors",
    "runs_where",
    "step_times",
    "summarize_code",
    "torch_logs",
    "workload",
]
