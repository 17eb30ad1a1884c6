"""Lessons 00-03 in JupyterLab in a real Chromium (what is checked: lab_session.py). The lessons are
split over two files so that pytest-xdist (--dist loadfile) runs the two halves in parallel."""

import harness
import pytest
from lab_session import check_notebook_in_jupyterlab

NOTEBOOKS = [p.name for p in harness.lesson_files() if p.name[:2] in {"00", "01", "02", "03"}]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_in_jupyterlab(notebook, browser, lab_server, figure):
    check_notebook_in_jupyterlab(notebook, browser, lab_server, figure)
