"""Tests of amp_lessons.fp8: lesson 07's fp8 scaling recipes (small sizes; no timing asserts)."""

import math

import pytest
import torch

from amp_lessons import recorders, reference
from amp_lessons.formats import get_format, quantize, representable_values
from amp_lessons.fp8 import _experiments as fp8, _models as models, _records as records, key_code

E4M3 = get_format("fp8_e4m3")
E5M2 = get_format("fp8_e5m2")
DTYPES = {"fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2}


@pytest.fixture(scope="module")
def tensors():
    return fp8.model_tensors()


def spread(n=4096, seed=0):
    """Values over many binades (both signs), plus zeros, ties and overflows once scaled."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * torch.exp2(torch.randint(-30, 20, (n,), generator=g).float())
    return torch.cat([x, torch.tensor([0.0, -0.0, 448.0, 464.0, 480.0, 1e30, -1e30])])


# --- facts -----------------------------------------------------------------------------------------


def test_torch_fp8_overflow_is_measured_now():
    r = fp8.torch_fp8_overflow()
    assert set(r) == {"float8_e4m3fn", "float8_e5m2"}
    assert list(r["float8_e4m3fn"]) == ["500.0", "100000.0", "inf", "nan"]
    e4 = r["float8_e4m3fn"]["100000.0"]
    assert e4 == 448.0 or math.isnan(e4)  # saturation (torch >= 2.13-ish) or NaN (older torch)
    now = float(torch.tensor(1e5).to(torch.float8_e4m3fn).float())
    assert e4 == now or (math.isnan(e4) and math.isnan(now))  # NaN != NaN: compare what each is
    assert r["float8_e5m2"]["500.0"] == 512.0 and r["float8_e5m2"]["inf"] == math.inf
    assert math.isnan(r["float8_e5m2"]["nan"])


def test_course_fp8_casts_do_not_depend_on_torchs_overflow(monkeypatch):
    # fp8 recipes clamp before the cast; so do fake_quantize (the format's saturation) and _to_fp8
    x = torch.tensor([500.0, -1e5, math.inf, 1.0])
    assert fp8.fake_quantize(x, "fp8_e4m3").tolist() == [448.0, -448.0, 448.0, 1.0]
    assert fp8._to_fp8(x).float().tolist() == [448.0, -448.0, 448.0, 1.0]
    assert math.isnan(float(fp8._to_fp8(torch.tensor([math.nan])).float()))
    assert fp8.fake_quantize(x, "fp8_e5m2").tolist()[:3] == [512.0, -math.inf, math.inf]
    # a scale per row; an empty tensor keeps its shape
    x, s = torch.randn(4, 8), torch.tensor([[1.0], [2.0], [4.0], [100.0]])
    assert torch.equal(fp8.fake_quantize(x, "fp8_e4m3", s), (x * s).to(torch.float8_e4m3fn).float() / s)
    assert fp8.fake_quantize(torch.empty(0, 3)).shape == (0, 3)


def test_values_in():
    assert fp8.values_in("fp8_e4m3", 1, 2) == 8  # 3 mantissa bits: 8 values per binade
    assert fp8.values_in("fp8_e5m2", 1, 2) == 4
    assert fp8.values_in("fp8_e4m3", 0, 1e9) == len(representable_values("fp8_e4m3"))
    assert fp8.values_in("fp8_e4m3", -1e9, 1e9) == 2 * 126 + 1  # 127 non-NaN magnitudes per sign, one zero


# --- scales and fake quantization -------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
@pytest.mark.parametrize("scale", [1.0, 2.0**-20, 2.0**17, 97.53])
def test_fake_quantize_is_torchs_cast_bit_for_bit(fmt, scale):
    x = spread()
    got = fp8.fake_quantize(x, fmt, scale)
    y = x * scale
    if fmt == "fp8_e4m3":  # e4m3 saturates (the course clamps, as torchao's to_fp8_saturated does); torch's own cast
        y = y.clamp(-448.0, 448.0)  # saturates from 2.13 on and gives NaN in 2.11: clamped, both are the plain cast
    want = y.to(DTYPES[fmt]).float() / scale
    assert got.dtype == torch.float32
    assert torch.equal(got.view(torch.int32), want.view(torch.int32))


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_amax_scale_puts_amax_at_max(fmt):
    f = get_format(fmt)
    for seed, mag in ((0, 1e-6), (1, 3.0), (2, 1e4)):
        x = torch.randn(1000, generator=torch.Generator().manual_seed(seed)) * mag
        s = fp8.amax_scale(x, fmt)
        top = quantize(x.abs().max().reshape(1) * s, f)
        assert float(top) == f.max
        s1 = fp8.amax_scale(x, fmt, margin=1)
        assert float(quantize(x.abs().max().reshape(1) * s1, f)) == f.max / 2
        p = fp8.amax_scale(x, fmt, power_of_two=True)
        assert math.frexp(p)[0] == 0.5 and p <= s < 2 * p
    assert fp8.amax_scale(torch.zeros(5)) == 1.0
    assert fp8.amax_scale(-torch.ones(3) * 2) == 224.0  # amax is of |x|
    assert fp8.amax_scale(torch.empty(0)) == 1.0  # nothing to scale


# --- blocks ----------------------------------------------------------------------------------------


def test_blockwise_equals_manual_per_block_computation():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, generator=g) * torch.tensor([1e-4, 1.0, 1e3, 0.0])[:, None]
    q, s = fp8.blockwise_fake_quantize(x, (2, 3))
    assert s.shape == (2, 2) and q.shape == x.shape
    for i in range(2):
        for j in range(2):
            blk = x[2 * i : 2 * i + 2, 3 * j : 3 * j + 3]
            sc = fp8.amax_scale(blk)
            assert float(s[i, j]) == sc
            assert torch.equal(q[2 * i : 2 * i + 2, 3 * j : 3 * j + 3], fp8.fake_quantize(blk, "fp8_e4m3", sc))


def test_blockwise_partial_blocks_and_power_of_two():
    x = torch.randn(3, 200, generator=torch.Generator().manual_seed(1))
    q, s = fp8.blockwise_fake_quantize(x, (1, 128))
    assert s.shape == (3, 2) and q.shape == (3, 200)
    tail = x[:, 128:]
    for r in range(3):
        assert torch.equal(q[r, 128:], fp8.fake_quantize(tail[r], "fp8_e4m3", fp8.amax_scale(tail[r])))
    _, p = fp8.blockwise_fake_quantize(x, "1x32", power_of_two=True)
    assert p.shape == (3, 7) and bool((torch.frexp(p).mantissa == 0.5).all())
    _, z = fp8.blockwise_fake_quantize(torch.zeros(2, 4), (1, 2))
    assert torch.equal(z, torch.ones(2, 2))


def test_block_scaling_beats_per_tensor_with_outliers():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(128, 256, generator=g) * 1e-3
    x[0, :8] = 1e4  # a few outlier values: per-tensor scaling flushes the small ones
    rows = fp8.scaling_errors({"outliers": x}, methods=("per-tensor", "block 1x128", "block 128x128"))
    err = {r["method"]: r for r in rows}
    assert err["block 1x128"]["relative error"] < err["per-tensor"]["relative error"]
    # only the 120 small values sharing a 1x128 tile with the outliers flush
    assert err["per-tensor"]["flushed"] > 0.9 and err["block 1x128"]["flushed"] == 120 / x.numel()


def test_scaling_methods_by_name_or_record():
    """A method is its display name or a ScalingMethod record; a name not in the table is refused, naming it."""
    x = torch.randn(64, 256, generator=torch.Generator().manual_seed(1))
    by_name = fp8.scaling_errors({"x": x}, methods=("per-tensor", "block 1x128"))
    by_record = fp8.scaling_errors(
        {"x": x}, methods=[fp8.SCALING_METHOD_BY_NAME[m] for m in ("per-tensor", "block 1x128")]
    )
    assert by_name == by_record
    m = records.ScalingMethod.blocks(2, 64)
    assert m == records.ScalingMethod("block 2x64", "block", (2, 64))
    (row,) = fp8.scaling_errors({"x": x}, methods=m)
    assert row["method"] == "block 2x64" and row["relative error"] < 0.04
    with pytest.raises(ValueError, match="method='block 2x64' is not allowed: .*'block 1x128'"):
        fp8.scaling_errors({"x": x}, methods="block 2x64")  # names are looked up, never parsed


# --- errors on the model's tensors -------------------------------------------------------------------


def test_model_tensors(tensors):
    assert list(tensors) == ["weights", "activations", "weight gradients", "activation gradients"]
    assert all(t.shape == (256, 256) and t.dtype == torch.float32 for t in tensors.values())
    assert float(tensors["activation gradients"].abs().max()) < 1e-2  # small gradients
    assert float(tensors["activations"].min()) >= 0  # after a ReLU


def test_scaling_errors_on_model_tensors(tensors):
    rows = fp8.scaling_errors(tensors)
    assert len(rows) == 4 * len(fp8.SCALING_METHODS)
    by = {(r["tensor"], r["method"]): r for r in rows}
    # unscaled e4m3 flushes most gradients; any amax scaling keeps them
    assert by[("activation gradients", "no scaling")]["flushed"] > 0.3
    for m in ("per-tensor", "block 1x128", "block 128x128"):
        r = by[("activation gradients", m)]
        assert r["flushed"] == 0 and r["saturated"] == 0 and r["relative error"] < 0.04
    # amax scaling never overflows; the delayed scale lags a growing tensor, so its top values saturate
    assert all(by[(t, "per-tensor")]["saturated"] == 0 for t in tensors)
    assert all(by[(t, "delayed")]["saturated"] > 0 for t in tensors)
    e5 = fp8.scaling_errors({"g": tensors["activation gradients"]}, "fp8_e5m2", ("no scaling", "per-tensor"))
    assert e5[0]["flushed"] < by[("activation gradients", "no scaling")]["flushed"]  # e5m2 has range
    # the engine's classes: e4m3's overflow is "saturated", e5m2's is "inf"
    assert all(by[(t, "delayed")]["inf"] == 0 for t in tensors)
    x = torch.tensor([1.0, 1e5, 1e-9, 0.0])
    for name, saturated, inf in (("fp8_e4m3", 0.25, 0.0), ("fp8_e5m2", 0.0, 0.25)):
        f = get_format(name)
        c = fp8.cast_stats(x, 1.0, f)
        assert (c.flushed, c.saturated, c.inf, c.overflowed) == (0.25, saturated, inf, 0.25)


# --- matmul and the linear layer --------------------------------------------------------------------


def test_scaled_mm_compare_small():
    r = fp8.scaled_mm_compare(32, 64, 48, seed=1, device="cpu")
    assert r.skipped is None, r.skipped
    assert r.fp32_rel_error < 1e-6 < r.bf16_rel_error < r.fp8_rel_error < 0.1
    # on the CPU, _scaled_mm and the emulation differ only by fp32 summation order and where the scales apply
    assert r.fp8_vs_emulation_rel_diff < 1e-5
    assert abs(r.fp8_rel_error - r.fp8_emulated_rel_error) < 1e-5
    assert r.fp8_time_s is None  # no timing on a CPU unless asked


def test_reference_experiment_runs_small_on_cpu():
    fn = reference.EXPERIMENTS["fp8_scaled_mm"]
    assert fn is recorders.record_fp8_scaled_mm
    r = fn("cpu", size=16)
    assert r["shape"] == "16^3" and r["fp8_time_s"] > 0 and r["bf16_rel_error"] < r["fp8_rel_error"]


def test_fp8_linear_check_errors_small_but_not_zero():
    r = fp8.fp8_linear_check()
    for e in (r.output_error, r.input_grad_error, r.weight_grad_error):
        assert 1e-3 < e < 0.1, r
    assert r.output_error < r.input_grad_error  # e4m3 forward, e5m2 backward
    assert r.bias_grad_error == 0.0


def test_fp8_linear_module():
    ref = torch.nn.Linear(16, 8)
    layer = models.Fp8Linear.from_linear(ref)
    assert torch.equal(layer.weight, ref.weight) and layer.weight.dtype == torch.float32  # fp32 master
    x = torch.randn(4, 16, requires_grad=True)
    layer(x).sum().backward()
    assert x.grad.shape == x.shape and layer.weight.grad.shape == (8, 16)
    assert "e4m3" in repr(layer)
    with pytest.raises(ValueError, match="2-D"):
        layer(torch.randn(2, 3, 16))
    with pytest.raises(TypeError, match="nn.Linear"):
        models.Fp8Linear.from_linear(torch.nn.ReLU())


def test_scaled_mm_timing_times_the_matmul_only(monkeypatch):
    # the timed call must not build its scale tensors (host-to-device copies on a GPU): they are made once
    made = []
    real = fp8._scale_tensor
    monkeypatch.setattr(fp8, "_scale_tensor", lambda inv, d: made.append(inv) or real(inv, d))
    timed = []
    real_time_fn = fp8.time_fn

    def spy(fn, **kw):
        before = len(made)
        t = real_time_fn(fn, **kw)
        timed.append(len(made) - before)
        return t

    monkeypatch.setattr(fp8, "time_fn", spy)
    r = fp8.scaled_mm_compare(16, 32, 16, time_it=True, repeats=2)
    assert r.fp8_time_s > 0 and r.bf16_time_s > 0
    assert timed == [0, 0]  # no scale tensor made inside either timed call
    assert len(made) == 4  # two for the untimed product, two once before timing


def test_the_lessons_block_scales_and_their_checked_copies():
    from amp_lessons.fp8 import _checked

    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 1000.0, 1.0, 7.0]])  # 9 columns: a partial third block
    s, blocks = key_code.block_scales(x, "fp8_e4m3", (1, 4))
    assert blocks.shape == (1, 1, 3, 4) and s.tolist() == [[112.0, float(torch.tensor(0.448)), 64.0]]
    assert torch.equal(blocks[0, 0, 2], torch.tensor([7.0, 0.0, 0.0, 0.0]))  # zero padding changes no amax
    p, _ = key_code.block_scales(x, "fp8_e4m3", (1, 4), power_of_two=True)
    assert p.tolist() == [[64.0, 0.25, 64.0]]
    with pytest.raises(ValueError, match="inf or NaN"):
        _checked.block_scales(torch.tensor([[1.0, math.inf]]), "fp8_e4m3", (1, 2))
    with pytest.raises(ValueError, match="overflows float32"):
        _checked.block_scales(torch.tensor([[1e-44, 1.0]]), "fp8_e4m3", (1, 1))
    with pytest.raises(ValueError, match="amax is nan"):
        _checked.scale_from_amax(math.nan)
    assert _checked.scale_from_amax(112.0, "fp8_e4m3", 2) == key_code.scale_from_amax(112.0, "fp8_e4m3", 2) == 1.0


# --- the cost of the casts -----------------------------------------------------------------------------


def test_h200_reference_ratios_use_one_timer():
    h = records.fp8_costs_of(reference.find("fp8_cast_costs", published=False)[0])
    big, small = "8192x8192x8192", "256x512x256"
    assert h.label == "recorded on NVIDIA H200, torch 2.11, 2026-11-27"
    assert list(h.times_us) == [(s, v) for s in (big, small) for v in records.COST_VARIANTS]
    assert round(h.ratio(big, "fp8", "events"), 2) == 1.76
    assert round(h.ratio(big, "fp8 + eager casts", "events"), 2) == 0.63
    assert h.time_us(small, "bf16", "events after memset") == h.time_us(small, "fp8", "events after memset") == 5.6
    assert set(h.variants) == {v for _, v in h.times_us} and all(len(t) == len(h.timers) for t in h.times_us.values())
    text = str(h)
    assert "recorded on NVIDIA H200" in text and "do_bench" in text and "(0.63x)" in text
    with pytest.raises(ValueError, match="timer='nvtx'"):
        h.time_us(big, "fp8", "nvtx")
    with pytest.raises(ValueError, match="no time for shape"):
        h.ratio("1x1x1", "fp8", "events")
    with pytest.raises(ValueError, match="not an fp8 cost row"):
        records.fp8_costs_of(reference.find("tf32_matmul", published=False)[0])


def test_fp8_cast_costs_on_the_cpu_time_the_lessons_eager_cast(monkeypatch):
    seen = []
    real = fp8.to_fp8
    monkeypatch.setattr(fp8, "to_fp8", lambda t: seen.append(tuple(t.shape)) or real(t))
    r = fp8.fp8_cast_costs("cpu", shapes=[(16, 32, 48), (8192, 8192, 8192)], repeats=2, calls=1)
    # two casts made before timing, then both inputs cast in every call of the "fp8+casts" row (warm-up included)
    assert seen[:2] == [(16, 32), (48, 32)] and len(seen) > 2 and set(seen) == {(16, 32), (48, 32)}
    assert isinstance(r, records.CastCosts) and r.device == "cpu"
    assert set(r.times) == {("16x32x48", v) for v in ("bf16", "fp8", "fp8+casts")}
    assert all(t > 0 for t in r.times.values())
    assert r.timer == "perf_counter around 1 back-to-back calls, per call, median of 2"  # one timer, named
    assert "a CPU" in r.skipped["8192x8192x8192"] and "torch.compile" in r.skipped["16x32x48", "fp8+compiled casts"]
    assert r.ratio("16x32x48", "fp8") == r.times["16x32x48", "bf16"] / r.times["16x32x48", "fp8"]
    assert r.ratio("8192x8192x8192", "fp8") is None
    assert "timer: perf_counter" in str(r)


@pytest.mark.slow
def test_fp8_cast_costs_compiles_the_casts_when_asked():
    r = fp8.fp8_cast_costs("cpu", shapes=[(16, 32, 16)], compiled=True, repeats=1, calls=1)
    assert ("16x32x16", "fp8+compiled casts") in r.times and not r.skipped


@pytest.mark.parametrize("gpu, shapes", [("H100", ["256x512x256", "8192x8192x8192"]), ("A100", ["256x512x256"])])
def test_on_a_gpu_the_lesson_runs_scaled_mm_there(monkeypatch, gpu, shapes):
    from tests.simulated_gpu import simulate

    assert fp8._resolve_device(None) == torch.device("cuda" if torch.cuda.is_available() else "cpu")
    simulate(monkeypatch, gpu)
    assert fp8._resolve_device(None) == torch.device("cuda")  # scaled_mm_compare and fp8_cast_costs default to it
    todo, skipped, compiled = fp8._cast_cost_plan(torch.device("cuda"), fp8.CAST_COST_SHAPES, None)
    assert [t[0] for t in todo] == shapes and compiled  # a GPU compiles the casts
    assert skipped == {} if gpu == "H100" else "no fp8 tensor cores" in skipped["8192x8192x8192"]
    cpu_todo, cpu_skipped, cpu_compiled = fp8._cast_cost_plan(torch.device("cpu"), fp8.CAST_COST_SHAPES, None)
    assert not cpu_compiled and ("256x512x256", "fp8+compiled casts") in cpu_skipped
    if torch.cuda.is_available():  # a real GPU runs them
        return
    # no kernel runs on a simulated GPU: the default call reaches for CUDA memory, which this torch build lacks (a CPU
    # build: "Torch not compiled with CUDA"; a CUDA build without a GPU: "Found no NVIDIA driver")
    with pytest.raises((RuntimeError, AssertionError), match="(?i)cuda|nvidia"):
        fp8.scaled_mm_compare(16, 32, 16)
    with pytest.raises((RuntimeError, AssertionError), match="(?i)cuda|nvidia"):
        fp8.fp8_cast_costs(shapes=[(16, 32, 16)], repeats=1, calls=1)
