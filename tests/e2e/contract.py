"""Lesson 06's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.e2e._checks``, keyed by its name."""

from torch import nn

from tests.checker_rows import Row


def _clipped_starter(model, optimizer, scaler, x, y):
    loss = nn.functional.mse_loss(model(x).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def _accumulation_starter(model, optimizer, scaler, micro_batches):
    for x, y in micro_batches:
        loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


ROWS: dict[str, Row] = {
    "check_clipped_amp_step": Row(lambda s: s.clipped_amp_step, _clipped_starter, lambda *a: None),
    "check_accumulated_amp_step": Row(lambda s: s.accumulated_amp_step, _accumulation_starter, lambda *a: None),
}


BAD_CALLS = {
    "odd_size_effect": {"dtype": [["bf16"], {}, "fp64"]},
    "train": {"model_kwargs": [{"vocab": 8, "heads": 2}, [1]], "steps": [1], "device": ["meta"]},
    "matmul_throughput": {"sizes": [[], [2.5], 5, [0]], "dtypes": [("fp64",)]},
}
"""Bad calls of lesson 06's public functions that once got an unclear error (joined to tests/api_contract.py's)."""
