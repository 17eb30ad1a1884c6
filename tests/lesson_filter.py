"""One lesson's tests, for the edit loop (``make test LESSON=05``): its topic's own tests (``tests/<topic>/``), its
notebook under nbval, and its rows of every promise module (the top-level ``tests/test_*.py`` tests parametrized
over the lessons: a row is the lesson's when its parameter names the lesson's number, notebook, topic, or a name
of the topic, public or private). Everything else, other lessons, the presenter, the browser tests and the registry-wide checks,
is left to the full ``make test``."""

from __future__ import annotations

import re

from amp_lessons.lessons import LESSONS, TOPICS
from tests.faces import internals


def lesson_of(number: str):
    """The lesson numbered ``number`` ("05" or "5"), or a ValueError listing the numbers there are."""
    for lesson in LESSONS:
        if lesson.number == str(number).zfill(2):
            return lesson
    raise ValueError(f"LESSON={number!r} is not a lesson: use one of {', '.join(ls.number for ls in LESSONS)}")


def _names(lesson) -> set[str]:
    names = {lesson.number, lesson.notebook, lesson.notebook.removesuffix(".ipynb")}
    if lesson.topic:
        names |= {lesson.topic, *vars(internals(lesson.topic))}
    return names


def keeps(nodeid: str, lesson, names: set[str] | None = None) -> bool:
    """Whether the test ``nodeid`` (relative to the repository) is one of ``lesson``'s."""
    names = _names(lesson) if names is None else names
    path, _, rest = nodeid.partition("::")
    if path == f"notebooks/{lesson.notebook}":
        return True
    if lesson.topic and path.startswith(f"tests/{lesson.topic}/"):
        return True
    if not re.fullmatch(r"tests/test_\w+\.py", path) or "[" not in rest:
        return False
    param = rest[rest.index("[") + 1 : -1]
    return param in names or any(token in names for token in re.split(r"[^\w.]+|\.(?!ipynb)", param))


def skips(path: str, lesson) -> bool:
    """Whether the file or folder ``path`` (relative to the repository, "/"-separated) holds none of ``lesson``'s
    tests, so that pytest need not collect it: another lesson's notebook, or another topic's ``tests/<topic>/``.
    Whatever it holds, :func:`keeps` would drop every test of it."""
    folder, _, name = path.partition("/")
    if folder == "notebooks" and "/" not in name and name.endswith(".ipynb"):
        return name != lesson.notebook
    if folder == "tests" and "/" not in name:
        return name in TOPICS and name != lesson.topic
    return False


def select(items, number: str) -> tuple[list, list]:
    """(kept, deselected) of pytest's collected ``items``."""
    lesson = lesson_of(number)
    names = _names(lesson)
    kept, dropped = [], []
    for item in items:
        (kept if keeps(item.nodeid, lesson, names) else dropped).append(item)
    return kept, dropped
