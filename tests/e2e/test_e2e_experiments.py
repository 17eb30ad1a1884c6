"""Tests of amp_lessons.e2e: lesson 06's end-to-end experiments (small sizes; no timing asserts)."""

import math
from types import SimpleNamespace

import pytest
import torch

from amp_lessons import recorders, reference, timing
from amp_lessons.device import CPUInfo, device_report
from amp_lessons.e2e import _common, _experiments as e2e, _models as models, _records as records, _training
from amp_lessons.e2e._records import (
    InferenceTable,
    LaunchTable,
    RateTable,
    SpecRatioTable,
    ThroughputTable,
    TrainingTable,
)

TINY = dict(vocab=16, d_model=32, n_heads=2, n_layers=1, seq_len=16)
NO_FP16_CPU = CPUInfo("test CPU", "x86_64", "AVX512", 2, avx512_bf16=True)
FP16_CPU = CPUInfo("test CPU with AMX-FP16", "x86_64", "AVX512", 2, avx512_bf16=True, amx_bf16=True, amx_fp16=True)


def gpu(name, major, minor):
    return SimpleNamespace(name=name, major=major, minor=minor, total_memory=80 * 2**30, multi_processor_count=132)


@pytest.fixture
def fake_cpu(monkeypatch):
    """Make e2e see a CPU with or without fp16 instructions (and no GPU)."""

    def use(cpu):
        for module in (e2e, _training):  # the experiments, and the training runs they export
            monkeypatch.setattr(module, "device_report", lambda: device_report(cpu=cpu, no_gpu=True))

    return use


# --- tensor-core table ---------------------------------------------------------------------------


def test_generations_table_is_ordered_and_complete():
    gens = records.TENSOR_CORE_GENERATIONS  # what lesson 06's table says (its cell marks this machine: not compared)
    assert [g[0] for g in gens] == [1, 2, 3, 4, 5]
    assert [g[3] for g in gens] == sorted(g[3] for g in gens)
    added = {g[1].split()[0]: g[4] for g in gens}
    assert added["Volta"] == "fp16" and "fp8" in added["Hopper"] and "fp4" in added["Blackwell"]
    assert "TF32" in added["Ampere"] and "bf16" in added["Ampere"] and "int8" in added["Turing"]


@pytest.mark.parametrize(
    "name, cap, gen",
    [
        ("Tesla V100-SXM2-16GB", (7, 0), 1),
        ("Tesla T4", (7, 5), 2),
        ("NVIDIA A100-SXM4-80GB", (8, 0), 3),
        ("NVIDIA L4", (8, 9), 4),
        ("NVIDIA H100 80GB HBM3", (9, 0), 4),
        ("NVIDIA B200", (10, 0), 5),
    ],
)
def test_table_marks_the_fake_gpus_row(name, cap, gen):
    t = records.tensor_core_table(device_report(cpu=NO_FP16_CPU, gpu_properties=gpu(name, *cap)))
    assert t.marked == gen
    marked = [line for line in str(t).splitlines() if line.endswith("<- this machine")]
    assert len(marked) == 1 and marked[0].startswith(str(gen))
    assert name in t.machine and f"generation {gen}" in t.machine
    html = t._repr_html_()
    assert html.count("this machine</td>") == 1 and name in html


def test_table_without_gpu_says_what_the_cpu_has():
    t = records.tensor_core_table(device_report(cpu=NO_FP16_CPU, no_gpu=True))
    assert t.marked is None and "<- this machine" not in str(t)
    assert t.machine == "this machine: no NVIDIA GPU — CPU: bf16 instructions yes, fp16 instructions no"
    t = records.tensor_core_table(device_report(cpu=FP16_CPU, no_gpu=True))
    assert t.machine.endswith("bf16 instructions yes, fp16 instructions yes")
    pascal = records.tensor_core_table(device_report(cpu=NO_FP16_CPU, gpu_properties=gpu("Tesla P100", 6, 0)))
    assert pascal.marked is None and "no tensor cores" in pascal.machine


# --- matmul throughput ---------------------------------------------------------------------------


def test_throughput_rows_and_fp16_skip_where_fp16_is_measured_slow(fake_cpu, fake_rates):
    fake_cpu(NO_FP16_CPU)
    fake_rates(NO_BF16)  # fp16 at 0.03x the fp32 rate
    rows = e2e.matmul_throughput([32, 64], ("fp32", "bf16", "fp16", "tf32", "fp8"), repeats=1, max_fp16_cpu_size=32)
    assert [(r["size"], r["dtype"]) for r in rows] == [
        (s, d) for s in (32, 64) for d in ("fp32", "bf16", "fp16", "tf32", "fp8")
    ]
    by = {(r["size"], r["dtype"]): r for r in rows}
    for key in [(32, "fp32"), (32, "bf16"), (32, "fp16"), (64, "fp32"), (64, "bf16")]:
        r = by[key]
        assert r["skipped"] is None and r["median_s"] > 0 and r["percent_of_peak"] is None
        assert r["tflops"] == pytest.approx(2 * key[0] ** 3 / r["median_s"] / 1e12)
    assert by[(64, "fp16")]["skipped"] == (
        "fp16 matmuls run at 0.03x the fp32 rate here (measured at 256^3): no fast fp16 path on this CPU; "
        "measured only up to 32"
    )
    assert by[(64, "fp16")]["tflops"] is None and by[(64, "fp16")]["median_s"] is None
    assert "TF32" in by[(32, "tf32")]["skipped"] and "fp8" in by[(32, "fp8")]["skipped"]


@pytest.mark.parametrize("fp16_rate, slow", [(2.4e10, True), (2.5e10, False), (1e11, False), (1e9, True)])
def test_slow_fp16_is_decided_by_the_measured_rate(fake_cpu, fake_rates, fp16_rate, slow):
    for cpu in (NO_FP16_CPU, FP16_CPU):  # the CPU flags do not matter
        fake_cpu(cpu)
        fake_rates({"fp32": 1e11, "bf16": 1e11, "fp16": fp16_rate})
        assert _common.slow_fp16(torch.device("cpu")) is slow
        assert (
            _training._not_run_reason("fp16 autocast + GradScaler", torch.device("cpu"), e2e.device_report(), False)
            is None
        ) is not slow
    if slow:
        assert f"{fp16_rate / 1e11:.2g}x the fp32 rate here" in _common.slow_fp16_note(torch.device("cpu"))


# --- peak memory ----------------------------------------------------------------------------------


def test_peak_memory_sees_a_64_mib_tensor():
    def fn():
        x = torch.empty(64 * 2**20, dtype=torch.uint8)
        x.fill_(1)
        del x
        torch.ones(1024)

    peak = e2e.peak_memory(fn)
    assert 64 * 2**20 <= peak < 66 * 2**20
    keep = torch.empty(32 * 2**20, dtype=torch.uint8)  # allocated before: not counted
    assert e2e.peak_memory(lambda: keep.fill_(0)) < 2**20


# --- data, model, training ------------------------------------------------------------------------


def test_make_batches_is_seeded_and_follows_the_rule():
    a = models.make_batches(1, 3, 4, 10, 16, noise=0.0)
    assert a.shape == (3, 4, 11) and a.dtype == torch.long
    assert torch.equal(a, models.make_batches(1, 3, 4, 10, 16, noise=0.0))
    assert not torch.equal(a, models.make_batches(2, 3, 4, 10, 16, noise=0.0))
    nxt = {}
    for prev, cur in zip(a[..., :-1].reshape(-1).tolist(), a[..., 1:].reshape(-1).tolist()):
        assert nxt.setdefault(prev, cur) == cur  # noise 0: one fixed successor per token


def test_tiny_transformer_shapes_and_causality():
    torch.manual_seed(0)
    m = models.TinyTransformer(**TINY).eval()
    x = torch.randint(16, (2, 16))
    y = m(x)
    assert y.shape == (2, 16, 16)
    x2 = x.clone()
    x2[:, -1] = (x2[:, -1] + 1) % 16  # changing the last token must not change earlier logits
    with torch.no_grad():
        assert torch.allclose(m(x)[:, :-1], m(x2)[:, :-1], atol=1e-6)
    with pytest.raises(ValueError, match="divisible"):
        models.TinyTransformer(d_model=30, n_heads=4)


def test_train_fp32_and_bf16_learn_and_agree():
    runs = {c: e2e.train(c, steps=30, progress=False, model_kwargs=TINY, batch=8) for c in ("fp32", "bf16 autocast")}
    for r in runs.values():
        assert r.ran and len(r.loss) == 30 and r.final_loss == r.loss[-1]
        assert r.final_loss < 0.5 * r.loss[0]
        assert r.step_time_s > 0 and r.peak_memory_bytes > 0
        assert all(math.isfinite(v) for v in r.loss)
    assert runs["fp32"].loss[0] == pytest.approx(runs["bf16 autocast"].loss[0], rel=0.01)
    assert runs["fp32"].final_loss == pytest.approx(runs["bf16 autocast"].final_loss, rel=0.15)


def test_train_does_not_run_fp16_or_tf32_where_they_mean_nothing(fake_cpu, fake_rates):
    fake_cpu(NO_FP16_CPU)
    fake_rates(NO_BF16)
    r = e2e.train("fp16 autocast + GradScaler", progress=False)
    assert r.ran is False and r.loss == () and r.final_loss is None
    assert r.reason.startswith("not run: fp16 matmuls run at 0.03x the fp32 rate here (measured at 256^3)")
    t = e2e.train("tf32", progress=False)
    assert t.ran is False and "TF32" in t.reason
    forced = e2e.train(
        "fp16 autocast + GradScaler", steps=4, progress=False, model_kwargs=TINY, batch=2, allow_slow_fp16=True
    )
    assert forced.ran and len(forced.loss) == 4 and all(math.isfinite(v) for v in forced.loss)


# --- inference ------------------------------------------------------------------------------------


def test_inference_errors_are_ordered():
    torch.manual_seed(0)
    rows = {r["variant"]: r for r in e2e.inference_compare(model=models.TinyTransformer(**TINY), repeats=1)}
    assert list(rows) == ["fp32", "bf16 autocast", "bf16 weights", "fp16 weights"]
    assert rows["fp32"]["max_abs_error"] == 0.0
    for v in ("bf16 autocast", "bf16 weights", "fp16 weights"):
        assert 0 < rows[v]["max_abs_error"] < 0.2
    assert rows["fp16 weights"]["max_abs_error"] < rows["bf16 weights"]["max_abs_error"]  # 3 more mantissa bits
    assert (
        rows["bf16 weights"]["param_bytes"] * 2 == rows["fp32"]["param_bytes"] == rows["bf16 autocast"]["param_bytes"]
    )
    assert rows["bf16 autocast"]["output_dtype"] == "bfloat16" and rows["fp16 weights"]["output_dtype"] == "float16"


def test_overflow_demo_breaks_fp16_not_bf16():
    out = e2e.overflow_demo()
    assert out.max_activation > out.fp16_max == 65504
    assert not out.fp16_finite and any(math.isnan(v) or math.isinf(v) for v in out.outputs["fp16"])
    assert out.bf16_finite and 0 < out.bf16_max_abs_error < 0.05
    assert all(math.isfinite(v) for v in out.outputs["fp32"])


# --- reference experiments ------------------------------------------------------------------------


def test_reference_experiments_run_small_on_cpu():
    tp = recorders.record_matmul_throughput("cpu", size=64)
    assert tp["shape"] == "64^3" and tp["fp32_tflops"] > 0 and tp["bf16_tflops"] > 0
    assert reference._results_problem(tp) is None
    tr = recorders.record_training("cpu", steps=3, model_kwargs=TINY, batch=2)
    assert tr["fp32_step_time_s"] > 0 and tr["bf16_peak_memory_bytes"] > 0 and "tf32_not_run" in tr
    assert reference._results_problem(tr) is None


# --- sizing the work by measured matmul rates ----------------------------------------------------

FAST = {"fp32": 1e11, "bf16": 2e11, "fp16": 2e11}  # a CPU with bf16/fp16 instructions
FAST_BF16 = {"fp32": 1e11, "bf16": 2e11, "fp16": 1.5e9}  # bf16 instructions, no fast fp16 path
NO_BF16 = {"fp32": 5e10, "bf16": 1.5e9, "fp16": 1.5e9}  # an AVX2 laptop: bf16 ~30x slower than fp32
CRAWL = {"fp32": 1e6, "bf16": 1e6, "fp16": 1e6}  # nothing fits any budget


@pytest.fixture
def fake_rates(monkeypatch):
    def use(rates):
        # the measurement itself: e2e.matmul_rates and the fp16 decision (e2e._common.slow_fp16) both read it
        monkeypatch.setattr(_common, "cached_rates", lambda device: tuple(dict(rates).items()))

    return use


def test_training_plan_keeps_the_full_model_where_bf16_is_fast(fake_cpu, fake_rates):
    fake_cpu(NO_FP16_CPU)
    fake_rates(FAST_BF16)
    plan = e2e.training_plan()
    assert plan.model == models.CPU_MODEL and plan.batch == 16 and plan.steps == 40
    assert plan.configs == ("fp32", "bf16 autocast") and not plan.scaled_down
    assert plan.note.startswith("full size: d_model 256")
    # predicted time = steps x step FLOPs / rate, per config
    assert plan.predicted_s["bf16 autocast"] == pytest.approx(40 * models.step_flops(models.CPU_MODEL, 16) / 2e11)


def test_training_plan_scales_every_config_down_where_bf16_is_slow(fake_cpu, fake_rates):
    fake_cpu(NO_FP16_CPU)
    fake_rates(NO_BF16)
    plan = e2e.training_plan()
    assert plan.scaled_down and plan.model["d_model"] < 256
    assert sum(plan.predicted_s.values()) <= 8.0
    assert "bf16 matmuls run at 1.5 GFLOP/s here against 50 for fp32" in plan.note
    # train() uses the plan for every config alike
    seen = []
    real_model = models.TinyTransformer
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_training, "TinyTransformer", lambda **kw: seen.append(kw) or real_model(**kw))
        for config in ("fp32", "bf16 autocast"):
            assert e2e.train(config, steps=2, progress=False).model == dict(plan.model, batch=plan.batch)
    assert seen == [plan.model] * 2
    # a bigger budget allows a bigger model; nothing fits -> the smallest size
    assert e2e.training_plan(budget_s=1e6).model == models.CPU_MODEL
    fake_rates(CRAWL)
    assert e2e.training_plan().model == _training._CPU_LADDER[-1][0] and e2e.training_plan().batch == 8


def test_training_plan_counts_fp16_only_where_it_runs(fake_cpu, fake_rates):
    fake_cpu(NO_FP16_CPU)
    fake_rates({"fp32": 5e10, "bf16": 1e11, "fp16": 2e10})  # fp16 at 0.4x fp32: fast enough to run
    assert "fp16 autocast + GradScaler" in e2e.training_plan().configs
    assert "fp16 matmuls run at 20 GFLOP/s" in e2e.training_plan().note  # the slowest config sizes the model
    fake_cpu(FP16_CPU)
    fake_rates({"fp32": 5e10, "bf16": 1e11, "fp16": 1e9})  # fp16 at 0.02x fp32
    assert "fp16 autocast + GradScaler" not in e2e.training_plan().configs
    assert e2e.training_plan(allow_slow_fp16=True).scaled_down


def test_throughput_skips_rows_over_the_budget(fake_rates):
    fake_rates(NO_BF16)
    rows = e2e.matmul_throughput([32, 1024], ("fp32", "bf16"), repeats=1, budget_s=1e-3)
    by = {(r["size"], r["dtype"]): r for r in rows}
    assert by[(32, "bf16")]["skipped"] is None and by[(32, "fp32")]["skipped"] is None
    # n=32 is predicted from the fake rate (2 x 32^3 x 2 runs / 1.5e9 = 87 us); n=1024 from the rate
    # measured at n=32, 2 x 1024^3 x 2 FLOPs: over 1 ms below 4 PFLOP/s, i.e. on any CPU
    reason = by[(1024, "bf16")]["skipped"]
    assert reason.startswith("bf16 at n=1024 would take about") and reason.endswith("over budget_s=0.001")
    assert by[(1024, "bf16")]["tflops"] is None


def test_odd_size_and_launch_bound_demo_shrink_to_the_budget(fake_rates):
    fake_rates(CRAWL)
    rows = e2e.odd_size_effect(offsets=(0, 1, 8), repeats=1)
    assert [r["size"] for r in rows] == [64, 65, 72] and [r["offset"] for r in rows] == [0, 1, 8]
    assert all(r["tflops"] > 0 for r in rows) and rows[0]["relative_to_first"] == 1.0
    assert [r["relative_to_first"] for r in rows[1:]] == [r["tflops"] / rows[0]["tflops"] for r in rows[1:]]
    assert rows[0]["base_chosen"].startswith("base 64, not 1024: bf16 matmuls run at 0.001 GFLOP/s")
    out = e2e.launch_bound_demo(repeats=2)
    assert out.large.model == "3 x Linear(64, 64), batch 64"
    assert out.width_chosen.startswith("width 64, not 512:")


# --- results as tables (the records' HTML and text renderings) ---------------------------------------------


def both(record) -> tuple[str, str]:
    return str(record), record._repr_html_()


def test_spec_ratios_are_the_spec_sheets_arithmetic():
    t = SpecRatioTable.of()
    assert t.ratio("NVIDIA A100") == 312 / 19.5 == 16 and round(t.ratio("Tesla V100 SXM2")) == 8
    assert all(f16 and f32 for _, f16, f32 in t.rows)
    text, html = both(t)
    assert "fp16 tensor cores (TFLOP/s)" in text and "NVIDIA A100  " in text and "16.0" in text and "19.5" in html
    assert "white-space: nowrap'>NVIDIA GeForce RTX 4090" in html
    with pytest.raises(KeyError, match="no GPU 'B200'"):
        t.ratio("B200")
    with pytest.raises(TypeError, match="specs must be a sequence of timing.GPUSpec"):
        SpecRatioTable.of(["A100"])


def test_rate_table_shows_the_runs_behind_matmul_rates_measured_once_per_process():
    rates = e2e.matmul_rates()
    assert set(rates) == {"fp32", "bf16", "fp16"} and all(v > 0 and math.isfinite(v) for v in rates.values())
    assert e2e.matmul_rates("cpu") == rates  # cached: the same measurement
    t = RateTable.of("cpu")
    assert set(t.runs) == {"fp32", "bf16", "fp16"} and t.size == e2e.RATE_PROBE_SIZE
    flops = timing.matmul_flops(t.size, t.size, t.size)
    # the fastest run is the rate the lessons size their work from
    assert t.rates("fp32").max == pytest.approx(rates["fp32"] / 1e9) == flops / min(t.runs["fp32"]) / 1e9
    text, html = both(t)
    assert "median (GFLOP/s)" in text and "256^3 matmuls on cpu" in text and "max / fp32 max" in html


def fake_row(dtype, size, times, peak=None, skipped=None):
    return dict(
        size=size, dtype=dtype, median_s=None, tflops=None, percent_of_peak=peak, skipped=skipped, times_s=times
    )


def test_throughput_table_gives_rates_of_the_slowest_median_and_fastest_run():
    flops = timing.matmul_flops(4096, 4096, 4096)  # 1.37e11: 1 ms is 137 TFLOP/s
    rows = [
        fake_row("bf16", 4096, (0.002, 0.001, 0.0015), peak=70.0),
        fake_row("fp8", 4096, None, skipped="fp8 needs fp8 tensor cores"),
    ]
    t = ThroughputTable.of(rows)
    s = t.tflops("bf16", 4096)
    assert (s.min, s.median, s.max) == pytest.approx(
        (flops / 0.002 / 1e12, flops / 0.0015 / 1e12, flops / 0.001 / 1e12)
    )
    assert t.skipped == ("fp8 needs fp8 tensor cores",)
    text, html = both(t)
    assert "min (TFLOP/s)" in text and "68.7" in text and "91.6" in text and "137" in text
    assert "median / spec peak (%)" in html and ">70<" in html and "not run: fp8 needs fp8 tensor cores" in html
    cpu = str(ThroughputTable.of([fake_row("fp32", 32, (1e-4, 1e-4, 1e-4))]))  # 0.655 GFLOP/s: a CPU's unit
    assert "median (GFLOP/s)" in cpu and "0.655" in cpu and "TFLOP/s)" not in cpu
    with pytest.raises(TypeError, match="rows must be the list returned by e2e.matmul_throughput"):
        ThroughputTable.of([{"size": 32}])
    with pytest.raises(KeyError, match="no measured row for bf16 at n=32"):
        t.tflops("bf16", 32)


def test_launch_table_says_which_comparisons_are_within_the_spread():
    def steps(model, t32, t16):
        return records.StepTimes(model, 1.0, t32[1], t16[1], t32[1] / t16[1], t32, t16)

    launch = records.LaunchBoundDemo(
        tiny=steps("3 x Linear(64, 64), batch 8", (3e-4, 3.2e-4, 3.4e-4), (3.1e-4, 3.3e-4, 3.5e-4)),
        large=steps("3 x Linear(512, 512), batch 512", (0.020, 0.021, 0.022), (0.010, 0.011, 0.012)),
        width_chosen="width 512, as asked",
    )
    t = LaunchTable.of(launch)
    assert t.comparisons["tiny"].overlap and not t.comparisons["large"].overlap
    assert t.comparisons["large"].speedup == pytest.approx(0.021 / 0.011)
    text, html = both(t)
    # one unit for the column, the largest median's: ms here, so the tiny model's steps read 0.320
    assert "fp32 step (ms)" in text and "0.320 (0.310 to 0.330)" in text and "21.0 (20.5 to 21.5)" in text
    assert "1.91x" in text and "within the run-to-run spread" in html and "faster" in html
    assert "large model: width 512, as asked" in text
    with pytest.raises(TypeError, match="launch must be the LaunchBoundDemo returned by e2e.launch_bound_demo"):
        LaunchTable.of({"tiny": {"model": "x"}})


def test_training_table_shows_step_spread_memory_and_loss():
    runs = [
        records.TrainRun("fp32", True, step_times_s=(0.030, 0.0375, 0.050), peak_memory_bytes=2.25 * 2**20,
                     final_loss=0.83512),
        records.TrainRun("bf16 autocast", True, step_times_s=(0.036, 0.04, 0.045), peak_memory_bytes=1.5 * 2**20,
                     final_loss=0.8341),
        records.TrainRun("tf32", False, "not run: no GPU"),
    ]  # fmt: skip
    t = TrainingTable.of(runs)
    assert t.step_times("fp32").median == 0.0375 and t.not_run == (("tf32", "not run: no GPU"),)
    text, html = both(t)
    assert "step median (ms)" in text and "37.5" in text and "peak memory (MiB)" in text and "2.2" in text
    assert "0.835" in text and "bf16 autocast: step times within the run-to-run spread of fp32's" in text
    assert "tf32 not run: no GPU" in html
    with pytest.raises(KeyError, match="'tf32' did not run here"):
        t.step_times("tf32")


def test_inference_table():
    rows = [
        {"variant": "fp32", "max_abs_error": 0.0, "times_s": (0.02, 0.0201, 0.03), "param_bytes": 6516992,
         "output_dtype": "float32", "note": ""},
        {"variant": "bf16 weights", "max_abs_error": 0.015306, "times_s": (0.6, 0.608, 0.7), "param_bytes": 3258496,
         "output_dtype": "bfloat16", "note": ".to(torch.bfloat16): everything bf16"},
    ]  # fmt: skip
    t = InferenceTable.of(rows)
    assert t.rows[1][1] == 0.015306 and t.rows[1][2].median == 0.608
    text, html = both(t)
    assert "forward median (ms)" in text and "20.1" in text and "608" in text and "0.015" in text
    assert "parameters (MiB)" in text and "6.22" in text and "3.11" in text
    assert "bf16 weights: .to(torch.bfloat16): everything bf16" in html
