"""Tests of amp_lessons.bits._explorers."""

import matplotlib

matplotlib.use("Agg")

import html
import math

import ipywidgets as widgets
import pytest

from amp_lessons import _explorer
from amp_lessons.bits import bit_explorer, format_designer
from amp_lessons.bits._explorers import BitExplorer, FormatDesigner
from amp_lessons.formats import ENCODINGS
from tests.pictures import is_png


@pytest.fixture(scope="module")
def designer():
    return format_designer().explorer


def stored_text(ex):
    return ex.value_box.value


def flip(ex, position):
    """Click the button of bit ``position`` (0: least significant)."""
    button = ex.bit_row.children[ex.fmt.bits - 1 - position]
    button.value = not button.value


def test_bit_explorer_shows_point_one_in_fp16():
    box = bit_explorer()
    assert isinstance(box, widgets.VBox)
    ex = box.explorer
    assert ex.info.stored == 0.0999755859375 and ex.info.kind == "normal" and "amp-failure" not in ex.readout.value
    assert "0.0999755859375" in ex.readout.value
    assert "(-1)^0 x 2^(11-15) x 1.1001100110b = 0.0999755859375" in ex.readout.value
    assert len(ex.bit_row.children) == 16
    assert "".join(b.description for b in ex.bit_row.children) == "0010111001100110"
    assert [b.value for b in ex.bit_row.children][:4] == [False, False, True, False]
    assert is_png(ex.image)
    zeros, ones = ex._pictures["fp16"].moving  # the digits drawn in the picture
    assert len(ones.get_offsets()) == 8 and len(zeros.get_offsets()) == 8
    assert sorted(ones.get_offsets()[:, 0]) == [i + 0.5 for i, d in enumerate("0010111001100110") if d == "1"]


def test_clicking_a_button_is_a_flip_and_does_not_loop():
    ex = BitExplorer(1.0, "fp16")
    draws, draw = [], ex.draw
    ex.draw = lambda: draws.append(1) or draw()
    ex.bit_row.children[-1].value = True  # the learner clicks the last mantissa bit
    assert len(draws) == 1 and ex.info.stored == 1.0 + 2.0**-10 and stored_text(ex) == "1.0009765625"
    ex.value_box.value = "0.1"  # typing still works afterwards
    assert len(draws) == 2 and ex.info.stored == 0.0999755859375
    before = ex.image.value
    flip(ex, 15)  # the sign bit
    assert ex.info.stored == -0.0999755859375 and stored_text(ex) == "-0.0999755859375"
    assert ex.bit_row.children[0].value is True and ex.bit_row.children[0].description == "1"
    assert "-0.0999755859375" in ex.readout.value and is_png(ex.image) and ex.image.value != before


def test_format_change_rebuilds_the_bit_row():
    ex = BitExplorer(0.1, "fp16")
    ex.set(format="fp32")
    assert len(ex.bit_row.children) == 32
    assert ex.info.stored == pytest.approx(0.1, rel=1e-7) and ex.info.stored != 0.1
    ex.set(format="fp4_e2m1")
    assert len(ex.bit_row.children) == 4 and ex.info.stored == 0.0 and ex.info.kind == "flushed"
    ex.set(format="fp16")
    assert len(ex.bit_row.children) == 16 and ex.info.stored == 0.0999755859375


def test_format_change_while_showing_nan():
    ex = BitExplorer("nan", "fp16")
    ex.set(format="fp4_e2m1")  # no NaN code in fp4
    assert math.isnan(ex.info.stored) and ex.info.code is None
    assert all(b.disabled and b.description == "?" for b in ex.bit_row.children)
    assert "no NaN code" in ex.readout.value
    assert len(ex._pictures["fp4_e2m1"].moving[0].get_offsets()) == 0  # no digits drawn
    ex.set(format="fp8_e4m3")
    assert ex.info.bit_string == "0 1111 111" and not any(b.disabled for b in ex.bit_row.children)


def test_unreadable_text_shows_an_error():
    ex = BitExplorer(0.1, "fp16")
    image = ex.image.value
    ex.set(value="zero point one")
    assert "'zero point one'" in ex.error and "is not a number" in ex.readout.value
    assert "0.0999755859375" in ex.readout.value  # the last value's table stays under the message
    assert ex.image.value == image and ex.info.stored == 0.0999755859375  # the last picture stays
    ex.set(value="0.5")
    assert ex.error == "" and ex.info.stored == 0.5


def test_custom_format_joins_the_menu():
    from amp_lessons.formats import FloatFormat

    ex = BitExplorer(1.5, FloatFormat("mine", 3, 2, "finite"))
    assert ex.format_menu.value == "mine" and "fp16" in ex.format_menu.options
    assert ex.info.bit_string == "0 011 10" and len(ex.bit_row.children) == 6
    with pytest.raises(ValueError, match="'fp99'"):
        ex.set(format="fp99")


def test_designer_default_is_fp16(designer):
    designer.set(5, 10, "ieee")
    assert designer.error == ""
    html = designer.readout.value
    assert "65504" in html and "same as fp16" in html
    assert "2^-24" in html and "2^-14" in html  # smallest subnormal / normal
    assert designer.fmt.max == 65504.0 and "65504.0" not in html
    assert is_png(designer.image)
    designer.set(5, 23, "ieee")  # the max is read out exactly, not rounded
    assert designer.fmt.max == 65536 - 2.0**-8 and "65535.99609375" in designer.readout.value
    assert ">65536<" not in designer.readout.value


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


def test_designer_every_slider_position(designer):
    """exponent 1..8 x mantissa 0..23 x every encoding: never an exception, each design explained. Its read-out is
    drawn by draw() itself (rendering the picture, the same for every design, is left to the explorer base tests)."""
    valid = 0
    for enc in ENCODINGS:
        for e in range(1, 9):
            for m in range(24):
                with designer.holding():  # no redraw per control: one draw() below
                    designer.exponent_slider.value, designer.mantissa_slider.value = e, m
                    designer.encoding_menu.value = enc
                text, _ = designer.draw()
                if not designer.error:
                    valid += 1
                    assert (designer.fmt.exponent_bits, designer.fmt.mantissa_bits) == (e, m)
                    # every design that can be built has a positive finite value: no failure shown
                    assert designer.fmt.emax >= designer.fmt.emin, (e, m, enc)
                    assert "amp-failure" not in text and f"design e{e}m{m} {enc}" in text, (e, m, enc)
                    shown_max = _explorer.num(designer.fmt.max)  # the max reads back exactly
                    assert shown_max in text and float(shown_max.split(" =")[0]) == designer.fmt.max
                else:  # explained, naming the design and the engine's reason
                    assert "amp-failure" in text and f"e{e}m{m} {enc} cannot be built" in text
                    assert html.escape(designer.error, quote=True) in text
    # of 768: the rest do not fit in float32, are 1-bit-exponent "ieee" or are e1m0 "fn" (only 0 and NaN)
    assert valid == 673


def test_designer_starting_invalid_does_not_raise():
    d = FormatDesigner(1, 0, "ieee")
    assert "exponent_bits" in d.error and d.fmt is None and d.image.value == b""
    d.set(exponent_bits=2)
    assert d.error == "" and is_png(d.image)


@pytest.mark.parametrize(
    "text, kind, words",
    [
        ("1e5", "inf", "overflow: 100000.0 is beyond fp16's largest finite value 65504.0; it becomes inf"),
        ("1e400", "inf", "inf: fp16 stores inf here"),
        ("1e-50", "flushed", "underflow: 1e-50 is below half of fp16"),
        ("-1e-8", "flushed", "stored as -0.0"),
        ("nan", "nan", "NaN: fp16 stores not-a-number"),
    ],
)
def test_bit_explorer_typed_failures_are_read_out(text, kind, words):
    ex = BitExplorer(0.1, "fp16")
    ex.set(value=text)
    assert ex.error == "" and ex.info.kind == kind
    assert "amp-failure" in ex.readout.value and html.escape(words, quote=True) in ex.readout.value
    for fine in ("-0.0", "65504", "6e-8"):  # zero, the max, the smallest subnormal: nothing lost
        ex.set(value=fine)
        assert "amp-failure" not in ex.readout.value, fine


def test_bit_explorer_saturation_and_bits_flipped_to_inf():
    ex = BitExplorer("1e5", "fp8_e4m3")
    assert ex.info.stored == 448.0 and ex.info.kind == "saturated" and ex.info.overflowed
    assert "saturates to the largest finite value" in ex.readout.value
    ex.set(value="-0.0")
    assert ex.info.bit_string == "1 0000 000" and ex.info.kind == "zero"
    ex.set(format="fp16")
    ex.set(value="1.0")
    for pos in (14, 13, 12, 11, 10):  # exponent all ones, mantissa 0
        if not ex.bit_row.children[15 - pos].value:
            flip(ex, pos)
    assert ex.info.stored == math.inf and ex.info.kind == "inf" and "amp-failure" in ex.readout.value
    flip(ex, 0)
    assert math.isnan(ex.info.stored) and stored_text(ex) == "nan"


def test_designer_extremes_are_explained(designer):
    designer.set(5, 10, "ieee")
    assert "amp-failure" not in designer.readout.value  # the opening state: fp16
    designer.set(exponent_bits=1)  # ieee with one exponent bit: its only non-zero field is inf/NaN
    assert "amp-failure" in designer.readout.value and "needs exponent_bits &gt;= 2" in designer.readout.value
    designer.set(1, 0, "fn")  # its codes are 0, NaN, -0 and NaN: refused, with no table of constants it lacks
    assert "amp-failure" in designer.readout.value and "no positive finite value" in designer.readout.value
    assert "only 0 and NaN" in designer.error and "e1m0 fn cannot be built" in designer.readout.value
    assert "smallest normal" not in designer.readout.value
    designer.set(8, 23, "ieee")
    assert designer.error == "" and "amp-failure" not in designer.readout.value  # fp32 itself
