"""Lesson 10's experiments: MX and NVFP4 block scales, fp8 recipes and fp4 quantizers side by side, stochastic rounding
and Kahan-compensated bf16 updates, emulated bit-exactly in float32 on the formats engine. The rules follow:

- OCP Microscaling Formats (MX) v1.0, section 6.3: blocks of 32 elements share an E8M0 scale
  ``X = 2**(floor(log2(amax)) - emax_elem)``; elements beyond the element format's max saturate
  (https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf).
- The round-up rule ("RCEIL") of cuBLAS for MXFP8: ``X = 2**ceil(log2(amax / max_elem))``
  (https://docs.nvidia.com/cuda/cublas/#d-block-quantization), as torchao's ``to_mx`` computes it
  (https://github.com/pytorch/ao/blob/main/torchao/prototype/mx_formats/mx_tensor.py).
- NVFP4: blocks of 16 fp4 e2m1 elements, an fp8 e4m3 scale per block and an fp32 scale per tensor,
  ``global = amax / (448 * 6)``, as torchao's ``nvfp4_quantize``
  (https://github.com/pytorch/ao/blob/main/torchao/prototype/mx_formats/nvfp4_tensor.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch

from .. import _validate
from .._runtime import Progress
from ..formats import get_format, quantize
from ..fp8 import _experiments as fp8
from ._records import BlockQuantized, LowPrecisionRun, RecipeRow, RecipeStats, RuleClipping, TinyUpdates
from .key_code import MX_ELEMENTS, floor_shared_exponent, mx_block_quantize, round_to_element

__all__ = [
    "RECIPE_BY_NAME",
    "SCALE_RULES",
    "SPIKE_STEP",
    "STEPS",
    "TENSOR_KINDS",
    "UPDATE_METHODS",
    "Recipe",
    "kahan_add",
    "mx_quantize",
    "mx_scale_exponents",
    "nvfp4_quantize",
    "recipe_run",
    "recipe_stats",
    "recipe_table",
    "recipe_tensor",
    "scale_rule_clipping",
    "stochastic_round",
    "tiny_updates",
    "train_low_precision",
]

SCALE_RULES = ("floor", "rceil")
MX_ELEMENT_FORMATS = {
    "mxfp8": "fp8_e4m3",
    "mxfp8_e5m2": "fp8_e5m2",
    "mxfp6": "fp6_e2m3",
    "mxfp6_e3m2": "fp6_e3m2",
    "mxfp4": "fp4_e2m1",
}
MAX_ELEMENTS = 1 << 24  # the largest tensor these functions accept (a typo must not hang a kernel)
_E8M0 = get_format("e8m0")
_E8M0_BIAS = _E8M0.bias


def _tensor(x, what: str = "x") -> torch.Tensor:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dtype == torch.float64:
        raise TypeError(f"{what} must be a float32 (or narrower) torch.Tensor, got {type(x).__name__}")
    _validate.count(x.numel(), f"{what}.numel()", 0, MAX_ELEMENTS, "elements")
    return x.float()


def _blocks(x: torch.Tensor, block: int, what: str = "x") -> torch.Tensor:
    if x.dim() == 0 or x.shape[-1] % block:
        raise ValueError(
            f"{what} of shape {tuple(x.shape)}: its last dimension must be a multiple of the block {block}"
        )
    return x.reshape(*x.shape[:-1], x.shape[-1] // block, block)


def _choice(v, options, what: str):
    if v not in options:
        raise ValueError(f"{what}={v!r} is not allowed: use one of {', '.join(map(repr, options))}")
    return v


# --- e8m0 scales ----------------------------------------------------------------------------------


def e8m0_round_up(x: torch.Tensor) -> torch.Tensor:
    """The e8m0 code (0..255 as int32) of the smallest power of two >= ``x`` (PTX's ``cvt.rp.satfinite.ue8m0x2.f32``):
    non-finite -> 255 (NaN); at or below 2**-127 (zero too) -> 0."""
    bits = _tensor(x).view(torch.int32)
    e = (bits >> 23) & 0xFF
    m = bits & 0x7FFFFF
    up = torch.where(e == 0, m > 0x400000, m != 0)  # a float32 subnormal: code 0 is 2**-127 (mantissa 0x400000)
    code = (e + up.int()).clamp_(max=255)
    return torch.where(torch.isfinite(x), code, torch.full_like(code, 255))


def mx_scale_exponents(amax: torch.Tensor, element_format="fp8_e4m3", rule: str = "floor") -> torch.Tensor:
    """The unbiased e8m0 exponent ``k`` (int32) of each block's scale ``2**k`` from its amax: ``"floor"``
    ``k = floor(log2(amax)) - emax_elem`` (the largest element may pass the max and saturate) or ``"rceil"``
    ``k = ceil(log2(amax / max_elem))`` (nothing saturates). Clamped to -127..127; a non-finite amax gives 128."""
    f = _mx_element(element_format)
    _choice(rule, SCALE_RULES, "rule")
    amax = _tensor(amax, "amax")
    if bool((amax < 0).any()):
        raise ValueError("amax must hold absolute maxima (values >= 0, or inf/NaN), got a negative value")
    return _RULES[rule](amax, f.name).int()


def _mx_element(element_format):
    f = get_format(element_format, what="element_format")
    if f.name not in MX_ELEMENTS:
        raise ValueError(f"element_format={f.name!r} is not an MX element format: use one of {', '.join(MX_ELEMENTS)}")
    return f


def _rceil_shared_exponent(amax: torch.Tensor, element_format: str) -> torch.Tensor:
    k = e8m0_round_up(amax * (1.0 / MX_ELEMENTS[element_format][3])) - _E8M0_BIAS
    k = k.clamp(-_E8M0_BIAS, _E8M0_BIAS)
    return torch.where(torch.isfinite(amax), k, torch.full_like(k, _E8M0_BIAS + 1))


_RULES = {"floor": floor_shared_exponent, "rceil": _rceil_shared_exponent}


def mx_quantize(x, element_format="fp8_e4m3", rule: str = "floor", block: int = 32) -> BlockQuantized:
    """An MX block format: the last dimension in blocks of ``block`` (32 in OCP MX v1.0) sharing an e8m0 scale
    ``2**k`` chosen by ``rule`` ("floor" or "rceil"); elements ``x * 2**-k`` rounded to nearest-even in
    ``element_format`` with saturation (MXFP8: fp8_e4m3; MXFP6: fp6_e2m3; MXFP4: fp4_e2m1). Returns a
    :class:`BlockQuantized`."""
    f = _mx_element(element_format)
    _choice(rule, SCALE_RULES, "rule")
    x = _tensor(x)
    block = _validate.count(block, "block", 1, 4096)
    _blocks(x, block)
    values, elements, k, saturated = mx_block_quantize(x, f.name, _RULES[rule], block)
    k = k.int()
    scale = torch.where(k == 128, torch.full(k.shape, math.nan), torch.ldexp(torch.ones(k.shape), k.float()))
    return BlockQuantized(values, elements, scale, k + _E8M0_BIAS, saturated, f.name, block)


def nvfp4_quantize(x, global_amax: float | None = None, block: int = 16) -> BlockQuantized:
    """NVFP4: blocks of 16 fp4 e2m1 elements, an e4m3 scale per block and one float32 global scale.

    ``global = amax(x) / (448 * 6)`` (or from ``global_amax``, a calibrated amax); each block's scale
    ``amax(block) / 6 / global`` is clamped to e4m3's [2**-6, 448] and rounded to e4m3; elements are
    ``x * ((1 / global) / s_e4m3)`` rounded to nearest-even e2m1 with saturation at +-6, following torchao's
    ``nvfp4_quantize``. Returns a :class:`BlockQuantized`."""
    e4m3, e2m1 = get_format("fp8_e4m3"), get_format("fp4_e2m1")
    x = _tensor(x)
    block = _validate.count(block, "block", 1, 4096)
    if global_amax is None:
        amax = float(x.abs().max()) if x.numel() else 0.0
        if not math.isfinite(amax):
            raise ValueError(
                f"x holds {amax} (its largest magnitude), so NVFP4's global scale amax / (448 * 6) is not finite: "
                "x must be finite, or pass a calibrated global_amax"
            )
    else:
        amax = _validate.real(global_amax, "global_amax")
        if not math.isfinite(amax) or amax <= 0:
            raise ValueError(
                f"global_amax={global_amax!r} is not allowed: a calibrated amax, a finite number > 0 (or None: "
                "the largest magnitude of x)"
            )
    g = torch.tensor(amax, dtype=torch.float32) / (e4m3.max * e2m1.max)
    if float(g) == 0:
        g = torch.tensor(1.0)  # an all-zero tensor: any global scale works
    xb = _blocks(x, block)
    block_scale = xb.abs().amax(-1, keepdim=True) / e2m1.max
    s8 = quantize((block_scale / g).clamp(min=e4m3.smallest_normal, max=e4m3.max), e4m3)
    scaled = xb * ((1.0 / g) / s8)
    elements, clipped = round_to_element(scaled, e2m1.name)
    scale = s8 * g
    return BlockQuantized(
        (elements * scale).reshape(x.shape),
        elements.reshape(x.shape),
        scale.squeeze(-1),
        s8.squeeze(-1),
        clipped.reshape(x.shape),
        e2m1.name,
        block,
        float(g),
    )


def scale_rule_clipping(x, element_format="fp8_e4m3", block: int = 32) -> dict[str, RuleClipping]:
    """How often each scale rule clips: ``"floor"`` and ``"rceil"`` -> its :class:`RuleClipping` (the fraction of
    blocks with a saturated value, of values saturated, and the SNR in dB)."""
    x = _tensor(x)
    if not x.numel():
        raise ValueError(
            f"x is empty (shape {tuple(x.shape)}): it has no block whose saturation could be counted; give a tensor "
            "whose last dimension holds whole blocks"
        )
    out = {}
    for rule in SCALE_RULES:
        q = mx_quantize(x, element_format, rule, block)
        clipped_blocks = _blocks(q.clipped, block).any(-1)
        out[rule] = RuleClipping(
            rule=rule,
            blocks_clipped=float(clipped_blocks.double().mean()),
            values_clipped=float(q.clipped.double().mean()),
            snr_db=_snr_db(x, q.values),
        )
    return out


# --- recipes side by side ---------------------------------------------------------------------------

TENSOR_KINDS = ("activations", "gradient", "weights")
STEPS = 32  # the recipe tensors' training steps
SPIKE_STEP = 20  # the step at which the gradient's maximum jumps


@dataclass(frozen=True)
class Recipe:
    """One way to store a tensor in 8 bits or fewer. The fp8 entries are scaling recipes; the fp4 entries ("mx" with
    fp4 elements, "nvfp4") are the formats' quantizers alone, not fp4 *training* recipes, which add stochastic
    rounding, 16x16 weight blocks and a random Hadamard transform (https://arxiv.org/abs/2509.25149).

    ``scaling``: "delayed" (an amax history of ``history`` steps), "current", "row-wise", "block", "mx" (e8m0
    scales by ``rule``) or "nvfp4"; ``block`` the (rows, columns) sharing one scale."""

    name: str
    scaling: str
    element_format: str = "fp8_e4m3"
    block: tuple[int, int] | None = None
    history: int | None = None
    rule: str | None = None

    @property
    def bits_per_value(self) -> float:
        """The element's bits, plus an 8-bit block scale shared by the block for "mx" and "nvfp4"."""
        bits = get_format(self.element_format).bits
        if self.scaling in ("mx", "nvfp4"):
            return bits + 8 / (self.block[0] * self.block[1])
        return float(bits)


RECIPE_BY_NAME = {
    r.name: r
    for r in (
        Recipe("per-tensor delayed (history 1)", "delayed", history=1),
        Recipe("per-tensor delayed (history 16)", "delayed", history=16),
        Recipe("per-tensor delayed (history 1024)", "delayed", history=1024),
        Recipe("per-tensor current", "current"),
        Recipe("per-tensor current (e5m2)", "current", "fp8_e5m2"),
        Recipe("row-wise", "row-wise"),
        Recipe("block 1x128", "block", block=(1, 128)),
        Recipe("block 128x128", "block", block=(128, 128)),
        Recipe("MXFP8 (e4m3, floor)", "mx", block=(1, 32), rule="floor"),
        Recipe("MXFP8 (e4m3, rceil)", "mx", block=(1, 32), rule="rceil"),
        Recipe("MXFP4 (floor)", "mx", "fp4_e2m1", block=(1, 32), rule="floor"),
        Recipe("MXFP4 (rceil)", "mx", "fp4_e2m1", block=(1, 32), rule="rceil"),
        Recipe("NVFP4", "nvfp4", "fp4_e2m1", block=(1, 16)),
    )
}
RECIPES = tuple(RECIPE_BY_NAME)


def get_recipe(recipe: str | Recipe) -> Recipe:
    if isinstance(recipe, Recipe):
        return recipe
    if isinstance(recipe, str) and recipe in RECIPE_BY_NAME:
        return RECIPE_BY_NAME[recipe]
    raise ValueError(f"recipe={recipe!r} is not allowed: use a Recipe or one of {', '.join(map(repr, RECIPES))}")


def recipe_tensor(kind: str, step: int = SPIKE_STEP) -> torch.Tensor:
    """The recipe comparison's tensors (256 x 512, drawn in float64 from a seed that depends on the kind and
    the step, then rounded to float32: the same values on every machine):

    - ``"activations"``: normal values with 4 outlier channels (columns) 50x larger, as in large language
      models' hidden states (Dettmers et al., https://arxiv.org/abs/2208.07339);
    - ``"gradient"``: normal values of scale 1e-4 (a weight gradient); at step ``SPIKE_STEP`` a few
      entries jump to 1000x the usual maximum (a loss spike), which a scale from earlier steps cannot fit;
    - ``"weights"``: normal values of standard deviation 0.02 (a common initialisation)."""
    _choice(kind, TENSOR_KINDS, "kind")
    step = _validate.count(step, "step", 0, STEPS - 1)
    g = torch.Generator().manual_seed(1000 * TENSOR_KINDS.index(kind) + step)
    x = torch.randn(256, 512, dtype=torch.float64, generator=g)
    if kind == "activations":
        x[:, [7, 100, 300, 411]] *= 50.0
    elif kind == "gradient":
        x *= 1e-4
        if step == SPIKE_STEP:
            x[3, :4] = x.abs().max() * 1000.0
    else:
        x *= 0.02
    return x.float()


@lru_cache(maxsize=None)
def _amax(kind: str, step: int) -> float:
    return float(recipe_tensor(kind, step).abs().max())


def _fp8_scaled(x: torch.Tensor, scale, fmt: str = "fp8_e4m3") -> tuple[torch.Tensor, torch.Tensor]:
    """x stored in fp8 with ``scale``: the dequantized values and the mask of those saturated."""
    return fp8.fake_quantize(x, fmt, scale), round_to_element(x * scale, fmt)[1]


def _delayed(r: Recipe, x: torch.Tensor, kind: str, step: int):
    past = [_amax(kind, s) for s in range(max(0, step - r.history), step)]  # the last `history` amaxes
    amax = max(past) if past else float(x.abs().max())  # step 0: no history yet, the current amax
    return _fp8_scaled(x, fp8.amax_scale(torch.tensor([amax]), r.element_format), r.element_format)


def _current(r: Recipe, x: torch.Tensor, kind: str, step: int):
    return _fp8_scaled(x, fp8.amax_scale(x, r.element_format), r.element_format)


def _row_wise(r: Recipe, x: torch.Tensor, kind: str, step: int):
    amax = x.abs().amax(1, keepdim=True).double()
    scale = torch.where(amax == 0, torch.ones_like(amax), get_format(r.element_format).max / amax).float()
    return _fp8_scaled(x, scale, r.element_format)


def _block(r: Recipe, x: torch.Tensor, kind: str, step: int):
    return _fp8_scaled(x, fp8.block_scale_map(x, get_format(r.element_format), *r.block), r.element_format)


def _mx(r: Recipe, x: torch.Tensor, kind: str, step: int):
    q = mx_quantize(x, r.element_format, r.rule, r.block[1])
    return q.values, q.clipped


def _nvfp4(r: Recipe, x: torch.Tensor, kind: str, step: int):
    q = nvfp4_quantize(x, block=r.block[1])
    return q.values, q.clipped


_QUANTIZERS = {"delayed": _delayed, "current": _current, "row-wise": _row_wise, "block": _block, "mx": _mx,
               "nvfp4": _nvfp4}  # fmt: skip


def recipe_run(
    recipe: str | Recipe, kind: str, step: int = SPIKE_STEP
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(x, x as the recipe stores it (dequantized), saturated)`` for one tensor at one step. Delayed recipes scale
    with the largest amax of the previous ``history`` steps (Transformer Engine's "max" algorithm,
    https://docs.nvidia.com/deeplearning/transformer-engine/user-guide/api/common.html)."""
    r, x = get_recipe(recipe), recipe_tensor(kind, step)
    return (x, *_QUANTIZERS[r.scaling](r, x, kind, step))


def _snr_db(x: torch.Tensor, q: torch.Tensor) -> float:
    xd, qd = x.double(), q.double()
    noise = float(((qd - xd) ** 2).sum())
    signal = float((xd**2).sum())
    return math.inf if noise == 0 else 10 * math.log10(signal / noise)


def recipe_stats(x: torch.Tensor, q: torch.Tensor, saturated: torch.Tensor | None = None) -> RecipeStats:
    """The :class:`RecipeStats` of ``q``, ``x`` as a recipe stored it: SNR (dB), the share of non-zero values
    flushed, the share of ``saturated`` (NaN without it: x and q cannot tell it) and the signed bias."""
    xd, qd = x.double(), q.double()
    nz = xd != 0
    err = qd - xd
    return RecipeStats(
        snr_db=_snr_db(x, q),
        flushed=float(((qd == 0) & nz).double().sum() / nz.double().sum().clamp(min=1)),
        saturated=math.nan if saturated is None else float(saturated.double().mean()),
        bias=float(err.sum() / xd.abs().sum().clamp(min=1e-300)),
    )


def recipe_table(kind: str, step: int = SPIKE_STEP, recipes=RECIPES, *, progress: bool = False) -> list[RecipeRow]:
    """One :class:`RecipeRow` per recipe of ``recipes`` (names of :data:`RECIPES`) for tensor ``kind`` at ``step``:
    its name, bits per value, SNR, shares flushed and saturated, bias. ``progress``: a progress bar."""
    if not _validate.sequence(recipes, "recipes", "recipe names"):
        raise ValueError(f"recipes={recipes!r} is not allowed: name at least one of {', '.join(map(repr, RECIPES))}")
    recipes = [get_recipe(r) for r in recipes]
    progress = _validate.flag(progress, "progress")
    rows = []
    for r in Progress(recipes, desc=f"{kind} recipes", disable=not progress):
        x, q, saturated = recipe_run(r, kind, step)
        st = recipe_stats(x, q, saturated)
        rows.append(RecipeRow(r.name, r.bits_per_value, st.snr_db, st.flushed, st.saturated, st.bias))
    return rows


# --- updates below bf16's resolution -----------------------------------------------------------------

UPDATE_METHODS = ("round to nearest", "stochastic rounding", "Kahan", "fp32 master")


def stochastic_round(
    x, fmt="bf16", generator: torch.Generator | None = None, *, noise: torch.Tensor | None = None
) -> torch.Tensor:
    """Round each value of ``x`` to one of its two neighbours in ``fmt``, the one away from zero with probability
    (distance from the one toward zero) / (gap between them): unbiased, ``E[SR(x)] = x``. Seed ``generator`` for
    repeatable draws. For bf16 the rounding adds a uniform integer in [0, 2**16) to the float32 bits and clears the
    16 low bits; ``noise`` (bf16 only: an int32 tensor of x's shape) gives those integers."""
    f = get_format(fmt)
    x = _tensor(x)
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(
            f"generator={generator!r} is not allowed: a torch.Generator (torch.Generator().manual_seed(0) for "
            f"repeatable draws) or None (torch's default generator), got {type(generator).__name__}"
        )
    if noise is not None:
        if f.name != "bf16":
            raise ValueError(f"noise= works for fmt='bf16' only (the rounding on float32's bits), got fmt={fmt!r}")
        if not isinstance(noise, torch.Tensor) or noise.dtype != torch.int32 or noise.shape != x.shape:
            raise ValueError(
                f"noise must be an int32 tensor of x's shape {tuple(x.shape)}, got "
                f"{type(noise).__name__ if not isinstance(noise, torch.Tensor) else (noise.dtype, tuple(noise.shape))}"
            )
        if noise.numel() and not (int(noise.min()) >= 0 and int(noise.max()) < 1 << 16):
            raise ValueError(f"noise must hold integers in [0, 2**16), got {int(noise.min())} to {int(noise.max())}")
        return _sr_bf16_bits(x.to(torch.float32), noise)
    if f.name == "bf16":
        return _sr_bf16_bits(x, torch.randint(0, 1 << 16, x.shape, generator=generator, dtype=torch.int32))
    down = quantize(x, f, "toward_zero")
    a = down.abs()
    # the spacing at `down`: 2**(exponent - m) for normals, the subnormal spacing below
    exp = torch.frexp(torch.where(a >= f.smallest_normal, a, torch.full_like(a, f.smallest_normal)))[1] - 1
    gap = torch.ldexp(torch.ones_like(a), (exp - f.mantissa_bits).float())
    p = (x - down).abs() / gap
    u = torch.rand(x.shape, generator=generator)
    up = torch.where(u < p, gap, torch.zeros_like(gap))
    out = down + torch.copysign(up, x)
    return quantize(out, f)


def _sr_bf16_bits(x: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
    """bf16 stochastic rounding of float32 ``x`` with the random 16-bit integers ``noise`` given."""
    bits = x.contiguous().view(torch.int32)
    out = ((bits & 0x7FFFFFFF) + noise).bitwise_and_(-65536) | (bits & -0x80000000)
    out = out.view(torch.float32)
    return torch.where(torch.isfinite(x), _bf16(out), x)  # rounding past bf16's max overflows as a cast does


def _bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).float()  # round to nearest even, as quantize(x, "bf16") (tested equal)


def kahan_add(w: torch.Tensor, c: torch.Tensor, update: torch.Tensor, fmt="bf16"):
    """One Kahan-compensated update ``w += update`` in ``fmt`` arithmetic: ``y = update - c; t = w + y;
    c = (t - w) - y; w = t``. Returns ``(w, c)``."""
    f = get_format(fmt)
    rnd = _bf16 if f.name == "bf16" else (lambda v: quantize(v, f))
    y = rnd(update - c)
    t = rnd(w + y)
    c = rnd(rnd(t - w) - y)
    return t, c


def tiny_updates(
    steps: int = 10_000, update: float = 1e-4, start: float = 1.0, fmt="bf16", seed: int = 0
) -> TinyUpdates:
    """Add ``update`` ``steps`` times to a weight at ``start`` held in ``fmt``: with round to nearest,
    stochastic rounding, Kahan compensation and an fp32 master copy. Returns the :class:`TinyUpdates`: each
    method's trajectory (float32 values after each step) and the exact sums (start + k * update in float64)."""
    steps = _validate.count(steps, "steps", 1, 100_000)
    update = _validate.finite(update, "update")
    start = _validate.finite(start, "start")
    f = get_format(fmt)
    g = torch.Generator().manual_seed(_validate.seed(seed))
    u = torch.tensor([update], dtype=torch.float32)
    w = {m: quantize(torch.tensor([start]), f) for m in UPDATE_METHODS}
    master = w["fp32 master"].clone()
    c = torch.zeros(1)
    out = {m: torch.empty(steps) for m in UPDATE_METHODS}
    rnd = _bf16 if f.name == "bf16" else (lambda v: quantize(v, f))
    for i in range(steps):
        w["round to nearest"] = rnd(w["round to nearest"] + u)
        w["stochastic rounding"] = stochastic_round(w["stochastic rounding"] + u, f, g)
        w["Kahan"], c = kahan_add(w["Kahan"], c, u, f)
        master = master + u
        w["fp32 master"] = master
        for m in UPDATE_METHODS:
            out[m][i] = w[m][0]
    exact = start + update * torch.arange(1, steps + 1, dtype=torch.float64)
    return TinyUpdates(f.name, steps, exact, out)


# --- a small model trained with bf16 weights ---------------------------------------------------------

BYTES_PER_PARAMETER = {"round to nearest": 2, "stochastic rounding": 2, "Kahan": 4, "fp32 master": 4}


def _teacher_data(seed: int, n: int = 512, d: int = 16):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, dtype=torch.float64, generator=g)
    w = torch.randn(d, 1, dtype=torch.float64, generator=g)
    y = torch.tanh(x @ w / 2) + 0.1 * torch.sin(3 * x[:, :1])
    return x.float(), y.float()


def train_low_precision(
    methods=UPDATE_METHODS, steps: int = 300, lr: float = 1e-3, hidden: int = 64, seed: int = 0, progress: bool = True
) -> dict[str, LowPrecisionRun]:
    """Train a 16 -> hidden -> hidden -> 1 tanh MLP on a fixed regression task with Adam, the weights stored in bf16
    and updated by each method of :data:`UPDATE_METHODS` ("fp32 master" is AMP); emulated: bf16 matmul inputs, fp32
    sums, bf16 gradients. Returns method -> :class:`LowPrecisionRun` (loss per step, share of weights that never
    moved, bytes per parameter). ``progress``: a progress bar per method."""
    if not _validate.sequence(methods, "methods", "method names"):
        raise ValueError(
            f"methods={methods!r} is not allowed: name at least one of {', '.join(map(repr, UPDATE_METHODS))}"
        )
    for m in methods:
        _choice(m, UPDATE_METHODS, "method")
    progress = _validate.flag(progress, "progress")
    hidden = _validate.count(hidden, "hidden", 1, 1024)
    # per step and method: forward, backward and update of 512 samples through 16 -> hidden -> hidden -> 1
    per_step = 6 * 512 * (16 * hidden + hidden * hidden + hidden) * len(UPDATE_METHODS)
    steps = _validate.count(steps, "steps", 1, 5000, "training steps of each method", flops_each=per_step)
    lr = _validate.positive(lr, "lr")
    bf16 = get_format("bf16")
    x, y = _teacher_data(_validate.seed(seed))
    xq = quantize(x, bf16)
    g0 = torch.Generator().manual_seed(seed + 1)
    shapes = [(16, hidden), (hidden,), (hidden, hidden), (hidden,), (hidden, 1), (1,)]
    init = []
    for s in shapes:
        fan_in = s[0] if len(s) == 2 else 1
        w = torch.randn(*s, dtype=torch.float64, generator=g0) / math.sqrt(fan_in) if len(s) == 2 else torch.zeros(s)
        init.append(quantize(w.float(), bf16))
    results = {}
    for m in methods:
        ws = [p.clone().requires_grad_(True) for p in init]
        comp = [torch.zeros_like(p) for p in init]
        master = [p.clone() for p in init]
        mom = [torch.zeros_like(p) for p in init]
        vel = [torch.zeros_like(p) for p in init]
        gen = torch.Generator().manual_seed(seed + 2)
        losses = []
        for t in Progress(range(steps), desc=f"training: {m}", disable=not progress):
            w1, b1, w2, b2, w3, b3 = ws
            h = torch.tanh(xq @ w1 + b1)
            h = torch.tanh(quantize(h, bf16) @ w2 + b2)
            out = quantize(h, bf16) @ w3 + b3
            loss = ((out - y) ** 2).mean()
            for p in ws:
                p.grad = None
            loss.backward()
            losses.append(float(loss.detach()))
            with torch.no_grad():
                for i, p in enumerate(ws):
                    grad = quantize(p.grad, bf16)
                    mom[i].mul_(0.9).add_(grad, alpha=0.1)
                    vel[i].mul_(0.999).addcmul_(grad, grad, value=0.001)
                    mh = mom[i] / (1 - 0.9 ** (t + 1))
                    vh = vel[i] / (1 - 0.999 ** (t + 1))
                    step = lr * mh / (vh.sqrt() + 1e-8)
                    if m == "round to nearest":
                        new = quantize(p - step, bf16)
                    elif m == "stochastic rounding":
                        new = stochastic_round(p - step, bf16, gen)
                    elif m == "Kahan":
                        new, comp[i] = kahan_add(p.detach(), comp[i], -step, bf16)
                    else:
                        master[i] -= step
                        new = quantize(master[i], bf16)
                    p.copy_(new)
        moved = sum(int((p.detach() != p0).sum()) for p, p0 in zip(ws, init))
        total = sum(p.numel() for p in init)
        results[m] = LowPrecisionRun(m, tuple(losses), 1 - moved / total, BYTES_PER_PARAMETER[m])
    return results
