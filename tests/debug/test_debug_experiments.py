"""Tests of amp_lessons.debug._experiments: the tracer, the triage and the dtype map, on small models
including ones built to fail at a known layer."""

import itertools
import math
import statistics
import warnings
import weakref

import pytest
import torch
from torch import nn

from amp_lessons.formats import CLASSES, get_format
from tests.faces import internals

debug = internals("debug")


def mse(y):
    return lambda out: nn.functional.mse_loss(out.float(), y)


@pytest.fixture(scope="module")
def t5():
    model = debug.t5_like_model()
    x, y = debug.t5_like_batch()
    return model, x, y


def test_tensor_stats_count_finite_values_only_and_what_float32_flushes():
    """The class fractions are the formats engine's (tests/test_one_vocabulary.py); here what tensor_stats adds."""
    f16 = get_format("fp16")
    x = torch.tensor([0.0, f16.underflow_threshold, 1.0, 1e6, math.inf, math.nan], dtype=torch.float64)
    s = debug.tensor_stats(x, ("fp16", "bf16"))
    assert s.nonfinite == 2 and s.numel == 6 and s.absmax == 1e6 and s.absmin_nonzero == f16.underflow_threshold
    assert s.fractions["bf16"] == {**dict.fromkeys(CLASSES, 0.0), "zero": 1 / 4, "normal": 3 / 4}
    tiny = debug.tensor_stats(torch.tensor([1e-60, 0.0], dtype=torch.float64), "fp16")  # float32 flushes 1e-60
    assert tiny.fractions["fp16"]["flushed"] == tiny.fractions["fp16"]["zero"] == 0.5
    assert debug.tensor_stats(torch.arange(3), ("fp16",)) is None  # no floating tensor


def test_the_known_first_overflowing_layer_is_found_in_fp32_and_in_fp16(t5):
    model, x, y = t5
    tr32 = debug.trace_overflow(model, x, loss_fn=mse(y))
    assert tr32.first_nonfinite() is None and tr32.first_nonfinite("grad") is None
    assert tr32.first_overflow("fp16").label == "block1.wo"  # known in advance: t5_like_model(bad_block=1)
    assert tr32.first_overflow("bf16") is None
    assert math.isfinite(tr32.loss)
    assert tr32.record("block1.wo").output.absmax > get_format("fp16").max
    tr16 = debug.trace_overflow(model, x, loss_fn=mse(y), autocast=torch.float16)
    first = tr16.first_nonfinite()
    assert first.label == "block1.wo" and first.type == "Linear"
    assert first.input.nonfinite == 0 and first.output.dtype == "float16"
    assert math.isnan(tr16.loss) and tr16.first_nonfinite("grad") is not None
    # every module before it is finite
    before = tr16.records[: tr16.records.index(first)]
    assert before and all(not r.output.has_nonfinite for r in before)
    assert "first inf/NaN in an output: block1.wo" in tr16.summary()
    # traced in fp16, the summary does not also say what "would" overflow fp16 (that is the inf/NaN line)
    assert "would overflow fp16" not in tr16.summary() and "would overflow bf16" in tr16.summary()
    assert "would overflow fp16: block1.wo" in tr32.summary()


def _kept_fp32():
    fixed = debug.t5_like_model()
    fixed.block1.wo = debug.KeepFP32(fixed.block1.wo)
    return fixed


@pytest.mark.parametrize(
    "model, autocast, first, dtypes",
    [
        (lambda: debug.t5_like_model(bad_block=0), "fp16", "block0.wo", {}),  # the bad block moves with the argument
        (lambda: debug.t5_like_model(bad_block=2), "fp16", "block2.wo", {}),
        (lambda: debug.t5_like_model(bad_block=None), "fp16", None, {}),
        (debug.t5_like_model, torch.bfloat16, None, {"block1.wo": "bfloat16"}),  # bf16 stays finite
        # KeepFP32 fixes the layer and leaves the rest in fp16
        (_kept_fp32, "fp16", None, {"block1.wo": "float32", "block0.wo": "float16", "head": "float16"}),
    ],
)
def test_where_the_first_inf_comes(model, autocast, first, dtypes):
    x, y = debug.t5_like_batch()
    tr = debug.trace_overflow(model(), x, loss_fn=mse(y), autocast=autocast)
    assert (tr.first_nonfinite() and tr.first_nonfinite().label) == first and math.isfinite(tr.loss) == (first is None)
    assert {name: tr.record(name).output.dtype for name in dtypes} == dtypes


def test_gradients_are_traced_in_backward_order_and_grads_are_restored(t5):
    model, x, y = t5
    for p in model.parameters():
        p.grad = torch.full_like(p, 7.0)
    tr = debug.trace_overflow(model, x, loss_fn=mse(y))
    assert tr.grad_order[0] in ("(model)", "head") and tr.grad_order.index("head") < tr.grad_order.index("embed")
    assert tr.record("embed").grad is not None
    assert all(torch.equal(p.grad, torch.full_like(p, 7.0)) for p in model.parameters())
    for p in model.parameters():
        p.grad = None


def test_a_gradient_overflow_is_found_in_the_backward_pass():
    # a loss that is finite but whose gradient overflows fp16 at the output: scaled by 1e6
    model = nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 2))
    x = torch.randn(3, 4)
    tr = debug.trace_overflow(model, x, loss_fn=lambda o: 1e6 * o.float().sum())
    assert tr.first_nonfinite("grad") is None
    assert tr.record("1").grad.overflow("fp16") == 1.0  # every gradient of the output is 1e6


def test_hooks_are_removed_even_when_the_model_raises(t5):
    class Boom(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    model = nn.Sequential(nn.Linear(16, 16), Boom())
    with pytest.raises(RuntimeError, match="boom"):
        debug.trace_overflow(model, torch.randn(2, 16))
    assert all(not m._forward_hooks for m in model.modules())
    with pytest.raises(RuntimeError, match="bad loss"):
        debug.trace_overflow(t5[0], t5[1], loss_fn=lambda o: (_ for _ in ()).throw(RuntimeError("bad loss")))
    assert all(not m._forward_hooks for m in t5[0].modules())


def test_a_module_called_twice_gets_two_records():
    lin = nn.Linear(4, 4)
    tr = debug.trace_overflow(nn.Sequential(lin, lin), torch.randn(2, 4))
    assert [r.label for r in tr.records] == ["0", "0 (call 2)", "(model)"]


def test_the_broken_training_setup_is_finite_in_fp32_and_nan_in_fp16():
    for seed in (0, 3):  # any seed; 3 is the exercises
        model, x, y = debug.broken_training_setup(seed)
        tr32 = debug.trace_overflow(model, x, loss_fn=mse(y))
        tr16 = debug.trace_overflow(model, x, loss_fn=mse(y), autocast="fp16")
        assert math.isfinite(tr32.loss) and math.isnan(tr16.loss)
        assert tr16.first_nonfinite().label == tr32.first_overflow("fp16").label
        assert tr16.first_nonfinite().label.endswith(".wo")


@pytest.fixture(scope="module")
def triage():
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))
    return debug.why_not_faster(
        model, torch.randn(16, 32), loss_fn=lambda o: o.float().square().mean(), repeats=3, rounds=2
    )


def test_triage_measures_and_explains(triage):
    t = triage
    assert len(t.fp32_times_s) == len(t.amp_times_s) == len(t.fp32_2x_times_s) == 6 and t.rounds == 2
    assert t.speedup == t.fp32_step_s / t.amp_step_s and t.fp32_step_s == statistics.median(t.fp32_times_s)
    assert 0 < t.matmul_share_fp32 <= 1 and 0 <= t.cast_share <= 1 and t.threads == 1
    assert t.casts >= 4  # two weights and two activations cast to bf16 in forward, at least
    assert t.odd_dims == ["'2' (out_features=10)"] and t.tf32_baseline is False
    assert len(t.model_rate_ratios) == len(t.rate_ratios) == 2 and len(t.findings) == 6
    # the bound is Amdahl's: infinitely fast matmuls; the prediction uses the rate the model's matmuls ran at
    p, r = t.matmul_share_fp32, t.model_rate_ratio
    assert t.amdahl_bound == pytest.approx(1 / (1 - p)) and t.amdahl_bound >= 1.0
    assert r > 0 and t.predicted_speedup == pytest.approx(1 / ((1 - p) + p / r))
    assert t.predicted_speedup <= t.amdahl_bound
    share = next(e for n, _, e in t.findings if n == "matmuls are a small share")
    assert f"at most {t.amdahl_bound:.2g}x faster" in share and f"{t.predicted_speedup:.2g}x predicted" in share
    # the matmul finding reads the model's own matmuls; on the CPU the dimensions are not held against it
    assert t.findings[0][1] == (t.model_rate_ratio < 1.0) and f"{t.model_rate_ratio:.2g}x their" in t.findings[0][2]
    assert t.findings[4][:2] == ("dimensions not multiples of 8", False) and "GPU matter" in t.findings[4][2]


def test_triage_times_with_one_thread_in_interleaved_rounds_and_puts_the_threads_back():
    """Each round times fp32, autocast and twice the batch (autocast first in odd rounds), then profiles one fp32
    and one autocast step of three calls each; every call sees one torch thread; the caller's count and the model's
    .grad come back."""
    model = nn.Linear(8, 8)
    model.weight.grad = torch.ones_like(model.weight)
    seen = []

    def loss_fn(out):
        seen.append((out.dtype, out.shape[0], torch.get_num_threads()))
        return out.float().sum()

    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        t = debug.why_not_faster(model, torch.randn(4, 8), loss_fn=loss_fn, repeats=2, rounds=2)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert {threads for *_, threads in seen} == {1} and t.threads == 1
    # (dtype, batch, calls) of each run of equal calls
    runs = [(*key, len(list(calls))) for key, calls in itertools.groupby((dtype, batch) for dtype, batch, _ in seen)]
    f32, b16 = torch.float32, torch.bfloat16
    # round 0: 2 warm-up + 2 timed calls each, profiles of 3; round 1: 1 warm-up + 2 timed, autocast first (its
    # timed calls join the profile of round 0's autocast step)
    assert runs == [(f32, 4, 4), (b16, 4, 4), (f32, 8, 4), (f32, 4, 3), (b16, 4, 6), (f32, 4, 3), (f32, 8, 3),
                    (f32, 4, 3), (b16, 4, 3)]  # fmt: skip
    kept = debug.why_not_faster(model, torch.randn(4, 8), loss_fn=lambda o: o.float().sum(), repeats=1, threads=None)
    assert kept.threads is None
    assert torch.equal(model.weight.grad, torch.ones_like(model.weight)) and model.bias.grad is None


@pytest.mark.parametrize(
    "setting, param, act, total",
    [
        ("fp32", torch.float32, torch.float32, 16),
        ("pure bf16", torch.bfloat16, torch.bfloat16, 8),
        ("pure fp16", torch.float16, torch.float16, 8),
        ("autocast bf16", torch.float32, torch.bfloat16, None),
        ("autocast fp16", torch.float32, torch.float16, None),
    ],
)
def test_dtype_map(t5, setting, param, act, total):
    model, x, y = t5
    m = debug.dtype_map(model, x, loss_fn=lambda o: o.float().square().mean(), setting=setting)
    assert set(m.parameters.values()) == set(m.gradients.values()) == {param} and m.activations["block0.wo"] == act
    assert {s["exp_avg"] for s in m.optimizer_states.values()} == {param}
    if total is not None:
        assert m.total_bytes_per_parameter == total
        return
    assert m.activations["norm0"] in (act, torch.float32)
    # every Linear weight and bias is cast once to 2 bytes: all parameters except the LayerNorms'
    n = sum(p.numel() for p in model.parameters())
    cast = sum(p.numel() for mod in model.modules() if isinstance(mod, nn.Linear) for p in mod.parameters())
    assert m.bytes_per_parameter["low-precision weight copies"] == pytest.approx(2 * cast / n)
    assert m.bytes_per_parameter["weights"] == 4 and m.bytes_per_parameter["optimizer exp_avg_sq"] == 4


def test_dtype_map_leaves_the_model_alone(t5):
    model, x, y = t5
    before = [p.detach().clone() for p in model.parameters()]
    debug.dtype_map(model, x, loss_fn=lambda o: o.float().sum(), setting="pure fp16")
    assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
    assert all(p.dtype == torch.float32 for p in model.parameters())


def test_nothing_warns(t5):
    model, x, y = t5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        debug.trace_overflow(model, x, loss_fn=mse(y), autocast="fp16")
        debug.dtype_map(model, x, loss_fn=mse(y), setting="autocast fp16")


def test_trace_table_keeps_module_names_whole(t5):
    model, x, y = t5
    trace = debug.trace_overflow(model, x, loss_fn=mse(y))
    t = debug.TraceTable.of(trace)
    assert [r["module"] for r in t.rows] == [r["module"] for r in trace.rows(True)] and t.formats == trace.formats
    row = next(r for r in t.rows if r["module"] == "block1.wo")
    assert row["fp16 overflow"] > 0 and row["bf16 overflow"] == 0
    text, html = str(t), t._repr_html_()
    assert "fp16 overflow (%)" in text and "min |x| &gt; 0" in html and "white-space: nowrap'>block1.wo" in html
    assert f"{row['absmax']:.3g}" in text  # abs max to 3 significant digits


def test_autograd_saves_the_autocast_weight_copy_until_backward():
    """The fact behind the note: a Linear under autocast, on an input that requires grad, saves a bf16 copy of its
    weight for backward; it outlives the autocast region and is freed by backward."""
    layer = nn.Linear(16, 8)
    inp = torch.randn(4, 16, requires_grad=True)
    saved = []

    def pack(t):
        saved.append(weakref.ref(t))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = layer(inp)
    w16 = layer.weight.detach().to(torch.bfloat16)
    copies = [r for r in saved if r().dtype == torch.bfloat16 and torch.equal(r().T, w16)]
    assert len(copies) == 1 and copies[0]() is not None
    out.float().sum().backward()
    assert copies[0]() is None
