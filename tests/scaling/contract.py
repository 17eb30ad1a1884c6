"""Lesson 05's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.scaling.checks``, keyed by its name."""

from tests.checker_rows import Row, solution_of


def _small_census():
    from amp_lessons.scaling import small_loss_census

    return (small_loss_census(),), {}


def _scale_prediction_params():
    e = dict(solution_of("05").SCALE_PREDICTION_EXERCISE)
    return (e.pop("n_steps"), e.pop("inf_steps")), e


ROWS: dict[str, Row] = {
    "check_smallest_scale": Row(
        lambda s: s.SMALLEST_SCALE_SMALL_LOSS, ..., (2.0**12, 2.0**10, 3 * 2.0**11, 2.0**40), _small_census
    ),
    "check_scale_prediction": Row(lambda s: s.SCALE_PREDICTION, ..., (2.0**12, 2.0**9, "x"), _scale_prediction_params),
    "check_scaler_update": Row(
        lambda s: s.scaler_update,
        lambda scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval: (
            scale,
            growth_tracker,
        ),
        lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0),
    ),
}
