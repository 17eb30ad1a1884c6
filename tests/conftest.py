"""Fixtures for every test under tests/: figures never pile up between tests."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Property-based tests draw the same examples on every run and machine (derandomize), keep no example database in
# the checkout, and have no per-example deadline (a machine busy with parallel tests is not a failure: the tests
# bound their own time).
settings.register_profile(
    "course", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("course")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")
