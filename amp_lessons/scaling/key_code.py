"""Key code of notebooks/05_loss_scaling.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/05_loss_scaling.ipynb, exported cell 1 --
import math
import struct

import torch


def f32(x: float) -> float:
    """x rounded to float32 (nearest even), as a Python float; inf where it overflows. GradScaler keeps its
    scale in a float32 tensor, so every scale below is a float32 number too."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


class StaticScaler:
    """Loss scaling with a fixed scale: multiply the loss, divide the gradients, skip a step whose
    gradients hold an inf or a NaN."""

    def __init__(self, scale: float):
        self.scale = f32(scale)  # GradScaler keeps its scale in float32

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale  # the backward pass now carries gradients `scale` times larger

    def unscale_(self, params) -> bool:
        """Divide every .grad by the scale, in place; return whether any of them was inf/NaN."""
        grads = [p.grad for p in params if p.grad is not None]
        found_inf = any(not torch.isfinite(g).all() for g in grads)
        inv_scale = f32(1.0 / self.scale)  # as GradScaler: one reciprocal, then multiplications
        for g in grads:
            g.mul_(inv_scale)
        return found_inf

    def step(self, optimizer, params) -> bool:
        """Unscale, then step unless a gradient overflowed. Returns whether it stepped."""
        if self.unscale_(list(params)):
            return False  # skip: the update would write inf/NaN into the weights
        optimizer.step()
        return True

# -- notebooks/05_loss_scaling.ipynb, exported cell 2 --
def update_scale(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """GradScaler's update rule: (new scale, new growth_tracker) after a step that found inf/NaN or not."""
    if found_inf:  # the step was skipped: back off, and count clean steps from zero again
        return f32(scale * backoff_factor), 0
    growth_tracker += 1
    if growth_tracker == growth_interval:  # enough clean steps in a row: grow, and count from zero again
        grown = f32(scale * growth_factor)
        return (grown if math.isfinite(grown) else scale), 0  # GradScaler never grows the scale to inf
    return scale, growth_tracker


class DynamicScaler:
    """Loss scaling that adapts, with GradScaler's rule (update_scale) and defaults."""

    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        self.scale = f32(init_scale)  # GradScaler keeps its scale in float32
        self.growth_factor, self.backoff_factor, self.growth_interval = growth_factor, backoff_factor, growth_interval
        self.growth_tracker = 0  # clean steps in a row since the scale last changed
        self.found_inf = None  # set by unscale_, read by step and update

    def scale_loss(self, loss: torch.Tensor) -> torch.Tensor:
        return loss * self.scale

    def unscale_(self, params) -> bool:
        """Divide the gradients by the scale in place, once per step (call it yourself before clipping, or let
        step do it). Returns whether any gradient was inf/NaN."""
        if self.found_inf is not None:
            raise RuntimeError("unscale_ was already called since the last update()")
        grads = [p.grad for p in params if p.grad is not None]
        self.found_inf = any(not torch.isfinite(g).all() for g in grads)  # checked before the division
        # 1/scale in float32, as GradScaler computes it: inf when the scale has underflowed to 0
        inv_scale = f32(1.0 / self.scale) if self.scale > 0 else math.inf
        for g in grads:
            g.mul_(inv_scale)
        return self.found_inf

    def step(self, optimizer, params) -> bool:
        """Unscale (unless done already) and step, or skip the step after an overflow. Returns whether it stepped."""
        if self.found_inf is None:
            self.unscale_(params)
        if self.found_inf:
            return False
        optimizer.step()
        return True

    def update(self) -> None:
        if self.found_inf is None:
            raise RuntimeError("update() needs a step first: call step(optimizer, params) before it")
        self.scale, self.growth_tracker = update_scale(
            self.scale, self.growth_tracker, self.found_inf, self.growth_factor, self.backoff_factor, self.growth_interval
        )
        self.found_inf = None
