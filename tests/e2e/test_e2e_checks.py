"""Tests of amp_lessons.e2e._checks, on lesson 06's exercises: each wrong answer gets "Not yet" with its own hint,
and no message of a starter or a wrong answer states the answer (the recipe's scale sequence); the starter's Your
turn and the solution's Correct are tests/test_checker_contract.py's."""

import functools

import torch
from torch import nn

from amp_lessons import e2e
from amp_lessons.e2e import _checks as checks
from tests.e2e.contract import _clipped_starter as starter
from tests.test_checks import assert_not_yet, solution


def _recipe_scales():
    """The scale after each step when the instructors' step runs in the checker."""
    scales = []

    def recorded(model, optimizer, scaler, x, y):
        solution("06").clipped_amp_step(model, optimizer, scaler, x, y)
        scales.append(scaler.get_scale())

    assert e2e.check_clipped_amp_step(recorded)
    return scales


def _variant(**mistake):  # the recipe's step with one piece moved or left out
    return functools.partial(checks._reference, **mistake)


def test_clipped_amp_step_exercise():
    want = _recipe_scales()
    assert len(set(want)) > 1  # the scale moves: the sequence is something to give away
    results = [e2e.check_clipped_amp_step(starter)]
    assert e2e.check_clipped_amp_step(_variant())
    wrong = {
        _variant(clip_first=True): "unscale_",
        _variant(clip=False): "not clipped",
        _variant(update=False): "call scaler.update() after scaler.step(optimizer)",
        _variant(autocast=False): "the forward ran in fp32",
        (lambda *a: None): "scale went",
    }
    for fn, words in wrong.items():
        r = e2e.check_clipped_amp_step(fn)
        assert_not_yet(r)
        assert words in r.message, r.message
        results.append(r)
    for r in results:
        text = r.message.replace(" ", "")
        assert str(want).replace(" ", "") not in text and str(want[1:3]).strip("[]").replace(" ", "") not in text


def test_the_starter_message_does_not_give_the_order_away():
    """An untouched starter (and an answer wrong in no known way) is told what is missing, not the recipe's order."""
    messages = [e2e.check_clipped_amp_step(starter).message]

    def scrambled(model, optimizer, scaler, x, y):  # every piece, in a wrong order that no hint names
        with torch.autocast("cpu", dtype=torch.float16):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)

    r = e2e.check_clipped_amp_step(scrambled)
    assert_not_yet(r)
    messages.append(r.message)
    for m in messages:
        named = [w for w in ("scale(", "unscale_", "clip", "step(", "update") if w in m]
        assert len(named) <= 2, m  # naming the calls one after another would be the answer
        assert "then" not in m and "before" not in m, m


def test_lesson_06_shows_its_step_only_after_the_exercise():
    """The exported step comes after the exercise, and the prompt names the pieces out of the recipe's order."""
    import json
    import re
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[2] / "notebooks" / "06_amp_end_to_end.ipynb").read_text())["cells"]
    text = ["".join(c["source"]) for c in cells]
    exercise = next(i for i, t in enumerate(text) if "e2e.check_clipped_amp_step(" in t)
    step = next(i for i, t in enumerate(text) if t.startswith("#| export") and "def make_step(" in t)
    assert exercise < step
    prompt = text[exercise - 1]
    order = ["`scale`", "`unscale_`", "`step`", "`update`"]
    assert all(w in prompt for w in order)
    assert [w for w in sorted(order, key=prompt.index)] != order  # named, but not in the order they run
    assert not re.search(r"scale.*then.*unscale_.*then", prompt, re.S)


# ---- Exercise 2: gradient accumulation ----


def _accumulating(divide=True, step_each=False, zero=True, update_each=False, unscale_each=False, zero_first=False):
    def step(model, optimizer, scaler, micro_batches):
        if zero_first:
            optimizer.zero_grad()
        for x, y in micro_batches:
            with torch.autocast("cpu", dtype=torch.float16):
                loss = nn.functional.mse_loss(model(x).float(), y)
            scaler.scale(loss / len(micro_batches) if divide else loss).backward()
            if unscale_each:
                scaler.unscale_(optimizer)
            if update_each:
                scaler.update()
            if step_each:
                scaler.step(optimizer)
                scaler.update()
                optimizer.zero_grad()
        if not step_each:
            scaler.step(optimizer)
            if not update_each:
                scaler.update()
            if zero and not zero_first:
                optimizer.zero_grad()

    return step


def test_accumulated_amp_step_exercise():
    r = e2e.check_accumulated_amp_step(solution("06").accumulated_amp_step)
    assert r and "skipped whole" in r.message and "halved once" in r.message, r
    assert e2e.check_accumulated_amp_step(_accumulating())
    assert e2e.check_accumulated_amp_step(_accumulating(zero_first=True))  # zeroing before, not after: same steps
    wrong = {
        _accumulating(step_each=True): "one optimizer step per micro-batch",
        _accumulating(divide=False): "divide each micro-batch's loss by len(micro_batches)",
        _accumulating(zero=False): "carry over",
        _accumulating(update_each=True): "once per optimizer step",
        _accumulating(unscale_each=True): "ACCUMULATED gradients once",
        solution("06").clipped_amp_step: "raised TypeError",  # exercise 1's answer does not take micro-batches
        (lambda *a: None): "scale went",
        3: "expected a function",
    }
    for fn, words in wrong.items():
        r = e2e.check_accumulated_amp_step(fn)
        assert_not_yet(r)
        assert words in r.message, r.message


def test_the_accumulation_checker_measures_a_skipped_step():
    """The overflowing micro-batch does overflow: under the recipe the scale halves exactly once, at that call, and
    the parameters do not move in it (a checker whose data never overflowed could not tell one update per call
    from one per micro-batch)."""
    seen = []

    def recorded(model, optimizer, scaler, micro_batches):
        before = [p.detach().clone() for p in model.parameters()]
        solution("06").accumulated_amp_step(model, optimizer, scaler, micro_batches)
        moved = any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
        seen.append((scaler.get_scale(), moved))

    params, scales, err = checks._run(recorded, True)
    assert err is None and params is not None
    assert [s for s, _ in seen] == [256.0, 128.0, 128.0, 256.0]  # init 2**8, growth_interval=2
    assert [m for _, m in seen] == [True, False, True, True]
