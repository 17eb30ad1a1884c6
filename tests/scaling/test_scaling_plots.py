"""Tests of amp_lessons.scaling._plots."""

import matplotlib

matplotlib.use("Agg")

import math

import numpy as np
import pytest

from amp_lessons._draw import named_artists


@pytest.fixture(scope="module")
def census05():
    from amp_lessons.fp16 import gradient_census

    return gradient_census()


def test_scale_sweep_plot_draws_the_sweep_and_the_window(census05):
    from amp_lessons.scaling import plot_scale_sweep, safe_window, scale_sweep

    sw = scale_sweep(census05)
    ax = plot_scale_sweep(sw)
    line = named_artists(ax)["underflow"]
    assert list(line.get_xdata()) == list(range(33))
    floor = ax.get_ylim()[0]
    assert [y == floor for y in line.get_ydata()] == [u == 0 for u in sw.flushed]
    span = named_artists(ax)["window"]
    lo, hi = safe_window(sw)
    assert span.get_x() == math.log2(lo) and span.get_x() + span.get_width() == math.log2(hi)
    assert ax.get_xticklabels()[0].get_text().startswith("2^")
    assert "window" not in named_artists(plot_scale_sweep(sw, window=False))


def test_scaled_histogram_moves_with_the_exponent(census05):
    from amp_lessons.scaling._plots import plot_scaled_histogram

    a = plot_scaled_histogram(census05, 0)
    b = plot_scaled_histogram(census05, 32)
    ea = named_artists(a)["activations fill"].get_data().edges
    eb = named_artists(b)["activations fill"].get_data().edges
    assert np.array_equal(eb, ea + 32)
    assert a.get_xlim() == b.get_xlim() and eb[-1] <= b.get_xlim()[1]
    assert {"region overflow", "region zero"} <= set(named_artists(a))
    h = named_artists(a)["activations fill"].get_data().values
    assert h.sum() == pytest.approx(1 - float((census05.activations == 0).float().mean()))


def test_scaler_history_from_simulation_and_comparison():
    from amp_lessons.scaling import compare_with_gradscaler, plot_scaler_history, simulate_scaler

    h = simulate_scaler(50, (5, 6), growth_interval=10)
    ax = plot_scaler_history(h)
    line = named_artists(ax)["scale"]
    assert list(line.get_ydata()) == [math.log2(s) for s in h.scale]
    marks = named_artists(ax)["scale skipped"]
    assert list(marks.get_xdata()) == [5, 6]
    assert ax.get_yticklabels()[0].get_text().startswith("2^")
    rows = compare_with_gradscaler(12)
    ax = plot_scaler_history(rows)
    assert {"DynamicScaler (ours)", "torch.amp.GradScaler"} <= set(named_artists(ax))
    assert list(named_artists(ax)["torch.amp.GradScaler skipped"].get_xdata()) == [3, 4, 10]
    # a scale that underflowed to 0 in float32 is left out, not an error
    ax = plot_scaler_history(simulate_scaler(60, range(60), init_scale=1.0, backoff_factor=0.05))
    assert np.isnan(named_artists(ax)["scale"].get_ydata()[-1])


def test_train_comparison_plot():
    from amp_lessons.scaling import plot_train_comparison
    from amp_lessons.scaling._records import TrainComparison

    result = TrainComparison(
        steps=2,
        loss={"fp32": (1.0, 0.5), "fp16 autocast, no scaling": (1.0, 1.0)},
        zero_grad_fraction={"fp32": 0.0, "fp16 autocast, no scaling": 1.0},
        scale=(),
        skipped=(),
        seconds={"fp32": 0.1, "fp16 autocast, no scaling": 0.1},
    )
    ax = plot_train_comparison(result)
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "fp32: final loss 0.5, 0% of gradients exactly 0",
        "fp16 autocast, no scaling: final loss 1, 100% of gradients exactly 0",
    ]
