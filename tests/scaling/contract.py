"""Lesson 05's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.scaling.checks``, keyed by its name."""

from tests.checker_rows import Row


def _small_census():
    from amp_lessons.scaling import small_loss_census

    return (small_loss_census(),), {}


ROWS: dict[str, Row] = {
    "check_smallest_scale": Row(
        lambda s: s.SMALLEST_SCALE_SMALL_LOSS, ..., (2.0**12, 2.0**10, 3 * 2.0**11, 2.0**40), _small_census
    ),
    "check_scaler_update": Row(
        lambda s: s.scaler_update,
        lambda scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval: (
            scale,
            growth_tracker,
        ),
        lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0),
    ),
}
