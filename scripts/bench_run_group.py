"""How reliable and how fast is ``amp_lessons.distributed.run_group`` (the base's launcher, ``amp_lessons._launch``)?
N runs (default 500) of a rank function that does no collective, then N runs of one that all-reduces, on 2 ranks;
prints failures/N and the time per run, and the first line of each kind of failure.

    python scripts/bench_run_group.py            # 500 + 500 runs
    python scripts/bench_run_group.py -n 100 --no-barrier   # the launcher without its barrier before teardown

``--no-barrier`` replaces the barrier that every rank passes before leaving the group by nothing, to reproduce the
failure it prevents: a rank that returns at once and closes its connections while its peer is still connecting
(gloo's "connectFullMesh failed ... Connection closed by peer"). Workers are forked on Linux, so the patch reaches them.
"""

from __future__ import annotations

import argparse
import collections
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

from amp_lessons import _launch  # noqa: E402


def no_collective(rank, world_size):
    return rank


def all_reduce(rank, world_size):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)
    return t.item()


def bench(fn, n: int, world_size: int, timeout: float) -> tuple[int, float, collections.Counter]:
    failures, kinds = 0, collections.Counter()
    t0 = time.perf_counter()
    for _ in range(n):
        try:
            _launch.run_group(fn, world_size, timeout=timeout)
        except (_launch.WorkerError, _launch.GroupTimeout, _launch.GroupUnavailable) as e:
            failures += 1
            last = [ln for ln in str(e).splitlines() if ln.strip()][-1]
            kinds[f"{type(e).__name__}: {re.sub(r':[0-9]+', ':<port>', last)[:160]}"] += 1
    return failures, (time.perf_counter() - t0) / n, kinds


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=500, help="runs of each rank function (default 500)")
    ap.add_argument("--world-size", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=60.0, help="run_group's timeout per run, seconds")
    ap.add_argument("--no-barrier", action="store_true", help="drop the barrier before teardown (the old launcher)")
    a = ap.parse_args(argv)
    if a.n < 1:
        ap.error(f"-n {a.n} is not allowed: at least 1 run")
    if a.no_barrier:
        dist.barrier = lambda *args, **kwargs: None  # the forked workers inherit the patched module
    print(
        f"torch {torch.__version__}, world size {a.world_size}, {a.n} runs each, barrier {'off' if a.no_barrier else 'on'}"
    )
    total = 0
    for fn in (no_collective, all_reduce):
        failures, per_run, kinds = bench(fn, a.n, a.world_size, a.timeout)
        total += failures
        print(f"{fn.__name__:14} failures {failures}/{a.n} ({failures / a.n:.1%}), {per_run * 1e3:.0f} ms per run")
        for kind, count in kinds.most_common():
            print(f"    {count:4} x {kind}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
