"""Argument checks shared by the experiment modules: each error names the bad value and what is
allowed (private; the public functions document their own arguments)."""

from __future__ import annotations

import math
import numbers

import torch


def real(value, what: str) -> float:
    """A real number (a Python number or a one-element floating-point tensor) as a float."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def positive(value, what: str) -> float:
    """A positive finite real number."""
    value = real(value, what)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{what}={value!r} is not allowed: it must be a positive finite number")
    return value


def int_at_least(value, what: str, low: int) -> int:
    """An int (not a bool) that is at least ``low``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{what}={value!r} is not allowed: it must be an int >= {low}")
    return int(value)
