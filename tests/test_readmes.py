"""The READMEs agree with the course's registry: the lessons, the workshop's days, which lessons have exercises
and where their solutions are. Text that a lesson change would make stale is checked here, not trusted."""

from __future__ import annotations

import json
import re
from pathlib import Path

from amp_lessons.lessons import LESSONS, workshop_schedule

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTRUCTORS = (ROOT / "instructors" / "README.md").read_text(encoding="utf-8")
PLACEHOLDER = re.compile(r"#\s*YOUR\b")
DAYS = {1: "one", 2: "two", 3: "three"}


def lessons_with_exercises() -> set[str]:
    """Lessons whose notebook has a code cell for the learner to fill in (a ``# YOUR ...`` placeholder)."""
    out = set()
    for lesson in LESSONS:
        cells = json.loads((ROOT / "notebooks" / lesson.notebook).read_text(encoding="utf-8"))["cells"]
        if any(c["cell_type"] == "code" and PLACEHOLDER.search("".join(c["source"])) for c in cells):
            out.add(lesson.number)
    return out


def solutions_table() -> dict[str, str]:
    """instructors/README.md's solutions table: lesson number -> the solutions file it names."""
    section = INSTRUCTORS.split("## Solutions", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*(\d\d)\b.*`(solutions_\d\d\.py)`", line)
        if m:
            rows[m.group(1)] = m.group(2)
    return rows


def test_the_lessons_without_an_exercise_are_named_right():
    m = re.search(r"Lessons? ([\d, and]+?) (?:has|have) no graded exercise", INSTRUCTORS)
    without = {ls.number for ls in LESSONS} - lessons_with_exercises()
    if not without:
        assert m is None, "every lesson has an exercise: drop the sentence"
        return
    assert m, "instructors/README.md should say which lessons have no graded exercise"
    assert set(re.findall(r"\d\d", m.group(1))) == without


def test_the_workshop_length_matches_the_schedule():
    days = workshop_schedule().days
    word = DAYS[days]
    for name, text in (("README.md", README), ("instructors/README.md", INSTRUCTORS)):
        for other in set(DAYS.values()) - {word}:
            assert f"{other}-day workshop" not in text, (
                f"{name} calls it a {other}-day workshop; the schedule has {days}"
            )
    assert f"{word}-day workshop" in INSTRUCTORS and f"Schedule: {word} day" in INSTRUCTORS


def test_the_presenter_is_described_as_it_works():
    """The presenter view shows one explorer per screen, not every explorer on one page."""
    for name, text in (("README.md", README), ("instructors/README.md", INSTRUCTORS)):
        assert "on one page" not in text, f"{name}: the presenter view is paged"


def test_the_readme_says_what_is_emulated_and_what_is_modelled():
    """A format's casts are emulated bit for bit; its arithmetic (TF32 and fp16 matmuls on a CPU) is a model, since
    the hardware's summation order is not reproduced: the README says so and never calls the arithmetic bit-exact."""
    intro = README.split("## ", 1)[0]
    assert "casts are emulated bit-exactly" in intro and "arithmetic is modelled" in intro, intro
    assert "lacks a format it is emulated bit-exactly" not in README
    tf32_row = next(line for line in README.splitlines() if "`02_tf32.ipynb`" in line)
    assert "modelled" in tf32_row and "emulated bit-exactly" not in tf32_row, tf32_row
