"""Lesson 05, loss scaling: static and dynamic scalers written out, against torch.amp.GradScaler.

`from amp_lessons import scaling` gives every public name of the topic's modules: :mod:`.records`,
:mod:`.experiments`, :mod:`.plots`, :mod:`.explorers`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_scaler_update,
    check_smallest_scale,
)
from .experiments import (
    TRAIN_RUNS,
    CensusIndex,
    DynamicScaler,
    GradientCensus,
    StaticScaler,
    compare_with_gradscaler,
    gradient_census_of,
    pitfall_setup,
    safe_window,
    scale_sweep,
    scaled_fractions,
    simulate_scaler,
    small_loss_census,
    train_comparison,
)
from .explorers import (
    ScaleExplorer,
    ScalerStateExplorer,
    scale_explorer,
    scaler_state_explorer,
)
from .plots import (
    plot_scale_sweep,
    plot_scaled_histogram,
    plot_scaler_history,
    plot_train_comparison,
)
from .records import (
    CensusTable,
    GradScalerComparison,
    PitfallTable,
    ScalerEvents,
    ScalerHistory,
    ScalerState,
    ScaleSweep,
    TrainComparison,
    TrainSummary,
)
from .support import LESSON, runs_where

__all__ = [
    "LESSON",
    "CensusIndex",
    "CensusTable",
    "check_scaler_update",
    "check_smallest_scale",
    "compare_with_gradscaler",
    "DynamicScaler",
    "gradient_census_of",
    "GradientCensus",
    "GradScalerComparison",
    "pitfall_setup",
    "PitfallTable",
    "plot_scale_sweep",
    "plot_scaled_histogram",
    "plot_scaler_history",
    "plot_train_comparison",
    "runs_where",
    "safe_window",
    "scale_explorer",
    "scale_sweep",
    "scaled_fractions",
    "ScaleExplorer",
    "ScaleSweep",
    "scaler_state_explorer",
    "ScalerEvents",
    "ScalerHistory",
    "ScalerState",
    "ScalerStateExplorer",
    "simulate_scaler",
    "small_loss_census",
    "StaticScaler",
    "train_comparison",
    "TRAIN_RUNS",
    "TrainComparison",
    "TrainSummary",
]
