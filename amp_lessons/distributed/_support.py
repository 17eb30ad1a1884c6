"""What lesson 09 runs on a given machine: natively, emulated, or from reference measurements."""

from __future__ import annotations

from .. import course

__all__ = ["LESSON", "runs_where"]

#: The lesson this topic teaches: its entry in the course's list (amp_lessons.lessons.LESSONS).
LESSON = course.Lesson(
    "09",
    "09_distributed.ipynb",
    "Mixed precision at scale: DDP and FSDP2",
    60,
    "real gloo process groups: dtypes of DDP and FSDP2 steps, one scaler decision, bytes per parameter, "
    "the precision of gradient reduction",
    topic="distributed",
    key_code=(
        "DistributedDataParallel(",
        "torch.autocast(",
        "GradScaler(",
        "register_comm_hook(",
        "fully_shard(",
        "MixedPrecisionPolicy(",
        "run_group(",
    ),
    shows=(
        "mixed precision at scale on a real gloo process group of CPU processes: the dtype of every stage "
        "of a DDP + autocast step and of an FSDP2 `MixedPrecisionPolicy` step, one GradScaler decision on "
        "every rank (DDP, fp16 FSDP2), bytes per parameter measured (fp32, AMP, bf16-true, sharded), the "
        "error of bf16 vs fp32 gradient reduction up to 4096 ranks (emulated, checked against gloo), "
        "framework flags mapped"
    ),
    exercises="an fp16 FSDP2 step with a sharded loss scaler, a ring sum in bf16",
)


def runs_where(report) -> course.Runs:
    """Lesson 09 on the machine of ``report`` (an :class:`amp_lessons.device.DeviceReport`): the same on every
    machine."""
    course.check_report(report)
    return course.Runs(
        "partly emulated",
        "real DDP and FSDP2 steps on 2-4 CPU processes joined by gloo (the lesson runs no NCCL or GPU "
        "collective); reductions over thousands of ranks emulated bit-exactly, checked against gloo",
    )
