"""What lesson 08 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "08",
    "08_debugging.ipynb",
    "When mixed precision goes wrong",
    60,
    "a symptom index with a repro per symptom; an overflow tracer, a speed triage and a dtype map for any model",
    topic="debug",
    key_code=(
        "debug.trace_overflow(",
        "debug.why_not_faster(",
        "torch.autograd.detect_anomaly(",
        "scaler.unscale_(",
        "torch.autocast(device_type, enabled=False)",
        "register_forward_hook(",
    ),
    shows=(
        "a symptom index (16 symptoms, each with a repro, the diagnosis, the fix shown working and its "
        "public source: NaN loss that GradScaler cannot fix, a loss scale that halves forever, Adam's eps "
        "in fp16, scaler errors and warnings, masked softmax, dtype errors at autocast boundaries, custom "
        'autograd functions, "AMP is not faster"); a toolkit for any model: overflow/underflow tracer, '
        "speed triage, dtype map"
    ),
    exercises=(
        "a forward hook that finds the first module whose output is not finite; the first layer that overflows "
        "fp16; a fix that keeps it in fp32"
    ),
)


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
