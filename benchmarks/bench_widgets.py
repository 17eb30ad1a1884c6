"""Benchmark the explorers' updates in-process (run: make bench).

Goal: every update a learner triggers (moving any control of any explorer of the course: typing a value, picking a
format, flipping a bit, moving a slider, picking an option, clicking a button) takes under 100 ms on a 2-core CPU,
readout, picture and PNG included. Builds every explorer a topic offers (the ``*_explorer`` and ``format_designer``
factories of each topic's face), times 20 moves of each of its controls (and of the widgets its ``EXTRA_MOVES``
names) with the Agg backend and prints the median and the maximum; exits non-zero if a maximum is over the goal.
"""

from __future__ import annotations

import os
import sys
import time

import matplotlib

matplotlib.use("Agg")

import importlib  # noqa: E402

import ipywidgets  # noqa: E402
import torch  # noqa: E402
from widget_steps import measure_update_ms  # noqa: E402  (beside this script)

from amp_lessons.lessons import TOPICS  # noqa: E402

N = 20
GOAL_MS = 100.0


def explorer_factories() -> dict:
    """Every explorer factory a topic's face offers, by name: its ``*_explorer`` names and ``format_designer``."""
    found = {}
    for topic in TOPICS:
        face = importlib.import_module(f"amp_lessons.{topic}")
        for name in face.__all__:
            if name.endswith("_explorer") or name == "format_designer":
                found[name] = getattr(face, name)
    return found


def main() -> int:
    print(
        f"{os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"matplotlib {matplotlib.__version__}, ipywidgets {ipywidgets.__version__}; {N} updates per kind"
    )
    ok = True
    for name, make in explorer_factories().items():
        t0 = time.perf_counter()
        box = make()
        print(f"{name}() built and drawn in {1e3 * (time.perf_counter() - t0):.0f} ms")
        for kind, r in measure_update_ms(box, n=N).items():
            good = r["max"] < GOAL_MS
            ok &= good
            print(
                f"  {kind:17s} median {r['median']:6.1f} ms   max {r['max']:6.1f} ms   "
                f"(goal < {GOAL_MS:.0f} ms: {'ok' if good else 'MISSED'})"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
