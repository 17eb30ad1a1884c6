"""Tests of amp_lessons.tf32._plots."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from amp_lessons._draw import named_artists

# --- lesson 02 plots --------------------------------------------------------------------------


def test_error_vs_k_plot_lines_and_trend():
    from amp_lessons.tf32 import plot_error_vs_k
    from amp_lessons.tf32._experiments import ErrorVsK

    data = ErrorVsK((16, 64, 256), {"tf32": (1e-3, 2e-3, 4e-3), "bf16": (8e-3, 1.6e-2, 3.2e-2)}, (4, 8, 16))
    ax = plot_error_vs_k(data, extra={"mine": [1, 2, 4]})
    named = named_artists(ax)
    assert list(named) == ["tf32", "bf16", "mine", "sqrt K guide"] and [named[k] for k in named] == ax.get_lines()
    # format lines say "<format> inputs"; an extra line keeps its own label (no "your inputs inputs")
    assert [ln.get_label() for ln in ax.get_lines()] == ["tf32 inputs", "bf16 inputs", "mine", "∝ √K (slope 1/2)"]
    guide = named["sqrt K guide"]
    # one black dashed guide, a third below the lowest rounded-input line's first point, sqrt(K) from there
    assert guide.get_linestyle() == "--" and guide.get_color() == "k"
    assert list(guide.get_ydata()) == pytest.approx([1e-3 / 3, 2e-3 / 3, 4e-3 / 3])
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="'bf16' has 2 values for 3"):
        plot_error_vs_k(ErrorVsK((1, 2, 3), {"bf16": (1, 2)}, (1, 2, 3)))
    with pytest.raises(TypeError, match="ErrorVsK returned by amp_lessons.tf32.error_vs_k, got dict"):
        plot_error_vs_k({"k": [16], "rms": {}, "ref_rms": [1]})


def test_matmul_errors_plot_bars():
    from amp_lessons.tf32 import plot_matmul_errors
    from amp_lessons.tf32._experiments import MatmulError

    errs = [
        MatmulError("fp32", 1e-4, 1e-6, 1e-5, "measured on this CPU"),
        MatmulError("tf32 emulated", 0.1, 2e-3, 1e-2, "inputs rounded bit-exactly, fp32 sum (model)"),
    ]
    ax = plot_matmul_errors(errs, reference={"tf32, A100 (PyTorch docs)": 0.0022})
    bars = [p for p in ax.patches]
    assert [b.get_width() for b in bars] == [1e-6, 2e-3, 0.0022]
    assert bars[1].get_hatch() == "//" and bars[0].get_hatch() is None
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "fp32",
        "tf32 emulated",
        "tf32, A100 (PyTorch docs)",
    ]
    with pytest.raises(ValueError, match="empty"):
        plot_matmul_errors([])


def test_error_vs_k_guide_has_slope_one_half():
    from amp_lessons.tf32 import error_vs_k, plot_error_vs_k

    ks = [16, 64, 256, 1024]
    ax = plot_error_vs_k(error_vs_k(ks, ("fp32", "tf32"), m=8, n=8), extra={"your inputs": [1e-2, 2e-2, 4e-2, 8e-2]})
    guide = named_artists(ax)["sqrt K guide"]
    x, y = np.log(guide.get_xdata()), np.log(guide.get_ydata())
    assert np.diff(y) / np.diff(x) == pytest.approx([0.5] * 3)  # slope 1/2 on the log-log axes: sqrt(K)
    tf32_line = named_artists(ax)["tf32"]
    assert guide.get_ydata()[0] == pytest.approx(tf32_line.get_ydata()[0] / 3)  # below the lowest rounded line
    assert "your inputs" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_matmul_errors_labels_stay_inside_the_axes():
    from amp_lessons.tf32 import matmul_errors, plot_matmul_errors

    ax = plot_matmul_errors(matmul_errors(32, 32, 32), reference={"fp32, A100": 3.9e-5})
    ax.figure.canvas.draw()
    box = ax.get_window_extent()
    assert all(t.get_window_extent().x1 <= box.x1 + 1 for t in ax.texts)
