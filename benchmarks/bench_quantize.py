"""Benchmark the formats engine's quantize() on 2**24 float32 values (run: make bench).

Goals: for formats torch has natively, within 1.5x of torch's own round trip
(x.to(dtype).float()); for TF32 and other formats, at least as fast as ml_dtypes' NumPy cast
to fp8 e4m3 and back. Prints a table; exits non-zero if a goal is missed.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import torch

from amp_lessons.formats import quantize
from amp_lessons.timing import time_fn

N = 2**24
REPEATS = 7


def median_ms(fn) -> float:
    return 1e3 * time_fn(fn, warmup=1, repeats=REPEATS).median_s


def main() -> int:
    torch.manual_seed(0)
    x = torch.randn(N) * 2.0 ** torch.randint(-20, 20, (N,)).float()
    x_np = x.numpy()
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, ml_dtypes {ml_dtypes.__version__}, "
        f"N = 2**24 values, median of {REPEATS}"
    )
    ml_ms = median_ms(lambda: x_np.astype(ml_dtypes.float8_e4m3fn).astype(np.float32))
    print(f"{'ml_dtypes numpy cast to fp8 e4m3fn and back':58s} {ml_ms:8.1f} ms")
    ok = True
    for name, dtype in [
        ("fp16", torch.float16),
        ("bf16", torch.bfloat16),
        ("fp8_e4m3", torch.float8_e4m3fn),
        ("fp8_e5m2", torch.float8_e5m2),
    ]:
        ref = median_ms(lambda dtype=dtype: x.to(dtype).float())
        ours = median_ms(lambda name=name: quantize(x, name))
        emu = median_ms(lambda name=name: quantize(x, name, emulate=True))
        good = ours <= 1.5 * ref
        ok &= good
        print(f"{'torch round trip x.to(' + str(dtype) + ').float()':58s} {ref:8.1f} ms")
        print(
            f"{'quantize(x, ' + repr(name) + ')':58s} {ours:8.1f} ms  ({ours / ref:.2f}x torch, goal <= 1.5x: {'ok' if good else 'MISSED'})"
        )
        print(f"{'quantize(x, ' + repr(name) + ', emulate=True)':58s} {emu:8.1f} ms  ({emu / ref:.2f}x torch)")
    for name, rounding in [
        ("tf32", "nearest_away"),
        ("tf32", "toward_zero"),
        ("tf32", "nearest_even"),
        ("fp6_e3m2", "nearest_even"),
        ("fp4_e2m1", "nearest_even"),
    ]:
        t = median_ms(lambda name=name, rounding=rounding: quantize(x, name, rounding))
        good = t <= ml_ms
        ok &= good
        print(
            f"{'quantize(x, ' + repr(name) + ', ' + repr(rounding) + ')':58s} {t:8.1f} ms  ({ml_ms / t:.1f}x faster than ml_dtypes, goal >= 1x: {'ok' if good else 'MISSED'})"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
