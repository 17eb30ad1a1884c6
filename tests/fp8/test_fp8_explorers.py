"""Tests of amp_lessons.fp8.explorers."""

import matplotlib

matplotlib.use("Agg")

import math

import pytest

from amp_lessons import fp8
from benchmarks.widget_steps import measure_update_ms
from tests.pictures import is_png

# --- fp8 scaling (lesson 07) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_explorer():
    return fp8.fp8_scaling_explorer().explorer


def test_fp8_explorer_matches_scaling_errors(fp8_explorer):
    from amp_lessons import fp8

    ex = fp8_explorer
    ex.set(block="none", fmt="e4m3", exponent=0)
    assert is_png(ex.image) and ex.stats["flushed"] > 0.3  # unscaled gradients flush in e4m3
    ex.set(exponent=20)
    x = fp8.model_tensors()["activation gradients"]
    q = fp8.fake_quantize(x, "fp8_e4m3", 2.0**20)
    assert ex.stats["relative error"] == pytest.approx(float((q - x).norm() / x.norm()))
    assert ex.stats["flushed"] == 0
    ex.set(block="1x128")
    assert ex.slider.disabled and "1x128" in ex.readout.value
    row = fp8.scaling_errors({"g": x}, methods=("block 1x128",))[0]
    assert ex.stats == {k: row[k] for k in ex.stats}
    ex.set(fmt="e5m2")
    assert "overflow to inf" in ex.readout.value


@pytest.mark.parametrize(
    "settings",
    [
        dict(exponent=-20),
        dict(exponent=20),
        dict(block="128x128"),
        dict(block="1x32", fmt="e5m2"),
        dict(block="none", exponent=20, fmt="e5m2"),
    ],
)
def test_fp8_explorer_extremes(fp8_explorer, settings):
    fp8_explorer.set(**settings)
    assert is_png(fp8_explorer.image)
    assert all(math.isfinite(v) for v in fp8_explorer.stats.values())


def test_fp8_explorer_bad_input_and_timing(fp8_explorer):
    with pytest.raises(ValueError, match="exponent"):
        fp8_explorer.set(exponent=21)
    with pytest.raises(ValueError, match="block"):
        fp8_explorer.set(block="2x2")
    with pytest.raises(ValueError, match="fmt"):
        fp8_explorer.set(fmt="e3m4")
    r = measure_update_ms(fp8_explorer, n=2)
    assert set(r) == {"log2 scale", "block", "format"}
