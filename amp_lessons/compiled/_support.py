"""What lesson 11 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "11",
    "11_compile.ipynb",
    "torch.compile and mixed precision",
    40,
    "the graph Dynamo captures of an autocast region, the casts Inductor fuses away, why compiled bf16 differs "
    "from eager, what compiles again and what does not (Inductor's settings stay with the first compile), step and "
    "compile times",
    topic="compiled",
    key_code=(
        "torch.compile(",
        "emulate_precision_casts",
        "torch._inductor.config.patch(",
        "backend=recorder",
        "torch._logging.set_logs(graph_code=True)",
        'options={"emulate_precision_casts": True}',
        "torch._dynamo.reset()",
    ),
    shows=(
        "`torch.compile` and mixed precision, measured on this machine's CPU (Inductor generates C++; "
        "needs a C++ compiler): the graph Dynamo captures of an autocast region, eager's casts against the "
        "kernels Inductor generates, compiled bf16 against eager and fp64 with and without "
        "`emulate_precision_casts`, what compiles again (guards) and what does not (Inductor's settings: `options=`, "
        "`torch._dynamo.reset()`), step and compile times, the fp8 cast probed eager and compiled"
    ),
    exercises="the fused kernel's roundings, bit for bit, with and without emulation; compiling to match eager "
    "(`emulate_precision_casts`)",
)


def runs_where(report) -> course.Runs:
    """Lesson 11 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`)."""
    course.check_report(report)
    return course.Runs(
        "native",
        "torch.compile with Inductor's CPU backend (generated C++, needs a C++ compiler) on this CPU; on a GPU "
        "Inductor would generate Triton kernels instead",
    )
