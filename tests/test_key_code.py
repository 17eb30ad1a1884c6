"""Each lesson's key code lives in its notebook, once: the generated key_code modules match their notebooks'
``#| export`` cells, and every call a lesson declares in ``Lesson.key_code`` is written in its own code cells."""

from __future__ import annotations

import importlib
import io
import json
import sys
import tokenize
from pathlib import Path

import pytest

from amp_lessons.lessons import LESSONS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import export_key_code  # noqa: E402


def _code_without_comments(source: str) -> str:
    """``source`` without its comments (IPython magics and shell lines are dropped first)."""
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    text = "\n".join(lines) + "\n"
    try:
        toks = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type != tokenize.COMMENT]
        return tokenize.untokenize(toks)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return text


def _code_cells(notebook: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))
    return [export_key_code._source(c) for c in nb["cells"] if c["cell_type"] == "code"]


def test_generated_modules_match_their_notebooks():
    assert export_key_code.stale() == [], "run `make export` after editing a notebook's #| export cells"


def test_stale_detection_can_fail(tmp_path, monkeypatch):
    """The check above is not vacuous: a module that differs from its notebook, or that no notebook writes, is named."""
    want = export_key_code.targets()
    if not want:
        pytest.skip("no lesson exports key code yet")
    path, text = next(iter(want.items()))
    fake = tmp_path / "amp_lessons" / path.parent.name / export_key_code.MODULE
    fake.parent.mkdir(parents=True)
    fake.write_text(text + "x = 1\n")
    orphan = tmp_path / "amp_lessons" / "nowhere" / export_key_code.MODULE
    orphan.parent.mkdir(parents=True)
    orphan.write_text("")
    monkeypatch.setattr(export_key_code, "ROOT", tmp_path)
    monkeypatch.setattr(export_key_code, "targets", lambda: {fake: text})
    bad = export_key_code.stale()
    assert any(b.startswith(f"amp_lessons/{path.parent.name}/key_code.py") for b in bad)
    assert any("nowhere" in b and "no notebook exports it" in b for b in bad)


@pytest.mark.parametrize("lesson", [ls for ls in LESSONS if ls.key_code], ids=lambda ls: ls.number)
def test_lesson_cells_contain_its_key_code(lesson):
    code = "\n".join(_code_without_comments(c) for c in _code_cells(lesson.notebook))
    missing = [call for call in lesson.key_code if call not in code]
    assert not missing, f"lesson {lesson.number}'s code cells do not contain {missing}"


@pytest.mark.parametrize(
    "lesson",
    [ls for ls in LESSONS if export_key_code.exported_cells(ROOT / "notebooks" / ls.notebook)],
    ids=lambda ls: ls.number,
)
def test_key_code_module_imports_and_defines_what_the_cells_define(lesson):
    """The generated module imports on its own and defines every function and class its exported cells define."""
    import ast

    mod = importlib.import_module(f"amp_lessons.{lesson.topic}.key_code")
    bodies = export_key_code.exported_cells(ROOT / "notebooks" / lesson.notebook)
    names = {
        node.name
        for body in bodies
        for node in ast.parse(body).body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef))
    }
    assert names, f"lesson {lesson.number}'s #| export cells define no function or class"
    assert all(hasattr(mod, n) for n in names), sorted(n for n in names if not hasattr(mod, n))


def test_no_lesson_prints_its_key_code_with_getsource():
    """Key code is written in a cell, not printed from the package (inspect.getsource hides what the lesson is about)."""
    offenders = [
        ls.number for ls in LESSONS if any("getsource(" in _code_without_comments(c) for c in _code_cells(ls.notebook))
    ]
    assert offenders == []
