"""The course's lessons, in order, and a workshop schedule computed from their time estimates."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

__all__ = ["LESSONS", "Lesson", "Schedule", "workshop_schedule"]


@dataclass(frozen=True)
class Lesson:
    number: str
    notebook: str
    title: str
    minutes: int
    summary: str


LESSONS: tuple[Lesson, ...] = (
    Lesson("00", "00_start_here.ipynb", "Start here", 15,
           "what the course teaches, this machine's hardware report, how to work the notebooks"),
    Lesson("01", "01_float_formats.ipynb", "Floating-point formats and their bits", 45,
           "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error"),
    Lesson("02", "02_tf32.ipynb", "TF32", 40,
           "what TF32 matmuls cost in accuracy and buy in speed; the switches"),
    Lesson("03", "03_fp16_overflow_underflow.ipynb", "fp16 overflow, underflow and swamping", 50,
           "the failure modes that mixed precision is designed around"),
    Lesson("04", "04_autocast_policies.ipynb", "Autocast policies", 50,
           "which op runs in which precision, where the casts go, CPU versus CUDA"),
    Lesson("05", "05_loss_scaling.ipynb", "Loss scaling", 50,
           "gradient histograms, static and dynamic scaling, GradScaler's state machine"),
    Lesson("06", "06_amp_end_to_end.ipynb", "AMP end to end", 60,
           "tensor cores, speed, memory and accuracy of real training and inference"),
    Lesson("07", "07_fp8.ipynb", "fp8", 50,
           "e4m3 and e5m2, per-tensor and block scaling, scaled matmuls"),
)


@dataclass(frozen=True)
class Schedule:
    rows: tuple[tuple[str, str, str, int, str], ...]  # (start, lesson, title, minutes, status)
    end: str

    @property
    def teaching_minutes(self) -> int:
        return sum(r[3] for r in self.rows if r[1] != "break")

    def __repr__(self) -> str:
        lines = [f"{'start':<6} {'lesson':<7} {'min':>4}  title"]
        lines += [f"{s:<6} {n:<7} {m:>4}  {t}{'  (' + st + ')' if st not in ('ready', '') else ''}" for s, n, t, m, st in self.rows]
        lines.append(f"{self.end:<6} end    ({self.teaching_minutes} min of lessons)")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The schedule as a Markdown table (instructors/README.md holds the default day's)."""
        lines = ["| start | lesson | title | minutes |", "|---|---|---|---|"]
        for s, n, t, m, _ in self.rows:
            lines.append(f"| {s} | {'—' if n == 'break' else n} | {t} | {m} |")
        lines.append(f"| {self.end} | end | {self.teaching_minutes} min of lessons | |")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td>{s}</td><td>{n}</td><td style='text-align:left'>{html.escape(t)}</td><td>{m}</td>"
            f"<td>{html.escape(st)}</td></tr>" for s, n, t, m, st in self.rows)
        return ("<table><tr><th>start</th><th>lesson</th><th style='text-align:left'>title</th><th>minutes</th>"
                f"<th>status</th></tr>{body}<tr><td>{self.end}</td><td colspan=4 style='text-align:left'>"
                f"end ({self.teaching_minutes} min of lessons)</td></tr></table>")


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def workshop_schedule(start: str = "09:00", break_every: int = 90, break_minutes: int = 15,
                      lunch_minutes: int = 45, notebooks_dir: str | Path | None = None) -> Schedule:
    """A schedule through every lesson from ``start`` ("HH:MM"), with a break whenever at least
    ``break_every`` minutes have passed since the last one; the first break at or after 12:00 is
    lunch. With ``notebooks_dir``, lessons whose notebook is not there are marked "coming"."""
    try:
        h, m = (int(v) for v in start.split(":"))
        if not (0 <= h < 24 and 0 <= m < 60):
            raise ValueError
    except (ValueError, AttributeError):
        raise ValueError(f"start must be a time like '09:00', got {start!r}") from None
    for name, v in (("break_every", break_every), ("break_minutes", break_minutes), ("lunch_minutes", lunch_minutes)):
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive number of minutes, got {v!r}")
    t = h * 60 + m
    since_break, rows, had_lunch = 0, [], False
    for lesson in LESSONS:
        if since_break >= break_every:
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
    """``python -m amp_lessons.course [--start HH:MM] ...``: print the workshop schedule (Markdown)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m amp_lessons.course", description=main.__doc__)
    parser.add_argument("--start", default="09:00")
    parser.add_argument("--break-every", type=int, default=90)
    parser.add_argument("--break-minutes", type=int, default=15)
    parser.add_argument("--lunch-minutes", type=int, default=45)
    args = parser.parse_args(argv)
    try:
        schedule = workshop_schedule(args.start, args.break_every, args.break_minutes, args.lunch_minutes)
    except ValueError as e:
        parser.error(str(e))
    print(schedule.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
