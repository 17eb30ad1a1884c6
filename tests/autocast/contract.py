"""Lesson 04's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.autocast.checks``, keyed by its name."""

import torch
import torch.nn.functional as F

from tests.checker_rows import Row, solution_of


def _bce_starter(z, y):
    return F.binary_cross_entropy(torch.sigmoid(z), y)


_DTYPES = solution_of("04").DTYPE_PREDICTIONS
_CUMSUM = "cuda: cumsum(a @ b, 0)"

ROWS: dict[str, Row] = {
    "check_dtype_predictions": Row(
        lambda s: s.DTYPE_PREDICTIONS,
        dict.fromkeys(_DTYPES, "..."),
        dict(_DTYPES, **{_CUMSUM: "torch.float16"}),
        hidden=(_DTYPES[_CUMSUM].removeprefix("torch."),),
    ),
    "check_bce_fix": Row(
        lambda s: s.bce_fix, _bce_starter, lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum")
    ),
}
