"""Tests of amp_lessons.fp16._explorers."""

import matplotlib

matplotlib.use("Agg")

import math

import numpy as np
import pytest

from tests.faces import internals
from tests.pictures import is_png

fp16 = internals("fp16")


@pytest.fixture(scope="module")
def magnitudes():
    return fp16.MagnitudeExplorer()


def test_magnitude_explorer_rows_and_marker(magnitudes):
    magnitudes.set(log10_value=-6.0, sign="-")
    assert magnitudes.value == -1e-6
    assert magnitudes.classes == {
        "fp32": "normal",
        "bf16": "normal",
        "fp16": "subnormal",
        "fp8_e4m3": "flushed",
        "fp8_e5m2": "flushed",
    }
    assert magnitudes.stored["fp16"] == -1.0132789611816406e-06 and magnitudes.stored["fp8_e4m3"] == -0.0
    assert "<b>subnormal</b>" in magnitudes.readout.value and "var(--jp-" in magnitudes.readout.value
    assert is_png(magnitudes.image)
    assert magnitudes.errors["fp8_e4m3"] == 1.0
    line, dots = magnitudes._pic.moving
    assert list(line.get_xdata()) == [1e-6, 1e-6] and list(dots.get_xdata()) == [1e-6] * 5
    magnitudes.set(log10_value=3.0, sign="+")
    assert magnitudes.classes["fp8_e4m3"] == "saturated" and magnitudes.stored["fp8_e4m3"] == 448.0


@pytest.fixture(scope="module")
def sums():
    return fp16.sum_explorer().explorer


def test_sum_explorer_shows_the_4096_by_16_facts(sums):
    sums.set(v="16", n=4096)
    r = sums.result
    assert r.fp16_running_sum == 32768.0 and r.torch_sum_fp16 == math.inf
    assert r.fp16_addends_fp32_accumulator == r.exact == 65536.0
    for text in (
        "fp16 running sum",
        "fp16 addends, fp32 accumulator",
        "torch.sum (fp16 tensor)",
        "exact",
        "32768.0",
        "65536.0",
        "inf",
        "4094",
    ):
        assert text in sums.readout.value
    pic = sums._pictures[1.15]
    fp16_line = pic.parts["lines"][sums.LINES.index("fp16 running sum")]
    assert fp16_line.get_ydata()[-1] == pytest.approx(0.5)  # in units of the exact sum 65536
    cumsum_marker = pic.parts["markers"][sums.LINES.index("torch.cumsum (fp16 tensor)")]
    assert cumsum_marker.get_visible() and cumsum_marker.get_xdata()[0] == pytest.approx(4095 / 4096)
    assert pic.parts["limit"].get_visible()
    ticks = [t.get_text() for t in pic.parts["yt"] if t.get_visible()]
    assert "0" in ticks and "60000" in ticks
    assert is_png(sums.image)


def test_sum_explorer_curves_are_the_running_sums(sums):
    from amp_lessons.fp16 import running_sums_of_copies

    sums.set(v="0.01", n=1000)
    assert sums.result.fp16_running_sum == 9.953125
    want = running_sums_of_copies(0.01, 1000)
    exact = want["exact"][-1].item()
    for line, key in zip(sums._pictures[1.15].parts["lines"], sums.LINES):
        np.testing.assert_allclose(line.get_ydata(), want[key].double().numpy() / exact, rtol=1e-12)
    assert not sums._pictures[1.15].parts["limit"].get_visible()  # 65504 is far off this picture


def test_sum_explorer_bad_text_keeps_the_last_table_and_picture(sums):
    sums.set(v="16", n=100)
    image = sums.image.value
    for text, words in (("sixteen", "is not a number"), ("", "is not a number"), ("1e400", "reads as inf")):
        sums.set(v=text)
        assert words in sums.error and words in sums.readout.value and sums.image.value == image
        assert "last valid v" in sums.readout.value and "1600.0" in sums.readout.value  # the last table stays
        assert "amp-failure" not in sums.readout.value
    sums.set(n=sums.N_MAX)  # n moves while the text is bad: still explained
    assert sums.error and sums.image.value == image
    sums.set(v="2", n=100)
    assert sums.error == "" and sums.result.exact == 200.0
    sums.set(v="16", n=4096)  # swamping: the failure stays with the last table under a bad text
    sums.set(v="not a number")
    assert "last valid v" in sums.readout.value and "swamping" in sums.readout.value


def test_magnitude_explorer_failure_exactly_where_a_format_loses_x():
    ex = fp16.MagnitudeExplorer(0.0)  # 1.0 is normal everywhere
    assert set(ex.classes.values()) == {"normal"} and "amp-failure" not in ex.readout.value
    ex.set(log10_value=-5.0)  # the opening state: e4m3 flushes 1e-5
    assert ex.classes["fp8_e4m3"] == "flushed" and "flushes to 0 in fp8_e4m3" in ex.readout.value
    ex.set(log10_value=ex.HI, sign="-")
    assert ex.classes["fp32"] == "inf" and ex.classes["fp8_e4m3"] == "saturated"
    assert "overflows to inf in fp32" in ex.readout.value and "saturates to -448.0 in fp8_e4m3" in ex.readout.value
    ex.set(log10_value=ex.LO)
    assert set(ex.classes.values()) == {"flushed"} and "flushes to 0 in fp32" in ex.readout.value
    assert ex.readout.value.count("amp-failure") == 1


def test_sum_explorer_swamping_overflow_and_underflow_are_read_out():
    ex = fp16.SumExplorer()  # the opening state stalls at 32768: swamping
    assert ex.result.stall_value == 32768.0 and "swamping" in ex.readout.value
    assert "amp-failure" in ex.readout.value
    ex.set(v="1", n=100)  # 100 ones: exact in fp16
    assert ex.result.fp16_running_sum == 100.0 and "amp-failure" not in ex.readout.value
    ex.set(v="1e5")  # beyond fp16's max before any addition
    assert ex.v16 == math.inf and ex.result.fp16_running_sum == math.inf
    assert "amp-failure" in ex.readout.value and "fp16(v) = inf" in ex.readout.value
    ex.set(v="65504", n=2)
    assert ex.v16 == 65504.0 and ex.result.fp16_running_sum == math.inf
    assert "becomes inf at term 2" in ex.readout.value
    ex.set(v="-16", n=ex.N_MAX)
    assert ex.result.fp16_running_sum == -32768.0 and "stops at -32768.0" in ex.readout.value


@pytest.mark.parametrize(
    "v, flushed", [("1e-8", True), ("-1e-30", True), ("2.9e-8", True), ("0", False), ("-0.0", False)]
)
def test_sum_explorer_zero_addend_is_no_stall(sums, v, flushed):
    sums.set(v=v, n=sums.N_MAX)
    assert sums.error == "" and sums.v16 == 0 and sums.result.fp16_running_sum == 0
    assert "never: fp16(v) is 0" in sums.readout.value and "swamping" not in sums.readout.value
    assert ("amp-failure" in sums.readout.value) == flushed and ("underflow" in sums.readout.value) == flushed
