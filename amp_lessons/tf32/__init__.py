"""Lesson 02, TF32: emulated and real TF32 matmuls, their errors against fp64, their speed.

`from amp_lessons import tf32` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_explorers``, ``_plots``, ``_support``."""

from ._checks import (
    check_error_ratio,
    check_tf32_matmul,
)
from ._experiments import (
    conv_errors,
    emulated_matmul,
    error_vs_k,
    fp32_precision,
    has_tf32,
    matmul_errors,
    mkldnn_precision_effect,
    pick_size,
    switches_tour,
    time_matmuls,
)
from ._explorers import (
    matmul_precision_explorer,
)
from ._plots import (
    plot_error_vs_k,
    plot_matmul_errors,
)

__all__ = [
    "check_error_ratio",
    "check_tf32_matmul",
    "conv_errors",
    "emulated_matmul",
    "error_vs_k",
    "fp32_precision",
    "has_tf32",
    "matmul_errors",
    "matmul_precision_explorer",
    "mkldnn_precision_effect",
    "pick_size",
    "plot_error_vs_k",
    "plot_matmul_errors",
    "switches_tour",
    "time_matmuls",
]
