"""Fixtures for the real-browser tests (see harness.py): Chromium, and a JupyterLab server over a
temporary copy of the notebooks, one per session (one per xdist worker), started by the first test that asks for
it: each test opens its own page, and a lesson's test ends its kernel sessions."""

from __future__ import annotations

import harness
import pytest


@pytest.fixture(scope="session")
def chromium_path() -> str:
    return harness.require_browser()


@pytest.fixture(scope="session")
def browser(chromium_path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = harness.launch_chromium(p, chromium_path)
        yield b
        b.close()


@pytest.fixture(scope="session")
def lab_server(chromium_path):
    server = harness.Server("lab", harness.lesson_files())
    yield server
    server.stop()


@pytest.fixture
def figure(record_property):
    """``figure(section, label, value, unit)``: a measured figure for the end-of-run summary."""

    def record(section: str, label: str, value: float, unit: str) -> None:
        record_property(harness.FIGURE_KEY, (section, label, float(value), unit))

    return record
