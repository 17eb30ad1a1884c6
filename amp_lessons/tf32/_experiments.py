"""Lesson 02's experiments: what TF32 costs in accuracy and buys in speed.

Real TF32 needs an NVIDIA GPU of the Ampere generation or newer; elsewhere the course's model: both inputs rounded
bit-exactly to TF32 by :mod:`amp_lessons.formats` (to nearest with ties to even, what an NVIDIA H100 was measured to
do with torch 2.11 on 2026-11-23, the reference ``tf32_rounding_per_op``; or by truncation) and multiplied in IEEE
fp32. Tensor cores do not sum like IEEE fp32: the model is exact in its input rounding only.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass

import torch

from .. import _validate, formats, timing
from .._runtime import exact_fp32, fp32_precision, parse_device
from .._table import TableRecord
from .._validate import allocation, count, positive, selection
from ..device import gpu_info

__all__ = [
    "MODELLED",
    "ErrorVsK",
    "MatmulError",
    "SwitchesTour",
    "VARIANTS",
    "conv_errors",
    "emulated_matmul",
    "error_vs_k",
    "fp32_precision",
    "has_tf32",
    "matmul_errors",
    "mkldnn_precision_effect",
    "pick_size",
    "switches_tour",
    "time_matmuls",
]

MAX_DIM = 65_536  # the largest matrix dimension the lesson accepts

MODELLED = "inputs rounded bit-exactly, fp32 sum (model)"
"""The ``how`` of an emulated variant: its inputs are rounded exactly, its summation is a model."""

# name -> (input format, rounding of the inputs) for the emulated variants
_EMULATED = {
    "fp32": ("fp32", "nearest_even"),
    "tf32 emulated": ("tf32", "nearest_even"),  # ties to even: what the H100 measured does
    "tf32 emulated (truncation)": ("tf32", "toward_zero"),
    "bf16 inputs": ("bf16", "nearest_even"),
    "fp16 inputs": ("fp16", "nearest_even"),
}
VARIANTS = (*_EMULATED, "tf32 hardware")


def has_tf32(device="cuda") -> bool:
    """True if ``device`` is a CUDA GPU whose tensor cores run TF32 (compute capability >= 8.0)."""
    d = parse_device(device, require_available=False)
    if d.type != "cuda" or not torch.cuda.is_available():
        return False
    g = gpu_info()
    return g is not None and g.tf32


def emulated_matmul(a: torch.Tensor, b: torch.Tensor, fmt="tf32", rounding="nearest_even") -> torch.Tensor:
    """``a @ b`` with both inputs rounded to ``fmt`` and the products summed in IEEE fp32: the course's model of a
    tensor core with TF32 (or bf16/fp16) inputs and fp32 accumulation."""
    for name, t in (("a", a), ("b", b)):
        if not isinstance(t, torch.Tensor) or t.dtype != torch.float32:
            raise TypeError(f"{name} must be a float32 tensor, got {getattr(t, 'dtype', type(t).__name__)}")
        if t.dim() != 2:
            raise ValueError(f"{name} must be a matrix (2-D), got shape {tuple(t.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(
            f"a's columns must equal b's rows (a is {tuple(a.shape)}, b is {tuple(b.shape)}): a @ b needs m x k @ k x n"
        )
    qa, qb = formats.quantize(a, fmt, rounding), formats.quantize(b, fmt, rounding)
    with exact_fp32(a.device):
        return qa @ qb


def _inputs(m, k, n, device, seed):
    m, k, n = (count(v, name, 1, MAX_DIM) for v, name in ((m, "m"), (k, "k"), (n, "n")))
    allocation(max(m * k, k * n, m * n) * 2, f"a {m}x{k} @ {k}x{n} product and its float64 reference")
    g = torch.Generator(device="cpu").manual_seed(_validate.seed(seed))
    a = torch.randn(m, k, generator=g).to(device)
    b = torch.randn(k, n, generator=g).to(device)
    return a, b


@dataclass(frozen=True)
class MatmulError:
    variant: str
    max_error: float  # max |C - C_fp64|
    rel_error: float  # max error / mean |C_fp64|
    rms_error: float  # sqrt(mean (C - C_fp64)^2)
    how: str  # "measured on <device>", or MODELLED for the emulated variants


def _errors(c: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float]:
    d = c.double() - ref
    return d.abs().max().item(), (d.abs().max() / ref.abs().mean()).item(), d.pow(2).mean().sqrt().item()


def matmul_errors(m: int, k: int, n: int, *, device="cpu", seed: int = 0, variants=None) -> list[MatmulError]:
    """Errors of an (m x k) @ (k x n) product of random normal matrices against the fp64 product, for each variant
    in :data:`VARIANTS` ("tf32 hardware" only where the GPU has TF32)."""
    d = parse_device(device)
    variants = list(VARIANTS if variants is None else selection(variants, "variants", "variant names"))
    for v in variants:
        if v not in VARIANTS:
            raise ValueError(f"unknown variant {v!r} in variants: use some of {', '.join(map(repr, VARIANTS))}")
    if variants and set(variants) == {"tf32 hardware"} and not has_tf32(d):
        raise ValueError(
            f"variants={variants!r} selects only 'tf32 hardware', which needs a TF32 GPU, and {d} has none: add a "
            "modelled variant such as 'tf32 emulated'"
        )
    a, b = _inputs(m, k, n, d, seed)
    ref = a.double() @ b.double()
    out = []
    where = f"measured on {torch.cuda.get_device_name(d) if d.type == 'cuda' else 'this CPU'}"
    for v in variants:
        if v == "tf32 hardware" and not has_tf32(d):
            continue
        measured = v in ("fp32", "tf32 hardware")
        with fp32_precision(matmul="tf32") if v == "tf32 hardware" else exact_fp32(d):
            c = a @ b if measured else emulated_matmul(a, b, *_EMULATED[v])
        out.append(MatmulError(v, *_errors(c, ref), where if measured else MODELLED))
    return out


@dataclass(frozen=True, repr=False)
class ErrorVsK(TableRecord):
    """The RMS errors of :func:`error_vs_k`: ``k`` the inner dimensions, ``rms`` input format name -> the RMS
    error against fp64 at each K, ``ref_rms`` the RMS of the exact product at each K. Shown as a table."""

    k: tuple[int, ...]
    rms: dict[str, tuple[float, ...]]
    ref_rms: tuple[float, ...]

    def _table(self):
        header = ("K", *(f"{f} inputs" for f in self.rms), "RMS of the exact result")
        rows = [
            (str(k), *(f"{line[i]:.3g}" for line in self.rms.values()), f"{self.ref_rms[i]:.3g}")
            for i, k in enumerate(self.k)
        ]
        return header, rows, "RMS error of a matmul against fp64, by inner dimension K (fp32 accumulation)", ()


def error_vs_k(
    ks,
    fmts=("fp32", "tf32", "bf16", "fp16"),
    *,
    m: int = 64,
    n: int = 64,
    seed: int = 0,
    rounding: str = "nearest_even",
    device="cpu",
) -> ErrorVsK:
    """RMS error of (m x K) @ (K x n) products against fp64, for each K and each input format (inputs rounded by
    the formats engine, products accumulated in fp32): the :class:`ErrorVsK`."""
    if isinstance(ks, (str, bytes)) or not hasattr(ks, "__iter__"):
        raise TypeError(f"ks must be a sequence of increasing positive ints, got {ks!r}")
    ks = [count(k, f"ks[{i}]", 1, MAX_DIM) for i, k in enumerate(ks)]
    if not ks or any(lo >= hi for lo, hi in zip(ks, ks[1:])):
        raise ValueError(f"ks must be strictly increasing positive ints (each K once), got {ks!r}")
    d = parse_device(device)
    a, b = _inputs(m, ks[-1], n, d, seed)
    fmts = [formats.get_format(f, what=f"fmts[{i}]") for i, f in enumerate(selection(fmts, "fmts", "format names"))]
    names = [f.name for f in fmts]
    quantized = {f.name: (formats.quantize(a, f, rounding), formats.quantize(b, f, rounding)) for f in fmts}
    rms, ref_rms = {f: [] for f in names}, []
    with exact_fp32(d):
        for k in ks:
            ref = a[:, :k].double() @ b[:k].double()
            ref_rms.append(ref.pow(2).mean().sqrt().item())
            for f in names:
                qa, qb = quantized[f]
                rms[f].append(_errors(qa[:, :k] @ qb[:k], ref)[2])
    return ErrorVsK(tuple(ks), {f: tuple(v) for f, v in rms.items()}, tuple(ref_rms))


def pick_size(device="cpu", *, budget_s: float | None = None) -> int:
    """A square matmul size for the lesson's timing: small enough for a 2-core CPU within the notebook budget,
    large enough to fill a big GPU, within the device's memory."""
    d = parse_device(device)
    budget_s = None if budget_s is None else positive(budget_s, "budget_s")
    if d.type == "cpu":
        return 1024 if budget_s is None or budget_s >= 1 else 512
    free, _total = torch.cuda.mem_get_info(d)
    for size in (10240, 8192, 4096, 2048, 1024):
        need = 3 * size * size * 4 + 3 * size * size * 8  # fp32 a, b, c + fp64 a, b, ref
        if need < 0.5 * free:
            return size
    return 512


def time_matmuls(size: int, *, device="cpu", repeats: int = 5) -> dict:
    """Times of a size^3 fp32 matmul with full fp32 math and (on a TF32 GPU only) with TF32: setting name
    ("fp32", "tf32") -> its :class:`~amp_lessons.timing.Timing`."""
    d = parse_device(device)
    size = count(size, "size", 1, MAX_DIM)
    a, b = _inputs(size, size, size, d, 0)
    flops = timing.matmul_flops(size, size, size)
    out = {}
    with exact_fp32(d):
        out["fp32"] = timing.time_fn(lambda: a @ b, device=d.type, repeats=repeats, flops=flops, dtype_key="fp32")
    if has_tf32(d):
        with fp32_precision(matmul="tf32"):
            out["tf32"] = timing.time_fn(lambda: a @ b, device=d.type, repeats=repeats, flops=flops, dtype_key="tf32")
    return out


def conv_errors(
    *, device="cpu", batch: int = 8, channels: int = 64, size: int = 32, seed: int = 0
) -> list[MatmulError]:
    """Errors of a 3x3 convolution against fp64 with fp32 math, with TF32 inputs (the course's model) and, on a
    TF32 GPU, with real cuDNN TF32."""
    d = parse_device(device)
    g = torch.Generator().manual_seed(_validate.seed(seed))
    batch, channels, size = (
        count(v, k, 1, MAX_DIM) for v, k in ((batch, "batch"), (channels, "channels"), (size, "size"))
    )
    allocation(batch * channels * size * size * 2, f"a {batch}x{channels}x{size}x{size} input in float64")
    x = torch.randn(batch, channels, size, size, generator=g).to(d)
    w = (torch.randn(channels, channels, 3, 3, generator=g) / math.sqrt(9 * channels)).to(d)
    conv = torch.nn.functional.conv2d
    ref = conv(x.double(), w.double(), padding=1)
    with fp32_precision(conv="ieee") if d.type == "cuda" else fp32_precision(cpu_matmul="ieee"):
        out = [MatmulError("fp32", *_errors(conv(x, w, padding=1), ref), "measured")]
        for v in ("tf32 emulated", "tf32 emulated (truncation)"):
            r = _EMULATED[v][1]
            c = conv(formats.quantize(x, "tf32", r), formats.quantize(w, "tf32", r), padding=1)
            out.append(MatmulError(v, *_errors(c, ref), MODELLED))
    if has_tf32(d):
        with fp32_precision(conv="tf32"):
            c = conv(x, w, padding=1)
        out.append(MatmulError("tf32 hardware", *_errors(c, ref), f"measured on {torch.cuda.get_device_name(d)}"))
    return out


def mkldnn_precision_effect(size: int = 512, seed: int = 0) -> dict[str, float]:
    """Relative error (max error / mean |ref|) of a CPU fp32 matmul under each setting of
    ``torch.backends.mkldnn.matmul.fp32_precision`` (restored afterwards)."""
    size = count(size, "size", 1, MAX_DIM)
    a, b = _inputs(size, size, size, torch.device("cpu"), seed)
    ref = a.double() @ b.double()
    out = {}
    for p in ("ieee", "tf32", "bf16"):
        with fp32_precision(cpu_matmul=p):
            out[p] = _errors(a @ b, ref)[1]
    return out


_TOUR = r"""
import json, torch
out = {}
out["legacy defaults"] = {"torch.backends.cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
                          "torch.backends.cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                          "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision()}
def new():
    return {"torch.backends.fp32_precision": torch.backends.fp32_precision,
            "torch.backends.cuda.matmul.fp32_precision": torch.backends.cuda.matmul.fp32_precision,
            "torch.backends.cudnn.conv.fp32_precision": torch.backends.cudnn.conv.fp32_precision,
            "torch.backends.cudnn.rnn.fp32_precision": torch.backends.cudnn.rnn.fp32_precision,
            "torch.backends.mkldnn.matmul.fp32_precision": torch.backends.mkldnn.matmul.fp32_precision}
out["new API defaults"] = new()
torch.set_float32_matmul_precision("high"); out['after set_float32_matmul_precision("high")'] = new()
torch.set_float32_matmul_precision("medium"); out['after set_float32_matmul_precision("medium")'] = new()
torch.set_float32_matmul_precision("highest")
try:
    torch.backends.cuda.matmul.fp32_precision = "bf16"
except RuntimeError as e:
    out['cuda.matmul.fp32_precision = "bf16"'] = "RuntimeError: " + str(e).splitlines()[0]
torch.backends.cuda.matmul.fp32_precision = "tf32"
try:
    torch.backends.cuda.matmul.allow_tf32
    out["reading allow_tf32 after setting fp32_precision"] = "no error"
except RuntimeError as e:
    out["reading allow_tf32 after setting fp32_precision"] = "RuntimeError: " + str(e).split(". ")[0][:200]
print(json.dumps(out))
"""


@dataclass(frozen=True, repr=False)
class SwitchesTour(TableRecord):
    """The TF32 switches of :func:`switches_tour`, each step a mapping switch -> value: ``legacy_defaults``,
    ``new_api_defaults``, ``after_high`` and ``after_medium`` (after ``set_float32_matmul_precision``);
    ``cuda_matmul_bf16`` the error of setting ``cuda.matmul.fp32_precision = "bf16"`` (None: accepted),
    ``mixed_read`` what reading ``allow_tf32`` gave after setting ``fp32_precision``. Shown as a table."""

    legacy_defaults: dict[str, object]
    new_api_defaults: dict[str, object]
    after_high: dict[str, object]
    after_medium: dict[str, object]
    cuda_matmul_bf16: str | None
    mixed_read: str

    STEPS = {
        "legacy_defaults": "legacy defaults",
        "new_api_defaults": "new API defaults",
        "after_high": 'after set_float32_matmul_precision("high")',
        "after_medium": 'after set_float32_matmul_precision("medium")',
    }

    def _table(self):
        rows = [
            (label, switch, repr(value))
            for field, label in self.STEPS.items()
            for switch, value in getattr(self, field).items()
        ]
        bf16 = "accepted" if self.cuda_matmul_bf16 is None else self.cuda_matmul_bf16
        rows.append(('cuda.matmul.fp32_precision = "bf16"', "", bf16))
        rows.append(("reading allow_tf32 after setting fp32_precision", "", self.mixed_read))
        return ("step", "switch", "value"), rows, "TF32 switches, old and new, in a fresh process", ()


def switches_tour() -> SwitchesTour:
    """The TF32 switches of this torch, old and new, read in a fresh Python process (mixing the two APIs leaves
    it in an error state): the :class:`SwitchesTour`."""
    proc = subprocess.run([sys.executable, "-c", _TOUR], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"the switches tour failed: {proc.stderr.strip()[-500:]}")
    out = json.loads(proc.stdout)
    return SwitchesTour(
        **{field: out[label] for field, label in SwitchesTour.STEPS.items()},
        cuda_matmul_bf16=out.get('cuda.matmul.fp32_precision = "bf16"'),
        mixed_read=out["reading allow_tf32 after setting fp32_precision"],
    )
