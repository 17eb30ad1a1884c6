"""Lesson 07, fp8: fp8 casts and scaling (per-tensor, delayed, block-wise), torch._scaled_mm, an fp8 linear layer.

`from amp_lessons import fp8` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checked``, ``_checks``, ``_experiments``, ``_explorers``, ``_models``, ``_plots``, ``_records``, ``_support``."""

from ._checks import (
    check_amax_scale,
    check_fp8_format_choice,
    check_fp8_linear_backward,
)
from ._experiments import (
    amax_scale,
    blockwise_fake_quantize,
    fake_quantize,
    fp8_cast_costs,
    fp8_linear_check,
    model_tensors,
    scaled_mm_compare,
    scaling_errors,
    torch_fp8_overflow,
    values_in,
)
from ._explorers import (
    fp8_scaling_explorer,
)
from ._models import (
    Fp8Linear,
)
from ._plots import (
    plot_fp8_window,
    plot_scaling_errors,
)
from ._records import (
    fp8_costs_of,
)

__all__ = [
    "Fp8Linear",
    "amax_scale",
    "blockwise_fake_quantize",
    "check_amax_scale",
    "check_fp8_format_choice",
    "check_fp8_linear_backward",
    "fake_quantize",
    "fp8_cast_costs",
    "fp8_costs_of",
    "fp8_linear_check",
    "fp8_scaling_explorer",
    "model_tensors",
    "plot_fp8_window",
    "plot_scaling_errors",
    "scaled_mm_compare",
    "scaling_errors",
    "torch_fp8_overflow",
    "values_in",
]
