"""What lesson 07 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 07 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): its fp8 casts and
    torch._scaled_mm run on the CPU on every machine (small, exact, comparable); the speed of fp8 tensor cores is
    the H100 reference."""
    course.check_report(report)
    g = report.gpu
    if g is not None and g.fp8:
        why = f"the {g.name} has fp8 tensor cores, which the lesson's cells do not use"
    else:
        why = course.gpu_lacks(report, "fp8", "no CUDA GPU with fp8 tensor cores", tensor_cores=True)
    return course.Runs(
        "emulated",
        f"fp8 casts and torch._scaled_mm run on the CPU ({why}); speed from the H100 reference"
        f"{course.apple_gpu_unused(report)}",
    )
