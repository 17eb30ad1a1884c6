"""Lesson 07's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.fp8.checks``, keyed by its name."""

from tests.checker_rows import Row


def _fp8_unscaled(x, w, b):
    from amp_lessons.fp8 import fake_quantize

    return fake_quantize(x, "fp8_e4m3") @ fake_quantize(w, "fp8_e4m3").t() + b


ROWS: dict[str, Row] = {
    "check_amax_scale": Row(
        lambda s: s.amax_scale,
        lambda x, fmt_max: 1.0,
        lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0,
    ),
    "check_fp8_format_choice": Row(
        lambda s: s.FP8_FORMAT_CHOICE,
        {"weights": ..., "activations": ..., "gradients": ...},
        {"weights": "e4m3", "activations": "e4m3", "gradients": "e4m3"},
        hidden=("e5m2",),
        starter_lists_all=True,
    ),
    "check_fp8_linear_forward": Row(lambda s: s.fp8_linear_forward, lambda x, w, b: x @ w.t() + b, _fp8_unscaled),
}
