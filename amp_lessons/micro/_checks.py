"""Exercise checkers of the microscaling lesson: each returns a CheckResult and never raises on an answer."""

from __future__ import annotations

import math

import torch

from .._exercise import attempt, calls_seen, correct, exercise, finish, hint_list, not_yet, placeholder, your_turn
from ..checks import CheckResult, call_learner
from . import _experiments as experiments
from ._experiments import stochastic_round
from .key_code import MX_ELEMENTS

__all__ = ["check_rceil_shared_exponent", "check_stochastic_round"]

# Block maxima (float32) that tell the mistakes apart: the lesson's 470, an exact fit (448 = max * 2**0 and
# max * 2**10), the float32 number just above max * 2**10 (float32's log2 rounds its log to exactly 10), small and
# large amaxes, and 1.5 * 2**-125, whose scale would lie below e8m0's smallest, 2**-127.
_NEAR = float(torch.nextafter(torch.tensor(448.0 * 2**10), torch.tensor(math.inf)))
_AMAXES = (470.0, 448.0, 449.0, 448.0 * 2**10, _NEAR, 1.0, 0.01, 3.0e5, 2.0**-100, 1.5 * 2.0**-125, 3.0e38)
_FORMATS = ("fp8_e4m3", "fp4_e2m1")


def _exact_rceil(amax: float, max_elem: float, clamp: bool = True) -> int:
    """The smallest k with amax / 2**k <= max_elem, exactly (a block of zeros: the clamp's -127)."""
    if amax == 0:
        return -127 if clamp else -(10**9)
    k = math.ceil(math.log2(amax / max_elem))
    while amax > math.ldexp(max_elem, k):
        k += 1
    while amax <= math.ldexp(max_elem, k - 1):
        k -= 1
    return max(-127, min(127, k)) if clamp else k


def _mistakes(amaxes: list[float], fmt: str) -> dict[str, list[int]]:
    """What some wrong rules give for ``amaxes``, each with the hint it deserves."""
    _, _, emax, max_elem = MX_ELEMENTS[fmt]
    clamp = lambda k: max(-127, min(127, k))  # noqa: E731
    t = torch.tensor(amaxes, dtype=torch.float32)
    f32_log = torch.ceil(torch.log2(t / max_elem)).int().clamp(-127, 127).tolist()
    right = [_exact_rceil(a, max_elem) for a in amaxes]
    other = {} if fmt == "fp8_e4m3" else {
        f"that is the rule for fp8_e4m3's max 448, but these are {fmt} elements (max {max_elem:g}): read the max "
        "from MX_ELEMENTS[element_format]": [_exact_rceil(a, 448.0) for a in amaxes]
    }  # fmt: skip
    return {
        **other,
        "that is the spec's floor rule (the key code's floor_shared_exponent): where amax's mantissa is large, "
        "amax / 2**k lies above the max and saturates; round up instead": [
            clamp(math.frexp(a)[1] - 1 - emax) for a in amaxes
        ],
        "one too large where amax / max_elem is exactly a power of two (amax = max_elem * 2**j fits with k = j): "
        "floor(...) + 1 is not ceil(...)": [clamp(math.floor(math.log2(a / max_elem)) + 1) for a in amaxes],
        "divide by the element format's max (MX_ELEMENTS[element_format][3]), not by 2**emax_elem: the largest "
        "element is max_elem, e.g. 448 = 1.75 * 2**8 for fp8_e4m3": [
            clamp(math.ceil(math.log2(a)) - emax) for a in amaxes
        ],
        "not clamped: e8m0 holds the scales 2**-127 .. 2**127, so k must stay in -127..127": [
            _exact_rceil(a, max_elem, clamp=False) for a in amaxes
        ],
        "that is the stored E8M0 code (k + 127): return the exponent k itself": [k + 127 for k in right],
        "the sign is flipped: the block is divided by 2**k, so a block larger than max_elem needs a positive k": [
            -k for k in right
        ],
        "float32's log2 rounds: just above max_elem * 2**10 the log is 10.0000001, which float32 rounds to exactly "
        "10, so ceil gives 10 and the block saturates; torch.frexp reads the exponent exactly (as the floor rule "
        "does)": f32_log,
    }


def _as_exponents(got, shape) -> tuple[list[int] | None, str]:
    """The learner's k as a list of ints, or (None, what is wrong with it)."""
    if not isinstance(got, torch.Tensor):
        return None, (
            f"it returned {type(got).__name__} {got!r}: return a tensor shaped like amax (one k per block), as the "
            "key code's floor_shared_exponent does"
        )
    if tuple(got.shape) != tuple(shape):
        return None, f"it returned a tensor of shape {tuple(got.shape)}: return one k per block, amax's shape {shape}"
    v = got.detach().double().flatten()
    if not bool(torch.isfinite(v).all()) or not bool((v == v.round()).all()):
        return None, f"k must be whole numbers (a power-of-two scale 2**k), got {got.flatten()[:4].tolist()} ..."
    return [int(k) for k in v.tolist()], ""


_BF16_NEXT = (450.0, 460800.0, 6.03125, 6176.0)  # bf16's next numbers above 448, 448 * 2**10, 6 and 6 * 2**10
_FP16_NEXT = (448.25, 6.00390625, 6148.0)  # fp16's next numbers above 448, 6 and 6 * 2**10
#: (what, dtype, amaxes) after the float32 amaxes: a block of zeros and float32 subnormals (amax / max_elem
#: underflows in float32), then the blocks of a bf16 or fp16 model (arithmetic in those dtypes rounds the quotient
#: onto a power of two, or underflows: fp16's 2**-24 / 448 is 0)
_ROUNDS = (
    ("float32", torch.float32, _AMAXES),
    ("a block of zeros and float32 subnormals", torch.float32, (470.0, 0.0, 1.0e-40, 2.0**-149)),
    ("bfloat16", torch.bfloat16, (448.0, *_BF16_NEXT, 448.0 * 2**10, 6.0, 1.0, 0.01, 2.0**-130, 3.0e38, 0.0)),
    ("float16", torch.float16, (448.0, *_FP16_NEXT, 6.0, 6144.0, 65504.0, 2.0**-24, 2.0**-14, 0.01, 0.0)),
)


def _calls_to_rceil():
    """Calls of the package's own round-up rule inside the block, seen by where its code lives."""
    where = experiments.__file__
    names = {"_rceil_shared_exponent", "mx_scale_exponents", "e8m0_round_up"}
    return calls_seen(lambda code: code.co_filename == where and code.co_name in names)


def _rceil_round(fn, fmt: str, what: str, dtype, amaxes) -> None:
    """End the check unless ``fn`` gives every amax of this round (in ``dtype``) its exact round-up exponent."""
    max_elem = MX_ELEMENTS[fmt][3]
    amax = torch.tensor(amaxes, dtype=torch.float32).to(dtype).reshape(-1, 1)
    values = [float(a) for a in amax.flatten()]
    with _calls_to_rceil() as used:
        got = attempt(fn, amax.clone(), fmt)
    if used:
        finish(
            not_yet(
                "it calls the course's own round-up rule (mx_quantize(..., rule='rceil') or its helpers): write the "
                "rule yourself, from amax and the element format's max"
            )
        )
    placeholder(
        got, "so far it returns nothing: return k, the exponent of each block's scale, as a tensor shaped like amax"
    )
    ks, problem = _as_exponents(got, tuple(amax.shape))
    if ks is None:
        finish(not_yet(problem))
    want = [_exact_rceil(a, max_elem) for a in values]
    if ks == want:
        return
    if dtype == torch.float32 and what == "float32":
        for hint, wrong in _mistakes(values, fmt).items():
            if ks == wrong:
                finish(not_yet(f"for {fmt} elements: {hint}"))
    i = next(i for i, (k, w) in enumerate(zip(ks, want)) if k != w)
    a, k = values[i], ks[i]
    name = str(dtype).replace("torch.", "")
    where = f"for {fmt} elements (max {max_elem:g}) and amax = {a!r} ({name}), it gave k = {k}"
    if a == 0:
        finish(
            hint_list(
                f"{where}: a block of zeros (padding, a dead channel) must get a scale too",
                [
                    "no k is too small for a block of zeros, so the clamp decides: the smallest e8m0 scale, as the key "
                    "code's floor_shared_exponent gives it (torch.where(amax == 0, ...))",
                    "torch.frexp(0) gives the exponent 0 and log2(0) is -inf: neither gets there by itself",
                ],
            )
        )
    if dtype != torch.float32:
        again = call_learner(fn, amax.float(), fmt)[0]
        if _as_exponents(again, tuple(amax.shape))[0] == want:
            finish(
                hint_list(
                    f"right on the same amaxes in float32, but not in {name}, a {name} model's dtype: {where}",
                    [
                        f"your arithmetic runs in amax's dtype, and {name} keeps only "
                        f"{1 - int(math.log2(torch.finfo(dtype).eps))} significant bits"
                        f"{' (fewer below 2**-14, and nothing below 2**-24)' if dtype == torch.float16 else ''}: "
                        "its quotients, products and logs round, onto a power of two or past one",
                        "convert amax to float32 first (exact for bf16 and fp16), or read its exponent with torch.frexp",
                    ],
                )
            )
    if 0 < a < 2.0**-126:
        finish(
            hint_list(
                f"{where}: a float32 subnormal",
                [
                    "amax / max_elem underflows in float32 (to 0 for the smallest subnormals), and log2(0) is -inf: "
                    "divide in float64, or read amax's exponent with torch.frexp (exact for subnormals too)",
                    "any amax this small gets the clamp's smallest k",
                ],
            )
        )
    if not -127 <= k <= 127:
        finish(hint_list(where, ["e8m0 holds only the scales 2**-127 .. 2**127: clamp k"]))
    if a > math.ldexp(max_elem, k):
        finish(
            hint_list(
                where,
                [
                    f"amax / 2**k = {math.ldexp(a, -k):.9g} is above {max_elem:g}, so the block's largest value "
                    "would saturate: round the exponent up",
                    "compute it exactly: float32's log2 and division round (torch.frexp reads an exponent exactly)",
                ],
            )
        )
    finish(
        hint_list(
            where,
            [
                f"too large: k - 1 fits the block too (amax / 2**(k-1) = {math.ldexp(a, 1 - k):.9g} <= {max_elem:g}), "
                "and the smallest k keeps the most precision",
                "where amax / max_elem is exactly a power of two, that power is the answer: floor(...) + 1 is not "
                "ceil(...)",
            ],
        )
    )


@exercise
def check_rceil_shared_exponent(fn) -> CheckResult:
    """Exercise: ``fn(amax, element_format) -> k``, the round-up ("RCEIL") rule: the smallest k for which each
    block's ``amax`` (shape (blocks, 1)) divided by 2**k is at most the element format's max, clamped to -127..127
    (a block of zeros: -127). Tried on float32 amaxes (exact fits, their float32 neighbours, the clamp), zeros and
    subnormals, and bf16 and fp16 amaxes; calling the package's own round-up rule is refused."""
    for fmt in _FORMATS:
        for what, dtype, amaxes in _ROUNDS:
            _rceil_round(fn, fmt, what, dtype, amaxes)
    return correct(
        f"the smallest power of two that fits each block under the element max, for {len(_AMAXES)} float32 amaxes "
        "(exact fits, the float32 number just above one, e8m0's lower clamp), blocks of zeros, float32 subnormals, "
        f"and bf16 and fp16 amaxes, with {' and '.join(_FORMATS)} elements"
    )


def _calls_to_rounding():
    """Calls of the package's stochastic rounding inside the block, seen by where its code lives."""
    where = experiments.__file__
    return calls_seen(
        lambda code: code.co_filename == where and ("stochastic" in code.co_name or "sr_" in code.co_name)
    )


_LOW = 0xFFFF  # the 16 bits of a float32 that bf16 drops
_SIGN = -0x80000000  # bit 31 as an int32


def _sr_cases() -> list[tuple[str, torch.Tensor, torch.Tensor]]:
    """(what, x, noise): random values of both signs, values already in bf16 (unchanged), float32's ends."""
    g = torch.Generator().manual_seed(10)
    x = torch.randn(64, 64, generator=g) * torch.exp2(torch.randint(-30, 30, (64, 64), generator=g).float())
    noise = torch.randint(0, 1 << 16, (64, 64), generator=g, dtype=torch.int32)
    noise[::7, ::5] = 0
    noise[3::7, ::5] = _LOW
    exact = torch.randn(1024, generator=g).bfloat16().float()
    big = float(torch.finfo(torch.bfloat16).max)
    exact[:8] = torch.tensor([0.0, -0.0, 1.0, -1.0, big, -big, 2.0**-133, -(2.0**-126)])
    exact_noise = torch.randint(0, 1 << 16, (1024,), generator=g, dtype=torch.int32)
    exact_noise[::2] = _LOW
    # the ends of float32: subnormals (bf16's spacing there is fixed, 2**-133, not relative to x), values within a
    # bf16 step of float32's max (a carry overflows to inf, as a cast does) and the infinities, each with the noise
    # 0, 2**15 and 2**16 - 1
    tiny = [1.0e-40, -3.0e-39, 2.0**-149, 5.9e-39, 1.1e-38]
    huge = [3.4e38, -3.395e38, float(torch.finfo(torch.float32).max), math.inf, -math.inf]
    ends = torch.tensor(tiny + huge, dtype=torch.float32).repeat(3)
    ends_noise = torch.tensor([0, 1 << 15, _LOW], dtype=torch.int32).repeat_interleave(len(tiny + huge))
    return [("random", x, noise), ("exact", exact, exact_noise), ("ends", ends, ends_noise)]


def _bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


def _from_bits(b: torch.Tensor) -> torch.Tensor:
    return b.contiguous().view(torch.float32)


def _sr_mistakes(x: torch.Tensor, noise: torch.Tensor) -> list[tuple[str, torch.Tensor]]:
    """What some wrong roundings give for ``x`` and ``noise``, each with the hint it deserves."""
    bits = _bits(x)
    trunc = lambda b: _from_bits(b & ~_LOW)  # noqa: E731
    dropped = bits & _LOW
    below = ((bits & 0x7FFFFFFF & ~_LOW) + torch.where(noise < dropped, 1 << 16, 0).int()) | (bits & _SIGN)
    value = (
        "the noise was added to the value x, not to its bit pattern: x + noise moves x by up to 65535, far past "
        "its two bf16 neighbours"
    )
    return [
        (
            "that is round to nearest (the cast to bf16): it never looks at the noise. Stochastic rounding picks one "
            "of the two bf16 neighbours at random, the farther one less often",
            x.bfloat16().float(),
        ),
        (
            "every value was cut toward zero: the noise never moved one up. Add it to the bit pattern before "
            "clearing the 16 low bits",
            trunc(bits),
        ),
        (value, x + noise.float()),
        (value, trunc(_bits(x + noise.float()))),
        (value, (x + noise.float()).bfloat16().float()),
        (
            "the integers were converted to float by value (.float() or .to), not reinterpreted: a float32 bit "
            "pattern is read back with a view",
            ((bits + noise) & ~_LOW).float(),
        ),
        (
            "a value goes up in yours when the noise is below its 16 dropped bits: that is as likely, but not the "
            "rule asked for here (nor the hardware's). Add the noise to the bits and let the carry decide",
            _from_bits(below),
        ),
        (
            "negative inputs (and -0.0) come back positive: the sign bit (bit 31) got lost",
            _from_bits(_bits(stochastic_round(x, noise=noise)) & 0x7FFFFFFF),
        ),
    ]


@exercise
def check_stochastic_round(fn) -> CheckResult:
    """Exercise: ``fn(x, noise)`` rounds each float32 value of ``x`` to bf16 stochastically, on the bits: the
    random integers ``noise`` (int32, each in [0, 2**16)) are added to the bit patterns and the 16 low bits cleared;
    returns float32. Compared bit for bit with :func:`~amp_lessons.micro.stochastic_round` given the same noise;
    calling the package's rounding is refused."""
    placeholder(fn, "write my_stochastic_round(x, noise) and pass the function itself")
    for what, x, noise in _sr_cases():
        want = stochastic_round(x, noise=noise)
        with _calls_to_rounding() as used:
            got, err = call_learner(fn, x.clone(), noise.clone())
            again, err2 = (None, None) if err else call_learner(fn, x.clone(), noise.clone())
        if used:
            return not_yet(
                "it calls the course's micro.stochastic_round (or its helper): write the rounding yourself, on the "
                "bits of x (x.view(torch.int32)), with the noise given"
            )
        if err or err2:
            return not_yet(err or err2)
        if not isinstance(got, torch.Tensor):
            return not_yet(f"it returned {type(got).__name__}: return a float32 tensor of x's shape")
        if got.dtype == torch.float32 and tuple(got.shape) == (*x.shape[:-1], 2 * x.shape[-1]):
            return not_yet(
                "it returned twice x's last dimension: the bit patterns became int64 (torch.where with Python ints, "
                "or an integer constant past int32's range, promotes them), and a view of 64-bit integers as "
                "float32 splits each in two. Keep the bits int32"
            )
        if tuple(got.shape) != tuple(x.shape):
            return not_yet(
                f"it returned a tensor of shape {tuple(got.shape)}: return one value per value of x, shape "
                f"{tuple(x.shape)}"
            )
        if got.dtype == torch.int32:
            return not_yet(
                "it returned int32 bit patterns: read them back as float32 values (a view, not a conversion)"
            )
        if got.dtype not in (torch.float32, torch.bfloat16):
            return not_yet(f"it returned {got.dtype}: return the bf16 values as float32")
        got = got.detach().float()
        if torch.equal(_bits(got), _bits(x)):
            if what == "exact":
                continue
            return your_turn("so far it returns x unchanged: add the noise to the bits and clear the 16 low bits")
        if not isinstance(again, torch.Tensor) or not torch.equal(_bits(again.detach().float()), _bits(got)):
            return not_yet(
                "two calls with the same x and noise gave different results: draw no random numbers yourself, "
                "use the noise given (that makes the rounding repeatable and checkable)"
            )
        gb, wb = _bits(got), _bits(want)
        if torch.equal(gb, wb):
            continue
        if what == "ends":
            i = int((gb != wb).nonzero()[0])
            a, b, w = float(x[i]), float(got[i]), float(want[i])
            hints = [
                "work on the bit patterns alone: below 2**-126 bf16's spacing is fixed (subnormals), not a fraction "
                "of x, and float arithmetic there rounds or underflows",
                "a carry out of the largest finite bf16 value reaches the exponent's all-ones pattern: inf, as the "
                "cast to bf16 overflows; the infinities themselves stay what they are",
            ]
            return hint_list(
                f"at the ends of float32, x = {a!r} with noise = {int(noise[i])} gave {b!r}, not {w!r}",
                hints if abs(a) < 2.0**-126 else hints[::-1],
            )
        if what == "exact":
            i = int((gb != wb).nonzero()[0])
            return not_yet(
                f"a value already in bf16 (its 16 low bits are 0) must come back unchanged, whatever the noise: "
                f"x = {float(x[i])!r} with noise = {int(noise[i])} gave {float(got[i])!r}. Noise below 2**16 "
                "added to 16 zero bits never carries"
            )
        for hint, wrong in _sr_mistakes(x, noise):
            if torch.equal(gb, _bits(wrong.float())):
                return not_yet(hint)
        n = x.numel()
        low = (gb & _LOW) != 0
        if low.any():
            return not_yet(
                f"{int(low.sum())} of {n} results still have some of their 16 low bits set, so they are not bf16 "
                "values: clear those bits (after adding the noise)"
            )
        xb = _bits(x)
        down = xb & ~_LOW  # the neighbour toward zero, and one bf16 step further from zero
        up = ((xb & 0x7FFFFFFF & ~_LOW) + (1 << 16)) | (xb & _SIGN)
        off = (gb != down) & (gb != up)
        neg = x < 0
        if not (gb != wb)[~neg].any():
            return not_yet(
                f"the positive values are right, but {int((gb != wb)[neg].sum())} of the {int(neg.sum())} negative "
                "ones are not. A negative float32 is its absolute value's bit pattern with the sign bit set: it "
                "rounds like its absolute value, away from zero as often, and keeps its sign"
            )
        if off.any():
            i = int(off.flatten().nonzero()[0])
            a, b = float(x.flatten()[i]), float(got.flatten()[i])
            lo, hi = sorted((float(_from_bits(down.flatten()[i])), float(_from_bits(up.flatten()[i]))))
            return not_yet(
                f"{int(off.sum())} of {n} results are neither bf16 neighbour of their x: x = {a!r} gave {b!r}, "
                f"but its neighbours are {lo!r} and {hi!r}: stochastic rounding only ever picks one of the two"
            )
        wrong = int((gb != wb).sum())
        return not_yet(
            f"{wrong} of {n} values went to the other bf16 neighbour than the noise decides: a value moves one "
            "step away from zero exactly when its 16 dropped bits plus the noise reach 2**16"
        )
    return correct(
        "bit for bit the package's stochastic rounding, for 4096 random values of both signs with their noise, "
        "float32's subnormals and largest values and the infinities, and values already in bf16 (zeros of both signs "
        "included) come back unchanged"
    )
