"""Tests of amp_lessons.compiled.plots."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from amp_lessons import compiled, timing


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_errors_draws_one_container_per_run():
    errors = {"eager": (1e-2, 3e-3), "compiled": (8e-3, 2e-3), "emulated": (1e-2, 3e-3)}
    ax = compiled.plot_errors(errors)
    assert [c.get_label() for c in ax.containers] == ["eager", "compiled", "emulated"]
    assert ax.get_yscale() == "log"
    with pytest.raises(TypeError):
        compiled.plot_errors({"eager": (1, 1)})


def test_plot_step_times_draws_every_setting():
    times = {k: timing.time_fn(lambda: None, repeats=1) for k in ("eager fp32", "compiled fp32")}
    ax = compiled.plot_step_times(times)
    assert len(ax.containers[0]) == 2
    with pytest.raises(TypeError):
        compiled.plot_step_times({"a": 1.0})
