"""The contract every exercise checker of every lesson keeps (amp_lessons._exercise), one row per checker:

- the exercise's starter, untouched, gets "Your turn" (a muted line, not a red one);
- a function answer that raises gets "Not yet" naming the exception's type and message, never a traceback;
- a wrong answer gets "Not yet", and its message does not state the expected answer (a value in any usual spelling;
  for a function, no line of the instructors' code);
- the instructors' solution (instructors/solutions_NN.py) gets "Correct" (tests/test_solutions.py, on these rows);
- any answer at all (None, a string, NaN, an empty list, a tensor, a function that raises...) gets a CheckResult,
  never an exception.

The checkers are found from the registry (the ``__all__`` of each topic's ``checks`` module); each topic's rows live
with its tests, in ``tests/<topic>/contract.py`` (``ROWS``, keyed by checker name), so a new checker without a row
fails here, and a new lesson adds its rows in its own folder.
Tests of each checker's own mistakes and hints stay with its topic (tests/<topic>/test_<topic>_checks.py)."""

from __future__ import annotations

import importlib
import inspect
import math

import pytest
import torch

from amp_lessons import _exercise, checks
from amp_lessons.lessons import LESSONS, TOPICS
from tests.api_contract import _time_limit as time_limit
from tests.checker_rows import Row
from tests.load import patience
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

LESSON_OF = {lesson.topic: lesson.number for lesson in LESSONS if lesson.topic}
# every public name of a topic's _checks module is a checker (tested below)
CHECKERS = sorted(
    f"{topic}.{name}" for topic in TOPICS for name in importlib.import_module(f"amp_lessons.{topic}._checks").__all__
)


def _rows_of(topic: str) -> dict:
    """``tests/<topic>/contract.py``'s rows, or none where the topic has no such module."""
    try:
        return importlib.import_module(f"tests.{topic}.contract").ROWS
    except ModuleNotFoundError as e:
        if e.name not in (f"tests.{topic}", f"tests.{topic}.contract"):
            raise
        return {}


ROWS: dict[str, Row] = {f"{topic}.{name}": row for topic in TOPICS for name, row in _rows_of(topic).items()}


def _raises(*args, **kwargs):
    raise ZeroDivisionError("the contract's failing answer")


def test_every_checker_has_a_row_and_every_row_a_checker():
    assert len(CHECKERS) >= 26, CHECKERS
    assert sorted(ROWS) == CHECKERS, f"no row: {sorted(set(CHECKERS) - set(ROWS))}; stale: {set(ROWS) - set(CHECKERS)}"


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_is_an_exercise(name):
    topic, check = name.split(".")
    fn = getattr(importlib.import_module(f"amp_lessons.{topic}"), check)  # the topic's face exports it
    assert check.startswith("check_") and fn is getattr(importlib.import_module(f"amp_lessons.{topic}._checks"), check)
    assert _exercise.is_exercise(fn), f"{name} is not made with amp_lessons._exercise.exercise"
    assert "CheckResult" in str(inspect.signature(fn).return_annotation), name


def _setup(name, skip=True):
    topic, check = name.split(".")
    row = ROWS.get(name)
    if row is None:
        pytest.fail(f"{name} has no row in tests/{topic}/contract.py")
    if skip and row.needs is not None and (why := row.needs()):
        pytest.skip(why)
    s = solution(LESSON_OF[topic])
    args, kwargs = row.params()
    checker = getattr(importlib.import_module(f"amp_lessons.{topic}"), check)
    return row, row.answer(s), (lambda answer: checker(answer, *args, **kwargs))


def _code_lines(fn) -> list[str]:
    """The instructors' function's lines of code that say something: not its def, comments, nor a line as short
    as a call the exercise names (``scaler.update()``)."""
    lines = [ln.strip() for ln in inspect.getsource(fn).splitlines()[1:]]
    return [ln for ln in lines if len(ln) >= 20 and not ln.startswith(("#", '"""', "return ...", "def "))]


def _each(answers) -> tuple:
    return answers if isinstance(answers, tuple) else (answers,)


def _hidden(row, answer) -> tuple:
    return row.hidden or (() if callable(answer) else (answer,))


@pytest.mark.parametrize("name", CHECKERS)
def test_the_starter_gets_your_turn(name):
    row, answer, check = _setup(name)
    for starter in _each(row.starter):
        r = check(starter)
        assert_your_turn(r)
        for value in () if row.starter_lists_all else _hidden(row, answer):
            assert not reveals(r.message, value), (r.message, value)


@pytest.mark.parametrize("name", CHECKERS)
def test_a_function_that_raises_gets_not_yet_naming_the_exception(name):
    _, answer, check = _setup(name)
    if not callable(answer):
        pytest.skip("the answer is a value, not a function")
    r = check(_raises)
    assert_not_yet(r)
    assert "ZeroDivisionError" in r.message and "the contract's failing answer" in r.message, r.message
    assert "Traceback" not in r.message and 'File "' not in r.message, r.message


@pytest.mark.parametrize("name", CHECKERS)
def test_a_wrong_answer_fails_without_the_answer(name):
    row, answer, check = _setup(name)
    for wrong in _each(row.wrong):
        r = check(wrong)
        assert_not_yet(r)
        for value in _hidden(row, answer):
            assert not reveals(r.message, value), (r.message, value)
        if callable(answer):
            for line in _code_lines(answer):
                assert line not in r.message, (r.message, line)


ODD_ANSWERS = [None, ..., "x", "", 3, -1.5, math.nan, math.inf, [], {}, (), object(), _raises, lambda *a: "x",
               torch.ones(2), torch.full((2,), math.nan), True]  # fmt: skip


@pytest.mark.parametrize("name", CHECKERS)
def test_any_answer_gets_a_check_result(name):
    _, _, check = _setup(name, skip=False)  # no odd answer reaches what a row needs (a compiler)
    for answer in ODD_ANSWERS:
        with time_limit(patience(20.0)):
            r = check(answer)
        assert isinstance(r, checks.CheckResult) and not r.ok and r.message, (name, answer)
