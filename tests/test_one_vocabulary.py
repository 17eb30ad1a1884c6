"""One vocabulary for where a value lands in a format: every topic that classifies values (fp16's classify and
census, scaling's CensusIndex, bits' BitInfo.kind, debug's TensorStats) says what the formats engine says
(FloatFormat.classify / census) on the same inputs, edge values included."""

from __future__ import annotations

import math

import pytest
import torch

from amp_lessons.formats import CLASSES, FORMATS, FloatFormat
from tests.faces import internals

bits = internals("bits")
debug = internals("debug")
fp16 = internals("fp16")
scaling = internals("scaling")

NAMES = ("fp16", "bf16", "fp8_e4m3", "fp8_e5m2")
TOPICS = ("fp16.classify", "fp16.census_fractions", "scaling.CensusIndex", "bits.describe_value", "debug.tensor_stats")


def neighbours(v: float) -> list[float]:
    """``v`` made float32 and its float32 neighbours below and above."""
    x = torch.tensor(v, dtype=torch.float64).float()
    return [
        float(torch.nextafter(x, torch.tensor(-math.inf))),
        float(x),
        float(torch.nextafter(x, torch.tensor(math.inf))),
    ]


def edge_values(f: FloatFormat) -> torch.Tensor:
    """0, -0, each threshold with its float32 neighbours (underflow, smallest subnormal, the subnormal/normal
    midpoint, smallest normal, max, overflow), float32's max, +-inf and NaN; as float32, both signs."""
    marks = [f.underflow_threshold, f.smallest_subnormal, f.smallest_normal - f.underflow_threshold]
    marks += [f.smallest_normal, f.max, f.overflow_threshold]
    pos = [v for m in marks for v in neighbours(m) if 0 < v < math.inf] + [float.fromhex("0x1.fffffep127")]
    vals = [0.0, -0.0, math.inf, -math.inf, math.nan] + pos + [-v for v in pos]
    return torch.tensor(vals, dtype=torch.float32)


def engine(f: FloatFormat, x: torch.Tensor) -> list[str]:
    return [CLASSES[c] for c in f.classify(x).tolist()]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("topic", TOPICS)
def test_every_topic_classifies_as_the_engine(topic, name):
    f = FORMATS[name]
    x = edge_values(f)
    want = engine(f, x)
    assert {"zero", "flushed", "subnormal", "normal", f.overflow_class(), "nan"} <= set(want)  # the edges reach them
    census = f.census(x)
    if topic == "fp16.classify":
        assert fp16.classify(x, name) == want
        assert fp16.classify(x.tolist(), name) == want  # a list of numbers (float32 values): the same
    elif topic == "fp16.census_fractions":
        assert fp16.census_fractions(x, name) == {c: census.fraction(c) for c in CLASSES}
    elif topic == "scaling.CensusIndex":
        index = scaling.CensusIndex({"weights": x, "activations": x})
        assert index.counts("activations", 1.0, name) == census
        assert scaling.scaled_fractions(index, 1.0, name)["weights"] == {c: census.fraction(c) for c in CLASSES}
        # a scale moves every value by the same power of two: the counts of g * scale, counted once
        for k in (-3, 5):
            scaled = x * 2.0**k
            got = index.counts("activations", 2.0**k, name)
            assert got.counts[1:] == f.census(scaled).counts[1:] and got["zero"] == census["zero"]
    elif topic == "bits.describe_value":
        assert [bits.describe_value(v, name).kind for v in x.tolist()] == want
    elif topic == "debug.tensor_stats":
        s = debug.tensor_stats(x, name)
        finite = x[torch.isfinite(x)]
        fin = f.census(finite)
        assert s.fractions[name] == {c: fin.fraction(c) for c in CLASSES}
        assert s.overflow(name) == fin.fraction(f.overflow_class()) > 0
        assert s.nonfinite == len(x) - len(finite)


@pytest.mark.parametrize("name", NAMES)
def test_bits_describe_code_classifies_every_code_as_the_engine(name):
    f = FORMATS[name]
    codes = range(1 << f.bits) if f.bits <= 8 else range(0, 1 << f.bits, 97)
    for code in codes:
        info = bits.describe_code(code, name)
        value = torch.tensor([info.stored], dtype=torch.float32)
        assert info.kind == engine(f, value)[0], code


def test_the_engine_says_where_overflows_land():
    assert [FORMATS[n].overflow_class() for n in NAMES] == ["inf", "inf", "saturated", "inf"]
    assert FORMATS["fp8_e4m3fnuz"].overflow_class() == "nan"
    assert FORMATS["fp16"].overflow_class("saturate") == "saturated"
    assert FORMATS["fp8_e4m3"].finite_input_classes() == ("zero", "flushed", "subnormal", "normal", "saturated")
