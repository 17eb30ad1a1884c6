"""`make test LESSON=NN` selects one lesson's tests: its topic's folder, its notebook, its rows of the promise
modules; never another lesson's."""

from __future__ import annotations

import pytest

from amp_lessons.lessons import LESSONS
from tests.lesson_filter import keeps, lesson_of, skips


@pytest.mark.parametrize(
    ("nodeid", "kept"),
    [
        ("tests/scaling/test_scaling_experiments.py::test_safe_window", True),
        ("notebooks/05_loss_scaling.ipynb::Cell 3", True),
        ("tests/test_checker_contract.py::test_the_starter_gets_your_turn[scaling.check_scaler_update]", True),
        (
            "tests/test_lesson_claims.py::test_no_exercise_has_its_answer_above_it[05-scaling.check_scaler_update(]",
            True,
        ),
        ("tests/test_notebooks.py::test_a_lessons_sections_fit_its_time[05_loss_scaling.ipynb]", True),
        ("tests/test_explorer_base.py::test_every_explorer_is_an_explorer_and_takes_its_extremes[ScaleExplorer]", True),
        # other lessons, the presenter, the browser, registry-wide checks
        ("tests/micro/test_micro_experiments.py::test_recipe_table", False),
        ("notebooks/10_microscaling.ipynb::Cell 3", False),
        ("tests/test_notebooks.py::test_a_lessons_sections_fit_its_time[10_microscaling.ipynb]", False),
        ("tests/test_checker_contract.py::test_the_starter_gets_your_turn[micro.check_rceil_exponent]", False),
        (
            "tests/test_explorer_base.py::test_every_explorer_is_an_explorer_and_takes_its_extremes[RecipeExplorer]",
            False,
        ),
        ("delivery/presenter/explorers.ipynb::Cell 2", False),
        ("tests/browser/test_lab_lessons.py::test_notebook_in_jupyterlab[05_loss_scaling.ipynb]", False),
        ("tests/test_checker_contract.py::test_every_checker_has_a_row_and_every_row_a_checker", False),
    ],
)
def test_one_lessons_tests(nodeid, kept):
    assert keeps(nodeid, lesson_of("05")) is kept


def test_a_lesson_is_named_by_its_number():
    assert lesson_of("5").notebook == lesson_of("05").notebook == "05_loss_scaling.ipynb"
    assert keeps("notebooks/00_start_here.ipynb::Cell 1", lesson_of("00"))
    with pytest.raises(ValueError, match=r"LESSON='99' is not a lesson: use one of 00, 01, .*, 11"):
        lesson_of("99")


@pytest.mark.parametrize(
    ("path", "skipped"),
    [
        ("notebooks/10_microscaling.ipynb", True),
        ("tests/micro", True),
        ("tests/tf32", True),
        # the lesson's own, the promise modules, folders that are no topic's
        ("notebooks/05_loss_scaling.ipynb", False),
        ("tests/scaling", False),
        ("tests/scaling/test_scaling_experiments.py", False),
        ("tests/test_checker_contract.py", False),
        ("tests/browser", False),
        ("tests", False),
        ("notebooks", False),
    ],
)
def test_another_lessons_files_are_not_collected(path, skipped):
    assert skips(path, lesson_of("05")) is skipped


def test_what_is_not_collected_holds_none_of_the_lessons_tests():
    # every test of a skipped file or folder is one keeps() drops, for every lesson
    for lesson in LESSONS:
        for other in LESSONS:
            if other is lesson:
                continue
            assert skips(f"notebooks/{other.notebook}", lesson) and not keeps(
                f"notebooks/{other.notebook}::Cell 0", lesson
            )
            if other.topic:
                assert skips(f"tests/{other.topic}", lesson)
                assert not keeps(f"tests/{other.topic}/test_x.py::test_y", lesson)
