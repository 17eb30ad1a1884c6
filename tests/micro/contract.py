"""Lesson 10's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.micro.checks``, keyed by its name."""

import torch

from tests.checker_rows import Row, solution_of

ROWS: dict[str, Row] = {
    "check_rceil_shared_exponent": Row(
        lambda s: s.rceil_shared_exponent,
        lambda amax, element_format="fp8_e4m3": None,
        lambda a, f="fp8_e4m3": solution_of("10").rceil_shared_exponent(a, f) + 1,
    ),
    "check_stochastic_round": Row(
        lambda s: s.my_stochastic_round,
        lambda x, noise: x.view(torch.int32).view(torch.float32),
        lambda x, noise: x.bfloat16().float(),
    ),
}
