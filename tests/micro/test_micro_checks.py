"""Tests of amp_lessons.micro._checks, on lesson 10's exercises: each kind of wrong answer gets "Not yet" with its
own hint (the starter's Your turn, the solution's Correct and a wrong answer that keeps the answer hidden are
tests/test_checker_contract.py's)."""

import torch

from amp_lessons import micro
from amp_lessons.micro import _checks as micro_checks
from amp_lessons.micro.key_code import MX_ELEMENTS, floor_shared_exponent, mx_block_quantize
from tests.test_checks import assert_not_yet, assert_your_turn, solution


def _rule(fn):
    return lambda amax, element_format="fp8_e4m3": fn(amax, MX_ELEMENTS[element_format][3])


def test_rceil_shared_exponent_exercise():
    s = solution("10")
    wrong = {
        _rule(lambda a, m: floor_shared_exponent(a)): "floor rule",
        _rule(lambda a, m: torch.ceil(torch.log2(a / m)).clamp(-127, 127)): "float32's log2 rounds",
        _rule(lambda a, m: torch.ceil(torch.log2(a.double() / m))): "not clamped",
        _rule(lambda a, m: torch.ceil(torch.log2(a.double() / 448)).clamp(-127, 127)): "fp8_e4m3's max 448",
        _rule(lambda a, m: (torch.ceil(torch.log2(a.double())) - 8).clamp(-127, 127)): "not by 2**emax_elem",
        _rule(lambda a, m: (torch.floor(torch.log2(a.double() / m)) + 1).clamp(-127, 127)): "floor(...) + 1",
        _rule(lambda a, m: s.rceil_shared_exponent(a) + 127): "stored E8M0 code",
        _rule(lambda a, m: -s.rceil_shared_exponent(a)): "sign is flipped",
        _rule(lambda a, m: s.rceil_shared_exponent(a) - 1): "would saturate",
        _rule(lambda a, m: s.rceil_shared_exponent(a) + 2): "k - 1 fits the block too",
        _rule(lambda a, m: s.rceil_shared_exponent(a).float() + 0.5): "whole numbers",
        _rule(lambda a, m: s.rceil_shared_exponent(a).flatten()): "shape",
        _rule(lambda a, m: 3): "return a tensor",
        (lambda amax: s.rceil_shared_exponent(amax)): "raised TypeError",
        "x": "expected a function",
    }
    for fn, words in wrong.items():
        r = micro.check_rceil_shared_exponent(fn)
        assert_not_yet(r)
        assert words in r.message, (words, r.message)
    # the solution plugs into the lesson's quantizer: 470 goes up to the scale 2**1 and is stored as 480
    block = torch.zeros(1, 32)
    block[0, 0] = 470.0
    values, _, k, saturated = mx_block_quantize(block, "fp8_e4m3", s.rceil_shared_exponent)
    assert float(values[0, 0]) == 480 and int(k[0, 0]) == 1 and not saturated.any()


def test_the_exercise_amaxes_tell_the_float32_log_apart():
    """The float32 number just above 448 * 2**10 is where float32's log2 loses the answer (it rounds the log to
    exactly 10) while frexp keeps it: the checker's "float32's log2 rounds" hint is about a real mistake."""
    near = torch.tensor([micro_checks._NEAR])
    assert float(torch.log2(near / 448)) == 10.0 and float(near) > 448 * 2**10
    assert micro_checks._exact_rceil(micro_checks._NEAR, 448.0) == 11
    assert int(solution("10").rceil_shared_exponent(near)) == 11


def test_the_stochastic_rounding_probability_the_lesson_shows():
    """1 + 1e-4 in float32 is 1 + 839 * 2**-23: bf16 stochastic rounding goes up with probability 839 / 2**16."""
    x = torch.tensor(1 + 1e-4)
    assert int(x.view(I32)) & 0xFFFF == 839 and solution("10").SR_PROBABILITY == 839 / 2**16


I32 = torch.int32


def _cut(bits):
    return (bits & ~0xFFFF).view(torch.float32)


def test_stochastic_round_exercise():
    s = solution("10")
    assert_your_turn(micro.check_stochastic_round(None))
    # a bf16 result and an answer that rounds x in place are as good
    assert micro.check_stochastic_round(lambda x, noise: s.my_stochastic_round(x, noise).bfloat16())
    assert micro.check_stochastic_round(lambda x, n: x.view(I32).add_(n).bitwise_and_(~0xFFFF).view(torch.float32))
    wrong = {
        (lambda x, n: x.bfloat16().float()): "round to nearest",
        (lambda x, n: _cut(x.view(I32))): "cut toward zero",
        (lambda x, n: x + n): "added to the value x",
        (lambda x, n: _cut((x + n).view(I32))): "added to the value x",
        (lambda x, n: (x.view(I32) + n).view(torch.float32)): "low bits set",  # not masked
        (lambda x, n: _cut(x.abs().view(I32) + n)): "sign bit (bit 31) got lost",
        (lambda x, n: _cut(torch.where(x < 0, x.view(I32) - n, x.view(I32) + n))): "negative ones are not",
        (lambda x, n: (x.view(I32) + n) & ~0xFFFF): "int32 bit patterns",
        (lambda x, n: ((x.view(I32) + n) & ~0xFFFF).float()): "converted to float by value",
        (lambda x, n: _cut(x.view(I32).long() + n)): "became int64",
        (lambda x, n: _cut(x.view(I32) + torch.where(n < (x.view(I32) & 0xFFFF), 1 << 16, 0).int())): "below its 16",
        (lambda x, n: _cut(x.view(I32) + torch.randint_like(n, 0, 1 << 16))): "use the noise given",
        (lambda x, n: _cut(x.view(I32) + n + 1)): "already in bf16",
        (lambda x, n: ((x.view(I32) + n) & -(1 << 17)).view(torch.float32)): "neither bf16 neighbour",
        (lambda x, n: s.my_stochastic_round(x, n).flatten()): "shape",
        (lambda x, n: 0.5): "return a float32 tensor",
        (lambda x: x): "raised TypeError",
        "x": "expected a function",
    }
    for fn, words in wrong.items():
        r = micro.check_stochastic_round(fn)
        assert_not_yet(r)
        assert words in r.message, (words, r.message)


def test_stochastic_round_refuses_the_package_function():
    """An answer that calls the package's rounding, however it gets hold of it, is refused, even where it would
    match bit for bit (the helper that takes the noise)."""
    from amp_lessons.micro import _experiments as experiments

    for fn in (
        lambda x, n: micro.stochastic_round(x),
        lambda x, n: experiments._sr_bf16_bits(x, n),
        lambda x, n: (lambda f=experiments._sr_bf16_bits: f(x, n))(),
    ):
        r = micro.check_stochastic_round(fn)
        assert_not_yet(r)
        assert "yourself" in r.message and "stochastic_round" in r.message, r.message


def test_the_stochastic_round_reference_is_the_package_rounding():
    """The checker's reference with noise given is the package's stochastic_round: the same integers drawn from the
    same seed give the same bits, and the solution agrees with both on values of every sign and size."""
    from amp_lessons.micro import _experiments as experiments

    g = torch.Generator().manual_seed(2)
    x = torch.randn(1000, generator=g) * torch.exp2(torch.randint(-40, 40, (1000,), generator=g).float())
    x[:4] = torch.tensor([0.0, -0.0, 1.0, -(2.0**-130)])
    noise = torch.randint(0, 1 << 16, x.shape, generator=torch.Generator().manual_seed(3), dtype=I32)
    via_package = micro.stochastic_round(x, generator=torch.Generator().manual_seed(3))
    assert torch.equal(experiments._sr_bf16_bits(x, noise).view(I32), via_package.view(I32))
    assert torch.equal(solution("10").my_stochastic_round(x.clone(), noise).view(I32), via_package.view(I32))


def _frexp_rule(amax, element_format="fp8_e4m3", zeros=True, dtype=None):
    """The rule by frexp of amax / max_elem, in ``dtype`` (amax's own if None); ``zeros``: a block of zeros gets -127."""
    a = amax if dtype is None else amax.to(dtype)
    m, e = torch.frexp(a / MX_ELEMENTS[element_format][3])
    k = torch.where(m == 0.5, e - 1, e)
    return (torch.where(amax == 0, -127, k) if zeros else k).clamp(-127, 127)


def _floor_plus_one(amax, element_format="fp8_e4m3"):
    """The floor rule, one up where amax lies above max_elem * 2**k: right in float32, not in fp16 (the product
    underflows for fp16's subnormal amaxes)."""
    _, _, emax, max_elem = MX_ELEMENTS[element_format]
    k = torch.frexp(amax)[1] - 1 - emax
    k = k + (amax > max_elem * torch.exp2(k.to(amax.dtype))).int()
    return torch.where(amax == 0, -127, k).clamp(-127, 127)


def test_rceil_exercise_tries_zeros_subnormals_and_half_precision_amaxes():
    """Answers right on the float32 amaxes of the first round fail where a naive rule breaks: a block of zeros
    (frexp(0) gives the exponent 0), float32 subnormals (amax / max_elem underflows in float32) and the amaxes of a
    bf16 or fp16 model (arithmetic in their own dtype). The hints come as a short list."""
    for answer, words in (
        (lambda a, f="fp8_e4m3": _frexp_rule(a, f, zeros=False), "a block of zeros"),
        (lambda a, f="fp8_e4m3": _frexp_rule(a, f, dtype=torch.float32), "a float32 subnormal"),
        (_floor_plus_one, "right on the same amaxes in float32, but not in float16"),
    ):
        r = micro.check_rceil_shared_exponent(answer)
        assert_not_yet(r)
        assert words in r.message and "\n- " in r.message, (words, r.message)
    assert micro.check_rceil_shared_exponent(lambda a, f="fp8_e4m3": _frexp_rule(a, f, dtype=torch.float64))
    assert micro.check_rceil_shared_exponent(lambda a, f="fp8_e4m3": _floor_plus_one(a.float(), f))


def test_rceil_exercise_refuses_the_package_rule():
    from amp_lessons.micro import _experiments as experiments

    for answer in (
        lambda a, f="fp8_e4m3": experiments.mx_scale_exponents(a.float(), f, "rceil"),
        lambda a, f="fp8_e4m3": experiments._rceil_shared_exponent(a.float(), f),
        lambda a, f="fp8_e4m3": (
            micro.mx_quantize(a.float().expand(-1, 32), f, "rceil").scale_codes.reshape(a.shape) - 127
        ),
    ):
        r = micro.check_rceil_shared_exponent(answer)
        assert_not_yet(r)
        assert "course's own round-up rule" in r.message, r.message


def test_stochastic_round_exercise_tries_the_ends_of_float32():
    """Float arithmetic with a spacing relative to x fails on float32's subnormals; clamping at bf16's max instead of
    overflowing to inf fails near float32's max: both are right on the random values and refused at the ends."""

    def relative_spacing(x, noise):
        down = _cut(x.view(I32))
        step = torch.ldexp(torch.ones_like(x), (torch.frexp(x)[1] - 8).float())
        up = (x.view(I32) & 0xFFFF) + noise >= 1 << 16
        return torch.where(up, down + torch.copysign(step, x), down)

    def saturating(x, noise):
        r = _cut(x.view(I32) + noise)
        big = torch.tensor(torch.finfo(torch.bfloat16).max)
        return torch.where(r.isinf() & x.isfinite(), torch.copysign(big, x), r)

    for answer, words in ((relative_spacing, "below 2**-126"), (saturating, "inf")):
        r = micro.check_stochastic_round(answer)
        assert_not_yet(r)
        assert "at the ends of float32" in r.message and words in r.message.split("\n- ")[1], r.message
