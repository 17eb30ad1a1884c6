"""Lesson 07's key code as the package calls it: the scale and the cast of :mod:`.key_code` (the notebook's exported
cell, kept as short as the idea), with their arguments checked here. :mod:`.experiments` exports them."""

from __future__ import annotations

import torch

from .._validate import flag, int_at_least, positive
from . import key_code
from .key_code import float_tensor


def amax_scale(x, fmt="fp8_e4m3", *, margin: int = 0, power_of_two: bool = False) -> float:
    """The lesson's ``amax_scale`` (:mod:`.key_code`: the scale from ``x``'s own amax, now), its arguments checked."""
    margin, power_of_two = int_at_least(margin, "margin", 0), flag(power_of_two, "power_of_two")
    return key_code.amax_scale(float_tensor(x), fmt, margin=margin, power_of_two=power_of_two)


def fake_quantize(x, fmt="fp8_e4m3", scale=1.0) -> torch.Tensor:
    """The lesson's ``fake_quantize`` (:mod:`.key_code`: ``x * scale`` cast to ``fmt`` and back, over ``scale``), its
    arguments checked: ``scale`` a positive number, or a tensor of them that broadcasts to ``x``."""
    x = float_tensor(x)
    if isinstance(scale, torch.Tensor) and scale.numel() > 1:
        if not bool(((scale > 0) & torch.isfinite(scale)).all()):
            raise ValueError("every scale must be a positive finite number")
    else:
        scale = positive(scale, "scale")
    return key_code.fake_quantize(x, fmt, scale)
