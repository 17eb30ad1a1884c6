"""Tests of amp_lessons.tf32._checks: the checker says what the course's TF32 model is, and what it is not."""

import torch

from amp_lessons import formats, tf32
from amp_lessons.formats import quantize
from tests.test_checks import assert_not_yet, assert_your_turn, solution


def _model(a, b, rounding="nearest_even"):
    return quantize(a, "tf32", rounding) @ quantize(b, "tf32", rounding)


def test_tf32_matmul_checker_names_the_model_not_the_hardware():
    r = tf32.check_tf32_matmul(_model)
    assert r and "course's TF32 model" in r.message and "bit-exact:" not in r.message
    r = tf32.check_tf32_matmul(lambda a, b: _model(a, b, "nearest_away"))  # PTX's cvt.rna: not what the H100 does
    assert not r and "'nearest_away'" in r.message and "ties to even" in r.message and "H100" in r.message
    r = tf32.check_tf32_matmul(lambda a, b: quantize(a, "tf32", "nearest_even") @ b)
    assert not r and "only one input" in r.message


def test_tf32_matmul_checker_hint_is_not_the_answer():
    r = tf32.check_tf32_matmul(lambda a, b: _model(a, b) * 1.001)
    assert not r and "differs from the course's TF32 model" in r.message
    assert "@" not in r.message  # the hint names the steps, not the code


# The exercises as lesson 02 gives them, beyond the contract of tests/test_checker_contract.py: the starter's
# message names no code, the solution passes with the learner's rounding too, and each miss gets its own word.


def test_tf32_matmul_exercise():
    starter = tf32.check_tf32_matmul(lambda a, b: a @ b)
    assert "plain fp32 product" in starter.message and "@" not in starter.message
    assert tf32.check_tf32_matmul(solution("02").tf32_matmul, solution("02").round_to_tf32)


def test_error_ratio_exercise():
    s = solution("02")
    # the law the exercise asks for is the formats engine's eps ratio, for every pair of formats
    for a in formats.FORMATS.values():
        for b in formats.FORMATS.values():
            assert s.predicted_ratio(a, b) == a.eps / b.eps
    assert tf32.check_error_ratio(s.predicted_ratio)
    starter = tf32.check_error_ratio(lambda fmt, than: ...)
    assert_your_turn(starter)
    # the lesson's own bf16/TF32 ratio, given for every pair, fails on the first pair the lesson never ran
    r = tf32.check_error_ratio(lambda fmt, than: 8.0)
    assert_not_yet(r)
    assert "fp8_e4m3" in r.message and "too small" in r.message
    # right on every pair but one (a ratio below 1): that pair is named
    r = tf32.check_error_ratio(lambda fmt, than: max(1.0, s.predicted_ratio(fmt, than)))
    assert_not_yet(r)
    assert "e8m13" in r.message and "too large" in r.message
    for bad, word in (
        (lambda f, t: -1.0, "positive"),
        (lambda f, t: "x", "number"),
        (lambda f, t: float("nan"), "positive"),
    ):
        assert word in tf32.check_error_ratio(bad).message


def test_error_ratio_pairs_are_none_the_lesson_measures_and_their_law_holds():
    from amp_lessons.tf32 import _checks as checks

    measured = checks._measured_ratios()
    for (a, b), ratio in measured.items():
        assert {a, b} != {"bf16", "tf32"}  # the lesson's table shows that one
        law = checks._ratio_format(a).eps / checks._ratio_format(b).eps
        assert abs(ratio / law - 1) < 0.1, (a, b, ratio, law)  # far inside the checker's factor 1.5
    assert min(measured.values()) < 0.01 and max(measured.values()) > 100


def test_error_ratio_may_not_measure():
    def measures(fmt, than):
        d = tf32.error_vs_k([64], [fmt, than])
        return d.rms[fmt.name][0] / d.rms[than.name][0]

    r = tf32.check_error_ratio(measures)
    assert_not_yet(r)
    assert "error_vs_k" in r.message


def _round_away(x):
    return ((x.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


def _round_down(x):
    return (x.view(torch.int32) & ~0x1FFF).view(torch.float32)


def test_the_rounding_the_learner_writes_is_checked_on_ties_and_may_not_call_the_course():
    s = solution("02")
    # the solution's bit rounding agrees with the formats engine on every tie of both parities and signs
    x = torch.tensor([1 + 2.0**-11, 1 + 3 * 2.0**-11, -(1 + 2.0**-11), 1 + 2.0**-11 + 2.0**-20, 0.0])
    assert torch.equal(s.round_to_tf32(x), quantize(x, "tf32", "nearest_even"))
    assert s.round_to_tf32(x).tolist()[:2] == [1.0, 1 + 4 * 2.0**-11]  # ties to the even neighbour

    def mm(r):
        return lambda a, b: r(a) @ r(b)

    starter = tf32.check_tf32_matmul(lambda a, b: a @ b, lambda x: x)
    assert_your_turn(starter)
    away = tf32.check_tf32_matmul(mm(_round_away), _round_away)
    assert_not_yet(away)
    assert "ties go away from zero" in away.message
    down = tf32.check_tf32_matmul(mm(_round_down), _round_down)
    assert_not_yet(down)
    assert "toward zero" in down.message
    calls = tf32.check_tf32_matmul(mm(s.round_to_tf32), lambda x: quantize(x, "tf32"))
    assert_not_yet(calls)
    assert "calls the course's quantize" in calls.message
    package = tf32.check_tf32_matmul(lambda a, b: tf32.emulated_matmul(a, b, "tf32"), s.round_to_tf32)
    assert_not_yet(package)
    assert "calls the course's emulated_matmul" in package.message
    unused = tf32.check_tf32_matmul(lambda a, b: a @ b, s.round_to_tf32)
    assert_not_yet(unused)
    assert "round_to_tf32 is right" in unused.message
    not_written = tf32.check_tf32_matmul(mm(s.round_to_tf32), lambda x: x)
    assert_not_yet(not_written)
    assert "returns x as it is" in not_written.message
    assert tf32.check_tf32_matmul(mm(s.round_to_tf32), s.round_to_tf32)


# The rounding the learner writes is tried at the edges of the range too: subnormals, values that round up to inf,
# inf, and NaNs whose payload lies only in the 13 dropped bits. The naive bit rounding (add, then clear the low bits)
# is right everywhere but there: it turns those NaNs into inf.


def _naive_round(x):
    bits = x.view(torch.int32)
    return ((bits + 0x0FFF + ((bits >> 13) & 1)) & ~0x1FFF).view(torch.float32)


def test_rounding_that_turns_nan_into_inf_is_refused():
    r = tf32.check_tf32_matmul(lambda a, b: _naive_round(a) @ _naive_round(b), _naive_round)
    assert_not_yet(r)
    assert "NaN" in r.message and "inf" in r.message
    s = solution("02")
    x = torch.tensor([0x7F800001, 0x7F801000, 0x7F7FFFFF, 0x00001000], dtype=torch.int32).view(torch.float32)
    assert torch.isinf(_naive_round(x[:1])).all() and torch.isnan(s.round_to_tf32(x[:2])).all()
    want = quantize(x, "tf32")
    got = s.round_to_tf32(x)
    assert torch.isinf(got[2]) and got[2] == want[2] and got[3] == want[3]  # fp32's max rounds up to inf in TF32


def test_rounding_on_floats_fails_on_subnormals():
    def via_frexp(x):  # keep 11 significant bits of each value: right for normals, not for TF32's subnormals
        m, e = torch.frexp(x)
        return torch.ldexp(torch.round(m * 2**11) / 2**11, e)

    r = tf32.check_tf32_matmul(lambda a, b: via_frexp(a) @ via_frexp(b), via_frexp)
    assert_not_yet(r)
