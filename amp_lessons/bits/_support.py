"""What lesson 01 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "01",
    "01_float_formats.ipynb",
    "Floating-point formats and their bits",
    50,
    "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error",
    topic="bits",
    shows=(
        "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error; bit explorer "
        "and format designer"
    ),
    exercises="largest finite value, bf16 ulp, decode an e4m3 byte, choose a format",
)


def runs_where(report) -> course.Runs:
    """Lesson 01 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "on the CPU: fp16/bf16/fp8 rounding by torch's own casts; TF32, fp6 and fp4 emulated bit-exactly "
        "by the formats engine (they are not torch dtypes)",
    )
