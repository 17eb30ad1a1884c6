"""What lesson 06 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


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
