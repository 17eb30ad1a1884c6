"""How patient a test's own time limit is on a busy machine.

A test that bounds a real run (a process group, a compile, a call of the argument contract) states the limit it
needs on an idle machine; :func:`patience` stretches it by how oversubscribed the machine is when the limit is set:
the 1-minute load average over the cores, at least 1 and at most :data:`MAX_STRETCH`. So the same limit holds on a
2-core laptop running ``-n 2`` and on a 16-core GPU machine running ``pytest -n 16``, where compile and
process-group tests share the cores with fifteen other workers, and a real hang is still caught."""

from __future__ import annotations

import os

MAX_STRETCH = 8.0


def stretch() -> float:
    """The machine's oversubscription now: load average / cores, between 1 and :data:`MAX_STRETCH`."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # no load average on this platform
        return 1.0
    return min(MAX_STRETCH, max(1.0, load / (os.cpu_count() or 1)))


def patience(seconds: float) -> float:
    """``seconds`` (the limit on an idle machine) stretched by :func:`stretch`."""
    return seconds * stretch()
