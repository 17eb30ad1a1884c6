"""Lesson 04, autocast policies: which op runs in which dtype, traced and profiled, and the cost of casts.

`from amp_lessons import autocast` gives every public name of the topic's modules: :mod:`.experiments`, :mod:`.checks`."""

from .checks import (
    check_bce_fix,
    check_dtype_predictions,
)
from .experiments import (
    DEVICE_TYPES,
    POLICIES,
    SOURCES,
    OpRecord,
    ProfileNode,
    ProfileTree,
    Trace,
    cast_cost,
    fake_cuda,
    policy_groups,
    policy_of,
    policy_sources,
    policy_table,
    profile_tree,
    trace,
)

__all__ = [
    "DEVICE_TYPES",
    "OpRecord",
    "POLICIES",
    "ProfileNode",
    "ProfileTree",
    "SOURCES",
    "Trace",
    "cast_cost",
    "check_bce_fix",
    "check_dtype_predictions",
    "fake_cuda",
    "policy_groups",
    "policy_of",
    "policy_sources",
    "policy_table",
    "profile_tree",
    "trace",
]
