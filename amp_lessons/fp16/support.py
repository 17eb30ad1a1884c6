"""What lesson 03 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 03 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        f"fp16/bf16 tensors and sums run on any device (kept small on CPU){course.apple_gpu_unused(report)}",
    )
