"""Tests of amp_lessons.tf32._explorers."""

import matplotlib

matplotlib.use("Agg")

import ipywidgets as widgets
import pytest

from tests.faces import internals
from tests.pictures import is_png

tf32 = internals("tf32")

# --- matmul precision explorer (lesson 02) ------------------------------------------------------


@pytest.fixture(scope="module")
def matmul_explorer():
    return tf32.MatmulPrecisionExplorer(10, "nearest_even", kmax=256)


def test_matmul_explorer_matches_tf32_and_bf16_lines(matmul_explorer):
    ex = matmul_explorer
    assert ex.ks == [16, 32, 64, 128, 256]
    assert ex.rms == pytest.approx(ex.data.rms["tf32"])  # 10 mantissa bits, nearest even = TF32 line
    assert "e8m10 = tf32" in ex.readout.value and is_png(ex.image)
    before = ex.image.value
    ex.set(mantissa_bits=7)
    assert ex.rms == pytest.approx(ex.data.rms["bf16"])
    assert "e8m7 = bf16" in ex.readout.value and ex.image.value != before
    line = ex._pic.moving[0]
    assert list(line.get_ydata()) == pytest.approx(ex.rms)


def test_matmul_explorer_extremes_and_rounding(matmul_explorer):
    ex = matmul_explorer
    ex.set(mantissa_bits=23)
    assert ex.rms == pytest.approx(ex.data.rms["fp32"])  # fp32 inputs: the summation error only
    ex.set(mantissa_bits=0)
    zero_bits = ex.rms[-1]
    assert zero_bits > ex.data.rms["bf16"][-1]
    ex.set(mantissa_bits=10, rounding="toward_zero")
    assert ex.rms[-1] > ex.data.rms["tf32"][-1]  # truncation is worse than rounding
    assert is_png(ex.image)


def test_matmul_explorer_bad_input():
    with pytest.raises(ValueError, match="mantissa_bits=24"):
        tf32.MatmulPrecisionExplorer(24)
    with pytest.raises(ValueError, match="'up'"):
        tf32.MatmulPrecisionExplorer(10, "up")
    assert isinstance(tf32.matmul_precision_explorer(), widgets.VBox)


# --- the failure the slider reaches ---------------------------------------------------------------


def test_matmul_explorer_failure_only_when_the_error_reaches_the_result(matmul_explorer):
    ex = matmul_explorer
    ex.set(mantissa_bits=10, rounding="nearest_even")  # the opening state: fp16's mantissa
    assert ex.rms[-1] < ex.FAILURE_RATIO * ex.data.ref_rms[-1] and "amp-failure" not in ex.readout.value
    ex.set(mantissa_bits=0)
    assert ex.rms[-1] >= ex.FAILURE_RATIO * ex.data.ref_rms[-1]
    assert "amp-failure" in ex.readout.value and "not even the first decimal digit" in ex.readout.value
    ex.set(mantissa_bits=23, rounding="toward_zero")
    assert "amp-failure" not in ex.readout.value


def test_matmul_explorer_opening_state_is_no_failure():
    ex = tf32.matmul_precision_explorer().explorer
    assert "amp-failure" not in ex.readout.value and "error / result" in ex.readout.value
