"""Lesson 07's experiments: fp8 casts, the scalings that make them usable (per-tensor, delayed, per-block), their
errors on a model's tensors, ``torch._scaled_mm`` against an emulation, and the cost of the casts around an fp8
matmul. The key code (scale, cast, block scales, ``to_fp8``) is the lesson's own, from :mod:`.key_code`."""

from __future__ import annotations

import contextlib
import importlib
import math
import warnings

import torch

from .. import _validate
from .._runtime import exact_fp32, one_thread, parse_device
from .._validate import (
    allocation,
    count,
    flag,
    int_at_least,
    positive,
    real,
    selection,
    sequence,
)
from ..device import default_device, gpu_info
from ..formats import CLASSES, FloatFormat, get_format, quantize, representable_values
from ..fp16._experiments import small_batch, small_model
from ..timing import matmul_flops, time_fn
from ._checked import amax_scale, block_scales, fake_quantize, float_tensor, scale_from_amax
from ._models import Fp8Linear
from ._records import (
    MAX_DIM,
    CastCosts,
    CastStats,
    Fp8LinearErrors,
    ScaledMMComparison,
    ScalingMethod,
)
from .key_code import to_fp8

__all__ = [
    "CAST_COST_SHAPES",
    "SCALING_METHOD_BY_NAME",
    "SCALING_METHODS",
    "amax_scale",
    "blockwise_fake_quantize",
    "cast_stats",
    "fake_quantize",
    "fp8_cast_costs",
    "fp8_linear_check",
    "model_tensors",
    "scaled_mm_compare",
    "scaling_errors",
    "torch_fp8_overflow",
    "values_in",
]

BLOCK_SHAPES = {"1x32": (1, 32), "1x128": (1, 128), "128x128": (128, 128)}
"""Common block shapes: 1x32 (OCP MX formats, power-of-two scales), 1x128 (activations and
gradients) and 128x128 (weights) of recent large-model fp8 recipes (e.g. DeepSeek-V3)."""


SCALING_METHOD_BY_NAME = {
    m.name: m
    for m in (
        ScalingMethod("no scaling", "none"),
        ScalingMethod("per-tensor", "per-tensor"),
        ScalingMethod("delayed", "delayed"),
        *(ScalingMethod.blocks(*shape) for shape in BLOCK_SHAPES.values()),
    )
}


SCALING_METHODS = ("no scaling", "per-tensor", "delayed", "block 1x128", "block 128x128")


def get_scaling_method(method: str | ScalingMethod) -> ScalingMethod:
    if isinstance(method, ScalingMethod):
        return method
    if isinstance(method, str) and method in SCALING_METHOD_BY_NAME:
        return SCALING_METHOD_BY_NAME[method]
    raise ValueError(
        f"method={method!r} is not allowed: use a ScalingMethod (ScalingMethod.blocks(rows, cols) for other block "
        f"shapes) or one of {', '.join(map(repr, SCALING_METHOD_BY_NAME))}"
    )


_PROBES = (500.0, 1e5, math.inf, math.nan)


def _to_fp8(x: torch.Tensor, dtype: torch.dtype = torch.float8_e4m3fn) -> torch.Tensor:
    """``x`` clamped to the fp8 dtype's finite range, then cast (as fp8 recipes do): the same on every torch."""
    big = torch.finfo(dtype).max
    return x.clamp(-big, big).to(dtype)


def torch_fp8_overflow() -> dict:
    """What the installed torch's casts to ``float8_e4m3fn`` and ``float8_e5m2`` make of 500.0, 1e5, inf and NaN,
    measured now: ``{"float8_e4m3fn": {"500.0": 448.0, ...}, "float8_e5m2": {...}}``."""
    probe = torch.tensor(_PROBES, dtype=torch.float32)
    out = {}
    for dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        got = probe.to(dtype).float().tolist()
        out[str(dtype).removeprefix("torch.")] = {repr(p): g for p, g in zip(_PROBES, got)}
    return out


def values_in(fmt, lo: float, hi: float) -> int:
    """How many finite values of ``fmt`` (at most 16 bits) lie in ``[lo, hi)`` (zero counted once)."""
    f = get_format(fmt)
    lo, hi = real(lo, "lo"), real(hi, "hi")
    if not lo < hi:
        raise ValueError(f"need lo < hi, got lo={lo!r}, hi={hi!r}")
    v = representable_values(f, positive_only=False).double()
    return int(((v >= lo) & (v < hi)).sum())


def _block(block) -> tuple[int, int]:
    if isinstance(block, str) and block in BLOCK_SHAPES:
        return BLOCK_SHAPES[block]
    if not (isinstance(block, (tuple, list)) and len(block) == 2):
        raise ValueError(
            f"block must be a pair (rows, cols) such as (1, 128), or one of "
            f"{', '.join(map(repr, BLOCK_SHAPES))}; got {block!r}"
        )
    return int_at_least(block[0], "block rows", 1), int_at_least(block[1], "block cols", 1)


def _check_blocks(x, f, br, bc) -> tuple[torch.Tensor, FloatFormat, int, int]:
    """x, f and the blocks br x bc checked: a float matrix, a format, a zero-padded tiling within the size limit."""
    x = float_tensor(x)
    if x.dim() != 2:
        raise ValueError(f"x must be a 2-D tensor (rows x cols; see as_matrix), got shape {tuple(x.shape)}")
    if not isinstance(f, (FloatFormat, str)):
        raise TypeError(f"f must be a FloatFormat (e.g. get_format('fp8_e4m3')) or a format name, got {f!r}")
    f = get_format(f)
    br, bc = count(br, "br (block rows)", 1, MAX_DIM), count(bc, "bc (block cols)", 1, MAX_DIM)
    rows, cols = x.shape
    br, bc = max(1, min(br, rows)), max(1, min(bc, cols))  # a block larger than x is x: the same scales, no padding
    padded = (-(-rows // br) * br) * (-(-cols // bc) * bc)
    allocation(padded, f"blocks of br={br} x bc={bc} over x of shape {(rows, cols)}")
    return x, f, br, bc


def blockwise_fake_quantize(x, block=(1, 128), fmt="fp8_e4m3", *, power_of_two: bool = False):
    """Per-block amax scaling of a 2-D tensor: each ``block`` tile (rows x cols, or a name of
    :data:`BLOCK_SHAPES`) gets its own scale ``fmt.max / amax(tile)`` (1.0 for an all-zero tile), is fake-quantized
    with it and divided back. Partial tiles at the edges are allowed. Returns ``(dequantized x, scales)``, scales of
    shape ``(ceil(R/br), ceil(C/bc))``."""
    f = get_format(fmt)
    x = float_tensor(x)
    if x.dim() != 2:
        raise ValueError(
            f"blockwise_fake_quantize needs a 2-D tensor (rows x cols), got shape {tuple(x.shape)}; "
            "reshape it first, e.g. x.reshape(-1, x.shape[-1])"
        )
    br, bc = _block(block)
    if not isinstance(power_of_two, bool):
        raise TypeError(f"power_of_two must be True or False, got {power_of_two!r}")
    x, f, br, bc = _check_blocks(x, f, br, bc)
    s, blocks = block_scales(x, f, (br, bc), power_of_two)
    sb = s[:, None, :, None]
    q = quantize(blocks * sb, f) / sb
    rows, cols = x.shape
    return q.reshape(s.shape[0] * br, s.shape[1] * bc)[:rows, :cols].contiguous(), s


def block_scale_map(x: torch.Tensor, f: FloatFormat, br: int, bc: int, power_of_two: bool = False) -> torch.Tensor:
    """Each element's block scale (as :func:`blockwise_fake_quantize`'s), in x's shape."""
    x, f, br, bc = _check_blocks(x, f, br, bc)
    s, _ = block_scales(x, f, (br, bc), flag(power_of_two, "power_of_two"))
    full = s.repeat_interleave(br, 0).repeat_interleave(bc, 1)
    return full[: x.shape[0], : x.shape[1]]


def model_tensors(seed: int = 0) -> dict[str, torch.Tensor]:
    """Real 256 x 256 tensors of the middle layer of :func:`amp_lessons.fp16.small_model` after one fp32 forward
    and backward on :func:`amp_lessons.fp16.small_batch`: ``"weights"``, ``"activations"`` (its input), ``"weight
    gradients"`` and ``"activation gradients"`` (of the loss with respect to its output; mostly 1e-7 .. 1e-3)."""
    model = small_model(_validate.seed(seed))
    x, y = small_batch(seed)
    layer = model[2]
    seen = {}

    def hook(module, args, output):
        seen["activations"] = args[0].detach().clone()
        output.register_hook(lambda g: seen.__setitem__("activation gradients", g.detach().clone()))

    handle = layer.register_forward_hook(hook)
    try:
        with one_thread():
            torch.nn.functional.cross_entropy(model(x), y).backward()
    finally:
        handle.remove()
    return {
        "weights": layer.weight.detach().clone(),
        "activations": seen["activations"],
        "weight gradients": layer.weight.grad.detach().clone(),
        "activation gradients": seen["activation gradients"],
    }


def as_matrix(x, what: str = "x") -> torch.Tensor:
    """``x`` as the float32 matrix the block methods scale: 1-D or 0-D as one row, more dimensions as rows."""
    x = float_tensor(x, what)
    if x.dim() == 2:
        return x
    return x.reshape(1, -1) if x.dim() <= 1 else x.reshape(-1, x.shape[-1])


def _method_scale(method: ScalingMethod, x: torch.Tensor, f: FloatFormat, delayed_history) -> torch.Tensor | float:
    if method.scaling == "none":
        return 1.0
    if method.scaling == "per-tensor":
        return amax_scale(x, f)
    if method.scaling == "delayed":
        amax = float(x.abs().max())  # the scale of the largest earlier amax: a growing tensor saturates
        return scale_from_amax(max(amax * factor for factor in delayed_history), f)
    return block_scale_map(x, f, *method.block)


def cast_stats(x: torch.Tensor, scale, f: FloatFormat) -> CastStats:
    """The :class:`CastStats` of ``x`` cast to ``f`` with ``scale`` (a number or a per-element tensor): a non-zero
    x whose scaled value is 0 counts as flushed."""
    scaled = x * scale
    q = quantize(scaled, f) / scale
    n = max(x.numel(), 1)
    norm = float(x.double().norm())
    err = float((q.double() - x.double()).norm()) / norm if norm > 0 else 0.0
    if not math.isfinite(err):
        err = math.inf
    codes = f.classify(scaled)
    codes[(x != 0) & (scaled == 0)] = CLASSES.index("flushed")  # the scaling itself rounded it to zero
    counts = torch.bincount(codes.reshape(-1), minlength=len(CLASSES)).tolist()
    share = {c: k / n for c, k in zip(CLASSES, counts)}
    return CastStats(f.name, err, share["flushed"], share["saturated"], share["inf"])


def scaling_errors(
    tensors: dict, fmt="fp8_e4m3", methods=SCALING_METHODS, *, delayed_history=(0.8, 0.85, 0.9, 0.95)
) -> list[dict]:
    """The error of fp8 casting with each scaling method (names of :data:`SCALING_METHOD_BY_NAME` or
    :class:`ScalingMethod` records, one or a list) on each tensor of the dict ``tensors``.

    Rows ``{"tensor", "method", "fmt", "relative error", "flushed", "saturated", "inf"}``: ``||q - x|| / ||x||`` and
    the shares of values flushed to 0, saturated (e4m3's overflow) and overflowed to inf (e5m2's). "delayed" takes
    its scale from earlier steps whose amaxes were ``delayed_history`` times this tensor's (a growing tensor)."""
    f = get_format(fmt)
    if not isinstance(tensors, dict) or not tensors:
        raise TypeError("tensors must be a non-empty dict name -> tensor (e.g. model_tensors())")
    if isinstance(methods, (str, ScalingMethod)):
        methods = [methods]
    methods = [get_scaling_method(m) for m in selection(methods, "methods", "method names or ScalingMethods")]
    if not methods:
        raise ValueError("methods is empty")
    for name, t in tensors.items():
        if isinstance(t, torch.Tensor) and t.numel() == 0:
            raise ValueError(
                f"tensors[{name!r}] is empty (shape {tuple(t.shape)}): there are no values to cast; give tensors with at least one value"
            )

    history = sequence(delayed_history, "delayed_history", "positive factors of the tensor's amax")
    if not history or not all(_validate.is_real(h, 0, math.inf, open_low=True, open_high=True) for h in history):
        raise ValueError(f"delayed_history={delayed_history!r} is not allowed: give one or more positive finite "
                         "numbers, earlier steps' amaxes as factors of the tensor's amax (e.g. (0.8, 0.9))")  # fmt: skip
    xs = {name: as_matrix(t, f"tensors[{name!r}]") for name, t in tensors.items()}
    for name, x in xs.items():
        if not bool(torch.isfinite(x).all()):
            raise ValueError(f"tensors[{name!r}] holds inf or NaN: no fp8 scale fits it (it must hold finite values)")
    rows = []
    with one_thread():
        for name, x in xs.items():
            for m in methods:
                c = cast_stats(x, _method_scale(m, x, f, history), f)
                rows.append(
                    {"tensor": name, "method": m.name, "fmt": f.name, "relative error": c.relative_error,
                     "flushed": c.flushed, "saturated": c.saturated, "inf": c.inf}
                )  # fmt: skip
    return rows


def _rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return float((a.double() - ref).norm() / ref.norm())


def _scale_tensor(inv: float, device: torch.device) -> torch.Tensor:
    return torch.tensor(inv, dtype=torch.float32, device=device)


def _scaled_mm(a8, b8, inv_a, inv_b, out_dtype):
    d = a8.device
    return torch._scaled_mm(
        a8,
        b8,
        scale_a=inv_a if isinstance(inv_a, torch.Tensor) else _scale_tensor(inv_a, d),
        scale_b=inv_b if isinstance(inv_b, torch.Tensor) else _scale_tensor(inv_b, d),
        out_dtype=out_dtype,
    )


def _gpu_has_fp8(d: torch.device) -> bool:
    """An NVIDIA GPU with fp8 tensor cores (as the device report classifies it)."""
    if d.type != "cuda":
        return False
    g = gpu_info()
    return g is not None and g.fp8


def _resolve_device(device) -> torch.device:
    return default_device() if device is None else parse_device(device)


def scaled_mm_compare(
    m: int = 256,
    k: int = 512,
    n: int = 256,
    *,
    device=None,
    seed: int = 0,
    time_it: bool | None = None,
    repeats: int = 10,
) -> ScaledMMComparison:
    """One ``(m x k) @ (k x n)`` product of random-normal matrices four ways against float64: fp32, bf16, fp8 e4m3
    with per-tensor scales through ``torch._scaled_mm`` (``scale_a``/``scale_b`` are the *inverse* scales, the
    second operand column-major), and the same emulated (:func:`fake_quantize` of each input, an fp32 matmul).
    ``device`` None: the machine's default device (a CUDA GPU where there is one).

    Returns a :class:`ScaledMMComparison`: relative errors, the largest difference between ``_scaled_mm`` and the
    emulation (on a CPU only the order of the fp32 sums differs; a GPU's fp8 accumulation is not IEEE fp32), the
    scales, why ``_scaled_mm`` did not run if it did not; on a GPU with fp8 tensor cores (or ``time_it=True``) also
    median times and TFLOP/s of the fp8 and bf16 matmuls."""

    d = _resolve_device(device)
    m, k, n = (count(v, name, 1, MAX_DIM) for v, name in ((m, "m"), (k, "k"), (n, "n")))
    allocation(max(m * k, k * n, m * n) * 2, f"a {m}x{k} @ {k}x{n} product in float64")
    g = torch.Generator().manual_seed(_validate.seed(seed))
    if time_it is not None:
        flag(time_it, "time_it")
    count(repeats, "repeats", 1, 10_000, "timed calls of each matmul")
    a = torch.randn(m, k, generator=g)
    b = torch.randn(k, n, generator=g)
    ref = a.double() @ b.double()
    sa, sb = amax_scale(a), amax_scale(b)
    out = {"shape": f"{m}x{k} @ {k}x{n}", "device": str(d), "scale_a": sa, "scale_b": sb}
    a, b = a.to(d), b.to(d)
    with exact_fp32(d):
        fp32 = (a @ b).cpu()
        emulated = fake_quantize(a.cpu(), "fp8_e4m3", sa) @ fake_quantize(b.cpu(), "fp8_e4m3", sb)
    bf16 = (a.bfloat16() @ b.bfloat16()).float().cpu()
    out["fp32_rel_error"] = _rel(fp32, ref)
    out["bf16_rel_error"] = _rel(bf16, ref)
    out["fp8_emulated_rel_error"] = _rel(emulated, ref)
    a8 = _to_fp8(a * sa)
    b8 = _to_fp8(b * sb).t().contiguous().t()  # _scaled_mm wants b column-major
    try:
        fp8 = _scaled_mm(a8, b8, 1 / sa, 1 / sb, torch.float32).cpu()
    except (RuntimeError, NotImplementedError) as exc:
        out["skipped"] = f"torch._scaled_mm did not run here: {str(exc).splitlines()[0][:160]}"
        fp8 = None
    else:
        out["fp8_rel_error"] = _rel(fp8, ref)
        diff = float((fp8 - emulated).abs().max())
        out["fp8_vs_emulation_max_abs_diff"] = diff
        out["fp8_vs_emulation_rel_diff"] = diff / float(emulated.abs().max())
    if time_it is None:
        time_it = _gpu_has_fp8(d)
    if time_it and fp8 is not None:
        flops = matmul_flops(m, k, n)
        ab, bb = a.bfloat16(), b.bfloat16()
        warm = 3 if d.type == "cuda" else 1
        # the scale tensors are made once, outside the timed call: host-to-GPU copies are not the matmul's work
        inv_a, inv_b = _scale_tensor(1 / sa, d), _scale_tensor(1 / sb, d)
        t8 = time_fn(
            lambda: _scaled_mm(a8, b8, inv_a, inv_b, torch.bfloat16),
            device=d.type,
            warmup=warm,
            repeats=repeats,
            flops=flops,
        )
        t16 = time_fn(lambda: ab @ bb, device=d.type, warmup=warm, repeats=repeats, flops=flops)
        out.update(
            {
                "fp8_time_s": t8.median_s,
                "bf16_time_s": t16.median_s,
                "fp8_tflops": flops / t8.median_s / 1e12,
                "bf16_tflops": flops / t16.median_s / 1e12,
                "fp8_speedup_over_bf16": t16.median_s / t8.median_s,
            }
        )
    return ScaledMMComparison(**out)


def fp8_linear_check(
    seed: int = 0, *, batch: int = 64, in_features: int = 256, out_features: int = 128, grad_scale: float = 1e-4
) -> Fp8LinearErrors:
    """One forward and backward of :class:`Fp8Linear` against an fp32 ``nn.Linear`` with the same weights, on one
    random input and output gradient (random normal times ``grad_scale``). Returns the :class:`Fp8LinearErrors`."""

    g = torch.Generator().manual_seed(_validate.seed(seed))
    in_features = count(in_features, "in_features", 1, MAX_DIM)
    out_features = count(out_features, "out_features", 1, MAX_DIM)
    batch = count(batch, "batch", 1, MAX_DIM)
    allocation(max(in_features, batch) * max(out_features, in_features), "fp8_linear_check's tensors")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        ref = torch.nn.Linear(in_features, out_features)
    layer = Fp8Linear.from_linear(ref)
    x = torch.randn(batch, in_features, generator=g)
    dy = torch.randn(batch, out_features, generator=g) * positive(grad_scale, "grad_scale")
    results = {}
    with one_thread():  # noqa: SIM117
        for name, mod in (("fp32", ref), ("fp8", layer)):
            xi = x.clone().requires_grad_(True)
            y = mod(xi)
            y.backward(dy)
            results[name] = (y.detach(), xi.grad, mod.weight.grad, mod.bias.grad)
    return Fp8LinearErrors(*(_rel(b, a.double()) for a, b in zip(results["fp32"], results["fp8"])))


CAST_COST_SHAPES = ((256, 512, 256), (8192, 8192, 8192))

_LARGE_FLOPS = 2 * 2048**3  # above this a product is "large": timed on a GPU with fp8 tensor cores only


def _cast_cost_plan(d: torch.device, shapes, compiled) -> tuple[list, dict, bool]:
    """(shapes to time, {shape or (shape, variant): why skipped}, whether to time the compiled casts) on ``d``."""
    fp8_gpu = _gpu_has_fp8(d)
    todo, skipped = [], {}
    for m, k, n in shapes:
        name = f"{m}x{k}x{n}"
        if matmul_flops(m, k, n) > _LARGE_FLOPS and not fp8_gpu:
            where = "a CPU" if d.type == "cpu" else f"{d} (no fp8 tensor cores)"
            skipped[name] = (
                f"skipped on {where}: without fp8 tensor cores a product this large takes seconds to minutes per "
                "call, and its speed says nothing about fp8 hardware (see the GPU reference)"
            )
        else:
            todo.append((name, m, k, n))
    if compiled is None:
        compiled = d.type == "cuda"
        if not compiled:
            for name, *_ in todo:
                skipped[name, "fp8+compiled casts"] = (
                    "skipped on the CPU: torch.compile first generates and builds C++ code for the casts, which "
                    "takes seconds here, longer than a lesson's cell may take; fp8_cast_costs(compiled=True) times it"
                )
    return todo, skipped, compiled


def _fp8_mm(a8, sa, w8, sw):
    return torch._scaled_mm(a8, w8.t(), scale_a=sa, scale_b=sw, out_dtype=torch.bfloat16)


def _cast_both(a, w):
    return (*to_fp8(a), *to_fp8(w))


def fp8_cast_costs(
    device=None, *, shapes=CAST_COST_SHAPES, compiled: bool | None = None, repeats: int = 5, calls: int | None = None,
    seed: int = 0,
) -> CastCosts:  # fmt: skip
    """What an fp8 matmul ``(M x K) @ (K x N)`` costs with the casts that feed it, on ``device`` (None: the default
    device), at each ``(M, K, N)`` of ``shapes``: a bf16 matmul; the fp8 kernel alone (``torch._scaled_mm`` on inputs
    cast before timing); the same with the lesson's eager ``to_fp8`` of both inputs inside the timed call; and with
    both casts compiled by ``torch.compile`` (``compiled``: None times it on a GPU only, where compiling is quick).

    One timer around blocks of ``calls`` back-to-back calls (None: 10 on a GPU, 2 on the CPU), per call, the median
    of ``repeats`` blocks. Products above 2 x 2048^3 flops run only on a GPU with fp8 tensor cores; a skipped row
    says why. Returns a :class:`CastCosts`."""
    d = _resolve_device(device)
    checked = []
    for i, s in enumerate(selection(shapes, "shapes", "(M, K, N) triples")):
        if not (isinstance(s, (tuple, list)) and len(s) == 3):
            raise ValueError(f"shapes[{i}]={s!r} is not allowed: each shape is a triple (M, K, N) of positive integers")
        checked.append(tuple(count(v, f"shapes[{i}][{j}]", 1, MAX_DIM) for j, v in enumerate(s)))
    shapes = checked
    if not shapes:
        raise ValueError("shapes is empty: give at least one (M, K, N)")
    if compiled is not None:
        flag(compiled, "compiled")
    repeats = count(repeats, "repeats", 1, 1000, "timed blocks of calls")
    calls = (10 if d.type == "cuda" else 2) if calls is None else count(calls, "calls", 1, 1000, "calls per block")
    todo, skipped, compiled = _cast_cost_plan(d, shapes, compiled)
    for _, m, k, n in todo:
        allocation(max(m * k, n * k, m * n), f"a {m}x{k} @ {k}x{n} product")
    g = torch.Generator().manual_seed(_validate.seed(seed))
    times, timer = {}, None
    with one_thread() if d.type == "cpu" else contextlib.nullcontext():
        for name, m, k, n in todo:
            a = torch.randn(m, k, generator=g).to(d, torch.bfloat16)
            w = torch.randn(n, k, generator=g).to(d, torch.bfloat16)
            cast = _cast_both(a, w)
            variants = {
                "bf16": lambda a=a, w=w: a @ w.t(),
                "fp8": lambda cast=cast: _fp8_mm(*cast),
                "fp8+casts": lambda a=a, w=w: _fp8_mm(*_cast_both(a, w)),
            }
            if compiled:
                with warnings.catch_warnings():
                    # importing Inductor warns that TorchScript is deprecated: torch's own code, not the caller's
                    warnings.simplefilter("ignore", DeprecationWarning)
                    importlib.import_module("torch._inductor.compile_fx")
                fused = torch.compile(_cast_both, dynamic=False)
                variants["fp8+compiled casts"] = lambda a=a, w=w, fused=fused: _fp8_mm(*fused(a, w))
            try:
                _fp8_mm(*cast)
            except (RuntimeError, NotImplementedError) as exc:
                skipped[name] = f"torch._scaled_mm did not run on {d}: {str(exc).splitlines()[0][:160]}"
                continue
            for key, fn in variants.items():
                try:
                    t = time_fn(lambda fn=fn: [fn() for _ in range(calls)], device=d.type, warmup=2, repeats=repeats)
                except Exception as exc:  # noqa: BLE001 - torch.compile's failures (no C++ compiler, no Triton)
                    if key != "fp8+compiled casts":
                        raise
                    skipped[name, key] = f"torch.compile failed on {d}: {str(exc).strip().splitlines()[0][:160]}"
                    continue
                times[name, key] = t.median_s / calls
                timer = timer or t.method
    method = timer or ("cuda events" if d.type == "cuda" else "perf_counter")
    timer_text = f"{method} around {calls} back-to-back calls, per call, median of {repeats}"
    return CastCosts(str(d), timer_text, times, skipped)
