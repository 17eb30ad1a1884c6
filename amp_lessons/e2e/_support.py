"""What lesson 06 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "06",
    "06_amp_end_to_end.ipynb",
    "AMP end to end",
    60,
    "tensor cores, speed, memory and accuracy of real training and inference",
    topic="e2e",
    key_code=(
        "torch.autocast(",
        "GradScaler(",
        "scaler.scale(",
        "scaler.unscale_(",
        "clip_grad_norm_(",
        "scaler.step(",
        "scaler.update(",
    ),
    shows=(
        "tensor-core generations, matmul throughput by dtype and size, a small transformer trained with "
        "the AMP recipe (step time, peak memory, loss), inference by autocast vs cast weights, where fp16 "
        "inference overflows; checklist and troubleshooting"
    ),
    exercises=(
        "the AMP step with gradient clipping, in the recipe's order; one optimizer step accumulated over "
        "micro-batches (each loss divided by their number, one `step` and one `update`)"
    ),
)


def runs_where(report) -> course.Runs:
    """Lesson 06 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    g, c = report.gpu, report.cpu
    gpu = course.lesson_devices(report)
    on_cpu = course.apple_gpu_unused(report)
    if g is not None and g.rocm:
        if g.bf16:
            fmts = "fp16 and bf16"
        elif g.bf16_supported is False:
            fmts = "fp16 (bf16 run skipped: torch.cuda.is_bf16_supported() said no)"
        else:
            fmts = "fp16 (bf16 run skipped: bf16 support not probed)"
        return course.Runs(
            "native",
            f"{fmts} training and inference timed on the {g.name} (AMD: whether they run on its matrix "
            "cores is not classified here)",
            gpu,
        )
    if g is not None and g.bf16:
        return course.Runs("native", f"bf16 and fp16 training and inference timed on the {g.name}", gpu)
    if g is not None and g.fp16_tensor_cores:
        return course.Runs(
            "native",
            f"fp16 training and inference timed on the {g.name}; it has no bf16 tensor cores: bf16 "
            "runs emulated (slow) and the bf16 training run is skipped",
            gpu,
        )
    if c.bf16_hardware:
        return course.Runs(
            "partly emulated",
            f"bf16 measured on this CPU (it has bf16 instructions); fp16 and GPU speed-ups from reference{on_cpu}",
        )
    return course.Runs(
        "reference",
        "this CPU has no bf16/fp16 matrix instructions: fp32 and bf16 training measured here on a model "
        f"scaled to the bf16 rate measured first (bf16 is slower here); GPU speed-ups from reference{on_cpu}",
    )
