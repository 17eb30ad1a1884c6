"""Tests of amp_lessons.tf32.checks: the checker says what the course's TF32 model is, and what it is not."""

from amp_lessons import formats, tf32
from amp_lessons.formats import quantize
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


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


# The exercises as lesson 02 gives them: (a) the starter gets "your turn", (b) the instructors' solution is
# correct, (c) a wrong answer gets "Not yet", (d) no message of a starter or a wrong answer states the answer.


def test_tf32_matmul_exercise():
    starter = tf32.check_tf32_matmul(lambda a, b: a @ b)
    assert_your_turn(starter)
    assert "plain fp32 product" in starter.message and "@" not in starter.message
    assert tf32.check_tf32_matmul(solution("02").tf32_matmul)
    wrong_answers = (
        lambda a, b: _model(a, b, "toward_zero"),
        lambda a, b: _model(a, b, "nearest_away"),
        lambda a, b: _model(a, b).double(),
        lambda a, b: a,
    )
    for wrong in wrong_answers:
        assert_not_yet(tf32.check_tf32_matmul(wrong))


def test_error_ratio_exercise():
    s = solution("02")
    fl, fh = formats.get_format("bf16"), formats.get_format("tf32")
    eps_ratio = fl.eps / fh.eps  # the prediction the exercise asks for, from the formats engine
    assert s.ERROR_RATIO == eps_ratio
    starter = tf32.check_error_ratio(..., "bf16", "tf32")
    assert_your_turn(starter)
    assert tf32.check_error_ratio(s.ERROR_RATIO, "bf16", "tf32")
    for answer, word in ((eps_ratio * 4, "too large"), (eps_ratio / 4, "too small"), (-1.0, "cannot be")):
        r = tf32.check_error_ratio(answer, "bf16", "tf32")
        assert_not_yet(r)
        assert word in r.message
    for r in (starter, tf32.check_error_ratio(eps_ratio * 4), tf32.check_error_ratio("x")):
        assert not reveals(r.message, eps_ratio), r.message
