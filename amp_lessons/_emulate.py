"""The exact bit-level emulation behind :func:`amp_lessons.formats.quantize`: float32 values rounded to any
format (three rounding modes, three overflow behaviours) by integer arithmetic on their float32 bit patterns, in
blocks that stay in the CPU cache. :func:`quantize_emulated` is the entry; ``f`` is always a
:class:`~amp_lessons.formats.FloatFormat` (its constants say where to round and what overflows), and the rounding and
overflow modes were checked by the caller. A base module: it imports no topic (and not ``formats``, which imports it).
"""

from __future__ import annotations

import math
from functools import lru_cache

import torch

__all__ = ["quantize_emulated", "torch_cast_infinity", "torch_cast_overflow"]

_INF_BITS = 0x7F800000
_NAN_BITS = 0x7FC00000
_SIGN_BITS = -0x80000000  # 0x80000000 as a signed int32
_ABS_MASK = 0x7FFFFFFF

_CHUNK = 1 << 17  # elements per block: the emulation's temporaries stay in the CPU cache


def _round_bits_(a: torch.Tensor, shift: int, rounding: str) -> torch.Tensor:
    """Round non-negative float32 bit patterns ``a`` (int32) to a multiple of ``2**shift``.

    Returns a new tensor. Carries out of the mantissa move into the exponent, which is exactly
    what rounding up into the next binade must do."""
    keep = ~((1 << shift) - 1)
    if shift == 0:
        return a.clone()
    if rounding == "toward_zero":
        return a & keep
    half = 1 << (shift - 1)
    if rounding == "nearest_away":
        return (a + half).bitwise_and_(keep)
    # nearest_even: add half - 1, plus 1 more when the kept part is odd
    r = (a >> shift).bitwise_and_(1)
    return r.add_(a).add_(half - 1).bitwise_and_(keep)


def _round_subnormal_(mag: torch.Tensor, f, rounding: str) -> torch.Tensor:
    """Round magnitudes below the smallest normal to multiples of the smallest subnormal.

    ``q = mag * 2**(m - emin)`` is exact (a power-of-two scaling up) and below ``2**m <= 2**23``
    for the magnitudes this is used for, so the integer rounding of q is exact in float32:
    ``(q + 2**23) - 2**23`` is round-half-even by the FPU itself. Returns float32 bit patterns."""
    q = mag * math.ldexp(1.0, -f.emin)
    q.mul_(math.ldexp(1.0, f.mantissa_bits))
    if rounding == "nearest_even":
        q.add_(8388608.0).sub_(8388608.0)
    elif rounding == "nearest_away":
        t = torch.trunc(q)
        q = t.add_((q - t).ge_(0.5))
    else:
        q.trunc_()
    return q.mul_(math.ldexp(1.0, f.emin - f.mantissa_bits)).view(torch.int32)


def _emulate_scale_block(x: torch.Tensor, out: torch.Tensor, f, rounding: str, overflow: str):
    """The 'fnu' encoding: round positive values to a power of two ``2**emin .. max``.

    Above 2**-126 the float32 exponent field is the power of two and rounding the bit pattern to a
    multiple of 2**23 rounds the value (ties: to an even exponent field, or up). Below, float32 is
    subnormal, and the two candidates 2**-127 and 2**-126 are compared by value. There is no zero:
    anything below the smallest value (toward_zero included) becomes the smallest value. Zero,
    negatives (no sign bit) and NaN give NaN, as in ml_dtypes."""
    bits = x.view(torch.int32)
    a = bits & _ABS_MASK
    r = _round_bits_(a, 23, rounding)
    low, high = _f32_bits(f.smallest_normal), _f32_bits(2.0 * f.smallest_normal)
    # values below 2**(emin+1) (float32 subnormals when emin is -127): the two candidates, by value
    sub = a < high
    if sub.any():
        v = a.view(torch.float32)
        mid = 1.5 * f.smallest_normal  # exact: 3 * 2**(emin-1) is a float32
        up = {"nearest_even": v > mid, "nearest_away": v >= mid, "toward_zero": torch.zeros_like(sub)}[rounding]
        r = torch.where(sub, torch.where(up, high, low), r)
    r.clamp_(min=low)  # no zero: underflow gives the smallest value
    max_bits = _f32_bits(f.max)
    over = r > max_bits
    target = {"saturate": max_bits, "nan": _NAN_BITS}[overflow]
    if rounding == "toward_zero" and target != max_bits:
        r.masked_fill_(over & (a == _INF_BITS), target)
        r.masked_fill_(over & (a < _INF_BITS), max_bits)
    else:
        r.masked_fill_(over, target)
    r.masked_fill_((bits < 0) | (a == 0) | (a > _INF_BITS), _NAN_BITS)  # negatives, zeros, NaN: NaN
    out.view(torch.int32).copy_(r)


def _emulate_block(x: torch.Tensor, out: torch.Tensor, f, rounding: str, overflow: str):
    if f.encoding == "fnu":
        _emulate_scale_block(x, out, f, rounding, overflow)
        return
    bits = x.view(torch.int32)
    a = bits & _ABS_MASK
    r = _round_bits_(a, 23 - f.mantissa_bits, rounding)
    min_normal_bits = _f32_bits(f.smallest_normal)
    if f.emin - f.mantissa_bits > -149:  # the format has subnormals float32 rounding can miss
        small = a < min_normal_bits
        r = torch.where(small, _round_subnormal_(a.view(torch.float32), f, rounding), r)
    # overflow: a rounded magnitude above max (inf inputs included)
    max_bits = _f32_bits(f.max)
    over = r > max_bits
    target = {"inf": _INF_BITS, "saturate": max_bits, "nan": _NAN_BITS}[overflow]
    if rounding == "toward_zero" and target != max_bits:
        # IEEE 754: rounding toward zero never turns a finite value into inf; it gives max
        r.masked_fill_(over & (a == _INF_BITS), target)
        r.masked_fill_(over & (a < _INF_BITS), max_bits)
    else:
        r.masked_fill_(over, target)
    sign = bits & _SIGN_BITS
    if not f.has_negative_zero:  # fnuz: zero is unsigned
        sign.masked_fill_(r == 0, 0)
    r.bitwise_or_(sign)
    r.masked_fill_(a > _INF_BITS, _NAN_BITS)  # NaN in, NaN out
    out.view(torch.int32).copy_(r)


def quantize_emulated(x: torch.Tensor, f, rounding: str, overflow: str) -> torch.Tensor:
    """``x`` (float32) rounded to format ``f`` bit by bit, block by block: a new float32 tensor of ``x``'s shape."""
    flat = x.contiguous().view(-1)
    out = torch.empty_like(flat)
    for start in range(0, flat.numel(), _CHUNK):
        _emulate_block(flat[start : start + _CHUNK], out[start : start + _CHUNK], f, rounding, overflow)
    return out.view(x.shape)


@lru_cache(maxsize=None)
def _f32_bits(value: float) -> int:
    return int(torch.tensor(value, dtype=torch.float32).view(torch.int32))


@lru_cache(maxsize=None)
def torch_cast_overflow(dtype: torch.dtype) -> str:
    """What the installed torch's cast does with an overflowing finite value (it changed across
    versions for float8_e4m3fn: NaN in older torch, saturation in newer)."""
    big = torch.tensor([float.fromhex("0x1.fffffep127"), -float.fromhex("0x1.fffffep127")]).to(dtype).float()
    if torch.isinf(big).all():
        return "inf"
    if torch.isnan(big).all():
        return "nan"
    return "saturate"


@lru_cache(maxsize=None)
def torch_cast_infinity(dtype: torch.dtype) -> str:
    """What the installed torch's cast does with +-inf."""
    out = torch.tensor([math.inf, -math.inf]).to(dtype).float()
    if torch.isinf(out).all():
        return "inf"
    if torch.isnan(out).all():
        return "nan"
    return "saturate"
