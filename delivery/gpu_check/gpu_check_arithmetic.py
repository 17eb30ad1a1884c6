"""Checks (a) to (c) and (g) of ``make gpu-check`` (``delivery/gpu_check/gpu_check.py``): the GPU's arithmetic against the
course's models of it. (a) ``tf32_rounding``: how each op rounds fp32 inputs to TF32, against the rounding modes of
:func:`amp_lessons.formats.quantize`; (b) ``lowp_matmul``: fp16 and bf16 matmuls against an fp32-accumulating
emulation; (c) ``scaled_mm``: ``torch._scaled_mm`` (fp8 e4m3) against an fp32 emulation, and ``use_fast_accum`` at
large K; (g) ``lowp_sum``: the same matmuls' summation in fp32 outputs, in fp32 ulps. Each check is a function
``check_<name>(device) -> dict``; its inputs, emulations and mismatch counters run on a CPU too
(delivery/tests/test_gpu_check.py). Importing this module makes no CUDA call."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch
from gpu_check_args import device_arg, int_arg, number_arg, tensor_arg

from amp_lessons import formats
from amp_lessons.tf32 import fp32_precision  # torch's fp32_precision switches, restored on exit


def exact_fp32(d: torch.device):
    """IEEE fp32 matmuls on ``d``'s kind of device (no TF32 on a GPU, no bf16 rounding on an AMX CPU), touching
    only that device's setting."""
    return fp32_precision(matmul="ieee") if d.type == "cuda" else fp32_precision(cpu_matmul="ieee")


TF32_MODELS = ("nearest_even", "nearest_away", "toward_zero")
"""The rounding models of fp32 -> TF32 compared with the hardware (modes of :func:`amp_lessons.formats.quantize`)."""
UNROUNDED = "fp32_unrounded"
"""The extra comparison: the fp32 input itself (what a kernel that does not use TF32 returns)."""
TF32_OPS = ("mm", "linear", "addmm", "bmm", "conv2d")
TF32_SIZES = (8, 64, 4096)
TIE_LOW_BITS = 0x1000  # the low 13 of fp32's 23 mantissa bits that TF32 drops: exactly half an ulp of TF32
_LOW_MASK = 0x1FFF


def _models(models) -> tuple[str, ...]:
    if isinstance(models, str) or not isinstance(models, Sequence) or not models:
        raise TypeError(f"models must be a non-empty sequence of rounding modes, got {models!r}")
    for m in models:
        if m not in TF32_MODELS:
            raise ValueError(f"unknown rounding model {m!r}: use {', '.join(map(repr, TF32_MODELS))}")
    return tuple(models)


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
    shape = tuple(int_arg(s, "shape entry", 1) for s in shape)
    n = math.prod(shape)
    if n > 2**28:
        raise ValueError(f"shape {shape!r} holds {n} values, more than 2**28")
    seed = int_arg(seed, "seed", 0, 2**63 - 1)
    tie_share = number_arg(tie_share, "tie_share", 0.0, 1.0)
    d = device_arg(device)
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
    x = tensor_arg(x, "x", (torch.float32,))
    return (x.contiguous().view(torch.int32) & _LOW_MASK) == TIE_LOW_BITS


def tf32_model(x: torch.Tensor, model: str) -> torch.Tensor:
    """``x`` rounded to TF32 by ``model`` (one of :data:`TF32_MODELS`), bit-exactly, as float32."""
    _models((model,))
    return formats.quantize(tensor_arg(x, "x", (torch.float32,)), "tf32", model)


def _bits(t: torch.Tensor) -> torch.Tensor:
    b = t.contiguous().view(torch.int32)
    return torch.where(t == 0, torch.zeros_like(b), b)  # +0 and -0 alike


def count_mismatches(out: torch.Tensor, x: torch.Tensor, models: Sequence[str] = TF32_MODELS) -> dict:
    """How many elements of ``out`` (what a kernel returned for the exact product ``x @ I``) differ from
    ``x`` rounded to TF32 by each model, bit for bit (signed zeros alike): ``{"elements", "ties",
    "mismatches": {model: n, UNROUNDED: n}, "tie_mismatches": {...}, "matches": [models with 0]}``.
    ``UNROUNDED`` counts the differences from ``x`` itself (0 for a kernel that does not round to TF32)."""
    out = tensor_arg(out, "out", (torch.float32,))
    x = tensor_arg(x, "x", (torch.float32,))
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
    n = int_arg(n, "n", 1, 8192)
    if side not in ("first", "second"):
        raise ValueError(f"side must be 'first' or 'second', got {side!r}")
    d = device_arg(device)
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
    d = device_arg(device)
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise TypeError(f"sizes must be a non-empty sequence of ints, got {sizes!r}")
    sizes = [int_arg(n, "size", 1, 8192) for n in sizes]
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
    x = tensor_arg(x, "x", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    f = formats.get_format(fmt)
    _, e = torch.frexp(x.double().abs())  # |x| = m * 2**e, m in [0.5, 1)
    e = torch.where(x == 0, torch.full_like(e, f.emin), (e - 1).clamp(min=f.emin))
    return torch.ldexp(torch.ones_like(x, dtype=torch.float64), (e - f.mantissa_bits))


def ulp_distance(got: torch.Tensor, ref: torch.Tensor, fmt: str) -> torch.Tensor:
    """``|got - ref|`` in ulps of ``fmt`` at ``ref`` (:func:`ulp`), as float64."""
    got = tensor_arg(got, "got", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    ref = tensor_arg(ref, "ref", (torch.float16, torch.bfloat16, torch.float32, torch.float64))
    if got.shape != ref.shape:
        raise ValueError(f"got has shape {tuple(got.shape)} but ref has shape {tuple(ref.shape)}")
    return (got.double() - ref.double()).abs() / ulp(ref, fmt)


def emulate_lowp_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of two fp16 (or two bf16) matrices as a tensor core with fp32 accumulation computes it in
    the model: every product is exact in fp32 (11 + 11 or 8 + 8 significant bits), the products are summed
    in IEEE fp32 (no TF32), and the sum is rounded once to the inputs' dtype (nearest even)."""
    a = tensor_arg(a, "a", (torch.float16, torch.bfloat16))
    b = tensor_arg(b, "b", (torch.float16, torch.bfloat16))
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
    m, k, n = int_arg(m, "m"), int_arg(k, "k"), int_arg(n, "n")
    seed = int_arg(seed, "seed", 0, 2**63 - 1)
    g = torch.Generator().manual_seed(seed)
    d = device_arg(device)
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
    d = device_arg(device)
    mn = int_arg(mn, "mn")
    _check_ks(ks)
    cases = []
    for dtype in _LOWP:
        for k in ks:
            a, b = lowp_inputs(mn, int_arg(k, "k"), mn, dtype, seed=k, device=d)
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


def fp32_out_matmul(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The GPU's fp16/bf16 product with an fp32 output (the accumulator itself, not rounded to 16 bits), and how it
    was asked for: ``torch.mm(a, b, out_dtype=torch.float32)`` where this torch has it for the device; else the
    same inputs as float32 through a TF32 matmul (fp16 and bf16 values are exact in TF32: 11 and 8 significant
    bits), said in the result."""
    try:
        return torch.mm(a, b, out_dtype=torch.float32), "torch.mm(a, b, out_dtype=torch.float32)"
    except (TypeError, RuntimeError, NotImplementedError):
        with fp32_precision(matmul="tf32"):
            return a.float() @ b.float(), "TF32 matmul of the fp16/bf16-exact inputs (mm with out_dtype unavailable)"


def sequential_fp32_sum(a: torch.Tensor, b: torch.Tensor, block: int = 1) -> torch.Tensor:
    """``a @ b`` summed in IEEE fp32 in the order k = 0, 1, 2, ... (every product exact in fp32): the model a
    lesson's "products summed in fp32" names, on the device of the inputs. ``block`` > 1 sums each block of
    ``block`` products exactly first (in fp64, rounded once to fp32), a wider accumulator's model."""
    block = int_arg(block, "block")
    acc = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32, device=a.device)
    for k0 in range(0, a.shape[1], block):
        part = a[:, k0 : k0 + block].double() @ b[k0 : k0 + block, :].double()
        acc = acc + part.float()
    return acc


def check_lowp_sum(device="cuda", ks: Sequence[int] = (256, 4096, 16384), mn: int = 256, fp32_out=fp32_out_matmul):
    """Check (g): the fp16/bf16 matmul's summation, seen in fp32 outputs (so not hidden by a rounding to 16 bits):
    the GPU's fp32-output product against a sequential fp32 sum of the exact products and against the exact
    (fp64) product rounded to fp32, in fp32 ulps (max and mean) for each dtype and K."""
    d = device_arg(device)
    mn = int_arg(mn, "mn")
    _check_ks(ks)
    cases, how = [], ""
    for dtype in _LOWP:
        for k in ks:
            a, b = lowp_inputs(mn, int_arg(k, "k"), mn, dtype, seed=k, device=d)
            got, how = fp32_out(a, b)
            exact = (a.double() @ b.double()).float()
            seq = sequential_fp32_sum(a, b)
            cases.append(
                {
                    "dtype": dtype,
                    "shape": f"{mn}x{k} @ {k}x{mn}",
                    "vs_sequential_fp32_sum": _ulp_stats(ulp_distance(got, seq, "fp32")),
                    "vs_exact_rounded_to_fp32": _ulp_stats(ulp_distance(got, exact, "fp32")),
                    "sequential_fp32_sum_vs_exact": _ulp_stats(ulp_distance(seq, exact, "fp32")),
                }
            )
    worst = {
        dt: (
            max(c["vs_exact_rounded_to_fp32"]["max_ulps"] for c in cases if c["dtype"] == dt),
            max(c["sequential_fp32_sum_vs_exact"]["max_ulps"] for c in cases if c["dtype"] == dt),
        )
        for dt in _LOWP
    }
    summary = "; ".join(
        f"{dt}: max {g:g} fp32 ulp from the exact product (a sequential fp32 sum: {s:g})"
        for dt, (g, s) in worst.items()
    )
    return {"status": "ok", "summary": summary, "fp32_output": how, "cases": cases}


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
    m, k, n = int_arg(m, "m"), int_arg(k, "k", 1, 2**20), int_arg(n, "n")
    seed = int_arg(seed, "seed", 0, 2**63 - 1)
    d = device_arg(device)
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
    a8 = tensor_arg(a8, "a8", (torch.float8_e4m3fn, torch.float8_e5m2))
    b8 = tensor_arg(b8, "b8", (torch.float8_e4m3fn, torch.float8_e5m2))
    sa = tensor_arg(scale_a, "scale_a", (torch.float32,))
    sb = tensor_arg(scale_b, "scale_b", (torch.float32,))
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
    a8 = tensor_arg(a8, "a8", (torch.float8_e4m3fn, torch.float8_e5m2))
    b8 = tensor_arg(b8, "b8", (torch.float8_e4m3fn, torch.float8_e5m2))
    sa = tensor_arg(scale_a, "scale_a", (torch.float32,))
    sb = tensor_arg(scale_b, "scale_b", (torch.float32,))
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
    d = device_arg(device)
    mn = int_arg(mn, "mn")
    _check_ks(ks)
    emulation = []
    for k in ks:
        a8, b8, sa, sb = fp8_inputs(mn, int_arg(k, "k", 16, 2**20), mn, seed=k, device=d)
        got = scaled_mm(a8, b8, sa, sb)
        emu = emulate_scaled_mm(a8, b8, sa, sb)
        emulation.append({"shape": f"{mn}x{k} @ {k}x{mn}", **_ulp_stats(ulp_distance(got, emu, "bf16"))})
    large_k = int_arg(large_k, "large_k", 16, 2**20)
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
    d = device_arg(device)
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
