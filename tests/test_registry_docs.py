"""What the docs say of the lesson registry is written from it (scripts/registry_docs.py, `make docs`): the README's
lesson table and topic list, the instructors' solutions table and schedule, CONTRIBUTING's layout, the package
docstring and lesson 00's summary line."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from amp_lessons.lessons import LESSONS

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("registry_docs", ROOT / "scripts" / "registry_docs.py")
registry_docs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(registry_docs)


def test_the_docs_say_what_the_registry_says():
    assert registry_docs.stale() == [], "run `make docs` (python scripts/registry_docs.py)"


def test_every_lesson_has_its_readme_row_and_every_exercise_its_solutions_row():
    table = registry_docs.lesson_table().splitlines()
    assert len(table) == 2 + len(LESSONS) and all(ls.shows for ls in LESSONS)
    solutions = registry_docs.solutions_table()
    for ls in LESSONS:
        assert (f"`solutions_{ls.number}.py`" in solutions) == bool(ls.exercises), ls.number
    assert "Lesson 00 has no graded exercise." in solutions


def test_the_layout_wraps_the_topics_in_lesson_order():
    lines = registry_docs.layout_lines().splitlines()
    topics = " ".join(line[: registry_docs.LAYOUT_COMMENT_COLUMN].strip() for line in lines).split()
    assert topics == [f"{ls.topic}/" for ls in LESSONS if ls.topic]
    assert lines[-1].endswith(f"lesson order (01..{LESSONS[-1].number})")


def test_check_mode_names_a_stale_file(tmp_path, monkeypatch, capsys):
    readme = tmp_path / "README.md"
    for name in ("README.md", "CONTRIBUTING.md"):
        (tmp_path / name).write_text((ROOT / name).read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "instructors").mkdir()
    (tmp_path / "instructors" / "README.md").write_text(
        (ROOT / "instructors" / "README.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "amp_lessons").mkdir()
    (tmp_path / "amp_lessons" / "__init__.py").write_text(
        (ROOT / "amp_lessons" / "__init__.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "notebooks").mkdir()
    start_here = (ROOT / "notebooks" / "00_start_here.ipynb").read_text(encoding="utf-8")
    (tmp_path / "notebooks" / "00_start_here.ipynb").write_text(start_here, encoding="utf-8")
    monkeypatch.setattr(registry_docs, "ROOT", tmp_path)
    assert registry_docs.main(["--check"]) == 0
    readme.write_text(readme.read_text(encoding="utf-8").replace("| 03 |", "| 3 |"), encoding="utf-8")
    assert registry_docs.main(["--check"]) == 1
    assert "README.md is stale" in capsys.readouterr().err
    assert registry_docs.main([]) == 0 and registry_docs.main(["--check"]) == 0


def test_lesson_00_names_every_lesson_in_order_from_the_registry():
    line = registry_docs.lesson_path()
    assert line.startswith("- After this start (00): 01 ") and line.endswith(f"{LESSONS[-1].title}.")
    flat = " ".join(line.split())
    assert [flat.index(f"{ls.number} {ls.title}") for ls in LESSONS[1:]] == sorted(
        flat.index(f"{ls.number} {ls.title}") for ls in LESSONS[1:]
    )
    assert max(len(x) for x in line.splitlines()) <= 110
