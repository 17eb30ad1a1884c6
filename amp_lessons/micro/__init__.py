"""Below 8 bits and below bf16: MX and NVFP4 block scales, fp8 scaling recipes and fp4 quantizers side by side,
stochastic rounding and Kahan-compensated bf16 updates.

`from amp_lessons import micro` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_experiments``, ``_explorers``, ``_plots``, ``_records``, ``_support``."""

from ._checks import (
    check_rceil_shared_exponent,
    check_stochastic_round,
)
from ._experiments import (
    SPIKE_STEP,
    TENSOR_KINDS,
    UPDATE_METHODS,
    mx_quantize,
    nvfp4_quantize,
    recipe_table,
    recipe_tensor,
    scale_rule_clipping,
    stochastic_round,
    tiny_updates,
    train_low_precision,
)
from ._explorers import (
    recipe_explorer,
)
from ._plots import (
    plot_recipe_snr,
    plot_tiny_updates,
    plot_training,
)

__all__ = [
    "SPIKE_STEP",
    "TENSOR_KINDS",
    "UPDATE_METHODS",
    "check_rceil_shared_exponent",
    "check_stochastic_round",
    "mx_quantize",
    "nvfp4_quantize",
    "plot_recipe_snr",
    "plot_tiny_updates",
    "plot_training",
    "recipe_explorer",
    "recipe_table",
    "recipe_tensor",
    "scale_rule_clipping",
    "stochastic_round",
    "tiny_updates",
    "train_low_precision",
]
