"""Fixtures for the presenter view in a real browser: the course's browser harness (tests/browser: Chromium driven by
playwright, a Voilà server over a temporary copy of the notebook), its modules importable here as they are there."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests" / "browser"))

from tests.browser.conftest import browser, chromium_path, figure  # noqa: E402, F401  (fixtures)
