"""What lesson 08 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 08 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    if report.gpu is not None:
        return course.Runs(
            "native",
            "the repros and the toolkit run on the CPU; one cell shows that torch.amp.GradScaler() without a device "
            "is enabled here (it means 'cuda')",
            course.lesson_devices(report, cpu_part=True),
        )
    return course.Runs(
        "partly emulated",
        "fp16/bf16 repros run on this CPU (kept tiny); fp16 gradient underflow emulated bit-exactly; "
        f"GPU-only symptoms shown as CPU analogues with public references{course.apple_gpu_unused(report)}",
    )
