"""Lesson 08, debugging mixed precision: an overflow/underflow tracer, a "why is AMP not faster" triage and a
dtype map for any model, and the small models the lesson breaks on purpose.

`from amp_lessons import debug` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_models``, ``_plots``, ``_records``, ``_support``."""

from ._checks import check_first_bad_layer, check_fp16_fix, check_nonfinite_hook
from ._experiments import PRECISION_SETTINGS, dtype_map, trace_overflow, why_not_faster
from ._models import KeepFP32, broken_training_setup, t5_like_batch, t5_like_model
from ._plots import plot_bytes_per_parameter, plot_trace
from ._records import AMDAHL_SLACK, DtypeTable, TraceTable

__all__ = [
    "AMDAHL_SLACK",
    "DtypeTable",
    "KeepFP32",
    "PRECISION_SETTINGS",
    "TraceTable",
    "broken_training_setup",
    "check_first_bad_layer",
    "check_fp16_fix",
    "check_nonfinite_hook",
    "dtype_map",
    "plot_bytes_per_parameter",
    "plot_trace",
    "t5_like_batch",
    "t5_like_model",
    "trace_overflow",
    "why_not_faster",
]
