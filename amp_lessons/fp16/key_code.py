"""Key code of notebooks/03_fp16_overflow_underflow.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/03_fp16_overflow_underflow.ipynb, exported cell 1 --
import torch

from amp_lessons.formats import quantize


def sgd_step(weights, inputs, y, lr, *, fmt=None, master=True):
    """One SGD step on the loss mean((inputs @ w - y)**2) / 2; returns (new weights, the update, the loss).

    fmt=None: everything fp32. Otherwise the forward and backward passes use the weights rounded to fmt
    (e.g. "fp16"); master=True applies the update to the fp32 `weights` (fp32 master weights), master=False
    stores the updated weights in fmt again (low-precision weights: an update below half a gap is lost)."""
    used = weights if fmt is None else quantize(weights, fmt)  # the copy the forward pass uses
    err = inputs @ used - y  # forward
    loss = 0.5 * float(err.dot(err)) / len(y)
    update = lr * (inputs.T @ err) / len(y)  # backward: the gradient, times the learning rate
    new = weights - update  # the update, applied in fp32
    if fmt is not None and not master:
        new = quantize(new, fmt)  # stored in fmt: rounded back, small updates vanish
    return new, update, loss
