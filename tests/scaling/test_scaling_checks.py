"""Tests of amp_lessons.scaling._checks, on lesson 05's exercises: each wrong answer gets its own hint, and none
states the answer (the contract every checker keeps, starter and solution included, is
tests/test_checker_contract.py)."""

import math

from amp_lessons import scaling
from tests.test_checks import assert_not_yet, reveals, solution


def test_smallest_scale_exercise():
    s = solution("05")
    census = scaling.small_loss_census()
    sweep = scaling.scale_sweep(census, range(0, 64), "fp16", "activations")
    want = scaling.safe_window(sweep, 0.01, 0.0)[0]  # the answer, from the sweep
    assert s.SMALLEST_SCALE_SMALL_LOSS == want
    assert scaling.check_smallest_scale(s.SMALLEST_SCALE_DEFAULT)  # the first question: the default census
    wrong = {
        want * 2: "not the smallest",
        want / 2: "larger scale",
        want * 3: "not a power of two",
        2.0**40: "overflow",
    }
    for answer, words in wrong.items():
        assert words in scaling.check_smallest_scale(answer, census=census).message


def _replay(fn):
    """The checker's result for ``fn``, and the expected scale of the last call ``fn`` got (the step that failed),
    from the instructors' update rule."""
    calls = []

    def recorded(*args):
        calls.append(args)
        return fn(*args)

    r = scaling.check_scaler_update(recorded)
    return r, solution("05").scaler_update(*calls[-1])[0]


def test_scaler_update_exercise():
    s = solution("05")
    wrong = {
        # grows at every clean step
        (lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0)): "IN A ROW",
        # backs off on clean steps too
        (lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * b, t + 1)): "backed off on a clean step",
        # never backs off
        (lambda sc, t, f, g, b, i: (sc, 0) if f else s.scaler_update(sc, t, f, g, b, i)): "must shrink",
        # grows on an overflow
        (lambda sc, t, f, g, b, i: (sc * g, 0) if f else s.scaler_update(sc, t, f, g, b, i)): "grew the scale",
        # never grows
        (lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc, t + 1)): "count the clean steps",
    }
    for fn, words in wrong.items():
        r, want = _replay(fn)
        assert_not_yet(r)
        assert words in r.message, r.message
        assert "GradScaler has" not in r.message and not reveals(r.message, want), r.message
    r, want = _replay(lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0))
    assert "too large by a factor of 2" in r.message and math.isfinite(want)


def test_scaler_update_tries_the_boundaries_and_refuses_the_packages_rule():
    from amp_lessons.scaling._checks import _UPDATE_CASES

    # overflows at the start and in a row, and one on the step whose count would reach the interval
    assert any(infs[:3] == (0, 1, 2) for *_, infs in _UPDATE_CASES)
    assert any(interval - 1 in infs for *_, interval, infs in _UPDATE_CASES)

    def counts_overflows(sc, t, f, g, b, i):  # counts an overflow step as a step of the interval
        t += 1
        if f:
            return sc * b, t
        return (sc * g, 0) if t >= i else (sc, t)

    r = scaling.check_scaler_update(counts_overflows)  # (grows_first and no_reset: tests/scaling/contract.py)
    assert_not_yet(r)
    assert "Hints: (1)" in r.message, r.message
    from amp_lessons.scaling.key_code import update_scale

    for fn in (lambda *a: update_scale(*a), lambda *a: scaling.simulate_scaler(0) and update_scale(*a)):
        r = scaling.check_scaler_update(fn)
        assert_not_yet(r)
        assert "course's own" in r.message, r.message
