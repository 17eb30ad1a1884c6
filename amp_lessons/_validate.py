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


def flag(value, what: str) -> bool:
    """A bool (True or False; not 1, "no" or None)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def seed(value, what: str = "seed") -> int:
    """A random seed: an int (not a bool) in [0, 2**63)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int (a random seed), got {value!r} ({type(value).__name__})")
    if not 0 <= value < 2**63:
        raise ValueError(f"{what}={value!r} is not allowed: a seed is an int in [0, 2**63)")
    return int(value)


def count(value, what: str, low: int = 1, high: int | None = None, unit: str = "") -> int:
    """An int (not a bool) in ``[low, high]``: a size, count or number of repeats. ``high`` is the course's limit
    on work (so that a typo cannot hang a kernel or fill the memory); the message says why (``unit``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{what} must be an int >= {low}, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{what} must be an int >= {low}, got {value!r}")
    if high is not None and value > high:
        why = f" ({unit})" if unit else ""
        raise ValueError(f"{what}={value!r} is more than this course runs: at most {high:,}{why}")
    return int(value)


def nbytes_text(n: float) -> str:
    """A byte count in words: ``7.3 TiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"  # unreachable


MAX_TENSOR_BYTES = 2 * 1024**3
"""The largest single tensor the course's experiments allocate at a learner's request (2 GiB)."""


def allocation(n_elements: float, what: str, bytes_per_element: int = 4) -> None:
    """Refuse at once a request whose tensor would exceed :data:`MAX_TENSOR_BYTES`, with the estimate."""
    need = float(n_elements) * bytes_per_element
    if need > MAX_TENSOR_BYTES:
        raise ValueError(
            f"{what} would allocate {nbytes_text(need)} for one tensor; the course runs at most "
            f"{nbytes_text(MAX_TENSOR_BYTES)}: choose smaller sizes"
        )
