"""Lesson 04, autocast policies: which op runs in which dtype, traced and profiled, and the cost of casts.

`from amp_lessons import autocast` gives every public name of the topic's modules: :mod:`.records`,
:mod:`.experiments`, :mod:`.plots`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_bce_fix,
    check_cast_counter,
    check_dtype_predictions,
)
from .experiments import (
    DEVICE_TYPES,
    POLICIES,
    SOURCES,
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
from .plots import plot_output_dtypes
from .records import (
    AUTOGRAD_BOOKKEEPING,
    CastCost,
    OpRecord,
    ProfileNode,
    ProfileTree,
    Trace,
)
from .support import LESSON, runs_where

__all__ = [
    "AUTOGRAD_BOOKKEEPING",
    "LESSON",
    "CastCost",
    "DEVICE_TYPES",
    "OpRecord",
    "POLICIES",
    "ProfileNode",
    "ProfileTree",
    "SOURCES",
    "Trace",
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
    "runs_where",
    "trace",
]
