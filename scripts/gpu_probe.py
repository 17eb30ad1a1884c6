"""Three GPU measurements the lessons cite, in one run of about 2.5 minutes on a CUDA GPU with fp8 (sm_89+) and triton:

1. fp8 cost (lesson 07): ``torch._scaled_mm`` (e4m3 x e4m3 -> bf16, per-tensor amax scales to 448) against a bf16
   matmul at 8192^3 and 256x512x256, in five variants: ``bf16``; ``fp8`` (inputs quantized beforehand, scales on
   the GPU); ``fp8unsc`` (unscaled e4m3); ``fp8+hostsc`` (scale tensors built from Python floats inside the timed
   call); ``fp8+casts`` (the eager amax + scale + clamp + cast of both bf16 inputs inside the timed call, as an
   eager ``to_fp8`` does). Four timers: CUDA events (median of 30, no flush), the same after a 256 MiB memset
   before each call, ``triton.testing.do_bench`` (mean), and wall clock with ``synchronize()`` on both sides
   (median of 50).
2. ``F.cross_entropy`` under real CUDA autocast (lessons 04 and 08): the dtype of ``_log_softmax`` and ``nll_loss``
   under bf16 and fp16 autocast, read by a ``TorchDispatchMode``.
3. Inductor's ``emulate_precision_casts`` (lesson 11): a bf16 ``silu(g) * h`` then ``rms_norm`` chain, compiled
   with the default settings, once inside ``torch._inductor.config.patch(emulate_precision_casts=True)`` and then
   called outside it, and with ``options={"emulate_precision_casts": True}``; the share of elements that differ
   from eager, and the number of graphs Dynamo compiled.

The records ``fp8_cast_costs`` and ``inductor_emulate_precision_casts`` in ``amp_lessons/data/references.json`` were
measured with this procedure on an NVIDIA H200 on 2026-11-27 (torch 2.11.0+cu130). Its cross_entropy reading of that
day gave ``nll_loss_forward`` the autocast dtype, which the course's own trace on the same GPU did not reproduce
(autocast casts nll_loss's input to float32 first): the record ``cuda_cross_entropy_autocast`` comes from that trace
(``make gpu-check``, check (h)). An op that returns several tensors (``nll_loss_forward``) is logged with the dtype
of its first. Run: ``python scripts/gpu_probe.py`` (prints the tables; ``--json FILE`` also writes them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import types

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

E4M3, BF16 = torch.float8_e4m3fn, torch.bfloat16
SHAPES = ((8192, 8192, 8192), (256, 512, 256))


def to_fp8(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``t`` scaled by its amax to e4m3's 448 and cast, with the inverse scale ``_scaled_mm`` takes."""
    scale = 448 / t.abs().amax().float().clamp(min=1e-12)
    return (t.float() * scale).clamp(-448, 448).to(E4M3), scale.reciprocal()


def event_ms(fn, scratch: torch.Tensor | None = None, n: int = 30) -> float:
    """Median CUDA-event time of ``fn`` in ms; with ``scratch``, a memset of it before each call (a cold L2)."""
    for _ in range(5):
        fn()
    times = []
    for _ in range(n):
        if scratch is not None:
            scratch.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def wall_ms(fn, n: int = 50) -> float:
    """Median wall time of ``fn`` in ms, with ``synchronize()`` before and after each call."""
    for _ in range(5):
        fn()
    times = []
    for _ in range(n):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def fp8_variants(m: int, k: int, n: int, device: str = "cuda") -> dict:
    """The five timed calls at m x k x n (name -> a function of no arguments)."""
    a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
    a16, w = a.to(BF16), b.t().contiguous()  # w: an n x k row-major weight, passed transposed
    w16 = w.to(BF16)
    a8, inv_a = to_fp8(a)
    w8, inv_w = to_fp8(w)
    u8, v8 = a.to(E4M3), w.to(E4M3)  # unscaled casts
    one = torch.ones((), device=device)
    host_a, host_w = float(inv_a), float(inv_w)
    mm = torch._scaled_mm

    def host_scales():
        scale_a, scale_b = torch.tensor(host_a, device=device), torch.tensor(host_w, device=device)
        return mm(a8, w8.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=BF16)

    return {
        "bf16": lambda: a16 @ w16.t(),
        "fp8": lambda: mm(a8, w8.t(), scale_a=inv_a, scale_b=inv_w, out_dtype=BF16),
        "fp8unsc": lambda: mm(u8, v8.t(), scale_a=one, scale_b=one, out_dtype=BF16),
        "fp8+hostsc": host_scales,
        "fp8+casts": lambda: mm(to_fp8(a16)[0], to_fp8(w16)[0].t(), scale_a=inv_a, scale_b=inv_w, out_dtype=BF16),
    }


def fp8_costs(device: str = "cuda") -> dict:
    from triton.testing import do_bench

    scratch = torch.empty(256 << 20, dtype=torch.int8, device=device)
    out = {}
    for m, k, n in SHAPES:
        for name, fn in fp8_variants(m, k, n, device).items():
            us = [1e3 * x for x in (event_ms(fn), event_ms(fn, scratch), do_bench(fn), wall_ms(fn))]
            row = dict(zip(("events_us", "events_after_memset_us", "do_bench_us", "wall_us"), us))
            row["tflops_events"] = 2 * m * n * k / (us[0] * 1e-6) / 1e12
            out[f"{m}x{k}x{n} {name}"] = row
    return out


class OpDtypes(TorchDispatchMode):
    """Every ATen op that runs, with the dtype of its result (of its first result, for an op that returns several)."""

    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        first = result[0] if isinstance(result, (tuple, list)) and result else result
        self.ops.append((func.overloadpacket.__name__, str(getattr(first, "dtype", ""))))
        return result


def cross_entropy_dtypes(device: str = "cuda") -> dict:
    lin = torch.nn.Linear(16, 8).to(device)
    x, y = torch.randn(4, 16, device=device), torch.arange(4, device=device)
    out = {}
    for dtype in (BF16, torch.float16):
        with torch.autocast(device, dtype=dtype), OpDtypes() as log:
            F.cross_entropy(lin(x), y)
        out[str(dtype)] = [op for op in log.ops if "softmax" in op[0] or "nll" in op[0]]
    return out


def _chain(h, g):
    y = F.silu(g) * h
    return F.rms_norm(y, (y.shape[-1],))


def inductor_settings(device: str = "cuda") -> dict:
    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters

    def fresh():  # a new function object each time: no compiled code is shared between the variants
        return types.FunctionType(_chain.__code__.replace(), globals())

    h, g = (torch.randn(64, 256, device=device, dtype=BF16) for _ in range(2))
    eager = _chain(h, g)

    def differ(r):
        return float((r != eager).float().mean())

    out = {}
    with torch.no_grad():
        out["default_differ"] = differ(torch.compile(fresh())(h, g))
        compiled, graphs = torch.compile(fresh()), counters["stats"]["unique_graphs"]
        with inductor_config.patch(emulate_precision_casts=True):
            first = compiled(h, g)
        later = [compiled(h, g), compiled(h, g)]
        out["patch_first_call_differ"] = differ(first)
        out["patch_later_calls_differ"] = [differ(r) for r in later]
        out["patch_graphs"] = counters["stats"]["unique_graphs"] - graphs
        out["options_differ"] = differ(torch.compile(fresh(), options={"emulate_precision_casts": True})(h, g))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        parser.error("needs a CUDA GPU with fp8 (sm_89+)")
    results = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "fp8_costs": fp8_costs(),
        "cross_entropy": cross_entropy_dtypes(),
        "inductor": inductor_settings(),
    }
    print(results["device"], "torch", results["torch"])
    for name, row in results["fp8_costs"].items():
        print(f"{name:28}" + " ".join(f"{row[k]:9.1f}us" for k in list(row)[:4]) + f" {row['tflops_events']:6.0f}")
    print("cross_entropy:", results["cross_entropy"])
    print("inductor:", results["inductor"])
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
