"""The row type of the exercise-checker contract (tests/test_checker_contract.py). Each topic's rows live with its
tests, in ``tests/<topic>/contract.py``: a dict ``ROWS`` from checker name to :class:`Row`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field

from tests.test_checks import solution


@dataclass(frozen=True)
class Row:
    """One checker's exercise: ``answer`` reads the solution module's answer; ``starter`` is the notebook's
    starter, or a tuple of the starters a learner may leave; ``wrong`` a wrong answer, or a tuple of them;
    ``params`` gives the exercise's own arguments after the answer (positional, keyword); ``hidden`` is what no
    message of a starter or a wrong answer may state (default: the solution's answer if it is a value)."""

    answer: Callable
    starter: object
    wrong: object
    params: Callable = lambda: ((), {})
    hidden: tuple = ()
    needs: Callable | None = field(default=None)  # a reason to skip, or None
    starter_lists_all: bool = False  # the starter's message lists every choice, the answer among the rest


@functools.cache
def solution_of(lesson: str):
    """The instructors' solution module of lesson ``lesson`` ("01".."11"), loaded once."""
    return solution(lesson)
