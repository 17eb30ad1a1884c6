"""Tests of amp_lessons.micro: MX / NVFP4 block scaling against independent implementations (numpy, ml_dtypes
and Python's math, block by block, following the OCP MX v1.0 spec and torchao's operations), the recipe table,
stochastic rounding (its expectation, statistically) and Kahan-compensated updates."""

import math

import ml_dtypes
import numpy as np
import pytest
import torch

from amp_lessons.formats import get_format, quantize
from amp_lessons.micro.key_code import MX_ELEMENTS, round_to_element
from tests.faces import internals

micro = internals("micro")

ML = {
    "fp8_e4m3": ml_dtypes.float8_e4m3fn,
    "fp8_e5m2": ml_dtypes.float8_e5m2,
    "fp4_e2m1": ml_dtypes.float4_e2m1fn,
    "fp6_e2m3": ml_dtypes.float6_e2m3fn,
    "fp6_e3m2": ml_dtypes.float6_e3m2fn,
}


def ml_round(v: np.ndarray, fmt: str) -> np.ndarray:
    """Round-to-nearest-even with saturation, by ml_dtypes (clamp first: recipes clamp before the cast)."""
    m = get_format(fmt).max
    return np.clip(v.astype(np.float32), -m, m).astype(ML[fmt]).astype(np.float32)


def hard_blocks(seed=0, n=256):
    """Blocks of 32 with amaxes on and near every boundary that matters: powers of two, the element max times
    powers of two (448 * 2**k, 6 * 2**k), their float32 neighbours, zeros, tiny and huge values."""
    g = np.random.default_rng(seed)
    x = (g.standard_normal((n, 32)) * 2.0 ** g.integers(-20, 20, (n, 1))).astype(np.float32)
    specials = []
    for k in (-130, -127, -126, -20, -1, 0, 1, 7, 60, 100):
        for base in (1.0, 1.5, 1.75, 6.0, 448.0, 7.0):
            v = np.float32(base * 2.0**k)  # exact: a float32 for every (base, k) here
            specials += [v, np.nextafter(v, np.float32(np.inf)), np.nextafter(v, np.float32(0))]
    sp = np.array(specials, dtype=np.float32)
    sp = sp[np.isfinite(sp) & (sp > 0)]
    x[: len(sp), 0] = sp  # one special amax per block (the other values are far smaller)
    rest = x[: len(sp), 1:].astype(np.float64)
    x[: len(sp), 1:] = (1e-3 * rest * sp[:, None] / np.abs(rest).max(1, keepdims=True)).astype(np.float32)
    x[-1] = 0.0
    return x


def ref_scale_exponent(amax: float, emax: int, elem_max: float, rule: str) -> int:
    if not math.isfinite(amax):
        return 128
    if rule == "floor":
        e = math.frexp(amax)[1] - 1 if amax >= 2.0**-126 else -127  # float32 exponent field, unbiased
        k = e - emax
    else:
        d = float(np.float32(amax) * np.float32(1.0 / elem_max))  # torch's float32 product
        if d <= 2.0**-127:
            k = -127
        else:
            m, e = math.frexp(d)
            k = e - 1 if m == 0.5 else e  # the smallest power of two >= d
    return max(-127, min(127, k))


@pytest.mark.parametrize("fmt", list(ML))
@pytest.mark.parametrize("rule", micro.SCALE_RULES)
def test_mx_quantize_matches_an_independent_block_by_block_implementation(fmt, rule):
    f = get_format(fmt)
    x = hard_blocks()
    q = micro.mx_quantize(torch.from_numpy(x).reshape(-1, 64), fmt, rule)
    flat = x.reshape(-1, 32)
    vals = q.values.reshape(-1, 32).numpy()
    codes = q.scale_codes.reshape(-1).numpy()
    for i, blk in enumerate(flat):
        amax = float(np.abs(blk).max())
        k = ref_scale_exponent(amax, f.emax, f.max, rule)
        assert codes[i] == k + 127, (i, amax, codes[i], k)
        want = ml_round(blk * np.float32(2.0**-k), fmt) * np.float32(2.0**k)
        np.testing.assert_array_equal(vals[i], want)
    assert q.bits_per_element == f.bits + 8 / 32


def test_rceil_never_clips_floor_does():
    x = torch.from_numpy(hard_blocks(seed=1))
    for fmt in ("fp8_e4m3", "fp4_e2m1"):
        q = micro.mx_quantize(x, fmt, "rceil")
        # rceil clips only where amax / max is a float32 subnormal: there the product amax * (1 / max) loses
        # bits and can round down onto 2**-127; the clipped value exceeds max by float32 rounding only
        amax = x.abs().amax(1)
        assert bool((amax[q.clipped.any(1)] < get_format(fmt).max * 2.0**-126).all())
        over = (x.abs() / q.scales.repeat_interleave(32, 1))[q.clipped]
        assert bool((over <= get_format(fmt).max * (1 + 2**-20)).all())
        assert micro.mx_quantize(x, fmt, "floor").clipped.any()
        stats = micro.scale_rule_clipping(x, fmt)
        assert stats["rceil"].blocks_clipped < stats["floor"].blocks_clipped / 10
        assert [(r, c.rule) for r, c in stats.items()] == [("floor", "floor"), ("rceil", "rceil")]
        assert stats["floor"].values_clipped <= stats["floor"].blocks_clipped  # a clipped block has 1 to 32 values
    # floor puts amax in [2**emax, 2**(emax+1)): an e4m3 block saturates iff amax / 2**k rounds above 448, that is
    # lies above 464 (the midpoint of 448 and 480, whose tie goes to 448's even mantissa): a mantissa above 1.8125.
    # 1.75 and the float32 number just above it round to 448 itself: rounded down, not saturated
    amax = torch.tensor([1.75, 1.7500001, 1.8125, 1.8125001, 1.99, 1.0]) * 2.0**3
    blocks = torch.zeros(6, 32)
    blocks[:, 0] = amax
    q = micro.mx_quantize(blocks, "fp8_e4m3", "floor")
    assert q.clipped[:, 0].tolist() == [False, False, False, True, True, False]
    assert q.elements[:, 0].tolist() == [448.0] * 5 + [256.0]


def _table_round(v: float, fmt: str) -> tuple[float, bool]:
    """v rounded to nearest in ``fmt`` by search over its value table (ties to the even code), and whether
    the result lay beyond the max before the clamp; the table extended by one binade above the max (the value
    the clamp replaces) -- an implementation that shares nothing with the key code's frexp arithmetic."""
    from amp_lessons.formats import representable_values

    vals = representable_values(fmt).double().tolist()  # non-negative values, ascending, code order
    mbits, emin, emax, max_elem = MX_ELEMENTS[fmt]
    top = [max_elem + (i + 1) * 2.0 ** (emax - mbits) for i in range(2 ** (mbits + 1))]
    grid = vals + [t for t in top if t > max_elem]
    a = abs(v)
    best = min(range(len(grid)), key=lambda i: (abs(grid[i] - a), i % 2))  # even index = even mantissa code
    r = grid[-1] if a >= grid[-1] else grid[best]  # far beyond the table: its top (a float64 tie otherwise)
    return math.copysign(min(r, max_elem), v), r > max_elem


@pytest.mark.parametrize("fmt", list(MX_ELEMENTS))
def test_round_to_element_against_the_format_table_exhaustively(fmt):
    """Every value of the format, every midpoint between neighbours (ties), the float32 numbers on either side of
    each, and values past the max, both signs: the key code's rounding equals a search over the value table."""
    from amp_lessons.formats import representable_values

    vals = representable_values(fmt).double()
    mbits, emin, emax, max_elem = MX_ELEMENTS[fmt]
    ext = torch.cat([vals, max_elem + 2.0 ** (emax - mbits) * torch.arange(1, 4, dtype=torch.float64)])
    mids = (ext[1:] + ext[:-1]) / 2
    pts = torch.cat([ext, mids]).float()
    up = torch.nextafter(pts, torch.tensor(math.inf))
    down = torch.nextafter(pts, torch.tensor(0.0))
    x = torch.cat([pts, up, down, torch.tensor([3 * max_elem, 1e30])])
    x = torch.cat([x, -x])
    got, sat = round_to_element(x, fmt)
    for v, g, s in zip(x.tolist(), got.tolist(), sat.tolist()):
        want, want_sat = _table_round(v, fmt)
        assert (g, s) == (want, want_sat), (fmt, v, g, s, want, want_sat)


def test_a_nan_block_gets_the_nan_scale():
    nan_block = torch.ones(2, 32)
    nan_block[0, 3] = math.nan
    q = micro.mx_quantize(nan_block)
    assert q.scale_codes.reshape(-1).tolist() == [255, 127 - 8] and torch.isnan(q.values[0]).all()


def ref_nvfp4(x: np.ndarray) -> np.ndarray:
    """torchao's nvfp4_quantize with a per-tensor scale, in numpy float32 and ml_dtypes."""
    f32 = np.float32
    g = f32(np.abs(x).max()) / f32(448.0 * 6.0)
    blocks = x.reshape(x.shape[0], -1, 16)
    block_scale = np.abs(blocks).max(-1, keepdims=True) / f32(6.0)
    s8 = np.clip(block_scale / g, f32(2.0**-6), f32(448)).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    scaled = blocks * ((f32(1.0) / g) / s8)
    e = ml_round(scaled, "fp4_e2m1")
    return (e * (s8 * g)).reshape(x.shape), s8.reshape(x.shape[0], -1)


def test_nvfp4_matches_torchao_operations_in_numpy():
    x = hard_blocks(seed=2).reshape(128, 64)
    x = x / np.abs(x).max() * np.float32(30.0)  # keep the tensor amax finite after scaling
    q = micro.nvfp4_quantize(torch.from_numpy(x))
    want, s8 = ref_nvfp4(x)
    np.testing.assert_array_equal(q.values.numpy(), want)
    np.testing.assert_array_equal(q.scale_codes.numpy(), s8)
    assert q.global_scale == float(np.float32(np.abs(x).max()) / np.float32(448 * 6))
    assert q.bits_per_element == 4.5
    assert micro.nvfp4_quantize(torch.zeros(2, 16)).values.abs().sum() == 0


def test_recipe_tensors_are_fixed_and_the_spike_is_where_it_is_said():
    a = micro.recipe_tensor("gradient", micro.SPIKE_STEP)
    b = micro.recipe_tensor("gradient", micro.SPIKE_STEP - 1)
    assert float(a.abs().max()) > 500 * float(b.abs().max())
    assert torch.equal(a, micro.recipe_tensor("gradient", micro.SPIKE_STEP))
    act = micro.recipe_tensor("activations")
    col = act.abs().amax(0)
    assert set(col.topk(4).indices.tolist()) == {7, 100, 300, 411}


@pytest.fixture(scope="module")
def tables():
    return {k: {r.recipe: r for r in micro.recipe_table(k)} for k in micro.TENSOR_KINDS}


def test_saturated_counts_only_values_clamped_at_the_max(tables):
    """Per-tensor current scaling maps the amax onto the max (within float32's rounding of the scale): nothing is
    clamped, whatever it flushes or rounds down. (Counting every value rounded down by more than 1/8, fp8
    subnormals included, gave 1.1% here.) A delayed scale at the spike clamps exactly the 4 spike entries."""
    for k in micro.TENSOR_KINDS:
        assert tables[k]["per-tensor current"].saturated == 0
        assert tables[k]["per-tensor current (e5m2)"].saturated == 0
        assert tables[k]["MXFP8 (e4m3, rceil)"].saturated == tables[k]["NVFP4"].saturated == 0
    assert tables["gradient"]["per-tensor current"].flushed > 0.005  # it does flush
    x, q, sat = micro.recipe_run("per-tensor delayed (history 16)", "gradient", micro.SPIKE_STEP)
    assert int(sat.sum()) == 4 and sat[3, :4].all()
    assert tables["gradient"]["per-tensor delayed (history 16)"].saturated == 4 / x.numel()
    # the saturated values are stored at the format's max over the scale, the largest magnitude q holds
    assert bool((q[sat].abs() == q.abs().max()).all())


def test_recipe_table_claims(tables):
    grad = tables["gradient"]
    # at the spike step every delayed recipe saturates: the history's amax is ~1000x too small
    for h in (1, 16, 1024):
        r = grad[f"per-tensor delayed (history {h})"]
        assert r.snr_db < 1 and r.saturated > 0
    assert grad["per-tensor current"].snr_db > 50
    # one scale for the whole gradient flushes small values to zero that row-wise and 1x128 blocks keep
    assert grad["per-tensor current"].flushed > 100 * max(grad["row-wise"].flushed, 1e-6)
    act = tables["activations"]
    assert act["block 1x128"].snr_db > act["per-tensor current"].snr_db + 5  # outlier channels
    assert act["MXFP8 (e4m3, rceil)"].snr_db > act["MXFP8 (e4m3, floor)"].snr_db
    # TE's HYBRID format: e5m2 gradients lose 1 mantissa bit (6 dB) against e4m3 and flush nothing here
    assert grad["per-tensor current (e5m2)"].snr_db == pytest.approx(grad["per-tensor current"].snr_db - 6, abs=1)
    assert grad["per-tensor current (e5m2)"].flushed == 0 < grad["per-tensor current"].flushed
    for k in micro.TENSOR_KINDS:
        assert tables[k]["MXFP4 (rceil)"].saturated == 0 < tables[k]["MXFP4 (floor)"].saturated
        assert tables[k]["NVFP4"].snr_db > tables[k]["MXFP4 (floor)"].snr_db
        assert tables[k]["NVFP4"].bits_per_value == 4.5 and tables[k]["MXFP4 (floor)"].bits_per_value == 4.25


def test_recipes_by_name_or_record():
    """A recipe is its display name or a Recipe record: both run the same quantization; a name outside the table is
    refused, naming it and the allowed names."""
    r = micro.RECIPE_BY_NAME["per-tensor delayed (history 16)"]
    for a, b in zip(micro.recipe_run(r.name, "gradient"), micro.recipe_run(r, "gradient")):
        assert torch.equal(a, b)
    mine = micro.Recipe("block 1x64", "block", block=(1, 64))
    (row,) = micro.recipe_table("activations", recipes=[mine])
    assert row.recipe == "block 1x64" and row.bits_per_value == 8
    with pytest.raises(ValueError, match="recipe='block 1x64' is not allowed: .*'NVFP4'"):
        micro.recipe_run("block 1x64", "activations")  # names are looked up, never parsed


def test_recipe_stats_on_known_errors():
    x = torch.tensor([1.0, 2.0, 0.001, 100.0])
    q = torch.tensor([1.0, 2.0, 0.0, 50.0])
    s = micro.recipe_stats(x, q, torch.tensor([False, False, False, True]))
    assert s.flushed == 0.25 and s.saturated == 0.25
    assert s.bias == pytest.approx((-0.001 - 50) / 103.001)
    assert micro.recipe_stats(x, x).snr_db == math.inf
    assert math.isnan(micro.recipe_stats(x, q).saturated)  # not knowable from x and q alone
    assert "unknown" in str(micro.recipe_stats(x, q)) and "exact" in str(micro.recipe_stats(x, x))


# --- stochastic rounding and Kahan ----------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["bf16", "fp8_e4m3", "fp16"])
def test_stochastic_rounding_is_unbiased_and_lands_on_neighbours(fmt):
    f = get_format(fmt)
    g = torch.Generator().manual_seed(5)
    base = torch.tensor([1.0, -3.0, 0.7, f.smallest_subnormal * 3])
    frac = torch.tensor([0.3, 0.125, 0.9, 0.5])
    lo = quantize(base, f, "toward_zero")
    gap = torch.tensor([f.eps, 2 * f.eps, f.eps / 2, f.smallest_subnormal])
    x = lo + torch.copysign(frac * gap, base)
    n = 200_000
    draws = micro.stochastic_round(x.repeat(n, 1), f, g)
    hi = lo + torch.copysign(gap, base)
    assert bool(((draws == lo) | (draws == hi)).all())
    p_up = (draws == hi).double().mean(0)
    # binomial: 5 standard deviations of a proportion of n draws
    tol = 5 * torch.sqrt(frac.double() * (1 - frac.double()) / n)
    assert bool(((p_up - frac.double()).abs() < tol).all()), (p_up, frac)
    assert torch.equal(micro.stochastic_round(lo, f, g), lo)  # representable values stay


def test_stochastic_rounding_bf16_bit_path_equals_the_general_rule():
    x = torch.randn(100_000, generator=torch.Generator().manual_seed(6))
    a = micro.stochastic_round(x, "bf16", torch.Generator().manual_seed(7))
    down = quantize(x, "bf16", "toward_zero")
    up = torch.nextafter(down.to(torch.bfloat16), torch.copysign(torch.tensor(math.inf), x).to(torch.bfloat16)).float()
    assert bool(((a == down) | (a == up)).all())
    p = ((x - down) / (up - down)).double()
    assert abs(float(((a == up).double() - p).mean())) < 5 * float(torch.sqrt((p * (1 - p)).sum())) / 100_000
    assert micro.stochastic_round(torch.tensor([math.inf, -math.inf]), "bf16").isinf().all()


def test_kahan_add_recovers_what_rounding_drops():
    w, c = torch.tensor([1.0]), torch.zeros(1)
    for _ in range(1000):
        w, c = micro.kahan_add(w, c, torch.tensor([1e-4]), "bf16")
    # 1000 * 1e-4 = 0.1; the bf16 sum w - c carries it to within bf16's rounding of 1.1
    assert abs(float(w - c) - 1.1) < 2**-7
    assert float(w) > 1.0  # while plain round to nearest never leaves 1.0
    w2, c2 = micro.kahan_add(torch.tensor([1.0]), torch.zeros(1), torch.tensor([0.05]), "fp8_e4m3")
    assert float(w2) == 1.0 and float(c2) == -0.05078125  # e4m3's 0.05 is lost from w and kept in c


def test_tiny_updates():
    r = micro.tiny_updates(steps=10_000, update=1e-4, start=1.0)
    assert r.steps == 10_000 and r.fmt == "bf16" and len(r.trajectories["Kahan"]) == 10_000
    assert tuple(r.trajectories) == micro.UPDATE_METHODS
    assert bool((r.trajectories["round to nearest"] == 1.0).all())  # 1 + 1e-4 rounds back to 1 in bf16, every time
    assert abs(float(r.trajectories["fp32 master"][-1]) - 2.0) < 1e-3  # fp32's own rounding over 10^4 adds: ~2e-4
    # deterministic elementwise bf16 arithmetic: Kahan ends 2 bf16 steps (2**-6 each) above 2, because its
    # compensation is itself a bf16 number (what it holds is rounded each step)
    assert float(r.trajectories["Kahan"][-1]) == 2.03125
    # SR: a sum of 10^4 independent roundings of spacing 2**-7 (then 2**-6), p = 0.0128: std ~ 0.1
    assert abs(float(r.trajectories["stochastic rounding"][-1]) - 2.0) < 0.5
    assert float(r.exact[-1]) == pytest.approx(2.0)


def test_train_low_precision_small():
    res = micro.train_low_precision(steps=25, lr=3e-4, hidden=16)
    assert set(res) == set(micro.UPDATE_METHODS)
    for m, v in res.items():
        assert isinstance(v, micro.LowPrecisionRun) and v.method == m
        assert len(v.loss) == 25 and v.loss[-1] < v.loss[0]
    assert res["round to nearest"].never_moved > 0.2 > res["stochastic rounding"].never_moved
    assert res["Kahan"].bytes_per_parameter == res["fp32 master"].bytes_per_parameter == 4


def test_stochastic_round_with_noise_given_is_the_bit_rule():
    """noise= gives the random integers of bf16's rounding on the bits: 0 truncates, 2**16 - 1 rounds every value
    not already in bf16 up (in magnitude)."""
    x = torch.tensor([1 + 2**-10, -(1 + 2**-10), 1.0, 0.0])
    zeros, ones = torch.zeros(4, dtype=torch.int32), torch.full((4,), 2**16 - 1, dtype=torch.int32)
    assert micro.stochastic_round(x, noise=zeros).tolist() == [1.0, -1.0, 1.0, 0.0]
    assert micro.stochastic_round(x, noise=ones).tolist() == [1 + 2**-7, -(1 + 2**-7), 1.0, 0.0]
