"""Tests of amp_lessons.compiled.checks: right answers pass, wrong ones fail with a hint, junk never raises."""

import pytest
import torch

from amp_lessons import compiled
from amp_lessons.checks import CheckResult
from tests.test_checks import assert_not_yet, assert_your_turn, solution


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


# The exercises as lesson 11 gives them: (a) the starter gets "your turn", (b) the instructors' solution is
# correct, (c) a wrong answer gets "Not yet"; (d) the answers are tensors, and no message prints one.


def test_round_once_exercise():
    def round_once(h, g):  # lesson 11's starter
        return torch.nn.functional.rms_norm(torch.nn.functional.silu(g) * h, (h.shape[-1],))

    starter = compiled.check_round_once(round_once)
    assert_your_turn(starter)
    assert compiled.check_round_once(solution("11").round_once)
    r = compiled.check_round_once(lambda h, g: round_once(h, g) * 1.01)
    assert_not_yet(r)
    assert "tensor(" not in r.message and "tensor(" not in starter.message


def test_round_every_op_exercise():
    def round_every_op(h, g):  # lesson 11's starter
        return torch.nn.functional.rms_norm((torch.nn.functional.silu(g.float()) * h.float()), (h.shape[-1],)).to(
            torch.bfloat16
        )

    starter = compiled.check_round_every_op(round_every_op)
    assert_your_turn(starter)
    assert "fused" in starter.message
    assert compiled.check_round_every_op(solution("11").round_every_op)
    r = compiled.check_round_every_op(lambda h, g: (compiled.workload("chain")(h, g).float() * 1.01).bfloat16())
    assert_not_yet(r)
    assert "elements differ" in r.message and "tensor(" not in r.message and "tensor(" not in starter.message
