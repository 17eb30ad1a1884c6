"""Tests of amp_lessons.compiled.checks: right answers pass, wrong ones fail with a hint, junk never raises."""

import pytest
import torch
import torch._inductor.config as inductor_config
import torch.nn.functional as F

from amp_lessons import compiled
from amp_lessons.checks import CheckResult
from amp_lessons.compiled.key_code import chain
from tests.test_checks import assert_not_yet, solution

needs_inductor = pytest.mark.skipif(not compiled.inductor_status()[0], reason="no C++ compiler for Inductor")
RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def fused_by_hand(h, g):  # the chain in fp32, one rounding at the end
    return F.rms_norm(F.silu(g.float()) * h.float(), (h.shape[-1],)).to(torch.bfloat16)


def test_fused_chain_passes_one_rounding_and_refuses_eager():
    assert compiled.check_fused_chain(fused_by_hand)
    assert compiled.check_fused_chain(lambda h, g: chain(h.double(), g.double()).to(torch.bfloat16))  # fp64 too
    r = compiled.check_fused_chain(chain)
    assert not r and r.todo and "eager" in r.message


def test_fused_chain_rounding_in_the_middle_gets_a_hint():
    def twice(h, g):  # silu rounded to bf16 before the multiplication
        return F.rms_norm(F.silu(g.float()).bfloat16().float() * h.float(), (h.shape[-1],)).bfloat16()

    r = compiled.check_fused_chain(twice)
    assert_not_yet(r)
    assert "rounded to bf16 before the end" in r.message


@pytest.mark.parametrize(
    "answer",
    [None, ..., 3, "x", lambda h, g: None, lambda h, g: 1 / 0, lambda h, g: h.float(), lambda h, g: h[:1], print],
)
def test_junk_answers_get_feedback(answer):
    for check in (compiled.check_fused_chain, compiled.check_compile_matching_eager):
        r = check(answer)
        assert isinstance(r, CheckResult) and not r and r.message


def test_seed_is_validated():
    with pytest.raises(TypeError):
        compiled.check_fused_chain(fused_by_hand, seed=1.5)
    with pytest.raises(TypeError):
        compiled.check_compile_matching_eager(lambda fn: fn, seed="0")
    assert compiled.check_fused_chain(fused_by_hand, seed=7)


# The exercises as lesson 11 gives them: a wrong answer gets "Not yet" with its own hint; the two cells swapped
# fail; no message prints a tensor (the starter's Your turn and the solution's Correct: tests/test_checker_contract.py).


def test_fused_chain_exercise():
    def fused_chain(h, g):  # lesson 11's starter
        return F.rms_norm(F.silu(g) * h, (h.shape[-1],))

    starter = compiled.check_fused_chain(fused_chain)
    r = compiled.check_fused_chain(lambda h, g: fused_by_hand(h, g) * 1.01)
    assert_not_yet(r)
    swapped = compiled.check_fused_chain(solution("11").compile_matching_eager)
    assert_not_yet(swapped)
    assert "tensor(" not in r.message and "tensor(" not in starter.message


@needs_inductor
def test_compile_matching_eager_exercise():
    def compile_matching_eager(fn):  # lesson 11's starter
        return torch.compile(fn)

    starter = compiled.check_compile_matching_eager(compile_matching_eager)
    assert "default numerics" in starter.message
    right = compiled.check_compile_matching_eager(solution("11").compile_matching_eager)
    assert right, right.message
    assert ("2.11" in right.message) == (RELEASE <= (2, 11))
    swapped = compiled.check_compile_matching_eager(solution("11").fused_chain)
    assert_not_yet(swapped)
    assert inductor_config.emulate_precision_casts is False


@needs_inductor
def test_compile_matching_eager_names_each_mistake():
    def lazy(fn):  # the setting is gone by the time Inductor compiles (at the first call)
        with inductor_config.patch(emulate_precision_casts=True):
            return torch.compile(fn)

    def first_call_only(fn):  # the second call compiles again, without the setting
        compiled_fn, calls = torch.compile(fn), []

        def run(*args):
            calls.append(1)
            if len(calls) == 1:
                with inductor_config.patch(emulate_precision_casts=True):
                    return compiled_fn(*args)
            return compiled_fn(*args)

        return run

    def left_on(fn):  # right numbers, but the whole process keeps the setting
        inductor_config.emulate_precision_casts = True
        return torch.compile(fn)

    for answer, words in (
        (lazy, "compiles at the first call"),
        (first_call_only, "compiled again without it"),
        (left_on, "stays on for every later compile"),
        (lambda fn: fn, "ran eagerly"),
        (lambda fn: 3, "must return a function"),
    ):
        r = compiled.check_compile_matching_eager(answer)
        assert_not_yet(r)
        assert words in r.message, (answer, r.message)
        assert inductor_config.emulate_precision_casts is False  # the checker restores what an answer changed
