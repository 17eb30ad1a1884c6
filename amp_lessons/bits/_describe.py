"""The facts behind a bit-layout picture: stored value, fields, formula, error and class, as a :class:`BitInfo`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .. import _validate
from ..formats import CLASSES, FloatFormat, check_modes, from_bits, get_format, quantize, to_bits

__all__ = ["BitInfo", "describe_code", "describe_value"]


@dataclass(frozen=True)
class BitInfo:
    """What one value looks like in one format: ``typed`` (None for a code), ``stored``, ``code`` (None where the
    format cannot encode it), ``kind`` (a class of :data:`amp_lessons.formats.CLASSES`) and ``formula``."""

    fmt: FloatFormat
    typed: float | None
    stored: float
    code: int | None
    kind: str

    @property
    def overflowed(self) -> bool:
        """Whether a typed finite value was beyond the format's range."""
        return self.typed is not None and math.isfinite(self.typed) and self.kind in ("saturated", "inf", "nan")

    @property
    def fields(self) -> tuple[int, int, int] | None:
        """(sign, biased exponent, mantissa), or None without a code."""
        if self.code is None:
            return None
        m, e = self.fmt.mantissa_bits, self.fmt.exponent_bits
        return self.code >> (e + m), (self.code >> m) & ((1 << e) - 1), self.code & ((1 << m) - 1)

    @property
    def formula(self) -> str:
        """How the bits make the stored value: ``"(-1)^0 x 2^(15-15) x 1.0000000000b = 1.0"``."""
        f, stored = self.fmt, self.stored
        if self.code is None:
            return f"NaN: {f.name} has no NaN code ({f.encoding} encoding)"
        s, ex, mt = self.fields
        if math.isnan(stored):
            return {
                "ieee": "exponent all ones, mantissa not zero: NaN",
                "fn": "exponent and mantissa all ones: NaN",
                "fnuz": "sign 1, all other bits 0 (no -0 in fnuz): NaN",
            }[f.encoding]
        if math.isinf(stored):
            return f"exponent all ones, mantissa zero: {'-' if s else '+'}inf"
        m = f.mantissa_bits
        lead, power = ("0", f"2^(1-{f.bias})") if ex == 0 else ("1", f"2^({ex}-{f.bias})")
        significand = f"{lead}.{format(mt, f'0{m}b')}b" if m else f"{lead}b"
        return f"(-1)^{s} x {power} x {significand} = {stored!r}"

    @property
    def bit_string(self) -> str:
        """The bits, fields separated by spaces: ``"0 01111 0000000000"``."""
        if self.code is None:
            return ""
        digits = format(self.code, f"0{self.fmt.bits}b")
        e = self.fmt.exponent_bits
        return " ".join(part for part in (digits[0], digits[1 : 1 + e], digits[1 + e :]) if part)

    @property
    def caption(self) -> str:
        """What was stored (and its class), the formula, the relative error."""
        if self.typed is None:
            lines = [f"bits {self.bit_string}: {self.stored!r} ({self.kind})", self.formula]
        else:
            lines = [
                f"{self.typed!r} is stored as {self.stored!r} ({self.kind})",
                self.formula,
                f"relative rounding error {_fmt_err(self.rel_error)}",
            ]
        return "\n".join(lines)

    @property
    def abs_error(self) -> float:
        """``|stored - typed|`` (0 when equal, NaN when undefined)."""
        t, s = self.typed, self.stored
        if t is None or math.isnan(t) or math.isnan(s):
            return math.nan
        return 0.0 if s == t else abs(s - t)

    @property
    def rel_error(self) -> float:
        """``|stored - typed| / |typed|`` (0 when equal, NaN when undefined)."""
        err = self.abs_error
        if err == 0.0 or math.isnan(err):
            return err
        return err / abs(self.typed) if self.typed != 0 else math.inf


def describe_value(value, fmt, rounding: str = "nearest_even") -> BitInfo:
    """Round ``value`` (made float32 first) to ``fmt`` and describe it; never raises for inf, NaN or overflow."""
    f = get_format(fmt)
    v = _validate.real(value, "value")
    check_modes(f, rounding)
    x = torch.tensor([v], dtype=torch.float32)
    stored = float(quantize(x, f, rounding)[0])
    code = None if math.isnan(stored) and not f.has_nan else int(to_bits(x, f, rounding)[0])
    kind = CLASSES[int(f.classify(x, rounding)[0])]
    if kind == "zero" and v != 0:  # float32 itself rounded it to zero: its first rounding flushed it
        kind = "flushed"
    return BitInfo(f, v, stored, code, kind)


def describe_code(code, fmt) -> BitInfo:
    """Describe the value of the bit pattern ``code`` of ``fmt``."""
    f = get_format(fmt)
    _validate.integer(code, "code")
    value = from_bits(torch.tensor([int(code)]), f)  # raises ValueError out of range
    kind = CLASSES[int(f.classify(value)[0])]  # a value of the format: zero, subnormal, normal, inf or nan
    return BitInfo(f, None, float(value[0]), int(code), kind)


def _fmt_err(err: float) -> str:
    if math.isnan(err) or err == 0:
        return "n/a" if err != 0 else "0 (exact)"
    return f"{err:.4g}" if 1e-3 <= err < 1e4 else f"{err:.3e}"
