"""Lesson 10's records: the frozen results of its experiments (:mod:`.experiments`). A tensor in a block-scaled
format (:class:`BlockQuantized`), what a scale rule clipped (:class:`RuleClipping`), how well a recipe kept a tensor
(:class:`RecipeStats`, one :class:`RecipeRow` per recipe), the weights of many tiny updates (:class:`TinyUpdates`) and
one low-precision training run (:class:`LowPrecisionRun`). Nothing here runs an experiment or draws.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._table import TableRecord
from ..formats import get_format

__all__ = [
    "BlockQuantized",
    "LowPrecisionRun",
    "RecipeRow",
    "RecipeStats",
    "RuleClipping",
    "TinyUpdates",
]


@dataclass(frozen=True)
class BlockQuantized:
    """A tensor in a block-scaled format: ``values`` (dequantized, float32, x's shape) equal
    ``elements * scales`` blockwise; ``elements`` are values of ``element_format`` (float32, x's shape);
    ``scales`` holds one scale per block (float32: the e8m0 power of two, or e4m3 block scale times
    the global scale); ``scale_codes`` the stored scale (e8m0 exponent codes 0..255, or e4m3 values);
    ``clipped`` marks the elements that saturated: rounded to the element format, x / scale would exceed
    its max, so the clamp to the max changed it (a value that rounds down onto the max is not clipped)."""

    values: torch.Tensor
    elements: torch.Tensor
    scales: torch.Tensor
    scale_codes: torch.Tensor
    clipped: torch.Tensor
    element_format: str
    block: int
    global_scale: float | None = None

    @property
    def bits_per_element(self) -> float:
        """Storage per element: the element's bits plus the block scale's 8 bits shared by ``block``."""
        return get_format(self.element_format).bits + 8 / self.block


@dataclass(frozen=True)
class RuleClipping:
    """What one e8m0 scale rule did to a tensor (:func:`scale_rule_clipping`): ``rule`` one of
    :data:`SCALE_RULES`, ``blocks_clipped`` the fraction of blocks with a value that saturates
    (:attr:`BlockQuantized.clipped`), ``values_clipped`` the fraction of all values that do, ``snr_db`` the
    signal-to-noise ratio (dB) of the result."""

    rule: str
    blocks_clipped: float
    values_clipped: float
    snr_db: float


@dataclass(frozen=True, repr=False)
class RecipeStats(TableRecord):
    """How well a stored tensor keeps the original (:func:`recipe_stats`): ``snr_db`` the signal-to-noise ratio in dB
    (inf when exact), ``flushed`` the fraction of non-zero values flushed to zero (the formats engine's class), ``saturated`` the fraction of all
    values clamped at the format's max (NaN when unknown), ``bias`` the sum of errors over the sum of magnitudes
    (signed). Shown as a small table."""

    snr_db: float
    flushed: float
    saturated: float
    bias: float

    def _table(self):
        rows = [
            ("signal-to-noise", "exact" if math.isinf(self.snr_db) else f"{self.snr_db:.1f} dB"),
            ("non-zero values flushed to 0", f"{self.flushed:.3%}"),
            ("values saturated", "unknown" if math.isnan(self.saturated) else f"{self.saturated:.3%}"),
            ("bias (sum of errors / sum of |x|)", f"{self.bias:+.2e}"),
        ]
        return None, rows, "", ()


@dataclass(frozen=True)
class RecipeRow:
    """One row of :func:`recipe_table`: the recipe's display name, its storage cost in bits per value (scales
    included), and the :class:`RecipeStats` of the tensor it stored."""

    recipe: str
    bits_per_value: float
    snr_db: float
    flushed: float
    saturated: float
    bias: float


@dataclass(frozen=True, eq=False, repr=False)
class TinyUpdates(TableRecord):
    """The weights of :func:`tiny_updates`: ``trajectories`` update method (:data:`UPDATE_METHODS`) -> the weight
    after each of the ``steps`` updates (a float32 tensor), ``exact`` the exact sums (start + k * update, float64),
    ``fmt`` the format the weight is held in. Shown as a table of each method's last weight against the exact
    sum."""

    fmt: str
    steps: int
    exact: torch.Tensor
    trajectories: dict[str, torch.Tensor]

    def _table(self):
        rows = [(m, f"{float(t[-1]):.6g}") for m, t in self.trajectories.items()]
        rows.append(("exact", f"{float(self.exact[-1]):.6g}"))
        return ("method", "weight at the end"), rows, f"{self.steps:,} tiny updates to a {self.fmt} weight", ()


@dataclass(frozen=True)
class LowPrecisionRun:
    """One run of :func:`train_low_precision`: ``method`` the update method (:data:`UPDATE_METHODS`), ``loss`` the
    loss of each step, ``never_moved`` the fraction of weights equal to their initial value at the end,
    ``bytes_per_parameter`` the weight storage (+ compensation or master copy, :data:`BYTES_PER_PARAMETER`)."""

    method: str
    loss: tuple[float, ...]
    never_moved: float
    bytes_per_parameter: int
