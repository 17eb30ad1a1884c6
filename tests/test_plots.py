"""Tests of amp_lessons.plots: the pictures show what the formats engine says."""

import matplotlib

matplotlib.use("Agg")

import math

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.patches import Rectangle

from amp_lessons.formats import FORMATS, FloatFormat, representable_values
from amp_lessons.plots import (
    _staircase,
    describe_code,
    describe_value,
    plot_bit_layout,
    plot_number_line,
    plot_range_precision,
    plot_rounding_error,
    plot_spacing,
)
from amp_lessons.style import FORMAT_COLORS, style_context


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def by_gid(ax, gid):
    return [a for a in ax.get_children() if a.get_gid() == gid]


def digits(ax) -> str:
    return "".join(t.get_text() for t in by_gid(ax, "bit digit"))


def boxes(ax):
    return [p for p in ax.patches if isinstance(p, Rectangle)]


# --- describe_value / describe_code ------------------------------------------------------------


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
    [
        (1e6, "fp16", "overflow to inf", math.inf),
        (65520.0, "fp16", "overflow to inf", math.inf),  # the tie above max rounds up: inf
        (65519.0, "fp16", "normal", 65504.0),
        (1e6, "fp8_e4m3", "overflow saturated", 448.0),
        (464.0, "fp8_e4m3", "normal", 448.0),  # the tie rounds to the even 448: no overflow
        (465.0, "fp8_e4m3", "overflow saturated", 448.0),
        (1e6, "fp8_e4m3fnuz", "overflow to NaN", math.nan),
        (1e6, "fp4_e2m1", "overflow saturated", 6.0),
        (1e39, "fp16", "overflow to inf", math.inf),  # beyond float32 too
        (1e-10, "fp16", "underflow to zero", 0.0),
        (1e-50, "fp32", "underflow to zero", 0.0),
        (2.0**-20, "fp16", "subnormal", 2.0**-20),
        (-0.0, "fp16", "zero", -0.0),
        (math.inf, "bf16", "inf", math.inf),
        (math.nan, "fp16", "NaN", math.nan),
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


def test_describe_code_round_trips_every_fp8_code():
    for code in range(256):
        info = describe_code(code, "fp8_e5m2")
        assert info.code == code and info.typed is None
        if not math.isnan(info.stored):
            assert describe_value(info.stored, "fp8_e5m2").code == code


@pytest.mark.parametrize("bad, exc", [("0.1", TypeError), (True, TypeError), ([1.0], TypeError)])
def test_describe_value_rejects_non_numbers(bad, exc):
    with pytest.raises(exc, match=repr(bad).replace("[", r"\[").replace("]", r"\]")):
        describe_value(bad, "fp16")


def test_describe_code_rejects_bad_codes():
    with pytest.raises(ValueError, match="65536"):
        describe_code(65536, "fp16")
    with pytest.raises(TypeError, match="1.5"):
        describe_code(1.5, "fp16")


# --- bit layout --------------------------------------------------------------------------------


def test_bit_layout_one_in_fp16():
    ax = plot_bit_layout("fp16", 1.0)
    assert digits(ax) == "0011110000000000"
    assert describe_value(1.0, "fp16").bit_string == "0 01111 0000000000"
    assert len(boxes(ax)) == 16
    texts = [t.get_text() for t in ax.texts]
    assert {"sign", "exponent (5 bits, bias 15)", "mantissa (10 bits)"} <= set(texts)
    (caption,) = by_gid(ax, "caption")
    assert "(-1)^0 x 2^(15-15) x 1.0000000000b = 1.0" in caption.get_text()
    assert "relative rounding error 0 (exact)" in caption.get_text()


def test_bit_layout_without_caption_keeps_the_digits():
    ax = plot_bit_layout("bf16", -2.0, caption=False)
    assert digits(ax) == "1100000000000000" and by_gid(ax, "caption") == []


def test_bit_layout_fields_have_three_colours():
    ax = plot_bit_layout("fp8_e4m3")
    colours = [tuple(p.get_facecolor()) for p in boxes(ax)]
    assert len(set(colours)) == 3
    assert colours[0] != colours[1] == colours[4] != colours[5] == colours[7]
    assert digits(ax) == ""  # no value: empty boxes


@pytest.mark.parametrize("name", list(FORMATS))
def test_bit_layout_every_format_and_extreme_value(name):
    f = FORMATS[name]
    for value in (
        0.0,
        -0.0,
        1.0,
        -2.5,
        f.smallest_subnormal,
        -f.smallest_subnormal * 3,
        f.max,
        f.max * 4,
        1e39,
        math.inf,
        -math.inf,
        math.nan,
    ):
        ax = plot_bit_layout(name, value)
        assert len(boxes(ax)) == f.bits
        info = describe_value(value, name)
        assert digits(ax) == ("" if info.code is None else format(info.code, f"0{f.bits}b"))
        plt.close(ax.figure)


def test_bit_layout_from_code_and_given_axes():
    fig, ax = plt.subplots()
    assert plot_bit_layout("fp16", ax=ax, code=0x7C01) is ax
    assert digits(ax) == "0111110000000001"
    assert "NaN" in by_gid(ax, "caption")[0].get_text()


def test_bit_layout_rejects_bad_input():
    with pytest.raises(ValueError, match="fp99.*fp16"):
        plot_bit_layout("fp99", 1.0)
    with pytest.raises(TypeError, match="'abc'"):
        plot_bit_layout("fp16", "abc")
    with pytest.raises(ValueError, match="'sideways'"):
        plot_bit_layout("fp16", 1.0, rounding="sideways")
    with pytest.raises(ValueError, match="not both"):
        plot_bit_layout("fp16", 1.0, code=1)
    with pytest.raises(TypeError, match="Axes"):
        plot_bit_layout("fp16", 1.0, ax="left")


# --- spacing ----------------------------------------------------------------------------------


def test_spacing_fp16_line_spans_subnormal_to_max():
    ax = plot_spacing()
    (line,) = by_gid(ax, "fp16")
    assert line.get_xdata().max() == 65504.0
    assert line.get_xdata().min() == 2.0**-24
    assert line.get_ydata().min() == 2.0**-24
    assert line.get_ydata().max() == 2.0**5  # the top binade [2**15, 65504]: gap 2**(15-10)
    assert ax.get_xscale() == ax.get_yscale() == "log"
    assert ax.get_xlabel() == "magnitude |x|"
    assert ax.get_ylabel() == "gap to next representable value"
    assert by_gid(ax, "fp16 max")[0].get_xdata()[0] == 65504.0
    assert by_gid(ax, "fp16 smallest normal")[0].get_xdata()[0] == 2.0**-14
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"fp32", "tf32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2", "max", "smallest normal"} == set(labels)


def test_spacing_colours_follow_the_style():
    ax = plot_spacing(("bf16", "fp8_e4m3"))
    assert matplotlib.colors.to_hex(by_gid(ax, "bf16")[0].get_color()) == FORMAT_COLORS["bf16"].lower()


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.bits <= 8])
def test_staircase_matches_the_real_gaps(name):
    """At every representable value but max, the staircase equals the gap to the next value."""
    values = representable_values(name).double().numpy()
    edges, gaps = _staircase(FORMATS[name])
    pos = values[values > 0]
    real_gaps = np.diff(pos)
    stair = gaps[np.searchsorted(edges, pos[:-1], side="right") - 1]
    np.testing.assert_array_equal(stair, real_gaps)


def test_spacing_custom_and_degenerate_formats():
    ax = plot_spacing([FloatFormat("mine", 3, 4, "finite"), FloatFormat("empty", 1, 0, "fn")])
    assert by_gid(ax, "mine")[0].get_xdata().max() == FloatFormat("mine", 3, 4, "finite").max
    assert any("no positive values" in t.get_text() for t in ax.get_legend().get_texts())


@pytest.mark.parametrize(
    "bad, exc, match", [((), ValueError, "empty"), (("fp16", "fp99"), ValueError, "fp99"), (16, TypeError, "16")]
)
def test_spacing_rejects_bad_formats(bad, exc, match):
    with pytest.raises(exc, match=match):
        plot_spacing(bad)


# --- range and precision -------------------------------------------------------------------------


def test_range_precision_bars_come_from_constants():
    ax = plot_range_precision()
    assert len(ax.get_yticklabels()) == len(FORMATS)
    (normal,) = by_gid(ax, "fp16 normals")
    (sub,) = by_gid(ax, "fp16 subnormals")
    assert normal.get_x() == 2.0**-14 and normal.get_x() + normal.get_width() == pytest.approx(65504.0)
    assert sub.get_x() == 2.0**-24
    assert sub.get_alpha() < 1 and sub.get_hatch()
    (bf16,) = by_gid(ax, "bf16 normals")
    (fp32,) = by_gid(ax, "fp32 normals")
    assert bf16.get_x() + bf16.get_width() == pytest.approx(FORMATS["bf16"].max, rel=1e-12)
    assert bf16.get_height() < by_gid(ax, "fp16 normals")[0].get_height() < fp32.get_height()
    assert ax.get_xscale() == "log"
    assert "eps 0.0078, 2 digits" in ax.get_yticklabels()[3].get_text()


def test_range_precision_subset_order_and_no_subnormals_for_m0():
    ax = plot_range_precision(["bf16", FloatFormat("e5m0", 5, 0)])
    assert [t.get_text().split()[0] for t in ax.get_yticklabels()] == ["bf16", "e5m0"]
    assert by_gid(ax, "e5m0 subnormals") == []


# --- rounding error ------------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    "x, exc, match",
    [
        ([1.0, -2.0], ValueError, "-2.0"),
        ([[1.0]], ValueError, "shape"),
        ([], ValueError, "shape"),
        ("abc", TypeError, "str"),
        ([1.0, float("inf")], ValueError, "inf"),
    ],
)
def test_rounding_error_rejects_bad_x(x, exc, match):
    with pytest.raises(exc, match=match):
        plot_rounding_error("fp16", x=x)


# --- number line -------------------------------------------------------------------------------


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


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(fmt="fp16"), "16 bits"),
        (dict(fmt="fp8_e4m3", lo=5, hi=1), "lo=5"),
        (dict(fmt="fp8_e4m3", scale="log2"), "'log2'"),
        (dict(fmt="fp8_e4m3", hi=math.inf), "inf"),
    ],
)
def test_number_line_rejects_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        plot_number_line(**kwargs)


def test_plots_keep_user_style_outside():
    """The functions draw in the course style without changing the caller's rcParams."""
    before = plt.rcParams["font.size"]
    plot_spacing(("fp16",))
    assert plt.rcParams["font.size"] == before
    with style_context():
        assert plt.rcParams["font.size"] == 11


def test_every_plot_draws_without_warnings(tmp_path):
    for ax in (
        plot_bit_layout("fp32", -0.1),
        plot_spacing(),
        plot_range_precision(),
        plot_rounding_error(["fp16", "bf16"], x=torch.logspace(-10, 10, 200, base=2.0)),
        plot_number_line("fp8_e5m2", scale="symlog"),
    ):
        ax.figure.savefig(tmp_path / "p.png")


# --- lesson 02 plots --------------------------------------------------------------------------


def test_error_vs_k_plot_lines_and_trend():
    from amp_lessons.plots import plot_error_vs_k

    data = {
        "k": [16, 64, 256],
        "rms": {"tf32": [1e-3, 2e-3, 4e-3], "bf16": [8e-3, 1.6e-2, 3.2e-2]},
        "ref_rms": [4, 8, 16],
    }
    ax = plot_error_vs_k(data, extra={"mine": [1, 2, 4]})
    assert [ln.get_gid() for ln in ax.get_lines() if ln.get_gid()] == ["tf32", "bf16", "mine"]
    trend = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--" and ln.get_gid() is None]
    assert list(trend[0].get_ydata()) == pytest.approx([1e-3, 2e-3, 4e-3])  # sqrt(K) through the first point
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    with pytest.raises(ValueError, match="'bf16' has 2 values for 3"):
        plot_error_vs_k({"k": [1, 2, 3], "rms": {"bf16": [1, 2]}})
    with pytest.raises(TypeError, match="error_vs_k"):
        plot_error_vs_k([1, 2])


def test_matmul_errors_plot_bars():
    from amp_lessons.plots import plot_matmul_errors
    from amp_lessons.tf32 import MatmulError

    errs = [
        MatmulError("fp32", 1e-4, 1e-6, 1e-5, "measured on this CPU"),
        MatmulError("tf32 emulated (ties away)", 0.1, 2e-3, 1e-2, "emulated bit-exactly"),
    ]
    ax = plot_matmul_errors(errs, reference={"tf32, A100 (seed)": 0.0022})
    bars = [p for p in ax.patches]
    assert [b.get_width() for b in bars] == [1e-6, 2e-3, 0.0022]
    assert bars[1].get_hatch() == "//" and bars[0].get_hatch() is None
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fp32", "tf32 emulated (ties away)", "tf32, A100 (seed)"]
    with pytest.raises(ValueError, match="empty"):
        plot_matmul_errors([])


# --- lesson 03 plots --------------------------------------------------------------------------


def test_running_sums_plot_lines_limit_and_inf_marker():
    from amp_lessons.fp16 import running_sums_of_copies
    from amp_lessons.plots import plot_running_sums

    sums = running_sums_of_copies(16.0, 4096)
    ax = plot_running_sums(sums, limit=65504, limit_label="fp16 max 65504")
    (fp16_line,) = by_gid(ax, "fp16 running sum")
    assert list(fp16_line.get_xdata()[:3]) == [1, 2, 3]
    assert fp16_line.get_ydata()[-1] == 32768.0 and fp16_line.get_ydata()[1] == 32.0
    (cumsum,) = by_gid(ax, "torch.cumsum (fp16 tensor)")
    assert np.isnan(cumsum.get_ydata()[4094]) and cumsum.get_ydata()[4093] == 65504.0  # inf is not drawn
    (marker,) = by_gid(ax, "torch.cumsum (fp16 tensor) inf")
    assert list(marker.get_xdata()) == [4095] and list(marker.get_ydata()) == [65504.0]  # term 4095 = index 4094
    assert any("inf from term 4095" in t.get_text() for t in ax.texts)
    (limit,) = by_gid(ax, "limit")
    assert list(limit.get_ydata()) == [65504, 65504]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [*sums, "fp16 max 65504"]
    assert by_gid(ax, "fp16 running sum inf") == []


def test_running_sums_plot_lists_and_bad_input():
    from amp_lessons.plots import plot_running_sums

    ax = plot_running_sums({"mine": [1.0, 2.0, -math.inf], "bf16": torch.ones(2)})
    assert by_gid(ax, "mine inf")[0].get_marker() == "v"  # -inf: a triangle pointing down
    assert by_gid(ax, "limit") == []
    with pytest.raises(TypeError, match="non-empty dict"):
        plot_running_sums({})
    with pytest.raises(ValueError, match="'x'.*1-D"):
        plot_running_sums({"x": [[1.0]]})
    with pytest.raises(ValueError, match="finite"):
        plot_running_sums({"x": [1.0]}, limit=math.inf)


@pytest.fixture(scope="module")
def census():
    from amp_lessons.fp16 import gradient_census

    return gradient_census()


def _pct_in_legend(ax, fraction):
    return any(f"{100 * fraction:.3g}%" in t.get_text() for t in ax.get_legend().get_texts())


def test_gradient_histogram_regions_and_fractions(census):
    from amp_lessons.plots import plot_gradient_histogram

    ax = plot_gradient_histogram(census)
    (zero,) = by_gid(ax, "region zero")
    (sub,) = by_gid(ax, "region subnormal")
    (normal,) = by_gid(ax, "region normal")
    (over,) = by_gid(ax, "region overflow")
    assert sub.get_x() == pytest.approx(-25)  # half the smallest subnormal 2**-24 rounds to 0
    assert normal.get_x() == pytest.approx(-14)
    assert over.get_x() == pytest.approx(math.log2(65520))
    assert zero.get_x() < -25
    acts = by_gid(ax, "activation gradients")[0]
    counts = acts.get_data().values
    fr = census["fractions"]["activations"]
    assert counts.sum() == pytest.approx(1 - fr["zero"])  # per binade, of all values: zeros are off the log axis
    assert _pct_in_legend(ax, fr["subnormal"]) and _pct_in_legend(ax, fr["zero"])
    assert ax.get_xlabel() == "log2 |gradient|" and "fp16" in ax.get_title(loc="left")


def test_gradient_histogram_scale_moves_values_out_of_subnormals(census):
    from amp_lessons.fp16 import census_fractions
    from amp_lessons.plots import plot_gradient_histogram

    ax = plot_gradient_histogram(census, scale=1024.0)
    scaled = census_fractions(census["activations"] * 1024.0)
    assert scaled["subnormal"] < census["fractions"]["activations"]["subnormal"] / 10
    assert _pct_in_legend(ax, scaled["normal"])
    assert "1024" in ax.get_xlabel() and "scaled by 1024" in ax.get_title(loc="left")
    ax = plot_gradient_histogram(census, "bf16", scale=2.0**120)  # most overflow in bf16
    assert any("overflow" in t.get_text() for t in ax.get_legend().get_texts())
    with pytest.raises(ValueError, match="scale"):
        plot_gradient_histogram(census, scale=0)
    with pytest.raises(TypeError, match="gradient_census"):
        plot_gradient_histogram({"weights": torch.ones(3)})


def test_loss_curves_plot():
    from amp_lessons.plots import plot_loss_curves

    result = {
        "loss": {"fp32": [1.0, 0.1, 0.01], "fp16 weights": [1.0, 0.2, 0.2], "fp32 master weights": [1, 0.1, 0.01]},
        "lost_fraction": {"fp32": 0.0, "fp16 weights": 0.5, "fp32 master weights": 0.0},
        "steps": 3,
    }
    ax = plot_loss_curves(result)
    assert ax.get_yscale() == "log"
    assert [ln.get_gid() for ln in ax.get_lines()] == ["fp32", "fp16 weights", "fp32 master weights"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1] == "fp16 weights: final loss 0.2, 50% of updates lost"
    with pytest.raises(TypeError, match="train_master_weights"):
        plot_loss_curves({"fp32": [1.0]})


def test_format_regions_from_the_constants():
    from amp_lessons.plots import REGION_FORMATS, plot_format_regions

    ax = plot_format_regions(1e-5)
    assert [t.get_text() for t in ax.get_yticklabels()] == list(REGION_FORMATS)
    (sub,) = by_gid(ax, "fp16 subnormal")
    (normal,) = by_gid(ax, "fp16 normal")
    (over,) = by_gid(ax, "fp16 inf")
    assert sub.get_x() == 2.0**-25 and normal.get_x() == 2.0**-14
    assert normal.get_x() + normal.get_width() == pytest.approx(65520.0) and over.get_x() == 65520.0
    (sat,) = by_gid(ax, "fp8_e4m3 saturate")
    assert sat.get_x() == 464.0  # 448 + half its gap of 32
    assert by_gid(ax, "fp32 zero")[0].get_width() == pytest.approx(2.0**-150 - 1e-50)
    (line,) = by_gid(ax, "marker")
    assert list(line.get_xdata()) == [1e-5, 1e-5] and line.get_visible()
    assert ax.get_xscale() == "log" and ax.get_xlim() == (1e-50, 1e40)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["rounds to zero", "subnormal", "normal", "overflow to inf", "overflow, saturates at max"]


def test_format_regions_edges_nan_and_custom_formats():
    from amp_lessons.plots import plot_format_regions

    ax = plot_format_regions(0.0)
    assert by_gid(ax, "marker")[0].get_xdata()[0] == 1e-50  # clipped to the axis
    ax = plot_format_regions(-math.inf, ["fp8_e4m3fnuz", FloatFormat("e5m0", 5, 0)])
    assert by_gid(ax, "marker")[0].get_xdata()[0] == 1e40
    assert by_gid(ax, "fp8_e4m3fnuz nan") and by_gid(ax, "e5m0 subnormal") == []
    ax = plot_format_regions(math.nan)
    assert not by_gid(ax, "marker")[0].get_visible() and "NaN" in ax.get_title(loc="left")
    with pytest.raises(ValueError, match="xlim"):
        plot_format_regions(1.0, xlim=(1.0, 0.5))
    with pytest.raises(TypeError, match="value"):
        plot_format_regions("big")


def test_lesson_03_plots_draw_without_warnings(tmp_path, census):
    from amp_lessons.fp16 import running_sums_of_copies
    from amp_lessons.plots import plot_format_regions, plot_gradient_histogram, plot_loss_curves, plot_running_sums

    result = {"loss": {"fp32": [1.0, 0.5]}, "lost_fraction": {}, "steps": 2}
    for ax in (
        plot_running_sums(running_sums_of_copies(16.0, 4096), limit=65504.0),
        plot_gradient_histogram(census),
        plot_loss_curves(result),
        plot_format_regions(1e39),
    ):
        ax.figure.savefig(tmp_path / "p.png")


def test_running_sums_minus_shows_the_error():
    from amp_lessons.plots import plot_running_sums

    ax = plot_running_sums({"a": [1.0, 2.0, 3.0], "exact": [1.0, 2.5, 3.5]}, minus="exact")
    (line,) = [ln for ln in ax.get_lines() if ln.get_gid() == "a"]
    assert list(line.get_ydata()) == [0.0, -0.5, -0.5]
    assert "exact" in ax.get_ylabel()
    with pytest.raises(ValueError, match="'nope' is not one of the labels"):
        plot_running_sums({"a": [1.0]}, minus="nope")


# --- lesson 05: loss scaling ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def census05():
    from amp_lessons.fp16 import gradient_census

    return gradient_census()


def test_scale_sweep_plot_draws_the_sweep_and_the_window(census05):
    from amp_lessons.plots import plot_scale_sweep
    from amp_lessons.scaling import safe_window, scale_sweep

    sw = scale_sweep(census05)
    ax = plot_scale_sweep(sw)
    (line,) = by_gid(ax, "underflow")
    assert list(line.get_xdata()) == list(range(33))
    floor = ax.get_ylim()[0]
    assert [y == floor for y in line.get_ydata()] == [u == 0 for u in sw["underflow"]]
    (span,) = by_gid(ax, "window")
    lo, hi = safe_window(sw)
    assert span.get_x() == math.log2(lo) and span.get_x() + span.get_width() == math.log2(hi)
    assert ax.get_xticklabels()[0].get_text().startswith("2^")
    assert not by_gid(plot_scale_sweep(sw, window=False), "window")
    with pytest.raises(TypeError):
        plot_scale_sweep({"scale": [1.0]})


def test_scaled_histogram_moves_with_the_exponent(census05):
    from amp_lessons.plots import plot_scaled_histogram

    a = plot_scaled_histogram(census05, 0)
    b = plot_scaled_histogram(census05, 32)
    ea = by_gid(a, "activations fill")[0].get_data().edges
    eb = by_gid(b, "activations fill")[0].get_data().edges
    assert np.array_equal(eb, ea + 32)
    assert a.get_xlim() == b.get_xlim() and eb[-1] <= b.get_xlim()[1]
    assert by_gid(a, "region overflow") and by_gid(a, "region zero")
    h = by_gid(a, "activations fill")[0].get_data().values
    assert h.sum() == pytest.approx(1 - float((census05["activations"] == 0).float().mean()))
    with pytest.raises(TypeError):
        plot_scaled_histogram(census05, 1.5)


def test_scaler_history_from_simulation_and_comparison():
    from amp_lessons.plots import plot_scaler_history
    from amp_lessons.scaling import compare_with_gradscaler, simulate_scaler

    h = simulate_scaler(50, (5, 6), growth_interval=10)
    ax = plot_scaler_history(h)
    (line,) = by_gid(ax, "scale")
    assert list(line.get_ydata()) == [math.log2(s) for s in h["scale"]]
    (marks,) = by_gid(ax, "scale skipped")
    assert list(marks.get_xdata()) == [5, 6]
    assert ax.get_yticklabels()[0].get_text().startswith("2^")
    rows = compare_with_gradscaler(12)
    ax = plot_scaler_history(rows)
    assert by_gid(ax, "DynamicScaler (ours)") and by_gid(ax, "torch.amp.GradScaler")
    assert list(by_gid(ax, "torch.amp.GradScaler skipped")[0].get_xdata()) == [3, 4, 10]
    # a scale that underflowed to 0 in float32 is left out, not an error
    ax = plot_scaler_history(simulate_scaler(60, range(60), init_scale=1.0, backoff_factor=0.05))
    assert np.isnan(by_gid(ax, "scale")[0].get_ydata()[-1])
    with pytest.raises(TypeError):
        plot_scaler_history([1, 2])


def test_train_comparison_plot():
    from amp_lessons.plots import plot_train_comparison

    result = {
        "loss": {"fp32": [1.0, 0.5], "fp16 autocast, no scaling": [1.0, 1.0]},
        "zero_grad_fraction": {"fp32": 0.0, "fp16 autocast, no scaling": 1.0},
    }
    ax = plot_train_comparison(result)
    assert ax.get_yscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        "fp32: final loss 0.5, 0% of gradients exactly 0",
        "fp16 autocast, no scaling: final loss 1, 100% of gradients exactly 0",
    ]
    with pytest.raises(TypeError):
        plot_train_comparison({})


# --- lesson 06: end to end -----------------------------------------------------------------------


def _e2e_rows():
    return [
        {"size": 64, "dtype": "fp32", "median_s": 1e-4, "tflops": 0.005, "percent_of_peak": None, "skipped": None},
        {"size": 128, "dtype": "fp32", "median_s": 5e-4, "tflops": 0.008, "percent_of_peak": None, "skipped": None},
        {"size": 64, "dtype": "fp16", "median_s": 1e-3, "tflops": 0.0005, "percent_of_peak": None, "skipped": None},
        {"size": 128, "dtype": "fp16", "median_s": None, "tflops": None, "percent_of_peak": None, "skipped": "slow"},
        {"size": 64, "dtype": "tf32", "median_s": None, "tflops": None, "percent_of_peak": None, "skipped": "no GPU"},
    ]


def test_plot_throughput_draws_only_measured_points():
    from amp_lessons.plots import plot_throughput

    ax = plot_throughput(_e2e_rows())
    lines = {ln.get_gid(): ln for ln in ax.lines if ln.get_gid()}
    assert set(lines) == {"fp32", "fp16"}
    assert list(lines["fp32"].get_xdata()) == [64, 128] and list(lines["fp16"].get_xdata()) == [64]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "TFLOP/s" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "fp16 (1 size skipped)" in labels and "tf32: not measured here" in labels
    with pytest.raises(TypeError, match="matmul_throughput"):
        plot_throughput([{"size": 1}])


def test_plot_training_runs_legend_and_skipped_runs():
    from amp_lessons.plots import plot_training_runs

    runs = [
        {"config": "fp32", "ran": True, "loss": [4.0, 2.0, 1.0], "step_time_s": 0.05, "peak_memory_bytes": 3 * 2**20},
        {
            "config": "bf16 autocast",
            "ran": True,
            "loss": [4.0, 2.1, 1.1],
            "step_time_s": 0.03,
            "peak_memory_bytes": 2 * 2**20,
        },
        {"config": "tf32", "ran": False, "reason": "not run: no TF32 here"},
    ]
    ax = plot_training_runs(runs)
    assert [ln.get_gid() for ln in ax.lines] == ["fp32", "bf16 autocast"]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["fp32: 50.0 ms/step, peak 3.0 MiB", "bf16 autocast: 30.0 ms/step, peak 2.0 MiB"]
    assert any("tf32: no TF32 here" in t.get_text() for t in ax.texts)
    with pytest.raises(TypeError, match="e2e.train"):
        plot_training_runs([{"loss": [1.0]}])


def test_plot_inference_errors_and_times():
    from amp_lessons.plots import plot_inference

    rows = [
        {"variant": "fp32", "max_abs_error": 0.0, "time_s": 2e-3},
        {"variant": "bf16 autocast", "max_abs_error": 1e-2, "time_s": 1e-3},
        {"variant": "fp16 weights", "max_abs_error": 2e-3, "time_s": 4e-3},
    ]
    ax = plot_inference(rows)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fp32", "bf16 autocast", "fp16 weights"]
    assert ax.get_xscale() == "log"
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0 (reference)", "0.01", "0.002"]
    time_ax = [a for a in ax.figure.axes if a is not ax][0]
    assert [round(p.get_width(), 6) for p in time_ax.patches] == [2.0, 1.0, 4.0]
    with pytest.raises(TypeError, match="inference_compare"):
        plot_inference([])


# --- lesson 07: fp8 --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fp8_tensors():
    from amp_lessons.fp8 import model_tensors

    return model_tensors()


def test_plot_fp8_window(fp8_tensors):
    from amp_lessons.plots import plot_fp8_window

    ax = plot_fp8_window(fp8_tensors)
    gids = {a.get_gid() for a in ax.get_children()}
    assert set(fp8_tensors) <= gids and {"region zero", "region subnormal", "region normal", "region overflow"} <= gids
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("activation gradients") and "flush to 0" in t for t in labels)
    assert "fp8_e4m3" in ax.get_title(loc="left")
    ax = plot_fp8_window({"g": fp8_tensors["activation gradients"]}, "fp8_e5m2", scale=2.0**20)
    assert "2^20" not in ax.get_xlabel() and "1.04858e+06" in ax.get_xlabel()
    with pytest.raises(TypeError, match="non-empty dict"):
        plot_fp8_window({})
    with pytest.raises(ValueError, match="positive finite"):
        plot_fp8_window(fp8_tensors, scale=0)
    plt.close("all")


def test_plot_scaling_errors(fp8_tensors):
    from amp_lessons.fp8 import SCALING_METHODS, scaling_errors
    from amp_lessons.plots import plot_scaling_errors

    rows = scaling_errors(fp8_tensors)
    ax = plot_scaling_errors(rows)
    assert ax.get_yscale() == "log"
    assert [t.get_text() for t in ax.get_xticklabels()] == list(fp8_tensors)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(SCALING_METHODS)
    bars = [p for p in ax.patches if p.get_gid() == "per-tensor"]
    want = [r["relative error"] for r in rows if r["method"] == "per-tensor"]
    assert np.allclose([b.get_y() + b.get_height() for b in bars], want)  # bar tops at the errors
    inf_rows = [dict(rows[0], **{"relative error": math.inf})] + rows[1:]
    ax = plot_scaling_errors(inf_rows)
    assert any(t.get_text() == "inf" for t in ax.texts)
    with pytest.raises(TypeError, match="scaling_errors"):
        plot_scaling_errors([])
    plt.close("all")
