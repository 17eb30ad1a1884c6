"""The course's lessons, in order: lesson 00 and the lesson each topic declares (``amp_lessons.<topic>._support.LESSON``).

Every list of lessons and topics derives from :data:`LESSONS`: the tests' topic lists, the browser tests, the
docs that ``make docs`` writes, what runs where on a machine (:func:`what_runs_where`) and the workshop schedule
(:func:`workshop_schedule`). A new lesson is its own notebook and topic folder plus its topic in the list below.
This module sits above the topics: it imports them, and no topic imports it.

``python -m amp_lessons.lessons [--start HH:MM] ...`` prints the workshop schedule (Markdown).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

from ._validate import int_in
from .course import Lesson, LessonSupport, Runs, Schedule, WhatRunsWhere, check_report

__all__ = [
    "DAY_TWO",
    "LESSONS",
    "START_HERE",
    "TOPICS",
    "what_runs_where",
    "workshop_schedule",
]

#: Lesson 00: the plan and this machine's report; it has no topic of its own.
START_HERE = Lesson(
    "00",
    "00_start_here.ipynb",
    "Start here",
    15,
    "what the course teaches, this machine's hardware report, how to work the notebooks",
    shows="the plan, your machine's hardware report, what runs natively / emulated / as reference",
)

#: The topics in lesson order (01..11), by name: ``amp_lessons.<topic>._support`` declares each one's lesson. A new
#: lesson is one more name here.
_TOPICS_IN_ORDER = (
    "bits",
    "tf32",
    "fp16",
    "autocast",
    "scaling",
    "e2e",
    "fp8",
    "debug",
    "distributed",
    "micro",
    "compiled",
)

_TOPIC = {name: importlib.import_module(f"{__package__}.{name}._support") for name in _TOPICS_IN_ORDER}

LESSONS: tuple[Lesson, ...] = (START_HERE, *(topic.LESSON for topic in _TOPIC.values()))
"""The lessons in order."""

for _name, _topic in _TOPIC.items():
    if _topic.LESSON.topic != _name:
        raise ImportError(f"amp_lessons.{_name}.LESSON names the topic {_topic.LESSON.topic!r}, not {_name!r}")

TOPICS: tuple[str, ...] = tuple(lesson.topic for lesson in LESSONS if lesson.topic)
"""The lesson topics (sub-packages of amp_lessons), in lesson order: every list of topics derives from this."""


def what_runs_where(report) -> WhatRunsWhere:
    """For each lesson, what runs natively on the machine of ``report`` (an
    :class:`amp_lessons.device.DeviceReport`), what is emulated, what is shown from reference measurements.

    Each topic answers for its own lesson (``amp_lessons.<topic>.runs_where(report)``), following what its cells
    do on that machine: they run on ``report.device`` (CUDA GPU or CPU), never on an Apple GPU; NVIDIA formats come
    from the compute-capability table, AMD formats are not classified (TF32 and fp8 are treated as absent, bf16
    follows torch.cuda.is_bf16_supported()).
    """
    check_report(report)
    rows = []
    for lesson in LESSONS:
        if lesson.topic is None:
            runs = Runs("native", "this report, probed from the CPU")
        else:
            runs = _TOPIC[lesson.topic].runs_where(report)
            if not isinstance(runs, Runs):
                raise TypeError(
                    f"amp_lessons.{lesson.topic}.runs_where returned {type(runs).__name__}, not a course.Runs"
                )
        rows.append(LessonSupport(lesson.number, lesson.title, runs.mode, runs.detail, runs.devices))
    return WhatRunsWhere(tuple(rows))


#: The lesson that opens the second day of a two-day workshop: day one teaches the foundations and the whole AMP
#: recipe (00-06); day two what comes after it (fp8, debugging, distributed training, microscaling, torch.compile).
DAY_TWO = "07"


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def workshop_schedule(
    start: str = "09:00",
    break_every: int = 90,
    break_minutes: int = 15,
    lunch_minutes: int = 45,
    notebooks_dir: str | Path | None = None,
    days: int = 2,
) -> Schedule:
    """A schedule through every lesson from ``start`` ("HH:MM"), with a break whenever at least
    ``break_every`` minutes have passed since the last one; the first break at or after 12:00 is
    lunch. ``days=2`` (the default) splits the course over two days, the second starting with lesson
    :data:`DAY_TWO` at ``start``; ``days=1`` runs it all in one (long) day. With ``notebooks_dir``, lessons
    whose notebook is not there are marked "coming"."""
    try:
        h, m = (int(v) for v in start.split(":"))
        if not (0 <= h < 24 and 0 <= m < 60):
            raise ValueError
    except (ValueError, AttributeError):
        raise ValueError(f"start must be a time like '09:00', got {start!r}") from None
    for name, v in (("break_every", break_every), ("break_minutes", break_minutes), ("lunch_minutes", lunch_minutes)):
        int_in(v, name, 1, allowed="a positive number of minutes")
    if isinstance(days, bool) or days not in (1, 2):
        raise ValueError(f"days must be 1 or 2, got {days!r}")
    if notebooks_dir is not None and not isinstance(notebooks_dir, (str, Path)):
        raise TypeError(f"notebooks_dir must be None or a folder (str or Path), got {type(notebooks_dir).__name__}")
    if notebooks_dir is not None and not Path(notebooks_dir).is_dir():
        raise ValueError(
            f"notebooks_dir={str(notebooks_dir)!r} is not a folder: give the folder that holds the notebooks"
        )
    t = h * 60 + m
    since_break, rows, had_lunch = 0, [], False
    for lesson in LESSONS:
        if days == 2 and lesson.number == DAY_TWO:
            rows.append((_clock(t), "day", f"end of day 1; day 2 starts at {start}", 0, ""))
            t, since_break, had_lunch = h * 60 + m, 0, False
        elif since_break >= break_every:
            lunch = not had_lunch and t >= 12 * 60
            had_lunch |= lunch
            length = lunch_minutes if lunch else break_minutes
            rows.append((_clock(t), "break", "lunch" if lunch else "break", length, ""))
            t, since_break = t + length, 0
        status = "ready"
        if notebooks_dir is not None and not (Path(notebooks_dir) / lesson.notebook).exists():
            status = "coming"
        rows.append((_clock(t), lesson.number, lesson.title, lesson.minutes, status))
        t += lesson.minutes
        since_break += lesson.minutes
    return Schedule(tuple(rows), _clock(t))


def main(argv: list[str] | None = None) -> int:
    """``python -m amp_lessons.lessons [--start HH:MM] ...``: print the workshop schedule (Markdown)."""
    parser = argparse.ArgumentParser(prog="python -m amp_lessons.lessons", description=main.__doc__)
    parser.add_argument("--start", default="09:00")
    parser.add_argument("--break-every", type=int, default=90)
    parser.add_argument("--break-minutes", type=int, default=15)
    parser.add_argument("--lunch-minutes", type=int, default=45)
    parser.add_argument("--days", type=int, default=2, choices=(1, 2))
    args = parser.parse_args(argv)
    try:
        schedule = workshop_schedule(
            args.start, args.break_every, args.break_minutes, args.lunch_minutes, days=args.days
        )
    except ValueError as e:
        parser.error(str(e))
    print(schedule.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
