"""Key code of notebooks/07_fp8.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/07_fp8.ipynb, exported cell 1 --
import math

import torch

from amp_lessons.formats import get_format, quantize


def scale_from_amax(amax: float, fmt="fp8_e4m3", margin: int = 0, power_of_two: bool = False) -> float:
    """The scale that puts amax on fmt's largest value (margin binades below it), as a float32 number, or
    rounded down to a power of two (then scaling is exact). 1.0 for amax 0."""
    f = get_format(fmt)
    if amax == 0:
        return 1.0  # nothing to scale, and no division by zero
    s = math.ldexp(f.max, -margin) / amax
    if power_of_two:
        return math.ldexp(1.0, math.floor(math.log2(s)))
    return float(torch.tensor(s, dtype=torch.float32))  # scales are float32 numbers, as _scaled_mm takes them


def amax_scale(x, fmt="fp8_e4m3", *, margin: int = 0, power_of_two: bool = False) -> float:
    """Per-tensor ("current") scaling: the scale from x's own amax, now (1.0 for an empty x: nothing to scale)."""
    amax = float(x.detach().abs().max()) if x.numel() else 0.0
    return scale_from_amax(amax, fmt, margin, power_of_two)


def fake_quantize(x, fmt="fp8_e4m3", scale=1.0) -> torch.Tensor:
    """x * scale cast to fmt and back, divided by scale, as float32. The rounding is the formats engine's,
    bit-exact; e4m3 saturates at +-448 (as recipes' clamped casts do), e5m2 overflows to inf. scale: a positive
    number, or a tensor of them that broadcasts to x (per-block scales)."""
    s = torch.as_tensor(scale, dtype=torch.float32)
    return quantize(x.detach().float() * s, get_format(fmt)) / s

# -- notebooks/07_fp8.ipynb, exported cell 2 --
def block_scales(x: torch.Tensor, fmt="fp8_e4m3", block=(1, 128), power_of_two: bool = False):
    """One scale per block of the matrix x: returns (scales, blocks). blocks is x, zero-padded to whole blocks,
    seen as (row blocks, rows per block, column blocks, columns per block), so block (i, j) is blocks[i, :, j, :];
    scales[i, j] puts that block's amax on fmt's max (1.0 for an all-zero block)."""
    f = get_format(fmt)
    br, bc = block
    rows, cols = x.shape
    xp = torch.nn.functional.pad(x, (0, -cols % bc, 0, -rows % br))  # zeros change no block's amax
    blocks = xp.reshape(xp.shape[0] // br, br, xp.shape[1] // bc, bc)  # one reshape: no loop over blocks
    amax = blocks.abs().amax(dim=(1, 3)).double()  # each block's largest magnitude
    s = f.max / amax
    if power_of_two:
        s = torch.exp2(torch.floor(torch.log2(s)))  # power-of-two scales, as the OCP MX formats store them
    return torch.where(amax == 0, torch.ones_like(s), s).float(), blocks

# -- notebooks/07_fp8.ipynb, exported cell 3 --
def to_fp8(t):
    """Per-tensor current scaling, in eager ops: amax, scale, scaled and clamped cast; returns (t8, inverse scale)."""
    amax = t.abs().amax().float()
    scale = 448.0 / amax.clamp(min=1e-12)
    return (t.float() * scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale.reciprocal()

# -- notebooks/07_fp8.ipynb, exported cell 4 --
class Fp8LinearFn(torch.autograd.Function):
    """y = x @ w.T + b with x and w cast to e4m3 (current per-tensor scales), products summed in fp32 (this
    model's; a GPU's fp8 kernel: section 3); backward casts dy to e5m2 (its own scale) and computes dx = dy8 @ w8,
    dw = dy8.T @ x8 in fp32, reusing the fp8 copies of x and w saved by the forward; db = dy.sum(0) in fp32."""

    @staticmethod
    def forward(ctx, x, weight, bias, fwd_fmt, bwd_fmt):
        x8 = fake_quantize(x, fwd_fmt, amax_scale(x, fwd_fmt))
        w8 = fake_quantize(weight, fwd_fmt, amax_scale(weight, fwd_fmt))
        ctx.save_for_backward(x8, w8)
        ctx.bwd_fmt = bwd_fmt
        ctx.has_bias = bias is not None
        y = x8 @ w8.t()
        return y + bias if bias is not None else y

    @staticmethod
    def backward(ctx, dy):
        x8, w8 = ctx.saved_tensors
        dy = dy.float()
        dy8 = fake_quantize(dy, ctx.bwd_fmt, amax_scale(dy, ctx.bwd_fmt))
        dx = dy8 @ w8
        dw = dy8.t() @ x8
        db = dy.sum(0) if ctx.has_bias else None
        return dx, dw, db, None, None
