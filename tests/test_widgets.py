"""Tests of amp_lessons.widgets: the explorers driven as a learner would, without a browser."""

import matplotlib

matplotlib.use("Agg")

import math

import ipywidgets as widgets
import numpy as np
import pytest
import torch

import amp_lessons.widgets as amp_widgets
from amp_lessons.formats import ENCODINGS, FORMATS
from amp_lessons.widgets import BitExplorer, FormatDesigner, bit_explorer, format_designer
from benchmarks.widget_steps import measure_update_ms

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(image) -> bool:
    return bytes(image.value).startswith(PNG)


@pytest.fixture(scope="module")
def designer():
    return format_designer().explorer


def stored_text(ex):
    return ex.value_box.value


# --- bit explorer ------------------------------------------------------------------------------


def test_bit_explorer_shows_point_one_in_fp16():
    box = bit_explorer()
    assert isinstance(box, widgets.VBox)
    ex = box.explorer
    assert ex.info.stored == 0.0999755859375
    assert "0.0999755859375" in ex.readout.value
    assert "(-1)^0 x 2^(11-15) x 1.1001100110b = 0.0999755859375" in ex.readout.value
    assert len(ex.bit_row.children) == 16
    assert "".join(b.description for b in ex.bit_row.children) == "0010111001100110"
    assert [b.value for b in ex.bit_row.children][:4] == [False, False, True, False]
    assert is_png(ex.image)
    zeros, ones = ex._pictures["fp16"].moving  # the digits drawn in the picture
    assert len(ones.get_offsets()) == 8 and len(zeros.get_offsets()) == 8
    assert sorted(ones.get_offsets()[:, 0]) == [i + 0.5 for i, d in enumerate("0010111001100110") if d == "1"]


def test_flipping_the_sign_bit():
    ex = BitExplorer(0.1, "fp16")
    before = ex.image.value
    ex.flip_bit(15)
    assert ex.info.stored == -0.0999755859375
    assert stored_text(ex) == "-0.0999755859375"
    assert ex.bit_row.children[0].value is True and ex.bit_row.children[0].description == "1"
    assert "-0.0999755859375" in ex.readout.value
    assert is_png(ex.image) and ex.image.value != before


def test_clicking_a_button_is_a_flip_and_does_not_loop():
    ex = BitExplorer(1.0, "fp16")
    calls = {"value": 0, "code": 0}
    show_value, show_code = ex.show_value, ex.show_code

    def counted_value():
        calls["value"] += 1
        show_value()

    def counted_code(code):
        calls["code"] += 1
        show_code(code)

    ex.show_value, ex.show_code = counted_value, counted_code
    ex.bit_row.children[-1].value = True  # the learner clicks the last mantissa bit
    assert calls == {"value": 0, "code": 1}
    assert ex.info.stored == 1.0 + 2.0**-10 and stored_text(ex) == "1.0009765625"
    ex.value_box.value = "2.0"  # typing still works afterwards
    assert calls == {"value": 1, "code": 1} and ex.info.stored == 2.0


def test_flips_reach_inf_and_nan_and_back():
    ex = BitExplorer(1.0, "fp16")
    for pos in (14, 13, 12, 11, 10):  # exponent all ones, mantissa 0
        ex.flip_bit(pos) if ex.bit_row.children[15 - pos].value is False else None
    assert ex.info.stored == math.inf and ex.info.kind == "inf"
    ex.flip_bit(0)
    assert math.isnan(ex.info.stored) and stored_text(ex) == "nan"
    ex.flip_bit(0)
    assert ex.info.stored == math.inf


def test_format_change_rebuilds_the_bit_row():
    ex = BitExplorer(0.1, "fp16")
    ex.set_format("fp32")
    assert len(ex.bit_row.children) == 32
    assert ex.info.stored == pytest.approx(0.1, rel=1e-7) and ex.info.stored != 0.1
    ex.set_format("fp4_e2m1")
    assert len(ex.bit_row.children) == 4 and ex.info.stored == 0.0 and ex.info.kind == "underflow to zero"
    ex.set_format("fp16")
    assert len(ex.bit_row.children) == 16 and ex.info.stored == 0.0999755859375


@pytest.mark.parametrize("name", list(FORMATS))
def test_extreme_inputs_never_raise(name):
    ex = BitExplorer(0.1, name)
    for text in ("1e39", "-1e39", "-0.0", "nan", "inf", "-inf", "1e-50", "0", "3.4028235e38", " 2.5 "):
        ex.set_value(text)
        assert ex.error == "" and is_png(ex.image)
        assert len(ex.bit_row.children) == FORMATS[name].bits
    ex.set_value(float("nan"))
    ex.set_value(1e39)


def test_extreme_classes_in_the_readout():
    ex = BitExplorer("1e39", "fp16")
    assert ex.info.kind == "overflow to inf" and "overflow to inf" in ex.readout.value
    ex.set_format("fp8_e4m3")
    assert ex.info.stored == 448.0 and ex.info.kind == "overflow saturated"
    ex.set_value("-0.0")
    assert ex.info.bit_string == "1 0000 000" and ex.info.kind == "zero"
    ex.set_value("1e-50")
    assert ex.info.kind == "underflow to zero"


def test_format_change_while_showing_nan():
    ex = BitExplorer("nan", "fp16")
    ex.set_format("fp4_e2m1")  # no NaN code in fp4
    assert math.isnan(ex.info.stored) and ex.info.code is None
    assert all(b.disabled and b.description == "?" for b in ex.bit_row.children)
    assert "no NaN code" in ex.readout.value
    with pytest.raises(ValueError, match="undefined"):
        ex.flip_bit(0)
    assert len(ex._pictures["fp4_e2m1"].moving[0].get_offsets()) == 0  # no digits drawn
    ex.set_format("fp8_e4m3")
    assert ex.info.bit_string == "0 1111 111" and not any(b.disabled for b in ex.bit_row.children)


def test_unreadable_text_shows_an_error():
    ex = BitExplorer(0.1, "fp16")
    image = ex.image.value
    ex.set_value("zero point one")
    assert "'zero point one'" in ex.error and "is not a number" in ex.readout.value
    assert "0.0999755859375" in ex.readout.value  # the last value's table stays under the message
    assert ex.image.value == image and ex.info.stored == 0.0999755859375  # the last picture stays
    ex.set_value("0.5")
    assert ex.error == "" and ex.info.stored == 0.5


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(value="abc"), ValueError, "'abc'"),
        (dict(value=[0.1]), TypeError, r"\[0.1\]"),
        (dict(value=True), TypeError, "True"),
        (dict(fmt="fp99"), ValueError, "'fp99'"),
    ],
)
def test_bit_explorer_rejects_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        bit_explorer(**kwargs)


def test_custom_format_joins_the_menu():
    from amp_lessons.formats import FloatFormat

    ex = BitExplorer(1.5, FloatFormat("mine", 3, 2, "finite"))
    assert ex.format_menu.value == "mine" and "fp16" in ex.format_menu.options
    assert ex.info.bit_string == "0 011 10" and len(ex.bit_row.children) == 6
    with pytest.raises(ValueError, match="'fp99'"):
        ex.set_format("fp99")


def test_flip_bit_rejects_bad_positions():
    ex = BitExplorer(0.1, "fp16")
    for bad in (16, -1, 1.0, True):
        with pytest.raises(ValueError, match=repr(bad)):
            ex.flip_bit(bad)


# --- format designer ---------------------------------------------------------------------------


def test_designer_default_is_fp16(designer):
    designer.set(5, 10, "ieee")
    assert designer.error == ""
    html = designer.readout.value
    assert "65504" in html and "same as fp16" in html
    assert "2^-24" in html and "2^-14" in html  # smallest subnormal / normal
    assert designer.fmt.max == 65504.0
    assert is_png(designer.image)


def test_designer_names_known_formats_and_redraws(designer):
    designer.set(5, 10, "ieee")
    fp16_image = designer.image.value
    designer.set(8, 7, "ieee")
    assert "same as bf16" in designer.readout.value and designer.image.value != fp16_image
    line = designer._pic.moving[0]
    assert line.get_xdata().max() == designer.fmt.max and line.get_ydata().min() == 2.0**-133
    designer.set(4, 3, "fn")
    assert "same as fp8_e4m3" in designer.readout.value and "448" in designer.readout.value
    designer.set(3, 5, "finite")
    assert "not a format the course names" in designer.readout.value


@pytest.mark.parametrize(
    "e, m, enc, bad_enc, word",
    [
        (1, 4, "fn", "ieee", "exponent_bits"),
        (8, 23, "ieee", "fn", "float32"),
        (8, 3, "ieee", "fnuz", "float32"),
        (8, 0, "ieee", "finite", "float32"),
    ],
)
def test_invalid_design_shows_error_and_keeps_picture(designer, e, m, enc, bad_enc, word):
    designer.set(e, m, enc)
    assert designer.error == ""
    image, good = bytes(designer.image.value), designer.fmt
    designer.set(encoding=bad_enc)
    assert word in designer.error
    assert word in designer.readout.value
    assert f"last valid design: e{e}m{m} {enc}" in designer.readout.value
    assert bytes(designer.image.value) == image and designer.fmt is good


def test_designer_every_slider_position(designer, monkeypatch):
    """exponent 1..8 x mantissa 0..23 x every encoding: never an exception. Each design is drawn;
    only the PNG encoding, which does not depend on the design, is skipped to keep this fast."""
    monkeypatch.setattr(amp_widgets, "_encode_png", lambda canvas: b"skipped")
    valid = 0
    for enc in ENCODINGS:
        for e in range(1, 9):
            for m in range(24):
                designer.set(e, m, enc)
                assert designer.readout.value
                if not designer.error:
                    valid += 1
                    assert (designer.fmt.exponent_bits, designer.fmt.mantissa_bits) == (e, m)
                    assert bytes(designer.image.value) == b"skipped"
    assert valid == 673  # of 768: the rest do not fit in float32 or are 1-bit-exponent "ieee"


def test_degenerate_design_has_no_positive_value(designer):
    designer.set(1, 0, "fn")
    assert designer.error == "" and "no positive finite value" in designer.readout.value


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((9, 10), ValueError, "exponent_bits=9"),
        ((5, 24), ValueError, "mantissa_bits=24"),
        (("5", 10), TypeError, "'5'"),
        ((5, 10, "ibm"), ValueError, "'ibm'"),
    ],
)
def test_designer_rejects_bad_arguments(args, exc, match):
    with pytest.raises(exc, match=match):
        FormatDesigner(*args)


def test_designer_starting_invalid_does_not_raise():
    d = FormatDesigner(1, 0, "ieee")
    assert "exponent_bits" in d.error and d.fmt is None and d.image.value == b""
    d.set(exponent_bits=2)
    assert d.error == "" and is_png(d.image)


# --- timing helper -----------------------------------------------------------------------------


def test_measure_update_ms_reports_each_kind(designer):
    bits = measure_update_ms(bit_explorer(), n=2)
    assert set(bits) == {"value", "format", "flip bit"}
    design = measure_update_ms(designer.widget, n=2)
    assert set(design) == {"exponent bits", "mantissa bits", "encoding"}
    for result in (bits, design):
        assert all(0 < r["median"] <= r["max"] for r in result.values())
    with pytest.raises(TypeError, match="VBox"):
        measure_update_ms(widgets.VBox())
    with pytest.raises(ValueError, match="0"):
        measure_update_ms(designer, n=0)


# --- matmul precision explorer (lesson 02) ------------------------------------------------------


@pytest.fixture(scope="module")
def matmul_explorer():
    return amp_widgets.MatmulPrecisionExplorer(10, "nearest_even", kmax=256)


def test_matmul_explorer_matches_tf32_and_bf16_lines(matmul_explorer):
    ex = matmul_explorer
    assert ex.ks == [16, 32, 64, 128, 256]
    assert ex.rms == pytest.approx(ex.data["rms"]["tf32"])  # 10 mantissa bits, nearest even = TF32 line
    assert "e8m10 = tf32" in ex.readout.value and is_png(ex.image)
    before = ex.image.value
    ex.set(mantissa_bits=7)
    assert ex.rms == pytest.approx(ex.data["rms"]["bf16"])
    assert "e8m7 = bf16" in ex.readout.value and ex.image.value != before
    line = ex._pic.moving[0]
    assert list(line.get_ydata()) == pytest.approx(ex.rms)


def test_matmul_explorer_extremes_and_rounding(matmul_explorer):
    ex = matmul_explorer
    ex.set(mantissa_bits=23)
    assert ex.rms == pytest.approx(ex.data["rms"]["fp32"])  # fp32 inputs: the summation error only
    ex.set(mantissa_bits=0)
    zero_bits = ex.rms[-1]
    assert zero_bits > ex.data["rms"]["bf16"][-1]
    ex.set(mantissa_bits=10, rounding="toward_zero")
    assert ex.rms[-1] > ex.data["rms"]["tf32"][-1]  # truncation is worse than rounding
    assert is_png(ex.image)


def test_matmul_explorer_bad_input():
    with pytest.raises(ValueError, match="mantissa_bits=24"):
        amp_widgets.MatmulPrecisionExplorer(24)
    with pytest.raises(ValueError, match="'up'"):
        amp_widgets.MatmulPrecisionExplorer(10, "up")
    assert isinstance(amp_widgets.matmul_precision_explorer(), widgets.VBox)


# --- magnitude explorer (lesson 03) --------------------------------------------------------------


@pytest.fixture(scope="module")
def magnitudes():
    return amp_widgets.MagnitudeExplorer()


@pytest.mark.parametrize(
    "log10, fp16_class",
    [(-6.0, "subnormal"), (5.0, "inf"), (-9.0, "zero"), (0.0, "normal"), (-7.3, "subnormal"), (4.8, "normal")],
)
def test_magnitude_explorer_fp16_classes(magnitudes, log10, fp16_class):
    magnitudes.set(log10_value=log10, sign="+")
    assert magnitudes.classes["fp16"] == fp16_class
    assert "<b style='color:" in magnitudes.readout.value and f">{fp16_class}</b>" in magnitudes.readout.value
    assert is_png(magnitudes.image)


def test_magnitude_explorer_rows_and_marker(magnitudes):
    magnitudes.set(log10_value=-6.0, sign="-")
    assert magnitudes.value == -1e-6
    assert magnitudes.classes == {
        "fp32": "normal",
        "bf16": "normal",
        "fp16": "subnormal",
        "fp8_e4m3": "zero",
        "fp8_e5m2": "zero",
    }
    assert magnitudes.stored["fp16"] == -1.0132789611816406e-06 and magnitudes.stored["fp8_e4m3"] == -0.0
    assert magnitudes.errors["fp8_e4m3"] == 1.0
    line, dots = magnitudes._pic.moving
    assert list(line.get_xdata()) == [1e-6, 1e-6] and list(dots.get_xdata()) == [1e-6] * 5
    magnitudes.set(log10_value=3.0, sign="+")
    assert magnitudes.classes["fp8_e4m3"] == "saturated" and magnitudes.stored["fp8_e4m3"] == 448.0


def test_magnitude_explorer_slider_extremes(magnitudes):
    for sign in ("+", "-"):
        magnitudes.set(log10_value=-50.0, sign=sign)
        assert set(magnitudes.classes.values()) == {"zero"} and is_png(magnitudes.image)
        magnitudes.set(log10_value=40.0)
        assert magnitudes.classes == {
            "fp32": "inf",
            "bf16": "inf",
            "fp16": "inf",
            "fp8_e4m3": "saturated",
            "fp8_e5m2": "inf",
        }
        assert "inf" in magnitudes.readout.value
    for lg in (magnitudes.slider.min, magnitudes.slider.max):
        magnitudes.slider.value = lg  # the widget itself, as a drag does
        assert is_png(magnitudes.image)


def test_magnitude_explorer_bad_input():
    with pytest.raises(ValueError, match="-50 to 40"):
        amp_widgets.MagnitudeExplorer(41.0)
    with pytest.raises(ValueError, match="'x'"):
        amp_widgets.MagnitudeExplorer(0.0, sign="x")
    assert isinstance(amp_widgets.magnitude_explorer(-20.0), widgets.VBox)


# --- sum explorer (lesson 03) -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sums():
    return amp_widgets.sum_explorer().explorer


def test_sum_explorer_shows_the_4096_by_16_facts(sums):
    sums.set(v="16", n=4096)
    r = sums.result
    assert r["fp16 running sum"] == 32768.0 and r["torch.sum (fp16 tensor)"] == math.inf
    assert r["fp16 addends, fp32 accumulator"] == r["exact"] == 65536.0
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
    assert sums.result["fp16 running sum"] == 9.953125
    want = running_sums_of_copies(0.01, 1000)
    exact = want["exact"][-1].item()
    for line, key in zip(sums._pictures[1.15].parts["lines"], sums.LINES):
        np.testing.assert_allclose(line.get_ydata(), want[key].double().numpy() / exact, rtol=1e-12)
    assert not sums._pictures[1.15].parts["limit"].get_visible()  # 65504 is far off this picture


@pytest.mark.parametrize(
    "v", ["0", "-0.0", "-16", "1e-30", "3e-8", "1e5", "65504", "1e38", "1e39", "-1e39", "2049", "0.3333", "1e-7"]
)
def test_sum_explorer_extremes_never_raise(sums, v):
    for n in (1, 2, 8192):
        sums.set(v=v, n=n)
        assert sums.error == "" and is_png(sums.image)
        assert sums.result["exact"] == n * torch.tensor(float(v)).to(torch.float16).item()


def test_sum_explorer_bad_text_keeps_the_picture(sums):
    sums.set(v="16", n=100)
    image = sums.image.value
    for bad in ("sixteen", "inf", "nan"):
        sums.set(v=bad)
        assert sums.error and sums.image.value == image
        assert "1600.0" in sums.readout.value  # the last table stays under the message
    sums.set(v="2")
    assert sums.error == "" and sums.result["exact"] == 200.0


def test_sum_explorer_bad_arguments():
    with pytest.raises(ValueError, match="8192"):
        amp_widgets.SumExplorer(16.0, 8193)
    with pytest.raises(ValueError, match="finite"):
        amp_widgets.SumExplorer(math.inf)


def test_measure_update_ms_for_lesson_03(magnitudes, sums):
    assert set(measure_update_ms(magnitudes, n=2)) == {"log10 |x|", "sign"}
    assert set(measure_update_ms(sums.widget, n=2)) == {"v", "n"}


# --- loss scaling (lesson 05) ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def scales():
    return amp_widgets.scale_explorer().explorer


@pytest.fixture(scope="module")
def scaler_states():
    return amp_widgets.scaler_state_explorer().explorer


def test_scale_explorer_readout_is_scaled_fractions(scales):
    from amp_lessons.scaling import scaled_fractions

    for k in (0, 16, 32, 5):
        scales.set(exponent=k)
        assert scales.fractions == scaled_fractions(scales.census, 2.0**k)
        assert is_png(scales.image)
        fill = scales._pic.moving[0]
        assert np.array_equal(fill.get_data().edges, scales._pic.edges + k)
    assert "underflow to zero" in scales.readout.value


def test_scale_explorer_slider_extremes(scales):
    scales.set(exponent=0)
    at_one = scales.fractions["activations"]
    scales.set(exponent=32)
    at_max = scales.fractions["activations"]
    assert at_one["underflow to zero"] > 0 and at_one["overflow"] == 0
    assert at_max["underflow to zero"] == 0 and at_max["overflow"] > 0.5
    assert "scale = 2^32" in scales._pic.moving[-1].get_text()
    for bad in (-1, 33, 2.5, True):
        with pytest.raises(ValueError, match="exponent"):
            scales.set(exponent=bad)


def test_scale_explorer_takes_a_census():
    from amp_lessons.scaling import small_loss_census

    ex = amp_widgets.ScaleExplorer(16, census=small_loss_census())
    assert ex.fractions["activations"]["underflow to zero"] < 1e-3


def test_scaler_state_explorer_is_simulate_scaler(scaler_states):
    from amp_lessons.scaling import simulate_scaler

    ex = scaler_states
    ex.clear()
    ex.set(log2_init_scale=10, growth_factor=2.0, backoff_factor=0.5, growth_interval=20)
    ex.inject(30)
    ex.step_slider.value = 31
    ex.inject_button.click()  # the button injects at the slider's step
    assert ex.inf_steps == {30, 31}
    want = simulate_scaler(ex.N_STEPS, (30, 31), init_scale=2.0**10, growth_interval=20)
    assert ex.history == want
    line = ex._pic.parts["line"]
    assert list(line.get_ydata()) == [math.log2(s) for s in want["scale"]]
    assert list(ex._pic.parts["skipped"].get_xdata()) == [30, 31]
    assert "2000" in ex.readout.value and "30, 31" in ex.readout.value
    ex.clear_button.click()
    assert ex.inf_steps == set() and not any(ex.history["skipped"])
    assert is_png(ex.image)


@pytest.mark.parametrize(
    "settings",
    [
        dict(log2_init_scale=0, growth_factor=4.0, backoff_factor=0.05, growth_interval=1),
        dict(log2_init_scale=24, growth_factor=1.1, backoff_factor=0.95, growth_interval=50),
        dict(log2_init_scale=0, growth_factor=1.1, backoff_factor=0.05, growth_interval=50),
    ],
)
def test_scaler_state_explorer_slider_extremes(scaler_states, settings):
    ex = scaler_states
    ex.clear()
    ex.set(**settings)
    for k in range(0, ex.N_STEPS, 3):  # many overflows: the scale may underflow to 0 in float32
        ex.inf_steps.add(k)
    ex.update()
    assert is_png(ex.image)
    lo, hi = ex._pic.parts["ax"].get_ylim()
    assert math.isfinite(lo) and math.isfinite(hi) and lo < hi
    assert all(math.isfinite(s) for s in ex.history["scale"])
    ex.clear()
    assert all(math.isfinite(s) and s > 0 for s in ex.history["scale"])


def test_scaler_state_explorer_bad_input(scaler_states):
    with pytest.raises(ValueError, match="growth_factor"):
        scaler_states.set(growth_factor=1.0)
    with pytest.raises(ValueError, match="growth_interval"):
        scaler_states.set(growth_interval=2000)
    with pytest.raises(ValueError, match="step"):
        scaler_states.inject(200)


def test_measure_update_ms_for_lesson_05(scales, scaler_states):
    assert set(measure_update_ms(scales, n=2)) == {"log2 scale"}
    assert set(measure_update_ms(scaler_states.widget, n=2)) == {
        "init_scale",
        "growth_factor",
        "backoff_factor",
        "growth_interval",
        "inject inf",
        "clear",
    }


# --- fp8 scaling (lesson 07) -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_explorer():
    return amp_widgets.fp8_scaling_explorer().explorer


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
