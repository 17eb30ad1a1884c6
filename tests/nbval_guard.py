"""Test tooling: one kernel per notebook, or a failure that says why not.

nbval runs a notebook's cells one pytest item at a time in the kernel that its file collector started, and
a notebook's cells depend on each other. Two things can make a cell run in a kernel that did not run the
cells before it, and the symptom is then only a ``NameError``:

* pytest-xdist splitting the notebook: ``-n 2`` without ``--dist`` means ``--dist load``, which sends runs of
  cells to whichever worker is free, so one notebook's cells run in two kernels, each in its own worker
  (``worksteal`` and ``loadgroup`` do the same). The root conftest.py makes ``--dist loadfile`` the default
  when no ``--dist`` is given; this guard catches an explicit splitting mode.
* a crashed pytest-xdist worker: xdist re-queues the rest of that worker's file on a fresh worker
  (``LoadScopeScheduling.remove_node``), whose new kernel starts partway through the notebook.

nbval itself never restarts a kernel (it uses jupyter_client's plain ``KernelManager``, whose restarter does
nothing), but a kernel that dies while a cell runs leaves nbval waiting for the reply until the cell timeout
(2000 s by default), and one that dies between cells fails the next cell with "Kernel dead on test start"
without the exit status. The guard watches the kernel while nbval waits and names the exit status, with the
last lines the kernel wrote to its stderr (:func:`start_new_kernel` keeps them; nbval sends them to /dev/null).
A kernel that ends before it first replies, before any cell, is started again (:func:`start_new_kernel`).

:class:`KernelGuard` keeps, per notebook collector, the kernel's pid and the cells it ran; ``check`` is called
before each cell runs and returns the reason this cell cannot run in this kernel, or None. Once a notebook's
kernel is found wrong, every later cell of it fails with the first reason instead of running.

Sources (the versions pinned here: nbval 0.11, pytest-xdist 3.8, jupyter_client 8.10):
https://github.com/pytest-dev/pytest-xdist/blob/master/src/xdist/plugin.py (``-n`` without ``--dist`` is ``load``),
https://github.com/pytest-dev/pytest-xdist/blob/master/src/xdist/scheduler/loadscope.py (``remove_node`` re-queues),
https://github.com/computationalmodelling/nbval/blob/master/nbval/plugin.py (``IPyNbCell.runtest``, the timeouts),
https://github.com/jupyter/jupyter_client/blob/main/jupyter_client/manager.py (``start_restarter`` does nothing),
https://github.com/jupyter/jupyter_client/issues/487 (the race of a kernel's ports; ``LocalPortCache`` in
jupyter_client/connect.py guards against it within one process only),
https://github.com/ipython/ipykernel/blob/main/ipykernel/kernelapp.py (``_bind_socket``: a given port is tried once).
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
import weakref
from queue import Empty

import nbval.kernel
from jupyter_client.manager import KernelManager
from nbval.kernel import NbvalKernelspecManager
from nbval.plugin import NbCellError

START_TRIES = 2  # a kernel that ends before its first reply is started again, once
STDERR_LINES = 15  # how much of a dead kernel's stderr a failure quotes
POLL_S = 1.0  # how often the wait for a kernel's reply checks that the kernel is alive
SPLITTING = ("load", "worksteal", "loadgroup")  # pytest-xdist modes that hand out single items, not files
SPLIT_WHY = (
    "pytest-xdist (--dist {dist}) split this notebook across workers, each with its own kernel; run "
    "notebooks with --dist loadfile (the default here when no --dist is given)"
)


class KernelDied(NbCellError):
    """The notebook's kernel process ended while nbval waited for it (reported as a failure of that cell)."""


def exit_status(returncode: int) -> str:
    """``returncode`` of a kernel process in words: 'exit code 1', 'signal 9 (SIGKILL)'."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown signal"
        hint = " (the out-of-memory killer, or another process, killed it)" if -returncode == signal.SIGKILL else ""
        return f"signal {-returncode} ({name}){hint}"
    return f"exit code {returncode}"


def _stderr_tail(err) -> str:
    """The last lines a kernel wrote to its stderr file (of its last 64 KiB), indented; read with pread, which
    leaves alone the file offset that the kernel shares with this file object."""
    if err is None or err.closed:
        return ""
    size = os.fstat(err.fileno()).st_size
    text = os.pread(err.fileno(), min(size, 65536), max(0, size - 65536)).decode(errors="replace").strip()
    lines = text.splitlines()[-STDERR_LINES:] or ["(nothing)"]
    return "; its stderr ends:\n" + "\n".join(f"    {line}" for line in lines)


def start_new_kernel(startup_timeout=60, kernel_name="python", stderr=None, tries=START_TRIES, **kwargs):
    """nbval's ``start_new_kernel`` (nbval/kernel.py; :func:`pytest_configure` puts this in its place), changed twice.

    * The kernel's stderr goes to a temporary file, not to the /dev/null that nbval's ``RunningKernel`` opens and
      passes as ``stderr`` (closed here): when a kernel ends, the failure quotes what it wrote last. The file is
      closed when its kernel manager is collected, at the latest when pytest exits.
    * A kernel process that ends before its first reply to ``kernel_info`` ("Kernel died before replying to
      kernel_info") is started again, up to ``tries`` starts in all. No cell has run in it, so nothing of the
      notebook is retried. Each such death is kept in ``km._amp_start_deaths`` (its exit status and stderr), and
      the root conftest.py reports it (and empties the list) in pytest's summary and in JUnit XML. One known cause is a race of the
      kernel's ports: jupyter_client picks five free ports by binding each to port 0 and letting it go, and the
      kernel, which binds them a second later, exits if another process took one meanwhile (jupyter_client issue
      487; its ``LocalPortCache`` keeps the kernels of one process apart, not those of two pytest-xdist workers,
      and ipykernel's ``_bind_socket`` tries a given port once). A kernel that is alive but silent for
      ``startup_timeout`` is not started again.
    """
    if getattr(stderr, "name", None) == os.devnull:
        stderr.close()
    deaths: list[str] = []
    for _ in range(tries):
        err = tempfile.TemporaryFile()
        km = KernelManager(kernel_name=kernel_name, kernel_spec_manager=NbvalKernelspecManager())
        kc = None
        try:
            km.start_kernel(stderr=err, **kwargs)
            kc = km.client()
            kc.start_channels()
            kc.wait_for_ready(timeout=startup_timeout)
        except BaseException as e:
            process = getattr(km.provisioner, "process", None)
            returncode = None if process is None else process.poll()
            if kc is not None:
                kc.stop_channels()
            if km.has_kernel:
                km.shutdown_kernel(now=True)
            tail = _stderr_tail(err)
            err.close()
            if not isinstance(e, RuntimeError):
                raise
            if returncode is None:  # alive but silent: not started again
                raise RuntimeError(f"{e} (the kernel is alive){tail}") from e
            deaths.append(f"{e} (the kernel ended with {exit_status(returncode)}){tail}")
        else:
            weakref.finalize(km, err.close)
            km._amp_stderr, km._amp_start_deaths = err, deaths
            return km, kc
    raise RuntimeError(f"the kernel ended before its first reply at each of {tries} starts:\n" + "\n".join(deaths))


def pytest_configure(config) -> None:
    """Put :func:`start_new_kernel` in nbval's place (its ``RunningKernel`` looks the name up at each start): the
    root conftest.py calls this, and a run outside the repository loads this module as a plugin (``-p``)."""
    nbval.kernel.start_new_kernel = start_new_kernel


def kernel_process(kernel):
    """The Popen of an nbval ``RunningKernel``, or None (not started, or already stopped by nbval)."""
    km = getattr(kernel, "km", None)
    return getattr(getattr(km, "provisioner", None), "process", None)


def watch_kernel(kernel, poll_s: float = POLL_S) -> None:
    """Make ``kernel.get_message`` (every wait of nbval for a reply or output) poll in ``poll_s`` slices and
    raise KernelDied as soon as the kernel process has ended, instead of waiting out nbval's timeout."""
    if getattr(kernel, "_amp_watched", False):
        return
    wait = kernel.get_message

    def get_message(stream, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = poll_s if deadline is None else min(poll_s, max(0.0, deadline - time.monotonic()))
            try:
                return wait(stream, timeout=left)
            except Empty:
                process = kernel_process(kernel)
                returncode = None if process is None else process.poll()
                if returncode is not None:
                    cell_num, source = getattr(kernel, "_amp_cell", (-1, ""))
                    raise KernelDied(
                        cell_num,
                        f"the notebook's kernel (pid {process.pid}) ended with {exit_status(returncode)} "
                        f"while this cell ran{_stderr_tail(getattr(kernel.km, '_amp_stderr', None))}",
                        source,
                    ) from None
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    kernel.get_message = get_message
    kernel._amp_watched = True


def _cells(nums: list[int]) -> str:
    return f"Cell {nums[0]}" if len(nums) == 1 else f"Cells {nums[0]}..{nums[-1]}"


class KernelGuard:
    """Per notebook collector: the kernel that runs its cells and the cells it ran (``cell_num`` order)."""

    def __init__(self, selected: list[int], dist: str):
        self.selected = selected  # the cells of this notebook this session runs, in order
        self.dist = dist  # pytest-xdist's --dist mode ("no" without xdist)
        self.pid: int | None = None
        self.ran: list[int] = []
        self.broken: str | None = None  # the first reason found; every later cell fails with it
        self.last_failure: str | None = None

    def _split_reason(self, cell: int, missing: list[int]) -> str:
        cells = _cells(missing)
        if self.dist in SPLITTING:
            why = SPLIT_WHY.format(dist=self.dist)
        elif self.dist == "no":
            why = "they were not run before it in this session"
        else:
            why = (
                "the pytest-xdist worker that ran them crashed (see the 'worker ... crashed while running' "
                "failure) and xdist re-queued the rest of the notebook on a fresh worker and kernel"
            )
        if self.ran:
            here = f"ran {_cells(self.ran)} and is now given Cell {cell}"
        else:
            here = f"starts at Cell {cell}"
        return (
            f"the notebook's cells ran in more than one kernel: this kernel (pid {self.pid}) {here}, but "
            f"{cells} of this notebook, selected in this run, ran in another kernel or not at all: {why}"
        )

    def check(self, cell: int, kernel, source: str = "") -> str | None:
        """The reason ``cell`` cannot run in ``kernel`` (the notebook collector's kernel), or None.

        Where None, ``cell`` is counted as run in this kernel, and nbval's waits on the kernel are watched."""
        if self.broken is not None:
            return f"not run: {self.broken}"
        process = kernel_process(kernel)
        if process is None:
            after = f" after Cell {self.ran[-1]}" if self.ran else ""
            reason = f"nbval stopped the notebook's kernel{after}"
            if self.last_failure:
                reason += f" ({self.last_failure})"
            return self._break(cell, reason)
        returncode = process.poll()
        if returncode is not None:
            after = f"(the last cell it ran: Cell {self.ran[-1]})" if self.ran else "before its first cell"
            return self._break(
                cell,
                f"the notebook's kernel (pid {process.pid}) ended with {exit_status(returncode)} {after}",
                _stderr_tail(getattr(kernel.km, "_amp_stderr", None)),
            )
        if self.pid is None:
            self.pid = process.pid
        elif process.pid != self.pid:
            reason = f"the notebook's kernel changed (pid {self.pid} -> {process.pid}) after Cell {self.ran[-1]}"
            if self.dist in SPLITTING:
                reason += f": {SPLIT_WHY.format(dist=self.dist)}"
            return self._break(cell, reason)
        done = len(self.ran)
        expected = self.selected[: self.selected.index(cell)] if cell in self.selected else None
        if expected is not None and expected != self.ran:
            missing = [c for c in expected if c not in self.ran]
            if missing:
                return self._break(cell, self._split_reason(cell, missing))
        self.ran.append(cell)
        if done == 0:
            watch_kernel(kernel)
        kernel._amp_cell = (cell, source)
        return None

    def _break(self, cell: int, reason: str, stderr: str = "") -> str:
        """Keep ``reason`` for every later cell; this cell's failure also quotes the kernel's ``stderr``."""
        self.broken = f"{reason} (found at Cell {cell})"
        return reason + stderr
