"""Every lesson of the course's registry in JupyterLab in a real Chromium (what is checked: lab_session.py).
One file, one test per notebook: under `pytest -n N --dist loadfile` the root conftest.py schedules each
notebook as a unit of its own (ONE_UNIT_PER_TEST), so the lessons run in parallel on the workers."""

import harness
import pytest
from lab_session import check_notebook_in_jupyterlab, check_plots_follow_the_lab_theme

from amp_lessons.lessons import LESSONS

NOTEBOOKS = [lesson.notebook for lesson in LESSONS]


def test_every_lesson_notebook_is_here():
    assert NOTEBOOKS == [p.name for p in harness.lesson_files()]


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_in_jupyterlab(notebook, browser, lab_server, figure):
    check_notebook_in_jupyterlab(notebook, browser, lab_server, figure)


def test_plots_follow_jupyterlabs_theme(browser, lab_server):
    check_plots_follow_the_lab_theme("03_fp16_overflow_underflow.ipynb", browser, lab_server)
