"""Tests of amp_lessons.compiled._plots."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from tests.faces import internals

compiled = internals("compiled")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_errors_bars_reach_their_values_from_one_base_and_say_them():
    errors = {"eager": (1.31e-2, 3.0e-3), "compiled": (1.01e-2, 2.3e-3), "emulated": (1.31e-2, 3.0e-3)}
    ax = compiled.plot_errors(errors)
    assert [c.get_label() for c in ax.containers] == ["eager", "compiled", "emulated"]
    bottom = ax.get_ylim()[0]
    assert ax.get_yscale() == "log" and bottom == pytest.approx(1e-4)  # a decade below the smallest error's decade
    for run in errors:
        (bars,) = [c for c in ax.containers if c.get_label() == run]
        assert [b.get_y() for b in bars] == pytest.approx([bottom] * 2)
        assert [b.get_y() + b.get_height() for b in bars] == pytest.approx(list(errors[run]))
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{v:.2e}" for e in errors.values() for v in e)
