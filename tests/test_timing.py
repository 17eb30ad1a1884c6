"""time_fn on the CPU for real, on CUDA with fake events; the spec-sheet table and its name matching."""

import math
import statistics
import subprocess
import sys
import time

import pytest
import torch

from amp_lessons import timing
from amp_lessons.timing import MAX_BLOCK_CALLS, SPEC_PEAKS, Timing, gpu_spec, matmul_flops, spec_peak_tflops, time_fn

# Every name torch reports for the GPUs in the table -> the row it must match.
NAMES = {
    "Tesla V100-SXM2-16GB": "Tesla V100 SXM2",
    "Tesla V100-SXM2-32GB": "Tesla V100 SXM2",
    "Tesla V100-PCIE-32GB": "Tesla V100 PCIe",
    "Tesla T4": "Tesla T4",
    "NVIDIA A10": "NVIDIA A10",
    "NVIDIA A100-SXM4-80GB": "NVIDIA A100",
    "NVIDIA A100-SXM4-40GB": "NVIDIA A100",
    "NVIDIA A100-PCIE-40GB": "NVIDIA A100",
    "NVIDIA A100 80GB PCIe": "NVIDIA A100",
    "NVIDIA L4": "NVIDIA L4",
    "NVIDIA L40S": "NVIDIA L40S",
    "NVIDIA H100 80GB HBM3": "NVIDIA H100 SXM",
    "NVIDIA H100 PCIe": "NVIDIA H100 PCIe",
    "NVIDIA H200": "NVIDIA H200",
    "NVIDIA GeForce RTX 3090": "NVIDIA GeForce RTX 3090",
    "NVIDIA GeForce RTX 4090": "NVIDIA GeForce RTX 4090",
}
# Near misses that have figures of their own: no row may claim them.
UNKNOWN = [
    "NVIDIA H100 NVL",
    "NVIDIA H200 NVL",
    "NVIDIA A10G",
    "NVIDIA L40",
    "Tesla V100S-PCIE-32GB",
    "NVIDIA GeForce RTX 3090 Ti",
    "NVIDIA GeForce RTX 4090 D",
    "NVIDIA GeForce RTX 4090 Laptop GPU",
    "NVIDIA GH200 480GB",
    "NVIDIA B200",
    "Tesla P100-PCIE-16GB",
    "cpu",
    "",
]


def test_cpu_counts_calls_and_takes_the_median():
    calls = []
    t = time_fn(lambda: calls.append(1), warmup=2, repeats=7)
    assert len(calls) == 2 + 7
    assert len(t.times_s) == 7 and all(x >= 0 for x in t.times_s)
    assert t.median_s == statistics.median(t.times_s)
    assert (t.device, t.method, t.l2_flushed, t.flops, t.dtype_key) == ("cpu", "perf_counter", False, None, None)
    assert t.tflops is None and t.peak_tflops is None and t.percent_of_peak is None
    assert time_fn(lambda: None, device=torch.device("cpu"), warmup=0, repeats=1).device == "cpu"


def test_cpu_real_matmul_rate_and_repr():
    a = torch.randn(64, 64)
    flops = matmul_flops(64, 64, 64)
    t = time_fn(lambda: a @ a, warmup=0, repeats=3, flops=flops, dtype_key="fp32", flush_l2=True)
    assert t.l2_flushed is False  # flush_l2 is ignored on the CPU
    assert t.tflops == pytest.approx(flops / t.median_s / 1e12)
    assert t.peak_tflops is None and t.percent_of_peak is None  # no spec peak for CPUs
    text = repr(t)
    assert text == str(t) and "\n" not in text
    assert text.startswith("median ") and "over 3 runs on cpu (perf_counter)" in text
    assert text.endswith("TFLOP/s (no spec peak known for CPUs)")


def test_cpu_blocks_average_fast_calls_with_torchs_timer():
    # a call of about a microsecond in pure Python (a matmul's worker threads can wait milliseconds on a busy machine)
    t = time_fn(lambda: sum(range(50)), warmup=5, repeats=5, block_s=2e-3)
    assert t.method == "benchmark.Timer" and 1 < t.calls_per_run <= MAX_BLOCK_CALLS
    assert len(t.times_s) == 5 and all(x > 0 for x in t.times_s)  # seconds per call, each the mean of a block
    assert f"{t.calls_per_run} calls a run" in str(t)


def test_cpu_blocks_keep_the_callers_thread_count():
    # torch.utils.benchmark.Timer runs with one thread unless told: time_fn passes the caller's count
    seen, was = set(), torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        time_fn(lambda: seen.add(torch.get_num_threads()) or sum(range(100)), warmup=1, repeats=2, block_s=1e-3)
    finally:
        torch.set_num_threads(was)
    assert seen == {2}


def test_cpu_calls_slower_than_a_block_are_timed_one_by_one_and_counted():
    calls = []

    def slow():
        calls.append(1)
        time.sleep(0.003)

    t = time_fn(slow, warmup=1, repeats=3, block_s=1e-3)
    assert (t.method, t.calls_per_run, len(calls)) == ("perf_counter", 1, 1 + 3)
    assert min(t.times_s) >= 0.003


def test_block_s_is_for_the_cpu_only():
    with pytest.raises(ValueError, match="block_s=0.001 is for the CPU only"):
        time_fn(lambda: None, device="cuda", repeats=1, block_s=1e-3)


def test_iqr_is_torchs_interquartile_range():
    runs = (0.004, 0.001, 0.002, 0.1, 0.003, 0.0025)  # one run slowed 40x: the IQR hardly moves
    t = Timing(statistics.median(runs), runs, "cpu")
    q = torch.tensor(runs, dtype=torch.float64).quantile(torch.tensor([0.25, 0.75], dtype=torch.float64))
    assert t.iqr_s == pytest.approx(float(q[1] - q[0]), rel=1e-12)
    assert t.iqr_s < 0.002 < t.max_s - t.min_s
    assert Timing(1.0, (1.0,), "cpu").iqr_s == 0.0
    assert "IQR" in str(t) and "IQR" not in str(Timing(1.0, (1.0,), "cpu"))


class FakeEvent:
    def __init__(self, log, clock, enable_timing=False):
        assert enable_timing is True
        self.log, self.clock, self.t = log, clock, None

    def record(self, stream=None):
        self.t = self.clock[0]
        self.log.append("record")

    def elapsed_time(self, end):
        assert self.log[-1] == "sync", "events read before torch.cuda.synchronize()"
        return end.t - self.t  # milliseconds


class FakeBuffer:
    def __init__(self, log):
        self.log = log

    def zero_(self):
        self.log.append("zero")
        return self


@pytest.fixture
def fake_cuda(monkeypatch):
    """A CUDA 'GPU' where each call of fn advances a clock by 2, 4, 6 ... ms."""
    log, clock, allocated = [], [0.0], []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    monkeypatch.setattr(torch.cuda, "Event", lambda enable_timing=False: FakeEvent(log, clock, enable_timing))

    def alloc(device):
        allocated.append(device)
        return FakeBuffer(log)

    monkeypatch.setattr(timing, "_l2_flush_buffer", alloc)
    step = [0]

    def fn():
        step[0] += 1
        clock[0] += 2.0 * step[0]
        log.append("fn")

    return fn, log, allocated


def test_cuda_events_synchronize_and_flush(fake_cuda):
    fn, log, allocated = fake_cuda
    flops = matmul_flops(8192, 8192, 8192)
    t = time_fn(fn, device="cuda", warmup=2, repeats=3, flush_l2=True, flops=flops, dtype_key="bf16")
    assert log == (["sync", "fn", "fn", "sync"] + ["zero", "record", "fn", "record"] * 3 + ["sync"])
    assert len(allocated) == 1 and allocated[0].type == "cuda"  # one buffer per time_fn call
    # warm-up calls took 2 and 4 ms; the timed ones 6, 8, 10 ms
    assert t.times_s == pytest.approx((0.006, 0.008, 0.010))
    assert t.median_s == pytest.approx(0.008)
    assert (t.device, t.method, t.l2_flushed) == ("NVIDIA H100 80GB HBM3", "cuda events", True)
    assert t.peak_tflops == 989
    assert t.tflops == pytest.approx(flops / 0.008 / 1e12)
    assert t.percent_of_peak == pytest.approx(100 * t.tflops / 989)
    assert str(t) == (
        "median 8.00 ms (IQR 2.00 ms; min 6.00 ms, max 10.0 ms) over 3 runs on NVIDIA H100 80GB HBM3 (cuda events, L2 "
        "flushed): "
        f"137 TFLOP/s = {t.percent_of_peak:.0f}% of the 989 TFLOP/s bf16 spec peak"
    )


def test_cuda_without_flush_allocates_nothing(fake_cuda):
    fn, log, allocated = fake_cuda
    t = time_fn(fn, device=torch.device("cuda"), warmup=0, repeats=2)
    assert allocated == [] and "zero" not in log
    assert log == ["sync", "sync", "record", "fn", "record", "record", "fn", "record", "sync"]
    assert t.l2_flushed is False and "(cuda events)" in str(t)


def test_cuda_with_index_makes_that_device_current(fake_cuda, monkeypatch):
    import contextlib

    fn, log, _ = fake_cuda
    entered = []

    @contextlib.contextmanager
    def fake_device(index):
        start = len(log)
        yield
        entered.append((index, log[start:]))  # what ran while the device was current

    monkeypatch.setattr(torch.cuda, "device", fake_device)
    time_fn(fn, device="cuda:1", warmup=0, repeats=1)
    assert entered == [(1, ["sync", "sync", "record", "fn", "record", "sync"])]
    time_fn(fn, device="cuda", warmup=0, repeats=1)
    assert len(entered) == 1  # plain "cuda": the current device, no switch


def test_cuda_requested_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match=r"needs a CUDA GPU.*is_available\(\) is False.*device='cpu'"):
        time_fn(lambda: None, device="cuda")


def test_timing_text_variants():
    h100 = dict(device="NVIDIA H100 80GB HBM3", method="cuda events")
    t = Timing(0.001, (0.001,), flops=1e12, dtype_key="fp16", **h100)
    assert str(t).endswith("1000 TFLOP/s = 101% of the 989 TFLOP/s fp16 spec peak")
    assert "over 1 run on" in str(t)
    assert str(Timing(0.001, (0.001,), flops=1e12, **h100)).endswith("(give dtype_key to compare with the spec peak)")
    v100 = Timing(0.01, (0.01,), "Tesla V100-SXM2-16GB", 1e12, "tf32", "cuda events")
    assert v100.peak_tflops is None and v100.percent_of_peak is None
    assert str(v100).endswith("(the Tesla V100-SXM2-16GB has no tf32 spec peak)")
    other = Timing(0.01, (0.01,), "NVIDIA B200", 1e12, "bf16", "cuda events")
    assert str(other).endswith("(no spec peak known for NVIDIA B200)")
    assert str(Timing(2.5, (2.5,), "cpu")) == "median 2.50 s over 1 run on cpu (perf_counter)"
    assert "157 µs" in str(Timing(157e-6, (157e-6,), "cpu"))


def test_matmul_flops():
    assert matmul_flops(2, 3, 4) == 48.0 and isinstance(matmul_flops(1, 1, 1), float)
    assert matmul_flops(8192, 8192, 8192) == 2 * 8192**3


@pytest.mark.parametrize("name, row", sorted(NAMES.items()))
def test_every_listed_name_matches_exactly_one_row(name, row):
    assert gpu_spec(name).name == row
    assert [s.name for s in SPEC_PEAKS if s.matches(name)] == [row]


@pytest.mark.parametrize("name", UNKNOWN)
def test_near_misses_match_no_row(name):
    assert gpu_spec(name) is None
    assert spec_peak_tflops(name, "fp32") is None


def test_spec_figures():
    assert spec_peak_tflops("NVIDIA H100 80GB HBM3", "bf16") == 989
    assert spec_peak_tflops("NVIDIA H100 80GB HBM3", "fp8") == 1979
    assert spec_peak_tflops("NVIDIA H100 PCIe", "bf16") == 756
    assert spec_peak_tflops("NVIDIA A100-SXM4-80GB", "tf32") == 156
    assert spec_peak_tflops("NVIDIA A10", "tf32") == 62.5  # not the A100's 156
    assert spec_peak_tflops("NVIDIA L4", "fp8") == 242.5 and spec_peak_tflops("NVIDIA L40S", "fp8") == 733
    assert spec_peak_tflops("Tesla V100-SXM2-16GB", "tf32") is None
    assert spec_peak_tflops("Tesla V100-SXM2-16GB", "fp16") == 125
    assert spec_peak_tflops("NVIDIA A100-PCIE-40GB", "fp8") is None
    assert spec_peak_tflops("NVIDIA H200", "bf16") == spec_peak_tflops("NVIDIA H100 80GB HBM3", "bf16")


def test_spec_table_is_consistent_with_the_hardware():
    for s in SPEC_PEAKS:
        peaks = {k: s.peak(k) for k in timing.DTYPE_KEYS}
        assert peaks["fp32"] and peaks["fp16"], s.name  # every GPU listed has fp16 tensor cores
        assert (peaks["tf32"] is None) == (peaks["bf16"] is None), s.name  # both arrived with Ampere
        assert peaks["bf16"] in (None, peaks["fp16"]), s.name  # same tensor-core rate
        if peaks["tf32"] is not None:
            assert peaks["fp32"] <= peaks["tf32"] < peaks["bf16"], s.name
        if peaks["fp8"] is not None:  # L40S datasheet: 733 fp8 vs 2 x 362 fp16, hence 2 %
            assert peaks["fp8"] == pytest.approx(2 * peaks["fp16"], rel=0.02), s.name
        assert s.note, s.name


def test_spread_of_runs_and_its_rates():
    s = timing.Spread.of([0.003, 0.001, 0.002])
    assert (s.min, s.median, s.max, s.n) == (0.001, 0.002, 0.003, 3)
    assert s.unit() == ("ms", 1e-3) and s.cells(1e-3) == ["1.00", "2.00", "3.00"]
    assert s.seconds_text() == "2.00 ms (1.00–3.00 ms, 3 runs)"
    r = s.inverse(6.0)  # 6 units of work: the fastest run gives the largest rate
    assert (r.min, r.median, r.max) == (2000.0, 3000.0, 6000.0)
    assert s.overlaps(timing.Spread.of([0.0025, 0.004])) and not s.overlaps(timing.Spread.of([0.004, 0.005]))
    t = time_fn(lambda: None, repeats=4)
    assert t.spread.n == 4 and t.min_s == t.spread.min and t.max_s == t.spread.max


@pytest.mark.parametrize(
    "values, err, match",
    [
        ([], ValueError, "values must hold one or more positive"),
        ([0.001, -1.0], ValueError, "values must hold one or more positive"),
        ([0.001, math.nan], ValueError, "values must hold"),
        (3.0, TypeError, "values must be a Timing or a sequence"),
        (["1 ms"], ValueError, "values must hold"),
    ],
)
def test_spread_rejects_bad_runs(values, err, match):
    with pytest.raises(err, match=match):
        timing.Spread.of(values)


def test_a_comparison_says_when_the_runs_overlap():
    """The verdict reads the quartiles: one run slowed down by a busy machine (900 µs) moves the extremes, not the
    verdict; the typical runs of the two settings overlap, so neither is shown faster."""
    within = timing.TimingComparison.of(
        [300e-6, 310e-6, 320e-6, 330e-6, 900e-6],
        [320e-6, 325e-6, 335e-6, 340e-6, 345e-6],
        labels=("fp32", "bf16 autocast"),
        what="step",
    )
    b = within.baseline
    assert (b.min, b.q1, b.median, b.q3, b.max) == pytest.approx((300e-6, 310e-6, 320e-6, 330e-6, 900e-6))
    assert within.overlap and not within.too_noisy and within.speedup == pytest.approx(320 / 335)
    assert within.speedup_quartiles == pytest.approx((310 / 340, 330 / 325))
    assert within.speedup_range == pytest.approx((300 / 345, 900 / 320))  # the extremes: 0.87x to 2.81x
    assert "within the run-to-run spread" in within.verdict and "0.96x" in within.verdict
    assert "between the quartiles" in within.verdict
    text = str(within)
    assert text.splitlines()[:5] == [
        "step: bf16 autocast against fp32",
        "setting        runs  min (µs)  q1 (µs)  median (µs)  q3 (µs)  max (µs)",
        "-------------  ----  --------  -------  -----------  -------  --------",
        "fp32           5     300       310      320          330      900",
        "bf16 autocast  5     320       325      335          340      345",
    ]
    html = within._repr_html_()
    assert "median (µs)" in html and ">320<" in html and "within the run-to-run spread" in html
    apart = timing.TimingComparison.of([0.010, 0.011], [0.002, 0.003], labels=("fp32", "bf16"))
    assert not apart.overlap and "faster, beyond the run-to-run spread" in apart.verdict
    assert "median (ms)" in str(apart) and "2.50" in str(apart)


def test_a_busy_machine_gets_too_noisy_to_judge_not_a_spread_of_400x():
    """Typical runs that vary by 2x or more (a machine busy with other work) give no verdict."""
    busy = timing.TimingComparison.of(
        [2e-4, 3e-4, 2e-2, 4e-2, 5e-2], [4e-4, 2e-3, 5e-2, 8e-2, 2e-1], labels=("fp32", "bf16"), what="step"
    )
    assert busy.too_noisy and "too noisy to judge" in busy.verdict
    assert "within" not in busy.verdict and "beyond" not in busy.verdict
    assert timing.NOISY_QUARTILE_RATIO == 1.5


def test_spread_quartiles_follow_torch_quantile():
    runs = [0.5, 0.1, 0.4, 0.2, 0.3, 0.9]
    s = timing.Spread.of(runs)
    q = torch.quantile(torch.tensor(runs, dtype=torch.float64), torch.tensor([0.25, 0.75], dtype=torch.float64))
    assert (s.q1, s.q3) == pytest.approx(tuple(q.tolist()))
    one = timing.Spread.of([0.2])
    assert one.q1 == one.q3 == 0.2 and one.quartile_ratio == 1.0
    assert timing.Spread(1.0, 2.0, 3.0, 3).q1 == 1.0  # quartiles default to the extremes
    with pytest.raises(ValueError, match="q1 <= median"):
        timing.Spread(1.0, 2.0, 3.0, 3, q1=2.5)
    inv = s.inverse(1.0)
    assert inv.q1 == pytest.approx(1 / s.q3) and inv.q3 == pytest.approx(1 / s.q1)
    assert s.quartile_cells(1e-3) == [f"{v:.0f}" for v in (s.q1 * 1e3, s.median * 1e3, s.q3 * 1e3)]
    with pytest.raises(ValueError, match="size must be a positive"):
        s.quartile_cells(0)


def test_importing_the_course_leaves_torchs_benchmark_and_cpp_extension_alone():
    # torch.utils.benchmark imports torch.utils.cpp_extension, which warns on a CUDA build without a GPU: the course
    # imports it only when time_fn(block_s=...) first needs it, with that warning muted
    code = (
        "import sys, amp_lessons, amp_lessons.timing, amp_lessons.compiled\n"
        "assert 'torch.utils.cpp_extension' not in sys.modules, 'imported at import time'\n"
        "amp_lessons.timing.time_fn(lambda: None, warmup=2, repeats=2, block_s=1e-3)\n"
        "assert 'torch.utils.benchmark' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "CUDA" not in done.stderr, done.stderr
