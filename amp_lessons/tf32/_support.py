"""What lesson 02 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "02",
    "02_tf32.ipynb",
    "TF32",
    40,
    "what TF32 matmuls cost in accuracy and buy in speed; the switches",
    topic="tf32",
    key_code=("tf32.emulated_matmul(", "torch.backends.cuda.matmul.fp32_precision"),
    shows=(
        "TF32's switches (current and legacy API), its error against fp64 (real on an Ampere+ GPU; "
        "elsewhere modelled: inputs rounded to TF32 bit-exactly, products summed in float32), error "
        "against K, speed with GPU references"
    ),
    exercises="round to TF32 on the bits and a TF32 matmul by hand, predict the error ratio of two input formats",
)


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
