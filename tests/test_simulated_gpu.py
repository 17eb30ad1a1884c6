"""The course on a GPU it does not have here: every decision that depends on the device, under a simulated
H100, A100, L4, T4, MI300X (ROCm) and Apple GPU (tests/simulated_gpu.py). No kernel runs on the simulated GPU."""

import re
from pathlib import Path

import nbformat
import pytest
import torch
import torch.nn.functional as F

from amp_lessons import autocast, recorders, tf32
from amp_lessons.device import default_device, device_report
from amp_lessons.lessons import LESSONS, what_runs_where
from tests.simulated_gpu import CUDA_PROFILES, PROFILES, simulate

ROOT = Path(__file__).resolve().parent.parent
ALL = tuple(PROFILES)


@pytest.fixture(params=ALL)
def gpu(request, monkeypatch):
    return simulate(monkeypatch, request.param)


@pytest.fixture(params=CUDA_PROFILES)
def cuda_gpu(request, monkeypatch):
    return simulate(monkeypatch, request.param)


def test_the_course_sees_the_simulated_gpu(gpu):
    r = device_report()
    if gpu.cuda:
        assert r.gpu is not None and r.gpu.name == gpu.name and r.gpu.capability == gpu.capability
        assert r.gpu.rocm == gpu.rocm and r.device == "cuda" and default_device().type == "cuda"
        assert round(r.gpu.memory_gib) == gpu.memory_gib
    else:
        assert r.gpu is None and r.apple_gpu is not None and r.apple_gpu.name == gpu.name
        assert r.device == "cpu" and default_device().type == "cpu"  # the lessons never use the Apple GPU


def test_every_lesson_has_a_row_and_names_the_device_it_uses(gpu):
    rows = what_runs_where(device_report())
    assert [s.lesson for s in rows] == [lesson.number for lesson in LESSONS]
    for s in rows:
        assert s.mode in ("native", "emulated", "partly emulated", "reference"), s
        assert set(s.devices) <= {"cpu", "cuda"} and s.devices, s
        if not gpu.cuda:
            assert s.devices == ("cpu",), s  # no CUDA GPU: everything runs on the CPU


def _notebook_code(number: str) -> str:
    nb = next(lesson.notebook for lesson in LESSONS if lesson.number == number)
    cells = nbformat.read(ROOT / "notebooks" / nb, as_version=4).cells
    return "\n".join(c.source for c in cells if c.cell_type == "code")


# A lesson uses the GPU where its code asks for it: the course's device (default_device()) or a CUDA branch
# (torch.cuda.is_available()). Elsewhere it runs on the CPU whatever the machine has.
_USES_GPU = re.compile(r"default_device\(\)|torch\.cuda\.is_available\(\)")


@pytest.mark.parametrize("number", [lesson.number for lesson in LESSONS])
def test_each_row_says_what_its_notebook_does_on_a_gpu(number, monkeypatch):
    simulate(monkeypatch, "H100")
    row = next(s for s in what_runs_where(device_report()) if s.lesson == number)
    code = _notebook_code(number)
    uses_gpu = bool(_USES_GPU.search(code))
    assert ("cuda" in row.devices) == uses_gpu, (row, uses_gpu)
    if number != "00":  # 00 is the report itself
        assert "cpu" in row.devices or uses_gpu
    if row.devices == ("cpu",):
        # a row of a lesson that stays on the CPU never claims to run on the GPU
        assert not re.search(r"on the NVIDIA H100|timed on the|GradScaler\('cuda'\)|run on the NVIDIA", row.detail), (
            row.detail
        )
        assert "CPU" in row.detail, row.detail


def test_tf32_and_fp8_rows_follow_the_compute_capability(cuda_gpu):
    rows = {s.lesson: s for s in what_runs_where(device_report())}
    nvidia = not cuda_gpu.rocm
    tf32_hw = nvidia and cuda_gpu.capability >= (8, 0)
    fp8_hw = nvidia and cuda_gpu.capability >= (8, 9)
    assert (rows["02"].mode == "native") == tf32_hw
    assert tf32.has_tf32("cuda") == tf32_hw
    # lesson 07 emulates its fp8 casts on the CPU on every machine and runs torch._scaled_mm and its cast costs on
    # the GPU: the row says whether this GPU has fp8 tensor cores (else the speed figures are the references)
    assert rows["07"].devices == ("cpu", "cuda") and rows["07"].mode == "partly emulated"
    if fp8_hw:
        assert f"measured on the {cuda_gpu.name}'s fp8 tensor cores" in rows["07"].detail
    else:
        assert "H100 and H200 references" in rows["07"].detail
    assert rows["05"].devices == ("cpu",) and "GradScaler('cpu')" in rows["05"].detail


def test_lesson_04_previews_cuda_on_cpu_tensors_where_cuda_is_available(cuda_gpu):
    """Lesson 04 traces CPU tensors under device_type='cuda': where torch sees a GPU the preview must still run
    (fake=None: preview unless every tensor is already on the GPU)."""
    lin, x = torch.nn.Linear(16, 4), torch.randn(8, 16)
    t = autocast.trace(lambda m, v: F.layer_norm(m(v), (4,)), lin, x, device_type="cuda")
    assert t.fake and t.device_type == "cuda"
    assert [r.out_dtypes[0] for r in t.ops if r.name in ("addmm", "native_layer_norm")] == [
        torch.float16,
        torch.float32,
    ]
    a, b = torch.ones(8, 16), torch.ones(16, 4)
    assert autocast.trace(lambda p, q: p @ q, a, b, device_type="cuda").output.dtype == torch.float16
    with pytest.raises(ValueError, match=r"is on cpu.*\.cuda\(\)"):
        autocast.trace(lambda m, v: m(v), lin, x, device_type="cuda", fake=False)  # real CUDA needs CUDA tensors


def test_lesson_04_checkers_work_where_cuda_is_available(cuda_gpu):
    ok = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y))
    assert ok.ok, ok.message
    starter = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y))
    assert not starter.ok and "unsafe to autocast" in starter.message
    preds = autocast.check_dtype_predictions({"cuda: cumsum(a @ b, 0)": "float32", "cpu: cumsum(a @ b, 0)": "bfloat16"})
    assert "wrong" not in preds.message and preds.todo


def test_lesson_04_checker_never_raises_on_a_learner_answer(cuda_gpu):
    outside = torch.zeros(16)  # a real tensor the learner's function reaches through a closure

    def closure(z, y):
        return F.binary_cross_entropy_with_logits(z, y) + outside.sum()

    def name_error(z, y):
        return F.binary_cross_entropy_with_logits(z, y) + undefined_name  # noqa: F821

    for fn in (closure, name_error, lambda z, y: F.binary_cross_entropy_with_logits(z, y).item()):
        result = autocast.check_bce_fix(fn)
        assert not result.ok and result.message, fn
    assert "closure" in autocast.check_bce_fix(closure).message


def test_throughput_on_a_gpu_is_not_predicted_from_the_launch_bound_probe(monkeypatch):
    """On a GPU a 256^3 matmul is bound by its launch (an H200 measured 1.86 TFLOP/s in bf16 there), so the rate
    probe must not predict the first size of each dtype: it once made the H200's reference recorder skip its bf16,
    fp16 and fp32 rows at 8192^3 ("would take about 7.7 s"), where each takes about a millisecond. On a CPU the probe
    still predicts; the recorder has no time budget at all."""
    from amp_lessons.e2e import _experiments as e2e

    calls = []
    monkeypatch.setattr(e2e, "matmul_rates", lambda device="cpu": calls.append(str(device)) or {"bf16": 1.0})
    assert e2e.first_rates("cpu") == {"bf16": 1.0} and calls == ["cpu"]
    simulate(monkeypatch, "H100")
    assert e2e.first_rates("cuda") == {} and calls == ["cpu"]  # no probe asked for on the GPU
    # the recorder: no budget, whatever the rates predict (here on the CPU, with a rate that predicts hours)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    out = recorders.record_matmul_throughput("cpu", size=64)
    assert "bf16_tflops" in out and "fp32_tflops" in out and not any(k.endswith("_skipped") for k in out), out
