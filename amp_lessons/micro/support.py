"""What lesson 10 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["runs_where"]


def runs_where(report) -> course.Runs:
    """Lesson 10 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): the same on every
    machine."""
    course.check_report(report)
    return course.Runs(
        "emulated",
        "fp4/fp6/e8m0 formats and MX/NVFP4 block scaling rounded bit-exactly by the formats engine (native "
        "only on Blackwell-class GPUs, which the lesson does not use); stochastic rounding and Kahan run on the CPU",
    )
