"""Adding a lesson touches its topic folder (which declares the lesson: ``LESSON = course.Lesson(...)``), its tests,
its notebook, its solutions and its name in the lessons list, and nothing else by hand: a twelfth lesson (a small but complete one: an experiment, a checker, the lesson's row of
what runs where, a notebook with an exercise, a solution and their tests) is added to a copy of this repository,
`make docs` writes what the docs say of the registry, and every test that reads the registry passes on the copy,
the new notebook and lesson 00 under nbval among them, and the browser test collects the new lesson.

The test then lists what changed in the copy: the lesson's own files, one added line in amp_lessons/lessons.py (its
topic's name in the list), and the files `make docs` writes (README.md, instructors/README.md, CONTRIBUTING.md, the
package docstring, lesson 00's stored outputs)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


TOPIC = {
    "amp_lessons/halves/__init__.py": '''"""Lesson 12, halving in fp16.

The face: the names the lesson calls."""

from ._checks import check_half_of_largest
from ._experiments import halve

__all__ = [
    "check_half_of_largest",
    "halve",
]
''',
    "amp_lessons/halves/_experiments.py": '''"""Halving a value in fp16."""

from __future__ import annotations

import torch

from .._validate import finite

__all__ = ["halve"]


def halve(x: float) -> float:
    """``x`` rounded to fp16, halved in fp16."""
    return float(torch.tensor(finite(x, "x"), dtype=torch.float16) / 2)
''',
    "amp_lessons/halves/_checks.py": '''"""Lesson 12's exercise checker."""

from __future__ import annotations

from .._exercise import correct, exercise, not_yet, placeholder
from ..checks import CheckResult, off_by, same_value
from ._experiments import halve

__all__ = ["check_half_of_largest"]


@exercise
def check_half_of_largest(answer) -> CheckResult:
    """Exercise 1: half of fp16's largest finite value, as fp16 computes it."""
    placeholder(answer, "replace ... with half of fp16's largest finite value")
    want = halve(65504.0)
    if same_value(answer, want):
        return correct("halving is exact in fp16: only the exponent changes")
    return not_yet(f"{off_by(answer, want)}: start from fp16's largest finite value", hide=want)
''',
    "amp_lessons/halves/_support.py": '''"""What lesson 12 runs on a given machine."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

LESSON = course.Lesson(
    "12",
    "12_halves.ipynb",
    "Halving in fp16",
    10,
    "when halving an fp16 value is exact",
    topic="halves",
    key_code=("halves.halve(",),
    shows="halving in fp16: exact down to the subnormals",
    exercises="half of fp16's largest value",
)


def runs_where(report) -> course.Runs:
    """Lesson 12 on the machine of ``report``: fp16 halving on the CPU, everywhere."""
    course.check_report(report)
    return course.Runs("native", "fp16 halving on the CPU")
''',
    "tests/halves/test_halves_experiments.py": """from amp_lessons import halves


def test_halving_is_exact_until_the_subnormals():
    assert halves.halve(3.0) == 1.5 and halves.halve(65504.0) == 32752.0
    assert halves.halve(2.0**-24) == 0.0  # the smallest subnormal halves to a tie, rounded to the even 0
""",
    "tests/halves/contract.py": """from tests.checker_rows import Row

ROWS = {"check_half_of_largest": Row(lambda s: s.half_of_largest, ..., (65504.0, 16376.0, "x"))}
""",
    "instructors/solutions_12.py": '''"""Lesson 12's solution."""

half_of_largest = 65504.0 / 2  # halving changes only the exponent: exact
''',
}


def _notebook() -> dict:
    def md(i, text):
        return {"cell_type": "markdown", "id": f"cell-{i:02d}", "metadata": {}, "source": text}

    def code(i, text):
        return {"cell_type": "code", "execution_count": None, "id": f"cell-{i:02d}", "metadata": {}, "outputs": [],
                "source": text}  # fmt: skip

    cells = [
        md(0, "# 12 · Halving in fp16\n\n**Time:** 10 minutes. Everything here runs on this machine's CPU."),
        code(1, "from amp_lessons import halves\n\nprint(halves.halve(3.0))"),
        md(2, "**Exercise 1 — half of fp16's largest value (5 min).** Replace `...` with it."),
        code(3, "half_of_largest = ...  # YOUR answer\nhalves.check_half_of_largest(half_of_largest)"),
        md(4, "## Summary\n\n- Halving an fp16 value changes only its exponent, until the subnormals."),
    ]
    with open(ROOT / "notebooks" / "00_start_here.ipynb", encoding="utf-8") as f:
        metadata = json.load(f)["metadata"]
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


# a pytest started here loads no cache and no pytest-benchmark (GPU images often carry it; it warns under xdist)
NO_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:benchmark")

# amp_lessons/lessons.py: the last topic of the list, and the new topic's line after it
LAST_LINE = '    "compiled",'
NEW_LINE = '    "halves",'

# the tests that read the registry, and the new lesson's own
REGISTRY_TESTS = [
    "tests/test_structure.py",
    "tests/test_course.py",
    "tests/test_readmes.py",
    "tests/test_registry_docs.py",
    "tests/test_device.py",
    "tests/test_notebooks.py",
    "tests/test_key_code.py",
    "tests/test_exercise_outputs.py",
    "tests/test_lesson_claims.py",
    # the registry's check of solution files; the lessons' own solutions run in the main suite (lesson 09's spawn
    # processes, which a process that has run autograd for a hundred other tests cannot fork on some torch releases)
    "tests/test_solutions.py::test_every_lesson_with_an_exercise_has_a_solution_file",
    "tests/test_solutions.py::test_the_instructors_solution_is_correct[halves.check_half_of_largest]",
    "tests/test_api_contract.py",
    # the checker contract: that every checker has a row (in its topic's tests/<topic>/contract.py), and the new row
    "tests/test_checker_contract.py::test_every_checker_has_a_row_and_every_row_a_checker",
    *(
        f"tests/test_checker_contract.py::{t}[halves.check_half_of_largest]"
        for t in (
            "test_every_checker_is_an_exercise",
            "test_the_starter_gets_your_turn",
            "test_a_wrong_answer_fails_without_the_answer",
            "test_a_function_that_raises_gets_not_yet_naming_the_exception",
            "test_any_answer_gets_a_check_result",
        )
    ),
    "tests/halves",
    "notebooks/00_start_here.ipynb",
    "notebooks/12_halves.ipynb",
]
# A plugin of the copy's pytest: every test collected under tests/browser/ is listed in the file $AMP_COLLECTED and
# deselected (the registry's browser test is collected, as `make test` collects it, without a browser run).
COLLECTED_PLUGIN = """import os
from pathlib import Path


def pytest_collection_modifyitems(config, items):
    browser = [item for item in items if item.nodeid.startswith("tests/browser/")]
    Path(os.environ["AMP_COLLECTED"]).write_text("\\n".join(item.nodeid for item in browser), encoding="utf-8")
    if browser:
        config.hook.pytest_deselected(items=browser)
        items[:] = [item for item in items if not item.nodeid.startswith("tests/browser/")]
"""
GENERATED = {"README.md", "instructors/README.md", "CONTRIBUTING.md", "amp_lessons/__init__.py",
             "notebooks/00_start_here.ipynb"}  # fmt: skip


def _run(cmd, cwd, env, timeout=900) -> str:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed ({out.returncode}):\n{out.stdout[-6000:]}\n{out.stderr[-3000:]}"
    )
    return out.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git to copy the repository")
def test_a_twelfth_lesson_needs_its_own_files_and_one_line_in_the_list(tmp_path):
    copy = tmp_path / "course"
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\n")  # fmt: skip
    for name in filter(None, listed):
        src = ROOT / name
        if src.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, copy / name)
    path = os.pathsep.join(filter(None, [str(copy), os.environ.get("PYTHONPATH")]))  # the copy's package first
    env = {**os.environ, "PYTHONPATH": path, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    env.pop("PYTEST_XDIST_WORKER", None)
    _run(["git", "init", "-q"], copy, env)
    _run(["git", "add", "-A"], copy, env)
    _run(["git", "commit", "-q", "-m", "before"], copy, env)

    # the lesson: its folder (with its LESSON), tests, notebook and solutions, and its topic in the lessons list
    lessons = copy / "amp_lessons" / "lessons.py"
    text = lessons.read_text(encoding="utf-8")
    assert text.count(LAST_LINE + "\n") == 1, f"amp_lessons/lessons.py should hold the line {LAST_LINE!r}"
    lessons.write_text(text.replace(LAST_LINE + "\n", LAST_LINE + "\n" + NEW_LINE + "\n", 1), encoding="utf-8")
    for name, body in TOPIC.items():
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text(body, encoding="utf-8")
    (copy / "notebooks" / "12_halves.ipynb").write_text(
        json.dumps(_notebook(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
    )

    # `make docs`, and the new notebook stored by a restart-and-run-all
    py = sys.executable
    _run([py, "scripts/registry_docs.py"], copy, env)
    _run([py, "scripts/run_notebooks.py", "notebooks/00_start_here.ipynb", "notebooks/12_halves.ipynb"], copy, env)

    # one pytest: the registry's tests run, and the browser test is collected (listed by a plugin, not run)
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "amp_collected.py").write_text(COLLECTED_PLUGIN, encoding="utf-8")
    listed = plugins / "collected.txt"
    env_run = {**env, "PYTHONPATH": os.pathsep.join([path, str(plugins)]), "AMP_COLLECTED": str(listed)}
    env_run.pop("AMP_LESSON", None)
    _run([py, "-m", "pytest", *NO_PLUGINS, "-p", "amp_collected", "-q", "-n", "0", *REGISTRY_TESTS,
          "tests/browser/test_lab_lessons.py"], copy, env_run, timeout=1500)  # fmt: skip
    collected = listed.read_text(encoding="utf-8").splitlines()
    assert "tests/browser/test_lab_lessons.py::test_notebook_in_jupyterlab[12_halves.ipynb]" in collected, collected

    status = _run(["git", "status", "--porcelain", "--untracked-files=all"], copy, env)
    changed = {line[3:] for line in status.splitlines()}
    own = {*TOPIC, "notebooks/12_halves.ipynb", "amp_lessons/lessons.py"}
    assert changed - GENERATED == own, sorted(changed - GENERATED - own) or sorted(own - changed)
    diff = _run(["git", "diff", "-U0", "--", "amp_lessons/lessons.py"], copy, env)
    added = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    removed = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    assert removed == [] and added == [NEW_LINE], diff
