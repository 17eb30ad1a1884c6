"""How many learners this machine holds: `make bench-hub` (a figure, not a pass/fail test).

Starts the workshop hub (delivery/workshop/jupyterhub_config.py, from delivery/workshop/.venv: `make setup-workshop`) on free
localhost ports, then ramps the room: 1 learner, 2, 4, 8, ... each running the same lesson at the same moment in
their own kernel under their own single-user server (delivery/workshop/simulated_room.py: the REST API and the kernels'
websockets, as JupyterLab does). The time alone (1 learner) is the baseline; the ramp stops at the first room size
where the slowest learner takes more than ``--factor`` (2) times it, or any cell fails. It prints one row per room
size: the slowest and median learner's time, that over the time alone, the peak kernel memory, and failures; then
the largest room that stayed within the factor.

    .venv/bin/python delivery/load/hub_load.py                                   # lesson 03, rooms of 1, 2, 4, 8, 16
    .venv/bin/python delivery/load/hub_load.py --lesson 02_tf32.ipynb --max 8

The figure depends on what else the machine runs: take it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "delivery" / "workshop"))

import simulated_room as room  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lesson", default="03_fp16_overflow_underflow.ipynb", help="notebook in notebooks/")
    ap.add_argument("--max", type=int, default=16, help="largest room tried (default 16)")
    ap.add_argument("--factor", type=float, default=2.0, help="slowdown that ends the ramp (default 2)")
    ap.add_argument("--memory-limit", default="3G", help="AMP_KERNEL_MEMORY_LIMIT of every kernel (default 3G)")
    args = ap.parse_args(argv)
    if not (ROOT / "notebooks" / args.lesson).exists():
        ap.error(f"--lesson {args.lesson!r}: no such notebook in notebooks/")
    if args.max < 1 or args.factor <= 1:
        ap.error(f"--max must be >= 1 and --factor > 1, got {args.max} and {args.factor}")
    why = room.hub_missing()
    if why:
        print(why, file=sys.stderr)
        return 2

    print(f"== {os.cpu_count()} CPU cores; lesson {args.lesson}; ramp stops past {args.factor:g}x the time alone")
    header = f"{'learners':>8} {'slowest s':>10} {'median s':>9} {'x alone':>8} {'peak MiB':>9} {'failures':>9}"
    print(header)
    alone, held, sizes, tried, n = None, 0, [], [], 1
    while n <= args.max:
        sizes.append(n)
        n *= 2
    with tempfile.TemporaryDirectory(prefix="amp-hub-load-") as tmp:
        hub = room.Hub(Path(tmp) / "state", memory_limit=args.memory_limit)
        hub.start()
        try:
            started = 0
            for size in sizes:
                tried.append(size)
                names = [f"learner{i}" for i in range(started + 1, size + 1)]
                if names:  # the servers of the smaller rooms stay up: a room grows, as on the day
                    hub.add_learners(names)
                    for name in names:
                        hub.start_server(name)
                    for name in names:
                        hub.wait_ready(name)
                    started = size
                learners = [room.Learner(hub, f"learner{i}") for i in range(1, size + 1)]
                for lr in learners:
                    lr.token = hub.learner_token(lr.name)
                threads = [threading.Thread(target=lr.run_notebooks, args=((args.lesson,),)) for lr in learners]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                errors = [f"{lr.name}: {lr.error}" for lr in learners if lr.error]
                times = [lr.runs[0].seconds for lr in learners if lr.runs]
                fails = sum(len(r.failures) for lr in learners for r in lr.runs) + len(errors)
                peak = max((r.peak_rss for lr in learners for r in lr.runs), default=0)
                slowest = max(times) if times else float("nan")
                if alone is None:
                    alone = slowest
                ratio = slowest / alone
                print(
                    f"{size:8d} {slowest:10.1f} {statistics.median(times) if times else float('nan'):9.1f} "
                    f"{ratio:8.2f} {peak >> 20:9d} {fails:9d}",
                    flush=True,
                )
                for e in errors:
                    print("   ", e)
                if fails or ratio > args.factor:
                    break
                held = size
                time.sleep(2)
        finally:
            left = hub.stop()
    print(
        f"== held: {held} learner(s) running {args.lesson} at once within {args.factor:g}x its time alone "
        f"({alone:.1f} s); rooms tried: {', '.join(map(str, tried))}"
    )
    if left:
        print(f"processes left after the hub stopped (killed): {left}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
