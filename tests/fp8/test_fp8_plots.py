"""Tests of amp_lessons.fp8.plots."""

import matplotlib

matplotlib.use("Agg")

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

# --- lesson 07: fp8 --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_tensors():
    from amp_lessons.fp8 import model_tensors

    return model_tensors()


def test_plot_fp8_window(fp8_tensors):
    from amp_lessons.fp8 import plot_fp8_window

    ax = plot_fp8_window(fp8_tensors)
    gids = {a.get_gid() for a in ax.get_children()}
    assert set(fp8_tensors) <= gids and {"region zero", "region subnormal", "region normal", "region overflow"} <= gids
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("activation gradients") and "flush to 0" in t for t in labels)
    assert "fp8_e4m3" in ax.get_title(loc="left")
    ax = plot_fp8_window({"g": fp8_tensors["activation gradients"]}, "fp8_e5m2", scale=2.0**20)
    assert "2^20" not in ax.get_xlabel() and "1.04858e+06" in ax.get_xlabel()
    with pytest.raises(TypeError, match="non-empty dict"):
        plot_fp8_window({})
    with pytest.raises(ValueError, match="positive finite"):
        plot_fp8_window(fp8_tensors, scale=0)
    plt.close("all")


def test_plot_scaling_errors(fp8_tensors):
    from amp_lessons.fp8 import SCALING_METHODS, plot_scaling_errors, scaling_errors

    rows = scaling_errors(fp8_tensors)
    ax = plot_scaling_errors(rows)
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fp8_tensors)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(SCALING_METHODS)
    bars = [p for p in ax.patches if p.get_gid() == "per-tensor"]
    want = [r["relative error"] for r in rows if r["method"] == "per-tensor"]
    assert np.allclose([b.get_y() + b.get_height() for b in bars], want)  # bar tops at the errors
    inf_rows = [dict(rows[0], **{"relative error": math.inf})] + rows[1:]
    ax = plot_scaling_errors(inf_rows)
    assert any(t.get_text() == "inf" for t in ax.texts)
    with pytest.raises(TypeError, match="scaling_errors"):
        plot_scaling_errors([])
    plt.close("all")
