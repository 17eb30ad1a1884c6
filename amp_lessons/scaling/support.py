"""What lesson 05 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 05 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "GradScaler('cpu') with fp16 autocast on a small model, on the CPU whatever the machine has (on a GPU "
        f"the recipe is the same with the device 'cuda'){course.apple_gpu_unused(report)}",
    )
