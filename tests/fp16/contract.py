"""Lesson 03's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.fp16.checks``, keyed by its name."""

from tests.checker_rows import Row


def _plain_running_sum(values):
    total = values[0] * 0
    for v in values:
        total = total + v
    return total


ROWS: dict[str, Row] = {
    "check_kahan16": Row(
        lambda s: s.kahan16,
        (lambda values: None, lambda values: ...),
        (
            _plain_running_sum,  # no compensation: a plain fp16 running sum
            lambda values: values.sum(),  # fp32 accumulation inside torch.sum: the correctly rounded sum
            lambda values: values.float().sum().item(),
            lambda values: 0.0,
            lambda values: "x",
        ),
    ),
    "check_stall_value": Row(lambda s: s.STALL_VALUE, ..., (4096.0, 1024.0, 2047.0, "x"), lambda: ((1.0, "fp16"), {})),
}
