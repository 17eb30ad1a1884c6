"""The exact bit-level emulation behind :func:`amp_lessons.formats.quantize`: float32 values rounded to a
:class:`~amp_lessons.formats.FloatFormat` ``f`` by integer arithmetic on their bit patterns, in cache-sized blocks
(:func:`quantize_emulated`; modes checked by the caller)."""

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
    """Round non-negative float32 bit patterns ``a`` (int32) to a multiple of ``2**shift`` (a new tensor; a carry
    into the exponent is the next binade)."""
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
    """Round magnitudes below the smallest normal to multiples of the smallest subnormal, as float32 bit patterns:
    ``q = mag * 2**(m - emin)`` is exact and below 2**23, so ``(q + 2**23) - 2**23`` rounds half to even."""
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


def _overflow_(r: torch.Tensor, a: torch.Tensor, f, rounding: str, overflow: str) -> None:
    """Rounded magnitudes ``r`` above max (inf inputs included) become the ``overflow`` target, in place; IEEE 754:
    rounding toward zero never turns a finite value into inf, it gives max."""
    max_bits = _f32_bits(f.max)
    over = r > max_bits
    target = {"inf": _INF_BITS, "saturate": max_bits, "nan": _NAN_BITS}[overflow]
    if rounding == "toward_zero" and target != max_bits:
        r.masked_fill_(over & (a == _INF_BITS), target)
        r.masked_fill_(over & (a < _INF_BITS), max_bits)
    else:
        r.masked_fill_(over, target)


def _emulate_scale_block(x: torch.Tensor, out: torch.Tensor, f, rounding: str, overflow: str):
    """The 'fnu' encoding: round positive values to a power of two ``2**emin .. max`` (below float32's normals the
    two candidates are compared by value); no zero (underflow gives the smallest value); zero, negatives and NaN
    give NaN, as in ml_dtypes."""
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
    _overflow_(r, a, f, rounding, overflow)
    r.masked_fill_((bits < 0) | (a == 0) | (a > _INF_BITS), _NAN_BITS)  # negatives, zeros, NaN: NaN
    out.view(torch.int32).copy_(r)


def _emulate_block(x: torch.Tensor, out: torch.Tensor, f, rounding: str, overflow: str):
    bits = x.view(torch.int32)
    a = bits & _ABS_MASK
    r = _round_bits_(a, 23 - f.mantissa_bits, rounding)
    min_normal_bits = _f32_bits(f.smallest_normal)
    if f.emin - f.mantissa_bits > -149:  # the format has subnormals float32 rounding can miss
        small = a < min_normal_bits
        r = torch.where(small, _round_subnormal_(a.view(torch.float32), f, rounding), r)
    _overflow_(r, a, f, rounding, overflow)
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
    block = _emulate_scale_block if f.encoding == "fnu" else _emulate_block
    for start in range(0, flat.numel(), _CHUNK):
        block(flat[start : start + _CHUNK], out[start : start + _CHUNK], f, rounding, overflow)
    return out.view(x.shape)


@lru_cache(maxsize=None)
def _f32_bits(value: float) -> int:
    return int(torch.tensor(value, dtype=torch.float32).view(torch.int32))


@lru_cache(maxsize=None)
def torch_cast_overflow(dtype: torch.dtype) -> str:
    """What the installed torch's cast does with an overflowing finite value (it changed across versions)."""
    return _cast_gives([float.fromhex("0x1.fffffep127"), -float.fromhex("0x1.fffffep127")], dtype)


@lru_cache(maxsize=None)
def torch_cast_infinity(dtype: torch.dtype) -> str:
    """What the installed torch's cast does with +-inf."""
    return _cast_gives([math.inf, -math.inf], dtype)


def _cast_gives(values: list[float], dtype: torch.dtype) -> str:
    out = torch.tensor(values).to(dtype).float()
    return "inf" if torch.isinf(out).all() else "nan" if torch.isnan(out).all() else "saturate"
