"""Tests of amp_lessons.tf32._plots."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from amp_lessons._draw import named_artists
from amp_lessons.tf32 import matmul_errors, plot_error_vs_k, plot_matmul_errors
from amp_lessons.tf32._experiments import ErrorVsK, MatmulError


def test_error_vs_k_plot_lines_and_sqrt_k_guide():
    rms = {"fp32": (1e-6, 2e-6, 4e-6), "tf32": (1e-3, 2e-3, 4e-3), "bf16": (8e-3, 1.6e-2, 3.2e-2)}
    ax = plot_error_vs_k(ErrorVsK((16, 64, 256), rms, (4, 8, 16)), extra={"mine": [1, 2, 4]})
    named = named_artists(ax)
    assert list(named) == ["fp32", "tf32", "bf16", "mine", "sqrt K guide"] and list(named.values()) == ax.get_lines()
    # format lines say "<format> inputs"; an extra line keeps its own label (no "your inputs inputs")
    assert [t.get_text() for t in ax.get_legend().get_texts()][2:] == ["bf16 inputs", "mine", "∝ √K (slope 1/2)"]
    guide = named["sqrt K guide"]
    # one black dashed guide, a third below the lowest line of rounded inputs (not fp32's), slope 1/2 on log-log axes
    assert guide.get_linestyle() == "--" and guide.get_color() == "k"
    assert list(guide.get_ydata()) == pytest.approx([1e-3 / 3, 2e-3 / 3, 4e-3 / 3])
    x, y = np.log(guide.get_xdata()), np.log(guide.get_ydata())
    assert np.diff(y) / np.diff(x) == pytest.approx([0.5] * 2)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="'bf16' has 2 values for 3"):
        plot_error_vs_k(ErrorVsK((1, 2, 3), {"bf16": (1, 2)}, (1, 2, 3)))


def test_matmul_errors_plot_bars():
    errs = [
        MatmulError("fp32", 1e-4, 1e-6, 1e-5, "measured on this CPU"),
        MatmulError("tf32 emulated", 0.1, 2e-3, 1e-2, "inputs rounded bit-exactly, fp32 sum (model)"),
    ]
    ax = plot_matmul_errors(errs, reference={"tf32, A100 (PyTorch docs)": 0.0022})
    bars = list(ax.patches)
    assert [b.get_width() for b in bars] == [1e-6, 2e-3, 0.0022]
    assert bars[1].get_hatch() == "//" and bars[0].get_hatch() is None
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fp32", "tf32 emulated", "tf32, A100 (PyTorch docs)"]


def test_matmul_errors_labels_stay_inside_the_axes():
    ax = plot_matmul_errors(matmul_errors(32, 32, 32), reference={"fp32, A100": 3.9e-5})
    ax.figure.canvas.draw()
    box = ax.get_window_extent()
    assert all(t.get_window_extent().x1 <= box.x1 + 1 for t in ax.texts)
