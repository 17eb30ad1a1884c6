"""The scalers of :mod:`.key_code` (the lesson's exported cells) with their arguments checked against GradScaler's
own limits: a positive float32 scale, ``growth_factor > 1``, ``0 < backoff_factor < 1``, an int32 interval."""

from __future__ import annotations

import math

from .. import _validate
from . import key_code
from .key_code import f32, update_scale

__all__ = ["FLOAT32_MAX", "INT32_MAX", "DynamicScaler", "StaticScaler", "scale_value", "scaler_params", "update_scale"]

#: float32's largest finite value: a scale above it rounds to inf in GradScaler's float32 tensor
FLOAT32_MAX = 2.0**128 * (1 - 2.0**-24)
#: the longest growth_interval GradScaler's int32 counter of clean steps can reach
INT32_MAX = 2**31 - 1


def scale_value(value, what: str = "scale") -> float:
    """A loss scale: a positive real number whose float32 rounding is a positive finite number, as a float."""
    if isinstance(value, bool) or not _validate.is_real(value):
        raise TypeError(f"{what} must be a positive number, got {value!r} ({type(value).__name__})")
    v = float(value)
    if not (v > 0 and math.isfinite(v)):
        raise ValueError(f"{what}={value!r} is not allowed: it must be a positive finite number")
    if not 0 < f32(v) < math.inf:
        raise ValueError(
            f"{what}={value!r} is not allowed: it must be a positive float32 number, from 2**-149 up to "
            f"{FLOAT32_MAX:.7g} (GradScaler keeps its scale in float32)"
        )
    return v


def scaler_params(init_scale, growth_factor, backoff_factor, growth_interval) -> tuple:
    """GradScaler's four parameters, checked (a ValueError names a bad one and what is allowed), as
    (init_scale rounded to float32, growth_factor, backoff_factor, growth_interval)."""
    init_scale = scale_value(init_scale, "init_scale")
    growth_factor = _validate.real_in(
        growth_factor, "growth_factor", 1, math.inf, open_low=True, open_high=True,
        allowed="a finite number > 1 (the scale grows by it)",
    )  # fmt: skip
    backoff_factor = _validate.real_in(
        backoff_factor, "backoff_factor", 0, 1, open_low=True, open_high=True,
        allowed="a number in (0, 1) (the scale shrinks by it)",
    )  # fmt: skip
    growth_interval = _validate.int_in(
        growth_interval, "growth_interval", 1, INT32_MAX,
        allowed=f"an int >= 1 and at most 2**31 - 1 = {INT32_MAX} (GradScaler counts clean steps in an int32)",
    )  # fmt: skip
    return f32(init_scale), growth_factor, backoff_factor, growth_interval


class StaticScaler(key_code.StaticScaler):
    """The lesson's :class:`.key_code.StaticScaler`, its ``scale`` checked."""

    def __init__(self, scale: float):
        super().__init__(scale_value(scale, "scale"))


class DynamicScaler(key_code.DynamicScaler):
    """The lesson's :class:`.key_code.DynamicScaler`, its four parameters checked (:func:`scaler_params`)."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        super().__init__(*scaler_params(init_scale, growth_factor, backoff_factor, growth_interval))
