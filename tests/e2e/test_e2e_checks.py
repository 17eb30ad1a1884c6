"""Tests of amp_lessons.e2e.checks, on lesson 06's exercise: (a) the starter gets "your turn", (b) the
instructors' solution is correct, (c) a wrong answer gets "Not yet" with a hint, (d) no message of a starter or a
wrong answer states the answer (the recipe's scale sequence)."""

import torch
from torch import nn

from amp_lessons import e2e
from tests.test_checks import assert_not_yet, assert_your_turn, solution


def starter(model, optimizer, scaler, x, y):  # lesson 06's starter cell
    loss = nn.functional.mse_loss(model(x).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def _recipe_scales():
    """The scale after each step when the instructors' step runs in the checker."""
    scales = []

    def recorded(model, optimizer, scaler, x, y):
        solution("06").clipped_amp_step(model, optimizer, scaler, x, y)
        scales.append(scaler.get_scale())

    assert e2e.check_clipped_amp_step(recorded)
    return scales


def _variant(clip=True, clip_first=False, update=True, autocast=True):
    def step(model, optimizer, scaler, x, y):
        with torch.autocast("cpu", dtype=torch.float16, enabled=autocast):
            loss = nn.functional.mse_loss(model(x).float(), y)
        scaler.scale(loss).backward()
        if clip and clip_first:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.unscale_(optimizer)
        if clip and not clip_first:
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        if update:
            scaler.update()
        optimizer.zero_grad(set_to_none=True)

    return step


def test_clipped_amp_step_exercise():
    want = _recipe_scales()
    assert len(set(want)) > 1  # the scale moves: the sequence is something to give away
    r = e2e.check_clipped_amp_step(starter)
    assert_your_turn(r)
    results = [r]
    assert e2e.check_clipped_amp_step(solution("06").clipped_amp_step)
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
    """No cell above the exercise holds its answer, and the prompt names the pieces out of the recipe's order."""
    import json
    import re
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[2] / "notebooks" / "06_amp_end_to_end.ipynb").read_text())["cells"]
    text = ["".join(c["source"]) for c in cells]
    exercise = next(i for i, t in enumerate(text) if "e2e.check_clipped_amp_step(" in t)
    step = next(i for i, t in enumerate(text) if t.startswith("#| export") and "def make_step(" in t)
    assert exercise < step
    above = [t for c, t in zip(cells[:exercise], text) if c["cell_type"] == "code"]
    assert not any(call in t for t in above for call in ("unscale_(", "clip_grad_norm_(", "scaler.update("))
    prompt = text[exercise - 1]
    order = ["`scale`", "`unscale_`", "`step`", "`update`"]
    assert all(w in prompt for w in order)
    assert [w for w in sorted(order, key=prompt.index)] != order  # named, but not in the order they run
    assert not re.search(r"scale.*then.*unscale_.*then", prompt, re.S)
