"""Key code of notebooks/10_microscaling.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/10_microscaling.ipynb, exported cell 1 --
import torch

# The element formats of OCP MX v1.0: mantissa bits, the smallest normal exponent, the largest exponent emax_elem
# and the largest magnitude. In an MX block none of them overflows to infinity: values beyond the max saturate.
MX_ELEMENTS = {
    "fp8_e4m3": (3, -6, 8, 448.0),
    "fp8_e5m2": (2, -14, 15, 57344.0),
    "fp6_e2m3": (3, 0, 2, 7.5),
    "fp6_e3m2": (2, -2, 4, 28.0),
    "fp4_e2m1": (1, 0, 2, 6.0),
}


def round_to_element(v, element_format="fp8_e4m3"):
    """v (float32) rounded to the nearest value of element_format (ties to even), saturating at its max.
    Returns (the rounded values, a mask of those the saturation changed: rounding alone would exceed max)."""
    mbits, emin, _, max_elem = MX_ELEMENTS[element_format]
    a = v.abs()
    e = (torch.frexp(a)[1] - 1).clamp(min=emin)  # each value's exponent; below emin the spacing stays (subnormals)
    step = torch.ldexp(torch.ones_like(a), (e - mbits).float())  # the spacing of the format at that exponent
    rounded = torch.round(a / step) * step  # a / step is exact (a power of two); torch.round ties to even
    saturated = rounded > max_elem
    return torch.copysign(rounded.clamp(max=max_elem), v), saturated


def floor_shared_exponent(amax, element_format="fp8_e4m3"):
    """OCP MX v1.0, section 6.3: the shared scale of a block is 2**k, k = floor(log2(amax)) - emax_elem,
    stored as the E8M0 code k + 127 (k clamped to -127..127; a block with inf or NaN gets the NaN code 255)."""
    emax = MX_ELEMENTS[element_format][2]
    k = torch.frexp(amax)[1] - 1 - emax  # frexp: amax = m * 2**e with m in [0.5, 1), so floor(log2(amax)) = e - 1
    k = torch.where(amax == 0, -127, k).clamp(-127, 127)
    return torch.where(torch.isfinite(amax), k, 128)


def mx_block_quantize(x, element_format="fp8_e4m3", shared_exponent=floor_shared_exponent, block=32):
    """x (float32, last dimension a multiple of block) in an MX format: each block of `block` values shares the
    scale 2**k; its elements x / 2**k are rounded to element_format with saturation.
    Returns (values = elements * 2**k, elements, k per block, mask of the saturated elements), in x's shape."""
    xb = x.reshape(*x.shape[:-1], x.shape[-1] // block, block)
    k = shared_exponent(xb.abs().amax(-1, keepdim=True), element_format)
    scaled = xb * torch.ldexp(torch.ones_like(xb[..., :1]), (-k).float())  # exact: divides by a power of two
    elements, saturated = round_to_element(scaled, element_format)
    scale = torch.where(k == 128, torch.nan, torch.ldexp(torch.ones_like(scaled[..., :1]), k.float()))
    values = elements * scale
    return values.reshape(x.shape), elements.reshape(x.shape), k.squeeze(-1), saturated.reshape(x.shape)
