"""What lesson 04 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 04 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    g = report.gpu
    both = course.lesson_devices(report, cpu_part=True)
    if g is None:
        mps = (
            f"; {report.mps_autocast}, but the lesson does not use the Apple GPU"
            if report.apple_gpu is not None
            else ""
        )
        return course.Runs(
            "partly emulated", f"CPU autocast runs here; the CUDA policy is previewed with fake CUDA tensors{mps}"
        )
    if g.rocm:
        return course.Runs(
            "native", f"CPU and CUDA autocast both run here (on ROCm, torch's 'cuda' device is the {g.name})", both
        )
    if not g.bf16:
        return course.Runs(
            "native",
            f"CPU and CUDA autocast both run here; the {g.name} has no bf16 tensor cores, so CUDA "
            "bf16 autocast runs emulated (slow)",
            both,
        )
    return course.Runs(
        "native", "CPU and CUDA autocast both run here; the CUDA policy is also previewed with fake CUDA tensors", both
    )
