"""Tests of amp_lessons.micro._plots."""

import matplotlib

matplotlib.use("Agg")


from amp_lessons.micro import plot_recipe_snr, plot_training
from amp_lessons.micro._records import LowPrecisionRun, RecipeRow
from tests.pictures import legend_outside


def _legend_below_full_width_axes(ax) -> bool:
    """The legend's box lies below the axes' box, and the axes take most of the figure's width."""
    ax.figure.canvas.draw()
    legend, box = ax.get_legend(), ax.get_window_extent()
    return legend is not None and legend.get_window_extent().y1 <= box.y0 and box.width >= 0.75 * ax.figure.bbox.width


def test_training_legend_writes_the_numbers_as_the_lesson_prints_them():
    runs = {
        "round to nearest": LowPrecisionRun("round to nearest", (1.0, 0.5, 0.365), 0.497, 2),
        "Kahan": LowPrecisionRun("Kahan", (1.0, 0.3, 0.1477), 0.002, 4),
    }
    ax = plot_training(runs)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # lesson 10 prints f"final loss {loss:.4f}, {100 * never:.1f}% of weights never moved"
    assert labels == [
        "round to nearest: final loss 0.3650, 49.7% of weights never moved",
        "Kahan: final loss 0.1477, 0.2% of weights never moved",
    ]
    assert ax.get_yscale() == "log" and _legend_below_full_width_axes(ax) and not legend_outside(ax)


def test_recipe_snr_labels_the_bars_too_short_to_see():
    """A recipe that keeps nothing of a tensor (SNR near 0 dB) draws no visible bar: its value is written instead."""
    rows = {
        "gradient": [RecipeRow("a", 8.0, 0.2, 0.0, 0.0, 0.0), RecipeRow("b", 8.0, 40.0, 0.0, 0.0, 0.0)],
        "weights": [RecipeRow("a", 8.0, 30.0, 0.0, 0.0, 0.0), RecipeRow("b", 8.0, 35.0, 0.0, 0.0, 0.0)],
    }
    ax = plot_recipe_snr(rows)
    assert [t.get_text() for t in ax.texts] == ["gradient: 0 dB"]
    matplotlib.pyplot.close(ax.figure)
