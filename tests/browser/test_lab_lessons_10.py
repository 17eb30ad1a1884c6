"""Lesson 10 in JupyterLab in a real Chromium (what is checked: lab_session.py); a file of its own so that
pytest-xdist (--dist loadfile) runs it beside the other groups."""

import harness
import pytest
from lab_session import check_notebook_in_jupyterlab

NOTEBOOKS = [p.name for p in harness.lesson_files() if p.name[:2] in {"10"}]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_in_jupyterlab(notebook, browser, lab_server, figure):
    check_notebook_in_jupyterlab(notebook, browser, lab_server, figure)
