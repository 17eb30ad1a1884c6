"""Lesson 11, torch.compile and mixed precision: the graph Dynamo captures of an autocast region, the casts that
survive in Inductor's generated code, compiled bf16 numerics against eager and fp64, and step times.

`from amp_lessons import compiled` gives every public name of the topic's modules: :mod:`.experiments`,
:mod:`.plots`, :mod:`.checks`."""

from .checks import (
    check_round_every_op,
    check_round_once,
)
from .experiments import (
    WORKLOADS,
    CapturedGraph,
    CodeSummary,
    CompiledWorkload,
    EagerCasts,
    InductorUnavailable,
    captured_graph,
    compile_workload,
    eager_casts,
    fp8_saturation,
    inductor_status,
    make_inputs,
    precision_errors,
    round_every_op,
    round_once,
    step_times,
    summarize_code,
    workload,
)
from .plots import (
    plot_errors,
    plot_step_times,
)

__all__ = [
    "WORKLOADS",
    "CapturedGraph",
    "CodeSummary",
    "CompiledWorkload",
    "EagerCasts",
    "InductorUnavailable",
    "captured_graph",
    "check_round_every_op",
    "check_round_once",
    "compile_workload",
    "eager_casts",
    "fp8_saturation",
    "inductor_status",
    "make_inputs",
    "plot_errors",
    "plot_step_times",
    "precision_errors",
    "round_every_op",
    "round_once",
    "step_times",
    "summarize_code",
    "workload",
]
