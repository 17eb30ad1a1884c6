"""Tests of amp_lessons._draw."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from amp_lessons._draw import staircase as _staircase
from amp_lessons.formats import FORMATS, representable_values


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.bits <= 8])
def test_staircase_matches_the_real_gaps(name):
    """At every representable value but max, the staircase equals the gap to the next value."""
    values = representable_values(name).double().numpy()
    edges, gaps = _staircase(FORMATS[name])
    pos = values[values > 0]
    real_gaps = np.diff(pos)
    stair = gaps[np.searchsorted(edges, pos[:-1], side="right") - 1]
    np.testing.assert_array_equal(stair, real_gaps)


def test_legend_outside_covers_no_data():
    """legend_outside puts the legend right of the axes: a line over the whole axes is not under it."""
    import matplotlib.pyplot as plt

    from amp_lessons._draw import legend_outside

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    ax.plot([0, 1], [0, 1], label="a line through the whole axes")
    ax.plot([0, 1], [1, 0], label="another")
    legend = legend_outside(ax)
    fig.canvas.draw()
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1
    assert legend.get_window_extent().x1 <= fig.bbox.x1 + 1  # constrained layout leaves room for it


def test_pct_matches_the_printed_formats():
    """pct(x, d) writes what f"{x:.{d}%}" prints, except that a non-zero share printing as 0 says so."""
    from amp_lessons._draw import pct

    for x in (0.0123, 0.5, 0.9134, 1.0, 0.00466):
        assert pct(x, 1) == f"{x:.1%}" and pct(x, 2) == f"{x:.2%}"
    assert pct(0.000253, 1) == "<0.1%" and pct(0.000253, 2) == "0.03%" and pct(0.00004, 2) == "<0.01%"
    assert pct(0, 1) == "0%" and pct(0.000253) == "0.0253%" and pct(0.00001) == "<0.01%"
