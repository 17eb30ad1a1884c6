"""Lesson 08, debugging mixed precision: an overflow/underflow tracer, a "why is AMP not faster" triage and a
dtype map for any model, and the small models the lesson breaks on purpose.

`from amp_lessons import debug` gives every public name of the topic's modules: :mod:`.experiments`,
:mod:`.plots`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_first_bad_layer,
    check_fp16_fix,
)
from .experiments import (
    PRECISION_SETTINGS,
    DtypeMap,
    DtypeTable,
    KeepFP32,
    ModuleRecord,
    OverflowTrace,
    TensorStats,
    TraceTable,
    Triage,
    broken_training_setup,
    dtype_map,
    t5_like_batch,
    t5_like_model,
    tensor_stats,
    trace_overflow,
    why_not_faster,
)
from .plots import (
    plot_bytes_per_parameter,
    plot_trace,
)
from .support import runs_where

__all__ = [
    "DtypeMap",
    "DtypeTable",
    "KeepFP32",
    "ModuleRecord",
    "OverflowTrace",
    "PRECISION_SETTINGS",
    "TensorStats",
    "TraceTable",
    "Triage",
    "broken_training_setup",
    "check_first_bad_layer",
    "check_fp16_fix",
    "dtype_map",
    "plot_bytes_per_parameter",
    "plot_trace",
    "runs_where",
    "t5_like_batch",
    "t5_like_model",
    "tensor_stats",
    "trace_overflow",
    "why_not_faster",
]
