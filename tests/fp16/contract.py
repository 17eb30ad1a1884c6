"""Lesson 03's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.fp16.checks``, keyed by its name."""

from tests.checker_rows import Row, solution_of

ROWS: dict[str, Row] = {
    "check_stall_value": Row(lambda s: s.STALL_VALUE, ..., (4096.0, 1024.0, 2047.0, "x"), lambda: ((1.0, "fp16"), {})),
    "check_lost_update": Row(
        lambda s: s.smallest_update,
        (lambda w: ..., lambda w: None),
        (
            lambda w: solution_of("03").smallest_update(w) * 2,  # the whole gap
            lambda w: solution_of("03").smallest_update(w) / 4,
            lambda w: 1e-3,
            lambda w: -1.0,
            lambda w: "x",
        ),
        lambda: (("fp16",), {}),
        hidden=(2.0**-11,),  # half the gap at 1.5, the first weight tried
    ),
}
