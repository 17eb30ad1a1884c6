"""Lesson 03, fp16 overflow, underflow and swamping: running sums in any format, lost updates and
master weights, gradient census.

`from amp_lessons import fp16` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_explorers``, ``_plots``, ``_support``."""

from ._checks import check_kahan16, check_stall_value
from ._experiments import (
    classify,
    gradient_census,
    kahan_sum,
    running_sum,
    running_sums_of_copies,
    sum_copies,
    train_master_weights,
    update_survives,
)
from ._explorers import magnitude_explorer, sum_explorer
from ._plots import plot_gradient_histogram, plot_loss_curves, plot_running_sums

__all__ = [
    "check_kahan16",
    "check_stall_value",
    "classify",
    "gradient_census",
    "kahan_sum",
    "magnitude_explorer",
    "plot_gradient_histogram",
    "plot_loss_curves",
    "plot_running_sums",
    "running_sum",
    "running_sums_of_copies",
    "sum_copies",
    "sum_explorer",
    "train_master_weights",
    "update_survives",
]
