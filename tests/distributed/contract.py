"""Lesson 09's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.distributed._checks``, keyed by its name."""

from tests.checker_rows import Row


def _fsdp_starter(rank, world_size, batches):
    from amp_lessons.distributed.key_code import tiny_mlp

    model = tiny_mlp()
    model(batches[rank]).float().square().mean()
    return ...


ROWS: dict[str, Row] = {
    "check_fsdp_fp16_step": Row(
        lambda s: s.fsdp_fp16_step, _fsdp_starter, lambda rank, world_size, batches: (None, None)
    ),
    "check_ring_sum_bf16": Row(
        lambda s: s.ring_sum_bf16, lambda grads: grads.sum(0), lambda g: g.sum(0).bfloat16().float()
    ),
}
