"""Tests of amp_lessons.fp16._plots."""

import matplotlib

matplotlib.use("Agg")

import math

import numpy as np
import pytest
import torch

from amp_lessons._draw import named_artists
from amp_lessons.formats import FloatFormat


def test_running_sums_plot_lines_limit_and_inf_marker():
    from amp_lessons.fp16 import plot_running_sums, running_sums_of_copies

    sums = running_sums_of_copies(16.0, 4096)
    ax = plot_running_sums(sums, limit=65504, limit_label="fp16 max 65504")
    fp16_line = named_artists(ax)["fp16 running sum"]
    assert list(fp16_line.get_xdata()[:3]) == [1, 2, 3]
    assert fp16_line.get_ydata()[-1] == 32768.0 and fp16_line.get_ydata()[1] == 32.0
    cumsum = named_artists(ax)["torch.cumsum (fp16 tensor)"]
    assert np.isnan(cumsum.get_ydata()[4094]) and cumsum.get_ydata()[4093] == 65504.0  # inf is not drawn
    marker = named_artists(ax)["torch.cumsum (fp16 tensor) inf"]
    assert list(marker.get_xdata()) == [4095] and list(marker.get_ydata()) == [65504.0]  # term 4095 = index 4094
    assert any("inf from term 4095" in t.get_text() for t in ax.texts)
    limit = named_artists(ax)["limit"]
    assert list(limit.get_ydata()) == [65504, 65504]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [*sums, "fp16 max 65504"]
    assert "fp16 running sum inf" not in named_artists(ax)


def test_running_sums_plot_takes_lists():
    from amp_lessons.fp16 import plot_running_sums

    ax = plot_running_sums({"mine": [1.0, 2.0, -math.inf], "bf16": torch.ones(2)})
    assert named_artists(ax)["mine inf"].get_marker() == "v"  # -inf: a triangle pointing down
    assert "limit" not in named_artists(ax)


@pytest.fixture(scope="module")
def census():
    from amp_lessons.fp16 import gradient_census

    return gradient_census()


def _pct_in_legend(ax, fraction):
    return any(f"{fraction:.2%}" in t.get_text() for t in ax.get_legend().get_texts())


def test_gradient_histogram_regions_and_fractions(census):
    from amp_lessons.fp16 import plot_gradient_histogram

    ax = plot_gradient_histogram(census)
    zero = named_artists(ax)["region zero"]
    sub = named_artists(ax)["region subnormal"]
    normal = named_artists(ax)["region normal"]
    over = named_artists(ax)["region overflow"]
    assert sub.get_x() == pytest.approx(-25)  # half the smallest subnormal 2**-24 rounds to 0
    assert normal.get_x() == pytest.approx(-14)
    assert over.get_x() == pytest.approx(math.log2(65520))
    assert zero.get_x() < -25
    acts = named_artists(ax)["activation gradients"]
    counts = acts.get_data().values
    fr = census.fractions["activations"]
    assert counts.sum() == pytest.approx(1 - fr["zero"])  # per binade, of all values: zeros are off the log axis
    text = " ".join(t.get_text() for t in ax.get_legend().get_texts())  # shares as lessons 03 and 05 print them
    for kind in ("weights", "activations"):
        fr = census.fractions[kind]
        assert f"{fr['subnormal']:.2%} subnormal" in text and f"{fr['normal']:.2%} normal" in text
        assert f"{fr['zero']:.2%} zero" in text
    assert ax.get_xlabel() == "log2 |gradient|" and "fp16" in ax.get_title(loc="left")


def test_gradient_histogram_scale_moves_values_out_of_subnormals(census):
    from amp_lessons.fp16 import plot_gradient_histogram
    from amp_lessons.fp16._experiments import census_fractions

    ax = plot_gradient_histogram(census, scale=1024.0)
    scaled = census_fractions(census.activations * 1024.0)
    assert scaled["subnormal"] < census.fractions["activations"]["subnormal"] / 10
    assert _pct_in_legend(ax, scaled["normal"])
    assert "1024" in ax.get_xlabel() and "scaled by 1024" in ax.get_title(loc="left")
    ax = plot_gradient_histogram(census, "bf16", scale=2.0**120)  # most overflow in bf16
    assert any("overflow" in t.get_text() for t in ax.get_legend().get_texts())


def test_loss_curves_plot():
    from amp_lessons.fp16 import plot_loss_curves
    from amp_lessons.fp16._experiments import MasterWeightRuns

    result = MasterWeightRuns(
        fmt="fp16",
        steps=3,
        lr=0.1,
        loss={"fp32": (1.0, 0.1, 0.01), "fp16 weights": (1.0, 0.2, 0.2), "fp32 master weights": (1, 0.1, 0.01)},
        lost_fraction={"fp32": 0.0, "fp16 weights": 0.5, "fp32 master weights": 0.0},
        lost_if_fmt={"fp32": 0.0, "fp16 weights": 0.5, "fp32 master weights": 0.4},
    )
    ax = plot_loss_curves(result)
    assert ax.get_yscale() == "log"
    named = named_artists(ax)
    assert list(named) == ["fp32", "fp16 weights", "fp32 master weights"]
    assert [named[k] for k in named] == ax.get_lines()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1] == "fp16 weights: final loss 0.2, 50% of updates lost"


def test_format_regions_from_the_constants():
    from amp_lessons.fp16._plots import REGION_FORMATS, plot_format_regions

    ax = plot_format_regions(1e-5)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(REGION_FORMATS)
    sub = named_artists(ax)["fp16 subnormal"]
    normal = named_artists(ax)["fp16 normal"]
    over = named_artists(ax)["fp16 inf"]
    assert sub.get_x() == 2.0**-25 and normal.get_x() == 2.0**-14
    assert normal.get_x() + normal.get_width() == pytest.approx(65520.0) and over.get_x() == 65520.0
    sat = named_artists(ax)["fp8_e4m3 saturate"]
    assert sat.get_x() == 464.0  # 448 + half its gap of 32
    assert named_artists(ax)["fp32 zero"].get_width() == pytest.approx(2.0**-150 - 1e-50)
    line = named_artists(ax)["marker"]
    assert list(line.get_xdata()) == [1e-5, 1e-5] and line.get_visible()
    assert ax.get_xscale() == "log" and ax.get_xlim() == (1e-50, 1e40)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["rounds to zero", "subnormal", "normal", "overflow to inf", "overflow, saturates at max"]


def test_format_regions_edges_nan_and_custom_formats():
    from amp_lessons.fp16._plots import plot_format_regions

    ax = plot_format_regions(0.0)
    assert named_artists(ax)["marker"].get_xdata()[0] == 1e-50  # clipped to the axis
    ax = plot_format_regions(-math.inf, ["fp8_e4m3fnuz", FloatFormat("e5m0", 5, 0)])
    assert named_artists(ax)["marker"].get_xdata()[0] == 1e40
    assert "fp8_e4m3fnuz nan" in named_artists(ax) and "e5m0 subnormal" not in named_artists(ax)
    ax = plot_format_regions(math.nan)
    assert not named_artists(ax)["marker"].get_visible() and "NaN" in ax.get_title(loc="left")


def test_running_sums_minus_shows_the_error():
    from amp_lessons.fp16 import plot_running_sums

    ax = plot_running_sums({"a": [1.0, 2.0, 3.0], "exact": [1.0, 2.5, 3.5]}, minus="exact")
    line = named_artists(ax)["a"]
    assert list(line.get_ydata()) == [0.0, -0.5, -0.5]
    assert "exact" in ax.get_ylabel()
