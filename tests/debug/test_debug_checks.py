"""Tests of amp_lessons.debug.checks: right answers pass, each kind of wrong answer gets its own hint, and
no answer makes a checker raise."""

import torch

from amp_lessons import debug
from tests.test_checks import assert_not_yet, assert_your_turn, reveals


def test_first_bad_layer_checker():
    model, x, _ = debug.broken_training_setup(3)
    want = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    assert debug.check_first_bad_layer(want)
    block = want.split(".")[0]
    assert "container" in debug.check_first_bad_layer(block).message
    assert "earlier module" in debug.check_first_bad_layer("head").message
    assert "finite" in debug.check_first_bad_layer("embed").message
    # the hint names the exercise's own variables (broken, xb), not the lesson's model
    assert "trace_overflow(broken, xb" in debug.check_first_bad_layer("embed").message
    assert "not a module" in debug.check_first_bad_layer("nope").message
    assert "`...`" in debug.check_first_bad_layer(...).message
    assert "string" in debug.check_first_bad_layer(3).message


def test_fp16_fix_checker():
    model, x, _ = debug.broken_training_setup(3)
    bad = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    block, layer = bad.split(".")

    def keep(m):
        getattr(m, block).__setattr__(layer, debug.KeepFP32(getattr(getattr(m, block), layer)))

    assert debug.check_fp16_fix(keep, own_wrapper=False)  # in place, returning None
    # the exercise asks for the learner's own wrapper: the toolkit's is refused, with what to write instead
    own = debug.check_fp16_fix(keep)
    assert not own and "write the wrapper yourself" in own.message and "enabled=False" in own.message
    assert (
        "Linear layers still run in fp16"
        in debug.check_fp16_fix(lambda m: debug.KeepFP32(m), own_wrapper=False).message
    )
    assert "raised ZeroDivisionError" in debug.check_fp16_fix(lambda m: 1 / 0).message
    r = debug.check_fp16_fix(lambda m: m)
    assert_your_turn(r)
    assert "still produces inf/NaN" in r.message and bad not in r.message  # never names the answer of exercise 1
    r = debug.check_fp16_fix(lambda m: m.embed.__setattr__("weight", m.embed.weight))  # a change that fixes nothing
    assert_your_turn(r)

    def drop(m):  # finite, but a different model: the block's output is its bias alone
        with torch.no_grad():
            getattr(m, block).wo.weight.zero_()
        return m

    assert "away from the fp32" in debug.check_fp16_fix(drop).message
    assert "must return the model" in debug.check_fp16_fix(lambda m: 3).message
    assert not debug.check_fp16_fix(...)
    assert "expected a function" in debug.check_fp16_fix("keep").message


# The exercises as lesson 08 gives them: wrong answers get "Not yet", and no message of a starter or a wrong answer
# states the answer (the starter's Your turn and the solution's Correct: tests/test_checker_contract.py).


def test_first_bad_layer_exercise():
    model, x, _ = debug.broken_training_setup(3)
    want = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    starter = debug.check_first_bad_layer(...)
    names = [n for n, _ in model.named_modules() if n and n != want and not want.startswith(n + ".")]
    results = [starter] + [debug.check_first_bad_layer(n) for n in [want.split(".")[0], "nope", 3, *names[:6]]]
    for r in results[1:]:
        assert_not_yet(r)
    for r in results:
        if "its modules are" not in r.message:  # the list of all module names names it, among the rest
            assert not reveals(r.message, want), r.message


def test_fp16_fix_exercise():
    model, x, _ = debug.broken_training_setup(3)
    bad = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label

    def fix(model):  # lesson 08's starter
        return model

    starter = debug.check_fp16_fix(fix)
    wrong = [
        debug.check_fp16_fix(lambda m: debug.KeepFP32(m), own_wrapper=False),
        debug.check_fp16_fix(lambda m: debug.KeepFP32(m)),
    ]
    for r in wrong:
        assert_not_yet(r)
    for r in [starter, *wrong]:
        assert not reveals(r.message, bad), r.message
