import os

import pytest

from tests import load


@pytest.mark.parametrize(("avg", "cores", "expected"), [(0.5, 2, 1.0), (4.0, 2, 2.0), (64.0, 16, 4.0), (999, 2, 8.0)])
def test_limits_stretch_with_the_load_per_core_within_bounds(monkeypatch, avg, cores, expected):
    monkeypatch.setattr(os, "getloadavg", lambda: (avg, avg, avg))
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    assert load.stretch() == expected
    assert load.patience(30.0) == 30.0 * expected


def test_no_load_average_means_no_stretch(monkeypatch):
    def missing():
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", missing)
    assert load.patience(20.0) == 20.0
