"""What a lesson is (:class:`Lesson`), what it runs on a machine (:class:`Runs`, :class:`WhatRunsWhere` and the
helpers of each topic's ``runs_where``) and a workshop schedule (:class:`Schedule`)."""

from __future__ import annotations

from dataclasses import dataclass

from ._table import Cell, html_table
from ._validate import flag

__all__ = [
    "Lesson", "LessonSupport", "MODES", "Runs", "Schedule", "WhatRunsWhere", "apple_gpu_unused", "check_report",
    "gpu_lacks", "lesson_devices"
]  # fmt: skip


@dataclass(frozen=True)
class Lesson:
    number: str
    notebook: str
    title: str
    minutes: int
    summary: str
    topic: str | None = None  # amp_lessons.<topic>; None for lesson 00
    key_code: tuple[str, ...] = ()  # calls the lesson's own code cells must contain
    shows: str = ""  # what the learner sees (README.md's lesson table)
    exercises: str = ""  # the graded exercises, "" for none (instructors/README.md's solutions table)


MODES: tuple[str, ...] = ("native", "emulated", "partly emulated", "reference")
"""How a lesson runs on a machine: natively, emulated, partly emulated, or from reference measurements."""


@dataclass(frozen=True)
class Runs:
    """What one lesson runs on a given machine (``amp_lessons.<topic>.runs_where(report)``): ``mode`` (one of
    :data:`MODES`), ``detail`` (what and why) and ``devices`` ("cpu" and/or "cuda")."""

    mode: str
    detail: str
    devices: tuple[str, ...] = ("cpu",)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r} is not allowed: use one of {', '.join(map(repr, MODES))}")
        if not isinstance(self.detail, str) or not self.detail:
            raise ValueError(f"detail={self.detail!r} is not allowed: say what the lesson runs, in words")
        if not isinstance(self.devices, tuple) or not self.devices or not set(self.devices) <= {"cpu", "cuda"}:
            raise ValueError(f"devices={self.devices!r} is not allowed: a tuple of 'cpu' and/or 'cuda'")


@dataclass(frozen=True)
class LessonSupport:
    """What one lesson runs on a given machine: ``mode`` is how, ``detail`` says what and why."""

    lesson: str
    title: str
    mode: str  # one of MODES
    detail: str
    devices: tuple[str, ...] = ("cpu",)  # where the lesson's cells run their experiments: "cpu" and/or "cuda"


@dataclass(frozen=True)
class WhatRunsWhere:
    """Every lesson's :class:`LessonSupport` on one machine, in lesson order, shown as a table."""

    rows: tuple[LessonSupport, ...]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        lines = ["What each lesson runs here:"]
        lines += [f"  {s.lesson} {s.title:<38} {s.mode:<16} {s.detail}" for s in self.rows]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        tone = {"native": "good", "emulated": "warn", "partly emulated": "warn", "reference": "muted"}
        rows = [[s.lesson, s.title, Cell(s.mode, tone=tone[s.mode], bold=True), s.detail] for s in self.rows]
        return html_table(("lesson", "title", "mode", "detail"), rows, title="What each lesson runs here")


def gpu_lacks(report, feature: str, no_gpu: str, *, tensor_cores: bool = False) -> str:
    """Why ``feature`` (say "fp8") does not run natively on the GPU of ``report`` (``no_gpu``: the reason without
    one; ``tensor_cores``: the feature is a kind of tensor core)."""
    g = check_report(report).gpu
    for value, what in ((feature, "feature"), (no_gpu, "no_gpu")):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{what} must be a non-empty str (words of the reason), got {value!r}")
    flag(tensor_cores, "tensor_cores")
    if g is None:
        return no_gpu
    if g.rocm:
        return f"{feature} on the {g.name} (AMD) is not classified here"
    return f"the {g.name} has no {feature}{' tensor cores' if tensor_cores else ''}"


def check_report(report):
    """``report`` if it is a :class:`amp_lessons.device.DeviceReport` (known by its fields), else a TypeError."""
    if not all(hasattr(report, k) for k in ("gpu", "cpu", "apple_gpu", "device", "mps_autocast")):
        raise TypeError(
            f"report must be a DeviceReport (from amp_lessons.device.device_report()), got {type(report).__name__}"
        )
    return report


def apple_gpu_unused(report) -> str:
    """The words a lesson adds on a Mac whose Apple GPU torch can use and the lessons do not (else "")."""
    report = check_report(report)
    return "; on the CPU (the Apple GPU is not used)" if report.apple_gpu is not None and report.gpu is None else ""


def lesson_devices(report, *, cpu_part: bool = False) -> tuple[str, ...]:
    """Where a lesson on ``default_device()`` runs its cells on ``report``'s machine (``cpu_part``: and the CPU)."""
    flag(cpu_part, "cpu_part")
    if check_report(report).gpu is None:
        return ("cpu",)
    return ("cpu", "cuda") if cpu_part else ("cuda",)


@dataclass(frozen=True)
class Schedule:
    rows: tuple[tuple[str, str, str, int, str], ...]  # (start, lesson, title, minutes, status); "day" rows split days
    end: str

    @property
    def teaching_minutes(self) -> int:
        return sum(r[3] for r in self.rows if r[1] not in ("break", "day"))

    @property
    def days(self) -> int:
        return 1 + sum(r[1] == "day" for r in self.rows)

    def __repr__(self) -> str:
        lines = [f"{'start':<6} {'lesson':<7} {'min':>4}  title"]
        for s, n, t, m, st in self.rows:
            if n == "day":
                lines.append(f"{s:<6} {'':<7} {'':>4}  {t}")
            else:
                lines.append(f"{s:<6} {n:<7} {m:>4}  {t}{'  (' + st + ')' if st not in ('ready', '') else ''}")
        lines.append(f"{self.end:<6} end    ({self.teaching_minutes} min of lessons)")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The schedule as a Markdown table (instructors/README.md holds the default workshop's)."""
        lines = ["| start | lesson | title | minutes |", "|---|---|---|---|"]
        for s, n, t, m, _ in self.rows:
            if n == "day":
                lines.append(f"| {s} | — | **{t}** | |")
            else:
                lines.append(f"| {s} | {'—' if n == 'break' else n} | {t} | {m} |")
        lines.append(f"| {self.end} | end | {self.teaching_minutes} min of lessons | |")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [[s, "" if n == "day" else n, t, "" if n == "day" else str(m), st] for s, n, t, m, st in self.rows]
        rows.append([self.end, "end", f"{self.teaching_minutes} min of lessons", "", ""])
        return html_table(("start", "lesson", "title", "minutes", "status"), rows)
