"""The formats engine: any binary floating-point format, its constants, and exact rounding.

Encodings of special values: ``"ieee"`` (inf and NaN in the all-ones exponent), ``"fn"`` (no inf; the
all-ones code is NaN: e4m3fn), ``"fnuz"`` (no inf, no -0, the -0 code is NaN, bias one larger),
``"finite"`` (every code a number: MX fp6/fp4) and the scale encoding ``"fnu"`` (powers of two only,
no sign, no zero; the all-ones code is NaN: E8M0). :func:`quantize` uses torch's cast where it does
exactly what was asked, otherwise the bit-exact emulation of :mod:`amp_lessons._emulate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from ._census import CLASS_MEANINGS, CLASSES, Census, choices
from ._emulate import quantize_emulated, torch_cast_infinity, torch_cast_overflow
from ._validate import int_in

__all__ = [
    "CLASS_MEANINGS",
    "CLASSES",
    "Census",
    "ENCODINGS",
    "FORMATS",
    "FloatFormat",
    "OVERFLOW_MODES",
    "ROUNDING_MODES",
    "SCALE_ENCODINGS",
    "SCALE_FORMATS",
    "check_modes",
    "compose",
    "decompose",
    "float32_input",
    "from_bits",
    "get_format",
    "quantize",
    "representable_values",
    "rounding_error",
    "to_bits",
]

ENCODINGS = ("ieee", "fn", "fnuz", "finite")
SCALE_ENCODINGS = ("fnu",)  # formats of scales, not of elements: no zero, no sign (kept apart from ENCODINGS)
ROUNDING_MODES = ("nearest_even", "nearest_away", "toward_zero")
OVERFLOW_MODES = ("inf", "saturate", "nan")

_F32_MAX = float.fromhex("0x1.fffffep127")
# the overflow modes an encoding can express, default first
_ALLOWED_OVERFLOW = {
    "ieee": ("inf", "saturate"),
    "fn": ("saturate", "nan"),
    "fnuz": ("nan", "saturate"),
    "finite": ("saturate",),
    "fnu": ("nan", "saturate"),
}


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format with ``exponent_bits`` (1..8) and ``mantissa_bits`` (0..23); every
    constant is an exact Python float (every value of every allowed format is a float32)."""

    name: str
    exponent_bits: int
    mantissa_bits: int
    encoding: str = "ieee"
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"FloatFormat name must be a non-empty string, got {self.name!r}")
        for field, lo, hi in (("exponent_bits", 1, 8), ("mantissa_bits", 0, 23)):
            int_in(getattr(self, field), field, lo, hi, f"an int from {lo} to {hi} (format {self.name!r})")
        if self.encoding not in ENCODINGS + SCALE_ENCODINGS:
            raise ValueError(
                f"encoding={self.encoding!r} is not allowed for format {self.name!r}: "
                f"use one of {choices(ENCODINGS + SCALE_ENCODINGS)}"
            )
        if self.encoding == "fnu" and self.mantissa_bits != 0:
            raise ValueError(
                f"format {self.name!r}: the 'fnu' scale encoding holds powers of two only, so "
                f"mantissa_bits must be 0, got {self.mantissa_bits}"
            )
        if self.encoding == "ieee" and self.exponent_bits < 2:
            raise ValueError(
                f"format {self.name!r}: an 'ieee' format needs exponent_bits >= 2 (with 1 bit the "
                "all-ones exponent is the only non-zero one and holds inf/NaN, leaving no normal "
                "numbers); use encoding 'fn', 'fnuz' or 'finite' for 1 exponent bit"
            )
        if self.encoding == "fn" and self.exponent_bits == 1 and self.mantissa_bits == 0:
            raise ValueError(
                f"format {self.name!r}: an 'fn' format with exponent_bits=1 needs mantissa_bits >= 1 (e1m0 'fn' "
                "has one non-zero exponent field, and its only code is NaN: it would hold only 0 and NaN, no "
                "positive finite value); use encoding 'fnuz' or 'finite' for e1m0"
            )
        lowest_emin = -126 if self.mantissa_bits else -149
        if self.max > _F32_MAX or self.emin < lowest_emin or self.emin - self.mantissa_bits < -149:
            raise ValueError(
                f"format {self.name!r} (e{self.exponent_bits}m{self.mantissa_bits}, "
                f"{self.encoding}) has values float32 cannot hold exactly (max {self.max:.4g}, "
                f"smallest subnormal 2**{self.emin - self.mantissa_bits}); the engine works in "
                "float32, so the format must fit inside it"
            )

    @property
    def bits(self) -> int:
        return int(self.is_signed) + self.exponent_bits + self.mantissa_bits

    @property
    def is_signed(self) -> bool:
        return self.encoding != "fnu"

    @property
    def has_zero(self) -> bool:
        return self.encoding != "fnu"

    @property
    def bias(self) -> int:
        base = 2 ** (self.exponent_bits - 1) - 1
        return base + 1 if self.encoding == "fnuz" else base

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal ('fnu': of the smallest value)."""
        return -self.bias if self.encoding == "fnu" else 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest binade that holds finite numbers."""
        # the all-ones exponent is inf/NaN in 'ieee', and only NaN in 'fn'/'fnu' without mantissa bits
        full = self.encoding == "ieee" or (self.encoding in ("fn", "fnu") and self.mantissa_bits == 0)
        return 2**self.exponent_bits - 1 - full - self.bias

    @property
    def has_inf(self) -> bool:
        return self.encoding == "ieee"

    @property
    def has_nan(self) -> bool:
        return self.encoding != "finite"

    @property
    def has_negative_zero(self) -> bool:
        return self.encoding not in ("fnuz", "fnu")

    @property
    def default_overflow(self) -> str:
        """inf for 'ieee', max for 'fn' and 'finite', NaN for 'fnuz' and 'fnu' (as torch's casts do)."""
        return _ALLOWED_OVERFLOW[self.encoding][0]

    @property
    def max(self) -> float:
        m = self.mantissa_bits
        top_mantissa = 2 - 2.0 ** (1 - m) if (self.encoding == "fn" and m > 0) else 2 - 2.0**-m
        return math.ldexp(top_mantissa, self.emax)

    @property
    def smallest_normal(self) -> float:
        return math.ldexp(1.0, self.emin)

    @property
    def smallest_subnormal(self) -> float:
        return math.ldexp(1.0, self.emin - self.mantissa_bits)

    @property
    def underflow_threshold(self) -> float:
        """Round to nearest sends magnitudes up to this one (the tie included) to zero."""
        return self.smallest_subnormal / 2

    @property
    def overflow_threshold(self) -> float:
        """Max plus half the gap below it: round to nearest overflows beyond it (the tie: :meth:`overflows`)."""
        return self.max + math.ldexp(1.0, self.emax - self.mantissa_bits - 1)

    def overflows(self, x: torch.Tensor) -> torch.Tensor:
        """Where round to nearest takes ``x`` beyond max: ``|x|`` above :attr:`overflow_threshold`, or on it
        where the tie rounds up."""
        if not isinstance(x, torch.Tensor) or not (x.is_floating_point() or x.dtype in _INT_DTYPES):
            what = f"a {str(x.dtype)[6:]} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
            raise TypeError(f"x must be a real tensor (floating-point or integer, not bool or complex), got {what}")
        a, thr = x.abs(), self.overflow_threshold
        # the tie goes up (out of range) exactly when max's code is odd
        odd = self.encoding != "fn" if self.mantissa_bits > 0 else (self.emax + self.bias) % 2 == 1
        return (a > thr) | (a == thr) if odd else a > thr

    @property
    def eps(self) -> float:
        return math.ldexp(1.0, -self.mantissa_bits)

    @property
    def unit_roundoff(self) -> float:
        return self.eps / 2

    @property
    def decimal_digits(self) -> int:
        """``floor(-log10(eps))``, as ``torch.finfo(...).precision``."""
        return int(math.floor(-math.log10(self.eps)))

    @property
    def resolution(self) -> float:
        """``10**-decimal_digits``, as ``torch.finfo(...).resolution``."""
        return 10.0**-self.decimal_digits

    @property
    def dynamic_range_decades(self) -> float:
        return math.log10(self.max / self.smallest_subnormal)

    @property
    def torch_dtype(self) -> torch.dtype | None:
        return _TORCH_DTYPES.get((self.exponent_bits, self.mantissa_bits, self.encoding))

    def classify(self, x, rounding: str = "nearest_even", overflow: str | None = None) -> torch.Tensor:
        """Where each value of ``x`` lands once rounded (:func:`quantize`'s modes): int64 indices into
        :data:`CLASSES`. "saturated" counts only values beyond the range (rounded in the same precision with
        float32's range) that were clamped to +-max; one that rounds down to max is "normal"."""
        if self.encoding == "fnu":
            raise ValueError(
                f"format {self.name!r} is a scale format (no zero, no sign, powers of two only): classify a tensor "
                f"in an element format instead, one of {choices(FORMATS)}"
            )
        x = float32_input(x)
        overflow = check_modes(self, rounding, overflow)
        q = quantize(x, self, rounding, overflow)
        same_precision = FloatFormat(f"e8m{self.mantissa_bits}", 8, self.mantissa_bits)
        beyond = torch.isinf(x) | (quantize(x, same_precision, rounding, "inf").abs() > self.max)
        mag = q.abs()
        out = torch.full(x.shape, CLASSES.index("normal"), dtype=torch.int64)
        out[(mag < self.smallest_normal) & (mag > 0)] = CLASSES.index("subnormal")
        out[mag == 0] = CLASSES.index("flushed")
        out[x == 0] = CLASSES.index("zero")
        out[beyond & torch.isfinite(q)] = CLASSES.index("saturated")
        out[torch.isinf(q)] = CLASSES.index("inf")
        out[torch.isnan(q)] = CLASSES.index("nan")
        return out

    def overflow_class(self, overflow: str | None = None) -> str:
        """The class every overflow lands in with ``overflow`` (None: the default)."""
        return {"inf": "inf", "saturate": "saturated", "nan": "nan"}[check_modes(self, "nearest_even", overflow)]

    def finite_input_classes(self, overflow: str | None = None) -> tuple[str, ...]:
        """The classes a finite input can land in with round to nearest, in :data:`CLASSES` order."""
        return ("zero", "flushed", "subnormal", "normal", self.overflow_class(overflow))

    def largest_float32(self, cls: str) -> float:
        """The largest float32 magnitude :meth:`classify` (defaults) puts in ``cls`` or a class below it in
        :meth:`finite_input_classes` order (fp16, "normal": 65519.99609375, below the tie 65520)."""
        if cls not in CLASSES:
            raise ValueError(f"unknown class {cls!r}: use one of {choices(CLASSES)}")
        classes = self.finite_input_classes()
        if cls not in classes:
            raise ValueError(
                f"no finite float32 lands in class {cls!r} in {self.name} (round to nearest even, overflow "
                f"{self.default_overflow!r}): use one of {choices(classes)}"
            )
        return _float32_boundaries(self)[classes.index(cls)]

    def census(self, x, rounding: str = "nearest_even", overflow: str | None = None) -> Census:
        """How many values of ``x`` land in each of :data:`CLASSES`, as a :class:`Census`."""
        codes = self.classify(x, rounding, overflow)
        counts = torch.bincount(codes.reshape(-1), minlength=len(CLASSES)).tolist()
        return Census(self.name, rounding, check_modes(self, rounding, overflow), tuple(int(c) for c in counts))

    def summary(self) -> dict:
        return {
            "format": self.name,
            "bits": self.bits,
            "exponent bits": self.exponent_bits,
            "mantissa bits": self.mantissa_bits,
            "bias": self.bias,
            "inf": self.has_inf,
            "NaN": self.has_nan,
            "max": self.max,
            "smallest normal": self.smallest_normal,
            "smallest subnormal": self.smallest_subnormal,
            "eps": self.eps,
            "decimal digits": self.decimal_digits,
        }

    def __str__(self) -> str:
        return (
            f"{self.name}: e{self.exponent_bits}m{self.mantissa_bits} ({self.encoding}), "
            f"max {self.max:.6g}, eps {self.eps:.3g}, smallest subnormal {self.smallest_subnormal:.3g}"
        )


def _boundary(f: FloatFormat, near: float, below: tuple[str, ...]) -> float:
    """The largest positive float32 classed in ``below``, near ``near`` (checked on it and its neighbour)."""
    t = torch.tensor([near], dtype=torch.float64).float()  # the float32 nearest, then at most ``near``
    x = t if float(t[0]) <= near else torch.nextafter(t, torch.zeros(1))
    if CLASSES[int(f.classify(x)[0])] not in below:  # the tie rounds away from the classes below
        x = torch.nextafter(x, torch.zeros(1))
    pair = torch.cat([x, torch.nextafter(x, torch.full((1,), math.inf))])
    got = [CLASSES[c] for c in f.classify(pair).tolist()]
    if not (got[0] in below and got[1] not in below):
        raise AssertionError(f"{f.name}: the classes around {float(x[0])!r} are {got}, not a boundary of {below}")
    return float(x[0])


@lru_cache(maxsize=None)
def _float32_boundaries(f: FloatFormat) -> tuple[float, ...]:
    near = (0.0, f.underflow_threshold, f.smallest_normal - f.underflow_threshold, f.overflow_threshold)
    classes = f.finite_input_classes()
    return (*(_boundary(f, v, classes[: i + 1]) for i, v in enumerate(near)), math.inf)


_INT_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

_TORCH_DTYPES = {
    (8, 23, "ieee"): torch.float32,
    (5, 10, "ieee"): torch.float16,
    (8, 7, "ieee"): torch.bfloat16,
    (4, 3, "fn"): torch.float8_e4m3fn,
    (5, 2, "ieee"): torch.float8_e5m2,
    (4, 3, "fnuz"): torch.float8_e4m3fnuz,
    (5, 2, "fnuz"): torch.float8_e5m2fnuz,
    (8, 0, "fnu"): torch.float8_e8m0fnu,
}

FORMATS: dict[str, FloatFormat] = {
    f.name: f
    for f in (
        FloatFormat("fp32", 8, 23, "ieee", "IEEE 754 single precision (torch.float32)"),
        FloatFormat("tf32", 8, 10, "ieee", "NVIDIA TensorFloat-32: a tensor-core math mode, not a dtype"),
        FloatFormat("fp16", 5, 10, "ieee", "IEEE 754 half precision (torch.float16)"),
        FloatFormat("bf16", 8, 7, "ieee", "bfloat16 (torch.bfloat16): fp32's range, 8 bits of precision"),
        FloatFormat("fp8_e4m3", 4, 3, "fn", "OCP fp8 E4M3 (torch.float8_e4m3fn): no inf, max 448"),
        FloatFormat("fp8_e5m2", 5, 2, "ieee", "OCP fp8 E5M2 (torch.float8_e5m2): IEEE-like"),
        FloatFormat("fp8_e4m3fnuz", 4, 3, "fnuz", "fp8 E4M3 FNUZ (torch.float8_e4m3fnuz), AMD/Graphcore"),
        FloatFormat("fp8_e5m2fnuz", 5, 2, "fnuz", "fp8 E5M2 FNUZ (torch.float8_e5m2fnuz), AMD/Graphcore"),
        FloatFormat("fp6_e3m2", 3, 2, "finite", "OCP MX fp6 E3M2: no inf, no NaN"),
        FloatFormat("fp6_e2m3", 2, 3, "finite", "OCP MX fp6 E2M3: no inf, no NaN"),
        FloatFormat("fp4_e2m1", 2, 1, "finite", "OCP MX fp4 E2M1: no inf, no NaN, values up to 6"),
    )
}

# scales of blocks, not elements: kept out of FORMATS (the formats lessons list, plot and offer as answers)
_E8M0 = "OCP MX block scale E8M0 (torch.float8_e8m0fnu): 2**-127..2**127, no zero, no sign, one NaN"
SCALE_FORMATS: dict[str, FloatFormat] = {"e8m0": FloatFormat("e8m0", 8, 0, "fnu", _E8M0)}


def get_format(fmt: str | FloatFormat, *, what: str = "fmt") -> FloatFormat:
    """A :class:`FloatFormat` from its name (or passed through); ``what`` names the argument in errors."""
    if not isinstance(what, str):
        raise TypeError(f"what must be a str (the argument's name that errors give), got {what!r}")
    if isinstance(fmt, FloatFormat):
        return fmt
    if isinstance(fmt, str) and (fmt in FORMATS or fmt in SCALE_FORMATS):
        return FORMATS.get(fmt) or SCALE_FORMATS[fmt]
    raise ValueError(
        f"unknown format {what}={fmt!r}: use a FloatFormat or one of {choices({**FORMATS, **SCALE_FORMATS})}"
    )


def float32_input(x, what="x") -> torch.Tensor:
    """``x`` as float32: a floating tensor of at most 32 bits (float64 is refused: narrowing it rounds)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{what} must be a floating-point tensor (float32, or a narrower float), got {x.dtype}")
    if x.dtype == torch.float64:
        raise TypeError(
            f"{what} is float64; the engine rounds float32 inputs: pass {what}.float() "
            "(float64 -> float32 is itself a rounding, so make it explicit)"
        )
    return x.float()


def check_modes(f: FloatFormat, rounding: str, overflow: str | None = None) -> str:
    """Check the modes for ``f`` and return the overflow mode to use (``f``'s default for None)."""
    if rounding not in ROUNDING_MODES:
        raise ValueError(f"unknown rounding mode {rounding!r}: use one of {choices(ROUNDING_MODES)}")
    if overflow is None:
        return f.default_overflow
    allowed = _ALLOWED_OVERFLOW[f.encoding]
    if overflow not in allowed:
        raise ValueError(
            f"overflow={overflow!r} is not possible for {f.name} ({f.encoding} encoding): use one of {choices(allowed)}"
        )
    return overflow


def _native_dtype(f: FloatFormat, rounding: str, overflow: str) -> torch.dtype | None:
    """torch's dtype if ``x.to(dtype)`` does exactly what was asked, else None (e8m0's cast rounds ties up)."""
    dtype = f.torch_dtype
    if dtype is None or rounding != "nearest_even" or f.encoding == "fnu":
        return None
    if dtype == torch.float32:
        return dtype if overflow == "inf" else None
    return dtype if torch_cast_overflow(dtype) == overflow == torch_cast_infinity(dtype) else None


def quantize(
    x: torch.Tensor,
    fmt: str | FloatFormat,
    rounding: str = "nearest_even",
    overflow: str | None = None,
    *,
    emulate: bool = False,
) -> torch.Tensor:
    """Round float32 ``x`` to the nearest value of ``fmt``; float32 out, same shape.

    ``rounding``: ``"nearest_even"`` (torch's casts), ``"nearest_away"`` (NVIDIA's ``cvt.rna.tf32.f32``) or
    ``"toward_zero"`` (never overflows). ``overflow``: ``"inf"``, ``"saturate"`` (+-max) or ``"nan"``; None is
    the format's default. ``emulate=True`` always uses the bit-level emulation. NaN stays NaN, zeros keep their
    sign (not in "fnuz"), subnormals are kept.
    """
    f = get_format(fmt)
    x = float32_input(x)
    overflow = check_modes(f, rounding, overflow)
    if not isinstance(emulate, bool):
        raise TypeError(f"emulate must be True or False, got {emulate!r}")
    if not emulate:
        dtype = _native_dtype(f, rounding, overflow)
        if dtype is not None:
            return x.clone() if dtype == torch.float32 else x.to(dtype).float()
    return quantize_emulated(x, f, rounding, overflow)


def rounding_error(x: torch.Tensor, fmt: str | FloatFormat, rounding: str = "nearest_even") -> torch.Tensor:
    """Relative rounding error ``|quantize(x) - x| / |x|`` (0 where x is 0; inf where x overflows)."""
    x = float32_input(x)
    q = quantize(x, fmt, rounding)
    err = (q.double() - x.double()).abs() / x.double().abs()
    return torch.where(x == 0, torch.zeros_like(err), err)


def decompose(x: torch.Tensor, fmt: str | FloatFormat, rounding: str = "nearest_even"):
    """The stored ``(sign, exponent, mantissa)`` fields (int64) of ``x`` rounded to ``fmt``."""
    f = get_format(fmt)
    code = to_bits(x, f, rounding)
    m, e = f.mantissa_bits, f.exponent_bits
    return (code >> (e + m)) & 1, (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1)


def to_bits(x: torch.Tensor, fmt: str | FloatFormat, rounding: str = "nearest_even") -> torch.Tensor:
    """The format's integer code (``bits`` wide, as int64) of each value of ``x`` after rounding."""
    f = get_format(fmt)
    q = quantize(x, f, rounding).double()
    m, e = f.mantissa_bits, f.exponent_bits
    sign = torch.signbit(q).long()
    mag = q.abs()
    nan = torch.isnan(q)
    if nan.any() and not f.has_nan:
        raise ValueError(f"{f.name} has no NaN code ({f.encoding} encoding); x contains NaN")
    sub = mag < f.smallest_normal
    _, exp2 = torch.frexp(torch.where(sub | ~torch.isfinite(mag), torch.ones_like(mag), mag))
    e_unb = exp2.long() - 1
    exp_field = torch.where(sub, torch.zeros_like(e_unb), e_unb + f.bias)
    frac = torch.where(sub, mag / f.smallest_subnormal, (torch.ldexp(mag, -e_unb.double()) - 1.0) * 2.0**m)
    mant_field = torch.where(torch.isfinite(frac), frac, torch.zeros_like(frac)).round().long()
    code = (sign << (e + m)) | (exp_field << m) | mant_field
    all_ones_exp = ((1 << e) - 1) << m
    if f.has_inf:
        code = torch.where(torch.isinf(mag), (sign << (e + m)) | all_ones_exp, code)
    if f.has_nan:
        nan_code = {"ieee": all_ones_exp | (1 << (m - 1) if m > 0 else 0), "fnuz": 1 << (e + m)}
        nan_code = nan_code.get(f.encoding, (1 << (e + m)) - 1)  # 'fn', 'fnu': all ones
        code = torch.where(nan, torch.full_like(code, nan_code), code)
    return code


def from_bits(code, fmt: str | FloatFormat) -> torch.Tensor:
    """The float32 value of each integer code (int, list or integer tensor) of ``fmt``."""
    f = get_format(fmt)
    code = _int_field(code, "code", (1 << f.bits) - 1, f)
    m, e = f.mantissa_bits, f.exponent_bits
    return compose((code >> (e + m)) & 1, (code >> m) & ((1 << e) - 1), code & ((1 << m) - 1), f)


def _int_field(v, what: str, hi: int, f: FloatFormat) -> torch.Tensor:
    """``v`` (int, list or integer tensor) as int64 in ``0 .. hi``; floats, bools and others refused."""
    allowed = f"an int in 0..{hi} (or a list or an integer tensor of them) for {f.name}"
    if isinstance(v, int) and not isinstance(v, bool) and not 0 <= v <= hi:
        raise ValueError(f"{what}={v} is out of range: {what} must be {allowed}")
    if isinstance(v, torch.Tensor):
        t = v
    elif isinstance(v, (list, tuple)) and len(v) == 0:
        t = torch.empty(0, dtype=torch.int64)
    else:
        try:
            t = torch.as_tensor(v)
        except (RuntimeError, TypeError, ValueError, OverflowError):
            raise TypeError(f"{what} must be {allowed}, got {v!r} ({type(v).__name__})") from None
    if t.dtype == torch.bool or t.is_floating_point() or t.is_complex():
        shown = v if not isinstance(v, torch.Tensor) or v.numel() <= 4 else f"a {str(t.dtype)[6:]} tensor"
        raise TypeError(f"{what} must be {allowed}, got {shown!r} ({str(t.dtype)[6:]}): bit fields are whole numbers")
    t = t.long()
    out = (t < 0) | (t > hi)
    if out.any():
        raise ValueError(f"{what}={t[out][0].item()} is out of range: {what} must be {allowed}")
    return t


def compose(sign, exponent, mantissa, fmt: str | FloatFormat) -> torch.Tensor:
    """The float32 value of the stored bit fields (ints, lists or integer tensors; they broadcast)."""
    f = get_format(fmt)
    m, e = f.mantissa_bits, f.exponent_bits
    s = _int_field(sign, "sign", int(f.is_signed), f)
    ex = _int_field(exponent, "exponent", (1 << e) - 1, f)
    mt = _int_field(mantissa, "mantissa", (1 << m) - 1, f)
    sub = (ex == 0) & f.has_zero  # 'fnu' has no subnormals: exponent field 0 is 2**emin
    frac = mt.double() / 2.0**m
    mag = torch.where(
        sub, torch.ldexp(frac, torch.full_like(frac, float(f.emin))), torch.ldexp(1.0 + frac, (ex - f.bias).double())
    )
    top = ex == (1 << e) - 1
    if f.encoding == "ieee":
        mag = torch.where(top & (mt == 0), math.inf, mag)
        mag = torch.where(top & (mt != 0), math.nan, mag)
    elif f.encoding in ("fn", "fnu"):
        mag = torch.where(top & (mt == (1 << m) - 1), math.nan, mag)
    value = torch.where(s == 1, -mag, mag)
    if f.encoding == "fnuz":
        value = torch.where((s == 1) & (ex == 0) & (mt == 0), math.nan, value)
    return value.float()


def representable_values(fmt: str | FloatFormat, positive_only: bool = True) -> torch.Tensor:
    """Every finite value of a format of at most 16 bits, sorted (float32)."""
    f = get_format(fmt)
    if f.bits > 16:
        raise ValueError(f"{f.name} has {f.bits} bits; listing its values is only offered up to 16 bits")
    v = from_bits(torch.arange(1 << f.bits), f)
    v = v[torch.isfinite(v)]
    if not isinstance(positive_only, bool):
        raise TypeError(f"positive_only must be True or False, got {positive_only!r}")
    if positive_only:
        v = v[v >= 0]
    return torch.unique(v)
