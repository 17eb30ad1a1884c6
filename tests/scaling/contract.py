"""Lesson 05's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.scaling._checks``, keyed by its name."""

from tests.checker_rows import Row


def _small_census():
    from amp_lessons.scaling import small_loss_census

    return (small_loss_census(),), {}


#: bad calls of the topic's face, beyond the contract's own (tests/api_contract.py adds them to its EXTRA): scales
#: float32 cannot hold, an interval GradScaler's int32 count never reaches, a dict for the overflow steps, and
#: training and target sizes outside what the comparison's model is for
BAD_CALLS: dict[str, dict[str, list]] = {
    **{
        f: {"init_scale": [1e39, 1e-46], "growth_factor": [1.0], "backoff_factor": [1.0], "growth_interval": [2**31]}
        for f in ("simulate_scaler", "compare_with_gradscaler")
    },
    "safe_window": {"max_overflow": [1.5, -0.01]},
    "small_loss_census": {"target_scale": [10**30, 2.0]},
    "train_comparison": {"lr": [10**30, 1.5], "target_scale": [10**30, 2.0]},
}
BAD_CALLS["simulate_scaler"]["inf_steps"] = [{}, {3: True}]


def _grows_first(sc, t, f, g, b, i):
    """The count checked before the overflow: grows on an overflow that falls on an interval's last step."""
    t += 1
    if t == i:
        return sc * g, 0
    return (sc * b, 0) if f else (sc, t)


def _no_reset(sc, t, f, g, b, i):
    """Backs off without starting the count again."""
    if f:
        return sc * b, t
    return (sc * g, 0) if t + 1 >= i else (sc, t + 1)


def _package_rule(*args):
    from amp_lessons.scaling.key_code import update_scale

    return update_scale(*args)


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
        (lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0), _grows_first, _no_reset, _package_rule),
    ),
}
