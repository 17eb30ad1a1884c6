"""Lesson 04, autocast policies: which op runs in which dtype, traced and profiled, and the cost of casts.

`from amp_lessons import autocast` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_plots``, ``_policy``, ``_records``, ``_support``."""

from ._checks import check_bce_fix, check_cast_counter, check_dtype_predictions
from ._experiments import (
    cast_cost,
    fake_cuda,
    output_dtypes,
    policy_groups,
    policy_of,
    policy_sources,
    policy_table,
    profile_tree,
    trace,
)
from ._plots import plot_output_dtypes
from ._records import AUTOGRAD_BOOKKEEPING

__all__ = [
    "AUTOGRAD_BOOKKEEPING",
    "cast_cost",
    "check_bce_fix",
    "check_cast_counter",
    "check_dtype_predictions",
    "fake_cuda",
    "output_dtypes",
    "plot_output_dtypes",
    "policy_groups",
    "policy_of",
    "policy_sources",
    "policy_table",
    "profile_tree",
    "trace",
]
