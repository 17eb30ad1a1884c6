"""What lesson 02 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 02 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    g = report.gpu
    gpu = course.lesson_devices(report)
    if g is not None and g.tf32:
        return course.Runs("native", f"real TF32 matmuls on the {g.name}", gpu)
    why = course.gpu_lacks(report, "TF32", "no CUDA GPU")
    return course.Runs(
        "emulated",
        f"{why}: TF32 modelled (inputs rounded bit-exactly, fp32 sums); GPU speed from reference"
        f"{course.apple_gpu_unused(report)}",
        gpu,
    )
