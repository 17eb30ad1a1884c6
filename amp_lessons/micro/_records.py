"""Lesson 10's records: the frozen results of its experiments (:mod:`.experiments`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._table import TableRecord
from ..formats import get_format

__all__ = [
    "LowPrecisionRun",
    "RecipeRow",
    "RecipeStats",
    "RuleClipping",
    "TinyUpdates",
]


@dataclass(frozen=True)
class BlockQuantized:
    """A tensor in a block-scaled format: ``values`` (dequantized) equal ``elements * scales`` blockwise;
    ``scale_codes`` the stored scales (e8m0 codes 0..255, or e4m3 values); ``clipped`` marks the elements that
    saturated (x / scale, rounded, beyond the element format's max)."""

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
        return get_format(self.element_format).bits + 8 / self.block


@dataclass(frozen=True)
class RuleClipping:
    """What one e8m0 scale rule did to a tensor (:func:`scale_rule_clipping`)."""

    rule: str
    blocks_clipped: float
    values_clipped: float
    snr_db: float


@dataclass(frozen=True, repr=False)
class RecipeStats(TableRecord):
    """How well a stored tensor keeps the original (:func:`recipe_stats`); ``saturated`` NaN when unknown."""

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
    """One row of :func:`recipe_table`: a recipe, its bits per value and its :class:`RecipeStats`."""

    recipe: str
    bits_per_value: float
    snr_db: float
    flushed: float
    saturated: float
    bias: float


@dataclass(frozen=True, eq=False, repr=False)
class TinyUpdates(TableRecord):
    """The weights of :func:`tiny_updates`: ``trajectories`` method -> the weight after each update, ``exact`` the
    exact sums (float64)."""

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
    """One run of :func:`train_low_precision`: the loss of each step, the share of weights that never moved."""

    method: str
    loss: tuple[float, ...]
    never_moved: float
    bytes_per_parameter: int
