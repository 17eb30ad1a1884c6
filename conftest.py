"""Project-wide pytest hooks: report each notebook's run time and its kernel's peak memory, and the
figures the browser tests measure (slider-to-redraw latency, kernel memory in JupyterLab).

One kernel per notebook: with pytest-xdist (`-n N`) and no `--dist`, notebooks are scheduled whole
(`--dist loadfile`) instead of xdist's default `--dist load`, which splits a notebook's cells between
workers, each with its own kernel, so that cells fail with NameErrors. Before each cell runs,
tests/nbval_guard.py checks that the notebook's kernel is the one that ran the cells before it and is
alive; if not (an explicit splitting `--dist`, a crashed worker, a dead kernel), the cell and every later
one of that notebook fail with the reason instead of running.

Budgets (each notebook under 30 s, the suite under 2 minutes on the 2-core CI machine) are
reported, not asserted: timing assertions flake on shared machines. Memory is asserted (no
notebook's kernel above 3 GB): a cell that pushes its kernel's peak resident memory over the limit
fails, naming the figure.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections import defaultdict

import pytest
from nbval.plugin import NbCellError

from tests import nbval_guard
from tests.kernel_memory import peak_memory_bytes
from tests.nbval_guard import KernelGuard, kernel_process

NOTEBOOK_BUDGET_S = 30.0
SUITE_BUDGET_S = 120.0
KERNEL_MEMORY_LIMIT_BYTES = 3 * 1024**3

# Figures travel from xdist workers to the controller in report.user_properties, as
# ("amp-figure", (section, label, value, unit)) pairs.
FIGURE_KEY = "amp-figure"
RESTART_KEY = "amp-kernel-start-death"  # (notebook, how an earlier start of its kernel ended), one per death

# pytester: a test of the suite's own hooks runs an inner pytest in its process (no second torch import)
pytest_plugins = ("pytester",)

# The suite runs one xdist worker per core, and each worker's torch (and each nbval kernel's) keeps an OpenMP pool of
# one thread per core: the processes share the cores. Under OpenMP's default wait policy a thread that waits at a
# parallel region's barrier spins, while the partner it waits for is descheduled by another process's spinning
# thread; the small-tensor work of the tests then runs several times slower (lesson 10's training cell: 0.8 s alone,
# 12-18 s beside a second worker). Passive waiting (the OpenMP standard's OMP_WAIT_POLICY, read by libgomp and
# LLVM's libomp when they start, so set here before the workers and kernels start) decides only how an idle thread
# waits, never what a computation gives; a setting in the environment wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

_durations: dict[str, float] = defaultdict(float)
_peak_rss: dict[str, int] = {}
_figures: dict[str, dict[str, tuple[float, str]]] = defaultdict(dict)
_start_deaths: dict[str, list[str]] = defaultdict(list)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_cmdline_main(config):
    # Before pytest-xdist turns "-n N without --dist" into --dist load (xdist/plugin.py, pytest_cmdline_main, also
    # tryfirst): a wrapper runs before every plain implementation, whichever plugin was registered first.
    option = config.option
    if (
        getattr(option, "numprocesses", None)
        and getattr(option, "dist", "no") == "no"
        and not getattr(option, "distload", False)
    ):
        option.dist = "loadfile"
    return (yield)


# Files whose tests are each their own unit under --dist loadfile: one parametrized file that runs every lesson of
# the registry in a browser, whose lessons still run in parallel (each worker starts its JupyterLab once).
ONE_UNIT_PER_TEST = ("tests/browser/test_lab_lessons.py",)


class _XdistDistMode:
    """Tells each pytest-xdist worker the controller's --dist mode (xdist resets a worker's own to "no"), and under
    --dist loadfile schedules each test of :data:`ONE_UNIT_PER_TEST` as a unit of its own."""

    @staticmethod
    def pytest_configure_node(node):
        node.workerinput["amp_dist"] = node.config.getoption("dist")

    @staticmethod
    def pytest_xdist_make_scheduler(config, log):
        if config.getoption("dist") != "loadfile":
            return None  # xdist's own scheduler for the mode asked
        return _LoadFileOrTest(config, log)


def _unit(nodeid: str) -> str:
    """The unit of scheduling of a test under --dist loadfile: its file, or itself for :data:`ONE_UNIT_PER_TEST`."""
    path = nodeid.split("::", 1)[0]
    return nodeid if path in ONE_UNIT_PER_TEST else path


try:
    from xdist.scheduler import LoadFileScheduling
except ImportError:  # pytest-xdist absent: the hooks above are never called
    LoadFileScheduling = object


class _LoadFileOrTest(LoadFileScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return _unit(nodeid)


# A matplotlib backend forced on the environment (MPLBACKEND=Agg, common on GPU images and CI runners) is inherited
# by every kernel nbval starts, and then no figure is displayed and every stored picture "differs". The notebooks are
# compared as JupyterLab runs them (ipykernel's inline backend), so the suite's kernels start without it.
_FORCED_BACKEND = os.environ.get("MPLBACKEND", "")


def pytest_configure(config):
    # nbval's kernels start through tests/nbval_guard.py's start_new_kernel, which keeps each kernel's stderr and
    # starts again a kernel that ends before its first reply
    nbval_guard.pytest_configure(config)
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistDistMode(), "amp-xdist-dist-mode")
    if _FORCED_BACKEND and "inline" not in _FORCED_BACKEND:
        os.environ.pop("MPLBACKEND", None)
    # Plots take the colours of JupyterLab's theme setting (amp_lessons.style.lab_theme): the suite and its kernels
    # read an empty settings folder, so a developer's dark JupyterLab does not change what the tests draw.
    os.environ["JUPYTERLAB_SETTINGS_DIR"] = config._amp_lab_settings = tempfile.mkdtemp(prefix="amp-lab-settings-")


def pytest_unconfigure(config):
    shutil.rmtree(getattr(config, "_amp_lab_settings", ""), ignore_errors=True)


def pytest_ignore_collect(collection_path, config):
    # `make test LESSON=05`: another lesson's notebook or topic folder is not even collected (none of its tests
    # would be kept below); a LESSON that is no lesson is left to the UsageError below
    number = os.environ.get("AMP_LESSON", "")
    if not number:
        return None
    from tests.lesson_filter import lesson_of, skips

    try:
        lesson = lesson_of(number)
        path = collection_path.relative_to(config.rootpath).as_posix()
    except ValueError:
        return None
    return True if skips(path, lesson) else None


def pytest_collection_modifyitems(config, items):
    # `make test LESSON=05` (AMP_LESSON=05): one lesson's own tests, its nbval and its rows of every promise
    number = os.environ.get("AMP_LESSON", "")
    if not number:
        return
    from tests.lesson_filter import select

    try:
        kept, dropped = select(items, number)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


def _dist_mode(config) -> str:
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return str(workerinput.get("amp_dist", "no"))
    return str(config.getoption("dist", "no"))


def _is_notebook_cell(item) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell_num")


def _kernel_guard(item) -> KernelGuard:
    notebook = item.parent
    guard = getattr(notebook, "_amp_kernel_guard", None)
    if guard is None:
        selected = [other.cell_num for other in item.session.items if other.parent is notebook]
        guard = KernelGuard(selected, _dist_mode(item.config))
        notebook._amp_kernel_guard = guard
    return guard


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    if not _is_notebook_cell(item):
        return
    reason = _kernel_guard(item).check(item.cell_num, item.parent.kernel, item.cell.source)
    if reason is not None:
        raise NbCellError(item.cell_num, reason, item.cell.source)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.when != "call" or not item.nodeid.split("::", 1)[0].endswith(".ipynb"):
        return
    kernel = getattr(item.parent, "kernel", None)
    deaths = getattr(getattr(kernel, "km", None), "_amp_start_deaths", None)
    if deaths:  # on the item, so that its teardown report carries them: the summary's and JUnit XML's (make test-load)
        item.user_properties.extend((RESTART_KEY, (item.nodeid.split("::", 1)[0], death)) for death in deaths)
        deaths.clear()
    if report.failed and _is_notebook_cell(item):
        first_line = str(call.excinfo.value).strip().splitlines() if call.excinfo else []
        _kernel_guard(item).last_failure = f"Cell {item.cell_num} failed: {first_line[0] if first_line else '?'}"
    pid = getattr(kernel_process(kernel), "pid", None)
    peak = peak_memory_bytes(pid) if pid else None
    if peak is None:
        return
    report.user_properties.append(("kernel-peak-rss", peak))
    if peak > KERNEL_MEMORY_LIMIT_BYTES and report.passed:
        report.outcome = "failed"
        report.longrepr = (
            f"the notebook's kernel reached a peak resident memory of {peak / 2**30:.2f} GiB "
            f"after this cell; the limit is {KERNEL_MEMORY_LIMIT_BYTES / 2**30:.0f} GiB"
        )


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration
    for key, value in report.user_properties:
        if key == "kernel-peak-rss":
            _peak_rss[path] = max(_peak_rss.get(path, 0), value)
        elif key == RESTART_KEY:
            _start_deaths[value[0]].append(value[1])
        elif key == FIGURE_KEY:
            section, label, number, unit = value
            _figures[section][label] = (number, unit)


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if _FORCED_BACKEND and "inline" not in _FORCED_BACKEND:
        tr.write_line(
            f"note: MPLBACKEND={_FORCED_BACKEND} was set; the notebooks' kernels ran without it (JupyterLab's inline "
            "backend). A kernel started with it shows no figure (README, Troubleshooting)."
        )
    if _durations:
        tr.section("notebook run times and kernel peak memory (nbval, kernel start included)")
        for path, seconds in sorted(_durations.items()):
            flag = "" if seconds <= NOTEBOOK_BUDGET_S else f"  OVER the {NOTEBOOK_BUDGET_S:.0f} s budget"
            rss = _peak_rss.get(path)
            mem = f"{rss / 2**20:7.0f} MiB" if rss else "    n/a    "
            tr.write_line(f"{seconds:7.1f} s  {mem}  {path}{flag}")
        total = sum(_durations.values())
        flag = "" if total <= SUITE_BUDGET_S else f"  OVER the {SUITE_BUDGET_S:.0f} s budget"
        tr.write_line(
            f"{total:7.1f} s  all notebooks (sum over workers){flag}; "
            f"memory limit {KERNEL_MEMORY_LIMIT_BYTES / 2**30:.0f} GiB per kernel"
        )
    if _start_deaths:
        tr.section("notebook kernels started again: each ended before its first reply (tests/nbval_guard.py)")
        for path, deaths in sorted(_start_deaths.items()):
            for death in deaths:
                tr.write_line(f"{path}: {death}")
    for section, rows in sorted(_figures.items()):
        tr.section(section)
        for label, (number, unit) in sorted(rows.items()):
            tr.write_line(f"{number:9.1f} {unit:4s} {label}")
