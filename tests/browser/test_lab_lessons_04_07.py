"""Lessons 04-07 in JupyterLab in a real Chromium (what is checked: lab_session.py). The lessons are
split over two files so that pytest-xdist (--dist loadfile) runs the two halves in parallel."""

import harness
import pytest
from lab_session import check_notebook_in_jupyterlab

NOTEBOOKS = [p.name for p in harness.lesson_files() if p.name[:2] in {"04", "05", "06", "07"}]


def test_the_groups_cover_every_lesson_once():
    from test_lab_lessons_00_03 import NOTEBOOKS as FIRST
    from test_lab_lessons_08 import NOTEBOOKS as LAST
    from test_lab_lessons_09 import NOTEBOOKS as NINE
    from test_lab_lessons_10 import NOTEBOOKS as TEN
    from test_lab_lessons_11 import NOTEBOOKS as ELEVEN

    assert sorted(FIRST + NOTEBOOKS + LAST + NINE + TEN + ELEVEN) == [p.name for p in harness.lesson_files()]
    assert len(NOTEBOOKS) == 4 and len(LAST) == 1 and len(NINE) == 1 and not set(FIRST) & set(NOTEBOOKS)
    assert len(ELEVEN) == 1 and len(TEN) == 1


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_in_jupyterlab(notebook, browser, lab_server, figure):
    check_notebook_in_jupyterlab(notebook, browser, lab_server, figure)
