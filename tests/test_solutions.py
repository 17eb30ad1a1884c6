"""The instructors' solutions (instructors/solutions_NN.py): every lesson with an exercise has its file, and each
solution gets "Correct" from the checker the learners call (one case per checker, on the rows of
tests/test_checker_contract.py)."""

import json
import re
from pathlib import Path

import pytest

from amp_lessons.checks import CheckResult
from amp_lessons.lessons import LESSONS
from tests.test_checker_contract import CHECKERS, _setup

ROOT = Path(__file__).resolve().parent.parent


def test_every_lesson_with_an_exercise_has_a_solution_file():
    placeholder = re.compile(r"#\s*YOUR\b")
    with_exercises = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        if any(c["cell_type"] == "code" and placeholder.search("".join(c["source"])) for c in cells):
            with_exercises.add(path.name[:2])
    solutions = {p.stem.removeprefix("solutions_") for p in (ROOT / "instructors").glob("solutions_*.py")}
    assert with_exercises == {lesson.number for lesson in LESSONS if lesson.exercises}, "the registry's exercises"
    assert with_exercises == solutions, f"exercises without solutions: {with_exercises - solutions}"


@pytest.mark.parametrize("name", CHECKERS)
def test_the_instructors_solution_is_correct(name):
    _, answer, check = _setup(name)
    r = check(answer)
    assert isinstance(r, CheckResult) and r.ok and not r.todo, r
    assert repr(r).startswith("Correct: ")
