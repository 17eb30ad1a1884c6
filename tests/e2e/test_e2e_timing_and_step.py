"""Tests of lesson 06's AMP step (written once, in the notebook's ``#| export`` cell, run by the package) and of what
keeps the lesson honest on a busy machine (no timing asserts: budgets of 1e-9 s and of math.inf, and constructed
runs): time budgets, the interleaved rate probe, verdicts that read quartile ranges, training timed in blocks
without a host sync per step, and the launch-bound demo's arithmetic share."""

import math
import time

import pytest
import torch

from amp_lessons.e2e import _common, _experiments as e2e, _models as models, _records as records, _training, key_code
from amp_lessons.e2e._records import LaunchTable, RateTable, ThroughputTable, TrainingTable
from tests.faces import internals

face = internals("e2e")

TINY = dict(vocab=16, d_model=32, n_heads=2, n_layers=1, seq_len=16)


# --- the step: one copy ------------------------------------------------------------------------------------------


def test_the_package_runs_the_notebooks_step():
    """e2e.amp_step is a checked call of the exported make_step, and e2e.train's default step is that one."""
    assert face.amp_step is e2e.amp_step and _training.key_code is key_code  # the step is called as key_code.make_step
    calls = []
    real = key_code.make_step

    def spy(*args):
        inner = real(*args)

        def step(x, y):
            calls.append((*args[2:], tuple(x.shape), tuple(y.shape)))
            return inner(x, y)

        return step

    mp = pytest.MonkeyPatch()
    mp.setattr(key_code, "make_step", spy)
    try:
        r = e2e.train("bf16 autocast", steps=3, progress=False, model_kwargs=TINY, batch=2)
    finally:
        mp.undo()
    assert r.ran and calls == [("bf16 autocast", "cpu", 1.0, (2, 16), (2, 16))] * 3
    mine = e2e.train("bf16 autocast", steps=3, progress=False, model_kwargs=TINY, batch=2, make_step=key_code.make_step)
    assert mine.loss == r.loss  # same seed and data, the same function: the same losses


class _Spy(torch.optim.SGD):
    """SGD that records the total norm of the gradients it applies."""

    def __init__(self, params):
        super().__init__(params, lr=0.01)
        self.norms = []

    def step(self, closure=None):
        grads = [p.grad for g in self.param_groups for p in g["params"] if p.grad is not None]
        self.norms.append(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads])).item())
        return super().step(closure)


def _applied_norms(config, max_norm, steps=3):
    torch.manual_seed(0)
    model = models.TinyTransformer(**TINY)
    opt = _Spy(model.parameters())
    step = e2e.amp_step(model, opt, config, "cpu", max_norm)
    data = models.make_batches(0, steps, 4, TINY["seq_len"], TINY["vocab"])
    losses = [step(b[:, :-1], b[:, 1:]) for b in data]
    assert all(math.isfinite(v) for v in losses)
    return opt.norms


@pytest.mark.parametrize("config", ["fp32", "bf16 autocast", "fp16 autocast + GradScaler"])
def test_the_step_clips_the_true_gradients(config):
    """The optimizer sees gradients of total norm at most max_norm, unscaled (the scaler's scale is 65536 at the
    start: a clip before unscale_ would leave them near 1/65536 of max_norm), and max_norm=None leaves them alone."""
    free = _applied_norms(config, None)
    assert min(free) > 0.05  # the tiny model's gradients are larger than the limit below
    clipped = _applied_norms(config, 0.05)
    assert clipped and all(0.05 * 0.99 < n <= 0.05 * 1.001 for n in clipped), clipped


# --- time budgets: re-checked as the work goes -------------------------------------------------------------------


def test_train_stops_adding_steps_when_its_budget_is_spent():
    full = e2e.train("fp32", steps=12, progress=False, model_kwargs=TINY, batch=2)
    cut = e2e.train("fp32", steps=12, progress=False, model_kwargs=TINY, batch=2, budget_s=1e-9)
    assert full.stopped_early is None and full.steps == full.planned_steps == 12 == len(full.loss)
    assert cut.steps == e2e.MIN_TRAIN_STEPS == len(cut.loss) and cut.planned_steps == 12
    assert cut.stopped_early.startswith(f"stopped after {e2e.MIN_TRAIN_STEPS} of 12 steps: the run's time budget")
    assert cut.loss == full.loss[: e2e.MIN_TRAIN_STEPS]  # each step's data is the planned run's
    assert cut.loss[-1] < 0.8 * cut.loss[0]  # MIN_TRAIN_STEPS is enough to see it learn
    short = e2e.train("fp32", steps=4, progress=False, model_kwargs=TINY, batch=2, budget_s=1e-9)
    assert short.steps == 4 and short.stopped_early is None  # fewer steps than the floor: all of them
    t = TrainingTable.of([full, cut])
    assert f"fp32: stopped after {e2e.MIN_TRAIN_STEPS} of 12 steps" in str(t)


def test_throughput_skips_the_rest_once_its_total_budget_is_spent():
    rows = e2e.matmul_throughput([16, 32, 48], ("fp32",), repeats=1, total_budget_s=1e-9)
    assert rows[0]["skipped"] is None and rows[0]["tflops"] > 0  # the first row starts before any time is spent
    for r in rows[1:]:
        assert r["skipped"].startswith("the time budget of 1e-09 s for these matmuls was spent") and r["tflops"] is None
    assert all(r["skipped"] is None for r in e2e.matmul_throughput([16, 32], ("fp32",), repeats=1))


def test_launch_demo_and_inference_time_fewer_runs_once_the_budget_is_spent():
    out = e2e.launch_bound_demo(repeats=8, large_width=32, budget_s=1e-9, progress=False)
    for r in out.runs.values():
        assert len(r.fp32_times_s) == len(r.bf16_autocast_times_s) == 3  # the fewest a spread needs
    assert out.tiny.cut_short == "timed 3 and 3 steps, not 8: the time budget was spent"
    assert out.large.cut_short is None  # it asked for max(3, 8 // 4) = 3: none were left out
    assert "tiny: timed 3 and 3 steps, not 8" in str(LaunchTable.of(out))
    whole = e2e.launch_bound_demo(repeats=4, large_width=32, progress=False)
    assert len(whole.tiny.fp32_times_s) == 4 and whole.tiny.cut_short is None
    rows = e2e.inference_compare(repeats=5, budget_s=1e-9)
    slow16 = _common.slow_fp16(torch.device("cpu"))
    for r in rows:
        want = 1 if (r["variant"] == "fp16 weights" and slow16) else 3
        assert len(r["times_s"]) == want, r
    assert "timed 3 times, not 5: the time budget was spent" in rows[0]["note"]


# --- verdicts: a wide spread concludes nothing ------------------------------------------------------------------


def _spread_times(q1, med, q3):
    return (q1 * 0.99, q1, med, q3, q3 * 1.01)


def _steps(t32, t16=(1.0, 1.0, 1.0), model="m", grown=()):
    growth = 8 if grown else None  # the fp32 step timed at 8x the batch too
    return records.StepTimes(model, 1.0, t32[1], t16[1], t32[1] / t16[1], t32, t16, None, growth, growth, grown)


LARGE = _steps((0.020, 0.021, 0.022), (0.010, 0.011, 0.012), "3 x Linear(512, 512), batch 512")


@pytest.mark.parametrize(
    "t32, t16, words",
    [
        # the walkthrough's row: fp32 3.56 ms (3.17 to 10.4 between the quartiles) against bf16 autocast 129 ms (119
        # to 138): noisy on its own, but every quartile says bf16 is 11x to 50x slower
        (_spread_times(3.17e-3, 3.56e-3, 10.4e-3), _spread_times(119e-3, 129e-3, 138e-3), "slower"),
        (_spread_times(100e-3, 130e-3, 200e-3), _spread_times(119e-3, 129e-3, 138e-3), "too noisy to conclude"),
        ((1e-4, 2e-4, 4e-2), (1e-4, 3e-4, 5e-2), "too noisy to conclude"),  # a speed-up from 0.00x to 400x
        ((0.020, 0.021, 0.022), (0.021, 0.0215, 0.023), "within the run-to-run spread"),
        ((0.020, 0.021, 0.022), (0.010, 0.011, 0.012), "faster"),
    ],
)
def test_verdicts_read_the_quartiles(t32, t16, words):
    launch = LaunchTable.of(records.LaunchBoundDemo(_steps(t32, t16, "3 x Linear(64, 64), batch 8"), LARGE, ""))
    assert launch.verdicts["tiny"] == words
    tiny_row = next(line for line in str(launch).splitlines() if line.startswith("tiny"))
    assert words in tiny_row and ("more than 1.5x apart" in str(launch)) == (words == "too noisy to conclude")
    runs = [
        records.TrainRun("fp32", True, step_times_s=t32, peak_memory_bytes=1, final_loss=1.0),
        records.TrainRun("bf16 autocast", True, step_times_s=t16, peak_memory_bytes=1, final_loss=1.0),
    ]
    text = str(TrainingTable.of(runs))
    assert ("bf16 autocast: step times too noisy to compare with fp32's" in text) == (words == "too noisy to conclude")
    assert ("within the run-to-run spread of fp32's" in text) == (words == "within the run-to-run spread")


def test_rate_table_says_when_the_rates_are_too_noisy():
    runs = {"fp32": (1e-3, 1.1e-3, 1.2e-3), "bf16": (5e-4, 6e-4, 5e-3), "fp16": (0.1, 0.1, 0.1)}
    t = RateTable(runs, 256, "cpu")
    assert t.too_noisy("bf16") and not t.too_noisy("fp16")
    # the table compares the fastest runs, the rates the lessons use: 1e-3 / 5e-4 = 2 and 1e-3 / 0.1 = 0.01
    rows = {line.split()[0]: line.split()[-1] for line in str(t).splitlines()[3:6]}
    assert rows == {"fp32": "1", "bf16": "2.00", "fp16": "0.0100"}
    assert "every other round on one thread" in str(t)


def _row(size, times, dtype="bf16"):
    return dict(size=size, dtype=dtype, median_s=None, tflops=None, percent_of_peak=None, skipped=None, times_s=times)


def test_alignment_verdict_says_what_was_measured_either_way():
    t = 2 * 64**3 / 1e9  # 64^3 at 1 GFLOP/s
    slower = ThroughputTable.of([_row(64, (t, t, t)), _row(65, (2 * t, 2 * t, 2.1 * t))])
    assert slower.alignment_verdict() == "bf16 on this machine: n=65 at 0.52x the rate of n=64 (slower)."
    faster = ThroughputTable.of([_row(64, (t, t, t)), _row(65, (t / 2, t / 2, t / 2))])
    assert "n=65 at 2.10x the rate of n=64 (faster)" in faster.alignment_verdict()
    same = ThroughputTable.of([_row(64, (t, 1.1 * t, 1.2 * t)), _row(65, (t, 1.1 * t, 1.2 * t))])
    assert "(within the run-to-run spread)" in same.alignment_verdict()
    noisy = ThroughputTable.of([_row(64, (t, 2 * t, 3 * t)), _row(65, (t, 2 * t, 3 * t))])
    assert "(too noisy to conclude)" in noisy.alignment_verdict()
    alone = ThroughputTable.of([_row(64, (t, t, t))])
    assert alone.alignment_verdict() == "bf16: too few sizes measured here to compare multiples of 8 with other sizes."
    with pytest.raises(ValueError, match="multiple"):
        same.alignment_verdict(0)


def test_each_odd_size_is_compared_with_its_nearest_multiple():
    """256 slower than 257 must show: each odd size against its nearest aligned size, not the fastest one."""
    t = lambda n, rate: tuple(2 * n**3 / (rate * f) for f in (0.99, 1.0, 1.01))  # noqa: E731
    table = ThroughputTable.of(
        [_row(256, t(256, 1.35e9)), _row(257, t(257, 3.04e9)), _row(263, t(263, 2.0e9)), _row(264, t(264, 3.0e9))]
    )
    verdict = table.alignment_verdict()
    assert "n=257 at 2.25x the rate of n=256 (faster)" in verdict  # 3.04 / 1.35
    assert "n=263 at 0.67x the rate of n=264 (slower)" in verdict
    close = ThroughputTable.of([_row(64, t(64, 1.0e9)), _row(65, t(65, 0.997e9))])
    assert "n=65 at 0.9970x the rate of n=64" in close.alignment_verdict()  # not "1.00x (slower)"


# --- the rate probe ----------------------------------------------------------------------------------------------


def test_probe_runs_interleave_the_dtypes_round_after_round():
    order = []

    def time_call(dt, r):
        order.append((r, dt))
        return 1.0

    runs = _common.probe_runs(time_call, ("fp32", "bf16", "fp16"), rounds=3)
    assert order == [(r, dt) for r in range(3) for dt in ("fp32", "bf16", "fp16")]
    assert runs == {dt: (1.0, 1.0, 1.0) for dt in ("fp32", "bf16", "fp16")}


@pytest.mark.parametrize("bad_rounds", [{0}, {1, 2}, {0, 1, 2, 3}])
def test_a_burst_of_load_does_not_change_the_rates(bad_rounds):
    """The walkthrough's case: fp32 probes measured 20 to 60 times slower while the machine was busy. Each burst
    here slows every dtype of some rounds 50x; the fastest probe of each, and so the fp16 decision, stays."""
    true = {"fp32": 3.3e-4, "bf16": 0.025, "fp16": 0.024}  # 256^3 at ~100 GFLOP/s, and two slow fallbacks

    def time_call(dt, r):
        return true[dt] * (50 if r in bad_rounds else 1)

    runs = _common.probe_runs(time_call)
    assert len(runs["fp32"]) == _common.PROBE_ROUNDS == 8
    assert {dt: min(v) for dt, v in runs.items()} == true
    assert min(runs["fp32"]) / min(runs["fp16"]) < _common.SLOW_FP16_RATIO  # fp16 still measured slow


def test_the_probe_runs_every_other_round_on_one_thread(monkeypatch):
    threads = []
    real = _common.timing.time_fn

    def spy(fn, **kw):
        threads.append(torch.get_num_threads())
        return real(fn, **kw)

    monkeypatch.setattr(_common.timing, "time_fn", spy)
    _common.cached_runs.cache_clear()
    try:
        with _common.one_thread():  # a known starting point: then the "all threads" rounds run on this many
            torch.set_num_threads(2)
            runs = _common.matmul_rate_runs("cpu")
    finally:
        _common.cached_runs.cache_clear()
    assert all(len(v) == _common.PROBE_ROUNDS for v in runs.values())
    per_round = [threads[i : i + 3] for i in range(0, len(threads), 3)]
    assert per_round == [[2] * 3 if r % 2 == 0 else [1] * 3 for r in range(_common.PROBE_ROUNDS)]


# --- the launch-bound demo ---------------------------------------------------------------------------------------


def test_arithmetic_share_is_what_grows_with_the_batch():
    flat = _steps((1.0, 1.1, 1.2), model="tiny", grown=(1.14, 1.2, 1.3))  # 8x the batch, 1.14x the time: 2% arithmetic
    assert flat.time_growth == pytest.approx(1.14)
    assert flat.arithmetic_share == pytest.approx(0.02)
    assert flat.most_from_faster_arithmetic == pytest.approx(1 / 0.98)
    steep = _steps(
        (1.0, 1.0, 1.0), model="large", grown=(8.4, 8.5, 8.6)
    )  # all arithmetic: clipped to 1, no Amdahl bound
    assert steep.arithmetic_share == 1.0 and math.isinf(steep.most_from_faster_arithmetic)
    noise = _steps((1.0, 1.0, 1.0), grown=(0.9, 1.0, 1.0))  # a faster grown step (noise): clipped to 0
    assert noise.arithmetic_share == 0.0 and noise.most_from_faster_arithmetic == 1.0
    old = records.StepTimes("m", 1.0, 1.0, 1.0, 1.0, (1.0,), (1.0,))  # not timed at a grown batch
    assert old.time_growth is None and old.arithmetic_share is None and old.most_from_faster_arithmetic is None
    demo = records.LaunchBoundDemo(flat, steep, "width 256, as asked", bf16_over_fp32=0.015)
    reading = demo.reading()
    assert reading[0].startswith("tiny: 8x the batch made the fastest fp32 step 1.1x longer, so about 2% of its time")
    assert reading[0].endswith("even free arithmetic would make the step at most 1.02x faster")
    assert reading[1].endswith("the step is its arithmetic, which faster matmuls speed up")
    assert "bf16 matmuls run at 0.015x the fp32 rate on this machine (measured), so its bf16 columns time" in reading[2]
    text = str(LaunchTable.of(demo))
    assert "fp32 at 8x the batch" in text and "share growing with the batch" in text and "2%" in text
    assert all(sentence in text for sentence in reading)


def test_launch_bound_demo_measures_both_models_and_the_grown_batch():
    out = e2e.launch_bound_demo(repeats=3, large_width=32, progress=False)
    assert out.tiny.model == "3 x Linear(64, 64), batch 8" and out.width_chosen == "width 32, as asked"
    for r in out.runs.values():
        assert r.growth == e2e.BATCH_GROWTH == 8 and len(r.fp32_grown_times_s) == len(r.fp32_times_s) == 3
        assert 0 <= r.arithmetic_share <= 1 and r.speedup == pytest.approx(r.fp32_step_s / r.bf16_autocast_step_s)
    assert out.tiny.batch == 8 and out.large.batch == 32
    assert out.bf16_over_fp32 == pytest.approx(e2e.matmul_rates()["bf16"] / e2e.matmul_rates()["fp32"])
    assert torch.get_num_threads() >= 1  # restored after the demo's one-thread block


# --- training timed in blocks --------------------------------------------------------------------------------


def _wrapping(before=lambda: None, after=lambda loss: loss):
    """A make_step whose step runs ``before()``, then the default step, and returns ``after(its loss)``."""

    def make_step(model, optimizer, config, device_type):
        inner = e2e.amp_step(model, optimizer, config, device_type)

        def step(x, y):
            before()
            return after(inner(x, y))

        return step

    return make_step


def test_train_times_blocks_of_steps_and_keeps_every_loss():
    blocks = e2e.train("fp32", steps=14, progress=False, model_kwargs=TINY, batch=2, sync_every=5)
    each = e2e.train("fp32", steps=14, progress=False, model_kwargs=TINY, batch=2, sync_every=1)
    assert blocks.loss == each.loss and len(blocks.loss) == blocks.steps == 14  # the same steps, every loss read
    # 14 steps: the warm-up, then 12 timed (blocks of 5, 5, 2), then the last under peak_memory
    assert len(blocks.step_times_s) == 3 and len(each.step_times_s) == 12
    assert blocks.sync_every == 5 and each.sync_every == 1
    assert e2e.train("fp32", steps=3, progress=False, model_kwargs=TINY, batch=2).sync_every == e2e.SYNC_EVERY == 10
    blocks_text = str(TrainingTable.of([blocks]))
    assert "each block of up to 5 steps timed between two host syncs, divided by its steps" in blocks_text
    assert "each step timed alone, its loss read inside the timer" in str(TrainingTable.of([each]))


def test_train_reads_no_loss_inside_a_timed_block(monkeypatch):
    """The losses a step returns stay tensors until their block is timed: no read between the steps of a block."""
    events = []
    make_step = _wrapping(before=lambda: events.append("step"))
    real = torch.Tensor.__float__

    def spy(self):
        events.append("read")
        return real(self)

    monkeypatch.setattr(torch.Tensor, "__float__", spy)
    e2e.train("fp32", steps=10, progress=False, model_kwargs=TINY, batch=2, make_step=make_step, sync_every=4)
    # warm-up step and its read; two blocks of 4 steps, each read after the block; the last step under peak_memory
    want = ["step", "read"] + (["step"] * 4 + ["read"] * 4) * 2 + ["step", "read"]
    assert events == want


def test_train_runs_the_step_the_caller_writes_and_refuses_what_is_no_step():
    with pytest.raises(TypeError, match="must return a callable step"):
        e2e.train("fp32", steps=2, progress=False, model_kwargs=TINY, make_step=lambda *a: None)
    as_float = e2e.train("fp32", steps=4, progress=False, model_kwargs=TINY, batch=2, make_step=_wrapping(after=float))
    default = e2e.train("fp32", steps=4, progress=False, model_kwargs=TINY, batch=2)
    assert as_float.loss == default.loss
    for bad in (lambda t: t.reshape(1), lambda t: t.long(), lambda t: "low"):
        with pytest.raises(TypeError, match="0-dim float tensor"):
            e2e.train("fp32", steps=3, progress=False, model_kwargs=TINY, batch=2, make_step=_wrapping(after=bad))


def test_a_slow_step_does_not_make_a_block_overrun_the_budget(monkeypatch):
    """Steps of 0.2 s against a budget of 0.5 s: the blocks shrink to what the budget has room for, so the run
    stops at the fewest steps a run shows, not after a whole block of ten."""
    slow = _wrapping(before=lambda: time.sleep(0.2))
    r = e2e.train("fp32", steps=30, progress=False, model_kwargs=TINY, batch=2, make_step=slow, budget_s=0.5)
    assert r.steps == e2e.MIN_TRAIN_STEPS and r.stopped_early.startswith("stopped after 6 of 30 steps")


def test_the_training_table_warns_when_final_losses_come_after_different_steps():
    runs = [
        records.TrainRun("fp32", True, step_times_s=(0.03,), peak_memory_bytes=1, final_loss=1.06, steps=6),
        records.TrainRun("bf16 autocast", True, step_times_s=(0.03,), peak_memory_bytes=1, final_loss=0.70, steps=12),
    ]
    text = str(TrainingTable.of(runs))
    assert "final loss after different numbers of steps (fp32 6, bf16 autocast 12)" in text
    assert "different numbers" not in str(TrainingTable.of(runs[:1]))
