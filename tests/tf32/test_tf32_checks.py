"""Tests of amp_lessons.tf32._checks: the checker says what the course's TF32 model is, and what it is not."""

import torch

from amp_lessons import formats, tf32
from amp_lessons.formats import quantize
from tests.test_checks import assert_not_yet, assert_your_turn, solution


def _model(a, b, rounding="nearest_even"):
    return quantize(a, "tf32", rounding) @ quantize(b, "tf32", rounding)


def test_error_ratio_exercise():
    s = solution("02")
    # the law the exercise asks for is the formats engine's eps ratio, for every pair of formats
    for a in formats.FORMATS.values():
        for b in formats.FORMATS.values():
            assert s.predicted_ratio(a, b) == a.eps / b.eps

    # the lesson's own bf16/TF32 ratio, given for every pair, fails on the first pair the lesson never ran; right on
    # every pair but one (a ratio below 1): that pair is named
    def measures(fmt, than):
        d = tf32.error_vs_k([64], [fmt, than])
        return d.rms[fmt.name][0] / d.rms[than.name][0]

    for answer, words in (
        (lambda fmt, than: 8.0, ("fp8_e4m3", "too small")),
        (lambda fmt, than: max(1.0, s.predicted_ratio(fmt, than)), ("e8m13", "too large")),
        (lambda f, t: float("nan"), ("positive",)),
        (lambda f, t: "x", ("number",)),
        (measures, ("error_vs_k",)),  # a prediction may not measure
    ):
        r = tf32.check_error_ratio(answer)
        assert_not_yet(r)
        assert all(w in r.message for w in words), r.message


def test_error_ratio_pairs_are_none_the_lesson_measures_and_their_law_holds():
    from amp_lessons.tf32 import _checks as checks

    measured = checks._measured_ratios()
    for (a, b), ratio in measured.items():
        assert {a, b} != {"bf16", "tf32"}  # the lesson's table shows that one
        law = checks._ratio_format(a).eps / checks._ratio_format(b).eps
        assert abs(ratio / law - 1) < 0.1, (a, b, ratio, law)  # far inside the checker's factor 1.5
    assert min(measured.values()) < 0.01 and max(measured.values()) > 100


def _round_away(x):  # cvt.rna.tf32.f32: ties away from zero
    return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def _round_down(x):
    return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)


def _naive_round(x):  # to nearest even on the bits (a NaN whose payload lies in the dropped bits becomes inf)
    bits = x.view(torch.int32)
    return ((bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF).view(torch.float32)


def _via_frexp(x):  # 11 significant bits of each value: right for normals, not for TF32's subnormals
    m, e = torch.frexp(x)
    return torch.ldexp(torch.round(m * 2**11) / 2**11, e)


def test_the_tf32_checker_names_each_miss_and_never_the_code_and_may_not_call_the_course():
    r = tf32.check_tf32_matmul(_model)
    assert r and "course's TF32 model" in r.message and "bit-exact:" not in r.message
    s = solution("02")
    # the solution's bit rounding agrees with the formats engine on ties of both parities and signs, and on edges
    x = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11, -(1 + 2.0**-11), 1 + 2.0**-11 + 2.0**-20, 0.0])
    assert torch.equal(s.round_to_tf32(x), quantize(x, "tf32", "nearest_even"))
    edges = torch.tensor([0x7F800001, 0x7F801000, 0x7F7FFFFF, 0x00001000], dtype=torch.int32).view(torch.float32)
    got, want = s.round_to_tf32(edges), quantize(edges, "tf32")
    assert torch.isnan(got[:2]).all() and torch.isinf(_naive_round(edges[:1])).all()
    assert torch.isinf(got[2]) and torch.equal(got[2:], want[2:])  # fp32's max rounds up to inf in TF32

    def mm(r):
        return lambda a, b: r(a) @ r(b)

    starter = tf32.check_tf32_matmul(lambda a, b: a @ b)
    assert_your_turn(starter)
    assert "plain fp32 product" in starter.message and "@" not in starter.message
    assert_your_turn(tf32.check_tf32_matmul(lambda a, b: a @ b, lambda x: x))
    for answer, rounding, words in (
        (
            lambda a, b: _model(a, b, "nearest_away"),  # PTX's cvt.rna
            None,
            "'nearest_away'; the H100 measured in this lesson rounds its TF32 inputs to nearest with ties to even",
        ),
        (lambda a, b: quantize(a, "tf32", "nearest_even") @ b, None, "only one input"),
        (lambda a, b: _model(a, b) * 1.001, None, "differs from the course's TF32 model"),
        (mm(_round_away), _round_away, "ties go away from zero"),
        (mm(_round_down), _round_down, "toward zero"),
        (mm(_naive_round), _naive_round, "NaNs into inf"),
        (mm(_via_frexp), _via_frexp, "round_to_tf32"),
        (mm(s.round_to_tf32), lambda x: quantize(x, "tf32"), "calls the course's quantize"),
        (lambda a, b: tf32.emulated_matmul(a, b, "tf32"), s.round_to_tf32, "calls the course's emulated_matmul"),
        (lambda a, b: a @ b, s.round_to_tf32, "round_to_tf32 is right"),
        (mm(s.round_to_tf32), lambda x: x, "returns x as it is"),
    ):
        r = tf32.check_tf32_matmul(answer, rounding)
        assert_not_yet(r)
        assert words in r.message and "@" not in r.message, r.message
    assert tf32.check_tf32_matmul(mm(s.round_to_tf32), s.round_to_tf32)
