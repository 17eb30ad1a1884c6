"""Tests of amp_lessons.bits._plots."""

import matplotlib

matplotlib.use("Agg")

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.patches import Rectangle

from amp_lessons._draw import named_artists
from amp_lessons.bits import plot_bit_layout, plot_number_line, plot_range_precision, plot_rounding_error, plot_spacing
from amp_lessons.bits._describe import describe_value
from amp_lessons.formats import FORMATS, FloatFormat, representable_values


def digits(ax) -> str:
    return "".join(t.get_text() for t in named_artists(ax).get("bit digit", ()))


def boxes(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


def test_describe_value_fp16_point_one():
    info = describe_value(0.1, "fp16")
    assert info.stored == 0.0999755859375
    assert info.bit_string == "0 01011 1001100110"
    assert info.fields == (0, 11, 614)
    assert info.kind == "normal"
    assert info.formula == "(-1)^0 x 2^(11-15) x 1.1001100110b = 0.0999755859375"
    assert info.abs_error == pytest.approx(2.44140625e-05, rel=1e-6)
    assert info.rel_error == pytest.approx(2.44140625e-04, rel=1e-3)


@pytest.mark.parametrize(
    "value, fmt, kind, stored",
    [  # the class of each is the engine's (tests/test_one_vocabulary.py); here the stored values at the edges
        (65520.0, "fp16", "inf", math.inf),  # the tie above max rounds up: inf
        (65519.0, "fp16", "normal", 65504.0),
        (1e6, "fp8_e4m3", "saturated", 448.0),
        (464.0, "fp8_e4m3", "normal", 448.0),  # the tie rounds to the even 448: no overflow
        (465.0, "fp8_e4m3", "saturated", 448.0),
        (1e6, "fp8_e4m3fnuz", "nan", math.nan),
        (1e39, "fp16", "inf", math.inf),  # beyond float32 too
        (1e-50, "fp32", "flushed", 0.0),
        (-0.0, "fp16", "zero", -0.0),
        (math.nan, "fp16", "nan", math.nan),
    ],
)
def test_describe_value_classes(value, fmt, kind, stored):
    info = describe_value(value, fmt)
    assert info.kind == kind
    assert (math.isnan(info.stored) and math.isnan(stored)) or info.stored == stored
    assert math.copysign(1, info.stored) == math.copysign(1, stored) or math.isnan(stored)


def test_describe_negative_zero_and_nan_codes():
    assert describe_value(-0.0, "fp16").bit_string == "1 00000 0000000000"
    assert describe_value(math.nan, "fp16").bit_string == "0 11111 1000000000"
    assert describe_value(math.nan, "fp8_e4m3").bit_string == "0 1111 111"
    nan4 = describe_value(math.nan, "fp4_e2m1")
    assert nan4.code is None and nan4.fields is None and "no NaN code" in nan4.formula


def test_bit_layout_one_in_fp16():
    ax = plot_bit_layout("fp16", 1.0)
    assert digits(ax) == "0011110000000000"
    assert describe_value(1.0, "fp16").bit_string == "0 01111 0000000000"
    assert len(boxes(ax)) == 16
    texts = [t.get_text() for t in ax.texts]
    assert {"sign", "exponent (5 bits, bias 15)", "mantissa (10 bits)"} <= set(texts)
    caption = named_artists(ax)["caption"]
    assert "(-1)^0 x 2^(15-15) x 1.0000000000b = 1.0" in caption.get_text()
    assert "relative rounding error 0 (exact)" in caption.get_text()


def test_bit_layout_without_caption_without_value_and_from_a_code():
    ax = plot_bit_layout("bf16", -2.0, caption=False)
    assert digits(ax) == "1100000000000000" and "caption" not in named_artists(ax)
    ax = plot_bit_layout("fp8_e4m3")
    colours = [tuple(p.get_facecolor()) for p in boxes(ax)]  # sign, exponent and mantissa in three colours
    assert len(set(colours)) == 3 and colours[0] != colours[1] == colours[4] != colours[5] == colours[7]
    assert digits(ax) == ""  # no value: empty boxes
    fig, ax = plt.subplots()
    assert plot_bit_layout("fp16", ax=ax, code=0x7C01) is ax
    assert digits(ax) == "0111110000000001" and "NaN" in named_artists(ax)["caption"].get_text()


@pytest.mark.parametrize("name", list(FORMATS))
def test_bit_layout_every_format_and_extreme_value(name):
    f = FORMATS[name]
    for value in (-0.0, -f.smallest_subnormal * 3, f.max * 4, 1e39, math.nan):
        ax = plot_bit_layout(name, value)
        assert len(boxes(ax)) == f.bits
        info = describe_value(value, name)
        assert digits(ax) == ("" if info.code is None else format(info.code, f"0{f.bits}b"))
        plt.close(ax.figure)


def test_spacing_fp16_line_spans_subnormal_to_max():
    ax = plot_spacing()
    x, y = named_artists(ax)["fp16"].get_data()
    assert (x.min(), x.max(), y.min()) == (2.0**-24, 65504.0, 2.0**-24)
    assert y.max() == 2.0**5  # the top binade [2**15, 65504]: gap 2**(15-10)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("magnitude |x|", "gap to next representable value")
    assert named_artists(ax)["fp16 max"].get_xdata()[0] == 65504.0
    assert named_artists(ax)["fp16 smallest normal"].get_xdata()[0] == 2.0**-14
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "max", "smallest normal"} == set(labels)


def test_spacing_custom_formats():
    ax = plot_spacing([FloatFormat("mine", 3, 4, "finite"), FloatFormat("tiny", 1, 0, "fnuz")])
    assert named_artists(ax)["mine"].get_xdata().max() == FloatFormat("mine", 3, 4, "finite").max
    assert named_artists(ax)["tiny"].get_xdata().max() == 1.0  # e1m0 fnuz: 0, 1, NaN and -1


def test_range_precision_bars_come_from_constants():
    ax = plot_range_precision()
    assert len(ax.get_yticklabels()) == len(FORMATS)
    normal = named_artists(ax)["fp16 normals"]
    sub = named_artists(ax)["fp16 subnormals"]
    assert normal.get_x() == 2.0**-14 and normal.get_x() + normal.get_width() == pytest.approx(65504.0)
    assert sub.get_x() == 2.0**-24
    assert sub.get_alpha() < 1 and sub.get_hatch()
    bf16 = named_artists(ax)["bf16 normals"]
    fp32 = named_artists(ax)["fp32 normals"]
    assert bf16.get_x() + bf16.get_width() == pytest.approx(FORMATS["bf16"].max, rel=1e-12)
    assert bf16.get_height() < named_artists(ax)["fp16 normals"].get_height() < fp32.get_height()
    assert ax.get_xscale() == "log"
    assert "eps 0.0078, 2.4 digits" in ax.get_yticklabels()[3].get_text()  # (7 + 1) log10 2 = 2.41


def test_range_precision_subset_order_and_no_subnormals_for_m0():
    ax = plot_range_precision(["bf16", FloatFormat("e5m0", 5, 0)])
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()] == ["bf16", "e5m0"]
    assert "e5m0 subnormals" not in named_artists(ax)


def test_rounding_error_stays_under_unit_roundoff_for_normals():
    ax = plot_rounding_error(["fp16", "fp8_e4m3"])
    assert ax.get_xscale() == ax.get_yscale() == "log"
    for name in ("fp16", "fp8_e4m3"):
        f = FORMATS[name]
        line = next(ln for ln in ax.get_lines() if ln.get_label().startswith(name + ":"))
        x, err = line.get_xdata(), line.get_ydata()
        assert len(x) == 3000 and x[0] == pytest.approx(2.0**-30) and x[-1] == pytest.approx(2.0**20)
        normal = (x >= f.smallest_normal) & (x <= f.max)
        assert np.nanmax(err[normal]) <= f.unit_roundoff
        assert np.nanmax(err[x < f.smallest_normal]) > f.unit_roundoff  # subnormals: larger errors
        assert np.nanmax(err[x < f.smallest_subnormal / 2]) == 1.0  # flushed to zero
        dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and ln.get_ydata()[0] == f.unit_roundoff]
        assert dashed
    fp16 = next(ln for ln in ax.get_lines() if ln.get_label().startswith("fp16:"))
    assert np.isnan(fp16.get_ydata()[fp16.get_xdata() > 65520]).all()  # inf: not drawn
    e4m3 = next(ln for ln in ax.get_lines() if ln.get_label().startswith("fp8_e4m3:"))
    beyond = e4m3.get_ydata()[e4m3.get_xdata() > 1000]
    assert ((beyond > 0.5) & (beyond < 1)).all()  # saturated at 448


def test_rounding_error_custom_x_and_modes():
    ax = plot_rounding_error("bf16", x=[1.5, 1.0, 1.005859375], rounding="toward_zero")
    line = ax.get_lines()[0]
    assert list(line.get_xdata()) == [1.0, 1.005859375, 1.5]  # sorted
    err = line.get_ydata()
    assert np.isnan(err[[0, 2]]).all()  # exact values: no point on a log axis
    assert err[1] == pytest.approx(0.005859375 / 1.005859375)  # truncated to 1.0, not rounded up


def test_number_line_ticks_every_value():
    ax = plot_number_line("fp8_e4m3")
    n = sum(len(c.get_segments()) for c in ax.collections)
    assert n == len(representable_values("fp8_e4m3")) == 127
    assert ax.get_xlim() == (0.0, 448.0)
    assert "55 of the 126 positive values are below 1" in ax.get_title(loc="left")


def test_number_line_negative_range_symlog_and_zoom():
    ax = plot_number_line("fp4_e2m1", lo=-6)
    assert sum(len(c.get_segments()) for c in ax.collections) == 15  # -0 and +0 are one value
    ax = plot_number_line("fp6_e3m2", hi=2, scale="symlog")
    assert ax.get_xscale() == "symlog"
    assert sum(len(c.get_segments()) for c in ax.collections) == 17


def test_number_line_refuses_limits_in_the_wrong_order():
    with pytest.raises(ValueError, match="lo=5"):
        plot_number_line("fp8_e4m3", lo=5, hi=1)


def test_bit_layouts_with_one_width_have_boxes_of_one_size():
    """Drawn with width=32, fp32's and fp8's boxes are equally wide and every row starts at the left
    edge, so each field's drawn width is proportional to its bits (lesson 01 compares them by eye)."""
    fig, axes = plt.subplots(3, 1, figsize=(11, 7))
    for ax, name in zip(axes, ("fp32", "fp16", "fp8_e4m3")):
        plot_bit_layout(name, 0.1, ax=ax, width=32)
    fig.canvas.draw()
    widths, lefts = set(), set()
    for ax in axes:
        boxes = [p.get_window_extent() for p in ax.patches if isinstance(p, Rectangle)]
        widths |= {round(b.width, 3) for b in boxes}
        lefts.add(round(min(b.x0 for b in boxes), 3))
    assert len(widths) == 1 and len(lefts) == 1


def test_number_line_title_claims_short_subnormal_ticks_only_where_they_show():
    """On [0, 8] fp8 e4m3's 7 subnormals (below 2^-6) fill 0.2% of the axis: the title says they crowd at 0;
    on a symlog axis, or zoomed in, they are visible and the title keys the tick heights."""
    crowded = plot_number_line("fp8_e4m3", 0, 8).get_title(loc="left")
    assert "short: subnormal" not in crowded and "its 7 subnormals, below 0.015625, crowd at 0" in crowded
    assert "tall: normal, short: subnormal" in plot_number_line("fp8_e4m3", scale="symlog").get_title(loc="left")
    zoom = plot_number_line("fp8_e4m3", 0, 0.1)
    assert "tall: normal, short: subnormal" in zoom.get_title(loc="left")
    short = [c for c in zoom.collections if c.get_segments() and c.get_segments()[0][1][1] == 0.6]
    assert len(short[0].get_segments()) == 7  # the 7 short ticks the title names
