"""The CPU parts of ``make gpu-check`` (delivery/gpu_check/gpu_check.py, its checks in delivery/gpu_check/gpu_check_arithmetic.py and
delivery/gpu_check/gpu_check_tools.py) and of its wheelhouse (delivery/gpu_check/gpu_wheels.py):
the TF32 mismatch counter and its tie inputs, the emulations against independent references (numpy, ml_dtypes),
the autocast comparison on the fake-CUDA side, the results writer and summary, the time budget and the exit
without a GPU."""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

from amp_lessons._runtime import exact_fp32

ROOT = Path(__file__).resolve().parents[2]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"amp_course_{name}", ROOT / "delivery" / "gpu_check" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


gc = _load("gpu_check")  # the command; it makes its checks, next to it in delivery/gpu_check/, importable
arith = importlib.import_module("gpu_check_arithmetic")  # checks (a)-(c)
tools = importlib.import_module("gpu_check_tools")  # checks (d)-(f)
wheels = _load("gpu_wheels")


def _u32(t: torch.Tensor) -> np.ndarray:
    return t.contiguous().numpy().view(np.uint32)


# ------------------------------------------------------------------------------------------------ (a) TF32


def test_tie_inputs_really_produce_ties():
    x = arith.tie_inputs((64, 64), seed=3)
    b = _u32(x)
    low, ties = b & 0x1FFF, (b & 0x1FFF) == 0x1000
    assert 0.4 < ties.mean() < 0.6  # tie_share 0.5
    assert (low[~ties] != 0x1000).all()
    kept_lsb = (b[ties] >> 13) & 1  # ties with an even and with an odd last kept bit: the two ways of a tie
    assert 0.3 < kept_lsb.mean() < 0.7
    mag = np.abs(x.numpy())
    assert mag.min() >= 2.0**-8 and mag.max() < 2.0**8 and (x < 0).any() and (x > 0).any()
    assert np.array_equal(arith.tie_mask(x).numpy(), ties)
    assert not arith.tie_mask(arith.tie_inputs(500, tie_share=0.0)).any()
    assert arith.tie_mask(arith.tie_inputs(500, tie_share=1.0)).all()
    assert torch.equal(arith.tie_inputs((8, 8), seed=1), arith.tie_inputs((8, 8), seed=1))


def _numpy_tf32(x: torch.Tensor, model: str) -> np.ndarray:
    """An independent rounding to TF32 on the fp32 bit patterns (positive magnitudes, no overflow here)."""
    b = _u32(x).astype(np.uint64)
    sign, mag = b & 0x80000000, b & 0x7FFFFFFF
    if model == "toward_zero":
        r = mag & ~np.uint64(0x1FFF)
    elif model == "nearest_away":
        r = (mag + 0x1000) & ~np.uint64(0x1FFF)
    else:
        r = (mag + 0xFFF + ((mag >> 13) & 1)) & ~np.uint64(0x1FFF)
    return (sign | r).astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("model", arith.TF32_MODELS)
def test_each_model_gives_no_mismatch_against_itself_and_some_against_the_others(model):
    x = arith.tie_inputs((48, 48), seed=5)
    out = arith.tf32_model(x, model)
    assert np.array_equal(out.numpy(), _numpy_tf32(x, model))  # the models are the rounding they claim
    counts = arith.count_mismatches(out, x)
    assert counts["elements"] == x.numel() and counts["ties"] == int(arith.tie_mask(x).sum()) > 0
    assert counts["mismatches"][model] == 0 and counts["matches"] == [model]
    for other in (*arith.TF32_MODELS, arith.UNROUNDED):
        if other != model:
            assert counts["mismatches"][other] > 0
    # ties alone tell nearest_even from nearest_away: they disagree on ties and nowhere else
    if model in ("nearest_even", "nearest_away"):
        other = "nearest_away" if model == "nearest_even" else "nearest_even"
        assert counts["tie_mismatches"][other] == counts["mismatches"][other] > 0


def test_a_kernel_without_tf32_matches_only_the_unrounded_input():
    x = arith.tie_inputs((16, 16), seed=2)
    counts = arith.count_mismatches(x.clone(), x)
    assert counts["matches"] == [arith.UNROUNDED]
    assert all(counts["mismatches"][m] > 0 for m in arith.TF32_MODELS)
    assert arith.tf32_verdict([{"n": 16, "operand": "first", **counts}]) == "no TF32 rounding anywhere (fp32 kernels)"


def test_verdict_names_the_model_and_the_cases_without_tf32():
    x = arith.tie_inputs((16, 16), seed=4)
    even = {"n": 64, "operand": "first", **arith.count_mismatches(arith.tf32_model(x, "nearest_even"), x)}
    plain = {"n": 8, "operand": "second", **arith.count_mismatches(x.clone(), x)}
    away = {"n": 64, "operand": "second", **arith.count_mismatches(arith.tf32_model(x, "nearest_away"), x)}
    assert arith.tf32_verdict([even, plain]) == "nearest_even (no TF32 rounding at n=8 second)"
    assert arith.tf32_verdict([even, away]).startswith("no model matches (")


@pytest.mark.parametrize("op", arith.TF32_OPS)
def test_identity_cases_are_exact_so_only_input_rounding_can_show(op):
    # on the CPU there is no TF32: every op must return exactly the operand it is given with the identity
    for side in ("first", "second"):
        out, x = arith.tf32_case(op, 8, side, seed=1)
        assert out.dtype == x.dtype == torch.float32 and out.shape == x.shape
        assert np.array_equal(_u32(out), _u32(x)), (op, side)


def test_tf32_check_on_cpu_reports_fp32_kernels_and_restores_the_switches():
    before = (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision)
    r = arith.check_tf32_rounding("cpu", sizes=(8,))
    assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision) == before
    assert r["settings"] == {
        "torch.backends.cuda.matmul.fp32_precision": "tf32",
        "torch.backends.cudnn.conv.fp32_precision": "tf32",
    }
    assert len(r["cases"]) == 2 * len(arith.TF32_OPS) and all(c["matches"] == [arith.UNROUNDED] for c in r["cases"])
    assert set(r["model_by_op"]) == set(arith.TF32_OPS)
    assert r["status"] == "ok" and "conv2d: no TF32 rounding anywhere" in r["summary"]


# ------------------------------------------------------------------------------------- (b) fp16 / bf16


def test_ulp_against_hand_values():
    t = torch.tensor
    assert arith.ulp(t([1.0, 2048.0, 65504.0, 0.0, 6.0e-5, -3.0]), "fp16").tolist() == [
        2.0**-10,
        2.0,
        32.0,
        2.0**-24,
        2.0**-24,
        2.0**-9,
    ]
    assert arith.ulp(t([1.0, -3.0]), "bf16").tolist() == [2.0**-7, 2.0**-6]
    assert arith.ulp_distance(t([1.0 + 2.0**-10, 2050.0]), t([1.0, 2048.0]), "fp16").tolist() == [1.0, 1.0]


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_lowp_emulation_against_numpy_with_its_own_rounding(dtype):
    # small integers: every sum is exact in fp32 and fp64, so the emulation must equal the fp64 product rounded
    # once by numpy's float16 or ml_dtypes' bfloat16 (both nearest even), roundings past 2048 / 256 included
    g = torch.Generator().manual_seed(0)
    lowp = arith._LOWP[dtype]
    top = 64 if dtype == "fp16" else 16  # integers the dtype holds exactly
    a = torch.randint(-top, top + 1, (12, 96), generator=g).to(lowp)
    b = torch.randint(-top, top + 1, (96, 10), generator=g).to(lowp)
    exact = a.double().numpy() @ b.double().numpy()
    ref = exact.astype(np.float16 if dtype == "fp16" else ml_dtypes.bfloat16).astype(np.float64)
    assert (ref != exact).mean() > 0.3  # many results must round
    got = arith.emulate_lowp_matmul(a, b)
    assert got.dtype == lowp and np.array_equal(got.double().numpy(), ref)


def test_lowp_check_on_cpu_measures_ulps():
    r = arith.check_lowp_matmul("cpu", ks=(64,), mn=16)
    assert [c["dtype"] for c in r["cases"]] == ["fp16", "bf16"]
    for c in r["cases"]:
        assert c["emulation_vs_exact_rounded"]["max_ulps"] <= 1 and c["vs_emulation"]["share_within_1_ulp"] > 0.9
    assert r["summary"].startswith("fp16: max ")


def test_sequential_fp32_sum_is_the_ordered_sum_and_blocks_sum_exactly():
    a = torch.tensor([[1.0, 2.0**-24, 2.0**-24]], dtype=torch.float16).to(torch.float32).half()
    b = torch.ones(3, 1, dtype=torch.float16)
    # in order: 1 + 2^-24 rounds back to 1 (half an fp32 ulp, ties to even), twice; exactly: 1 + 2^-23
    assert float(arith.sequential_fp32_sum(a, b)) == 1.0
    assert float(arith.sequential_fp32_sum(a, b, block=3)) == 1.0 + 2.0**-23
    with pytest.raises(ValueError):
        arith.sequential_fp32_sum(a, b, block=0)


def test_lowp_sum_check_on_cpu_in_fp32_ulps():
    def ieee_fp32(a, b):  # the CPU has no mm with out_dtype: an IEEE fp32 matmul stands in for the GPU's product
        with exact_fp32(torch.device("cpu")):
            return a.float() @ b.float(), "cpu stand-in"

    r = arith.check_lowp_sum("cpu", ks=(64, 1024), mn=8, fp32_out=ieee_fp32)
    assert [(c["dtype"], c["shape"]) for c in r["cases"]] == [
        (dt, f"8x{k} @ {k}x8") for dt in ("fp16", "bf16") for k in (64, 1024)
    ]
    assert r["fp32_output"] == "cpu stand-in" and r["summary"].startswith("fp16: max ")
    for c in r["cases"]:
        for key in ("vs_sequential_fp32_sum", "vs_exact_rounded_to_fp32", "sequential_fp32_sum_vs_exact"):
            assert set(c[key]) == {"max_ulps", "mean_ulps", "share_equal", "share_within_1_ulp"}
            assert c[key]["max_ulps"] >= c[key]["mean_ulps"] >= 0
        assert c["sequential_fp32_sum_vs_exact"]["max_ulps"] > 0  # a real fp32 sum rounds: the check can see it
    assert "lowp_sum" in [c.name for c in gc.CHECKS]


def test_the_fp32_output_falls_back_to_tf32_where_mm_has_no_out_dtype():
    a, b = arith.lowp_inputs(4, 8, 3, "bf16")
    out, how = arith.fp32_out_matmul(a, b)  # the CPU has no aten::mm.dtype
    assert out.dtype == torch.float32 and "TF32" in how


# ------------------------------------------------------------------------------------------ (c) fp8


def _e4m3_values(t8: torch.Tensor) -> np.ndarray:
    return t8.contiguous().view(torch.uint8).numpy().view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def test_fp8_inputs_and_emulation_against_ml_dtypes():
    a8, b8, sa, sb = arith.fp8_inputs(16, 64, 24, seed=1)
    assert a8.dtype == b8.dtype == torch.float8_e4m3fn and b8.stride() == (1, 64)  # b column-major
    assert a8.float().abs().max() == 448.0 and b8.float().abs().max() == 448.0
    av, bv = _e4m3_values(a8), _e4m3_values(b8.t()).T
    exact = (av @ bv) * (float(sa) * float(sb))
    assert np.allclose(arith.exact_scaled_product(a8, b8, sa, sb).numpy(), exact, rtol=1e-15, atol=0)
    # the emulation: fp32 sum, one fp32 scale product, rounded once to bf16
    scale = np.float32(np.float32(sa.item()) * np.float32(sb.item()))
    ref = ((av @ bv).astype(np.float32) * scale).astype(ml_dtypes.bfloat16).astype(np.float64)
    got = arith.emulate_scaled_mm(a8, b8, sa, sb).double().numpy()
    assert np.array_equal(got, ref)  # K=64 sums of e4m3 products are exact in fp32


def test_scaled_mm_cases_on_the_cpu_kernel():
    r = arith.scaled_mm_cases("cpu", mn=16, ks=(64,), large_k=1024)
    assert r["vs_emulation"][0]["max_ulps"] <= 1
    la = r["large_k"]
    assert la["fp32_out emulation"]["rel_error"] < 1e-6  # an fp32 sum of 1024 exact products
    assert la["bf16_out use_fast_accum=False"]["rel_error"] < 2.0**-8  # bf16 rounding of the output dominates
    assert la["fp32_out fast_over_slow_rel_error"] > 0


def test_capability_gate():
    assert arith.capability_gate((9, 0)) is None and arith.capability_gate((8, 9)) is None
    assert arith.capability_gate((8, 0)).startswith("skipped: needs sm_89+")
    assert arith.capability_gate((7, 5), (8, 0), "bf16").startswith("skipped: needs sm_80+ (bf16)")


# ------------------------------------------------------------------------------------ (d) autocast


def _lying(run, op_name: str):
    def run_lying(qualified, build, dtypes):
        return torch.float32 if qualified.split("::")[1].split(".")[0] == op_name else run(qualified, build, dtypes)

    return run_lying


def test_autocast_comparison_on_the_fake_side():
    fake = tools.trace_runner(True)
    ops = ["mm", "layer_norm", "binary_cross_entropy", "cudnn_convolution"]
    table = {"mm": "lower_precision", "layer_norm": "fp32", "binary_cross_entropy": "banned"}
    table["cudnn_convolution"] = "lower_precision"
    with tools.quiet():
        same = tools.compare_autocast(ops, fake, fake, table)
        lying = tools.compare_autocast(ops, _lying(fake, "mm"), fake, table)
    # fake tensors run cuDNN's convolution only where a GPU can run it (seen on an NVIDIA H200): fake tensor mode
    # falls back to the real kernel for an op with no meta function
    cudnn_runs = torch.cuda.is_available()
    assert same["agree"] == 3 + cudnn_runs and same["disagree"] == [] and same["table_contradicted_by_real"] == []
    assert same["neither_ran"] == ([] if cudnn_runs else ["cudnn_convolution"])
    assert lying["agree"] == 2 + cudnn_runs and [d["op"] for d in lying["disagree"]] == ["mm"]
    assert lying["table_contradicted_by_real"] == [{"op": "mm", "table": "lower_precision", "real": ["fp32"]}]


def test_signature_policy_rules():
    sp = tools.signature_policy
    assert sp({"A": "float16", "B": "float16", "C": "float16"}) == "lower_precision"
    assert sp({"A": "float32", "B": "float32", "C": "float32"}) == "fp32"
    assert sp({"A": "float32", "B": "float16", "C": "float32"}) == "promote"
    assert sp({"banned": True}) == "banned" and sp(None) is None
    assert sp({"A": "float32", "B": "float16", "C": "float16"}) is None  # autocast leaves it alone


@pytest.mark.parametrize(
    "qualified",
    ["aten::layer_norm", "aten::native_layer_norm", "aten::rms_norm", "aten::mv", "aten::addmv", "aten::gru_cell"],
)
def test_extra_samples_fit_their_ops(qualified):
    ax = tools._ax()
    args, kwargs = tools.EXTRA_SAMPLES[qualified](ax.Sampler([torch.float32], "cpu"))
    assert ax.result_dtype(tools._op(qualified)(*args, **kwargs)) == torch.float32


# --------------------------------------------------------------------------------------- (f) AMP step


def test_minimal_step_trains_like_the_course_step():
    from tests.faces import internals

    e2e = internals("e2e")

    torch.manual_seed(0)
    model = e2e.TinyTransformer(vocab=16, d_model=16, n_heads=2, n_layers=1, seq_len=8)
    data = e2e.make_batches(0, 3, 2, 8, 16)
    runs = {}
    for name, make in (("course", e2e.amp_step), ("minimal", tools.minimal_bf16_step)):
        m = e2e.TinyTransformer(vocab=16, d_model=16, n_heads=2, n_layers=1, seq_len=8)
        m.load_state_dict(model.state_dict())
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        step = make(m, opt, "bf16 autocast", "cpu")
        runs[name] = [step(b[:, :-1], b[:, 1:]) for b in data]
    # same start and data: the losses agree to bf16's precision, and fall the same way (optimizer steps taken)
    assert np.allclose(runs["course"], runs["minimal"], rtol=0.02)
    assert runs["minimal"][-1] < runs["minimal"][0]


# ----------------------------------------------------------------------------- results, summary, plan


def test_results_folder_and_slug(tmp_path):
    assert gc.gpu_slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    day = datetime.date(2026, 11, 25)
    first = gc.results_folder("NVIDIA H100 80GB HBM3", day, root=tmp_path)
    second = gc.results_folder("NVIDIA H100 80GB HBM3", day, root=tmp_path)
    assert first.name == "2026-11-25-nvidia-h100-80gb-hbm3" and second.name == first.name + "-2"
    assert first.is_dir() and second.is_dir()


def test_results_writer_and_summary(tmp_path):
    gc.write_result(tmp_path, "pytest", {"status": "passed", "summary": "812 passed", "seconds": 151.0})
    gc.write_result(tmp_path, "check_tf32_rounding", {"status": "ok", "summary": "mm: nearest_even", "x": float("inf")})
    data = json.loads((tmp_path / "check_tf32_rounding.json").read_text())
    assert data == {"name": "check_tf32_rounding", "status": "ok", "summary": "mm: nearest_even", "x": "inf"}
    table, ok = gc.summarize(tmp_path, ["pytest", "check_tf32_rounding"])
    assert ok and "(a) tf32_rounding" in table and "151.0 s" in table and "812 passed" in table
    table, ok = gc.summarize(tmp_path, ["pytest", "record_references", "check_tf32_rounding"])
    assert not ok and "record_references  missing" in table
    gc.write_result(tmp_path, "check_scaled_mm", {"status": "skipped", "summary": "skipped: needs sm_89+"})
    assert gc.summarize(tmp_path, ["pytest", "check_scaled_mm"])[1]  # a skip is not a failure
    gc.write_result(tmp_path, "check_amp_step", {"status": "error", "summary": "RuntimeError: boom"})
    table, ok = gc.summarize(tmp_path, ["pytest"])
    assert not ok and "(f) amp_step" in table and "RuntimeError: boom" in table  # results not expected count too


def test_failing_check_is_recorded_not_raised(tmp_path):
    def boom(device):
        raise RuntimeError("no kernel")

    r = gc.run_check(gc.Check("z", "boom", boom, 1.0, "fails"), "cpu", tmp_path)
    assert r["status"] == "error" and "no kernel" in r["summary"]
    assert "RuntimeError: no kernel" in json.loads((tmp_path / "check_boom.json").read_text())["traceback"]


def test_checks_out_of_time_are_skipped(tmp_path):
    import time

    gc.run_checks(tmp_path, ["tf32_rounding", "amp_step"], deadline=time.time() + 1.0, device="cpu")
    for name in ("tf32_rounding", "amp_step"):
        d = json.loads((tmp_path / f"check_{name}.json").read_text())
        assert d["status"] == "skipped" and d["summary"].startswith("skipped: time budget")
    assert not (tmp_path / "check_lowp_matmul.json").exists()


def test_time_budget_plan_fits_nine_minutes():
    assert gc.TOTAL_S == 540 and gc.BUDGET_S + gc.SETUP_S <= gc.TOTAL_S
    plan = gc.budget_plan()
    assert [p["step"] for p in plan] == ["pytest", "references", "checks"]
    assert sum(p["limit_s"] for p in plan) == gc.BUDGET_S
    assert all(p["estimate_s"] <= p["limit_s"] for p in plan)
    assert plan[-1]["starts_by_s"] + plan[-1]["limit_s"] == gc.BUDGET_S
    # every check starts in time when the ones before it took their estimates (run_checks' rule)
    left = plan[-1]["limit_s"] - gc.DEADLINE_MARGIN_S - gc.CHECKS_START_S
    for c in gc.CHECKS:
        assert left >= gc.SKIP_FACTOR * c.estimate_s, c.name
        left -= c.estimate_s
    assert gc.CHECKS_START_S + sum(c.estimate_s for c in gc.CHECKS) <= plan[-1]["estimate_s"]
    estimates = sum(s.estimate_s for s in gc.PLAN)
    for budget in (estimates, 380.0, 400.0, 479.0, 600.0):
        p = gc.budget_plan(budget)
        assert sum(x["limit_s"] for x in p) <= budget + 1e-9
        assert all(x["limit_s"] >= x["estimate_s"] for x in p)
    with pytest.raises(ValueError, match="budget_s=100"):
        gc.budget_plan(100)


def test_the_budget_counts_only_the_steps_that_run(capsys):
    assert [s.name for s in gc.steps_to_run()] == ["pytest", "references", "checks"]
    assert [s.name for s in gc.steps_to_run(skip_pytest=True)] == ["references", "checks"]
    assert [s.name for s in gc.steps_to_run(skip_pytest=True, skip_references=True)] == ["checks"]
    without_pytest = sum(s.estimate_s for s in gc.PLAN if s.name != "pytest")
    budget = 250.0
    assert without_pytest <= budget < sum(s.estimate_s for s in gc.PLAN)
    with pytest.raises(ValueError, match="budget_s=250"):
        gc.budget_plan(budget)  # all three steps cannot fit in 250 s
    plan = gc.budget_plan(budget, gc.steps_to_run(skip_pytest=True))
    assert [p["step"] for p in plan] == ["references", "checks"]
    assert sum(p["limit_s"] for p in plan) <= budget + 1e-9
    assert all(p["limit_s"] >= p["estimate_s"] for p in plan)
    assert gc.main(["--plan", "--skip-pytest", "--budget", "250"]) == 0
    out = capsys.readouterr().out
    assert "references" in out and "\npytest" not in out


def test_run_logged_stops_at_its_limit(tmp_path):
    code, secs = gc.run_logged(
        [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"], tmp_path / "x.log", 2.0
    )
    assert code is None and secs < 30 and "started" in (tmp_path / "x.log").read_text()
    code, _ = gc.run_logged([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "y.log", 30.0)
    assert code == 3


def test_without_a_gpu_it_stops_at_once_saying_what_needs_what(tmp_path):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # the same on a GPU machine: torch sees none
    proc = subprocess.run(
        [sys.executable, str(ROOT / "delivery" / "gpu_check" / "gpu_check.py"), "--results", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == gc.NO_GPU_EXIT == 2
    err = proc.stderr
    assert "torch.cuda.is_available() is False" in err and "nothing was run" in err
    assert f"torch {torch.__version__}" in err
    assert "(c) torch._scaled_mm" in err and "sm_89+" in err and "triton for do_bench" in err
    assert proc.stdout == "" and list(tmp_path.iterdir()) == []


def test_import_makes_no_cuda_call_and_plan_prints():
    code = (
        "import importlib.util, sys, torch; "
        f"spec = importlib.util.spec_from_file_location('g', {str(ROOT / 'delivery' / 'gpu_check' / 'gpu_check.py')!r}); "
        "m = importlib.util.module_from_spec(spec); sys.modules['g'] = m; spec.loader.exec_module(m); "
        "assert m.main(['--plan']) == 0; print('cuda initialized:', torch.cuda.is_initialized())"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "gpu-check time budget" in proc.stdout and "cuda initialized: False" in proc.stdout
    for c in gc.CHECKS:
        assert f"check {c.letter} {c.name}" in proc.stdout


# --------------------------------------------------------------------------------------- the wheelhouse


def test_wheelhouse_command_downloads_every_pin_with_triton(tmp_path):
    cmd = wheels.download_command(tmp_path / "wh")
    assert cmd[1:4] == ["-m", "pip", "download"] and cmd[cmd.index("--dest") + 1] == str(tmp_path / "wh")
    reqs = [ln for ln in (ROOT / "requirements.txt").read_text().splitlines() if "==" in ln and not ln.startswith("#")]
    assert reqs and all(r.strip() in cmd for r in reqs)
    assert "triton" in cmd and "setuptools>=69" in cmd and "--only-binary=:all:" not in cmd
    other = wheels.download_command(
        tmp_path,
        triton=False,
        python_version="3.12",
        platform="manylinux_2_28_x86_64",
        torch_index="https://x.org/cu128",
    )
    assert "triton" not in other and "--only-binary=:all:" in other
    assert other[other.index("--platform") + 1] == "manylinux_2_28_x86_64"
    assert other[other.index("--extra-index-url") + 1] == "https://x.org/cu128"


def test_wheelhouse_refuses_unpinned_requirements(tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\ntorch==2.13.0\nnumpy>=2\n")
    with pytest.raises(ValueError, match="'numpy>=2' is not an exact pin"):
        wheels.pins(req)
    req.write_text("torch==2.13.0  # the pin\n\n")
    assert wheels.pins(req) == ["torch==2.13.0"]


def test_makefile_targets_use_the_scripts_and_the_wheelhouse():
    # the targets live in delivery/delivery.mk, which the root Makefile includes (`make gpu-check` from the root)
    assert "\ninclude delivery/delivery.mk\n" in (ROOT / "Makefile").read_text(encoding="utf-8")
    make = (ROOT / "delivery" / "delivery.mk").read_text(encoding="utf-8")
    phony = next(line for line in make.splitlines() if line.startswith(".PHONY:"))
    assert " gpu-check" in phony and " gpu-wheels" in phony
    assert "\ngpu-check: setup\n\t$(PY) delivery/gpu_check/gpu_check.py --wheelhouse $(GPU_WHEELHOUSE)\n" in make
    assert "gpu-check: export PIP_NO_INDEX = 1" in make and "gpu-check: export PIP_FIND_LINKS" in make
    assert "$(PY) delivery/gpu_check/gpu_wheels.py --dest $(GPU_WHEELHOUSE)" in make


# ---------------------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "call, error, text",
    [
        (lambda: arith.tie_inputs(0), ValueError, "shape entry must be from 1"),
        (lambda: arith.tie_inputs((4, 4), tie_share=1.5), ValueError, "tie_share"),
        (lambda: arith.tie_inputs("4"), TypeError, "shape"),
        (lambda: arith.count_mismatches(torch.zeros(2), torch.zeros(3)), ValueError, "shape"),
        (lambda: arith.count_mismatches(torch.zeros(2), torch.zeros(2, dtype=torch.float64)), TypeError, "float64"),
        (lambda: arith.count_mismatches(torch.zeros(2), torch.zeros(2), ["nearest"]), ValueError, "'nearest'"),
        (lambda: arith.tf32_case("conv3d", 8, "first"), ValueError, "'conv3d'"),
        (lambda: arith.tf32_case("mm", 8, "left"), ValueError, "'left'"),
        (lambda: arith.check_tf32_rounding("cpu", sizes=(8,), ops=("mm", "gemm")), ValueError, "gemm"),
        (lambda: arith.check_tf32_rounding("tpu"), ValueError, "'tpu'"),
        (lambda: arith.ulp(torch.ones(2), "fp99"), ValueError, "fp99"),
        (lambda: arith.emulate_lowp_matmul(torch.ones(2, 2), torch.ones(2, 2)), TypeError, "float32"),
        (lambda: arith.lowp_inputs(4, 4, 4, "fp8"), ValueError, "'fp8'"),
        (lambda: arith.fp8_inputs(0, 16, 16), ValueError, "m must be"),
        (lambda: arith.scaled_mm(None, None, None, None, fast_accum="yes"), TypeError, "'yes'"),
        (lambda: arith.capability_gate("9.0"), TypeError, "'9.0'"),
        (lambda: tools.signature_policy(["A"]), TypeError, "sig"),
        (lambda: tools.check_autocast_policy("cpu"), ValueError, "'cpu'"),
        (lambda: tools.minimal_bf16_step(torch.nn.Linear(2, 2), None, "bf16 autocast", "mps"), ValueError, "'mps'"),
        (lambda: gc.budget_plan(-1), ValueError, "-1"),
        (lambda: gc.gpu_slug(""), ValueError, "''"),
        (lambda: gc.gpu_slug("---"), ValueError, "'---'"),
        (lambda: gc.write_result(ROOT / "no-such-dir", "x", {}), ValueError, "no-such-dir"),
        (lambda: gc.run_logged(["true"], Path("x.log"), 0), ValueError, "timeout_s"),
        (lambda: wheels.download_command(python_version="three"), ValueError, "'three'"),
        (lambda: wheels.download_command(torch_index="ftp://x"), ValueError, "'ftp://x'"),
    ],
)
def test_bad_input_is_named(call, error, text):
    with pytest.raises(error, match=None) as info:
        call()
    assert text in str(info.value)


def test_write_result_refuses_a_bad_status_or_name(tmp_path):
    with pytest.raises(ValueError, match="'great'"):
        gc.write_result(tmp_path, "x", {"status": "great", "summary": ""})
    with pytest.raises(ValueError, match="'../x'"):
        gc.write_result(tmp_path, "../x", {"status": "ok", "summary": ""})
    assert list(tmp_path.iterdir()) == []


def test_the_pytest_step_runs_without_a_benchmark_plugin_and_the_plugin_flag_is_harmless(tmp_path):
    cmd = gc.pytest_command(4)
    assert cmd[1:7] == ["-m", "pytest", "-p", "no:benchmark", "-n", "4"] and cmd[-1] == "--ignore=tests/browser"
    assert cmd[9:-1] == ["-m", "not hub", "tests", "notebooks", "delivery/tests", "--ignore=delivery/tests/browser"]
    # where pytest-benchmark is not installed (this environment), disabling it is accepted
    (tmp_path / "test_one.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:benchmark", "-q", "-p", "no:cacheprovider",
                          "-c", "/dev/null", str(tmp_path)], capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr


def test_the_pytest_step_gives_each_worker_one_thread(tmp_path, monkeypatch):
    seen = {}

    def fake_run_logged(cmd, log, timeout_s, env=None):
        seen.update(cmd=cmd, env=env)
        log.write_text("1 passed in 0.01s\n", encoding="utf-8")
        return 0, 0.01

    monkeypatch.setattr(gc, "run_logged", fake_run_logged)
    monkeypatch.setattr(gc.os, "cpu_count", lambda: 16)
    result = gc.step_pytest(tmp_path, 60)
    assert result["status"] == "passed" and seen["cmd"][seen["cmd"].index("-n") + 1] == "16"
    assert seen["env"]["OMP_NUM_THREADS"] == "1" and seen["env"]["PATH"] == gc.os.environ["PATH"]


# ------------------------------------------------------------------------------------------ (h) cross_entropy


def test_cross_entropy_check_reads_the_loss_ops_forward_and_backward_on_the_cpu():
    r = tools.check_cross_entropy("cpu")
    assert r["status"] == "ok" and set(r["ops"]) == {"fp16", "bf16"}
    for rows in r["ops"].values():
        phases = {row[0] for row in rows}
        assert phases == {"forward", "backward"}, rows
        forward = [row for row in rows if row[0] == "forward"]
        assert [row[1] for row in forward][:2] == ["_log_softmax", "nll_loss_forward"]
        # the CPU's autocast policy runs the loss in fp32 whatever the autocast dtype (the GPU's may not)
        assert all(set(row[3].split(", ")) == {"float32"} for row in forward), forward
    assert (
        r["summary"] == "fp16 autocast: forward loss ops output float32; bf16 autocast: forward loss ops output float32"
    )
    assert "cross_entropy" in [c.name for c in gc.CHECKS]


# ------------------------------------------------------------------------------------------ (i), (j) the lessons' own


def test_lesson_07_cast_costs_check_on_the_cpu():
    r = tools.check_fp8_cast_costs("cpu", repeats=2)
    assert r["status"] == "ok" and "perf_counter" in r["timer"] and r["timer"] in r["summary"]
    assert set(r["times_s"]) == {"256x512x256 bf16", "256x512x256 fp8", "256x512x256 fp8+casts",
                                 "256x512x256 fp8+compiled casts"}  # fmt: skip
    assert all(t > 0 for t in r["times_s"].values()) and set(r["speed_vs_bf16"]) == set(r["times_s"]) - {
        "256x512x256 bf16"
    }
    assert "8192x8192x8192" in r["skipped"]  # the large product only on a GPU with fp8 tensor cores
    assert {"fp8_cast_costs", "launch_bound"} <= {c.name for c in gc.CHECKS}


def test_lesson_06_launch_bound_check_on_the_cpu():
    r = tools.check_launch_bound("cpu", repeats=3)
    assert r["status"] == "ok" and set(r["models"]) == {"tiny", "large"}
    for m in r["models"].values():
        assert m["fp32_step_s"] > 0 and 0 <= m["arithmetic_share"] <= 1 and m["most_from_faster_arithmetic"] >= 1
    assert r["summary"].startswith("tiny: bf16 ")
