"""What lesson 03 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "03",
    "03_fp16_overflow_underflow.ipynb",
    "fp16 overflow, underflow and swamping",
    50,
    "the failure modes that mixed precision is designed around",
    topic="fp16",
    key_code=("def sgd_step(", "quantize(weights, fmt)", "sgd_step("),
    shows=(
        "overflow (the 4096 x 16 sum explained correctly; the reductions that overflow and those that do not), "
        "swamping and Kahan summation, lost weight "
        "updates and fp32 master weights, a gradient census, and how a smaller loss pushes it under fp16's "
        "range; magnitude and sum explorers"
    ),
    exercises="Kahan (compensated) summation written in fp16, value where a running sum stalls",
)


def runs_where(report) -> course.Runs:
    """Lesson 03 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native", f"fp16/bf16 tensors and sums run on any device (kept small on CPU){course.apple_gpu_unused(report)}"
    )
