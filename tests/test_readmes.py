"""The hand-written text of the READMEs agrees with the course: the workshop's days, the presenter, what is emulated.
(The tables written from the registry are diffed by tests/test_registry_docs.py.)"""

from __future__ import annotations

from pathlib import Path

from amp_lessons.lessons import workshop_schedule

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
INSTRUCTORS = (ROOT / "instructors" / "README.md").read_text(encoding="utf-8")
DAYS = {1: "one", 2: "two", 3: "three"}


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
