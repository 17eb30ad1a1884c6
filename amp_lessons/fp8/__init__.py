"""Lesson 07, fp8: fp8 casts and scaling (per-tensor, delayed, block-wise), torch._scaled_mm, an fp8 linear layer.

`from amp_lessons import fp8` gives every public name of the topic's modules: :mod:`.records`, :mod:`.models`,
:mod:`.experiments`, :mod:`.plots`, :mod:`.explorers`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_amax_scale,
    check_fp8_format_choice,
    check_fp8_linear_backward,
)
from .experiments import (
    BLOCK_SHAPES,
    CAST_COST_SHAPES,
    SCALING_METHOD_BY_NAME,
    SCALING_METHODS,
    DelayedScaler,
    amax_scale,
    as_matrix,
    block_scale_map,
    blockwise_fake_quantize,
    cast_stats,
    fake_quantize,
    fp8_cast_costs,
    fp8_linear_check,
    get_scaling_method,
    model_tensors,
    scaled_mm_compare,
    scaling_errors,
    torch_fp8_overflow,
    values_in,
)
from .explorers import (
    Fp8ScalingExplorer,
    fp8_scaling_explorer,
)
from .models import Fp8Linear, Fp8LinearFn
from .plots import (
    plot_fp8_window,
    plot_scaling_errors,
)
from .records import (
    CAST_COST_VARIANTS,
    SCALINGS,
    CastCosts,
    CastStats,
    Fp8CostReference,
    Fp8LinearErrors,
    ScaledMMComparison,
    ScalingMethod,
    fp8_costs_of,
)
from .support import LESSON, runs_where

__all__ = [
    "fp8_costs_of",
    "LESSON",
    "BLOCK_SHAPES",
    "CAST_COST_SHAPES",
    "CAST_COST_VARIANTS",
    "CastCosts",
    "CastStats",
    "DelayedScaler",
    "Fp8CostReference",
    "Fp8Linear",
    "Fp8LinearErrors",
    "Fp8LinearFn",
    "Fp8ScalingExplorer",
    "SCALINGS",
    "SCALING_METHODS",
    "SCALING_METHOD_BY_NAME",
    "ScaledMMComparison",
    "ScalingMethod",
    "amax_scale",
    "as_matrix",
    "block_scale_map",
    "blockwise_fake_quantize",
    "cast_stats",
    "check_amax_scale",
    "check_fp8_format_choice",
    "check_fp8_linear_backward",
    "fake_quantize",
    "fp8_cast_costs",
    "fp8_linear_check",
    "fp8_scaling_explorer",
    "get_scaling_method",
    "model_tensors",
    "plot_fp8_window",
    "plot_scaling_errors",
    "runs_where",
    "scaled_mm_compare",
    "scaling_errors",
    "torch_fp8_overflow",
    "values_in",
]
