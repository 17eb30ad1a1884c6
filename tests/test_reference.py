"""Reference records: the file format, provenance, recording with a fake GPU, the CLI, compare()."""

import dataclasses
import datetime
import json
import re

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


@pytest.fixture
def no_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


# ---------------------------------------------------------------------------- records, provenance


def test_provenance_of_measured_and_published():
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


def test_published_tf32_figures_are_two_separate_records():
    # PyTorch's TF32 note (an A100, K = 10240) and the course's original notebook (GPU not named,
    # K = 51200) are different experiments: neither record borrows a figure from the other
    docs, original = [r for r in PUBLISHED if r.experiment == "tf32_matmul"]
    assert (docs.device, docs.capability, docs.torch, docs.cuda, docs.date, docs.command) == (
        "NVIDIA A100 (GA100)",
        "8.0",
        "",
        "",
        "",
        "",
    )
    assert docs.results == {
        "shape": "10240x10240 @ 10240x10240",
        "tf32_time_s": 0.016,
        "fp32_time_s": 0.11,
        "tf32_max_error": 0.1747,
        "fp32_max_error": 0.0031,
        "tf32_rel_error": 0.0022,
        "fp32_rel_error": 0.000039,
    }
    assert docs.source.startswith("PyTorch docs") and "https://pytorch.org/docs/stable/notes/cuda.html" in docs.source
    assert (original.device, original.capability, original.torch, original.cuda, original.date) == (
        "unknown GPU",
        "",
        "",
        "",
        "",
    )
    assert original.results == {
        "shape": "10240x51200 @ 51200x10240",
        "tf32_rel_error": 0.0024,
        "fp32_rel_error": 8.8293e-05,
    }
    assert not any(k.endswith("_time_s") for k in original.results)  # it recorded no timings


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


@pytest.mark.parametrize(
    "kw, shown",
    [
        (dict(date="21/11/2026"), "field 'date' must be an ISO date YYYY-MM-DD (or empty), got '21/11/2026'"),
        (dict(date="2026-13-01"), "'2026-13-01'"),
        (dict(capability="sm90"), "field 'capability' must look like '9.0' (or be empty), got 'sm90'"),
        (dict(command=""), "field 'command' must name the command"),
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


# ---------------------------------------------------------------------------- file format


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


def test_save_rejects_non_records(tmp_path):
    with pytest.raises(TypeError, match="Record objects"):
        save([{"experiment": "x"}], tmp_path / "r.json")


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


def test_shipped_file_holds_only_real_recordings():
    assert reference.DEFAULT_PATH.name == "references.json" and reference.DEFAULT_PATH.parent.name == "data"
    for r in load():
        assert r.command and r.date and not r.source, r
    text = reference.DEFAULT_PATH.read_text(encoding="utf-8")
    assert text.endswith("\n")


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


# ---------------------------------------------------------------------------- recording


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
    other_gpu = rec(
        experiment="dummy",
        device="NVIDIA A100-SXM4-80GB",
        torch="2.11.0+cu128",
        date="2025-01-01",
        results={"time_s": 2.0},
    )
    save([other_torch, older_same, other_gpu], p)

    (new,) = record(["dummy"], path=p, command="python -m amp_lessons.reference record --only dummy")
    assert seen == ["cuda"]
    today = datetime.date.today().isoformat()
    assert new == Record(
        "dummy",
        "NVIDIA H100 80GB HBM3",
        "9.0",
        "2.11.0+cu128",
        "12.8",
        today,
        "python -m amp_lessons.reference record --only dummy",
        {"time_s": 0.5, "info": {"n": 3}},
        "",
    )
    assert new.provenance == (
        f"measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0+cu128, CUDA 12.8, {today}, "
        "by `python -m amp_lessons.reference record --only dummy`"
    )
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
    # every recordable experiment is named for the JSON file and written in its lesson's topic
    assert set(reference.EXPERIMENTS) == {
        "tf32_matmul",
        "matmul_timing_check",
        "e2e_matmul_throughput",
        "e2e_training",
        "fp8_scaled_mm",
    }
    for name, fn in reference.EXPERIMENTS.items():
        assert re.fullmatch(r"[a-z0-9_]+", name)
        assert fn.__module__.split(".")[1] in {"tf32", "e2e", "fp8"} and fn.__module__.endswith(".experiments")


# ---------------------------------------------------------------------------- command line


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


# ---------------------------------------------------------------------------- compare


def test_compare_columns_and_provenance(tmp_path):
    p = tmp_path / "r.json"
    save([rec(results={"tf32_time_s": 0.004, "fp32_time_s": 0.03, "tf32_speedup": 7.5})], p)
    c = compare(
        "tf32_matmul", {"fp32_time_s": 1.234, "fp32_rel_error": 2.5e-7}, "measured on this machine (cpu)", path=p
    )
    text = repr(c)
    assert text == str(c)
    header = text.splitlines()[1]
    assert "measured on this machine (cpu)" in header and "NVIDIA H100 80GB HBM3 [1]" in header
    assert "NVIDIA A100 (GA100) [2] (published)" in header and "unknown GPU [3] (published)" in header
    assert "[1] measured on NVIDIA H100 80GB HBM3 (sm 9.0), torch 2.11.0" in text
    assert "[2] published: PyTorch docs" in text and "[3] published: the course's original notebook" in text
    rows = {line.split()[0]: line for line in text.splitlines()[3:] if line and not line.startswith("[")}
    assert set(rows) == {
        "fp32_time_s",
        "fp32_rel_error",
        "tf32_time_s",
        "tf32_speedup",
        "tf32_max_error",
        "fp32_max_error",
        "tf32_rel_error",
        "shape",
    }
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


def test_public_surface():
    assert sorted(reference.__all__) == reference.__all__
    for name in reference.__all__:
        assert hasattr(reference, name)
