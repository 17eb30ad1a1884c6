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
