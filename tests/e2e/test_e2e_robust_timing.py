"""Lesson 06's measurements under load and its inputs: the interleaved rate probe, verdicts that read quartile
ranges that do not overlap, training timed in blocks without a host sync per step, the launch-bound demo's
arithmetic share."""

from __future__ import annotations

import math

import pytest
import torch

from amp_lessons.e2e import _common, _records as records
from amp_lessons.e2e._records import LaunchTable, TrainingTable
from tests.faces import internals

e2e = internals("e2e")

TINY = dict(vocab=16, d_model=16, n_heads=2, n_layers=1, seq_len=16)


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


def _steps(name, t, t_grown, t16=(1.0, 1.0, 1.0)):
    return records.StepTimes(name, 1.0, t[1], t16[1], t[1] / t16[1], t, t16, None, 8, 8, t_grown)


def test_arithmetic_share_is_what_grows_with_the_batch():
    flat = _steps("tiny", (1.0, 1.1, 1.2), (1.14, 1.2, 1.3))  # 8x the batch, 1.14x the time: 2% arithmetic
    assert flat.time_growth == pytest.approx(1.14)
    assert flat.arithmetic_share == pytest.approx(0.02)
    assert flat.most_from_faster_arithmetic == pytest.approx(1 / 0.98)
    steep = _steps("large", (1.0, 1.0, 1.0), (8.4, 8.5, 8.6))  # all arithmetic: clipped to 1, no Amdahl bound
    assert steep.arithmetic_share == 1.0 and math.isinf(steep.most_from_faster_arithmetic)
    noise = _steps("m", (1.0, 1.0, 1.0), (0.9, 1.0, 1.0))  # a faster grown step (noise): clipped to 0
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

    def make_step(model, optimizer, config, device_type):
        inner = e2e.amp_step(model, optimizer, config, device_type)

        def step(x, y):
            events.append("step")
            return inner(x, y)

        return step

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

    def make(returns):
        def make_step(model, optimizer, config, device_type):
            inner = e2e.amp_step(model, optimizer, config, device_type)
            return lambda x, y: returns(inner(x, y))

        return make_step

    as_float = e2e.train("fp32", steps=4, progress=False, model_kwargs=TINY, batch=2, make_step=make(float))
    default = e2e.train("fp32", steps=4, progress=False, model_kwargs=TINY, batch=2)
    assert as_float.loss == default.loss
    for bad in (lambda t: t.reshape(1), lambda t: t.long(), lambda t: "low"):
        with pytest.raises(TypeError, match="0-dim float tensor"):
            e2e.train("fp32", steps=3, progress=False, model_kwargs=TINY, batch=2, make_step=make(bad))


def test_a_slow_step_does_not_make_a_block_overrun_the_budget(monkeypatch):
    """Steps of 0.2 s against a budget of 0.5 s: the blocks shrink to what the budget has room for, so the run
    stops at the fewest steps a run shows, not after a whole block of ten."""
    import time as _time

    def make_step(model, optimizer, config, device_type):
        inner = e2e.amp_step(model, optimizer, config, device_type)

        def step(x, y):
            _time.sleep(0.2)
            return inner(x, y)

        return step

    r = e2e.train("fp32", steps=30, progress=False, model_kwargs=TINY, batch=2, make_step=make_step, budget_s=0.5)
    assert r.steps == e2e.MIN_TRAIN_STEPS and r.stopped_early.startswith("stopped after 6 of 30 steps")


def test_the_training_table_warns_when_final_losses_come_after_different_steps():
    runs = [
        records.TrainRun("fp32", True, step_times_s=(0.03,), peak_memory_bytes=1, final_loss=1.06, steps=6),
        records.TrainRun("bf16 autocast", True, step_times_s=(0.03,), peak_memory_bytes=1, final_loss=0.70, steps=12),
    ]
    text = str(TrainingTable.of(runs))
    assert "final loss after different numbers of steps (fp32 6, bf16 autocast 12)" in text
    assert "different numbers" not in str(TrainingTable.of(runs[:1]))
