"""The hardware report on this machine and, with injected properties, on GPUs it does not have."""

from types import SimpleNamespace

import pytest
import torch

from amp_lessons import device
from amp_lessons.device import CPUInfo, GPUInfo, device_report

PLAIN_CPU = CPUInfo("Test CPU", "x86_64", "AVX2", 4)
BF16_CPU = CPUInfo("Test CPU", "x86_64", "AVX512", 4, avx512_bf16=True)


def props(name, major, minor, gib=16):
    return SimpleNamespace(name=name, major=major, minor=minor, total_memory=gib * 2**30, multi_processor_count=80)


def modes(report):
    return {s.lesson: s.mode for s in report.lesson_support()}


def test_this_machine():
    r = device_report()
    assert r.torch_version == torch.__version__
    assert r.cpu.threads == torch.get_num_threads() >= 1
    assert (r.gpu is None) == (not torch.cuda.is_available())
    assert r.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert device.default_device().type == r.device
    text = str(r)
    assert "Hardware report" in text and r.cpu.capability in text
    assert [s.lesson for s in r.lesson_support()] == list(device.LESSONS)
    assert "<table>" in r._repr_html_()


def test_no_gpu_branch():
    r = device_report(cpu=PLAIN_CPU, no_gpu=True)
    assert r.gpu is None and r.device == "cpu"
    m = modes(r)
    assert m["02"] == "emulated" and m["04"] == "partly emulated" and m["07"] == "emulated"
    assert m["06"] == "reference"  # no bf16 instructions: speed only from reference
    assert "none found" in str(r)
    assert modes(device_report(cpu=BF16_CPU, no_gpu=True))["06"] == "partly emulated"


@pytest.mark.parametrize(
    "name, cap, arch, gen, native",
    [
        ("Tesla V100-SXM2-16GB", (7, 0), "Volta", 1, {"fp16"}),
        ("Tesla T4", (7, 5), "Turing", 2, {"fp16"}),
        ("NVIDIA A100-SXM4-80GB", (8, 0), "Ampere", 3, {"fp16", "tf32", "bf16"}),
        ("NVIDIA A10", (8, 6), "Ampere", 3, {"fp16", "tf32", "bf16"}),
        ("NVIDIA L4", (8, 9), "Ada Lovelace", 4, {"fp16", "tf32", "bf16", "fp8"}),
        ("NVIDIA H100 80GB HBM3", (9, 0), "Hopper", 4, {"fp16", "tf32", "bf16", "fp8"}),
        ("NVIDIA B200", (10, 0), "Blackwell", 5, {"fp16", "tf32", "bf16", "fp8", "fp4"}),
        ("NVIDIA GeForce RTX 5090", (12, 0), "Blackwell (consumer)", 5, {"fp16", "tf32", "bf16", "fp8", "fp4"}),
        ("Tesla P100-PCIE-16GB", (6, 0), "Pascal", 0, set()),
    ],
)
def test_gpu_generations(name, cap, arch, gen, native):
    g = device.gpu_info(props(name, *cap))
    assert g.architecture == arch and g.tensor_core_generation == gen
    got = {n for n in ("fp16", "tf32", "bf16", "fp8", "fp4") if getattr(g, n if n != "fp16" else "fp16_tensor_cores")}
    assert got == native


def test_gpu_with_everything():
    r = device_report(cpu=PLAIN_CPU, gpu_properties=props("NVIDIA H100 80GB HBM3", 9, 0, 80))
    assert r.device == "cuda"
    assert set(modes(r).values()) == {"native"}
    text = str(r)
    assert "9.0 (Hopper)" in text and "80.0 GiB" in text and "fp16, TF32, bf16, fp8" in text


def test_gpu_without_bf16_or_tf32():
    r = device_report(cpu=PLAIN_CPU, gpu_properties=props("Tesla T4", 7, 5))
    m = modes(r)
    assert m["02"] == "emulated" and m["07"] == "emulated"  # no TF32, no fp8 on Turing
    assert m["04"] == "native" and m["06"] == "native"
    detail = {s.lesson: s.detail for s in r.lesson_support()}
    assert "no TF32" in detail["02"] and "no bf16" in detail["06"]


def test_rocm_gpu_is_not_classified_as_nvidia(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    r = device_report(cpu=PLAIN_CPU, gpu_properties=props("AMD Instinct MI300X", 9, 4, 192))
    assert r.gpu.rocm and r.gpu.architecture == "AMD (ROCm)" and not r.gpu.tf32
    assert any("ROCm" in n for n in r.notes)


def test_bad_input():
    with pytest.raises(ValueError, match=r"capability must be a \(major, minor\)"):
        GPUInfo("x", (9,), 1)
    with pytest.raises(ValueError, match="memory_bytes"):
        GPUInfo("x", (9, 0), -1)
    with pytest.raises(TypeError, match="cpu must be a CPUInfo, got dict"):
        device_report(cpu={"name": "x"})


def test_peak_memory_bytes_of_this_process_grows_with_an_allocation():
    # in a fresh interpreter: a long-lived test worker's peak may already be above anything allocated here
    import subprocess
    import sys

    code = ("from amp_lessons.device import peak_memory_bytes as peak\n"
            "before = peak()\n"
            "block = bytearray(512 * 2**20)\n"
            "block[::4096] = b'\\x01' * len(block[::4096])  # touched, so resident\n"
            "print(before, peak())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    if out[0] == "None":
        pytest.skip("no /proc and no resource module here")
    before, after = int(out[0]), int(out[1])
    assert after >= before + 256 * 2**20, (before, after)


def test_peak_memory_bytes_of_another_process():
    import os
    import subprocess
    import sys

    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs Linux /proc")
    child = subprocess.Popen([sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        peak = device.peak_memory_bytes(child.pid)
        assert peak is not None and 1 * 2**20 < peak < 2**30
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert device.peak_memory_bytes(child.pid) is None  # gone


@pytest.mark.parametrize("bad", [0, -3, 1.5, "12", True])
def test_peak_memory_bytes_rejects_bad_pids(bad):
    with pytest.raises(ValueError, match="pid must be a positive int"):
        device.peak_memory_bytes(bad)
