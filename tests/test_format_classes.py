"""One vocabulary for where a value lands in a format: FloatFormat.classify and .census, checked the ml_dtypes way,
one parametrized set of invariants over every format (and odd custom ones), every rounding and overflow mode."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from amp_lessons._emulate import torch_cast_infinity, torch_cast_overflow
from amp_lessons.formats import (
    _ALLOWED_OVERFLOW,
    CLASS_MEANINGS,
    CLASSES,
    FORMATS,
    ROUNDING_MODES,
    SCALE_FORMATS,
    Census,
    FloatFormat,
    from_bits,
)

CUSTOM = [
    FloatFormat("e3m4", 3, 4),
    FloatFormat("e4m0", 4, 0),
    FloatFormat("e6m9fn", 6, 9, "fn"),
    FloatFormat("e1m2fn", 1, 2, "fn"),
    FloatFormat("e1m3", 1, 3, "finite"),
    FloatFormat("e7m12fnuz", 7, 12, "fnuz"),
    FloatFormat("e2m0fn", 2, 0, "fn"),
]
ALL = list(FORMATS.values()) + CUSTOM
CASES = [(f, r, o) for f in ALL for r in ROUNDING_MODES for o in _ALLOWED_OVERFLOW[f.encoding]]
IDS = [f"{f.name}-{r}-{o}" for f, r, o in CASES]
RANK = {"zero": 0, "flushed": 1, "subnormal": 2, "normal": 3, "saturated": 4, "inf": 4, "nan": 4}


def names(f, x, rounding="nearest_even", overflow=None):
    return [CLASSES[i] for i in f.classify(torch.as_tensor(x, dtype=torch.float32), rounding, overflow).tolist()]


def up(v: float) -> float:
    return float(np.nextafter(np.float32(v), np.float32(np.inf)))


def down(v: float) -> float:
    return float(np.nextafter(np.float32(v), np.float32(0)))


def sweep(f: FloatFormat) -> torch.Tensor:
    """Positive float32 magnitudes from far below the smallest subnormal to far beyond max, every threshold and its
    float32 neighbours included, sorted."""
    grid = np.geomspace(f.smallest_subnormal / 64, min(f.max * 64, 3e38), 4000)
    marks = [f.underflow_threshold, f.smallest_subnormal, f.smallest_normal, f.max, f.overflow_threshold, 2 * f.max]
    marks = [m for m in marks if m < 3.4e38]
    pts = np.concatenate([grid, marks, [up(m) for m in marks], [down(m) for m in marks]]).astype(np.float32)
    return torch.from_numpy(np.unique(pts[pts > 0]))


@pytest.mark.parametrize("f,rounding,overflow", CASES, ids=IDS)
def test_classes_are_monotone_in_magnitude_and_symmetric(f, rounding, overflow):
    x = sweep(f)
    c = names(f, x, rounding, overflow)
    ranks = [RANK[k] for k in c]
    assert ranks == sorted(ranks), f"{f.name}: classes not monotone in |x|"
    assert set(c) <= {"flushed", "subnormal", "normal", "saturated", "inf", "nan"}
    beyond = {k for k in c if RANK[k] == 4}
    assert len(beyond) <= 1, f"{f.name}: more than one kind of overflow {beyond}"
    if f.encoding != "fnuz":  # fnuz has no -0, but negative values mirror the positive ones all the same
        assert names(f, -x, rounding, overflow) == c
    else:
        assert names(f, -x, rounding, overflow) == c


@pytest.mark.parametrize("f,rounding,overflow", CASES, ids=IDS)
def test_the_class_changes_across_each_threshold(f, rounding, overflow):
    assert names(f, [0.0, -0.0], rounding, overflow) == ["zero", "zero"]
    assert names(f, [f.max, f.smallest_normal], rounding, overflow) == ["normal", "normal"]
    sub = "subnormal" if f.mantissa_bits > 0 else "normal"
    assert names(f, [f.smallest_subnormal], rounding, overflow) == [sub]
    assert names(f, [float("nan")], rounding, overflow) == ["nan"]
    # far beyond the range, and infinity: what the overflow mode says (truncation never overflows: it clamps)
    expect = {"inf": "inf", "saturate": "saturated", "nan": "nan"}[overflow]
    if rounding == "toward_zero":  # truncation never overflows a finite value: it clamps to +-max
        expect = "saturated"
    if 2 * f.max < 3.4e38:
        assert names(f, [2 * f.max, -2 * f.max], rounding, overflow) == [expect, expect]
    inf_expect = {"inf": "inf", "saturate": "saturated", "nan": "nan"}[overflow]
    assert names(f, [math.inf], rounding, overflow) == [inf_expect]
    tiny_ok = f.underflow_threshold >= 2.0**-149  # fp32's half-subnormal is no float32: it has no underflow here
    if rounding == "nearest_even" and tiny_ok:
        assert names(f, [f.underflow_threshold], rounding, overflow) == ["flushed"]  # the tie goes to 0, the even one
        assert names(f, [up(f.underflow_threshold)], rounding, overflow) == [sub]
        if f.overflow_threshold < 3.4e38:
            at = names(f, [f.overflow_threshold], rounding, overflow)[0]
            over = bool(f.overflows(torch.tensor([f.overflow_threshold])))
            assert (RANK[at] == 4) == over, f"{f.name}: the tie at the overflow threshold"
            assert names(f, [down(f.overflow_threshold)], rounding, overflow) == ["normal"]  # rounds down to max
            assert names(f, [up(f.overflow_threshold)], rounding, overflow) == [expect]
    if rounding == "toward_zero" and tiny_ok:
        assert names(f, [down(f.smallest_subnormal)], rounding, overflow) == ["flushed"]


@pytest.mark.parametrize("f", ALL, ids=lambda f: f.name)
def test_every_code_of_a_format_is_classified_by_its_fields(f):
    """Each value a format holds lands in the class its bit fields name (exponent field 0: zero or subnormal;
    the special codes: inf or NaN), and it is never flushed or saturated."""
    if f.bits > 19:
        pytest.skip("fp32: 2**32 codes")
    codes = torch.arange(2**f.bits, dtype=torch.int64)
    v = from_bits(codes, f)
    m = f.mantissa_bits
    exp = (codes >> m) & ((1 << f.exponent_bits) - 1)
    man = codes & ((1 << m) - 1)
    want = torch.full_like(codes, CLASSES.index("normal"))
    want[(exp == 0) & (man != 0)] = CLASSES.index("subnormal")
    want[v == 0] = CLASSES.index("zero")
    want[torch.isinf(v)] = CLASSES.index("inf")
    want[torch.isnan(v)] = CLASSES.index("nan")
    if m == 0:  # no subnormals: exponent field 0 is zero
        assert not ((exp == 0) & (v != 0) & ~torch.isnan(v)).any() or f.encoding in ("fnuz",)
    got = f.classify(v, overflow="inf" if f.has_inf else None)
    bad = (got != want).nonzero().reshape(-1)[:5].tolist()
    assert not bad, [(hex(int(codes[i])), float(v[i]), CLASSES[int(got[i])], CLASSES[int(want[i])]) for i in bad]


TORCH = {n: FORMATS[n] for n in ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz")}


@pytest.mark.parametrize("name", list(TORCH))
def test_agrees_with_torchs_cast_on_a_million_inputs(name):
    """Against the installed torch's own cast (whatever it does on overflow, asked for explicitly): NaN, inf, zero,
    flushed and subnormal read off the cast's result; saturated where the cast gave +-max to a value that
    FloatFormat.overflows (an independent formula) says is beyond the range."""
    f = TORCH[name]
    dtype = f.torch_dtype
    g = torch.Generator().manual_seed(7)
    bits = torch.randint(-(2**31), 2**31, (1_000_000,), generator=g, dtype=torch.int64).to(torch.int32)
    x = bits.view(torch.float32)
    # plus values around the format's range, where the classes change
    lo = torch.randint(-(2**20), 2**20, (200_000,), generator=g).float()
    x = torch.cat([x, lo * f.smallest_subnormal / 2**18, lo * f.max / 2**19])
    overflow = torch_cast_overflow(dtype)
    if torch_cast_infinity(dtype) != overflow:
        x = x[~torch.isinf(x)]
    cast = x.to(dtype).float()
    want = torch.full(x.shape, CLASSES.index("normal"), dtype=torch.int64)
    want[(cast.abs() < f.smallest_normal) & (cast != 0)] = CLASSES.index("subnormal")
    want[cast == 0] = CLASSES.index("flushed")
    want[x == 0] = CLASSES.index("zero")
    want[(cast.abs() == f.max) & (f.overflows(x) | torch.isinf(x))] = CLASSES.index("saturated")
    want[torch.isinf(cast)] = CLASSES.index("inf")
    want[torch.isnan(cast)] = CLASSES.index("nan")
    got = f.classify(x, overflow=overflow)
    bad = (got != want).nonzero().reshape(-1)[:5].tolist()
    assert not bad, [(float(x[i]), float(cast[i]), CLASSES[int(got[i])], CLASSES[int(want[i])]) for i in bad]


def test_census_counts_and_table():
    f = FORMATS["fp8_e4m3"]
    x = torch.tensor([0.0, -0.0, 1e-9, 2.0**-9, 1.0, 448.0, 464.0, 470.0, 1e6, math.inf, math.nan])
    c = f.census(x)
    assert isinstance(c, Census) and c.total == 11
    assert c.as_dict() == {"zero": 2, "flushed": 1, "subnormal": 1, "normal": 3, "saturated": 3, "inf": 0, "nan": 1}
    assert c["saturated"] == 3 and c.fraction("normal") == 3 / 11
    assert c.overflow == "saturate" and f.census(x, overflow="nan")["nan"] == 4
    text = str(c)
    assert "11 values rounded to fp8_e4m3" in text and all(k in text for k in CLASSES)
    assert "<table" in c._repr_html_()
    assert set(CLASS_MEANINGS) == set(CLASSES)
    assert f.census(torch.empty(0)).fraction("zero") == 0.0
    with pytest.raises(KeyError, match="unknown class 'overflow'"):
        c["overflow"]


def test_round_downs_to_max_are_not_saturation():
    """A value between max and the overflow threshold rounds to max: that is rounding, not clamping."""
    for f in (FORMATS["fp8_e4m3"], FORMATS["fp4_e2m1"], FORMATS["fp16"]):
        just_above = (f.max + f.overflow_threshold) / 2
        assert names(f, [just_above], overflow="saturate") == ["normal"]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: SCALE_FORMATS["e8m0"].classify(torch.ones(2)), ValueError, "scale format"),
        (lambda: FORMATS["fp16"].classify(torch.ones(2), rounding="up"), ValueError, "rounding"),
        (lambda: FORMATS["fp16"].classify(torch.ones(2), overflow="nan"), ValueError, "overflow"),
        (lambda: FORMATS["fp16"].classify("abc"), TypeError, "x"),
        (lambda: FORMATS["fp16"].census(torch.ones(2, dtype=torch.int32)), (TypeError, ValueError), "float"),
    ],
)
def test_bad_input_gets_a_clear_error(call, error, words):
    with pytest.raises(error, match=words):
        call()
