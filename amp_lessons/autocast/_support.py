"""What lesson 04 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "04",
    "04_autocast_policies.ipynb",
    "Autocast policies",
    50,
    "which op runs in which precision, where the casts go, CPU versus CUDA",
    topic="autocast",
    key_code=("torch.autocast(", "autocast.trace(", "torch.library.register_autocast(", "torch.amp.custom_fwd("),
    shows=(
        "the CPU and CUDA autocast policy tables of the installed torch (CUDA previewed with fake CUDA "
        "tensors), eligibility rules, the weight-cast cache and its stale casts, op-by-op dtype traces, the "
        "profiler tree and the cost of casts, custom ops, troubleshooting"
    ),
    exercises=(
        "predict each op's dtype under autocast, make a banned loss work under autocast, "
        "write a TorchDispatchMode cast counter"
    ),
)


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
