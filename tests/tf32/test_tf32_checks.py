"""Tests of amp_lessons.tf32.checks: the checker says what the course's TF32 model is, and what it is not."""

from amp_lessons import tf32
from amp_lessons.formats import quantize


def _model(a, b, rounding="nearest_away"):
    return quantize(a, "tf32", rounding) @ quantize(b, "tf32", rounding)


def test_tf32_matmul_checker_names_the_model_not_the_hardware():
    r = tf32.check_tf32_matmul(_model)
    assert r and "course's TF32 model" in r.message and "bit-exact:" not in r.message
    r = tf32.check_tf32_matmul(lambda a, b: _model(a, b, "nearest_even"))
    assert not r and "'nearest_even'" in r.message and "course's model rounds ties away" in r.message
    assert "undocumented" in r.message and "NVIDIA's" not in r.message
    r = tf32.check_tf32_matmul(lambda a, b: a @ b)
    assert not r and "plain fp32 product" in r.message
    r = tf32.check_tf32_matmul(lambda a, b: quantize(a, "tf32", "nearest_away") @ b)
    assert not r and "only one input" in r.message


def test_tf32_matmul_checker_hint_is_not_the_answer():
    r = tf32.check_tf32_matmul(lambda a, b: _model(a, b) * 1.001)
    assert not r and "differs from the course's TF32 model" in r.message
    assert "@" not in r.message  # the hint names the steps, not the code
