"""Tests of tests/nbval_guard.py and the root conftest.py's notebook scheduling: one kernel per notebook.

The unit tests drive KernelGuard with stand-in kernels. The two slow tests run pytest with nbval on small
notebooks made here: under ``--dist load`` pytest-xdist splits one between two workers' kernels, and the guard
must fail the cells with that reason instead of NameErrors; with ``-n 2`` and no ``--dist`` (the root conftest.py
then chooses ``--dist loadfile``) they pass; a kernel killed during a cell fails that cell in seconds, naming
the signal, instead of nbval waiting out its 2000 s cell timeout (that notebook runs in the same ``-n 2`` pytest
as the whole ones, beside them).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from queue import Empty

import pytest
from nbval.kernel import CURRENT_ENV_KERNEL_NAME

from tests.nbval_guard import KernelDied, KernelGuard, exit_status, start_new_kernel, watch_kernel

ROOT = Path(__file__).resolve().parent.parent


class FakeProcess:
    def __init__(self, pid: int, returncode: int | None = None):
        self.pid, self.returncode = pid, returncode

    def poll(self):
        return self.returncode


class FakeKernel:
    """What the guard reads of nbval's RunningKernel: km.provisioner.process, and get_message."""

    def __init__(self, pid: int = 100, returncode: int | None = None):
        self.process = FakeProcess(pid, returncode)
        self.km = type("KM", (), {"provisioner": type("P", (), {"process": self.process})()})()
        self.calls = 0

    def get_message(self, stream, timeout=None):  # no message comes: waits out the timeout, as nbval's does
        self.calls += 1
        time.sleep(timeout if timeout is not None else 0.5)
        raise Empty


def test_cells_in_order_in_one_kernel_pass():
    guard, kernel = KernelGuard([0, 1, 2, 3], "loadfile"), FakeKernel()
    assert [guard.check(c, kernel) for c in range(4)] == [None] * 4
    assert guard.ran == [0, 1, 2, 3] and guard.pid == 100


def test_deselected_cells_are_not_missing():
    # -k or node ids selected cells 0, 2 and 5 only: the kernel runs exactly those
    guard, kernel = KernelGuard([0, 2, 5], "no"), FakeKernel()
    assert [guard.check(c, kernel) for c in (0, 2, 5)] == [None] * 3


@pytest.mark.parametrize("dist", ["load", "worksteal", "loadgroup"])
def test_a_kernel_starting_mid_notebook_under_a_splitting_dist_names_it(dist):
    guard, kernel = KernelGuard(list(range(10)), dist), FakeKernel(pid=7)
    reason = guard.check(4, kernel)
    assert "this kernel (pid 7) starts at Cell 4, but Cells 0..3 of this notebook" in reason
    assert f"pytest-xdist (--dist {dist}) split this notebook" in reason and "--dist loadfile" in reason
    later = guard.check(5, kernel)  # every later cell fails with the first reason, without running
    assert later.startswith("not run: the notebook's cells ran in more than one kernel") and "found at Cell 4" in later
    assert guard.ran == []


def test_a_kernel_given_a_later_run_of_cells_names_the_gap():
    guard, kernel = KernelGuard(list(range(10)), "load"), FakeKernel(pid=7)
    assert [guard.check(c, kernel) for c in (0, 1, 2)] == [None] * 3
    reason = guard.check(6, kernel)
    assert "ran Cells 0..2 and is now given Cell 6, but Cells 3..5 of this notebook" in reason


def test_a_notebook_resumed_on_a_fresh_worker_names_the_crash():
    reason = KernelGuard(list(range(10)), "loadfile").check(3, FakeKernel())
    assert "worker that ran them crashed" in reason and "re-queued the rest of the notebook" in reason


def test_a_changed_kernel_pid_fails():
    guard = KernelGuard(list(range(5)), "loadfile")
    assert guard.check(0, FakeKernel(pid=10)) is None
    reason = guard.check(1, FakeKernel(pid=11))
    assert reason == "the notebook's kernel changed (pid 10 -> 11) after Cell 0"


def test_a_dead_kernel_fails_with_its_exit_status():
    guard, kernel = KernelGuard(list(range(5)), "loadfile"), FakeKernel(pid=12)
    assert guard.check(0, kernel) is None
    kernel.process.returncode = -9
    reason = guard.check(1, kernel)
    assert reason.startswith("the notebook's kernel (pid 12) ended with signal 9 (SIGKILL)")
    assert reason.endswith("(the last cell it ran: Cell 0)")
    assert guard.check(2, kernel).startswith("not run: the notebook's kernel (pid 12) ended with signal 9")


def test_a_kernel_stopped_by_nbval_names_the_failure_before():
    guard, kernel = KernelGuard(list(range(5)), "loadfile"), FakeKernel()
    assert guard.check(0, kernel) is None
    guard.last_failure = "Cell 0 failed: Timeout of 5 seconds exceeded waiting for output."
    del kernel.km  # what nbval's RunningKernel.stop() does
    reason = guard.check(1, kernel)
    assert reason == (
        "nbval stopped the notebook's kernel after Cell 0 "
        "(Cell 0 failed: Timeout of 5 seconds exceeded waiting for output.)"
    )


def test_exit_status_in_words():
    assert exit_status(1) == "exit code 1"
    assert exit_status(-15) == "signal 15 (SIGTERM)"
    assert exit_status(-9).startswith("signal 9 (SIGKILL) (the out-of-memory killer")


def test_watched_kernel_raises_when_the_process_ends_instead_of_waiting_out_the_timeout():
    kernel = FakeKernel(pid=13)
    KernelGuard([0, 1], "no").check(0, kernel, "x = 1")  # the first cell installs the watch
    kernel.process.returncode = -9
    start = time.monotonic()
    with pytest.raises(KernelDied, match=r"kernel \(pid 13\) ended with signal 9 .* while this cell ran") as info:
        kernel.get_message("shell", timeout=2000)
    assert time.monotonic() - start < 5 and kernel.calls == 1
    assert (info.value.cell_num, info.value.source) == (0, "x = 1")


def test_watched_kernel_still_times_out_while_the_process_lives():
    kernel = FakeKernel()
    watch_kernel(kernel, poll_s=0.05)
    with pytest.raises(Empty):
        kernel.get_message("iopub", timeout=0.2)
    assert 2 <= kernel.calls <= 6  # waited in slices, checking the process in between


# -- kernels that end before their first reply ----------------------------------------------------------------

# Put on a kernel's PYTHONPATH, this makes the first N kernels started (N read from the file AMP_TEST_DEATHS names)
# write a line to stderr and, before ipykernel starts, exit with code 3 (or, with AMP_TEST_HANG set, stay silent a
# minute); every later one starts normally.
DYING_SITE = """
import os, sys, time
if "ipykernel_launcher" in sys.orig_argv and os.environ.get("AMP_TEST_DEATHS"):
    with open(os.environ["AMP_TEST_DEATHS"]) as f:
        left = int(f.read())
    if left > 0:
        with open(os.environ["AMP_TEST_DEATHS"], "w") as f:
            f.write(str(left - 1))
        sys.stderr.write(f"made to end before ipykernel starts, {left - 1} such starts left\\n")
        sys.stderr.flush()
        if os.environ.get("AMP_TEST_HANG"):
            time.sleep(60)
        os._exit(3)
"""


def _dying(tmp_path: Path, deaths: int, hang: bool = False) -> dict[str, str]:
    """An environment whose next ``deaths`` kernels end at start, or hang there (DYING_SITE)."""
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(DYING_SITE)
    (tmp_path / "deaths").write_text(str(deaths))
    path = os.pathsep.join(filter(None, [str(tmp_path / "site"), str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path, "AMP_TEST_DEATHS": str(tmp_path / "deaths")}
    return {**env, "AMP_TEST_HANG": "1"} if hang else env


def test_a_kernel_that_ends_before_its_first_reply_is_started_again_and_the_death_kept(tmp_path):
    km, kc = start_new_kernel(kernel_name=CURRENT_ENV_KERNEL_NAME, env=_dying(tmp_path, 1), cwd=str(tmp_path))
    try:
        reply = kc.execute_interactive("print(6 * 7)", timeout=60)
        assert reply["content"]["status"] == "ok"
        [death] = km._amp_start_deaths
        assert "Kernel died before replying to kernel_info (the kernel ended with exit code 3)" in death, death
        assert "made to end before ipykernel starts, 0 such starts left" in death, death
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_kernel_that_ends_before_its_first_reply_at_each_start_fails_quoting_each_death(tmp_path):
    with pytest.raises(RuntimeError, match="ended before its first reply at each of 2 starts") as info:
        start_new_kernel(kernel_name=CURRENT_ENV_KERNEL_NAME, env=_dying(tmp_path, 5), cwd=str(tmp_path))
    message = str(info.value)
    assert message.count("the kernel ended with exit code 3") == 2, message
    assert "4 such starts left" in message and "3 such starts left" in message, message
    assert (tmp_path / "deaths").read_text() == "3"  # two starts, no third


def test_a_kernel_alive_but_silent_at_start_is_not_started_again(tmp_path):
    env = _dying(tmp_path, 5, hang=True)
    with pytest.raises(RuntimeError, match=r"\(the kernel is alive\); its stderr ends:") as info:
        start_new_kernel(startup_timeout=3, kernel_name=CURRENT_ENV_KERNEL_NAME, env=env, cwd=str(tmp_path))
    assert "4 such starts left" in str(info.value), info.value
    assert (tmp_path / "deaths").read_text() == "4"  # one start


# -- pytest with nbval on real kernels ------------------------------------------------------------------------


def _notebook(path: Path, sources: list[str]) -> None:
    cells = [
        {"id": f"cell-{i}", "cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": s}
        for i, s in enumerate(sources)
    ]
    nb = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb))


def _pytest(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, str]:
    # the notebooks live outside the repository, so its root conftest.py is loaded as a plugin (-p conftest)
    cmd = [
        sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
        "-p", "conftest", "-p", "no:cacheprovider", "-p", "no:benchmark", "-q", "-rf", "--color=no", *args,
    ]  # fmt: skip
    env = env or {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    return proc, proc.stdout + proc.stderr


WHOLE = ["x = 0"] + ["x += 1"] * 14
KILLED = ["x = 1", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "x += 1", "x += 1"]


@pytest.fixture(scope="module")
def loadfile_run(tmp_path_factory):
    """One ``pytest -n 2`` (no --dist: the root conftest.py picks loadfile) of two whole notebooks (a, b) and one
    whose kernel is killed during its second cell: (seconds it took, its output). Two tests read it."""
    tmp_path = tmp_path_factory.mktemp("loadfile")
    for name in ("a", "b"):
        _notebook(tmp_path / f"{name}.ipynb", WHOLE)
    _notebook(tmp_path / "killed.ipynb", KILLED)
    start = time.monotonic()
    proc, out = _pytest(tmp_path, "-n", "2", *(str(tmp_path / f"{n}.ipynb") for n in ("a", "b", "killed")))
    assert proc.returncode == 1, out  # the killed notebook's cells fail
    return time.monotonic() - start, out


def _failed(out: str) -> list[str]:
    """The node ids (file name and cell) of the FAILED lines of pytest's short summary."""
    lines = [line.removeprefix("FAILED ").split(" - ")[0] for line in out.splitlines() if line.startswith("FAILED ")]
    return sorted(line.rsplit("/", 1)[-1] for line in lines)


def _counts(out: str) -> dict[str, int]:
    """pytest's closing line as {"passed": 31, "failed": 3}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|error)", out.strip().splitlines()[-1])}


@pytest.mark.slow
def test_split_notebooks_fail_with_the_reason_and_whole_ones_pass(tmp_path, loadfile_run):
    _notebook(tmp_path / "a.ipynb", WHOLE)  # its 15 cells, dealt out to both workers by --dist load
    proc, out = _pytest(tmp_path, "-n", "2", "--dist", "load", str(tmp_path / "a.ipynb"))
    assert proc.returncode == 1, out
    assert "NameError" not in out, out
    assert "pytest-xdist (--dist load) split this notebook across workers" in out, out

    _, out = loadfile_run  # no --dist: the root conftest.py picks loadfile, and a and b pass whole
    assert _counts(out) == {"passed": 31, "failed": 3}, out  # a's 15 cells, b's 15 and killed.ipynb's first
    assert all(node.startswith("killed.ipynb::") for node in _failed(out)), out
    assert "NameError" not in out, out


@pytest.mark.slow
def test_a_kernel_killed_during_a_cell_fails_it_in_seconds(loadfile_run):
    seconds, out = loadfile_run
    assert seconds < 120, out  # nbval alone waits for the reply until its 2000 s cell timeout
    assert _failed(out) == [f"killed.ipynb::Cell {i}" for i in (1, 2, 3)], out
    assert _counts(out) == {"passed": 31, "failed": 3}, out
    assert "ended with signal 9 (SIGKILL)" in out and "while this cell ran; its stderr ends:" in out, out
    assert "NameError" not in out, out


@pytest.mark.slow
def test_a_notebook_whose_kernel_ended_at_start_runs_and_the_summary_and_junit_say_so(tmp_path):
    _notebook(tmp_path / "a.ipynb", WHOLE)
    junit = tmp_path / "junit.xml"
    proc, out = _pytest(tmp_path, "-n", "2", f"--junitxml={junit}", str(tmp_path / "a.ipynb"), env=_dying(tmp_path, 1))
    assert proc.returncode == 0 and _counts(out) == {"passed": 15}, out
    spec = importlib.util.spec_from_file_location("load_test", ROOT / "delivery" / "load" / "load_test.py")
    load_test = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(load_test)
    assert dict(load_test.restarted_kernels(junit)) == {"a.ipynb": 1}, junit.read_text()
    assert "notebook kernels started again: each ended before its first reply" in out, out
    [line] = [line for line in out.splitlines() if "Kernel died before replying" in line]
    assert line.endswith("a.ipynb: Kernel died before replying to kernel_info (the kernel ended with exit code 3); "
                         "its stderr ends:"), line  # fmt: skip
    assert "made to end before ipykernel starts, 0 such starts left" in out, out
