"""Test tooling: the peak resident memory of a process (a notebook's kernel), without importing torch."""

from __future__ import annotations

import sys


def peak_memory_bytes(pid: int | None = None) -> int | None:
    """Peak resident memory (bytes) of process ``pid`` (default: this one), or None where unknown.

    Read from ``/proc/<pid>/status`` (``VmHWM``) on Linux; elsewhere, for this process only, from
    ``resource.getrusage`` (kilobytes on Linux, bytes on macOS). The root conftest.py and the browser tests
    use it to check that no notebook's kernel goes above the course's memory budget.
    """
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0):
        raise ValueError(f"pid must be a positive int or None (this process), got {pid!r}")
    target = "self" if pid is None else str(pid)
    try:
        with open(f"/proc/{target}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if pid is None:
        try:
            import resource
        except ImportError:  # Windows
            return None
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    return None
