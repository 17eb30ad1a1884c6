"""Tests of amp_lessons.style: one local style file, fixed colours per format."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from amp_lessons.formats import FORMATS
from amp_lessons.style import FORMAT_COLORS, STYLE_PATH, format_color, use_style


def test_style_file_is_local_and_applies():
    assert STYLE_PATH.is_file() and STYLE_PATH.parent.name == "amp_lessons"
    assert "http" not in STYLE_PATH.read_text()
    with matplotlib.rc_context():
        use_style()
        assert plt.rcParams["axes.grid"] is True
        assert plt.rcParams["font.size"] == 11


def test_style_leaves_layout_to_each_figure():
    """No layout engine in the style: a notebook's fig.tight_layout() must not warn."""
    with matplotlib.rc_context():
        use_style()
        fig, ax = plt.subplots()
        fig.tight_layout()


def test_format_colors_fixed_and_distinct():
    assert set(FORMAT_COLORS) == set(FORMATS)
    assert len(set(FORMAT_COLORS.values())) == len(FORMAT_COLORS)
    assert format_color("bf16") == FORMAT_COLORS["bf16"]
    assert format_color(FORMATS["fp16"]) == FORMAT_COLORS["fp16"]


def test_format_color_fallback_is_stable_and_unused():
    c = format_color("my_e3m4")
    assert c == format_color("my_e3m4") and c not in FORMAT_COLORS.values()
    with pytest.raises(TypeError, match="42"):
        format_color(42)
