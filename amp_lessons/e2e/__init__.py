"""Lesson 06, AMP end to end: the AMP training step, throughput by dtype, memory, inference.

`from amp_lessons import e2e` gives every public name of the topic's modules: :mod:`.experiments`, :mod:`.plots`, :mod:`.checks`."""

from .checks import (
    check_clipped_amp_step,
)
from .experiments import (
    CONFIGS,
    SLOW_FP16_RATIO,
    TENSOR_CORE_GENERATIONS,
    TensorCoreTable,
    TinyTransformer,
    amp_step,
    inference_compare,
    launch_bound_demo,
    make_batches,
    matmul_rates,
    matmul_throughput,
    odd_size_effect,
    overflow_demo,
    peak_memory,
    tensor_core_table,
    train,
    training_plan,
)
from .plots import (
    plot_inference,
    plot_throughput,
    plot_training_runs,
)

__all__ = [
    "check_clipped_amp_step",
    "CONFIGS",
    "SLOW_FP16_RATIO",
    "TENSOR_CORE_GENERATIONS",
    "TensorCoreTable",
    "TinyTransformer",
    "amp_step",
    "inference_compare",
    "launch_bound_demo",
    "make_batches",
    "matmul_rates",
    "matmul_throughput",
    "odd_size_effect",
    "overflow_demo",
    "peak_memory",
    "plot_inference",
    "plot_throughput",
    "plot_training_runs",
    "tensor_core_table",
    "train",
    "training_plan",
]
