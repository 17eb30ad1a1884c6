"""Tests of amp_lessons.fp16: lesson 03's experiments against real torch arithmetic, the formats
engine and facts measured by hand with torch 2.13."""

import math

import numpy as np
import pytest
import torch

from amp_lessons.formats import FORMATS, FloatFormat, quantize
from amp_lessons.fp16 import _experiments as fp16

E5M7 = FloatFormat("e5m7", 5, 7)


def torch_running_sum(values: torch.Tensor, dtype) -> torch.Tensor:
    """acc = acc + v step by step in a real torch dtype (the reference)."""
    v = values.to(dtype)
    acc = torch.zeros(v.shape[:-1], dtype=dtype)
    out = []
    for i in range(v.shape[-1]):
        acc = acc + v[..., i]
        out.append(acc)
    return torch.stack(out, -1).float()


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal bit for bit up to NaN payloads (NaN where NaN, same signs of zero)."""
    bits = [torch.where(t.isnan(), 0.0, t.float()).view(torch.int32) for t in (a, b)]
    return torch.equal(a.isnan(), b.isnan()) and torch.equal(*bits)


def _probe_values() -> torch.Tensor:
    g = torch.Generator().manual_seed(1)
    bits = torch.randint(-(2**31), 2**31 - 1, (1500,), generator=g, dtype=torch.int64).to(torch.int32)
    edges = []
    for f in [*FORMATS.values(), E5M7]:
        for c in (f.max, f.smallest_normal, f.smallest_subnormal, f.eps):
            edges += [c * k for k in (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.0 + f.eps / 2, 1.0 - f.eps / 4, 2.0)]
    special = [0.0, -0.0, math.inf, -math.inf, math.nan, 3.4028234663852886e38, 1e-45]
    x = torch.cat([bits.view(torch.float32), torch.tensor(edges + special, dtype=torch.float32)])
    return torch.cat([x, -x])


@pytest.mark.parametrize("name", [*FORMATS, "e5m7"])
def test_scalar_rounder_equals_quantize(name):
    f = E5M7 if name == "e5m7" else FORMATS[name]
    x = _probe_values()
    got = torch.tensor([fp16._scalar_rounder(f)(v) for v in x.tolist()], dtype=torch.float32)
    assert same(got, quantize(x, f))


def test_running_sum_fp32_is_a_float32_running_sum():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 700, generator=g) * torch.logspace(-3, 3, 700)
    x[0, 0] = -0.0
    acc, want = np.zeros(3, np.float32), []
    for i in range(x.shape[1]):
        acc = (acc + x[:, i].numpy()).astype(np.float32)
        want.append(acc)
    got = fp16.running_sum(x, "fp32")
    assert got.dtype == torch.float32 and got.shape == x.shape
    assert same(got, torch.from_numpy(np.stack(want, -1)))


@pytest.mark.parametrize("name, dtype", [("fp16", torch.float16), ("bf16", torch.bfloat16)])
@pytest.mark.parametrize("rows", [1, 40])  # up to 16 rows: Python-float loop; more: vectorised
def test_running_sum_equals_real_torch_arithmetic(name, dtype, rows):
    g = torch.Generator().manual_seed(rows)
    scale = torch.logspace(-8, 4.5, 300)  # subnormal sums up to overflow to inf (fp16)
    x = torch.randn(rows, 300, generator=g) * scale
    x[:, -8:] = 3e4  # and certainly past fp16's max at the end
    x = x.to(dtype).float()  # addends in the dtype, as torch's arithmetic has them
    got = fp16.running_sum(x, name)
    assert same(got, torch_running_sum(x, dtype))
    if name == "fp16":
        assert torch.isinf(got).any() and ((got != 0) & (got.abs() < 2.0**-14)).any()


def test_running_sum_4096_copies_of_16():
    x = torch.full((4096,), 16.0)
    sums = fp16.running_sum(x, "fp16")
    assert same(sums, torch_running_sum(x, torch.float16))
    assert sums[2046] == 32752.0 and sums[2047] == 32768.0  # 2048 terms: 32768, where the gap is 32
    assert (sums[2047:] == 32768.0).all()  # 32768 + 16 is a tie: it rounds back to the even 32768


def test_scalar_and_vectorised_paths_agree_for_emulated_formats():
    g = torch.Generator().manual_seed(3)
    x = quantize(torch.randn(20, 200, generator=g) * 30, E5M7)
    for fmt in (E5M7, "fp8_e4m3", "fp16", "tf32"):
        vector = fp16.running_sum(x, fmt)  # 20 rows: one quantize per step
        scalar = torch.stack([fp16.running_sum(row, fmt) for row in x])  # one row: the scalar rounder
        assert same(vector, scalar), fmt


def test_accumulators_stall_where_the_gap_is_twice_the_addend_and_overflow_as_their_format():
    x = torch.full((8192,), 16.0)
    stall = {name: fp16.running_sum(x, fmt)[-1].item() for name, fmt in (("e5m2", "fp8_e5m2"), ("e5m7", E5M7))}
    assert stall == {"e5m2": 128.0, "e5m7": 4096.0}  # between fp8 and fp16 (32768): where the gap reaches 32
    assert fp16.running_sum(x[:100], "fp8_e4m3", overflow="saturate")[-1] == 256.0
    assert fp16.running_sum(torch.full((50,), 100.0), "fp8_e4m3")[-1] == 448.0  # saturates, never inf
    assert torch.isinf(fp16.running_sum(torch.full((5,), 4e4), "fp16")[-1])
    assert fp16.running_sum(torch.full((5,), 4e4), "fp16", overflow="saturate")[-1] == 65504.0


def test_running_sum_shapes_and_lists():
    assert fp16.running_sum([1.0, 2.0, 3.0]).tolist() == [1.0, 3.0, 6.0]
    assert fp16.running_sum(torch.zeros(2, 3, 0)).shape == (2, 3, 0)
    x = torch.ones(2, 3, 4)
    assert fp16.running_sum(x, "bf16")[1, 2].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_sum_copies_4096_times_16():
    r = fp16.sum_copies(16.0, 4096)
    assert r.torch_sum_fp16 == math.inf  # fp32 accumulation inside; 65536 > 65504 at the end
    assert r.torch_sum_fp32 == 65536.0
    assert r.fp32_running_sum == r.fp16_addends_fp32_accumulator == r.exact == 65536.0
    assert r.fp16_running_sum == r.stall_value == 32768.0
    assert r.cumsum_first_inf_index == 4094
    cumsum = torch.full((4096,), 16.0, dtype=torch.float16).cumsum(0)
    assert cumsum[4093] == 65504 and torch.isinf(cumsum[4094])


def test_sum_copies_point_zero_one_thousand_times():
    r = fp16.sum_copies(0.01, 1000)
    assert r.fp32_running_sum == pytest.approx(10.0001, abs=5e-5)
    assert r.fp16_running_sum == 9.953125
    assert r.fp16_addends_fp32_accumulator == pytest.approx(10.0021, abs=5e-5)
    assert r.exact == 1000 * torch.tensor(0.01, dtype=torch.float16).item()
    assert r.stall_value is None and r.cumsum_first_inf_index is None
    r = fp16.sum_copies(1e-4, 1_000_000)  # the largest n; its speed is measured in benchmarks/
    assert r.stall_value == 0.25 and r.fp16_running_sum == 0.25


def test_sum_copies_beyond_fp16_range_and_signs():
    r = fp16.sum_copies(1e5, 10)  # torch.full(..., dtype=float16) refuses 1e5: the cast gives inf
    assert r.fp16_running_sum == r.torch_sum_fp16 == r.exact == math.inf
    assert r.cumsum_first_inf_index == 0 and r.stall_value is None
    assert r.fp32_running_sum == pytest.approx(1e6)
    r = fp16.sum_copies(-16.0, 4096)
    assert r.stall_value == -32768.0 and r.torch_sum_fp16 == -math.inf
    assert fp16.sum_copies(1e39, 3).fp32_running_sum == math.inf
    assert fp16.sum_copies(-0.0, 3).fp16_running_sum == 0.0


def test_running_sums_of_copies_are_prefixes_and_match_running_sum():
    for v in (16.0, 0.01, 1.0, 3e-8, -7.25, 60000.0):
        long, short = fp16.running_sums_of_copies(v, 6000), fp16.running_sums_of_copies(v, 2500)
        for key in long:
            assert same(long[key][:2500], short[key]), (v, key)
        v16 = torch.tensor(v).to(torch.float16).float()
        assert same(long["fp16 running sum"], fp16.running_sum(v16.expand(6000), "fp16")), v
        assert same(long["fp16 addends, fp32 accumulator"], fp16.running_sum(v16.expand(6000), "fp32")), v


@pytest.mark.parametrize("fmt, n", [("fp16", 1000), ("bf16", 3000)])
def test_kahan_sum_is_within_an_ulp_where_a_running_sum_is_not(fmt, n):
    g = torch.Generator().manual_seed(0)
    x = quantize(torch.full((n,), 0.01) if fmt == "fp16" else torch.rand(n, generator=g), fmt)
    exact = x.double().sum().item()
    ulp = 2.0 ** (math.floor(math.log2(exact)) - FORMATS[fmt].mantissa_bits)
    assert abs(fp16.kahan_sum(x, fmt) - exact) <= ulp
    assert abs(fp16.running_sum(x, fmt)[-1].item() - exact) > 5 * ulp  # the plain sum is not


@pytest.mark.parametrize("rows", [1, 40])  # the Python-float loop and the vectorised one
def test_each_addition_is_rounded_to_float32_first_as_torch_does(rows):
    # 1 + (2**-11 + 2**-34): in float32 the sum is 1 + 2**-11, a tie in fp16 that goes to 1.0; rounded straight from
    # the exact sum it would be 1 + 2**-10
    x = torch.tensor([1.0, 2**-11 + 2**-34]).repeat(rows, 1)
    want = (torch.tensor(1.0, dtype=torch.float16) + x[:, 1]).half().float()  # fp16 + fp32 computes in fp32
    assert same(fp16.running_sum(x, "fp16")[:, -1], want) and want[0].item() == 1.0


def test_kahan_sum_in_fp32_rounds_every_operation_to_float32():
    x = torch.full((1000,), 0.1)
    total = comp = np.float32(0.0)
    for v in x.numpy():
        y = np.float32(v - comp)
        t = np.float32(total + y)
        comp = np.float32(np.float32(t - total) - y)
        total = t
    assert fp16.kahan_sum(x, "fp32") == float(total) == 100.0  # a float64 loop would give 100.0000015


def test_update_survives_at_half_an_ulp():
    w, half = 1.5, 2.0**-11  # fp16 gap at 1.5 is 2**-10
    assert fp16.update_survives(w, half * 1.01) and not fp16.update_survives(w, half * 0.99)
    assert not fp16.update_survives(1.0, 1e-4) and fp16.update_survives(1.0, 1e-4, "fp32")
    assert not fp16.update_survives(1.0, 1e-3, "bf16") and fp16.update_survives(1.0, 1e-2, "bf16")
    assert not fp16.update_survives(2.0, 0.0)


def test_lost_update_fraction():
    w = torch.tensor([1.0, 1.0, 1000.0, 0.001, 5.0])
    u = torch.tensor([1e-4, 1e-2, 0.25, 1e-7, 0.0])
    assert fp16.lost_update_fraction(w, u) == 0.5  # 1e-4 on 1, 0.25 on 1000 lost; the zero update not counted
    assert fp16.lost_update_fraction(w, u, "fp32") == 0.0
    assert fp16.lost_update_fraction(w, torch.zeros(5)) == 0.0


def test_classify_examples():
    got = fp16.classify([1e-6, 1e5, 1e-9, 0.0, 1.0, -1e5, math.inf, math.nan], "fp16")
    assert got == "subnormal inf flushed zero normal inf inf nan".split()
    got = fp16.classify([500.0, 460.0, 1e-3, math.inf], "fp8_e4m3")
    assert got == "saturated normal subnormal saturated".split()
    assert fp16.classify(1e3, "fp8_e4m3fnuz") == ["nan"]
    assert fp16.classify(65519.0, "fp16") == ["normal"] and fp16.classify(65520.0, "fp16") == ["inf"]
    assert fp16.classify(1e-40, "bf16") == ["subnormal"] and fp16.classify(1e-40, "fp32") == ["subnormal"]
    assert fp16.classify(torch.tensor([[1e-6, 1.0]]), "fp16") == ["subnormal", "normal"]  # flattened
    # a non-zero number float32 rounds to zero was flushed by that first rounding; a float32 zero is zero
    assert fp16.classify(1e-50, "fp32") == ["flushed"] and fp16.classify(torch.tensor([1e-50]), "fp32") == ["zero"]


@pytest.fixture(scope="module")
def census():
    return fp16.gradient_census()


def test_census_default_model_has_realistic_small_gradients(census):
    params = sum(p.numel() for p in fp16.small_model().parameters())
    assert census.weights.numel() == params
    act = census.fractions["activations"]
    assert act["subnormal"] + act["flushed"] > 0.05  # fp16 loses precision or values here
    assert act["zero"] > 0.1  # ReLU zeros
    assert census.fractions["weights"]["normal"] > 0.5
    again = fp16.gradient_census()
    assert torch.equal(again.activations, census.activations)  # seeded


def test_census_of_a_custom_model_and_other_format():
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))
    x, y = torch.randn(8, 4), torch.randn(8, 2)
    c = fp16.gradient_census(model, batch=(x, y), fmt="fp8_e4m3")
    assert c.fmt == "fp8_e4m3" and c.weights.numel() == 4 * 3 + 3 + 3 * 2 + 2
    assert c.activations.numel() == 8 * (3 + 3 + 2)
    assert sum(c.fractions["activations"].values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="batch"):
        fp16.gradient_census(model)


@pytest.fixture(scope="module")
def training():
    threads = torch.get_num_threads()
    result = fp16.train_master_weights(progress=False)
    assert torch.get_num_threads() == threads  # the one-thread section is undone
    return result


def test_master_weights_keep_learning_where_fp16_weights_stall(training):
    r = training
    assert r.steps == 300 and set(r.loss) == {"fp32", "fp16 weights", "fp32 master weights"}
    final = {k: v[-1] for k, v in r.loss.items()}
    assert all(len(v) == 300 for v in r.loss.values())
    assert final["fp16 weights"] > 20 * final["fp32 master weights"]
    assert final["fp32 master weights"] < 2.5 * final["fp32"]
    fp16_run = r.loss["fp16 weights"]
    assert fp16_run[-1] == pytest.approx(fp16_run[200], rel=0.05)  # stalled
    assert r.lost_fraction["fp16 weights"] > 0.5
    assert r.lost_fraction["fp32 master weights"] < 0.05
    assert r.lost_if_fmt["fp32 master weights"] > 0.3  # these updates only survive in fp32


def test_training_is_seeded_and_shows_progress(training, capsys):
    r = fp16.train_master_weights(20, progress=True)
    # the same seed gives the same run up to the last bits of fp32 sums (a CPU's vector kernels may order them
    # differently: 18.802879 vs 18.802877 at step 13 on one host); another seed is far outside that tolerance
    assert r.loss["fp16 weights"] == pytest.approx(training.loss["fp16 weights"][:20], rel=1e-5)
    other = fp16.train_master_weights(20, progress=False, seed=1).loss["fp16 weights"]
    assert other != pytest.approx(r.loss["fp16 weights"], rel=1e-2)
    assert "training 3 ways" in capsys.readouterr().err
    bf16 = fp16.train_master_weights(20, progress=False, fmt="bf16")
    assert bf16.fmt == "bf16" and "lost if stored in bf16" in repr(bf16)


def test_the_learning_rate_limit_of_train_master_weights_is_the_regressions_own():
    # its error message says: gradient descent diverges above 2 / lambda_max (lambda_max about 2.3: about 0.87)
    from amp_lessons.fp16._experiments import _regression, train_master_weights

    for seed in range(4):
        x, y = _regression(seed)
        lam = float(torch.linalg.eigvalsh((x.T @ x / len(y)).double()).max())
        assert 2.1 < lam < 2.4 and 0.5 < 2 / lam < 0.95, (seed, lam)
    with pytest.raises(ValueError, match=r"lr=0.9 is not allowed: .*\(0, 0.5\]"):
        train_master_weights(lr=0.9)
