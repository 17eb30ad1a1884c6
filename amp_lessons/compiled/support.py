"""What lesson 11 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 11 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "torch.compile with Inductor's CPU backend (generated C++, needs a C++ compiler) on this CPU; on a GPU "
        "Inductor would generate Triton kernels instead",
    )
