"""Tests of amp_lessons.compiled.checks: right answers pass, wrong ones fail with a hint, junk never raises."""

import pytest
import torch

from amp_lessons import compiled
from amp_lessons.checks import CheckResult


def test_right_answers_pass():
    assert compiled.check_round_once(compiled.round_once)
    assert compiled.check_round_every_op(compiled.round_every_op)
    assert compiled.check_round_every_op(compiled.workload("chain"))


def test_the_two_roundings_are_not_confused():
    r = compiled.check_round_once(compiled.round_every_op)
    assert not r and "eager" in r.message
    r = compiled.check_round_every_op(compiled.round_once)
    assert not r and "fused" in r.message


@pytest.mark.parametrize(
    "answer",
    [None, ..., 3, "x", lambda h, g: None, lambda h, g: 1 / 0, lambda h, g: h.float(), lambda h, g: h[:1], print],
)
def test_junk_answers_get_feedback(answer):
    for check in (compiled.check_round_once, compiled.check_round_every_op):
        r = check(answer)
        assert isinstance(r, CheckResult) and not r


def test_seed_is_validated():
    with pytest.raises(TypeError):
        compiled.check_round_once(compiled.round_once, seed=1.5)
    assert compiled.check_round_once(compiled.round_once, seed=7)


def test_fp64_answer_rounded_once_passes():
    assert compiled.check_round_once(lambda h, g: compiled.workload("chain")(h.double(), g.double()).to(torch.bfloat16))
