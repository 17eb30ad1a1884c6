"""Benchmark the explorers' updates in-process (run: make bench).

Goal: every update a learner triggers (typing a value, picking a format, flipping a bit, moving
a slider, picking an encoding or a sign, typing v, injecting an overflow) takes under 100 ms on a 2-core CPU, readout,
picture and PNG included. Times 20 updates of each kind with the Agg backend and prints the median and the
maximum; exits non-zero if a maximum is over the goal.
"""

from __future__ import annotations

import os
import sys
import time

import matplotlib

matplotlib.use("Agg")

import ipywidgets  # noqa: E402
import torch  # noqa: E402
from widget_steps import measure_update_ms  # noqa: E402  (beside this script)

from amp_lessons.bits import bit_explorer, format_designer  # noqa: E402
from amp_lessons.fp8 import fp8_scaling_explorer  # noqa: E402
from amp_lessons.fp16 import magnitude_explorer, sum_explorer  # noqa: E402
from amp_lessons.scaling import scale_explorer, scaler_state_explorer  # noqa: E402
from amp_lessons.tf32 import matmul_precision_explorer  # noqa: E402

N = 20
GOAL_MS = 100.0


def main() -> int:
    print(
        f"{os.cpu_count()} CPUs, torch {torch.__version__} ({torch.get_num_threads()} threads), "
        f"matplotlib {matplotlib.__version__}, ipywidgets {ipywidgets.__version__}; {N} updates per kind"
    )
    ok = True
    for name, make in (
        ("bit_explorer", bit_explorer),
        ("format_designer", format_designer),
        ("matmul_precision_explorer", matmul_precision_explorer),
        ("magnitude_explorer", magnitude_explorer),
        ("sum_explorer", sum_explorer),
        ("scale_explorer", scale_explorer),
        ("scaler_state_explorer", scaler_state_explorer),
        ("fp8_scaling_explorer", fp8_scaling_explorer),
    ):
        t0 = time.perf_counter()
        box = make()
        print(f"{name}() built and drawn in {1e3 * (time.perf_counter() - t0):.0f} ms")
        for kind, r in measure_update_ms(box, n=N).items():
            good = r["max"] < GOAL_MS
            ok &= good
            print(
                f"  {kind:15s} median {r['median']:6.1f} ms   max {r['max']:6.1f} ms   "
                f"(goal < {GOAL_MS:.0f} ms: {'ok' if good else 'MISSED'})"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
