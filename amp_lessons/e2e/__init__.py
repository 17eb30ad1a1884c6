"""Lesson 06, AMP end to end: the AMP training step, throughput by dtype, memory, inference.

`from amp_lessons import e2e` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_common``, ``_experiments``, ``_models``, ``_plots``, ``_records``, ``_support``, ``_tables``,
``_training``."""

from ._checks import (
    check_accumulated_amp_step,
    check_clipped_amp_step,
)
from ._experiments import (
    CONFIGS,
    MIN_TRAIN_STEPS,
    SLOW_FP16_RATIO,
    inference_compare,
    launch_bound_demo,
    matmul_rates,
    matmul_throughput,
    odd_size_effect,
    overflow_demo,
    peak_memory,
    train,
    training_plan,
)
from ._plots import (
    plot_inference,
    plot_throughput,
    plot_training_runs,
)
from ._records import (
    NOISY_RANGE,
    InferenceTable,
    LaunchTable,
    RateTable,
    SpecRatioTable,
    ThroughputTable,
    TrainingTable,
    tensor_core_table,
)

__all__ = [
    "CONFIGS",
    "InferenceTable",
    "LaunchTable",
    "MIN_TRAIN_STEPS",
    "NOISY_RANGE",
    "RateTable",
    "SLOW_FP16_RATIO",
    "SpecRatioTable",
    "ThroughputTable",
    "TrainingTable",
    "check_accumulated_amp_step",
    "check_clipped_amp_step",
    "inference_compare",
    "launch_bound_demo",
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
