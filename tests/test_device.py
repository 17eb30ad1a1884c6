"""The hardware report on this machine and, with injected properties, on GPUs it does not have."""

import re
import sys
import warnings
from types import SimpleNamespace

import pytest
import torch

from amp_lessons import device
from amp_lessons.device import CPUInfo, MPSInfo, device_report
from amp_lessons.lessons import LESSONS, what_runs_where

PLAIN_CPU = CPUInfo("Test CPU", "x86_64", "AVX2", 4)
BF16_CPU = CPUInfo("Test CPU", "x86_64", "AVX512", 4, avx512_bf16=True)
APPLE_CPU = CPUInfo("Apple M2 Pro", "arm64", "DEFAULT", 10)
M2 = MPSInfo("Apple M2 Pro", True, ("fp16", "bf16"))


def props(name, major, minor, gib=16):
    return SimpleNamespace(name=name, major=major, minor=minor, total_memory=gib * 2**30, multi_processor_count=80)


def rocm_props(name="AMD Instinct MI300X", major=9, minor=4, gib=192, arch="gfx942:sramecc+:xnack-", **extra):
    """What torch.cuda.get_device_properties(0) reports on a ROCm build (plus the injected bf16 probe)."""
    memory = gib * 2**30
    return SimpleNamespace(name=name, major=major, minor=minor, total_memory=memory, multi_processor_count=304,
                           gcnArchName=arch, **extra)  # fmt: skip


def details(report):
    return {s.lesson: s.detail for s in what_runs_where(report)}


def modes(report):
    return {s.lesson: s.mode for s in what_runs_where(report)}


def test_this_machine():
    r = device_report()
    assert r.torch_version == torch.__version__
    assert r.cpu.threads == torch.get_num_threads() >= 1
    assert (r.gpu is None) == (not torch.cuda.is_available())
    assert r.device == ("cuda" if torch.cuda.is_available() else "cpu")
    assert device.default_device().type == r.device
    text = str(r)
    assert "Hardware report" in text and r.cpu.capability in text
    assert [s.lesson for s in what_runs_where(r)] == [lesson.number for lesson in LESSONS]
    assert r._repr_html_().count("<table") == 1  # the hardware; what each lesson runs is the course's table
    runs = what_runs_where(r)
    assert len(runs) == len(LESSONS) and runs._repr_html_().count("<tr>") == 1 + len(LESSONS)
    lines = str(runs).splitlines()
    assert lines[0] == "What each lesson runs here:" and len(lines) == 1 + len(LESSONS)


def test_no_gpu_branch():
    r = device_report(cpu=PLAIN_CPU, no_gpu=True)
    assert r.gpu is None and r.device == "cpu"
    m = modes(r)
    assert m["02"] == "emulated" and m["04"] == "partly emulated" and m["07"] == "emulated"
    assert m["06"] == "reference"  # no bf16 instructions: speed only from reference
    assert "none found" in str(r)
    assert modes(device_report(cpu=BF16_CPU, no_gpu=True))["06"] == "partly emulated"


def test_cpu_fp16_path_counts_onednn_and_amx(monkeypatch):
    assert not PLAIN_CPU.fp16_hardware
    onednn = CPUInfo("Test CPU", "x86_64", "AVX512", 4, onednn_fp16=True)  # AVX512-FP16 or AVX-NE-CONVERT
    amx = CPUInfo("Test CPU", "x86_64", "AVX512", 4, amx_fp16=True)
    assert onednn.fp16_hardware and amx.fp16_hardware
    row = dict(device_report(cpu=onednn, no_gpu=True).rows())["CPU fp16 instructions"]
    assert row == "yes (oneDNN fp16 path yes, AMX-FP16 no)"
    # the probe is torch's own check, and a torch without it reads as "no"
    assert device.cpu_info().onednn_fp16 == bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    monkeypatch.setattr(torch.ops, "mkldnn", SimpleNamespace())
    assert device._onednn_fp16() is False


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
    m = modes(r)
    # lesson 09's process groups are gloo on CPU processes and its large reductions emulated, and lesson 10's
    # block formats are emulated (native only on Blackwell-class GPUs), on any machine; lesson 07 emulates its fp8
    # casts on the CPU and measures torch._scaled_mm and the casts' cost on the GPU's fp8 tensor cores
    assert m.pop("09") == "partly emulated" and m.pop("10") == "emulated" and m.pop("07") == "partly emulated"
    assert set(m.values()) == {"native"}
    text = str(r)
    assert "9.0 (Hopper)" in text and "80.0 GiB" in text and "fp16, TF32, bf16, fp8" in text


@pytest.mark.parametrize("name, cap", [("Tesla V100-SXM2-16GB", (7, 0)), ("Tesla T4", (7, 5))])
def test_gpu_without_bf16_claims_no_bf16(name, cap):
    r = device_report(cpu=PLAIN_CPU, gpu_properties=props(name, *cap))
    assert not r.gpu.bf16 and r.gpu.fp16_tensor_cores
    assert dict(r.rows())["native formats"] == "fp16"
    assert modes(r)["04"] == "native" and modes(r)["06"] == "native"
    d = details(r)
    for lesson in ("04", "06"):
        assert "no bf16 tensor cores" in d[lesson] and "bf16" in d[lesson] and "emulated (slow)" in d[lesson]
    assert "bf16 training run is skipped" in d["06"]
    assert modes(r)["02"] == "emulated" and "no TF32" in d["02"] and modes(r)["07"] == "partly emulated"  # no fp8
    assert "no bf16 tensor cores" in what_runs_where(r)._repr_html_()


@pytest.mark.parametrize("bf16_supported, row", [(True, "yes"), (False, "no"), (None, "unknown")])
def test_rocm_gpu_from_its_properties(bf16_supported, row):
    extra = {} if bf16_supported is None else {"bf16_supported": bf16_supported}
    r = device_report(cpu=PLAIN_CPU, gpu_properties=rocm_props(**extra))
    g = r.gpu
    assert g.rocm and g.vendor == "amd" and g.arch_name == "gfx942:sramecc+:xnack-"
    assert g.tensor_core_generation == 0 and g.architecture == "AMD (ROCm)"
    assert not (g.tf32 or g.fp8 or g.fp4 or g.fp16_tensor_cores)  # not claimed: unknown for AMD GPUs
    assert g.bf16 == bool(bf16_supported) and g.bf16_supported is bf16_supported
    assert r.device == "cuda"
    rows = dict(r.rows())
    assert rows["gcnArchName"] == "gfx942:sramecc+:xnack-" and rows["bf16"].startswith(row)
    assert "compute units" in rows["GPU"] and "192.0 GiB" in rows["GPU"]
    assert rows["TF32, fp8, fp4"].startswith("unknown")
    text = str(r)
    # an MI300 reports (9, 4): nothing may call it an NVIDIA architecture
    for nvidia in ("Hopper", "compute capability", "native formats", "tensor cores on", "SMs"):
        assert nvidia not in text, nvidia
    assert not re.search(r"generation \d", text)
    m, d = modes(r), details(r)
    assert m["02"] == "emulated" and "not classified" in d["02"] and "has no TF32" not in d["02"]
    assert m["07"] == "partly emulated" and "not classified" in d["07"] and "has no fp8" not in d["07"]
    assert m["04"] == "native" and m["06"] == "native" and "not classified" in d["06"]
    assert ("fp16 and bf16" in d["06"]) == bool(bf16_supported)
    assert any("ROCm" in n for n in r.notes)
    assert "gfx942" in r._repr_html_()


def test_rocm_vendor_from_explicit_field_or_build(monkeypatch):
    p = props("AMD Radeon PRO W7900", 11, 0)
    assert not device.gpu_info(p).rocm
    p.vendor = "amd"
    g = device.gpu_info(p)
    assert g.rocm and g.arch_name == "" and g.bf16_supported is None  # injected data: nothing probed
    assert dict(device_report(cpu=PLAIN_CPU, gpu_properties=p).rows())["gcnArchName"] == "unknown"
    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    assert device.gpu_info(props("AMD Instinct MI250X", 9, 0)).rocm  # a ROCm build: an AMD GPU
    assert not device.gpu_info(SimpleNamespace(**vars(props("x", 9, 0)), vendor="nvidia")).rocm


def test_real_probe_on_a_rocm_build(monkeypatch):
    monkeypatch.setattr(torch.version, "hip", "6.2", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: rocm_props())
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    g = device.gpu_info()
    assert g.rocm and g.bf16_supported is True and g.bf16 and g.arch_name.startswith("gfx942")
    assert device.default_device().type == "cuda"  # ROCm GPUs are torch's "cuda" device


def test_real_probe_on_a_cuda_build_does_not_ask_for_bf16(monkeypatch):
    def no(*a, **k):
        raise AssertionError("NVIDIA bf16 comes from the compute capability")

    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: props("NVIDIA H100 80GB HBM3", 9, 0, 80))
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", no)
    g = device.gpu_info()
    assert not g.rocm and g.architecture == "Hopper" and g.bf16 and g.bf16_supported is None


def test_apple_gpu_is_reported_and_the_lessons_run_on_the_cpu():
    plain = device_report(cpu=APPLE_CPU, no_gpu=True)
    r = device_report(cpu=APPLE_CPU, no_gpu=True, mps=M2)
    assert r.device == "cpu" and r.apple_gpu == M2 and plain.apple_gpu is None
    assert modes(r) == modes(plain)  # the Apple GPU changes nothing the lessons do
    rows = dict(r.rows())
    assert rows["Apple GPU"] == "Apple M2 Pro (MPS): not used by the lessons, they run on the CPU"
    assert rows["MPS autocast"].startswith("torch.autocast('mps') accepts fp16, bf16")
    assert rows["GPU"] == "no CUDA GPU found: experiments run on the CPU"
    d = details(r)
    for lesson in ("02", "03", "05", "06"):
        assert d[lesson].endswith("on the CPU (the Apple GPU is not used)"), lesson
    assert "accepts fp16, bf16, but the lesson does not use the Apple GPU" in d["04"]
    assert any("default_device() is cpu" in n for n in r.notes)
    html = r._repr_html_()
    assert "Apple M2 Pro (MPS)" in html and "MPS autocast" in html


def test_apple_gpu_without_mps_autocast():
    r = device_report(cpu=APPLE_CPU, no_gpu=True, mps=MPSInfo("Apple GPU (MPS)", True))
    assert "accepts neither fp16 nor bf16" in dict(r.rows())["MPS autocast"]
    assert "accepts neither fp16 nor bf16" in details(r)["04"]


def test_mps_that_is_not_available_changes_nothing():
    off = MPSInfo("Apple GPU (MPS)", False, ("fp16", "bf16"))
    assert str(device_report(cpu=APPLE_CPU, no_gpu=True, mps=off)) == str(device_report(cpu=APPLE_CPU, no_gpu=True))


def test_mps_probe_on_this_machine():
    m = device.mps_info()
    assert isinstance(m, MPSInfo) and m.available == torch.backends.mps.is_available()
    assert set(m.autocast_dtypes) <= {"fp16", "bf16"}
    if not torch.amp.autocast_mode.is_autocast_available("mps"):
        assert m.autocast_dtypes == ()
    assert isinstance(device_report().mps, MPSInfo)
    assert device_report(no_gpu=True).mps is None  # no_gpu: no GPU probe at all


def test_mps_autocast_probe_follows_torch(monkeypatch):
    amp = torch.amp.autocast_mode
    monkeypatch.setattr(amp, "is_autocast_available", lambda d: True)
    monkeypatch.setattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", lambda op, key: key == "AutocastMPS")

    class Autocast:  # torch's own check: warns and disables itself for a dtype it does not accept
        def __init__(self, device_type, dtype):
            self._enabled = dtype == torch.float16
            if not self._enabled:
                warnings.warn(
                    "In MPS autocast, but the target dtype is not supported. Disabling autocast.", stacklevel=2
                )

    monkeypatch.setattr(torch, "autocast", Autocast)
    assert device.mps_info().autocast_dtypes == ("fp16",)
    monkeypatch.setattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", lambda op, key: False)
    assert device.mps_info().autocast_dtypes == ()

    def unknown_key(op, key):
        raise RuntimeError(f"unknown dispatch key {key}")

    monkeypatch.setattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", unknown_key)
    assert device.mps_info().autocast_dtypes == ()
    monkeypatch.setattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", lambda op, key: True)
    monkeypatch.setattr(amp, "is_autocast_available", lambda d: d != "mps")
    assert device.mps_info().autocast_dtypes == ()


def test_mps_name_probe(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "get_name", lambda: "Apple M3 Max", raising=False)
    assert device.mps_info().name == "Apple M3 Max" and device.mps_info().available

    def fails():
        raise RuntimeError("no Metal device")

    monkeypatch.setattr(torch.backends.mps, "get_name", fails, raising=False)
    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(device, "_sysctl", lambda key: "Apple M2 Pro" if key == "machdep.cpu.brand_string" else None)
    assert device.mps_info().name == "Apple M2 Pro"
    monkeypatch.setattr(device, "_sysctl", lambda key: None)
    assert device.mps_info().name == "Apple GPU (MPS)"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert not device.mps_info().available


def test_sysctl_probe_fails_quietly_off_macos():
    if sys.platform == "darwin":
        assert device._sysctl("machdep.cpu.brand_string")
    else:
        assert device._sysctl("machdep.cpu.brand_string") is None


def test_default_device_is_never_mps(monkeypatch):
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert device.default_device() == torch.device("cpu")


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: device_report(no_gpu=True, gpu_properties=props("Tesla T4", 7, 5)), ValueError, "contradict"),
        (lambda: device.gpu_info(SimpleNamespace(name="x")), TypeError, "lacks major, minor, total_memory"),
        (
            lambda: device.gpu_info(props("x", 9.5, 0)),
            ValueError,
            r"properties.major=9.5 is not allowed: it must be an int >= 0",
        ),
        (lambda: device.gpu_info(props("x", 9, -1)), ValueError, r"properties.minor=-1 is not allowed"),
        (
            lambda: device.gpu_info(SimpleNamespace(**vars(props("x", 9, 0)), vendor="intel")),
            ValueError,
            "vendor='intel' is not allowed: use one of 'nvidia', 'amd'",
        ),
        (lambda: device.gpu_info(rocm_props(arch=942)), TypeError, "gcnArchName must be a str, got 942"),
        (lambda: MPSInfo("Apple M2", True, ("fp8",)), ValueError, r"autocast_dtypes=\('fp8',\) is not allowed"),
        (lambda: MPSInfo("Apple M2", True, ("fp16", "fp16")), ValueError, "distinct values"),
    ],
)
def test_bad_input_names_the_value_and_what_is_allowed(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_this_machines_budgets_are_the_ones_the_argument_checks_enforce():
    from amp_lessons import _validate

    # the probes and budgets are device's; the checks read the very same objects
    assert device.machine_flops() > 1e6 and device.machine_flops() == device.machine_flops()  # measured once
    assert device.machine_memory_bytes() > 0
    assert device.MAX_TENSOR_BYTES == min(2 * 1024**3, device.machine_memory_bytes() // 8) > 0
    assert device.WORK_BUDGET_S == 1800.0
    for name in ("MAX_TENSOR_BYTES", "WORK_BUDGET_S", "machine_flops", "machine_memory_bytes"):
        assert name in device.__all__ and getattr(_validate, name) is getattr(device, name)
        assert name not in _validate.__all__
