"""Static checks of the stored notebooks (nbval executes them; this checks how they are stored)."""

import re
from pathlib import Path

import nbformat
import pytest

from amp_lessons.lessons import LESSONS as COURSE_LESSONS, TOPICS

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "delivery" / "presenter").glob("*.ipynb"))
MARKER = re.compile(r"#\s*NBVAL_\w+")
KNOWN = {"NBVAL_IGNORE_OUTPUT", "NBVAL_SKIP", "NBVAL_CHECK_OUTPUT", "NBVAL_RAISES_EXCEPTION"}


@pytest.fixture(params=NOTEBOOKS, ids=lambda p: p.name)
def nb(request):
    return nbformat.read(request.param, as_version=4)


def code_cells(nb):
    return [c for c in nb.cells if c.cell_type == "code"]


def test_stored_by_a_restart_and_run_all(nb):
    counts = [c.execution_count for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), "re-run with `make notebooks`"
    for c in code_cells(nb):
        assert not any(o.output_type == "error" for o in c.outputs), c.source[:80]


def test_no_volatile_metadata_or_widget_state(nb):
    assert "widgets" not in nb.metadata
    for c in nb.cells:
        assert "execution" not in c.metadata
        for o in c.get("outputs", []):
            assert "application/vnd.jupyter.widget-view+json" not in o.get("data", {})


def test_nbval_markers_are_exact(nb):
    # nbval only honours a marker alone on its comment line ("# NBVAL_IGNORE_OUTPUT")
    for c in code_cells(nb):
        for line in c.source.splitlines():
            if MARKER.search(line):
                assert line.strip().lstrip("#").strip() in KNOWN, f"marker not recognised by nbval: {line!r}"


def test_offline_and_current_apis(nb):
    for c in nb.cells:
        assert not re.search(r"!\[[^]]*\]\(https?:|<img[^>]+src=.https?:|Image\(url=", c.source), "remote image"
        assert not re.search(r"torch\.(cuda|cpu)\.amp\.(autocast|GradScaler)\(", c.source), "deprecated AMP API"
        assert 'plt.style.use("http' not in c.source


# A line of code (not a comment) that calls one of the course's pictures, ``fp16.plot_running_sums(...)``
DRAWS = re.compile(rf"^(?!\s*#).*\b(?:{'|'.join(TOPICS)})\.plot_\w+\(", re.M)


def test_every_cell_that_draws_holds_its_picture(nb):
    """A stored cell that calls a course picture holds a PNG: a figure that never showed (a style context that left
    matplotlib non-interactive once hid every later figure of a lesson) fails here, not in front of a learner."""
    drawing = [c for c in code_cells(nb) if DRAWS.search(c.source)]
    missing = [
        c.source.splitlines()[0] for c in drawing if not any("image/png" in o.get("data", {}) for o in c.outputs)
    ]
    assert not missing, f"cells that draw but hold no image: {missing}"


def test_the_pictures_check_reads_the_lessons():
    """The check above is not vacuous: the lessons call the course's pictures in dozens of cells."""
    cells = [c for p in NOTEBOOKS for c in code_cells(nbformat.read(p, as_version=4)) if DRAWS.search(c.source)]
    assert len(cells) >= 30, len(cells)  # measured: 34 cells in lessons 01-11


def test_presenter_view_shows_every_explorer_of_the_lessons():
    """delivery/presenter/explorers.ipynb (make present) has one cell per explorer the lessons show."""
    call = re.compile(rf"\b(?:{'|'.join(TOPICS)})\.(\w+_explorer|format_designer)\(")

    def explorers(paths):
        return {m for p in paths for c in code_cells(nbformat.read(p, as_version=4)) for m in call.findall(c.source)}

    lessons = explorers(sorted((ROOT / "notebooks").glob("*.ipynb")))
    presenter = explorers([ROOT / "delivery" / "presenter" / "explorers.ipynb"])
    assert len(lessons) >= 8 and presenter == lessons


def test_kernelspec_is_portable(nb):
    assert nb.metadata["kernelspec"]["name"] == "python3"


def test_make_notebooks_strips_what_churns():
    import importlib.util

    spec = importlib.util.spec_from_file_location("run_notebooks", ROOT / "scripts" / "run_notebooks.py")
    run_notebooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_notebooks)
    nb = nbformat.v4.new_notebook()
    nb.metadata["widgets"] = {"state": {}}
    cell = nbformat.v4.new_code_cell("w", execution_count=1)
    cell.metadata["execution"] = {"iopub.status.busy": "2026-01-01T00:00:00"}
    widget = {"application/vnd.jupyter.widget-view+json": {"model_id": "abc"}, "text/plain": "VBox(...)"}
    streams = [("stdout", "a\n"), ("stdout", "b"), ("stderr", "w\n"), ("stdout", "c\n")]
    cell.outputs = [nbformat.v4.new_output("display_data", data=widget)]
    cell.outputs += [nbformat.v4.new_output("stream", name=n, text=t) for n, t in streams]
    nb.cells = [nbformat.v4.new_markdown_cell("x"), cell]
    out = run_notebooks.clean(nb)
    assert "widgets" not in out.metadata
    assert [c["id"] for c in out.cells] == ["cell-01", "cell-02"]
    assert "execution" not in out.cells[1].metadata
    assert out.cells[1].outputs[0].data == {"text/plain": run_notebooks.WIDGET_NOTE}
    # a stream in as many chunks as the kernel sent: one output per run of the same stream, in order
    assert [(o["name"], o["text"]) for o in out.cells[1].outputs[1:]] == [("stdout", "a\nb"), *streams[2:]]


# An exercise's heading: "**Exercise 2 — fix it (5 min).**" (or a Markdown heading "### Exercise 1 — ... (10 min)")
EXERCISE_HEADING = re.compile(
    r"\*\*Exercise (\d+)[a-z]? — [^*]+?\((\d+) min\)\.?\*\*|^#+ Exercise (\d+)[^\n]*\((\d+) min\)", re.M
)
STARTER = re.compile(r"#\s*YOUR\b")
LESSONS = {lesson.notebook: lesson for lesson in COURSE_LESSONS}


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in LESSONS], ids=lambda p: p.name)
def test_every_exercise_has_a_heading_and_a_time(path):
    """Each exercise starter (a "# YOUR ..." cell) sits under a heading that numbers it and says how long it takes,
    and the lesson's exercises fit in its time in the schedule."""
    cells = nbformat.read(path, as_version=4).cells
    minutes = {}
    for i, c in enumerate(cells):
        if c.cell_type == "markdown":
            for m in EXERCISE_HEADING.finditer(c.source):
                number, mins = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
                minutes[number] = int(mins)
        elif STARTER.search(c.source):
            above = next((x for x in reversed(cells[:i]) if x.cell_type == "markdown"), None)
            assert above is not None and EXERCISE_HEADING.search(above.source), (
                f"the starter cell {c.source.splitlines()[0]!r} has no 'Exercise N — ... (M min)' heading above it"
            )
    assert sum(minutes.values()) <= LESSONS[path.name].minutes, (minutes, LESSONS[path.name].minutes)
    assert list(minutes) == sorted(minutes, key=int), f"exercises out of order in the notebook: {list(minutes)}"
    if any(STARTER.search(c.source) for c in cells if c.cell_type == "code"):
        assert minutes and sorted(minutes, key=int) == [str(n) for n in range(1, len(minutes) + 1)], minutes


SECTION = re.compile(r"^##\s(?!#)(.*)\((\d+) min\)\s*$", re.M)


def planned_minutes(cells) -> tuple[dict[str, int], dict[str, int]]:
    """(section title -> minutes, exercise number -> minutes) of a lesson, from its headings: "## 3 · ... (25 min)"
    and "**Exercise 2 — ... (5 min).**". An exercise under a section that is itself the exercises ("## 7 · Exercises
    (15 min)") is part of that section's time; any other exercise comes on top of its section's."""
    sections, extra, in_exercises = {}, {}, False
    for c in cells:
        if c.cell_type != "markdown":
            continue
        for line in c.source.splitlines():
            m = SECTION.match(line)
            if m:
                sections[m.group(1).strip()] = int(m.group(2))
                in_exercises = "exercise" in m.group(1).lower()
            elif line.startswith("## "):
                in_exercises = False
            for e in EXERCISE_HEADING.finditer(line):
                number, mins = (e.group(1), e.group(2)) if e.group(1) else (e.group(3), e.group(4))
                if not in_exercises:
                    extra[number] = int(mins)
    return sections, extra


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if p.name in LESSONS], ids=lambda p: p.name)
def test_a_lessons_sections_and_exercises_fit_its_time(path):
    """A lesson's sections ("## 3 · ... (25 min)") plus the exercises outside an exercises section add up to no more
    than the lesson's minutes in the schedule (the two-day workshop is built from them), and the notebook's own
    "Time:" line says those minutes."""
    cells = nbformat.read(path, as_version=4).cells
    sections, exercises = planned_minutes(cells)
    minutes = LESSONS[path.name].minutes
    total = sum(sections.values()) + sum(exercises.values())
    assert total <= minutes, f"{path.name}: sections {sections} + exercises {exercises} = {total} > {minutes} min"
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    said = re.search(r"\*\*Time:\*\*\s*(\d+) minutes", text)
    assert said is None or int(said.group(1)) == minutes, (path.name, said.group(0), minutes)


def test_planned_minutes_count_each_exercise_once():
    md = nbformat.v4.new_markdown_cell
    cells = [
        md("## 1 · Overflow (10 min)\n\ntext\n\n**Exercise 1 — stall (5 min).** Do it."),
        md("## 2 · Exercises (15 min)\n\n**Exercise 2 — fix (10 min).** Do it.\n\n### Exercise 3 — sum (5 min)"),
        md("## Summary\n\n**Exercise 4 — extra (3 min).** Do it."),
    ]
    assert planned_minutes(cells) == ({"1 · Overflow": 10, "2 · Exercises": 15}, {"1": 5, "4": 3})
