"""Key code of notebooks/06_amp_end_to_end.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/06_amp_end_to_end.ipynb, exported cell 1 --
import torch
from torch import nn


def make_step(model, optimizer, config, device_type, max_norm=1.0):
    use_amp = config in ("bf16 autocast", "fp16 autocast + GradScaler")
    amp_dtype = torch.float16 if config.startswith("fp16") else torch.bfloat16
    scaler = torch.amp.GradScaler(device_type, enabled=config == "fp16 autocast + GradScaler")  # fp16 only

    def step(x, y):
        with torch.autocast(device_type, dtype=amp_dtype, enabled=use_amp):  # forward and loss only
            logits = model(x)
            # upcast the logits: under CUDA autocast cross_entropy would take them in fp16/bf16
            loss = nn.functional.cross_entropy(logits.float().flatten(0, 1), y.flatten())
        scaler.scale(loss).backward()  # backward outside autocast
        if max_norm is not None:
            scaler.unscale_(optimizer)  # divide the scale out first: clip the true gradients
            nn.utils.clip_grad_norm_(model.parameters(), max_norm)
        scaler.step(optimizer)  # skips the step if a gradient is inf/NaN
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()  # not .item(): that would wait for the GPU at every step

    return step
