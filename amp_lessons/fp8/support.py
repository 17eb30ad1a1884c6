"""What lesson 07 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "07",
    "07_fp8.ipynb",
    "fp8",
    50,
    "e4m3 and e5m2, per-tensor and block scaling, scaled matmuls",
    topic="fp8",
    key_code=(
        "torch.autograd.Function",
        "ctx.save_for_backward(",
        "torch._scaled_mm(",
        "torch.float8_e4m3fn",
        "amax_scale(",
        "fake_quantize(",
        ".amax(dim=(1, 3))",
    ),
    shows=(
        "e4m3 and e5m2 bit by bit, what casts do on overflow, why fp8 needs scaling (per-tensor, delayed, "
        "block-wise) on a real model's tensors, `torch._scaled_mm` against an exact emulation, a miniature "
        "fp8 linear layer"
    ),
    exercises="the hybrid recipe's formats, the per-tensor scale, an fp8 linear forward",
)


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
