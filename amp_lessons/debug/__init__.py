"""Lesson 08, debugging mixed precision: an overflow/underflow tracer, a "why is AMP not faster" triage and a
dtype map for any model, and the small models the lesson breaks on purpose.

`from amp_lessons import debug` gives every public name of the topic's modules: :mod:`.records`, :mod:`.models`,
:mod:`.experiments`, :mod:`.plots`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_first_bad_layer,
    check_fp16_fix,
    check_nonfinite_hook,
)
from .experiments import (
    PRECISION_SETTINGS,
    dtype_map,
    tensor_stats,
    trace_overflow,
    why_not_faster,
)
from .models import (
    KeepFP32,
    broken_training_setup,
    t5_like_batch,
    t5_like_model,
)
from .plots import (
    plot_bytes_per_parameter,
    plot_trace,
)
from .records import (
    AMDAHL_SLACK,
    OUTCOMES,
    DtypeMap,
    DtypeTable,
    ModuleRecord,
    OverflowTrace,
    TensorStats,
    TraceTable,
    Triage,
)
from .support import LESSON, runs_where

__all__ = [
    "AMDAHL_SLACK",
    "LESSON",
    "OUTCOMES",
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
    "check_nonfinite_hook",
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
