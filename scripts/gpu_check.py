"""``make gpu-check``: everything the course can only check on an NVIDIA GPU, in one command of at most 9 minutes.

Run it on a machine with one CUDA GPU (compute capability 8.0 or newer for TF32 and bf16, 8.9 or newer
for fp8)::

    make gpu-check                          # setup, then: python scripts/gpu_check.py
    python scripts/gpu_check.py --plan      # the time budget of each step, nothing run
    python scripts/gpu_check.py --only tf32_rounding scaled_mm --skip-pytest --skip-references

Steps, in order, each under a hard time limit (:data:`PLAN`; the limits add up to :data:`BUDGET_S`, which
leaves ``make setup`` the rest of the 9 minutes):

1. ``pytest -n <cores> --dist loadfile tests notebooks --ignore=tests/browser``: the unit tests and nbval, on the GPU;
2. ``python -m amp_lessons.reference record --file <results>/references.json``: the course's reference measurements;
3. the hardware-vs-emulation checks (:data:`CHECKS`), in a child process, one JSON file each:

   (a) ``tf32_rounding``: how the GPU rounds fp32 inputs to TF32, per op (mm, linear, addmm, bmm at
       n = 8, 64, 4096 and cuDNN conv2d): ``A @ I`` and ``I @ A`` with I the identity, so that every
       product is exact and only the rounding of the inputs shows; the inputs hold many exact ties (low 13
       mantissa bits 0x1000). Mismatches are counted against the three models nearest_even,
       nearest_away and toward_zero of :func:`amp_lessons.formats.quantize`, and against the unrounded
       fp32 input (a kernel that does not use TF32 at all);
   (b) ``lowp_matmul``: fp16 and bf16 matmuls against an fp32-accumulating emulation of the same (exact)
       inputs, in ulps of the result;
   (c) ``scaled_mm``: ``torch._scaled_mm`` (e4m3 x e4m3 -> bf16, tensorwise scales) against an fp32
       emulation of the scaled fp8 product, and ``use_fast_accum`` True/False at large K against the exact
       product of the fp8 inputs (sm_89 or newer; "skipped: needs sm_89+" otherwise);
   (d) ``autocast_policy``: every op of ``amp_lessons.autocast.policy_table("cuda")`` under real CUDA
       autocast against the fake-CUDA preview (``autocast.trace(..., device_type="cuda", fake=True)``);
   (e) ``timing_helper``: ``amp_lessons.timing.time_fn`` against ``triton.testing.do_bench`` on an 8192^3
       bf16 matmul (do_bench skipped, with a note, where triton is not installed);
   (f) ``amp_step``: the course's AMP step (``amp_lessons.e2e.amp_step``, bf16 autocast) against a minimal
       bf16 autocast loop on the same model and data, ms per step.

Everything lands in one folder, ``gpu-check-results/<date>-<gpu>/`` (git-ignored): ``pytest.json`` and
``pytest.log``, ``references.json`` (the recorded references, :mod:`amp_lessons.reference`'s format) with
``record_references.json`` and its log, ``check_<name>.json`` for each check, and ``summary.txt``, the
table printed at the end. The exit status is 0 only if pytest passed and every step and check ran
(a finding such as a rounding model that does not match is data, not a failure).

Offline GPU machines: ``make gpu-wheels`` (``scripts/gpu_wheels.py``) downloads the pinned wheels of
``requirements.txt``, triton and the build backend into ``gpu-wheelhouse/`` on a machine with network; copy
that folder next to the checkout, and ``make gpu-check`` installs from it with ``pip --no-index
--find-links gpu-wheelhouse`` (``--wheelhouse`` here installs triton from it if it is missing).

Without a GPU the script stops at once with exit status 2 and says what each step needs. Its CPU parts
(the TF32 mismatch counter and tie inputs, the emulations, the results writer and summary, the budget plan)
are tested in ``tests/test_gpu_check.py``. Importing this module makes no CUDA call.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import logging
import math
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from amp_lessons import formats, timing
from amp_lessons._runtime import exact_fp32, fp32_precision
from amp_lessons._table import text_table

ROOT = Path(__file__).resolve().parent.parent
RESULTS_ROOT = ROOT / "gpu-check-results"
WHEELHOUSE = ROOT / "gpu-wheelhouse"
NO_GPU_EXIT = 2

TF32_MODELS = ("nearest_even", "nearest_away", "toward_zero")
"""The rounding models of fp32 -> TF32 compared with the hardware (modes of :func:`amp_lessons.formats.quantize`)."""
UNROUNDED = "fp32_unrounded"
"""The extra comparison: the fp32 input itself (what a kernel that does not use TF32 returns)."""
TF32_OPS = ("mm", "linear", "addmm", "bmm", "conv2d")
TF32_SIZES = (8, 64, 4096)
TIE_LOW_BITS = 0x1000  # the low 13 of fp32's 23 mantissa bits that TF32 drops: exactly half an ulp of TF32
_LOW_MASK = 0x1FFF
MAX_DIM = 65_536


# --------------------------------------------------------------------------------------------
# Argument checks (bad input: a clear error naming the value)
# --------------------------------------------------------------------------------------------


def _int(value, name: str, low: int = 1, high: int = MAX_DIM) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name} must be from {low} to {high}, got {value!r}")
    return value


def _number(value, name: str, low: float = 0.0, high: float = math.inf, *, low_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {value!r}")
    if not math.isfinite(value) or value < low or value > high or (low_open and value == low):
        bound = f"above {low:g}" if low_open else f"at least {low:g}"
        raise ValueError(f"{name} must be a finite number {bound} and at most {high:g}, got {value!r}")
    return float(value)


def _tensor(value, name: str, dtypes: Sequence[torch.dtype]) -> torch.Tensor:
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if value.dtype not in dtypes:
        raise TypeError(f"{name} must have dtype {' or '.join(map(str, dtypes))}, got {value.dtype}")
    return value


def _device(device) -> torch.device:
    try:
        d = torch.device(device) if isinstance(device, (str, torch.device)) else None
    except (RuntimeError, TypeError):
        d = None
    if d is None or d.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or such a torch.device, got {device!r}")
    return d


def _models(models) -> tuple[str, ...]:
    if isinstance(models, str) or not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of rounding modes, got {models!r}")
    for m in models:
        if m not in TF32_MODELS:
            raise ValueError(f"unknown rounding model {m!r}: use {', '.join(map(repr, TF32_MODELS))}")
    return tuple(models)


# --------------------------------------------------------------------------------------------
# The time budget
# --------------------------------------------------------------------------------------------

TOTAL_S = 540.0
"""The promise: ``make gpu-check`` takes at most 9 minutes on one NVIDIA GPU."""


@dataclass(frozen=True)
class Step:
    """One step of ``gpu-check``: its H100 estimate and the hard limit it runs under."""

    name: str
    what: str
    estimate_s: float
    limit_s: float


PLAN: tuple[Step, ...] = (
    Step(
        "pytest",
        "unit tests and nbval on the GPU (the course's nbval alone took a few minutes on an H100 with 4 workers; "
        "one worker per core here)",
        180.0,
        250.0,
    ),
    Step(
        "references",
        "python -m amp_lessons.reference record (5 experiments: 8192^3 matmuls, 4 training runs of 100 steps)",
        60.0,
        90.0,
    ),
    Step("checks", "checks (a)-(f) in one child process (its start, then each check's own estimate)", 95.0, 140.0),
)
CHECKS_START_S = 10.0
"""The checks process's start on a GPU machine (Python, torch, CUDA context), an estimate."""
DEADLINE_MARGIN_S = 5.0
"""The checks process stops starting checks this long before the step's limit."""
SKIP_FACTOR = 1.5
"""A check starts only if this many times its estimate is left before the deadline."""
SETUP_S = 60.0
"""What the plan leaves ``make setup``: nothing to do when .venv is current (a few seconds), an offline
install from the wheelhouse otherwise (estimate: about a minute for torch and its CUDA libraries)."""
BUDGET_S = sum(s.limit_s for s in PLAN)
"""The script's own budget: the sum of the steps' hard limits (480 s = TOTAL_S - SETUP_S)."""


def budget_plan(budget_s: float = BUDGET_S, steps: Sequence[Step] = PLAN) -> list[dict]:
    """Each step's hard limit within ``budget_s`` seconds: ``[{"step", "what", "estimate_s", "limit_s",
    "starts_by_s"}]``; when ``budget_s`` is under the limits' sum, each step keeps its estimate and the same
    share of its margin, so that the limits add up to ``budget_s``. A budget that cannot hold the estimates
    raises ValueError naming it."""
    budget_s = _number(budget_s, "budget_s", 0.0, 3600.0, low_open=True)
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence) or not steps:
        raise TypeError(f"steps must be a non-empty sequence of Step, got {steps!r}")
    for s in steps:
        if not isinstance(s, Step):
            raise TypeError(f"steps must hold Step objects, got {s!r}")
    estimate = sum(s.estimate_s for s in steps)
    if budget_s < estimate:
        raise ValueError(
            f"budget_s={budget_s!r} is below the steps' estimated {estimate:g} s on an H100: the steps cannot fit"
        )
    limits = sum(s.limit_s for s in steps)
    # between the estimates and the limits, every step gets the same share of its margin
    share = min(1.0, (budget_s - estimate) / (limits - estimate)) if limits > estimate else 1.0
    out, start = [], 0.0
    for s in steps:
        limit = s.estimate_s + (s.limit_s - s.estimate_s) * share
        out.append({"step": s.name, "what": s.what, "estimate_s": s.estimate_s, "limit_s": limit, "starts_by_s": start})
        start += limit
    return out


def plan_text(budget_s: float = BUDGET_S) -> str:
    rows = [
        (p["step"], f"{p['estimate_s']:.0f} s", f"{p['limit_s']:.0f} s", f"{p['starts_by_s']:.0f} s", p["what"])
        for p in budget_plan(budget_s)
    ]
    rows += [(f"  check {c.letter} {c.name}", f"{c.estimate_s:.0f} s", "", "", c.what) for c in CHECKS]
    notes = [
        f"limits add up to {sum(p['limit_s'] for p in budget_plan(budget_s)):.0f} s; make setup gets the rest of "
        f"{TOTAL_S:.0f} s ({SETUP_S:.0f} s: seconds when .venv is current, an offline install from the wheelhouse otherwise)",
        "estimates: H100 figures; a step that reaches its limit is stopped and reported as a timeout",
    ]
    return text_table(
        ("step", "estimate", "limit", "starts by", "what"), rows, title="gpu-check time budget", notes=notes
    )


# --------------------------------------------------------------------------------------------
# (a) TF32 input rounding
# --------------------------------------------------------------------------------------------


def tie_inputs(shape, *, seed: int = 0, tie_share: float = 0.5, device="cpu") -> torch.Tensor:
    """fp32 values whose rounding to TF32 tells the rounding modes apart: random signs, magnitudes in
    [2**-8, 2**8) (products with 0 and 1 stay exact, no subnormals), random top 10 mantissa bits (so the
    bit TF32 keeps last is even or odd alike) and, for a ``tie_share`` of them, low 13 bits exactly
    0x1000 (an exact tie between two TF32 values); the others get random low bits that are not 0x1000."""
    if isinstance(shape, int) and not isinstance(shape, bool):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise TypeError(f"shape must be an int or a non-empty tuple of ints, got {shape!r}")
    shape = tuple(_int(s, "shape entry", 1) for s in shape)
    n = math.prod(shape)
    if n > 2**28:
        raise ValueError(f"shape {shape!r} holds {n} values, more than 2**28")
    seed = _int(seed, "seed", 0, 2**63 - 1)
    tie_share = _number(tie_share, "tie_share", 0.0, 1.0)
    d = _device(device)
    g = torch.Generator(device=d).manual_seed(seed)  # drawn where they are used: 4096^2 values in no time on a GPU

    def draw(low, high):
        return torch.randint(low, high, (n,), generator=g, dtype=torch.int64, device=d)

    sign, exponent = draw(0, 2) << 31, draw(127 - 8, 127 + 8) << 23
    top, low = draw(0, 1 << 10) << 13, draw(0, 1 << 13)
    low = torch.where(low == TIE_LOW_BITS, TIE_LOW_BITS - 1, low)
    tie = torch.rand(n, generator=g, device=d) < tie_share
    low = torch.where(tie, TIE_LOW_BITS, low)
    bits = sign | exponent | top | low
    bits = torch.where(bits >= 2**31, bits - 2**32, bits).to(torch.int32)
    return bits.view(torch.float32).reshape(shape)


def tie_mask(x: torch.Tensor) -> torch.Tensor:
    """True where fp32 ``x`` lies exactly halfway between two TF32 values (low 13 mantissa bits 0x1000)."""
    x = _tensor(x, "x", (torch.float32,))
    return (x.contiguous().view(torch.int32) & _LOW_MASK) == TIE_LOW_BITS


def tf32_model(x: torch.Tensor, model: str) -> torch.Tensor:
    """``x`` rounded to TF32 by ``model`` (one of :data:`TF32_MODELS`), bit-exactly, as float32."""
    _models((model,))
    return formats.quantize(_tensor(x, "x", (torch.float32,)), "tf32", model)


def _bits(t: torch.Tensor) -> torch.Tensor:
    b = t.contiguous().view(torch.int32)
    return torch.where(t == 0, torch.zeros_like(b), b)  # +0 and -0 alike


def count_mismatches(out: torch.Tensor, x: torch.Tensor, models: Sequence[str] = TF32_MODELS) -> dict:
    """How many elements of ``out`` (what a kernel returned for the exact product ``x @ I``) differ from
    ``x`` rounded to TF32 by each model, bit for bit (signed zeros alike): ``{"elements", "ties",
    "mismatches": {model: n, UNROUNDED: n}, "tie_mismatches": {...}, "matches": [models with 0]}``.
    ``UNROUNDED`` counts the differences from ``x`` itself (0 for a kernel that does not round to TF32)."""
    out = _tensor(out, "out", (torch.float32,))
    x = _tensor(x, "x", (torch.float32,))
    models = _models(models)
    if out.shape != x.shape:
        raise ValueError(f"out has shape {tuple(out.shape)} but x has shape {tuple(x.shape)}: they must match")
    if out.device != x.device:
        raise ValueError(f"out is on {out.device} but x is on {x.device}")
    ties = tie_mask(x)
    got = _bits(out)
    mism, tie_mism = {}, {}
    for name in (*models, UNROUNDED):
        want = x if name == UNROUNDED else tf32_model(x, name)
        diff = got != _bits(want)
        mism[name] = int(diff.sum())
        tie_mism[name] = int((diff & ties).sum())
    return {
        "elements": x.numel(),
        "ties": int(ties.sum()),
        "mismatches": mism,
        "tie_mismatches": tie_mism,
        "matches": [m for m in (*models, UNROUNDED) if mism[m] == 0],
    }


def _conv_case(a: torch.Tensor, side: str) -> tuple[torch.Tensor, torch.Tensor]:
    """A 1x1 conv2d whose result is exactly one operand: ``side="first"`` rounds the input (identity
    weight), ``"second"`` the weight (a batch of one-hot inputs); returns (out, what it must equal)."""
    n = a.shape[0]
    eye = torch.eye(n, device=a.device)
    if side == "first":  # input (1, n, n, 1): channels x rows; weight I
        x = a.reshape(1, n, n, 1)
        return torch.nn.functional.conv2d(x, eye.reshape(n, n, 1, 1)), x
    out = torch.nn.functional.conv2d(eye.reshape(n, n, 1, 1), a.reshape(n, n, 1, 1))  # out[b, o] = a[o, b]
    return out, a.t().reshape(n, n, 1, 1).contiguous()


def tf32_case(op: str, n: int, side: str, *, seed: int = 0, device="cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``op`` (one of :data:`TF32_OPS`) on an n x n tie-input matrix A and the identity, with A as the
    ``side="first"`` or ``"second"`` operand; returns (what the op returned, the fp32 values it must equal up
    to the rounding of A): A @ I, I @ A, linear(A, I) and linear(I, A) (= A.T), addmm(0, ...), bmm on a batch
    of 2, conv2d 1x1 (input or weight rounded). Runs under whatever fp32 precision is set."""
    if op not in TF32_OPS:
        raise ValueError(f"unknown op {op!r}: use one of {', '.join(map(repr, TF32_OPS))}")
    n = _int(n, "n", 1, 8192)
    if side not in ("first", "second"):
        raise ValueError(f"side must be 'first' or 'second', got {side!r}")
    d = _device(device)
    f = torch.nn.functional
    if op == "bmm":
        a = tie_inputs((2, n, n), seed=seed, device=d)
        eye = torch.eye(n, device=d).expand(2, n, n).contiguous()
        return (torch.bmm(a, eye), a) if side == "first" else (torch.bmm(eye, a), a)
    a = tie_inputs((n, n), seed=seed, device=d)
    eye = torch.eye(n, device=d)
    if op == "mm":
        return (a @ eye, a) if side == "first" else (eye @ a, a)
    if op == "linear":
        return (f.linear(a, eye), a) if side == "first" else (f.linear(eye, a), a.t().contiguous())
    if op == "addmm":
        zero = torch.zeros(n, n, device=d)
        return (torch.addmm(zero, a, eye), a) if side == "first" else (torch.addmm(zero, eye, a), a)
    return _conv_case(a, side)


def check_tf32_rounding(device="cuda", sizes: Sequence[int] = TF32_SIZES, ops: Sequence[str] = TF32_OPS) -> dict:
    """Check (a): for each op, size and operand, the mismatch counts of :func:`count_mismatches`, with
    ``torch.backends.cuda.matmul.fp32_precision`` and ``torch.backends.cudnn.conv.fp32_precision`` set to
    "tf32" (restored afterwards). On a CPU the switches change nothing: every result is the unrounded input."""
    d = _device(device)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise TypeError(f"sizes must be a non-empty sequence of ints, got {sizes!r}")
    sizes = [_int(n, "size", 1, 8192) for n in sizes]
    if isinstance(ops, str) or not isinstance(ops, Sequence) or not ops or any(o not in TF32_OPS for o in ops):
        raise ValueError(f"ops must be a non-empty sequence of {', '.join(map(repr, TF32_OPS))}, got {ops!r}")
    cases = []
    with fp32_precision(matmul="tf32", conv="tf32"):
        settings = {
            "torch.backends.cuda.matmul.fp32_precision": torch.backends.cuda.matmul.fp32_precision,
            "torch.backends.cudnn.conv.fp32_precision": torch.backends.cudnn.conv.fp32_precision,
        }
        for op in ops:
            for n in sizes:
                for i, side in enumerate(("first", "second")):
                    out, x = tf32_case(op, n, side, seed=1000 * n + i, device=d)
                    counts = count_mismatches(out, x)
                    cases.append({"op": op, "n": n, "operand": side, **counts})
                    del out, x
    by_op = {op: tf32_verdict([c for c in cases if c["op"] == op]) for op in ops}
    summary = "; ".join(f"{op}: {v}" for op, v in by_op.items())
    return {"status": "ok", "summary": summary, "settings": settings, "model_by_op": by_op, "cases": cases}


def tf32_verdict(cases: Sequence[Mapping]) -> str:
    """The rounding model that matches every case of one op where a TF32 kernel ran (the output differs from
    the unrounded input somewhere), with the cases where none ran (a small size may take a plain fp32 kernel)."""
    if isinstance(cases, (str, bytes)) or not isinstance(cases, Sequence) or not cases:
        raise TypeError(f"cases must be a non-empty list of count_mismatches results, got {cases!r}")
    ran = [c for c in cases if c["mismatches"][UNROUNDED] > 0]
    plain = [f"n={c['n']} {c['operand']}" if "n" in c else "?" for c in cases if c["mismatches"][UNROUNDED] == 0]
    if not ran:
        return "no TF32 rounding anywhere (fp32 kernels)"
    models = [m for m in TF32_MODELS if all(c["mismatches"].get(m) == 0 for c in ran)]
    if models:
        text = " = ".join(models)
    else:
        total = {m: sum(c["mismatches"].get(m, 0) for c in ran) for m in TF32_MODELS}
        best = min(total, key=total.get)
        text = f"no model matches ({best} closest: {total[best]} mismatches)"
    return text + (f" (no TF32 rounding at {', '.join(plain)})" if plain else "")


# --------------------------------------------------------------------------------------------
# (b) fp16 / bf16 matmul against an fp32-accumulating emulation
# --------------------------------------------------------------------------------------------

_LOWP = {"fp16": torch.float16, "bf16": torch.bfloat16}


def ulp(x: torch.Tensor, fmt: str) -> torch.Tensor:
    """The gap between consecutive values of format ``fmt`` (a name of :data:`amp_lessons.formats.FORMATS`)
    at the magnitude of each element of ``x``: ``2**(e - mantissa_bits)`` with ``e = floor(log2|x|)``,
    not below the format's smallest exponent (so the subnormal spacing at 0 and below the normals), as float64."""
    x = _tensor(x, "x", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    f = formats.get_format(fmt)
    _, e = torch.frexp(x.double().abs())  # |x| = m * 2**e, m in [0.5, 1)
    e = torch.where(x == 0, torch.full_like(e, f.emin), (e - 1).clamp(min=f.emin))
    return torch.ldexp(torch.ones_like(x, dtype=torch.float64), (e - f.mantissa_bits))


def ulp_distance(got: torch.Tensor, ref: torch.Tensor, fmt: str) -> torch.Tensor:
    """``|got - ref|`` in ulps of ``fmt`` at ``ref`` (:func:`ulp`), as float64."""
    got = _tensor(got, "got", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    ref = _tensor(ref, "ref", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    if got.shape != ref.shape:
        raise ValueError(f"got has shape {tuple(got.shape)} but ref has shape {tuple(ref.shape)}")
    return (got.double() - ref.double()).abs() / ulp(ref, fmt)


def emulate_lowp_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of two fp16 (or two bf16) matrices as a tensor core with fp32 accumulation computes it in
    the model: every product is exact in fp32 (11 + 11 or 8 + 8 significant bits), the products are summed
    in IEEE fp32 (no TF32), and the sum is rounded once to the inputs' dtype (nearest even)."""
    a = _tensor(a, "a", (torch.float16, torch.bfloat16))
    b = _tensor(b, "b", (torch.float16, torch.bfloat16))
    if a.dtype != b.dtype:
        raise TypeError(f"a and b must have the same dtype, got {a.dtype} and {b.dtype}")
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a and b must be matrices with a.shape[1] == b.shape[0], got {tuple(a.shape)} and {tuple(b.shape)}"
        )
    with exact_fp32(a.device):
        return (a.float() @ b.float()).to(a.dtype)


def lowp_inputs(m: int, k: int, n: int, dtype: str, *, seed: int = 0, device="cpu"):
    """Seeded normal ``a`` (m x k) and ``b`` (k x n) rounded to ``dtype`` ("fp16" or "bf16"): exact inputs."""
    if dtype not in _LOWP:
        raise ValueError(f"dtype must be 'fp16' or 'bf16', got {dtype!r}")
    m, k, n = _int(m, "m"), _int(k, "k"), _int(n, "n")
    seed = _int(seed, "seed", 0, 2**63 - 1)
    g = torch.Generator().manual_seed(seed)
    d = _device(device)
    return torch.randn(m, k, generator=g).to(d, _LOWP[dtype]), torch.randn(k, n, generator=g).to(d, _LOWP[dtype])


def _ulp_stats(dist: torch.Tensor) -> dict:
    return {
        "max_ulps": float(dist.max()),
        "mean_ulps": float(dist.mean()),
        "share_equal": float((dist == 0).double().mean()),
        "share_within_1_ulp": float((dist <= 1).double().mean()),
    }


def _check_ks(ks) -> None:
    if isinstance(ks, (str, bytes)) or not isinstance(ks, Sequence) or not ks:
        raise TypeError(f"ks must be a non-empty sequence of ints, got {ks!r}")


def check_lowp_matmul(device="cuda", ks: Sequence[int] = (256, 4096, 16384), mn: int = 512) -> dict:
    """Check (b): for fp16 and bf16 and each K, the GPU's ``a @ b`` (output in the inputs' dtype) against
    :func:`emulate_lowp_matmul` and against the exact product (fp64) rounded to the dtype, in ulps."""
    d = _device(device)
    mn = _int(mn, "mn")
    _check_ks(ks)
    cases = []
    for dtype in _LOWP:
        for k in ks:
            a, b = lowp_inputs(mn, _int(k, "k"), mn, dtype, seed=k, device=d)
            got = a @ b
            emu = emulate_lowp_matmul(a, b)
            exact = (a.double() @ b.double()).float().to(a.dtype)
            cases.append(
                {
                    "dtype": dtype,
                    "shape": f"{mn}x{k} @ {k}x{mn}",
                    "vs_emulation": _ulp_stats(ulp_distance(got, emu, dtype)),
                    "vs_exact_rounded": _ulp_stats(ulp_distance(got, exact, dtype)),
                    "emulation_vs_exact_rounded": _ulp_stats(ulp_distance(emu, exact, dtype)),
                }
            )
    worst = {dt: max(c["vs_emulation"]["max_ulps"] for c in cases if c["dtype"] == dt) for dt in _LOWP}
    summary = ", ".join(f"{dt}: max {w:g} ulp vs fp32-sum emulation" for dt, w in worst.items())
    flags = {
        "allow_fp16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "allow_bf16_reduced_precision_reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
    }
    return {"status": "ok", "summary": summary, "settings": flags, "cases": cases}


# --------------------------------------------------------------------------------------------
# (c) torch._scaled_mm (fp8 e4m3) against an fp32 emulation
# --------------------------------------------------------------------------------------------

E4M3_MAX = 448.0


def capability_gate(capability, need=(8, 9), what: str = "fp8 tensor cores") -> str | None:
    """None where a GPU of compute ``capability`` (major, minor) has ``need``; else "skipped: needs sm_89+"."""
    for name, v in (("capability", capability), ("need", need)):
        if (
            not isinstance(v, tuple)
            or len(v) != 2
            or not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in v)
        ):
            raise TypeError(f"{name} must be a (major, minor) tuple of ints, got {v!r}")
    if capability >= need:
        return None
    return f"skipped: needs sm_{need[0]}{need[1]}+ ({what}); this GPU is sm_{capability[0]}{capability[1]}"


def fp8_inputs(m: int, k: int, n: int, *, seed: int = 0, device="cpu"):
    """Seeded normal ``a`` (m x k) and ``b`` (k x n) cast to e4m3 with tensorwise scales (amax -> 448):
    returns ``(a8, b8, scale_a, scale_b)`` with ``b8`` column-major (as ``_scaled_mm`` wants it) and the
    scales as fp32 scalars that map the fp8 values back (``a ~ a8 * scale_a``)."""
    m, k, n = _int(m, "m"), _int(k, "k", 1, 2**20), _int(n, "n")
    seed = _int(seed, "seed", 0, 2**63 - 1)
    d = _device(device)
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(m, k, generator=g).to(d), torch.randn(k, n, generator=g).to(d)
    sa = (a.abs().max() / E4M3_MAX).float()
    sb = (b.abs().max() / E4M3_MAX).float()
    a8 = (a / sa).to(torch.float8_e4m3fn)
    b8 = (b / sb).to(torch.float8_e4m3fn).t().contiguous().t()
    return a8, b8, sa, sb


def emulate_scaled_mm(a8, b8, scale_a, scale_b, out_dtype=torch.bfloat16) -> torch.Tensor:
    """The model of ``torch._scaled_mm(a8, b8, scale_a, scale_b, out_dtype=...)``: the fp8 values widened
    exactly, every product exact in fp32 (4 + 4 significant bits), summed in IEEE fp32, multiplied by
    ``scale_a * scale_b`` (one fp32 product) and rounded once to ``out_dtype``."""
    a8 = _tensor(a8, "a8", (torch.float8_e4m3fn, torch.float8_e5m2))
    b8 = _tensor(b8, "b8", (torch.float8_e4m3fn, torch.float8_e5m2))
    sa = _tensor(scale_a, "scale_a", (torch.float32,))
    sb = _tensor(scale_b, "scale_b", (torch.float32,))
    if sa.numel() != 1 or sb.numel() != 1:
        raise ValueError(f"tensorwise scales must hold one value each, got {sa.numel()} and {sb.numel()}")
    if out_dtype not in (torch.bfloat16, torch.float16, torch.float32):
        raise TypeError(f"out_dtype must be torch.bfloat16, torch.float16 or torch.float32, got {out_dtype!r}")
    if a8.dim() != 2 or b8.dim() != 2 or a8.shape[1] != b8.shape[0]:
        raise ValueError(
            f"a8 and b8 must be matrices with a8.shape[1] == b8.shape[0], got {tuple(a8.shape)}, {tuple(b8.shape)}"
        )
    with exact_fp32(a8.device):
        acc = a8.float() @ b8.float()
    return (acc * (sa * sb)).to(out_dtype)


def exact_scaled_product(a8, b8, scale_a, scale_b) -> torch.Tensor:
    """The exact product of the fp8 inputs with their scales, in fp64 (exact for K up to 2**20)."""
    a8 = _tensor(a8, "a8", (torch.float8_e4m3fn, torch.float8_e5m2))
    b8 = _tensor(b8, "b8", (torch.float8_e4m3fn, torch.float8_e5m2))
    sa = _tensor(scale_a, "scale_a", (torch.float32,))
    sb = _tensor(scale_b, "scale_b", (torch.float32,))
    return (a8.double() @ b8.double()) * (sa.double() * sb.double())


def scaled_mm(a8, b8, scale_a, scale_b, *, fast_accum: bool = False, out_dtype=torch.bfloat16) -> torch.Tensor:
    """``torch._scaled_mm`` with tensorwise scales (it also has a CPU kernel)."""
    if not isinstance(fast_accum, bool):
        raise TypeError(f"fast_accum must be True or False, got {fast_accum!r}")
    return torch._scaled_mm(a8, b8, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype, use_fast_accum=fast_accum)


def _rel(got: torch.Tensor, ref: torch.Tensor) -> dict:
    err = got.double() - ref
    return {
        "rel_error": float(err.norm() / ref.norm()),
        "max_abs_error": float(err.abs().max()),
        "max_error_over_mean_abs": float(err.abs().max() / ref.abs().mean()),
    }


def scaled_mm_cases(device="cuda", mn: int = 512, ks: Sequence[int] = (1024, 4096), large_k: int = 65536) -> dict:
    """The measurements of check (c) on ``device`` (a CPU runs them too: ``_scaled_mm`` has a CPU kernel):
    ulps of bf16 between ``_scaled_mm`` and :func:`emulate_scaled_mm` at each K, and the error of
    ``use_fast_accum`` False and True against :func:`exact_scaled_product` at ``large_k``."""
    d = _device(device)
    mn = _int(mn, "mn")
    _check_ks(ks)
    emulation = []
    for k in ks:
        a8, b8, sa, sb = fp8_inputs(mn, _int(k, "k", 16, 2**20), mn, seed=k, device=d)
        got = scaled_mm(a8, b8, sa, sb)
        emu = emulate_scaled_mm(a8, b8, sa, sb)
        emulation.append({"shape": f"{mn}x{k} @ {k}x{mn}", **_ulp_stats(ulp_distance(got, emu, "bf16"))})
    large_k = _int(large_k, "large_k", 16, 2**20)
    a8, b8, sa, sb = fp8_inputs(mn, large_k, mn, seed=7, device=d)
    exact = exact_scaled_product(a8, b8, sa, sb)
    accum = {"shape": f"{mn}x{large_k} @ {large_k}x{mn}"}
    for out_name, out_dtype in (("fp32_out", torch.float32), ("bf16_out", torch.bfloat16)):
        for fast in (False, True):
            try:
                got = scaled_mm(a8, b8, sa, sb, fast_accum=fast, out_dtype=out_dtype)
            except RuntimeError as e:  # an output dtype this torch or GPU does not offer: say so, go on
                accum[f"{out_name} use_fast_accum={fast}"] = {"error": str(e).splitlines()[0][:200]}
                continue
            accum[f"{out_name} use_fast_accum={fast}"] = _rel(got, exact)
        accum[f"{out_name} emulation"] = _rel(emulate_scaled_mm(a8, b8, sa, sb, out_dtype), exact)
        slow = accum[f"{out_name} use_fast_accum=False"].get("rel_error")
        fast = accum[f"{out_name} use_fast_accum=True"].get("rel_error")
        if slow is not None and fast is not None:
            accum[f"{out_name} fast_over_slow_rel_error"] = fast / slow if slow else (math.inf if fast else 1.0)
    return {"vs_emulation": emulation, "large_k": accum}


def check_scaled_mm(device="cuda", **sizes) -> dict:
    """Check (c): :func:`scaled_mm_cases` on a GPU with fp8 tensor cores (sm_89+), else skipped."""
    d = _device(device)
    if d.type == "cuda":
        gate = capability_gate(torch.cuda.get_device_capability(d))
        if gate:
            return {"status": "skipped", "summary": gate}
    r = scaled_mm_cases(d, **sizes)
    worst = max(c["max_ulps"] for c in r["vs_emulation"])
    la = r["large_k"]
    k = la["shape"].split("x")[1].split()[0]
    errors = []
    for out in ("fp32_out", "bf16_out"):
        pair = [la[f"{out} use_fast_accum={f}"].get("rel_error") for f in (False, True)]
        if None not in pair:
            errors.append(f"K={k} {out} rel. error {pair[0]:.2e} (fast_accum False), {pair[1]:.2e} (True)")
    summary = f"max {worst:g} bf16 ulp vs emulation; " + ("; ".join(errors[:1]) or "no fast_accum comparison ran")
    return {"status": "ok", "summary": summary, **r}


# --------------------------------------------------------------------------------------------
# (d) CUDA autocast for real against the fake-CUDA preview
# --------------------------------------------------------------------------------------------

BANNED = "banned"
COARSE = {"fp32_set_opt_dtype": "fp32", "fp32_append_dtype": "fp32"}
"""Table classes that an output dtype cannot tell from "fp32" (they differ in how the fp32 op is called)."""


def _ax():
    from amp_lessons.autocast import experiments

    return experiments


# Ops whose sample the autocast module's generic rules cannot build (its table takes their class from the
# installed header, so it never needs to call them): a hand-made sample each, (sampler) -> (args, kwargs).
EXTRA_SAMPLES = {
    "aten::layer_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,)), t.float((4,))], {}),
    "aten::native_layer_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,)), t.float((4,)), 1e-5], {}),
    "aten::rms_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,))], {}),
    "aten::mv": lambda t: ([t.float((3, 4)), t.float((4,))], {}),
    "aten::addmv": lambda t: ([t.float((3,)), t.float((3, 4)), t.float((4,))], {}),
    "aten::gru_cell": lambda t: (
        [t.float((2, 3)), t.float((2, 4)), t.float((12, 3)), t.float((12, 4)), t.float((12,)), t.float((12,))],
        {},
    ),
    "aten::lstm_cell": lambda t: (
        [t.float((2, 3)), [t.float((2, 4)), t.float((2, 4))], t.float((16, 3)), t.float((16, 4))],
        {},
    ),
    "aten::_thnn_fused_lstm_cell": lambda t: ([t.float((2, 16)), t.float((2, 16)), t.float((2, 4))], {}),
    "aten::_thnn_fused_gru_cell": lambda t: ([t.float((2, 12)), t.float((2, 12)), t.float((2, 4))], {}),
    "aten::cudnn_convolution": lambda t: (
        [t.float((1, 2, 4, 4)), t.float((3, 2, 1, 1)), [0, 0], [1, 1], [1, 1], 1, False, False, True],
        {},
    ),
    "aten::cudnn_convolution_transpose": lambda t: (
        [t.float((1, 2, 4, 4)), t.float((2, 3, 1, 1)), [0, 0], [0, 0], [1, 1], [1, 1], 1, False, False, True],
        {},
    ),
}


def _builds(qualified: str) -> list:
    """Sample-argument builders for one op overload: :data:`EXTRA_SAMPLES`, else the autocast module's own
    (a hand-made sample, or its schema-driven rules over a few shapes), so that both sides get the same inputs."""
    import functools

    ax = _ax()
    if qualified in EXTRA_SAMPLES:
        return [EXTRA_SAMPLES[qualified]]
    if qualified in ax._SAMPLES:
        return [ax._SAMPLES[qualified]]
    name, _, overload = qualified.partition(".")
    schema = torch._C._get_schema(name, overload)
    return [
        functools.partial(
            lambda sampler, s, r, v: ax._generic_sample(schema, sampler, s, r, v),
            s=s,
            r=r,
            v=v,
        )
        for s, r in ax._SHAPES
        for v in ax._VARIANTS
    ]


def _op(qualified: str):
    name, _, overload = qualified.partition(".")
    return getattr(getattr(torch.ops.aten, name.split("::", 1)[1]), overload or "default")


def trace_runner(fake: bool, dtype=torch.float16) -> Callable:
    """``run(qualified, build, dtypes) -> output dtype | "banned"`` through ``amp_lessons.autocast.trace``:
    ``fake=True`` previews CUDA autocast with fake CUDA tensors (no GPU needed), ``fake=False`` runs it on the GPU."""
    if not isinstance(fake, bool):
        raise TypeError(f"fake must be True or False, got {fake!r}")
    from amp_lessons import autocast

    ax = _ax()
    device = "cpu" if fake else "cuda"

    def run(qualified: str, build, dtypes):
        op = _op(qualified)
        args, kwargs = build(ax._Sampler(dtypes, device))
        try:
            tr = autocast.trace(lambda a, kw: op(*a, **kw), args, kwargs, device_type="cuda", dtype=dtype, fake=fake)
        except Exception as e:
            if "unsafe to autocast" in str(e):
                return BANNED
            raise
        return ax._result_dtype(tr.output)

    return run


def op_signature(qualified: str, run: Callable, low=torch.float16) -> dict | None:
    """How autocast treats one op overload, seen through ``run`` (:func:`trace_runner`): the output dtype for
    all-fp32 inputs ("A"), all-``low`` inputs ("B") and a ``low`` first input with fp32 for the rest ("C"),
    from the first sample that runs with fp32 inputs; ``{"banned": True}`` if autocast refuses it; None if no
    sample runs. The module's builders decide the samples, so real and fake get the same ones."""
    fp32 = torch.float32
    for build in _builds(qualified):
        try:
            a = run(qualified, build, [fp32])
        except _ax()._CannotBuild:
            return None
        except Exception:  # this sample does not fit the op: try the next one
            continue
        if a == BANNED:
            return {"banned": True}
        sig = {"A": str(a).replace("torch.", "")}
        for key, dtypes in (("B", [low]), ("C", [low, fp32])):
            try:
                sig[key] = str(run(qualified, build, dtypes)).replace("torch.", "")
            except Exception as e:
                sig[key] = f"error: {type(e).__name__}"
        return sig
    return None


def signature_policy(sig: dict | None, low: str = "float16") -> str | None:
    """The autocast class a signature of :func:`op_signature` shows (the rules of the autocast module's own
    measurement): banned; lower_precision (fp32 in, ``low`` out); fp32 (``low`` in, fp32 out); promote (mixed
    inputs give fp32 while ``low`` stays ``low``); None if it shows none of those."""
    if sig is None:
        return None
    if not isinstance(sig, Mapping):
        raise TypeError(f"sig must be a dict from op_signature or None, got {sig!r}")
    if sig.get("banned"):
        return BANNED
    if sig.get("A") == low:
        return "lower_precision"
    if sig.get("B") == "float32":
        return "fp32"
    if sig.get("C") == "float32" and sig.get("B") == low:
        return "promote"
    return None


@contextlib.contextmanager
def quiet():
    """No warnings and no log records (fake tensors log every sample that does not fit an op, with its traceback)."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(before)


def compare_autocast(ops: Sequence[str], real: Callable, fake: Callable, table: Mapping[str, str]) -> dict:
    """For each op name of ``ops`` (names of ``policy_table("cuda")``), the signatures of all its autocast
    overloads seen by ``real`` and by ``fake`` (:func:`trace_runner`): equal signatures agree. Returns counts,
    the disagreements, the ops only one side could run, and the policy-table entries the real GPU contradicts."""
    if isinstance(ops, str) or not isinstance(ops, Sequence):
        raise TypeError(f"ops must be a sequence of op names, got {ops!r}")
    if not callable(real) or not callable(fake):
        raise TypeError(f"real and fake must be runners (trace_runner), got {real!r} and {fake!r}")
    if not isinstance(table, Mapping):
        raise TypeError(f"table must be a dict op -> policy, got {table!r}")
    ax = _ax()
    overloads: dict[str, list[str]] = {}
    for q in ax._autocast_ops("cuda"):
        overloads.setdefault(ax._base(q), []).append(q)
    agree, disagree, only_real, only_fake, neither, table_contradicted = [], [], [], [], [], []
    for name in ops:
        if name not in overloads:
            raise ValueError(f"op {name!r} has no CUDA autocast kernel in this torch")
        per = {}
        for q in overloads[name]:
            r, f = op_signature(q, real), op_signature(q, fake)
            if r is None and f is None:
                continue
            per[q] = (r, f)
        if not per:
            neither.append(name)
            continue
        both = {q: rf for q, rf in per.items() if rf[0] is not None and rf[1] is not None}
        if not both:
            (only_real if any(r is not None for r, _ in per.values()) else only_fake).append(name)
        elif all(r == f for r, f in both.values()):
            agree.append(name)
        else:
            disagree.append({"op": name, **{q: {"real": r, "fake": f} for q, (r, f) in both.items() if r != f}})
        real_policies = {signature_policy(r) for r, _ in per.values() if r is not None} - {None}
        if real_policies and COARSE.get(table.get(name), table.get(name)) not in real_policies:
            table_contradicted.append({"op": name, "table": table.get(name), "real": sorted(real_policies)})
    return {
        "ops": len(ops),
        "agree": len(agree),
        "disagree": disagree,
        "only_real_ran": only_real,
        "only_fake_ran": only_fake,
        "neither_ran": neither,
        "table_contradicted_by_real": table_contradicted,
    }


def check_autocast_policy(device="cuda", ops: Sequence[str] | None = None) -> dict:
    """Check (d): :func:`compare_autocast` over every op of ``policy_table("cuda")`` (or ``ops``), real CUDA
    autocast (fp16) on ``device`` against the fake-CUDA preview."""
    d = _device(device)
    if d.type != "cuda":
        raise ValueError(f"check (d) runs real CUDA autocast: device must be a CUDA device, got {device!r}")
    from amp_lessons import autocast

    table = autocast.policy_table("cuda")
    ops = sorted(table) if ops is None else list(ops)
    with quiet(), torch.cuda.device(d):
        r = compare_autocast(ops, trace_runner(False), trace_runner(True), table)
    summary = (
        f"{r['agree']}/{r['ops']} ops agree, {len(r['disagree'])} disagree, "
        f"{len(r['only_real_ran'])} only real ran, {len(r['only_fake_ran'])} only fake ran; "
        f"{len(r['table_contradicted_by_real'])} table entries contradicted by the GPU"
    )
    return {"status": "ok", "summary": summary, **r}


# --------------------------------------------------------------------------------------------
# (e) the timing helper against triton's do_bench
# --------------------------------------------------------------------------------------------


def check_timing_helper(device="cuda", size: int = 8192, repeats: int = 20) -> dict:
    """Check (e): ``timing.time_fn`` (CUDA events, L2 flushed and not) against ``triton.testing.do_bench``
    (median) on a size^3 bf16 matmul; do_bench is skipped, saying so, where triton is not installed."""
    d = _device(device)
    size, repeats = _int(size, "size", 16, 32768), _int(repeats, "repeats", 1, 1000)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    b = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    flops = timing.matmul_flops(size, size, size)
    out = {"shape": f"{size}^3 bf16"}
    for flush in (True, False):
        t = timing.time_fn(
            lambda: a @ b, device=d.type, repeats=repeats, flush_l2=flush and d.type == "cuda", flops=flops
        )
        out[f"time_fn_{'flushed' if flush else 'warm'}_ms"] = t.median_s * 1e3
        out[f"time_fn_{'flushed' if flush else 'warm'}_tflops"] = t.tflops
    try:
        from triton.testing import do_bench
    except ImportError:
        out["do_bench"] = "skipped: triton is not installed"
        out["status"], out["summary"] = (
            "ok",
            f"time_fn {out['time_fn_flushed_ms']:.3f} ms; do_bench skipped (no triton)",
        )
        return out
    ms = do_bench(lambda: a @ b, return_mode="median")
    out["do_bench_ms"] = ms
    out["time_fn_over_do_bench"] = out["time_fn_flushed_ms"] / ms
    out["status"] = "ok"
    out["summary"] = (
        f"time_fn {out['time_fn_flushed_ms']:.3f} ms, do_bench {ms:.3f} ms (ratio {out['time_fn_over_do_bench']:.3f})"
    )
    return out


# --------------------------------------------------------------------------------------------
# (f) the course's AMP step against a minimal bf16 autocast loop
# --------------------------------------------------------------------------------------------


def minimal_bf16_step(model, optimizer, config: str, device_type: str):
    """The shortest bf16 autocast training step (no GradScaler: bf16 has fp32's range), with the
    ``make_step`` signature of ``amp_lessons.e2e.train``: forward and loss under autocast, backward,
    optimizer step."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be an nn.Module, got {model!r}")
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")

    def step(x, y):
        with torch.autocast(device_type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def check_amp_step(
    device="cuda", steps: int = 30, rounds: int = 2, model_kwargs: dict | None = None, batch=None
) -> dict:
    """Check (f): ``e2e.train("bf16 autocast")`` with the course's ``amp_step`` and with
    :func:`minimal_bf16_step`, alternately ``rounds`` times (same model, seed and data), ms per step."""
    from amp_lessons import e2e

    d = _device(device)
    steps, rounds = _int(steps, "steps", 3, 10_000), _int(rounds, "rounds", 1, 100)
    if d.type == "cuda":
        gate = capability_gate(torch.cuda.get_device_capability(d), (8, 0), "bf16 tensor cores")
        if gate:
            return {"status": "skipped", "summary": gate}
    makers = {"course amp_step": e2e.amp_step, "minimal bf16 loop": minimal_bf16_step}
    times: dict[str, list[float]] = {k: [] for k in makers}
    final: dict[str, list[float]] = {k: [] for k in makers}
    model = None
    for _ in range(rounds):
        for name, make in makers.items():
            r = e2e.train(
                "bf16 autocast",
                steps=steps,
                device=d,
                progress=False,
                model_kwargs=model_kwargs,
                batch=batch,
                make_step=make,
            )
            times[name] += list(r.step_times_s)
            final[name].append(r.final_loss)
            model = r.model
    med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    out = {
        "model": model,
        "steps_per_run": steps,
        "rounds": rounds,
        "ms_per_step": med,
        "ms_per_step_min_max": {k: [min(v) * 1e3, max(v) * 1e3] for k, v in times.items()},
        "final_loss": final,
        "course_over_minimal": med["course amp_step"] / med["minimal bf16 loop"],
    }
    out["status"] = "ok"
    out["summary"] = (
        f"course {med['course amp_step']:.2f} ms/step, minimal {med['minimal bf16 loop']:.2f} ms/step "
        f"(ratio {out['course_over_minimal']:.3f})"
    )
    return out


# --------------------------------------------------------------------------------------------
# The checks, the results folder and the summary
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    letter: str
    name: str
    fn: Callable
    estimate_s: float  # H100 estimate
    what: str


CHECKS: tuple[Check, ...] = (
    Check("a", "tf32_rounding", check_tf32_rounding, 10.0, "TF32 input rounding per op vs 3 models (GPU with TF32)"),
    Check("b", "lowp_matmul", check_lowp_matmul, 5.0, "fp16/bf16 matmul vs fp32-sum emulation, ulps"),
    Check("c", "scaled_mm", check_scaled_mm, 5.0, "torch._scaled_mm e4m3 vs emulation; fast accum (sm_89+)"),
    Check("e", "timing_helper", check_timing_helper, 10.0, "timing.time_fn vs triton do_bench, 8192^3 bf16"),
    Check("f", "amp_step", check_amp_step, 25.0, "course AMP step vs minimal bf16 loop, ms/step"),
    Check("d", "autocast_policy", check_autocast_policy, 30.0, "real CUDA autocast vs fake preview, every op"),
)
"""The checks in the order they run: the timings (e, f) on a GPU nothing else has touched yet, the
autocast sweep (d), which calls every op with made-up inputs, last."""
_BY_NAME = {c.name: c for c in CHECKS}

STATUSES = ("ok", "passed", "skipped", "failed", "error", "timeout")
_BAD = ("failed", "error", "timeout")


def gpu_slug(name: str) -> str:
    """A folder-safe form of a GPU name: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise ValueError(f"name {name!r} has no letter or digit to name a folder with")
    return slug


def results_folder(gpu_name: str, date: datetime.date | None = None, root: Path = RESULTS_ROOT) -> Path:
    """A new folder ``root/<date>-<gpu>`` (``-2``, ``-3``... appended when it exists already), created."""
    date = datetime.date.today() if date is None else date
    if not isinstance(date, datetime.date):
        raise TypeError(f"date must be a datetime.date, got {date!r}")
    if not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path, got {root!r}")
    base = Path(root) / f"{date.isoformat()}-{gpu_slug(gpu_name)}"
    folder, i = base, 1
    while folder.exists():
        i += 1
        folder = base.with_name(f"{base.name}-{i}")
    folder.mkdir(parents=True)
    return folder


def _jsonable(v):
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def write_result(folder, name: str, result: Mapping) -> Path:
    """Write one step's or check's ``result`` (a dict with "status" from :data:`STATUSES` and a one-line
    "summary") to ``folder/<name>.json``, with ``name`` added; non-finite floats become strings."""
    if not isinstance(folder, (str, Path)) or not Path(folder).is_dir():
        raise ValueError(f"folder must be an existing directory, got {folder!r}")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+", name):
        raise ValueError(f"name must be lower-case letters, digits and _, got {name!r}")
    if not isinstance(result, Mapping):
        raise TypeError(f"result must be a dict, got {result!r}")
    if result.get("status") not in STATUSES:
        raise ValueError(f"result['status'] must be one of {', '.join(STATUSES)}, got {result.get('status')!r}")
    if not isinstance(result.get("summary"), str):
        raise ValueError(f"result['summary'] must be a one-line string, got {result.get('summary')!r}")
    path = Path(folder) / f"{name}.json"
    body = {"name": name, **_jsonable(result)}
    path.write_text(json.dumps(body, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


SUMMARY_ORDER = ("pytest", "record_references", *(f"check_{c.name}" for c in CHECKS))


def summarize(folder, expected: Sequence[str] = SUMMARY_ORDER) -> tuple[str, bool]:
    """The summary table of ``folder`` (every ``*.json`` written by :func:`write_result`: the ``expected``
    ones first, in that order, then any others) and whether everything ran: False if a result is failed,
    error or timeout, or an ``expected`` one is missing."""
    if not isinstance(folder, (str, Path)) or not Path(folder).is_dir():
        raise ValueError(f"folder must be an existing directory, got {folder!r}")
    if isinstance(expected, str) or not isinstance(expected, Sequence):
        raise TypeError(f"expected must be a sequence of result names, got {expected!r}")
    found = {}
    for p in sorted(Path(folder).glob("*.json")):
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(d, dict) and d.get("status") in STATUSES and d.get("name") == p.stem:
            found[p.stem] = d
    rows, ok = [], True
    for name in [*expected, *sorted(set(found) - set(expected))]:
        d = found.get(name)
        label = name
        if name.startswith("check_") and name[6:] in _BY_NAME:
            label = f"({_BY_NAME[name[6:]].letter}) {name[6:]}"
        if d is None:
            rows.append((label, "missing", "", "no result written"))
            ok = False
            continue
        ok = ok and d["status"] not in _BAD
        secs = d.get("seconds")
        rows.append((label, d["status"], f"{secs:.1f} s" if isinstance(secs, (int, float)) else "", d["summary"]))
    table = text_table(("step", "status", "time", "result"), rows, title=f"gpu-check summary: {Path(folder)}")
    return table, ok


def run_check(check: Check, device: str, folder: Path) -> dict:
    """Run one check, time it, write ``check_<name>.json`` (an exception becomes status "error" with its
    traceback); returns the result."""
    t0 = time.perf_counter()
    try:
        result = dict(check.fn(device))
    except Exception as e:  # a broken check must not stop the others
        result = {"status": "error", "summary": f"{type(e).__name__}: {e}"[:300], "traceback": traceback.format_exc()}
    result["seconds"] = time.perf_counter() - t0
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    write_result(folder, f"check_{check.name}", result)
    return result


def run_checks(folder: Path, names: Sequence[str], deadline: float, device: str = "cuda") -> None:
    """The child process of step 3: each check in turn, skipped (status "skipped") when less time is left
    before ``deadline`` (a ``time.time()``) than :data:`SKIP_FACTOR` times its estimate."""
    for c in CHECKS:
        if c.name not in names:
            continue
        left = deadline - time.time()
        if left < SKIP_FACTOR * c.estimate_s:
            write_result(
                folder,
                f"check_{c.name}",
                {
                    "status": "skipped",
                    "summary": f"skipped: time budget ({left:.0f} s left, estimate {c.estimate_s:.0f} s)",
                },
            )
            continue
        print(f"== check ({c.letter}) {c.name}: {c.what}", flush=True)
        r = run_check(c, device, folder)
        print(f"   {r['status']} in {r['seconds']:.1f} s: {r['summary']}", flush=True)


# --------------------------------------------------------------------------------------------
# Running the steps
# --------------------------------------------------------------------------------------------

NEEDS = (
    ("pytest on the GPU (unit tests, nbval)", "a CUDA GPU"),
    ("references (python -m amp_lessons.reference record)", "a CUDA GPU"),
    ("(a) TF32 input rounding", "a CUDA GPU with TF32 tensor cores (sm_80+)"),
    ("(b) fp16/bf16 matmul vs emulation", "a CUDA GPU (bf16: sm_80+)"),
    ("(c) torch._scaled_mm fp8 vs emulation", "a CUDA GPU with fp8 tensor cores (sm_89+)"),
    ("(d) CUDA autocast vs fake preview", "a CUDA GPU"),
    ("(e) time_fn vs triton do_bench", "a CUDA GPU; triton for do_bench"),
    ("(f) course AMP step vs minimal bf16 loop", "a CUDA GPU with bf16 (sm_80+)"),
)


def no_gpu_message() -> str:
    """What ``gpu-check`` says where torch sees no CUDA GPU: which step needs what, and this torch's build."""
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build (torch.version.cuda is None)"
    width = max(len(what) for what, _ in NEEDS)
    lines = [
        "gpu-check needs a CUDA GPU, and torch.cuda.is_available() is False on this machine: nothing was run.",
        f"  torch {torch.__version__}, {build}; Python {platform.python_version()}, {platform.system()} {platform.machine()}",
        *(f"  {what:<{width}}  needs {need}" for what, need in NEEDS),
    ]
    if not torch.version.cuda:
        lines.append(
            "  This torch cannot use a GPU at all: install a CUDA build (README.md, TORCH_INDEX), or the wheels that "
            "`make gpu-wheels` downloads."
        )
    lines.append(
        "  Without a GPU, `make test` runs the course's CPU tests (tests/test_gpu_check.py covers this script's CPU parts)."
    )
    return "\n".join(lines)


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_logged(cmd: Sequence[str], log: Path, timeout_s: float, env: Mapping | None = None) -> tuple[int | None, float]:
    """Run ``cmd`` in its own process group, its output both printed and written to ``log``; killed (with its
    children) after ``timeout_s``. Returns (exit code, or None on timeout; seconds)."""
    timeout_s = _number(timeout_s, "timeout_s", 0.0, 86400.0, low_open=True)
    t0 = time.perf_counter()
    timed_out = threading.Event()
    with (
        open(log, "w", encoding="utf-8") as fh,
        subprocess.Popen(
            list(cmd),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            env=None if env is None else dict(env),
        ) as proc,
    ):

        def expire():
            timed_out.set()
            _kill(proc)

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                fh.write(line)
            proc.wait()
        finally:
            timer.cancel()
    return (None if timed_out.is_set() else proc.returncode), time.perf_counter() - t0


def _last_line(log: Path, pattern: str) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    hits = [ln for ln in lines if re.search(pattern, ln)]
    return (hits or lines or ["(no output)"])[-1][:300]


def pytest_command(cores: int) -> list[str]:
    """The pytest step's command. ``-p no:benchmark``: a GPU image may carry pytest-benchmark, which warns under
    xdist, and the course's tests turn warnings into errors (seen on an H200 image: an INTERNALERROR before any
    test ran); where the plugin is absent the option does nothing."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:benchmark", "-n", str(cores), "--dist", "loadfile"]
    return cmd + ["tests", "notebooks", "--ignore=tests/browser"]


def step_pytest(folder: Path, limit_s: float) -> dict:
    cmd = pytest_command(os.cpu_count() or 1)
    code, secs = run_logged(cmd, folder / "pytest.log", limit_s)
    line = _last_line(folder / "pytest.log", r"(passed|failed|error)")
    status = "timeout" if code is None else ("passed" if code == 0 else "failed")
    summary = f"stopped at the {limit_s:.0f} s limit; last: {line}" if code is None else line.strip("= ")
    return {"status": status, "summary": summary, "seconds": secs, "returncode": code, "command": " ".join(cmd[1:])}


def step_references(folder: Path, limit_s: float) -> dict:
    cmd = [sys.executable, "-m", "amp_lessons.reference", "record", "--file", str(folder / "references.json")]
    code, secs = run_logged(cmd, folder / "references.log", limit_s)
    if code is None:
        status, summary = "timeout", f"stopped at the {limit_s:.0f} s limit"
    elif code == 0:
        n = len(json.loads((folder / "references.json").read_text())["records"])
        status, summary = "ok", f"{n} references recorded in references.json"
    else:
        status, summary = "failed", _last_line(folder / "references.log", r"rror")
    return {"status": status, "summary": summary, "seconds": secs, "returncode": code, "command": " ".join(cmd[1:])}


def step_checks(folder: Path, names: Sequence[str], limit_s: float) -> dict:
    deadline = time.time() + limit_s - DEADLINE_MARGIN_S
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-checks", str(folder), "--deadline", f"{deadline:.3f}"]
    cmd += ["--only", *names]
    code, secs = run_logged(cmd, folder / "checks.log", limit_s)
    for c in CHECKS:
        if c.name in names and not (folder / f"check_{c.name}.json").exists():
            if code is None:
                why, text = "timeout", f"no result: the checks process reached its {limit_s:.0f} s limit"
            else:
                last = _last_line(folder / "checks.log", r"rror")
                why, text = "error", f"no result: the checks process exited with code {code} ({last})"
            write_result(folder, f"check_{c.name}", {"status": why, "summary": text})
    return {"code": code, "seconds": secs}


def ensure_triton(wheelhouse: Path | None) -> str:
    """Install triton from ``wheelhouse`` (offline: ``pip --no-index --find-links``) if it is missing and the
    wheelhouse holds a triton wheel; returns what happened."""
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        return "triton installed"
    if wheelhouse is None or not any(Path(wheelhouse).glob("triton-*.whl")):
        return "triton not installed and no triton wheel in the wheelhouse: check (e) skips do_bench"
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(wheelhouse), "triton"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return (
        "triton installed from the wheelhouse"
        if proc.returncode == 0
        else f"triton install failed: {proc.stderr[-300:]}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gpu_check.py", description="The course's checks on an NVIDIA GPU (make gpu-check)."
    )
    parser.add_argument("--plan", action="store_true", help="print the time budget and exit")
    parser.add_argument(
        "--budget", type=float, default=BUDGET_S, help=f"seconds for all steps (default {BUDGET_S:.0f})"
    )
    parser.add_argument("--only", nargs="+", choices=[c.name for c in CHECKS], help="only these checks")
    parser.add_argument("--skip-pytest", action="store_true", help="no pytest step")
    parser.add_argument("--skip-references", action="store_true", help="no reference recording")
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT, help=f"results root (default {RESULTS_ROOT})")
    parser.add_argument("--wheelhouse", type=Path, default=None, help="offline wheels (scripts/gpu_wheels.py)")
    parser.add_argument("--run-checks", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = args.only or [c.name for c in CHECKS]

    if args.plan:
        print(plan_text(args.budget))
        return 0
    if not torch.cuda.is_available():
        print(no_gpu_message(), file=sys.stderr)
        return NO_GPU_EXIT
    if args.run_checks is not None:  # the child process of step 3
        run_checks(args.run_checks, names, args.deadline or time.time() + PLAN[-1].limit_s)
        return 0

    start = time.time()
    plan = {p["step"]: p for p in budget_plan(args.budget)}
    gpu = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    folder = results_folder(gpu, root=args.results)
    print(f"gpu-check on {gpu} (sm_{major}{minor}), torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"results: {folder}")
    print(plan_text(args.budget))
    triton_note = ensure_triton(args.wheelhouse)
    print(triton_note)
    env_note = {
        "gpu": gpu,
        "capability": f"{major}.{minor}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpu_cores": os.cpu_count(),
        "triton": triton_note,
        "date": datetime.date.today().isoformat(),
        "budget_s": args.budget,
    }
    (folder / "environment.json").write_text(json.dumps(env_note, indent=2) + "\n", encoding="utf-8")

    def left() -> float:
        return args.budget - (time.time() - start)

    if not args.skip_pytest:
        print("== pytest", flush=True)
        write_result(folder, "pytest", step_pytest(folder, min(plan["pytest"]["limit_s"], left())))
    if not args.skip_references:
        print("== references", flush=True)
        write_result(folder, "record_references", step_references(folder, min(plan["references"]["limit_s"], left())))
    print("== checks", flush=True)
    step_checks(folder, names, max(1.0, left()))

    expected = (["pytest"] if not args.skip_pytest else []) + (
        ["record_references"] if not args.skip_references else []
    )
    expected += [f"check_{c.name}" for c in CHECKS if c.name in names]
    table, ok = summarize(folder, expected)
    (folder / "summary.txt").write_text(table + "\n", encoding="utf-8")
    print()
    print(table)
    print(f"\n{'all steps ran' if ok else 'SOME STEPS FAILED'} in {time.time() - start:.0f} s; results in {folder}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
