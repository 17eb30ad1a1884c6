"""The presenter view (``make present``): presenter/explorers.ipynb served by Voilà with the course's
offline template, checked in a real Chromium like the lessons: every explorer renders without code,
every control moves (extremes included) and redraws, no kernel or console error, no request off this
machine. Latency is printed beside JupyterLab's."""

from __future__ import annotations

import time

import harness
import pytest
from lab_session import artifact, assert_page_clean, demo_names, exercise_demo

PRESENTER = harness.REPO / "presenter" / "explorers.ipynb"
LATENCY_SECTION = "browser: control-to-redraw latency in the Voila presenter view (median of the timed moves)"
# In Voilà each explorer is the output of one cell, inside the page's rendered cells.
_DEMOS = "#rendered_cells .jp-OutputArea:has(.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons)"


@pytest.fixture(scope="module")
def voila_server(chromium_path):
    server = harness.Server("voila", [PRESENTER], notebook=PRESENTER.name)
    yield server
    server.stop()


def test_presenter_page_shows_every_explorer_and_each_responds(browser, voila_server, figure):
    expected = demo_names(PRESENTER)
    assert len(expected) == 9, expected  # one per explorer of the course
    page = browser.new_page(viewport=harness.VIEWPORT)
    console = harness.ConsoleLog(page)
    kernel = harness.KernelMessages(page)
    remote = harness.RemoteRequests(page)
    try:
        t0 = time.perf_counter()
        page.goto(voila_server.url("/"))
        page.wait_for_function(
            f"n => document.querySelectorAll('{_DEMOS} img').length >= n "
            "&& getComputedStyle(document.getElementById('rendered_cells')).display !== 'none'",
            arg=len(expected),
            timeout=180_000,
            polling=200,
        )
        figure(LATENCY_SECTION, "page load until every explorer is drawn", time.perf_counter() - t0, "s")
        text = page.inner_text("body")
        assert "import " not in text and "widgets." not in text, "Voila shows code; the presenter view hides it"
        for bad in ("Error displaying widget", "Traceback", "Error rendering"):
            assert bad not in text, f"the presenter page shows {bad!r}"
        page.screenshot(path=artifact("presenter.png"))
        demos = page.query_selector_all(_DEMOS)
        assert len(demos) == len(expected), f"{len(demos)} explorers rendered, expected {expected}"
        for i, root in enumerate(demos):
            exercise_demo(page, root, "presenter", i, expected[i], kernel, figure, LATENCY_SECTION)
        assert_page_clean("presenter view", kernel, console, remote)
    finally:
        page.close()
