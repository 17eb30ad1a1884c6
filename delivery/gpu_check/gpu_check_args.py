"""Argument checks of ``make gpu-check``'s modules (``delivery/gpu_check/gpu_check.py`` and its checks): a bad value gets a
clear error naming it and what is allowed."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

MAX_DIM = 65_536


# --------------------------------------------------------------------------------------------
# Argument checks (bad input: a clear error naming the value)
# --------------------------------------------------------------------------------------------


def int_arg(value, name: str, low: int = 1, high: int = MAX_DIM) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, got {value!r}")
    return value


def number_arg(value, name: str, low: float = 0.0, high: float = math.inf, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise ValueError(f"{name} must be a finite number {bound} and at most {high:g}, got {value!r}")
    return float(value)


def tensor_arg(value, name: str, dtypes: Sequence[torch.dtype]) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype {' or '.join(map(str, dtypes))}, got {value.dtype}")
    return value


def device_arg(device) -> torch.device:
    try:
        d = torch.device(device) if isinstance(device, (str, torch.device)) else None
    except (RuntimeError, TypeError):
        d = None
    if d is None or d.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or such a torch.device, got {device!r}")
    return d
