"""What lesson 01 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 01 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "on the CPU: fp16/bf16/fp8 rounding by torch's own casts; TF32, fp6 and fp4 emulated bit-exactly "
        "by the formats engine (they are not torch dtypes)",
    )
