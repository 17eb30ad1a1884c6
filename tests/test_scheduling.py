"""Under `pytest -n N --dist loadfile` (the course's XDIST), a file is a unit of scheduling, so that one notebook's
cells share one kernel; the browser tests of every lesson live in one parametrized file whose tests are each a unit
of their own, so that the lessons still spread over the workers (root conftest.py)."""

import importlib.util
from pathlib import Path

from xdist.scheduler import LoadFileScheduling

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
root_conftest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(root_conftest)


def test_a_file_is_a_unit_except_the_browser_lessons():
    unit = root_conftest._unit
    assert unit("notebooks/03_fp16_overflow_underflow.ipynb::Cell 4") == "notebooks/03_fp16_overflow_underflow.ipynb"
    assert unit("tests/test_course.py::test_schedule_adds_up[2]") == "tests/test_course.py"
    lesson = "tests/browser/test_lab_lessons.py::test_notebook_in_jupyterlab[02_tf32.ipynb]"
    assert unit(lesson) == lesson
    assert all((ROOT / path).is_file() for path in root_conftest.ONE_UNIT_PER_TEST)


def test_the_scheduler_is_xdists_loadfile_with_that_unit():
    assert issubclass(root_conftest._LoadFileOrTest, LoadFileScheduling)
    plugin = root_conftest._XdistDistMode

    class Config:
        def __init__(self, dist):
            self.dist = dist

        def getoption(self, name):
            return self.dist

    assert plugin.pytest_xdist_make_scheduler(Config("load"), None) is None  # xdist's own for other modes
