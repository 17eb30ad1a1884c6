"""Reference records: the file format, provenance, recording with a fake GPU, the CLI, compare()."""

import dataclasses
import datetime
import json
import re
from pathlib import Path

import pytest
import torch

from amp_lessons import reference, timing
from amp_lessons.reference import PUBLISHED, Record, compare, find, load, main, record, save


def rec(**kw):
    base = dict(
        experiment="tf32_matmul",
        device="NVIDIA H100 80GB HBM3",
        capability="9.0",
        torch="2.11.0",
        cuda="12.8",
        date="2026-11-21",
        command="python -m amp_lessons.reference record",
        results={"tf32_time_s": 0.004, "fp32_time_s": 0.03},
        source="",
    )
    base.update(kw)
    return Record(**base)


@pytest.fixture
def registry(monkeypatch):
    """An empty table of experiments for the test, restored afterwards."""
    monkeypatch.setattr(reference, "EXPERIMENTS", {})
    return reference.EXPERIMENTS


@pytest.fixture
def fake_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch, "__version__", "2.11.0+cu128")
    monkeypatch.setattr(reference, "_course_commit", lambda: "abc1234")


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_provenance_and_label_of_measured_and_published():
    assert rec().provenance == (
        "measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0, CUDA 12.8, 2026-11-21, "
        "by `python -m amp_lessons.reference record`"
    )
    assert rec(capability="", cuda="").provenance == (
        "measured on NVIDIA H100 80GB HBM3, torch 2.11.0, 2026-11-21, by `python -m amp_lessons.reference record`"
    )
    docs, original = PUBLISHED
    assert docs.provenance == (
        "published: PyTorch docs, CUDA semantics, 'TensorFloat-32 (TF32) on Ampere (and later) devices', "
        "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-devices "
        "(fp64 randn inputs rounded to fp32; timing method not stated); not stated: torch, cuda, date "
        "(not measured by this course)"
    )
    assert original.provenance.endswith("; not stated: capability, torch, cuda, date (not measured by this course)")
    assert docs.published and original.published and not rec().published
    r = rec(command="", commit="fcfc7cd", method="a minimal loop timed with CUDA events", torch="2.11.0+cu130")
    assert r.provenance == (
        "measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0+cu130, CUDA 12.8, 2026-11-21 at course commit "
        "fcfc7cd; method: a minimal loop timed with CUDA events"
    )
    assert r.label == "recorded on NVIDIA H100 80GB HBM3, torch 2.11, 2026-11-21"
    assert rec(torch="").label == "recorded on NVIDIA H100 80GB HBM3, torch version unknown, 2026-11-21"
    assert PUBLISHED[0].label == "NVIDIA A100 (GA100) (published)"


def test_published_tf32_figures_are_two_separate_records():
    # PyTorch's TF32 note (an A100, K = 10240) and the course's original notebook (GPU not named,
    # K = 51200) are different experiments: neither record borrows a figure from the other
    docs, original = [r for r in PUBLISHED if r.experiment == "tf32_matmul"]
    where = ("device", "capability", "torch", "cuda", "date", "command")
    assert [getattr(docs, k) for k in where] == ["NVIDIA A100 (GA100)", "8.0", "", "", "", ""]
    assert docs.results["shape"] == "10240x10240 @ 10240x10240"  # its figures: test_cli_show_published
    assert docs.source.startswith("PyTorch docs") and "https://pytorch.org/docs/stable/notes/cuda.html" in docs.source
    assert [getattr(original, k) for k in where] == ["unknown GPU", "", "", "", "", ""]
    assert set(original.results) == {"shape", "tf32_rel_error", "fp32_rel_error"}  # it recorded no timings
    assert (original.results["shape"], original.results["tf32_rel_error"]) == ("10240x51200 @ 51200x10240", 0.0024)


def _shape_mkn(shape: str) -> tuple[int, int, int]:
    m, k, k2, n = (int(v) for v in re.fullmatch(r"(\d+)x(\d+) @ (\d+)x(\d+)", shape).groups())
    assert k == k2, shape
    return m, k, n


def test_no_published_record_implies_more_than_its_gpu_peak():
    # a published time and its shape imply a rate: 2*m*k*n / time must stay below the GPU's spec-sheet
    # peak (the chimera this replaces claimed 671 TFLOP/s of TF32 on an A100, whose peak is 156)
    checked = 0
    for r in PUBLISHED:
        m, k, n = _shape_mkn(r.results["shape"])
        for key in ("fp32", "tf32", "bf16", "fp16", "fp8"):
            t = r.results.get(f"{key}_time_s")
            if t is None:
                continue
            peak = timing.spec_peak_tflops(r.device, key)
            assert peak is not None, f"{r.device} has no {key} peak in timing.SPEC_PEAKS: a time needs a known GPU"
            rate = timing.matmul_flops(m, k, n) / t / 1e12
            assert rate <= peak * 1.01, (r.device, key, rate, peak)  # 1 %: the source rounds its times
            checked += 1
    assert checked == 2  # the A100 note's TF32 and fp32 times: 134 and 19.5 TFLOP/s (peaks 156 and 19.5)


COMMIT_RULE = "field 'commit' must be a git commit hash (7 to 40 lowercase hex digits, or empty)"


@pytest.mark.parametrize(
    "kw, shown",
    [
        (dict(date="21/11/2026"), "field 'date' must be an ISO date YYYY-MM-DD (or empty), got '21/11/2026'"),
        (dict(date="2026-13-01"), "'2026-13-01'"),
        (dict(capability="sm90"), "field 'capability' must look like '9.0' (or be empty), got 'sm90'"),
        (dict(command=""), "field 'command' must name the command that measured it, or 'method' describe how"),
        (dict(commit="HEAD"), f"{COMMIT_RULE}, got 'HEAD'"),
        (dict(commit="fcf"), "got 'fcf'"),
        (dict(method=3), "field 'method' must be a string, got 3"),
        (dict(date=""), "field 'date' must be set for a measured record"),
        (dict(device=""), "field 'device' must not be empty"),
        (dict(torch=2.11), "field 'torch' must be a string, got 2.11"),
        (dict(results=[1]), "field 'results' must be an object"),
        (dict(results={"t": None}), "entry 't': None is not a number"),
        (dict(results={"t": float("nan")}), "not finite"),
        (dict(results={"t": {"a": {"deep": 1}}}), "entry 't'"),
    ],
)
def test_record_rejects(kw, shown):
    with pytest.raises(ValueError) as info:
        rec(**kw)
    assert shown in str(info.value)


def test_save_load_round_trip_is_byte_stable(tmp_path):
    records = [
        rec(device="NVIDIA A100-SXM4-80GB", capability="8.0", results={"b": 1, "a": {"y": 2.5, "x": "s"}}),
        rec(),
        rec(experiment="autocast_speed", date="2026-01-02"),
    ]
    p = tmp_path / "refs.json"
    save(records, p)
    first = p.read_bytes()
    loaded = load(p)
    assert loaded == [records[2], records[0], records[1]]  # sorted by experiment, then device
    save(loaded, p)
    assert p.read_bytes() == first
    save(list(reversed(loaded)), p)  # input order does not matter
    assert p.read_bytes() == first
    text = first.decode()
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert '\n  "records": [\n' in text  # indented
    assert [r["experiment"] for r in json.loads(text)["records"]] == ["autocast_speed", "tf32_matmul", "tf32_matmul"]
    assert list(json.loads(text)["records"][0]) == [f.name for f in dataclasses.fields(Record)]
    assert text.index('"a"') < text.index('"b"') and text.index('"x"') < text.index('"y"')  # results keys sorted


@pytest.mark.parametrize(
    "content, shown",
    [
        ("{not json", "not valid JSON"),
        ('{"records": {}}', 'expected an object {"records": [...]}'),
        ('{"records": [], "extra": 1}', 'expected an object {"records": [...]}'),
        ('{"records": [42]}', "record 0: a record must be an object, got 42"),
    ],
)
def test_load_rejects_malformed_files(tmp_path, content, shown):
    p = tmp_path / "bad.json"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError) as info:
        load(p)
    assert str(p) in str(info.value) and shown in str(info.value)


def test_load_names_the_record_and_field(tmp_path):
    p = tmp_path / "bad.json"
    good = rec().to_dict()
    bad = {**good, "date": "yesterday"}
    p.write_text(json.dumps({"records": [good, bad]}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: record 1 \('tf32_matmul'\): field 'date'.*'yesterday'"):
        load(p)
    p.write_text(json.dumps({"records": [{**good, "gpu": "x"}]}), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown field.*'gpu'"):
        load(p)
    del good["command"]
    p.write_text(json.dumps({"records": [good]}), encoding="utf-8")
    with pytest.raises(ValueError, match="missing field.*'command'"):
        load(p)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        load(tmp_path / "nope.json")


def test_records_written_before_commit_and_method_existed_still_load(tmp_path):
    # files written by the recorder at fcfc7cd have no 'commit' and 'method' fields: read as ""
    p = tmp_path / "old.json"
    old = {k: v for k, v in rec().to_dict().items() if k not in ("commit", "method")}
    p.write_text(json.dumps({"records": [old]}), encoding="utf-8")
    (r,) = load(p)
    assert r == rec() and r.commit == "" and r.method == ""


def test_course_commit_is_a_hash_or_empty():
    commit = reference._course_commit()
    assert commit == "" or re.fullmatch(r"[0-9a-f]{7,40}", commit)


H100 = "NVIDIA H100 80GB HBM3"
RECORDER = {"e2e_matmul_throughput", "e2e_training", "fp8_scaled_mm", "matmul_timing_check", "tf32_matmul"}
MEASURED = {
    "tf32_rounding_per_op",
    "tf32_original_experiment",
    "matmul_vs_emulation",
    "amp_minimal_loop",
    "fp8_scaled_mm_variants",
    "timing_vs_do_bench",
    "autocast_cast_cost",
    "autocast_real_vs_preview",
}


def h100(name: str) -> Record:
    (r,) = [r for r in find(name, published=False) if r.device == H100]
    return r


ROOT = Path(__file__).resolve().parent.parent
H200 = "NVIDIA H200"
# measured on an H200 on 2026-11-27 (torch 2.11.0+cu130, course commit 4e72ce7) by scripts/gpu_probe.py's procedure
H200_MEASURED = {"fp8_cast_costs", "inductor_emulate_precision_casts"}
# measured on an H200 on 2026-11-27 (torch 2.11.0+cu130, course commit beeacb5) by `python scripts/gpu_check.py
# --skip-pytest`: the recorder's five experiments (beside the H100's) and checks (a), (d) and (f)-(j)
H200_CHECKS = {
    "cuda_cross_entropy_autocast",
    "lowp_matmul_fp32_sum",
    "fp8_cast_costs_course",
    "e2e_launch_bound",
    "amp_step_vs_minimal",
    "autocast_real_vs_preview_gpu_check",
    "tf32_rounding_per_op_gpu_check",
}
PROVENANCE = ("device", "capability", "torch", "cuda", "date", "commit")


def test_shipped_file_holds_only_real_recordings():
    assert reference.DEFAULT_PATH.name == "references.json" and reference.DEFAULT_PATH.parent.name == "data"
    everything = load()
    assert len(everything) == 27
    records = [r for r in everything if r.device == H100]
    assert {r.experiment for r in everything if r.device == H200} == H200_MEASURED | H200_CHECKS | RECORDER
    for r in everything:  # every record: its GPU, compute capability, torch, CUDA, day, course commit and how
        assert all(getattr(r, k) for k in PROVENANCE) and (r.command or r.method) and not r.source, r.experiment
    for r in records:
        # every shipped record says where it comes from: the GPU, torch 2.11, the day and the course commit
        assert [getattr(r, k) for k in PROVENANCE] == [H100, "9.0", "2.11.0+cu130", "13.0", "2026-11-23", "fcfc7cd"]
        assert r.label == "recorded on NVIDIA H100 80GB HBM3, torch 2.11, 2026-11-23"
        assert "NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0+cu130, CUDA 13.0, 2026-11-23" in r.provenance
        assert "at course commit fcfc7cd" in r.provenance
        assert "/work" not in json.dumps(r.to_dict()) and "README" not in json.dumps(r.to_dict())
    assert {r.experiment for r in records} == RECORDER | MEASURED
    for r in records:  # the recorder's five name its command; the others describe their method in words
        assert (r.command == "python -m amp_lessons.reference record", r.method == "") == (
            (True, True) if r.experiment in RECORDER else (False, False)
        ), r.experiment


def test_shipped_file_is_saved_canonically(tmp_path):
    p = save(load(), tmp_path / "again.json")
    assert p.read_bytes() == reference.DEFAULT_PATH.read_bytes()


def test_h100_recorder_figures():
    tp = h100("e2e_matmul_throughput").results
    assert round(tp["bf16_tflops"]) == 804 and round(tp["fp16_tflops"]) == 776 and round(tp["tf32_tflops"]) == 417
    assert round(tp["fp32_tflops"], 1) == 52.0 and round(tp["fp8_tflops"]) == 1477 and tp["shape"] == "8192^3"
    assert tp["bf16_percent_of_spec_peak"] == pytest.approx(100 * tp["bf16_tflops"] / 989)
    tr = h100("e2e_training").results
    assert [round(tr[f"{c}_step_time_s"] * 1000, 1) for c in ("fp32", "tf32", "bf16", "fp16")] == [
        59.9,
        23.4,
        17.8,
        17.2,
    ]
    assert tr["fp32_peak_memory_bytes"] == 2220608512 and tr["bf16_peak_memory_bytes"] == 1343225344
    fp8 = h100("fp8_scaled_mm").results
    assert round(fp8["fp8_speedup_over_bf16"], 2) == 1.62 and fp8["shape"] == "8192^3"
    tc = h100("matmul_timing_check").results
    assert round(tc["time_fn_over_do_bench"], 2) == 0.93
    tf = h100("tf32_matmul").results
    assert round(tf["tf32_rel_error"], 4) == 0.0023 and round(tf["tf32_speedup"], 1) == 7.9


def test_h100_tf32_rounding_is_nearest_even():
    res = h100("tf32_rounding_per_op").results
    rows = {k: v for k, v in res.items() if isinstance(v, dict)}
    assert len(rows) == 15
    for op, row in rows.items():
        if op == "bmm n=8":  # no TF32 kernel: nothing rounded
            assert row == {"nearest_even": 64, "nearest_away": 64, "toward_zero": 64, "no_rounding": 0}
        else:
            assert row["nearest_even"] == 0 and row["nearest_away"] > 0 and row["toward_zero"] > 0, op
    modes = ("nearest_even", "nearest_away", "toward_zero", "no_rounding")
    assert [rows["mm n=4096"][k] for k in modes] == [0, 2099283, 8384762, 16775624]
    assert rows["bmm n=64"]["nearest_away"] == 514 and rows["addmm n=8"]["toward_zero"] == 31
    assert rows["A@I 1024x1024"]["values"] == 1048576 and rows["A@I 1024x1024"]["nearest_away"] == 131401
    assert rows["A@I 1024x1024"]["toward_zero"] == 523057 and rows["A@I 1024x1024"]["nearest_even_ties"] == 0
    assert rows["conv2d (cuDNN)"] == dict(zip(modes, [0, 16313, 65814, 131057]))


def test_h100_original_tf32_experiment():
    res = h100("tf32_original_experiment").results
    assert res["shape"] == "10240x51200 @ 51200x10240" and res["docs_shape"] == "10240x10240 @ 10240x10240"
    assert round(res["tf32_rel_error"], 4) == 0.0023 and round(res["fp32_rel_error"], 6) == 3.1e-5
    assert round(res["tf32_time_s"] * 1000, 1) == 29.8 and round(res["fp32_time_s"] * 1000, 1) == 207.5
    assert round(res["docs_shape_tf32_rel_error"], 4) == 0.0021 and round(res["docs_shape_fp32_rel_error"], 6) == 1.4e-5
    assert (
        round(res["docs_shape_tf32_time_s"] * 1000, 1) == 7.3 and round(res["docs_shape_fp32_time_s"] * 1000, 1) == 44.4
    )
    assert res["tf32_rel_error"] == pytest.approx(res["tf32_max_error"] / res["mean_abs_reference"])


def h200(name: str, commit: str = "4e72ce7") -> Record:
    (r,) = [r for r in find(name, published=False) if r.device == H200 and r.commit == commit]
    return r


def test_h200_records_name_their_gpu_torch_day_commit_and_procedure():
    for name in sorted(H200_MEASURED):
        r = h200(name)
        assert (r.capability, r.torch, r.cuda, r.date, r.commit, r.command, r.source) == (
            "9.0", "2.11.0+cu130", "13.0", "2026-11-27", "4e72ce7", "", "",
        )  # fmt: skip
        assert r.label == "recorded on NVIDIA H200, torch 2.11, 2026-11-27"
        assert "scripts/gpu_probe.py" in r.method and (ROOT / "scripts" / "gpu_probe.py").is_file()


def test_h200_gpu_check_records_load_with_their_provenance_and_figures():
    for name in sorted(H200_CHECKS | RECORDER):
        r = h200(name, commit="beeacb5")
        assert (r.capability, r.torch, r.cuda, r.date, r.source) == ("9.0", "2.11.0+cu130", "13.0", "2026-11-27", "")
        assert r.label == "recorded on NVIDIA H200, torch 2.11, 2026-11-27" and r.method
        assert r.command == ("python -m amp_lessons.reference record" if name in RECORDER else
                             "python scripts/gpu_check.py --skip-pytest")  # fmt: skip
        assert "gpu_check.py --skip-pytest" in (r.command + r.method) and "/work" not in json.dumps(r.to_dict())
    # both GPUs' records of a recorder experiment: compare() shows them side by side, newest first
    both = reference.compare("e2e_training", {}, "this machine").references
    assert [r.device for r in both] == [H200, H100]
    assert round(h200("e2e_training", "beeacb5").results["bf16_step_time_s"] * 1e3, 2) == 12.07
    # (g): fp32 ulps of fp32 outputs, max and mean, against two references
    s = h200("lowp_matmul_fp32_sum", "beeacb5").results
    assert s["fp32_output"] == "torch.mm(a, b, out_dtype=torch.float32)"
    assert s["fp16 K=16384 vs_exact_rounded_to_fp32"]["max_ulps"] == 1341021.0
    assert s["bf16 K=256 sequential_fp32_sum_vs_exact"]["max_ulps"] == 589824.0
    # (i): the course's fp8_cast_costs, one timer, compiled casts recover most of the eager casts' loss at 8192^3
    c = h200("fp8_cast_costs_course", "beeacb5").results
    assert c["timer"] == "cuda events around 10 back-to-back calls, per call, median of 10"
    big = "8192x8192x8192"
    assert round(c[f"{big} fp8+casts speed_vs_bf16"], 2) == 0.75
    assert round(c[f"{big} fp8+compiled casts speed_vs_bf16"], 2) == 1.58
    # (j): bf16 autocast slower than fp32 for both models of the launch-bound demo, width 1024
    j = h200("e2e_launch_bound", "beeacb5").results
    assert j["width_chosen"].startswith("width 1024, not 4096")
    assert round(j["tiny"]["speedup"], 2) == 0.87 and round(j["large"]["speedup"], 2) == 0.79
    # (f), (d), (h), (a)
    f = h200("amp_step_vs_minimal", "beeacb5").results
    assert [round(f[f"{k}_step_time_s"] * 1e3, 2) for k in ("course_amp_step", "minimal_bf16_loop")] == [12.30, 13.14]
    assert round(f["course_over_minimal"], 3) == 0.936
    d = h200("autocast_real_vs_preview_gpu_check", "beeacb5").results
    assert (d["ops"], d["agree"], d["disagree"], d["table_entries_contradicted_by_gpu"]) == (111, 107, 0, 0)
    a = h200("tf32_rounding_per_op_gpu_check", "beeacb5").results
    cases = {k: v for k, v in a.items() if isinstance(v, dict) and "values" in v}
    tf32_ran = [v for v in cases.values() if v["no_rounding"] > 0]
    assert len(tf32_ran) >= 10 and all(v["nearest_even"] == 0 and v["nearest_away"] > 0 for v in tf32_ran)


def test_h200_fp8_costs_eager_casts_are_not_hidden_by_a_large_matmul():
    res = h200("fp8_cast_costs").results
    big, small = "8192x8192x8192", "256x512x256"
    timers = ("events_us", "events_after_memset_us", "do_bench_us", "wall_us")
    assert set(res) == {f"{s} {v}" for s in (big, small) for v in ("bf16", "fp8", "fp8unsc", "fp8+hostsc", "fp8+casts")}
    assert all(set(row) == set(timers) for row in res.values())
    ratio = {v: res[f"{big} bf16"]["events_us"] / res[f"{big} {v}"]["events_us"] for v in ("fp8", "fp8+casts")}
    assert round(ratio["fp8"], 2) == 1.76 and round(ratio["fp8+casts"], 2) == 0.63  # the kernel alone vs eager casts
    # at 256x512x256 an idle-GPU event timer measures launch latency: bf16 and fp8 within 4 us of each other
    assert abs(res[f"{small} fp8"]["events_us"] - res[f"{small} bf16"]["events_us"]) < 4
    assert res[f"{small} fp8+casts"]["events_us"] > 5 * res[f"{small} fp8"]["events_us"]


def test_h200_cuda_cross_entropy_log_softmax_runs_in_the_autocast_dtype_and_nll_loss_in_fp32():
    res = h200("cuda_cross_entropy_autocast", "beeacb5").results
    for name, low in (("bf16", "bfloat16"), ("fp16", "float16")):
        ops = res[f"{name} autocast"]
        assert (ops["_log_softmax"], ops["nll_loss_forward"]) == (f"torch.{low}", "torch.float32")
        assert {k: v for k, v in ops.items() if " " in k} == {
            "forward _log_softmax": f"{low} -> {low}",
            "forward nll_loss_forward": "float32, int64 -> float32, float32",  # autocast casts its input up first
            "backward nll_loss_backward": "float32, float32, int64, float32 -> float32",
            "backward _log_softmax_backward_data": f"{low}, {low} -> {low}",
        }


def test_h200_inductor_keeps_the_first_compiles_setting():
    res = h200("inductor_emulate_precision_casts").results
    assert res["patch_then_outside_graphs"] == 1  # no recompilation when the setting changed
    assert res["patch_then_outside_later_calls_fraction_differing"] == res["options_fraction_differing"] == 0.0
    assert res["default_settings_fraction_differing"] > 0.3


def test_h100_matmul_vs_emulation():
    res = h100("matmul_vs_emulation").results
    rows = {k: v for k, v in res.items() if isinstance(v, dict)}
    assert set(rows) == {f"{d} K={k}" for d in ("fp16", "bf16") for k in (256, 4096, 65536)}
    # a relative difference of two 16-bit outputs (never ulps: the field was misnamed max_diff_ulps when recorded)
    key = "max_rel_diff_16bit_outputs"
    assert res[key] == max(r[key] for r in rows.values()) < 0.009
    assert "ulps" not in json.dumps(h100("matmul_vs_emulation").to_dict())
    assert all(r["gpu_rel_error"] == r["emulated_rel_error"] for r in rows.values())


def test_h100_minimal_loop():
    res = h100("amp_minimal_loop").results
    ms = {k: round(v * 1000, 1) for k, v in res.items() if k.endswith("_step_time_s")}
    assert [ms[f"{c}_eager_step_time_s"] for c in ("fp32", "tf32", "bf16")] == [58.5, 22.4, 15.8]
    assert [ms[f"{c}_compiled_step_time_s"] for c in ("fp32", "tf32", "bf16")] == [54.0, 21.0, 10.7]
    assert [ms[f"course_train_{c}_step_time_s"] for c in ("fp32", "tf32", "bf16", "fp16")] == [59.6, 23.9, 21.1, 24.2]
    assert round(res["tf32_eager_step_time_s"] / res["bf16_eager_step_time_s"], 2) == 1.41
    assert round(res["tf32_eager_step_time_s"] / res["bf16_compiled_step_time_s"], 1) == 2.1
    assert round(res["fp32_compiled_first_step_s"]) == 16 and 11 < res["bf16_compiled_first_step_s"] < 16
    assert round(res["course_train_fp32_peak_memory_bytes"] / 1e9, 2) == 2.22
    assert round(res["course_train_bf16_peak_memory_bytes"] / 1e9, 2) == 1.35


def test_h100_fp8_variants():
    res = h100("fp8_scaled_mm_variants").results
    assert round(res["n4096_bf16_tflops"]) == 753 and round(res["n4096_fp8_tensorwise_tflops"]) == 1292
    assert round(res["n4096_fp8_tensorwise_tflops"] / res["n4096_bf16_tflops"], 2) == 1.72
    assert round(res["n4096_fp8_fast_accum_tflops"] / res["n4096_bf16_tflops"], 2) == 1.85
    assert round(res["n4096_fp8_rowwise_tflops"] / res["n4096_bf16_tflops"], 2) == 1.62
    assert round(res["n8192_fp8_tensorwise_tflops"] / res["n8192_bf16_tflops"], 2) == 1.81
    assert round(res["k65536_fast_accum_false_rel_error"], 5) == 6.8e-4
    assert round(res["k65536_fast_accum_true_rel_error"], 4) == 5.6e-3
    assert round(res["course_compare_n4096_fp8_speedup_over_bf16"], 2) == 1.09
    assert res["course_compare_small_fp8_speedup_over_bf16"] < 1  # a small product: fp8 slower than bf16
    assert round(res["course_compare_small_vs_emulation_rel_diff"], 5) == 2.4e-4


def test_h100_timing_vs_do_bench():
    res = h100("timing_vs_do_bench").results
    assert (
        round(res["bf16_course_median_time_s"] * 1000, 2) == 1.38
        and round(res["bf16_do_bench_time_s"] * 1000, 2) == 1.61
    )
    ratios = res["recorder_time_fn_over_do_bench"]
    assert len(ratios) == 3 and round(min(ratios.values()), 2) == 0.90 and round(max(ratios.values()), 2) == 0.97
    assert ratios["matmul_timing_check"] == h100("matmul_timing_check").results["time_fn_over_do_bench"]


def test_h100_autocast_figures():
    cc = h100("autocast_cast_cost").results
    assert (
        round(cc["layer_norm_upcast_kernel_time_s"] * 1e6) == 209 and round(cc["layer_norm_kernel_time_s"] * 1e6) == 215
    )
    assert (
        round(cc["matmul_bf16_cast_kernel_time_s"] * 1e6, 1) == 9.7
        and round(cc["matmul_gemm_kernel_time_s"] * 1e6, 1) == 26.3
    )
    ar = h100("autocast_real_vs_preview").results
    assert (ar["ops_in_table"], ar["measured"], ar["disagreements"]) == (110, 100, 7)
    assert len(ar["disagreeing_ops"]) == 7 and all("raised" in v for v in ar["disagreeing_ops"].values())


def test_find_orders_recorded_newest_first_then_published(tmp_path):
    p = tmp_path / "r.json"
    old = rec(date="2025-05-01", device="NVIDIA A100-SXM4-80GB", capability="8.0")
    new = rec(date="2026-02-03")
    save([old, new, rec(experiment="other")], p)
    got = find("tf32_matmul", path=p)
    assert got == [new, old, *PUBLISHED]
    assert find("tf32_matmul", path=p, published=False) == [new, old]
    assert find("tf32_matmul", path=tmp_path / "missing.json") == list(PUBLISHED)
    assert find("unknown_experiment", path=p) == []
    with pytest.raises(ValueError, match="got ''"):
        find("")


def test_record_without_cuda_raises(no_cuda, registry):
    registry["dummy"] = lambda device: {"x": 1}
    with pytest.raises(RuntimeError, match="need a CUDA GPU.*published figures meanwhile"):
        record()


def test_record_on_fake_gpu(fake_cuda, registry, tmp_path):
    p = tmp_path / "refs.json"
    seen = []

    def dummy(device):
        seen.append(device)
        return {"time_s": 0.5, "info": {"n": 3}}

    registry["dummy"] = dummy

    other_torch = rec(experiment="dummy", torch="2.10.0", date="2025-01-01", results={"time_s": 0.7})
    older_same = rec(experiment="dummy", torch="2.11.0+cu128", date="2025-06-01", results={"time_s": 0.9})
    other_gpu = rec(experiment="dummy", device="A100", torch="2.11.0+cu128", date="2025-01-01", results={"time_s": 2.0})
    save([other_torch, older_same, other_gpu], p)

    (new,) = record(["dummy"], path=p, command="python -m amp_lessons.reference record --only dummy")
    assert seen == ["cuda"]
    today = datetime.date.today().isoformat()
    command = "python -m amp_lessons.reference record --only dummy"
    results = {"time_s": 0.5, "info": {"n": 3}}
    assert new == Record("dummy", H100, "9.0", "2.11.0+cu128", "12.8", today, command, results, "", "abc1234")
    assert new.provenance == (
        f"measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0+cu128, CUDA 12.8, {today}, "
        "by `python -m amp_lessons.reference record --only dummy` at course commit abc1234"
    )
    assert new.label == f"recorded on NVIDIA H100 80GB HBM3, torch 2.11, {today}"
    stored = load(p)
    assert older_same not in stored  # replaced: same experiment, GPU name and torch version
    assert new in stored and other_torch in stored and other_gpu in stored and len(stored) == 3
    assert find("dummy", path=p)[0] == new


def test_record_default_command_and_all_experiments(fake_cuda, registry, tmp_path):
    registry["b_exp"] = lambda device: {"v": 2}
    registry["a_exp"] = lambda device: {"v": 1}
    got = record(path=tmp_path / "r.json")
    assert [r.experiment for r in got] == ["a_exp", "b_exp"]
    assert got[0].command == "amp_lessons.reference.record(names=['a_exp', 'b_exp'], device='cuda')"


def test_record_rejects_unknown_names_and_bad_results(fake_cuda, registry, tmp_path):
    registry["dummy"] = lambda device: {"x": None}
    with pytest.raises(ValueError, match="unknown experiment.*'nope'.*known: dummy"):
        record(["nope"], path=tmp_path / "r.json")
    with pytest.raises(ValueError, match="'dummy' returned bad results"):
        record(["dummy"], path=tmp_path / "r.json")
    with pytest.raises(ValueError, match="device must be 'cuda'.*got 'cpu'"):
        record(["dummy"], path=tmp_path / "r.json", device="cpu")
    assert not (tmp_path / "r.json").exists()


def test_the_table_of_experiments():
    # every recordable experiment is named for the JSON file and recorded beside this table (amp_lessons.recorders),
    # running its lesson's experiment
    assert set(reference.EXPERIMENTS) == RECORDER
    for name, fn in reference.EXPERIMENTS.items():
        assert re.fullmatch(r"[a-z0-9_]+", name)
        assert fn.__module__ == "amp_lessons.recorders" and fn.__name__.startswith("record_")


def test_cli_record_without_cuda(no_cuda, capsys):
    assert main(["record"]) == 2
    out = capsys.readouterr()
    assert "need a CUDA GPU" in out.err and "published figures meanwhile" in out.err and out.out == ""


def test_cli_record_on_fake_gpu(fake_cuda, registry, monkeypatch, tmp_path, capsys):
    registry["dummy"] = lambda device: {"time_s": 0.25}
    p = tmp_path / "r.json"
    assert main(["record", "--only", "dummy", "--file", str(p)]) == 0
    (r,) = load(p)
    assert r.command == f"python -m amp_lessons.reference record --only dummy --file {p}"
    assert "250 ms" in capsys.readouterr().out
    assert main(["record", "--only", "nope", "--file", str(p)]) == 2
    assert "unknown experiment" in capsys.readouterr().err


def test_cli_show_published(capsys):
    assert main(["show", "tf32_matmul"]) == 0
    out = capsys.readouterr().out
    assert "published: PyTorch docs, CUDA semantics" in out and "NVIDIA A100 (GA100)" in out
    assert "16.0 ms" in out and "110 ms" in out and "0.0022" in out and "3.9e-05" in out
    assert "published: the course's original notebook" in out and "unknown GPU" in out and "8.83e-05" in out
    assert main(["show"]) == 0
    assert "tf32_matmul" in capsys.readouterr().out
    assert main(["show", "unknown_experiment"]) == 1
    assert "no reference recorded yet for unknown_experiment" in capsys.readouterr().out


def test_compare_columns_and_provenance(tmp_path):
    p = tmp_path / "r.json"
    save([rec(results={"tf32_time_s": 0.004, "fp32_time_s": 0.03, "tf32_speedup": 7.5})], p)
    c = compare(
        "tf32_matmul", {"fp32_time_s": 1.234, "fp32_rel_error": 2.5e-7}, "measured on this machine (cpu)", path=p
    )
    text = repr(c)
    assert text == str(c)
    header = text.splitlines()[1]
    assert "measured on this machine (cpu)" in header
    assert "recorded on NVIDIA H100 80GB HBM3, torch 2.11, 2026-11-21 [1]" in header
    assert "NVIDIA A100 (GA100) [2] (published)" in header and "unknown GPU [3] (published)" in header
    assert "[1] measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0" in text
    assert "[2] published: PyTorch docs" in text and "[3] published: the course's original notebook" in text
    rows = {line.split()[0]: line for line in text.splitlines()[3:] if line and not line.startswith("[")}
    assert set(rows) == {f"{f}_{k}" for f in ("fp32", "tf32") for k in ("time_s", "rel_error", "max_error")} | {
        "tf32_speedup", "shape"}  # fmt: skip
    assert rows["fp32_time_s"].split()[1:] == ["1.23", "s", "30.0", "ms", "110", "ms", "-"]
    assert rows["tf32_speedup"].split()[1:] == ["-", "7.5", "-", "-"]
    h = c._repr_html_()
    assert "<table" in h and "measured on this machine (cpu)" in h and "published: PyTorch docs" in h
    assert "no reference recorded yet" not in text


def test_compare_without_references(tmp_path):
    c = compare("unknown_experiment", {"x": 1}, "modelled on this machine", path=tmp_path / "none.json")
    for text in (str(c), c._repr_html_()):
        assert (
            "no reference recorded yet for unknown_experiment: run `python -m amp_lessons.reference record` "
            "on a CUDA GPU"
        ) in text
        assert "modelled on this machine" in text
    with pytest.raises(ValueError, match="label"):
        compare("x", {}, "")


def test_a_folder_is_not_a_reference_file(tmp_path):
    for call in (lambda: reference.overview(path=tmp_path), lambda: load(tmp_path), lambda: save([], tmp_path)):
        with pytest.raises(ValueError, match="path must be a reference file \\(JSON\\), got the folder"):
            call()


def test_overview_lists_every_reference(tmp_path):
    o = reference.overview()
    assert len(o.records) == 27 + len(PUBLISHED)
    text = str(o)
    assert text.splitlines()[0] == "GPU references of the course"
    row = next(line for line in text.splitlines() if line.startswith("amp_minimal_loop"))
    assert row.split()[1:] == "recorded on NVIDIA H100 80GB HBM3, torch 2.11, 2026-11-23 26".split()
    assert "NVIDIA A100 (GA100) (published)" in text
    assert "27 recorded on a GPU, 2 published" in text and "python -m amp_lessons.reference show" in text
    assert "fp8_cast_costs" in text and "recorded on NVIDIA H200, torch 2.11, 2026-11-27" in text
    assert "<table" in o._repr_html_()
    assert len(reference.overview(published=False).records) == 27
    with pytest.raises(FileNotFoundError, match="no reference file at .*none.json"):
        reference.overview(path=tmp_path / "none.json")  # a typo is not an empty file
    (tmp_path / "empty.json").write_text('{"records": []}')
    empty = reference.overview(path=tmp_path / "empty.json", published=False)
    assert empty.records == () and "0 recorded on a GPU, 0 published" in str(empty)
    with pytest.raises(TypeError, match="published must be True or False, got 'yes'"):
        reference.overview(published="yes")
