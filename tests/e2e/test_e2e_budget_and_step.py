"""Tests of lesson 06's AMP step (written once, in the notebook's ``#| export`` cell, run by the package) and of the
time budgets and verdicts that keep the lesson honest on a busy machine (no timing asserts: budgets of 1e-9 s and
of math.inf, and constructed runs)."""

import math

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


def _steps(t32, t16, model="m"):
    return records.StepTimes(model, 1.0, t32[1], t16[1], t32[1] / t16[1], t32, t16)


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
