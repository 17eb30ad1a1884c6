"""Below 8 bits and below bf16: MX and NVFP4 block scales, fp8 recipes side by side, stochastic
rounding and Kahan-compensated bf16 updates.

`from amp_lessons import micro` gives every public name of the topic's modules: :mod:`.experiments`,
:mod:`.plots`, :mod:`.explorers`, :mod:`.checks`, :mod:`.support`."""

from .checks import (
    check_rceil_shared_exponent,
    check_stochastic_round,
)
from .experiments import (
    BYTES_PER_PARAMETER,
    MAX_ELEMENTS,
    MX_ELEMENT_FORMATS,
    RECIPE_BY_NAME,
    RECIPE_SCALINGS,
    RECIPES,
    SCALE_RULES,
    SPIKE_STEP,
    STEPS,
    TENSOR_KINDS,
    UPDATE_METHODS,
    BlockQuantized,
    Recipe,
    e8m0_round_up,
    get_recipe,
    kahan_add,
    mx_quantize,
    mx_scale_exponents,
    nvfp4_quantize,
    recipe_quantize,
    recipe_run,
    recipe_stats,
    recipe_table,
    recipe_tensor,
    scale_rule_clipping,
    stochastic_round,
    tiny_updates,
    train_low_precision,
)
from .explorers import (
    RecipeExplorer,
    recipe_explorer,
)
from .plots import (
    plot_recipe_snr,
    plot_tiny_updates,
    plot_training,
)
from .support import runs_where

__all__ = [
    "RecipeExplorer",
    "recipe_explorer",
    "BYTES_PER_PARAMETER",
    "MAX_ELEMENTS",
    "MX_ELEMENT_FORMATS",
    "RECIPES",
    "RECIPE_BY_NAME",
    "RECIPE_SCALINGS",
    "SCALE_RULES",
    "SPIKE_STEP",
    "STEPS",
    "TENSOR_KINDS",
    "UPDATE_METHODS",
    "BlockQuantized",
    "Recipe",
    "check_rceil_shared_exponent",
    "check_stochastic_round",
    "e8m0_round_up",
    "get_recipe",
    "kahan_add",
    "mx_quantize",
    "mx_scale_exponents",
    "nvfp4_quantize",
    "plot_recipe_snr",
    "plot_tiny_updates",
    "plot_training",
    "recipe_quantize",
    "recipe_run",
    "recipe_stats",
    "recipe_table",
    "recipe_tensor",
    "runs_where",
    "scale_rule_clipping",
    "stochastic_round",
    "tiny_updates",
    "train_low_precision",
]
