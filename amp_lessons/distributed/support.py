"""What lesson 09 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 09 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): the same on every
    machine."""
    course.check_report(report)
    return course.Runs(
        "partly emulated",
        "real DDP and FSDP2 steps on 2-4 CPU processes joined by gloo (the lesson runs no NCCL or GPU "
        "collective); reductions over thousands of ranks emulated bit-exactly, checked against gloo",
    )
