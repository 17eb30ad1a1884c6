"""Tests of amp_lessons.tf32._explorers."""

import matplotlib

matplotlib.use("Agg")

import pytest

from tests.faces import internals
from tests.pictures import is_png

tf32 = internals("tf32")


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
    assert list(ex._pic.moving[0].get_ydata()) == pytest.approx(ex.rms)
    ex.set(mantissa_bits=23)
    assert ex.rms == pytest.approx(ex.data.rms["fp32"])  # fp32 inputs: the summation error only
    ex.set(mantissa_bits=10, rounding="toward_zero")
    assert ex.rms[-1] > ex.data.rms["tf32"][-1]  # truncation is worse than rounding


def test_matmul_explorer_failure_only_when_the_error_reaches_the_result(matmul_explorer):
    ex = matmul_explorer
    ex.set(mantissa_bits=10, rounding="nearest_even")  # the opening state: fp16's mantissa
    assert ex.rms[-1] < ex.FAILURE_RATIO * ex.data.ref_rms[-1] and "amp-failure" not in ex.readout.value
    assert "error / result" in ex.readout.value
    ex.set(mantissa_bits=0)
    assert ex.rms[-1] >= ex.FAILURE_RATIO * ex.data.ref_rms[-1] and ex.rms[-1] > ex.data.rms["bf16"][-1]
    assert "amp-failure" in ex.readout.value and "not even the first decimal digit" in ex.readout.value
    ex.set(mantissa_bits=23, rounding="toward_zero")
    assert "amp-failure" not in ex.readout.value
