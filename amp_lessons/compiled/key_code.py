"""Key code of notebooks/11_compile.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/11_compile.ipynb, exported cell 1 --
import torch
import torch.nn.functional as F


def mlp(x, w_gate, w_up, *, autocast=True):
    """A SwiGLU MLP block with an RMSNorm, as in Llama-style transformers, under bf16 autocast on the CPU."""
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        gate = x @ w_gate
        up = x @ w_up
        y = F.silu(gate) * up
        return F.rms_norm(y, (y.shape[-1],))


def chain(h, g):
    """The block's pointwise chain alone, on bf16 tensors: eagerly, three ops that each write bf16."""
    y = F.silu(g) * h
    return F.rms_norm(y, (y.shape[-1],))

# -- notebooks/11_compile.ipynb, exported cell 2 --
class GraphRecorder:
    """A torch.compile backend for debugging: it keeps every FX graph Dynamo captures (a graph break makes
    several) and runs each unchanged, or hands it on to the backend ``then`` (AOTAutograd's, Inductor's, ...)."""

    def __init__(self, then=None):
        self.graphs = []
        self.then = then

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return gm.forward if self.then is None else self.then(gm, example_inputs)
