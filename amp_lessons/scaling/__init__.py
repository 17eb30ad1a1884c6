"""Lesson 05, loss scaling: static and dynamic scalers written out, against torch.amp.GradScaler.

`from amp_lessons import scaling` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checked``, ``_checks``, ``_experiments``, ``_explorers``, ``_plots``, ``_records``, ``_support``."""

from ._checks import check_scaler_update, check_smallest_scale
from ._experiments import (
    compare_with_gradscaler,
    pitfall_setup,
    safe_window,
    scale_sweep,
    simulate_scaler,
    small_loss_census,
    train_comparison,
)
from ._explorers import scale_explorer, scaler_state_explorer
from ._plots import plot_scale_sweep, plot_scaler_history, plot_train_comparison
from ._records import CensusTable, GradScalerComparison, PitfallTable, ScalerEvents, ScalerState, TrainSummary

__all__ = [
    "CensusTable",
    "GradScalerComparison",
    "PitfallTable",
    "ScalerEvents",
    "ScalerState",
    "TrainSummary",
    "check_scaler_update",
    "check_smallest_scale",
    "compare_with_gradscaler",
    "pitfall_setup",
    "plot_scale_sweep",
    "plot_scaler_history",
    "plot_train_comparison",
    "safe_window",
    "scale_explorer",
    "scale_sweep",
    "scaler_state_explorer",
    "simulate_scaler",
    "small_loss_census",
    "train_comparison",
]
