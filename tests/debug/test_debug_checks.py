"""Tests of amp_lessons.debug.checks: right answers pass, each kind of wrong answer gets its own hint, and
no answer makes a checker raise."""

import torch

from amp_lessons import debug


def test_first_bad_layer_checker():
    model, x, _ = debug.broken_training_setup(3)
    want = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    assert debug.check_first_bad_layer(want)
    block = want.split(".")[0]
    assert "container" in debug.check_first_bad_layer(block).message
    assert "earlier module" in debug.check_first_bad_layer("head").message
    assert "finite" in debug.check_first_bad_layer("embed").message
    assert "not a module" in debug.check_first_bad_layer("nope").message
    assert "placeholder" in debug.check_first_bad_layer(...).message
    assert "string" in debug.check_first_bad_layer(3).message


def test_fp16_fix_checker():
    model, x, _ = debug.broken_training_setup(3)
    bad = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    block, layer = bad.split(".")

    def keep(m):
        getattr(m, block).__setattr__(layer, debug.KeepFP32(getattr(getattr(m, block), layer)))

    assert debug.check_fp16_fix(keep)  # in place, returning None
    assert "Linear layers still run in fp16" in debug.check_fp16_fix(lambda m: debug.KeepFP32(m)).message
    assert "raised ZeroDivisionError" in debug.check_fp16_fix(lambda m: 1 / 0).message
    msg = debug.check_fp16_fix(lambda m: m).message
    assert "still produces inf/NaN" in msg and bad not in msg  # never names the answer of exercise 1

    def drop(m):  # finite, but a different model: the block's output is its bias alone
        with torch.no_grad():
            getattr(m, block).wo.weight.zero_()
        return m

    assert "away from the fp32" in debug.check_fp16_fix(drop).message
    assert "must return the model" in debug.check_fp16_fix(lambda m: 3).message
    assert not debug.check_fp16_fix(...)
    assert "expected a function" in debug.check_fp16_fix("keep").message
