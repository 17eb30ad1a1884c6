"""Key code of notebooks/08_debugging.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/08_debugging.ipynb, exported cell 1 --
import torch
from torch import nn


class KeepFP32(nn.Module):
    """Run `module` in fp32 inside any autocast region: autocast is switched off for it and its floating inputs
    are cast to float32; its output is float32 (the next autocast op casts it down again). The fix for a layer
    whose output exceeds fp16's range (Hugging Face keeps T5's `wo` in fp32 for this: `_keep_in_fp32_modules`)."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, *args):
        device_type = next((a.device.type for a in args if isinstance(a, torch.Tensor)), "cpu")
        with torch.autocast(device_type, enabled=False):
            return self.module(*(a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args))
