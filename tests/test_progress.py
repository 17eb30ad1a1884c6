"""The course's progress bar: in a notebook an HTML output updated in place that ends as a line of text saying what
ran and how long it took (no widget, so the stored and the reopened notebook read it); elsewhere tqdm's text bar."""

from __future__ import annotations

import re

import pytest

from amp_lessons import _runtime
from amp_lessons._runtime import Progress


class FakeHandle:
    def __init__(self, first):
        self.shown = [first]

    def update(self, obj):
        self.shown.append(obj)


@pytest.fixture
def notebook(monkeypatch):
    """Progress as it runs in a kernel: every display() kept."""
    handles = []

    def display(obj, display_id=False):
        assert display_id is True
        handles.append(FakeHandle(obj))
        return handles[-1]

    monkeypatch.setattr(_runtime, "_in_kernel", lambda: True)
    monkeypatch.setattr("IPython.display.display", display)
    return handles


def test_a_finished_bar_says_what_ran_and_how_long(notebook):
    assert list(Progress(range(5), desc="training 3 ways", min_interval_s=0)) == [0, 1, 2, 3, 4]
    (h,) = notebook
    first, last = h.shown[0], h.shown[-1]
    assert repr(first).startswith("training 3 ways: 0 of 5, ")
    assert re.fullmatch(r"training 3 ways: 5 of 5 in \d+\.\d s", repr(last)), repr(last)
    html = last._repr_html_()
    assert "<progress value='5' max='5'" in html and "training 3 ways: 5 of 5 in" in html
    assert len(h.shown) == 7  # the first view, one per item (min_interval_s=0), the final line


def test_a_loop_stopped_early_says_so(notebook):
    bar = Progress(range(10), desc="fp32", min_interval_s=0)
    for i in bar:
        if i == 3:
            break
    bar.close()
    assert re.fullmatch(r"fp32: stopped at 3 of 10, after \d+\.\d s", repr(notebook[0].shown[-1]))


def test_updates_are_throttled_and_the_postfix_shows(notebook):
    with Progress(total=1000, desc="training 4 ways", min_interval_s=60) as bar:
        bar.set_postfix_str("fp16 + GradScaler")
        for _ in range(1000):
            bar.update()
    shown = notebook[0].shown
    assert len(shown) == 2  # the first view and the final line: no update within 60 s
    assert repr(shown[-1]).startswith("training 4 ways: 1000 of 1000 in ")
    with Progress(total=3, desc="d", min_interval_s=0) as bar:
        bar.set_postfix_str("bf16")
        bar.update()
    assert "(bf16)" in repr(notebook[1].shown[1]) and "(bf16)" not in repr(notebook[1].shown[-1])


def test_outside_a_notebook_it_is_tqdms_text_bar(capsys):
    assert not _runtime._in_kernel()
    bar = Progress(range(3), desc="plain")
    assert bar._tqdm is not None and bar._handle is None
    assert list(bar) == [0, 1, 2]
    assert "plain" in capsys.readouterr().err


def test_disabled_shows_nothing(notebook, capsys):
    assert list(Progress(range(3), desc="x", disable=True)) == [0, 1, 2]
    assert notebook == [] and capsys.readouterr().err == ""


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="total must be None or a whole number >= 0, got -1"):
        Progress(total=-1, desc="x")
    with pytest.raises(TypeError, match="desc must be a string, got int"):
        Progress(total=3, desc=3)
    with pytest.raises(TypeError, match="made with total="):
        iter(Progress(total=3, desc="x", disable=True)).__next__()


WIDGET_TQDM = re.compile(r"(from|import)\s+tqdm\.(auto|notebook)\b")


def test_no_progress_bar_is_a_widget():
    """tqdm.auto and tqdm.notebook draw a widget, which a stored or reopened notebook cannot show ("Error displaying
    widget: model not found"): neither the package nor a lesson uses them, and every stored bar is a line of text."""
    from pathlib import Path

    import nbformat

    root = Path(__file__).resolve().parent.parent
    for path in (root / "amp_lessons").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        assert not WIDGET_TQDM.search(text), path
    bars = 0
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            assert not WIDGET_TQDM.search(cell.source), path.name
            for out in cell.get("outputs", []):
                data = out.get("data", {})
                if "<progress" in data.get("text/html", ""):
                    bars += 1
                    assert re.fullmatch(r".+: (stopped at )?\d+ of \d+,? (in|after) \d+\.\d s", data["text/plain"]), (
                        path.name,
                        data["text/plain"],
                    )
    assert bars >= 4  # lessons 03, 05 and 06 train or time with a bar
