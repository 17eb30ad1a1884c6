"""The GPU reference recorders: each lesson's experiment at GPU size, returning the figures that
``amp_lessons/data/references.json`` stores (:mod:`amp_lessons.reference` runs them); each runs small on a CPU too."""

from __future__ import annotations

import math

import torch

from . import timing
from ._runtime import parse_device
from ._validate import int_at_least
from .e2e._common import matmul_fn
from .e2e._experiments import CONFIGS, matmul_throughput, train
from .fp8._experiments import scaled_mm_compare
from .tf32._experiments import matmul_errors, pick_size, time_matmuls

__all__ = [
    "record_fp8_scaled_mm", "record_matmul_throughput", "record_tf32_matmul", "record_timing_check", "record_training"
]  # fmt: skip


def record_tf32_matmul(device: str = "cuda", size: int | None = None, speed_size: int = 8192) -> dict:
    """Lesson 02's experiment (fp32, real and emulated TF32 errors against fp64 at ``size``) and the TF32/fp32
    speed ratio at ``speed_size``^3."""
    d = parse_device(device)
    size = size or pick_size(d)
    errs = {e.variant: e for e in matmul_errors(size, size, size, device=d)}
    out = {
        "shape": f"{size}x{size} @ {size}x{size}",
        "fp32_rel_error": errs["fp32"].rel_error,
        "tf32_emulated_rel_error": errs["tf32 emulated"].rel_error,
        "tf32_emulated_rounding": "nearest_even",
        "tf32_truncated_rel_error": errs["tf32 emulated (truncation)"].rel_error,
    }
    if "tf32 hardware" in errs:
        out["tf32_rel_error"] = errs["tf32 hardware"].rel_error
        out["emulated_over_real_tf32_error"] = out["tf32_emulated_rel_error"] / out["tf32_rel_error"]
    speed_size = min(speed_size, size) if d.type == "cpu" else speed_size
    times = time_matmuls(speed_size, device=d, repeats=10)
    out["speed_shape"] = f"{speed_size}^3"
    out["fp32_time_s"] = times["fp32"].median_s
    if "tf32" in times:
        out["tf32_time_s"] = times["tf32"].median_s
        out["tf32_speedup"] = times["fp32"].median_s / times["tf32"].median_s
    return out


def record_timing_check(device: str = "cuda", size: int = 8192) -> dict:
    """The timing helper against ``triton.testing.do_bench`` on one bf16 matmul, with the share of the spec peak."""
    d = parse_device(device)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    b = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    flops = timing.matmul_flops(size, size, size)
    t = timing.time_fn(
        lambda: a @ b, device=d.type, repeats=20, flush_l2=d.type == "cuda", flops=flops, dtype_key="bf16"
    )
    out = {"shape": f"{size}^3 bf16", "bf16_time_s": t.median_s, "bf16_tflops": t.tflops}
    if t.percent_of_peak is not None:
        out["percent_of_spec_peak"] = t.percent_of_peak
    if d.type != "cuda":  # do_bench times GPU work only (with a CUDA build it imports, and fails without a GPU)
        out["do_bench"] = "do_bench times GPU work: no comparison on the CPU"
    elif (s := _do_bench_s(lambda: a @ b, out)) is not None:
        out["do_bench_time_s"] = s
        out["time_fn_over_do_bench"] = t.median_s / s
    return out


def _do_bench_s(fn, out: dict) -> float | None:
    """Triton's ``do_bench`` median of ``fn`` in seconds; None, with a note in ``out``, where triton is missing."""
    try:
        from triton.testing import do_bench
    except ImportError:
        out["do_bench"] = "triton not installed: no comparison"
        return None
    return do_bench(fn, return_mode="median") / 1e3


def record_matmul_throughput(device: str = "cuda", size: int = 8192) -> dict:
    """size^3 matmul TFLOP/s in each format the GPU has, with the share of the spec peak, and time_fn against
    triton's do_bench on the bf16 matmul."""
    d = parse_device(device)
    dtypes = ("fp32", "tf32", "bf16", "fp16", "fp8") if d.type == "cuda" else ("fp32", "bf16")
    out = {"shape": f"{size}^3"}
    for r in matmul_throughput([size], dtypes, device=d, repeats=10, budget_s=math.inf):
        k = r["dtype"]
        if r["skipped"]:
            out[f"{k}_skipped"] = r["skipped"]
            continue
        out[f"{k}_time_s"] = r["median_s"]
        out[f"{k}_tflops"] = r["tflops"]
        if r["percent_of_peak"] is not None:
            out[f"{k}_percent_of_spec_peak"] = r["percent_of_peak"]
    if d.type == "cuda" and (s := _do_bench_s(matmul_fn("bf16", size, d)[0], out)) is not None:
        out["bf16_do_bench_time_s"] = s
        if "bf16_time_s" in out:
            out["time_fn_over_do_bench"] = out["bf16_time_s"] / s
    return out


def record_training(
    device: str = "cuda", steps: int | None = None, model_kwargs: dict | None = None, batch: int | None = None
) -> dict:
    """Step time, peak memory of a step and final loss of :func:`train` for each config that runs."""
    d = parse_device(device)
    out = {}
    for cfg in CONFIGS:
        r = train(cfg, steps=steps, device=d, progress=False, model_kwargs=model_kwargs, batch=batch)
        key = cfg.split()[0]
        if not r.ran:
            out[f"{key}_not_run"] = r.reason
            continue
        out[f"{key}_step_time_s"] = r.step_time_s
        out[f"{key}_peak_memory_bytes"] = r.peak_memory_bytes
        out[f"{key}_final_loss"] = r.final_loss
        out["model"] = ", ".join(f"{k}={v}" for k, v in r.model.items())
    return out


def record_fp8_scaled_mm(device: str = "cuda", size: int | None = None) -> dict:
    """size^3 fp8 ``torch._scaled_mm`` (e4m3, per-tensor scales) against a bf16 matmul: times, TFLOP/s, speedup
    and relative errors. size defaults to 8192 on a GPU, 64 on a CPU."""
    d = parse_device(device)
    size = (8192 if d.type == "cuda" else 64) if size is None else int_at_least(size, "size", 16)
    r = scaled_mm_compare(size, size, size, device=d, time_it=True, repeats=10 if d.type == "cuda" else 2)
    recorded = ("fp8_time_s", "bf16_time_s", "fp8_tflops", "bf16_tflops", "fp8_speedup_over_bf16")
    recorded += ("bf16_rel_error", "fp8_rel_error", "fp8_vs_emulation_rel_diff")
    out = {"shape": f"{size}^3"}
    out.update({k: v for k in recorded if isinstance(v := getattr(r, k), float) and math.isfinite(v)})
    if r.skipped:
        out["skipped"] = r.skipped
    return out
