"""What lesson 10 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "10",
    "10_microscaling.ipynb",
    "Below 8 bits: microscaling, fp8 recipes, bf16 weights",
    45,
    "MX and NVFP4 block scales bit by bit, fp8 scaling recipes and fp4 quantizers side by side, stochastic rounding "
    "and Kahan updates",
    topic="micro",
    key_code=("def mx_block_quantize(", "def floor_shared_exponent(", "torch.frexp(", "mx_block_quantize(x, fmt)"),
    shows=(
        "below 8 bits: OCP MX (MXFP8, MXFP4) and NVFP4 block scales bit by bit, e8m0 and the floor vs "
        "round-up scale rules, fp8 scaling recipes and fp4 quantizers side by side on tensors with outliers and a "
        "gradient spike (and what an NVFP4 training recipe adds), "
        "stochastic rounding and Kahan-compensated bf16 weight updates (all emulated bit-exactly)"
    ),
    exercises="MX's RCEIL shared exponent, bf16 stochastic rounding written on the bits",
)


def runs_where(report) -> course.Runs:
    """Lesson 10 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): the same on every
    machine."""
    course.check_report(report)
    return course.Runs(
        "emulated",
        "fp4/fp6/e8m0 formats and MX/NVFP4 block scaling rounded bit-exactly by the formats engine (native "
        "only on Blackwell-class GPUs, which the lesson does not use); stochastic rounding and Kahan run on the CPU",
    )
