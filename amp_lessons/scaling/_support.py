"""What lesson 05 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "05",
    "05_loss_scaling.ipynb",
    "Loss scaling",
    50,
    "gradient histograms, static and dynamic scaling, GradScaler's state machine",
    topic="scaling",
    key_code=(
        "torch.amp.GradScaler(",
        "scaler.scale(",
        "scaler.step(",
        "scaler.update(",
        "scaler.unscale_(",
        "torch.autocast(",
        "update_scale(",
    ),
    shows=(
        "gradient histograms against fp16's range, a scale slider and the safe window, loss scaling from "
        "scratch checked against `GradScaler`, its state machine with sliders (a scale that reaches 0: a stall or "
        "NaN weights, and a floor), training with and without "
        "scaling, the full recipe's pitfalls"
    ),
    exercises="GradScaler's update rule, smallest safe scale",
)


def runs_where(report) -> course.Runs:
    """Lesson 05 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "GradScaler('cpu') with fp16 autocast on a small model, on the CPU whatever the machine has (on a GPU "
        f"the recipe is the same with the device 'cuda'){course.apple_gpu_unused(report)}",
    )
