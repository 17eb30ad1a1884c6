"""Tests of amp_lessons.fp8._plots."""

import matplotlib

matplotlib.use("Agg")

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest

from amp_lessons._draw import named_artists

# --- lesson 07: fp8 --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_tensors():
    from amp_lessons.fp8 import model_tensors

    return model_tensors()


def test_plot_fp8_window(fp8_tensors):
    from amp_lessons.fp8 import plot_fp8_window

    ax = plot_fp8_window(fp8_tensors)
    names = set(named_artists(ax))
    assert (
        set(fp8_tensors) <= names and {"region zero", "region subnormal", "region normal", "region overflow"} <= names
    )
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("activation gradients") and "flushed to 0" in t for t in labels)
    assert "fp8_e4m3" in ax.get_title(loc="left")
    ax = plot_fp8_window({"g": fp8_tensors["activation gradients"]}, "fp8_e5m2", scale=2.0**20)
    assert "2^20" not in ax.get_xlabel() and "1.04858e+06" in ax.get_xlabel()
    plt.close("all")


def test_plot_scaling_errors(fp8_tensors):
    """Bars at the errors on a log axis (the scaled methods' are nearly equal, the lesson says); the second panel,
    on a log axis, shows the shares flushed or saturated, where the methods differ; inf and 0 are written out."""
    from amp_lessons.fp8 import plot_scaling_errors, scaling_errors
    from amp_lessons.fp8._experiments import SCALING_METHODS

    rows = scaling_errors(fp8_tensors)
    ax = plot_scaling_errors(rows)
    (lost,) = [a for a in ax.figure.axes if a is not ax]
    assert ax.get_yscale() == "log" and lost.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fp8_tensors)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(SCALING_METHODS)
    bars = named_artists(ax)["per-tensor"]
    assert all(b in ax.patches for b in bars)
    want = [r["relative error"] for r in rows if r["method"] == "per-tensor"]
    assert np.allclose([b.get_y() + b.get_height() for b in bars], want)  # bar tops at the errors
    bottom = lost.get_ylim()[0]
    for r in rows:
        x = list(fp8_tensors).index(r["tensor"]) - 0.4 + 0.8 / 5 * (SCALING_METHODS.index(r["method"]) + 0.5)
        named = named_artists(ax)[r["method"] + " lost"]
        (bar,) = [p for p in named if p in lost.patches and abs(p.get_x() + p.get_width() / 2 - x) < 1e-9]
        share = r["flushed"] + r["saturated"]
        top = bar.get_y() + bar.get_height()
        if share > 0:
            assert top == pytest.approx(max(share, bottom))  # the bar's top is the share itself
        else:
            assert top < 2 * bottom  # 0: a stub on the bottom edge, labelled "0"
    assert sum(t.get_text() == "0" for t in lost.texts) == sum(r["flushed"] + r["saturated"] == 0 for r in rows)
    # the weight gradients without scaling lose most values; with per-tensor scaling almost none
    by = {(r["tensor"], r["method"]): r["flushed"] + r["saturated"] for r in rows}
    assert by[("weight gradients", "no scaling")] > 100 * by[("weight gradients", "per-tensor")]
    ax = plot_scaling_errors([dict(rows[0], **{"relative error": math.inf})] + rows[1:])
    assert any(t.get_text() == "inf" for t in ax.texts)
    plt.close("all")
