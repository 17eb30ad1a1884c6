"""This machine's size as the course's limits see it: its matmul rate, its memory and the budgets derived from
them (a leaf module, so that ``_validate`` and ``device`` import it without a cycle)."""

from __future__ import annotations

import functools
import math
import os
import time

import torch

__all__ = ["MAX_TENSOR_BYTES", "WORK_BUDGET_S", "machine_flops", "machine_memory_bytes"]

WORK_BUDGET_S = 1800.0
"""The longest a single call may be estimated to run on this machine (30 minutes) before it is refused."""


@functools.lru_cache(maxsize=1)
def machine_flops() -> float:
    """This machine's fp32 matmul rate in FLOP/s, measured once (best of five 256^3 products)."""
    a = torch.randn(256, 256)
    best = math.inf
    for _ in range(5):
        t0 = time.perf_counter()
        torch.mm(a, a)
        best = min(best, time.perf_counter() - t0)
    return 2 * 256**3 / max(best, 1e-9)


def machine_memory_bytes() -> int:
    """This machine's physical memory (8 GiB where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return 8 * 1024**3


MAX_TENSOR_BYTES = min(2 * 1024**3, machine_memory_bytes() // 8)
"""The largest single tensor the experiments allocate at a learner's request: an eighth of the memory, at most 2 GiB."""
