"""Tests of amp_lessons.checks and amp_lessons._exercise, and the helpers the topics' checker tests share:
``solution`` (an instructor solution module) and ``reveals`` (whether a message states a value, the rule the
checkers' hidden answers are masked by)."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

from amp_lessons import checks
from amp_lessons._exercise import reveals
from amp_lessons._table import TONES

ROOT = Path(__file__).resolve().parent.parent


def solution(lesson: str):
    """The instructors' solution module of ``lesson`` ("01" .. "11"), imported by name from ``instructors/``: a
    process group's spawned worker (where forking cannot run autograd) imports its functions the same way."""
    folder = str(ROOT / "instructors")
    if folder not in sys.path:
        sys.path.append(folder)
    return importlib.import_module(f"solutions_{lesson}")


def assert_your_turn(r):
    assert isinstance(r, checks.CheckResult) and r.todo and not r.ok and not r, r
    assert repr(r).startswith("Your turn: ") and TONES["bad"] not in r._repr_html_()


def assert_not_yet(r):
    assert isinstance(r, checks.CheckResult) and not r.ok and not r.todo and not r, r
    assert repr(r).startswith("Not yet: ")


def test_result_display():
    ok, bad = checks.CheckResult(True, "fine"), checks.CheckResult(False, "a <b> tag")
    assert repr(ok) == "Correct: fine" and repr(bad) == "Not yet: a <b> tag"
    assert "&lt;b&gt;" in bad._repr_html_()
    assert TONES["good"] in ok._repr_html_() and TONES["bad"] in bad._repr_html_()


def test_your_turn_is_a_third_state_in_a_muted_tone():
    todo = checks.CheckResult(False, "replace `...` with your value", todo=True)
    assert not todo and not todo.ok and todo.todo
    assert repr(todo) == "Your turn: replace `...` with your value"
    html = todo._repr_html_()
    assert TONES["muted"] in html and TONES["bad"] not in html and TONES["good"] not in html
    assert "Your turn:" in html and "Not yet" not in html and "&#9998;" in html
    # positional construction as before, and frozen
    assert checks.CheckResult(False, "m", True) == todo.__class__(False, "m", todo=True)
    assert checks.CheckResult(False, "m").todo is False
    with pytest.raises(AttributeError):
        todo.ok = True
    with pytest.raises(ValueError, match="todo"):
        checks.CheckResult(True, "both", todo=True)
    with pytest.raises(TypeError, match="todo"):
        checks.CheckResult(False, "m", todo="yes")


def test_placeholders():
    for p in (None, ..., "...", "", "  ...  "):
        assert checks.is_placeholder(p)
    for a in (0, 0.0, "e4m3", math.nan, [], "x"):
        assert not checks.is_placeholder(a)


def test_off_by_names_the_miss_not_the_answer():
    assert checks.off_by(131072.0, 65536.0) == "too large by a factor of 2"
    assert checks.off_by(1.0, 8.0) == "too small by a factor of 8"
    assert checks.off_by(3.0, 1.0) == "too large" and checks.off_by(0.3, 1.0) == "too small"
    assert checks.off_by(2.0**20, 1.0) == "too large"  # beyond 2**16: the factor would give the answer away
    assert checks.off_by(-1.0, 1.0) == "of the wrong sign" and checks.off_by(0, 2.0) == "zero"
    assert checks.off_by("x", 1.0) == "not a number" and checks.off_by(None, 1.0) == "not a number"
    assert checks.off_by(math.nan, 1.0) == "not it" and checks.off_by(2.0, 2.0) == "right"
    for got, want in ((131072.0, 65536.0), (3.0, 0.0078125), (1e-3, 42.1954)):
        assert not reveals(checks.off_by(got, want), want)
    with pytest.raises(TypeError, match="want"):
        checks.off_by(1.0, "x")


def test_reveals():
    assert reveals("expected 65504.0", 65504.0) and reveals("it is 65504", 65504)
    assert reveals("GradScaler has 32768.0", 32768.0) and reveals("use 2**15", 32768.0)
    assert reveals("expected 42.1954", 42.19539260864258) and reveals("fn(1.0) gave -8", -8)
    assert not reveals("fp16 overflows at 655040", 65504.0) and not reveals("bf16", 16)
    assert not reveals("a step of 2**-8", 8) and not reveals("1.448", 448)


def test_call_learner_turns_an_error_into_a_short_message():
    import torch

    got, err = checks.call_learner(lambda x, n: 1 / 0, torch.zeros(2, 3), 4)
    assert (
        got is None
        and err == "calling it with (a float32 tensor of shape (2, 3), 4) raised ZeroDivisionError: division by zero"
    )
    assert checks.call_learner(lambda x: x + 1, 1) == (2, None)
    assert checks.call_learner(3, 1)[1].startswith("expected a function")


def test_exercise_ends_the_check_at_a_placeholder_an_error_or_a_finish():
    from amp_lessons import _exercise as ex

    @ex.exercise
    def check_double(fn, x: float = 3.0):
        """Exercise: fn(x) returns 2 * x."""
        got = ex.attempt(fn, x)
        ex.placeholder(got, f"write double(x); it returns {got!r} so far")
        if got != 2 * x:
            return ex.not_yet(f"double({x!r}) gave {got!r}, not {2 * x!r}", hide=2 * x)
        return ex.correct("twice x")

    assert ex.is_exercise(check_double) and not ex.is_exercise(checks.call_learner)
    assert check_double.__name__ == "check_double" and "fn(x) returns" in check_double.__doc__
    assert check_double(lambda x: 2 * x)
    assert_your_turn(check_double(lambda x: ...))
    r = check_double(lambda x: 1 / 0)
    assert_not_yet(r)
    assert r.message == "calling it with (3.0) raised ZeroDivisionError: division by zero"
    assert check_double(3).message == "expected a function, got int 3"
    r = check_double(lambda x: x)  # the message would state 6.0: masked
    assert_not_yet(r)
    assert r.message == f"double(3.0) gave 3.0, not {ex.MASK}" and not reveals(r.message, 6.0)


def test_finish_and_attempt_with_the_exercise_s_own_words():
    from amp_lessons import _exercise as ex

    @ex.exercise
    def check_fix(fix):
        ex.attempt(fix, None, call="fix(model)")
        ex.finish(ex.correct("fine"))

    assert check_fix(lambda m: m)
    assert check_fix(lambda m: 1 / 0).message == "fix(model) raised ZeroDivisionError: division by zero"
    assert check_fix("x").message == "expected a function fix(model), got str"
    with pytest.raises(TypeError, match="CheckResult"):
        ex.finish("fine")

    @ex.exercise
    def check_nothing(answer):
        return "fine"

    with pytest.raises(TypeError, match="check_nothing returned str"):
        check_nothing(1)
    with pytest.raises(TypeError, match="checker function"):
        ex.exercise(42)


def test_hidden_answers_are_masked_in_every_spelling_but_a_lone_digit():
    from amp_lessons import _exercise as ex

    assert ex.not_yet("GradScaler starts at 65536.0 = 2**16", hide=65536.0).message == (
        f"GradScaler starts at {ex.MASK} = {ex.MASK}"
    )
    assert ex.your_turn("block4.wo overflows", hide="block4.wo").message == f"{ex.MASK} overflows"
    assert ex.your_turn("x", hide="block4.wo").todo
    # 4480 and 1.448 are other numbers; "1%" is prose even when the answer is 1.0 (its "1.0" and "2^0" are masked)
    assert ex.not_yet("4480 or 1.448", hide=448).message == "4480 or 1.448"
    assert ex.not_yet("at most 1%, not 1.0 or 2^0", hide=1.0).message == f"at most 1%, not {ex.MASK} or {ex.MASK}"
    assert ex.not_yet("2 and 3", hide=(2.0, 3.0)).message == "2 and 3"
    with pytest.raises(TypeError, match="hidden answer"):
        ex.not_yet("m", hide=[None])
    with pytest.raises(TypeError, match="message"):
        ex.not_yet(3)
    with pytest.raises(TypeError, match="message"):
        reveals(None, 1.0)


def test_calls_seen_sees_a_function_however_it_was_reached():
    from amp_lessons import formats
    from amp_lessons._exercise import calls_seen

    q = formats.quantize
    alias = {"f": q}
    with calls_seen(lambda code: code is formats.quantize.__code__) as seen:
        alias["f"](torch.tensor([0.1]), "fp16")  # through a dict, under another name
    assert seen == {"quantize"}
    with calls_seen(lambda code: code is formats.quantize.__code__) as seen:
        formats.get_format("fp16")
    assert seen == set()


def test_hints_come_as_a_short_list_shown_line_by_line():
    from amp_lessons._exercise import hint_list

    r = hint_list("your count is 3, not 2", ["start from zero", "count casts only"])
    assert not r and r.message == "your count is 3, not 2:\n- start from zero\n- count casts only"
    assert "2:<br>- start from zero<br>- count casts only" in r._repr_html_()
