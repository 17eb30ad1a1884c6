"""Instructor solutions for lesson 06's exercises (run through the learners' checker by tests/test_solutions.py)."""

import torch
from torch import nn


# Exercise 1: the AMP step with gradient clipping, in the order the recipe needs.
def clipped_amp_step(model, optimizer, scaler, x, y):
    with torch.autocast("cpu", dtype=torch.float16):
        loss = nn.functional.mse_loss(model(x).float(), y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)  # clip the TRUE gradients, not the scaled ones
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)  # skips the step if the unscaled gradients hold inf/NaN
    scaler.update()
    optimizer.zero_grad(set_to_none=True)


# Exercise 2: one optimizer step accumulated over micro-batches.
def accumulated_amp_step(model, optimizer, scaler, micro_batches):
    n = len(micro_batches)
    for x, y in micro_batches:
        with torch.autocast("cpu", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss / n).backward()  # the mean over the large batch: each micro-batch's mean, divided by n
    scaler.step(optimizer)  # once: an inf in any micro-batch skips the whole step
    scaler.update()  # once per optimizer step, never per micro-batch
    optimizer.zero_grad(set_to_none=True)
