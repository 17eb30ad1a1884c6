"""Lesson 03's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.fp16._checks``, keyed by its name."""

import torch

from tests.checker_rows import Row


def _plain_running_sum(values):
    total = values[0] * 0
    for v in values:
        total = total + v
    return total


#: bad calls of the topic's face, beyond the contract's own (tests/api_contract.py adds them to its EXTRA): a v that
#: fp16 cannot hold (inf, or 0 once rounded), a learning rate at which the regression diverges
BAD_CALLS: dict[str, dict[str, list]] = {
    "check_stall_value": {"v": [10**30, 1e-9, -1e-9]},
    "train_master_weights": {"lr": [1.5, 0.9, 10**30]},
    "running_sum": {
        "values": [
            lambda: torch.ones(3, dtype=torch.float64),
            lambda: torch.tensor(1.0),
            lambda: torch.arange(3),
            "123",
        ],
        "overflow": ["nan", "wrap"],
    },
    "sum_copies": {"v": [True, "16"], "n": [1_000_001]},
}


def _from_first(values):
    """Kahan's loop started at the first value: right on every long sum, an IndexError on no values."""
    total, c = values[0], values[0] * 0
    for v in values[1:]:
        y = v - c
        t = total + y
        c = (t - total) - y
        total = t
    return total


ROWS: dict[str, Row] = {
    "check_kahan16": Row(
        lambda s: s.kahan16,
        (lambda values: None, lambda values: ...),
        (
            _plain_running_sum,  # no compensation: a plain fp16 running sum
            lambda values: values.sum(),  # fp32 accumulation inside torch.sum: the correctly rounded sum
            lambda values: values.float().sum().item(),
            lambda values: values.float().sum().half(),  # a sum in fp32, rounded to fp16 once: not fp16 Kahan
            _from_first,
            lambda values: 0.0,
            lambda values: "x",
        ),
    ),
    "check_stall_value": Row(lambda s: s.STALL_VALUE, ..., (4096.0, 1024.0, 2047.0, "x"), lambda: ((1.0, "fp16"), {})),
}
