"""Tests of amp_lessons.fp8._explorers."""

import matplotlib

matplotlib.use("Agg")

import pytest
import torch

from tests.faces import internals
from tests.pictures import is_png

fp8 = internals("fp8")

# --- fp8 scaling (lesson 07) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_explorer():
    return fp8.fp8_scaling_explorer().explorer


def test_fp8_explorer_matches_scaling_errors(fp8_explorer):
    ex = fp8_explorer
    ex.set(block="none", fmt="e4m3", exponent=0)
    assert is_png(ex.image) and ex.stats.flushed > 0.3  # unscaled gradients flush in e4m3
    ex.set(exponent=20)
    x = fp8.model_tensors()["activation gradients"]
    q = fp8.fake_quantize(x, "fp8_e4m3", 2.0**20)
    assert ex.stats.relative_error == pytest.approx(float((q - x).norm() / x.norm()))
    assert ex.stats.flushed == 0
    ex.set(block="1x128")
    assert ex.slider.disabled and "1x128" in ex.readout.value
    row = fp8.scaling_errors({"g": x}, methods=("block 1x128",))[0]
    assert (ex.stats.relative_error, ex.stats.flushed, ex.stats.saturated, ex.stats.inf) == (
        row["relative error"],
        row["flushed"],
        row["saturated"],
        row["inf"],
    )
    ex.set(fmt="e5m2")
    assert "inf (overflow)" in ex.readout.value


# --- the failures the slider reaches -------------------------------------------------------------


def test_fp8_explorer_opens_at_a_flush_and_says_why_the_slider_is_off():
    ex = fp8.Fp8ScalingExplorer()
    assert ex.stats.flushed > 0.25 and "amp-failure" in ex.readout.value
    assert f"{100 * ex.stats.flushed:.3g}% of the values flush to zero" in ex.readout.value
    assert "slider" not in ex.readout.value
    ex.set(block="128x128")
    assert ex.slider.disabled and "off: each block is scaled by 448 / amax(block)" in ex.readout.value


def test_fp8_explorer_slider_reaches_saturation_and_overflow():
    ex = fp8.Fp8ScalingExplorer()
    x = fp8.model_tensors()["activation gradients"]
    amax = float(x.abs().max())
    # the top of the slider scales the largest value past e5m2's max (57344), so past e4m3's (448) too
    assert amax * 2.0**ex.max_exponent > 57344 and ex.slider.max == ex.max_exponent
    ex.set(block="none", fmt="e4m3", exponent=ex.max_exponent)
    assert ex.stats.saturated > 0 and "amp-failure" in ex.readout.value
    assert "saturate at fp8_e4m3" in ex.readout.value
    ex.set(fmt="e5m2")
    # e5m2's overflow is inf, not saturation (the engine's classes)
    assert ex.stats.inf > 0 == ex.stats.saturated and "overflow to inf beyond fp8_e5m2" in ex.readout.value
    assert ex.stats.overflowed == ex.stats.inf
    # and the bottom flushes every non-zero value
    ex.set(exponent=ex.min_exponent)
    nonzero = float((x != 0).double().mean())
    assert ex.stats.flushed == pytest.approx(nonzero) and "flush to zero" in ex.readout.value


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_explorer_no_failure_where_nothing_is_lost(fmt):
    ex = fp8.Fp8ScalingExplorer(exponent=20, fmt=fmt)
    assert ex.stats.flushed == 0 and ex.stats.saturated == ex.stats.inf == 0
    assert "amp-failure" not in ex.readout.value
    ex.set(block="1x32")
    assert ex.stats.flushed == 0 and ex.stats.overflowed == 0 and "amp-failure" not in ex.readout.value


def test_fp8_explorer_slider_range_follows_the_tensor():
    big = fp8.Fp8ScalingExplorer(tensor=torch.full((4, 4), 2.0**40))
    assert big.min_exponent <= -18 - 40 and big.max_exponent == 20
    big.set(exponent=big.min_exponent)
    assert big.stats.flushed == 1.0 and "amp-failure" in big.readout.value
    zeros = fp8.Fp8ScalingExplorer(tensor=torch.zeros(4, 4))
    assert zeros.stats.flushed == 0 and "amp-failure" not in zeros.readout.value
