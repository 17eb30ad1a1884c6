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
        "def to_fp8(",
    ),
    shows=(
        "e4m3 and e5m2 bit by bit, what casts do on overflow, why fp8 needs scaling (per-tensor, delayed, "
        "block-wise) on a real model's tensors, `torch._scaled_mm` against an exact emulation, what the amax and "
        "cast passes add to an fp8 matmul (H200 reference and this machine), a miniature fp8 linear layer"
    ),
    exercises="the hybrid recipe's formats, the per-tensor scale, an fp8 linear layer's backward",
)


def runs_where(report) -> course.Runs:
    """Lesson 07 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): its fp8 casts are
    emulated bit-exactly on the CPU on every machine; torch._scaled_mm and the cast-cost table run on the default
    device (a CUDA GPU where there is one); fp8 speed is measured on a GPU with fp8 tensor cores, else it is the H100
    and H200 references."""
    course.check_report(report)
    g = report.gpu
    if g is not None and g.fp8:
        return course.Runs(
            "partly emulated",
            f"fp8 casts emulated bit-exactly on the CPU; torch._scaled_mm and the cost of the fp8 casts measured on "
            f"the {g.name}'s fp8 tensor cores",
            ("cpu", "cuda"),
        )
    why = course.gpu_lacks(report, "fp8", "no CUDA GPU with fp8 tensor cores", tensor_cores=True)
    on_gpu = report.device == "cuda"
    return course.Runs(
        "partly emulated" if on_gpu else "emulated",
        f"fp8 casts emulated on the CPU, torch._scaled_mm run on the {'GPU' if on_gpu else 'CPU'} ({why}); speed "
        f"from the H100 and H200 references{course.apple_gpu_unused(report)}",
        ("cpu", "cuda") if on_gpu else ("cpu",),
    )
