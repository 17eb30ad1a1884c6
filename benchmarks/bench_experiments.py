"""Time the lesson experiments that notebooks and sliders call (run: make bench).

Goals: what a slider calls answers in under 100 ms; each training demo runs in a few seconds on a
2-core CPU (the notebooks' budget is 30 s each). Figures, not pass/fail tests: timing
assertions flake on shared machines.
"""

from __future__ import annotations

import sys

import torch

from amp_lessons import fp16
from amp_lessons.timing import time_fn
from tests.faces import internals

scaling = internals("scaling")


def median_ms(fn, repeats: int = 5) -> float:
    return 1e3 * time_fn(fn, warmup=1, repeats=repeats).median_s


def main() -> int:
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of 5 after one warm-up")
    census = fp16.gradient_census()
    rows = [
        ("fp16.sum_copies(1e-4, 1_000_000)", lambda: fp16.sum_copies(1e-4, 1_000_000)),
        ("fp16.running_sum, 8192 terms, fp16 accumulator", lambda: fp16.running_sum(torch.full((8192,), 1.0), "fp16")),
        ("fp16.gradient_census()", fp16.gradient_census),
        ("scaling.scaled_fractions(census, 2**10) (indexed)", lambda: scaling.scaled_fractions(census, 2.0**10)),
        ("scaling.scale_sweep(census)", lambda: scaling.scale_sweep(census)),
        (
            "scaling.simulate_scaler(10000, every 7th inf, interval 1)",
            lambda: scaling.simulate_scaler(10000, range(0, 10000, 7), growth_interval=1),
        ),
        ("fp16.train_master_weights(300 steps)", lambda: fp16.train_master_weights(progress=False)),
        ("scaling.train_comparison(60 steps)", lambda: scaling.train_comparison(progress=False)),
    ]
    for name, fn in rows:
        print(f"{name:60s} {median_ms(fn):9.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
