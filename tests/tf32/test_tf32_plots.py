"""Tests of amp_lessons.tf32.plots."""

import matplotlib

matplotlib.use("Agg")

import pytest

# --- lesson 02 plots --------------------------------------------------------------------------


def test_error_vs_k_plot_lines_and_trend():
    from amp_lessons.tf32 import plot_error_vs_k

    data = {
        "k": [16, 64, 256],
        "rms": {"tf32": [1e-3, 2e-3, 4e-3], "bf16": [8e-3, 1.6e-2, 3.2e-2]},
        "ref_rms": [4, 8, 16],
    }
    ax = plot_error_vs_k(data, extra={"mine": [1, 2, 4]})
    assert [ln.get_gid() for ln in ax.get_lines() if ln.get_gid()] == ["tf32", "bf16", "mine"]
    trend = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and ln.get_gid() is None]
    assert list(trend[0].get_ydata()) == pytest.approx([1e-3, 2e-3, 4e-3])  # sqrt(K) through the first point
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="'bf16' has 2 values for 3"):
        plot_error_vs_k({"k": [1, 2, 3], "rms": {"bf16": [1, 2]}})
    with pytest.raises(TypeError, match="error_vs_k"):
        plot_error_vs_k([1, 2])


def test_matmul_errors_plot_bars():
    from amp_lessons.tf32 import MatmulError, plot_matmul_errors

    errs = [
        MatmulError("fp32", 1e-4, 1e-6, 1e-5, "measured on this CPU"),
        MatmulError("tf32 emulated (ties away)", 0.1, 2e-3, 1e-2, "inputs rounded bit-exactly, fp32 sum (model)"),
    ]
    ax = plot_matmul_errors(errs, reference={"tf32, A100 (PyTorch docs)": 0.0022})
    bars = [p for p in ax.patches]
    assert [b.get_width() for b in bars] == [1e-6, 2e-3, 0.0022]
    assert bars[1].get_hatch() == "//" and bars[0].get_hatch() is None
    assert [t.get_text() for t in ax.get_yticklabels()] == [
        "fp32",
        "tf32 emulated (ties away)",
        "tf32, A100 (PyTorch docs)",
    ]
    with pytest.raises(ValueError, match="empty"):
        plot_matmul_errors([])
