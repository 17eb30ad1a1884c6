"""Lesson 02's experiments: emulated TF32 against the hardware rule, errors, switches, sizes."""

import math

import pytest
import torch

from amp_lessons import formats, recorders
from amp_lessons.tf32 import _experiments as tf32
from tests.tf32.test_tf32_checks import _naive_round as rne, _round_away as rna, _round_down as trunc


def test_emulated_matmul_rounds_both_inputs_with_the_hardware_rule():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(16, 32, generator=g), torch.randn(32, 8, generator=g)
    # plant exact ties (the 13 dropped bits are 1000000000000b): there the three rules differ
    a.view(torch.int32)[:, ::2] = (a.view(torch.int32)[:, ::2] & ~0x1FFF) | 0x1000
    assert torch.equal(tf32.emulated_matmul(a, b), rne(a) @ rne(b))  # the default: ties to even
    assert torch.equal(tf32.emulated_matmul(a, b, "tf32", "nearest_away"), rna(a) @ rna(b))
    assert not torch.equal(rne(a), rna(a))  # the planted ties tell the rules apart
    assert torch.equal(tf32.emulated_matmul(a, b, "tf32", "toward_zero"), trunc(a) @ trunc(b))
    assert tf32.emulated_matmul(a, b).dtype == torch.float32
    one = torch.ones(1, 1)
    tie, odd = torch.tensor([[1.0 + 2**-11]]), torch.tensor([[1.0 + 3 * 2**-11]])  # ties between TF32 neighbours
    assert tf32.emulated_matmul(tie, one).item() == 1.0  # the default rounds ties to even
    assert tf32.emulated_matmul(odd, one).item() == 1.0 + 2**-9
    assert tf32.emulated_matmul(tie, one, "tf32", "nearest_away").item() == 1.0 + 2**-10
    assert tf32.emulated_matmul(torch.ones(0, 3), torch.ones(3, 2)).shape == (0, 2)
    assert torch.equal(tf32.emulated_matmul(torch.ones(2, 0), torch.ones(0, 2)), torch.zeros(2, 2))  # an empty sum


def test_matmul_errors_orders_the_formats():
    errs = {e.variant: e for e in tf32.matmul_errors(128, 256, 64, seed=1)}
    assert "tf32 hardware" not in errs or tf32.has_tf32("cuda")  # only where a TF32 GPU exists
    fp32, rna, rz = errs["fp32"], errs["tf32 emulated"], errs["tf32 emulated (truncation)"]
    assert fp32.rel_error < 1e-5 < rna.rel_error < rz.rel_error
    assert 5 < errs["bf16 inputs"].rel_error / rna.rel_error < 12  # eps ratio 2**3
    assert errs["fp16 inputs"].rel_error == pytest.approx(rna.rel_error, rel=0.05)
    for e in errs.values():
        assert e.max_error >= e.rms_error > 0
    assert rna.how == tf32.MODELLED == "inputs rounded bit-exactly, fp32 sum (model)" and "measured" in fp32.how


def test_error_measures():
    # relative error = max |C - C_ref| / mean |C_ref|, the measure amp_lessons.tf32 reports
    ref = torch.tensor([[1.0, -3.0], [2.0, 2.0]], dtype=torch.float64)
    c = torch.tensor([[1.5, -3.0], [2.0, 1.0]])
    max_err, rel, rms = tf32._errors(c, ref)
    assert max_err == 1.0 and rel == 1.0 / 2.0 and rms == pytest.approx(math.sqrt((0.25 + 1.0) / 4))


def test_error_vs_k_grows_like_sqrt_k():
    ks = [16, 64, 256, 1024]
    d = tf32.error_vs_k(ks, ("tf32", "bf16"), m=32, n=32, seed=2)
    assert d.k == tuple(ks) and set(d.rms) == {"tf32", "bf16"}
    for f in ("tf32", "bf16"):
        slope = math.log(d.rms[f][-1] / d.rms[f][0]) / math.log(ks[-1] / ks[0])
        assert 0.4 < slope < 0.6
    ref_slope = math.log(d.ref_rms[-1] / d.ref_rms[0]) / math.log(ks[-1] / ks[0])
    assert 0.4 < ref_slope < 0.6
    assert set(tf32.error_vs_k(ks, (formats.FloatFormat("e8m3", 8, 3),), m=8, n=8).rms) == {"e8m3"}


def test_fp32_precision_context_restores_and_validates():
    before = (torch.backends.mkldnn.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision)
    with tf32.fp32_precision(cpu_matmul="bf16", conv="ieee"):
        assert torch.backends.mkldnn.matmul.fp32_precision == "bf16"
        assert torch.backends.cudnn.conv.fp32_precision == "ieee"
    assert (torch.backends.mkldnn.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision) == before
    with pytest.raises(RuntimeError, match="boom"):  # restored on errors too
        with tf32.fp32_precision(cpu_matmul="tf32"):
            raise RuntimeError("boom")
    assert torch.backends.mkldnn.matmul.fp32_precision == before[0]


def test_switches_tour_reads_the_defaults_and_the_mixing_error():
    tour = tf32.switches_tour()
    assert tour.legacy_defaults["torch.backends.cuda.matmul.allow_tf32"] is False
    assert tour.legacy_defaults["torch.backends.cudnn.allow_tf32"] is True
    assert tour.new_api_defaults["torch.backends.cudnn.conv.fp32_precision"] == "tf32"
    assert tour.new_api_defaults["torch.backends.cudnn.rnn.fp32_precision"] == "tf32"
    assert tour.new_api_defaults["torch.backends.cuda.matmul.fp32_precision"] == "none"
    assert tour.after_high["torch.backends.cuda.matmul.fp32_precision"] == "tf32"
    assert "RuntimeError" in tour.cuda_matmul_bf16
    assert "mix of the legacy and new APIs" in tour.mixed_read


def test_conv_and_mkldnn_and_sizes():
    conv = {e.variant: e.rel_error for e in tf32.conv_errors(batch=2, channels=8, size=8)}
    assert conv["tf32 emulated"] > 100 * conv["fp32"]
    assert conv["tf32 emulated (truncation)"] > conv["tf32 emulated"]
    effect = tf32.mkldnn_precision_effect(size=64)
    assert set(effect) == {"ieee", "tf32", "bf16"} and effect["ieee"] < 1e-5
    assert tf32.pick_size("cpu") == 1024 and tf32.pick_size("cpu", budget_s=0.5) == 512


def test_time_matmuls_on_cpu_times_fp32_only():
    t = tf32.time_matmuls(64, repeats=2)
    assert set(t) == {"fp32"}
    assert t["fp32"].median_s > 0 and t["fp32"].flops == 2 * 64**3
    if tf32.has_tf32("cuda"):  # a TF32 GPU times both settings
        assert set(tf32.time_matmuls(64, device="cuda", repeats=2)) == {"fp32", "tf32"}


def test_reference_experiments_run_small_on_cpu():
    out = recorders.record_tf32_matmul("cpu", size=64)
    assert out["shape"] == "64x64 @ 64x64"
    assert out["tf32_truncated_rel_error"] > out["tf32_emulated_rel_error"] > out["fp32_rel_error"]
    assert "tf32_time_s" not in out  # no TF32 hardware: no TF32 time is invented
    assert out["speed_shape"] == "64^3" and out["fp32_time_s"] > 0
    check = recorders.record_timing_check("cpu", size=64)
    assert check["shape"] == "64^3 bf16" and check["bf16_time_s"] > 0
    assert check["bf16_tflops"] == pytest.approx(2 * 64**3 / check["bf16_time_s"] / 1e12)


@pytest.mark.skipif(tf32.has_tf32("cuda"), reason="a TF32 GPU measures 'tf32 hardware'")
def test_a_selection_that_would_measure_nothing_here_is_an_error():
    with pytest.raises(ValueError) as info:
        tf32.matmul_errors(8, 8, 8, variants=["tf32 hardware"])
    assert "variants=['tf32 hardware']" in str(info.value) and "tf32 emulated" in str(info.value)
