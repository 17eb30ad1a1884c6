"""Lesson 08's models: the small models the lesson breaks on purpose (:func:`t5_like_model`, its batch
:func:`t5_like_batch` and :func:`broken_training_setup`, the symptom repros the tools of :mod:`.experiments` are run
on) and :class:`KeepFP32` (lesson 08's own cell, :mod:`.key_code`, with its argument checked here), the fix that runs
one module in fp32 inside an autocast region.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn

from .. import _validate
from .._validate import count, positive
from . import key_code

__all__ = ["KeepFP32", "broken_training_setup", "t5_like_batch", "t5_like_model"]


class KeepFP32(key_code.KeepFP32):
    """Lesson 08's ``KeepFP32`` (:mod:`.key_code`: ``module`` run in fp32 inside any autocast region), its argument
    checked: ``module`` must be a :class:`torch.nn.Module`."""

    def __init__(self, module: nn.Module):
        if not isinstance(module, nn.Module):
            raise TypeError(
                f"module={module!r:.60} is not allowed: KeepFP32 wraps a torch.nn.Module (the layer to "
                f"run in fp32), got {type(module).__name__}"
            )
        super().__init__(module)


# --- models that fail the way users report it ---------------------------------------------------------


class _FFN(nn.Sequential):
    def __init__(self, d: int, hidden: int):
        super().__init__(OrderedDict(wi=nn.Linear(d, hidden), act=nn.ReLU(), wo=nn.Linear(hidden, d)))


def t5_like_model(seed: int = 0, *, blocks: int = 3, bad_block: int | None = 1, gain: float = 2.5e5) -> nn.Module:
    """A small fp32 model shaped like T5's feed-forward stack: ``embed`` (Linear 16 -> 32), then
    ``blocks`` times a feed-forward block (``block{i}.wi`` Linear 32 -> 64, ReLU, ``block{i}.wo`` Linear
    64 -> 32) followed by a LayerNorm ``norm{i}``, then ``head`` (Linear 32 -> 4).

    In block ``bad_block`` (None: none) the ``wi`` and ``wo`` weights are each multiplied by
    ``sqrt(gain)``, so its ``wo`` outputs reach about 2e5 on :func:`t5_like_batch` inputs (``wi``'s stay
    near 1e3), as T5's did (trained in bf16, its FFN outputs exceeded
    fp16's 65504): harmless in fp32 and bf16 (the LayerNorm after it rescales), inf in fp16. The first
    module to overflow fp16 is therefore ``f"block{bad_block}.wo"``, known in advance."""
    seed = _validate.seed(seed)
    blocks = count(blocks, "blocks", 1, 256)
    gain = positive(gain, "gain")
    if bad_block is not None and not (
        isinstance(bad_block, int) and not isinstance(bad_block, bool) and 0 <= bad_block < blocks
    ):
        raise ValueError(f"bad_block={bad_block!r} is not allowed: use None or an int in [0, {blocks})")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers = OrderedDict(embed=nn.Linear(16, 32))
        for i in range(blocks):
            layers[f"block{i}"] = _FFN(32, 64)
            layers[f"norm{i}"] = nn.LayerNorm(32)
        layers["head"] = nn.Linear(32, 4)
        model = nn.Sequential(layers)
    if bad_block is not None:
        with torch.no_grad():
            ffn = model[2 * bad_block + 1]
            ffn.wi.weight.mul_(math.sqrt(gain))
            ffn.wo.weight.mul_(math.sqrt(gain))
    return model


def t5_like_batch(seed: int = 0, batch: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)``: inputs (batch, 16) of magnitude about 30 and regression targets (batch, 4), seeded."""
    g = torch.Generator().manual_seed(_validate.seed(seed))
    batch = count(batch, "batch", 1, 1_000_000, "rows of 16 inputs")
    return 30 * torch.randn(batch, 16, generator=g), torch.randn(batch, 4, generator=g)


def broken_training_setup(seed: int = 3):
    """The lesson's "broken training script": ``(model, x, y)`` where the model is a
    :func:`t5_like_model` with 5 blocks, one of which (chosen by ``seed``) overflows fp16. Its fp16
    autocast loss is NaN; its fp32 loss is finite."""
    seed = _validate.seed(seed)
    bad_block = 1 + (seed * 7 + 2) % 4  # one of blocks 1..4, not the same for every seed
    model = t5_like_model(seed, blocks=5, bad_block=bad_block)
    x, y = t5_like_batch(seed)
    return model, x, y
