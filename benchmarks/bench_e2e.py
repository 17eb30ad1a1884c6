"""Time lesson 06's end-to-end experiments at their notebook defaults and print their figures
(run: python benchmarks/bench_e2e.py). Figures, not pass/fail tests: timings flake on shared
machines. Goal on a 2-core CPU: fp32 + bf16 training under 8 s together; everything else a few s."""

from __future__ import annotations

import sys
import time

import torch

from tests.faces import internals

e2e = internals("e2e")


def timed(label, fn):
    t0 = time.perf_counter()
    out = fn()
    print(f"\n== {label}: {time.perf_counter() - t0:.2f} s")
    return out


def main() -> int:
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"AVX512-BF16 {torch.cpu._is_avx512_bf16_supported()}, cuda {torch.cuda.is_available()}"
    )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print(timed("tensor_core_table", e2e.tensor_core_table))
    e2e.peak_memory(lambda: None)  # the profiler's one-time start-up (about 1 s), outside the figures
    sizes = [256, 512, 1024, 2048] if device == "cpu" else [1024, 2048, 4096, 8192]
    dtypes = ("fp32", "bf16", "fp16") if device == "cpu" else ("fp32", "tf32", "bf16", "fp16", "fp8")
    for r in timed("matmul_throughput", lambda: e2e.matmul_throughput(sizes, dtypes, device=device)):
        rate = "skipped: " + r["skipped"] if r["skipped"] else f"{r['tflops']:.3f} TFLOP/s"
        print(f"  {r['size']:>5} {r['dtype']:<5} {rate}")
    for r in timed("odd_size_effect", lambda: e2e.odd_size_effect(device=device)):
        print(f"  {r['size']:>5} {r['tflops']:.3f} TFLOP/s ({r['relative_to_first']:.2f} of the first)")
    for k, r in timed("launch_bound_demo", lambda: e2e.launch_bound_demo(device=device)).runs.items():
        print(
            f"  {k}: {r.model}: fp32 {r.fp32_step_s * 1e3:.3f} ms, bf16 autocast "
            f"{r.bf16_autocast_step_s * 1e3:.3f} ms, speed-up {r.speedup:.2f}x"
        )
    total = 0.0
    for cfg in e2e.CONFIGS:
        t0 = time.perf_counter()
        r = e2e.train(cfg, device=device, progress=False)
        dt = time.perf_counter() - t0
        total += dt if r.ran else 0
        if r.ran:
            print(
                f"  train {cfg}: {dt:.2f} s; {r.step_time_s * 1e3:.1f} ms/step, peak "
                f"{r.peak_memory_bytes / 2**20:.1f} MiB, loss {r.loss[0]:.3f} -> {r.final_loss:.3f}"
            )
        else:
            print(f"  train {cfg}: {r.reason}")
    print(f"== train, the runs that ran: {total:.2f} s")
    # the lesson's step clips (unscale_ + clip_grad_norm_); the same fp32 run without, for the cost of the clipping
    r = e2e.train("fp32", device=device, progress=False, make_step=lambda m, o, c, d: e2e.amp_step(m, o, c, d, None))
    print(f"  train fp32 without clipping (max_norm=None): {r.step_time_s * 1e3:.1f} ms/step")
    for r in timed("inference_compare", lambda: e2e.inference_compare(device=device)):
        print(
            f"  {r['variant']:<14} max err {r['max_abs_error']:.3g}, {r['time_s'] * 1e3:.2f} ms, "
            f"params {r['param_bytes'] / 2**20:.2f} MiB"
        )
    o = timed("overflow_demo", e2e.overflow_demo)
    print(
        f"  max activation {o.max_activation:.0f} (fp16 max {o.fp16_max:.0f}); fp16 {o.outputs['fp16']}; "
        f"bf16 finite {o.bf16_finite}, max err {o.bf16_max_abs_error:.3g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
