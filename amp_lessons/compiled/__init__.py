"""Lesson 11, torch.compile and mixed precision: the graph Dynamo captures of an autocast region, the casts that
survive in Inductor's generated code, compiled bf16 numerics against eager and fp64, and step times.

`from amp_lessons import compiled` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_plots``, ``_support``."""

from ._checks import (
    check_compile_matching_eager,
    check_fused_chain,
)
from ._experiments import (
    captured_graph,
    compile_workload,
    eager_casts,
    fp8_saturation,
    inductor_status,
    make_inputs,
    precision_errors,
    step_times,
    torch_logs,
)
from ._plots import (
    plot_errors,
    plot_step_times,
)

__all__ = [
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
    "step_times",
    "torch_logs",
]
