"""Lesson 07's key code (:mod:`.key_code`) as the package calls it, its arguments checked."""

from __future__ import annotations

import math

import torch

from .._validate import flag, int_at_least, positive
from ..formats import get_format
from . import key_code

__all__ = [
    "amax_scale",
    "block_scales",
    "fake_quantize",
    "float_tensor",
    "scale_from_amax",
]


def float_tensor(x, what: str = "x") -> torch.Tensor:
    """``x`` as a detached float32 tensor; a TypeError names anything but a real floating-point tensor."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor of floating-point values, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{what} must be a floating-point tensor (float32, float16, bfloat16, ...), got {x.dtype}")
    return x.detach().float()


def scale_from_amax(amax: float, fmt="fp8_e4m3", margin: int = 0, power_of_two: bool = False) -> float:
    """The lesson's ``scale_from_amax``, checked: ``amax`` finite, >= 0, with a scale float32 can hold."""
    f = get_format(fmt)
    margin, power_of_two = int_at_least(margin, "margin", 0), flag(power_of_two, "power_of_two")
    if not math.isfinite(amax):
        raise ValueError(f"amax is {amax}: the tensor holds inf or NaN, so no scale fits it (amax must be finite)")
    if amax < 0:
        raise ValueError(f"amax must be a largest magnitude, >= 0, got {amax!r}")
    if amax:
        s = math.ldexp(f.max, -min(margin, 2000)) / amax
        s32 = float(torch.tensor(s, dtype=torch.float32))
        if not (s32 > 0 and math.isfinite(s32)):
            raise ValueError(
                f"amax={amax:g} with margin={margin} needs the scale {s:g}, which float32 cannot hold "
                f"(float32 scales lie between 1.4e-45 and 3.4e38)"
            )
    return key_code.scale_from_amax(amax, f, margin, power_of_two)


def amax_scale(x, fmt="fp8_e4m3", *, margin: int = 0, power_of_two: bool = False) -> float:
    """The scale ``fmt.max / 2**margin / amax(x)`` that puts ``x``'s largest magnitude on the format's max (rounded
    down to a power of two with ``power_of_two``); 1.0 for an all-zero or empty ``x``."""
    x = float_tensor(x)
    amax = float(x.abs().max()) if x.numel() else 0.0
    if not math.isfinite(amax):
        raise ValueError(f"x holds inf or NaN (amax is {amax}), so no scale fits it: x must hold finite values")
    scale_from_amax(amax, fmt, margin, power_of_two)  # raises on a scale float32 cannot hold
    return key_code.amax_scale(x, fmt, margin=margin, power_of_two=power_of_two)


def fake_quantize(x, fmt="fp8_e4m3", scale=1.0) -> torch.Tensor:
    """``x * scale`` rounded to ``fmt`` (saturating) and divided back by ``scale``, as float32. ``scale``: a positive
    number, or a tensor of them that broadcasts to ``x``."""
    x = float_tensor(x)
    fmt = get_format(fmt)
    if isinstance(scale, torch.Tensor) and scale.numel() != 1:
        if not scale.is_floating_point():
            raise TypeError(f"scale must be a positive number or a float tensor of them, got a {scale.dtype} tensor")
        if not bool(((scale > 0) & torch.isfinite(scale)).all()):
            raise ValueError("every scale must be a positive finite number")
        try:
            torch.broadcast_shapes(scale.shape, x.shape)
        except RuntimeError:
            raise ValueError(
                f"scale of shape {tuple(scale.shape)} does not broadcast to x of shape {tuple(x.shape)}"
            ) from None
    else:
        value = positive(float(scale) if isinstance(scale, torch.Tensor) else scale, "scale")
        if not 0 < float(torch.tensor(value, dtype=torch.float32)) < math.inf:
            raise ValueError(f"scale={value!r} is not a float32 number > 0: use a scale in [1.4e-45, 3.4e38]")
        scale = scale if isinstance(scale, torch.Tensor) else value
    return key_code.fake_quantize(x, fmt, scale)


def block_scales(x: torch.Tensor, fmt="fp8_e4m3", block=(1, 128), power_of_two: bool = False):
    """The lesson's ``block_scales``, checked: ``x`` finite and every block's scale one float32 can hold."""
    if not bool(torch.isfinite(x).all()):
        raise ValueError("x holds inf or NaN: no block scale fits it (x must hold finite values)")
    s, blocks = key_code.block_scales(x, fmt, block, power_of_two)
    if not bool(torch.isfinite(s).all()):
        raise ValueError("a block's amax is so small that its scale overflows float32 (3.4e38)")
    return s, blocks
