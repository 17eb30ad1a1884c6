"""The lesson list and the workshop schedule computed from it."""

from pathlib import Path

import pytest

from amp_lessons.lessons import LESSONS, workshop_schedule

ROOT = Path(__file__).resolve().parent.parent


def test_lessons_are_ordered_and_named_after_their_notebooks():
    assert [lesson.number for lesson in LESSONS] == [f"{i:02d}" for i in range(len(LESSONS))]
    for lesson in LESSONS:
        assert lesson.notebook.startswith(lesson.number + "_") and lesson.notebook.endswith(".ipynb")
        assert lesson.minutes > 0


def test_every_notebook_in_the_repo_is_a_listed_lesson():
    listed = {lesson.notebook for lesson in LESSONS}
    on_disk = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
    assert on_disk <= listed, f"notebooks missing from lessons.LESSONS: {sorted(on_disk - listed)}"


def _minutes(clock: str) -> int:
    return int(clock[:2]) * 60 + int(clock[3:])


@pytest.mark.parametrize("days", [1, 2])
def test_schedule_adds_up(days):
    s = workshop_schedule("09:00", break_every=90, break_minutes=15, lunch_minutes=45, days=days)
    assert s.rows[0][:2] == ("09:00", "00") and s.days == days
    assert s.teaching_minutes == sum(lesson.minutes for lesson in LESSONS)
    breaks = [r for r in s.rows if r[1] == "break"]
    assert [r[2] for r in breaks].count("lunch") == days  # one lunch a day
    # each start time is the previous start plus its length; a new day starts at 09:00 again
    for (s0, _, _, m0, _), (s1, n1, *_rest) in zip(s.rows, s.rows[1:]):
        assert _minutes(s1) - _minutes(s0) == m0 or (n1 == "07" and days == 2 and s1 == "09:00")
    # every day ends by 17:30; in one day the course runs long (the reason for two)
    ends = [r[0] for r in s.rows if r[1] == "day"] + [s.end]
    assert len(ends) == days
    if days == 2:
        assert all(_minutes(e) <= 17 * 60 + 30 for e in ends)
        assert [r[1] for r in s.rows if r[1] not in ("break", "day")].index("07") == 7  # day 2 opens with lesson 07
    else:
        assert _minutes(s.end) > 19 * 60
    assert "lunch" in repr(s) and "<table" in s._repr_html_()


def test_schedule_marks_missing_notebooks(tmp_path):
    (tmp_path / LESSONS[0].notebook).write_text("{}")
    s = workshop_schedule(notebooks_dir=tmp_path)
    status = {r[1]: r[4] for r in s.rows if r[1] != "break"}
    assert status["00"] == "ready" and status["07"] == "coming"


def test_markdown_schedule():
    md = workshop_schedule().to_markdown()
    lines = md.splitlines()
    assert lines[0] == "| start | lesson | title | minutes |"
    assert lines[2] == "| 09:00 | 00 | Start here | 15 |"
    assert lines[-1].startswith("| ") and "min of lessons" in lines[-1]
    assert len(lines) == 2 + len(workshop_schedule().rows) + 1


def test_course_command_line(capsys):
    from amp_lessons.lessons import main

    assert main(["--start", "13:00"]) == 0
    assert "| 13:00 | 00 | Start here | 15 |" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["--start", "25:00"])
    assert "start must be a time like '09:00', got '25:00'" in capsys.readouterr().err


def test_the_registry_names_every_topic_package():
    """Every lesson after 00 has a topic, a sub-package of amp_lessons; every sub-package is a lesson's topic (the
    docs that list them are written from the registry: tests/test_registry_docs.py)."""
    import amp_lessons
    from amp_lessons.lessons import TOPICS

    root = Path(amp_lessons.__file__).parent
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    assert set(TOPICS) == packages and len(TOPICS) == len(LESSONS) - 1
    assert [lesson.topic is None for lesson in LESSONS] == [True] + [False] * len(TOPICS)


def test_each_topic_answers_for_its_own_lesson(monkeypatch):
    """What runs where is asked of each lesson's topic (``amp_lessons.<topic>._support.runs_where``) and put in lesson order
    with the registry's numbers and titles; the device probes do not import the course."""
    import importlib

    from amp_lessons import device, lessons
    from amp_lessons.course import Runs
    from amp_lessons.lessons import what_runs_where

    report = device.device_report(no_gpu=True)
    rows = list(what_runs_where(report))
    assert [(s.lesson, s.title) for s in rows] == [(ls.number, ls.title) for ls in LESSONS]
    for lesson, row in zip(LESSONS[1:], rows[1:]):
        runs = importlib.import_module(f"amp_lessons.{lesson.topic}._support").runs_where(report)
        assert isinstance(runs, Runs) and (runs.mode, runs.detail, runs.devices) == (row.mode, row.detail, row.devices)
    monkeypatch.setattr(importlib.import_module("amp_lessons.tf32._support"), "runs_where", lambda report: "native")
    with pytest.raises(TypeError, match="amp_lessons.tf32.runs_where returned str, not a course.Runs"):
        lessons.what_runs_where(report)
