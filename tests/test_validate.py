"""The shared argument checks: each error names the bad value and what is allowed."""

import math

import pytest
import torch

from amp_lessons._validate import int_at_least, positive, real


def test_real():
    assert real(2, "x") == 2.0 and real(torch.tensor(1.5), "x") == 1.5
    with pytest.raises(TypeError, match=r"x must be a real number, got True \(bool\)"):
        real(True, "x")
    with pytest.raises(TypeError, match="'a' \\(str\\)"):
        real("a", "x")


def test_positive():
    assert positive(0.5, "scale") == 0.5
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="scale=.* positive finite"):
            positive(bad, "scale")


def test_int_at_least():
    assert int_at_least(3, "n", 1) == 3
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="n=.*int >= 1"):
            int_at_least(bad, "n", 1)
