"""Nothing is red before the learner has tried: every exercise cell of the lessons (a code cell that calls a
checker, ``<topic>.check_*``) shows the "your turn" state for its starter.

Two views of the same promise: the notebooks' STORED outputs (what a learner sees on opening a lesson; they change
only when the notebooks are re-executed, scripts/run_notebooks.py), and the starter cells' sources run now against
the checkers."""

import ast
import importlib
import json
import math
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from amp_lessons._table import TONES
from amp_lessons.checks import CheckResult
from amp_lessons.lessons import LESSONS as COURSE_LESSONS, TOPICS as COURSE_TOPICS

ROOT = Path(__file__).resolve().parent.parent
TOPICS = list(COURSE_TOPICS)  # the course's lesson registry
CHECK_CALL = re.compile(rf"\b(?:{'|'.join(TOPICS)})\.check_\w+\(")


def exercise_cells():
    """(notebook name, cell index, source, outputs) of every code cell that calls a checker."""
    cells = []
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
            source = "".join(cell["source"])
            if cell["cell_type"] == "code" and CHECK_CALL.search(source):
                cells.append((path.name, i, source, cell.get("outputs", [])))
    return cells


CELLS = exercise_cells()
IDS = [f"{name}#{i}" for name, i, _, _ in CELLS]


def test_every_lesson_with_a_checker_is_seen():
    lessons = {name[:2] for name, *_ in CELLS}
    assert lessons == {ls.number for ls in COURSE_LESSONS if ls.exercises}, sorted(lessons)
    assert len(CELLS) >= 24


def _texts(outputs) -> list[tuple[str, str]]:
    """(plain text, html) of each stored output of a cell."""
    out = []
    for o in outputs:
        data = o.get("data", {})
        plain = "".join(data.get("text/plain", o.get("text", "")))
        out.append((plain, "".join(data.get("text/html", ""))))
    return out


@pytest.mark.parametrize(("name", "index", "source", "outputs"), CELLS, ids=IDS)
def test_stored_output_is_your_turn_not_red(name, index, source, outputs):
    """Fails until the notebooks are re-executed with the your-turn checkers."""
    texts = _texts(outputs)
    shown = [(plain, html) for plain, html in texts if re.match(r"(Correct|Not yet|Your turn): ", plain)]
    assert len(shown) == len(CHECK_CALL.findall(source)), f"{name} cell {index}: {texts}"
    for plain, html in texts:
        assert "Not yet" not in plain and "Not yet" not in html, f"{name} cell {index}: {plain}"
        assert TONES["bad"] not in html, f"{name} cell {index} shows the red tone: {html}"
    for plain, html in shown:
        assert plain.startswith("Your turn: ") and TONES["muted"] in html, f"{name} cell {index}: {plain}"


class _Recording:
    """A topic module whose checkers record their results."""

    def __init__(self, module, results):
        self._module, self._results = module, results

    def __getattr__(self, name):
        attr = getattr(self._module, name)
        if not name.startswith("check_"):
            return attr

        def check(*args, **kwargs):
            result = attr(*args, **kwargs)
            self._results.append((name, result))
            return result

        return check


@pytest.mark.parametrize(("name", "index", "source", "outputs"), CELLS, ids=IDS)
def test_starter_cell_gets_your_turn(name, index, source, outputs):
    """Each exercise cell's source, as the notebook has it, run now: every checker it calls answers "your turn"."""
    results = []
    namespace = {
        "torch": torch,
        "F": F,
        "nn": nn,
        "math": math,
        "display": lambda obj: obj,
        **{t: _Recording(importlib.import_module(f"amp_lessons.{t}"), results) for t in TOPICS},
    }
    if "census=small" in source:  # lesson 05 names its small-loss census `small`
        namespace["small"] = importlib.import_module("amp_lessons.scaling").small_loss_census()
    tree = ast.parse(source)
    exec(compile(tree, f"{name}#{index}", "exec"), namespace)  # noqa: S102 - the course's own notebook cell
    assert len(results) == len(CHECK_CALL.findall(source)), results
    for check, result in results:
        assert isinstance(result, CheckResult), (check, result)
        assert result.todo and not result.ok, f"{name} cell {index}: {check} gives {result!r}"
