"""scripts/gpu_probe.py, the probe behind the H200 records, as far as it runs without a GPU: each fp8 variant computes
the product it times, and the dispatch log reads cross_entropy's dtypes under autocast."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

PATH = Path(__file__).resolve().parent.parent / "scripts" / "gpu_probe.py"


@pytest.fixture(scope="module")
def probe():
    spec = importlib.util.spec_from_file_location("gpu_probe", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_probe"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_probe", None)


def test_every_fp8_variant_computes_the_product(probe):
    torch.manual_seed(0)
    variants = probe.fp8_variants(32, 64, 16, "cpu")
    assert list(variants) == ["bf16", "fp8", "fp8unsc", "fp8+hostsc", "fp8+casts"]
    ref = variants["bf16"]().float()
    for name in ("fp8", "fp8+hostsc", "fp8+casts"):  # scaled: within fp8's precision of the bf16 product
        out = variants[name]()
        assert out.dtype == torch.bfloat16 and out.shape == (32, 16)
        assert (out.float() - ref).norm() / ref.norm() < 0.1, name
    assert variants["fp8unsc"]().shape == (32, 16)


def test_the_fp8_cast_saturates_at_448_and_returns_the_inverse_scale(probe):
    t = torch.tensor([[-3.0, 1.5], [0.25, 6.0]])
    q, inv = probe.to_fp8(t)
    assert q.dtype == torch.float8_e4m3fn and float(q.float().abs().max()) == 448.0
    assert float(inv) == pytest.approx(6.0 / 448)


def test_the_dispatch_log_reads_cross_entropys_dtypes(probe):
    lin = torch.nn.Linear(16, 8)
    x, y = torch.randn(4, 16), torch.arange(4)
    with torch.autocast("cpu", dtype=torch.bfloat16), probe.OpDtypes() as log:
        torch.nn.functional.cross_entropy(lin(x), y)
    names = [name for name, _ in log.ops]
    assert "_log_softmax" in names and any("nll_loss" in n for n in names)
    assert dict(log.ops)["_log_softmax"] == "torch.float32"  # the CPU's policy runs cross_entropy in fp32
    assert dict(log.ops)["nll_loss_forward"] == "torch.float32"  # (output, total_weight): the first one's dtype


def test_without_a_gpu_it_says_what_it_needs(probe, monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit):
        probe.main([])
    assert "needs a CUDA GPU with fp8" in capsys.readouterr().err
