"""nbval under load: the notebooks executed and compared while the machine is busy, as in a room of learners.

While pytest runs nbval over the chosen notebooks (``-n 2`` and no ``--dist``, as in the report of cells
failing with NameErrors; the root conftest.py makes that ``--dist loadfile``), this keeps the machine loaded:

* one CPU-burning process per core (``--burners``, default ``os.cpu_count()``);
* waves of "learner" kernels (``--learners`` per wave, every ``--wave-s`` seconds): each wave starts its kernels
  at the same moment, each from its own process and its own jupyter_client ``KernelManager`` (so the ports are
  picked, and then bound, concurrently, as when several people open a notebook at once), runs a few seconds of
  matrix products in each, and shuts them down.

It then reads pytest's JUnit XML and prints, per notebook, the cells that passed and failed, and classifies the
failures (``NameError``, timeout, dead kernel, kernel restarted mid-notebook, crashed worker, other), with the
wall time. Exit status: pytest's, or 1 where any cell failed.

    .venv/bin/python delivery/load/load_test.py                       # the lessons hit hardest (03 04 05 08 11)
    .venv/bin/python delivery/load/load_test.py notebooks delivery/presenter   # every notebook
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TARGETS = [
    "notebooks/03_fp16_overflow_underflow.ipynb",
    "notebooks/04_autocast_policies.ipynb",
    "notebooks/05_loss_scaling.ipynb",
    "notebooks/08_debugging.ipynb",
    "notebooks/11_compile.ipynb",
]

LEARNER_CELL = """
import time, torch
torch.manual_seed(0)
a = torch.randn(384, 384)
t0 = time.perf_counter()
while time.perf_counter() - t0 < {busy_s}:
    a = torch.tanh(a @ a.T / 384)
"""


def _burn() -> None:  # pragma: no cover - runs in a child process until terminated
    while True:
        pass


def _learner(barrier, busy_s: float, results) -> None:  # pragma: no cover - child process
    from jupyter_client.manager import KernelManager

    barrier.wait()
    km = KernelManager(kernel_name="python3")
    outcome = "ready"
    err = tempfile.TemporaryFile()  # the kernel's stderr: a failure's outcome ends with its last line
    try:
        km.start_kernel(stderr=err)
        kc = km.client()
        kc.start_channels()
        try:
            kc.wait_for_ready(timeout=120)
            kc.execute_interactive(LEARNER_CELL.format(busy_s=busy_s), timeout=120 + busy_s)
        except Exception as exc:  # a learner's kernel that fails is counted, not fatal
            outcome = f"{type(exc).__name__}: {exc}"
        kc.stop_channels()
    except Exception as exc:
        outcome = f"start: {type(exc).__name__}: {exc}"
    finally:
        try:
            km.shutdown_kernel(now=True)
        except Exception:
            pass
    if outcome != "ready":
        err.seek(0)
        last = err.read().decode(errors="replace").strip().splitlines()[-1:]
        outcome += f" (its stderr's last line: {last[0] if last else 'none'})"
    err.close()
    results.put(outcome)


class Load:
    """Burners (one process per core) and waves of learner kernels started together, until stop()."""

    def __init__(self, burners: int, learners: int, wave_s: float, busy_s: float):
        self.ctx = mp.get_context("spawn")
        self.burners = [self.ctx.Process(target=_burn, daemon=True) for _ in range(burners)]
        self.learners, self.wave_s, self.busy_s = learners, wave_s, busy_s
        self.results = self.ctx.Queue()
        self.outcomes: Counter[str] = Counter()
        self.waves = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._waves, daemon=True)

    def start(self) -> None:
        for p in self.burners:
            p.start()
        if self.learners:
            self._thread.start()

    def _waves(self) -> None:
        while not self._stop.is_set():
            barrier = self.ctx.Barrier(self.learners)
            procs = [
                self.ctx.Process(target=_learner, args=(barrier, self.busy_s, self.results), daemon=True)
                for _ in range(self.learners)
            ]
            for p in procs:
                p.start()
            self.waves += 1
            self._stop.wait(self.wave_s)
            for p in procs:
                p.join(timeout=60)
            while not self.results.empty():
                self.outcomes[self.results.get()] += 1

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=120)
        for p in self.burners:
            p.terminate()
        for p in self.burners:
            p.join()
        while not self.results.empty():
            self.outcomes[self.results.get()] += 1


def classify(message: str) -> str:
    """The kind of a failed cell, from its failure text (tests/nbval_guard.py's reasons first)."""
    if "ran in more than one kernel" in message or "kernel changed" in message:
        return "notebook split across kernels"
    if "crashed while running" in message:
        return "xdist worker crashed"
    if "kernel (pid" in message and "ended with" in message or "Kernel dead" in message or "Kernel died" in message:
        return "dead kernel"
    if "Timeout" in message:
        return "timeout"
    if "NameError" in message:
        return "NameError"
    if "outputs differ" in message:
        return "outputs differ"
    return "other"


def _notebook(case: ET.Element) -> str:
    return re.sub(r"/ipynb$", ".ipynb", case.get("classname", "").replace(".", "/"))


def restarted_kernels(path: Path) -> Counter[str]:
    """{notebook: kernel starts that ended before the first reply and were started again} from pytest's JUnit XML
    (the root conftest.py's amp-kernel-start-death properties; tests/nbval_guard.py starts them again)."""
    deaths: Counter[str] = Counter()
    for case in ET.parse(path).getroot().iter("testcase"):
        deaths[_notebook(case)] += sum(p.get("name") == "amp-kernel-start-death" for p in case.iter("property"))
    return +deaths


def read_junit(path: Path) -> dict[str, list[tuple[str, str, str, float]]]:
    """{notebook: [(cell, outcome, message, seconds)]} from pytest's JUnit XML."""
    cells: dict[str, list[tuple[str, str, str, float]]] = defaultdict(list)
    for case in ET.parse(path).getroot().iter("testcase"):
        notebook = _notebook(case)
        name = case.get("name", "")
        seconds = float(case.get("time", "0") or 0)
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            el = case.find(tag)
            if el is not None:
                outcome = "skipped" if tag == "skipped" else "failed"
                message = f"{el.get('message', '')}\n{el.text or ''}"
                break
        cells[notebook].append((name, outcome, message, seconds))
    return cells


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", default=DEFAULT_TARGETS)
    ap.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--learners", type=int, default=6, help="kernels started together in each wave")
    ap.add_argument("--wave-s", type=float, default=20.0, help="seconds between waves")
    ap.add_argument("--busy-s", type=float, default=5.0, help="seconds of matrix products in each learner kernel")
    ap.add_argument("-n", "--workers", default="2", help="pytest-xdist workers (-n), as make test")
    ap.add_argument(
        "--pytest-args",
        default="",
        help="extra pytest arguments, one string: e.g. '--dist load' (a control that splits notebooks), "
        "'--noconftest' (without the root conftest.py's scheduling, kernel guard and kernel start, which starts "
        "again a kernel that ends before its first reply)",
    )
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable, "-m", "pytest", "-n", args.workers, "-p", "no:cacheprovider", "-p", "no:benchmark", "-q",
            f"--junitxml={junit}", *args.pytest_args.split(), *args.targets,
        ]  # fmt: skip
        load = Load(args.burners, args.learners, args.wave_s, args.busy_s)
        print(
            f"load: {args.burners} CPU burners, {args.learners} learner kernels started together every {args.wave_s:.0f} s"
        )
        print("$", " ".join(cmd), flush=True)
        load.start()
        t0 = time.perf_counter()
        try:
            rc = subprocess.run(cmd, cwd=ROOT).returncode
        finally:
            wall = time.perf_counter() - t0
            load.stop()
        cells = read_junit(junit) if junit.exists() else {}
        restarted = restarted_kernels(junit) if junit.exists() else Counter()

    print(f"\n== nbval under load: {wall:.0f} s wall; {load.waves} waves of learner kernels: {dict(load.outcomes)}")
    totals: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    for notebook, rows in sorted(cells.items()):
        counts = Counter(outcome for _, outcome, _, _ in rows)
        totals.update(counts)
        failed = [(name, msg) for name, outcome, msg, _ in rows if outcome == "failed"]
        line = f"{notebook}: {counts['passed']} passed, {counts['failed']} failed"
        if failed:
            first_name, first_msg = failed[0]
            kinds.update(classify(m) for _, m in failed)
            reason = re.sub(r"\s+", " ", re.sub(r"(\x1b|#x1B)\[[0-9;]*m", "", first_msg)).strip()[:300]
            line += f"; first failure {first_name}: {reason}"
        print(line)
    print(
        f"total: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped; failures by kind: {dict(kinds)}"
    )
    print(f"notebook kernels that ended before their first reply and were started again: {dict(restarted)}")
    slowest = sorted(((sec, f"{nb}::{name}") for nb, rows in cells.items() for name, _, _, sec in rows), reverse=True)
    print(
        "slowest cells (kernel start included in a notebook's first):",
        ", ".join(f"{n} {s:.0f} s" for s, n in slowest[:3]),
    )
    return rc if rc else (1 if totals["failed"] else 0)


if __name__ == "__main__":
    sys.exit(main())
