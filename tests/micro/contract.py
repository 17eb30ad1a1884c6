"""Lesson 10's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.micro._checks``, keyed by its name."""

import math

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

# bad calls of the face's callables that once came without a clear error (joined to tests/api_contract.EXTRA):
# a format name for element_format that named another argument, a global amax of {} or 0 taken as "none", a NaN
# tensor whose error named no argument, an empty tensor that gave NaN fractions
BAD_CALLS: dict[str, dict[str, list]] = {
    "mx_quantize": {"element_format": ["sideways", "bf16"]},
    "nvfp4_quantize": {
        "global_amax": [{}, 0.0, -1.0, math.nan, math.inf],
        "x": [lambda: torch.full((4, 16), math.nan)],
    },
    "scale_rule_clipping": {"x": [lambda: torch.empty(0, 32)], "element_format": ["sideways"]},
}
