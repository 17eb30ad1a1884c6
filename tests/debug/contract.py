"""Lesson 08's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.debug.checks``, keyed by its name."""

from tests.checker_rows import Row


def _keep_whole_model_fp32(model):
    from amp_lessons.debug import KeepFP32

    return KeepFP32(model)


ROWS: dict[str, Row] = {
    "check_first_bad_layer": Row(lambda s: s.FIRST_BAD_LAYER, ..., "block4"),
    "check_fp16_fix": Row(lambda s: s.fix, lambda model: model, _keep_whole_model_fp32),
}
