"""Lesson 03, fp16 overflow, underflow and swamping: running sums in any format, lost updates and
master weights, gradient census.

`from amp_lessons import fp16` gives every public name of the topic's modules: :mod:`.experiments`, :mod:`.plots`,
:mod:`.explorers`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_kahan16,
    check_stall_value,
)
from .experiments import (
    GradientCensus,
    MasterWeightRuns,
    SumCopies,
    census_fractions,
    check_copies,
    checked_sgd_step as sgd_step,  # the lesson's step, arguments checked
    classify,
    gradient_census,
    gradient_census_of,
    kahan_sum,
    lost_update_fraction,
    running_sum,
    running_sums_of_copies,
    small_batch,
    small_model,
    sum_copies,
    train_master_weights,
    update_survives,
)
from .explorers import (
    MagnitudeExplorer,
    SumExplorer,
    magnitude_explorer,
    sum_explorer,
)
from .plots import (
    REGION_FORMATS,
    plot_format_regions,
    plot_gradient_histogram,
    plot_loss_curves,
    plot_running_sums,
)
from .support import LESSON, runs_where

__all__ = [
    "LESSON",
    "MagnitudeExplorer",
    "REGION_FORMATS",
    "GradientCensus",
    "MasterWeightRuns",
    "SumCopies",
    "SumExplorer",
    "census_fractions",
    "check_copies",
    "check_kahan16",
    "check_stall_value",
    "classify",
    "gradient_census",
    "gradient_census_of",
    "kahan_sum",
    "lost_update_fraction",
    "magnitude_explorer",
    "plot_format_regions",
    "plot_gradient_histogram",
    "plot_loss_curves",
    "plot_running_sums",
    "running_sum",
    "running_sums_of_copies",
    "runs_where",
    "sgd_step",
    "small_batch",
    "small_model",
    "sum_copies",
    "sum_explorer",
    "train_master_weights",
    "update_survives",
]
