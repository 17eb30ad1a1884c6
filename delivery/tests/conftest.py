"""Fixtures for the delivery rig's tests (delivery/tests): the same as the course's tests get (tests/conftest.py):
figures never pile up between tests, and a test that leaves process-wide numerics changed fails."""

from tests.conftest import _close_figures, _numerics_restored  # noqa: F401  (autouse fixtures)
