"""Tests of amp_lessons.scaling: the census under a scale, the from-scratch scalers against
torch.amp.GradScaler, and the story of the training comparison."""

import dataclasses
import math

import pytest
import torch

from amp_lessons.formats import CLASSES
from amp_lessons.fp16 import gradient_census
from amp_lessons.fp16._experiments import census_fractions
from amp_lessons.scaling import _experiments as scaling, _records as records
from amp_lessons.scaling._experiments import (
    CensusIndex,
    DynamicScaler,
    StaticScaler,
    gradient_census_of,
    safe_window,
    scale_sweep,
    scaled_fractions,
    simulate_scaler,
    train_comparison,
)
from amp_lessons.scaling._records import (
    CensusTable,
    GradScalerComparison,
    PitfallTable,
    ScalerEvents,
    TrainSummary,
)


@pytest.fixture(scope="module")
def census():
    return gradient_census()


@pytest.fixture(scope="module")
def small_census():
    return scaling.small_loss_census()


@pytest.fixture(scope="module")
def comparison():
    return train_comparison(progress=False)


@pytest.mark.parametrize("scale", [1.0, 12345.678, 2.0**16, 2.0**40])
@pytest.mark.parametrize("fmt", ["fp16", "bf16", "fp8_e4m3", "fp8_e5m2"])
def test_scaled_fractions_equal_rounding_the_scaled_gradients(census, scale, fmt):
    got = scaled_fractions(census, scale, fmt)
    for kind in ("weights", "activations"):
        assert got[kind] == census_fractions(census.tensors[kind] * scale, fmt)


def test_the_index_follows_the_census(census):
    other = {"weights": census.weights, "activations": census.activations * 0 + 1.0}
    assert scaled_fractions(other, 1.0)["activations"]["normal"] == 1.0
    assert scaled_fractions(census, 1.0)["activations"] == census.fractions["activations"]
    assert scaled_fractions(CensusIndex(census), 1.0) == scaled_fractions(census, 1.0)


@pytest.mark.parametrize("kind", ["activations", "weights"])
def test_sweep_is_monotonic(census, small_census, kind):
    for c in (census, small_census):
        sw = scale_sweep(c, kind=kind)
        assert sw.scale == tuple(2.0**e for e in range(33)) and sw.exponent == tuple(range(33))
        assert all(a >= b for a, b in zip(sw.flushed, sw.flushed[1:]))
        assert all(a <= b for a, b in zip(sw.overflowed, sw.overflowed[1:]))
        assert all(0 <= v <= 1 for share in (sw.flushed, sw.subnormal, sw.saturated, sw.inf) for v in share)


def test_sweep_of_the_default_census(census):
    sw = scale_sweep(census)
    assert dataclasses.is_dataclass(sw) and sw.kind == "activations" and sw.fmt == "fp16"
    assert sw.nonzero == int((census.activations != 0).sum())
    assert sw.flushed[0] == pytest.approx(
        census.fractions["activations"]["flushed"] * census.activations.numel() / sw.nonzero
    )
    assert sw.overflowed is sw.inf and sw.inf[32] > 0.5  # 2**32 pushes most activation gradients past 65504
    assert not any(sw.saturated)  # fp16 overflows to inf, never to +-max


def test_sweep_overflow_follows_the_format(census):
    sw = scale_sweep(census, range(0, 40), "fp8_e4m3")
    assert sw.overflowed is sw.saturated and not any(sw.inf)  # e4m3 saturates to +-448
    assert sw.saturated[-1] > 0.5
    sw = scale_sweep(census, exponents=[-149, 127])  # the ends of float32's powers of two are accepted
    assert sw.flushed[0] == 1.0 and sw.inf[1] == 1.0


def test_safe_window(census, small_census):
    sw = scale_sweep(census)
    lo, hi = safe_window(sw)
    assert sw.scale[0] <= lo <= hi <= sw.scale[-1]
    for s, u, o in zip(sw.scale, sw.flushed, sw.overflowed):
        assert (lo <= s <= hi) == (u <= 0.01 and o == 0)  # the window is contiguous here
    lo2, hi2 = safe_window(scale_sweep(small_census))
    assert lo2 > lo  # a small loss needs a larger scale
    assert 2.0**16 >= lo2 and hi2 >= 2.0**16  # GradScaler's default fits it
    exact = [s for s, u, o in zip(sw.scale, sw.flushed, sw.overflowed) if u == 0 and o == 0]  # nothing lost at all
    assert safe_window(sw, max_underflow=0) == ((min(exact), max(exact)) if exact else None)


def test_defaults_equal_gradscalers():
    ours, theirs = DynamicScaler(), torch.amp.GradScaler("cpu")
    assert ours.scale == theirs.get_scale() == 2.0**16
    assert ours.growth_factor == theirs.get_growth_factor()
    assert ours.backoff_factor == theirs.get_backoff_factor()
    assert ours.growth_interval == theirs.get_growth_interval()
    import inspect

    ours_sig = inspect.signature(simulate_scaler).parameters
    for name in ("init_scale", "growth_factor", "backoff_factor", "growth_interval"):
        assert ours_sig[name].default == inspect.signature(torch.amp.GradScaler).parameters[name].default


def test_simulate_scaler_empty_and_long():
    # its rule against GradScaler's: test_scaling_properties.py
    assert simulate_scaler(0) == records.ScalerHistory((), (), ())
    long = simulate_scaler(10000, range(0, 10000, 7), growth_interval=1)
    assert len(long.scale) == 10000 and sum(long.skipped) == len(range(0, 10000, 7))


def test_static_scaler_skips_overflow_and_unscales():
    p = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.SGD([p], lr=1.0)
    s = StaticScaler(1024)
    s.scale_loss((p * torch.tensor([1.0, 2.0, 3.0])).sum()).backward()
    assert p.grad.tolist() == [1024.0, 2048.0, 3072.0]
    assert s.step(opt, [p]) is True
    assert p.tolist() == [0.0, -1.0, -2.0]
    p.grad.fill_(math.inf)
    assert s.step(opt, [p]) is False
    assert p.tolist() == [0.0, -1.0, -2.0]


def test_dynamic_scaler_unscale_before_clipping():
    p = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([p], lr=1.0)
    s = DynamicScaler(init_scale=8.0, growth_interval=1)
    s.scale_loss(p.sum()).backward()
    assert s.unscale_([p]) is False
    assert p.grad.tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="already"):
        s.unscale_([p])
    assert s.step(opt, [p]) is True  # does not unscale twice
    assert p.tolist() == [0.0, 0.0]
    s.update()
    assert s.scale == 16.0
    with pytest.raises(RuntimeError, match="step"):
        s.update()


def test_gradient_census_of_any_module_and_loss():
    model = torch.nn.Sequential(torch.nn.Conv1d(2, 4, 3), torch.nn.Tanh(), torch.nn.Flatten(), torch.nn.Linear(24, 1))
    x = torch.randn(5, 2, 8)
    c = gradient_census_of(model, lambda out: out.pow(2).mean(), x, fmt="bf16")
    assert c.fmt == "bf16" and c.weights.numel() == sum(p.numel() for p in model.parameters())
    assert tuple(c.fractions["activations"]) == CLASSES


def test_training_comparison_tells_the_story(comparison):
    assert isinstance(comparison, records.TrainComparison) and comparison.steps == 60
    loss, zeros = comparison.loss, comparison.zero_grad_fraction
    assert list(loss) == list(scaling.TRAIN_RUNS)
    final = {k: sum(v[-5:]) / 5 for k, v in loss.items()}
    start = loss["fp32"][0]
    assert final["fp32"] < start / 4  # fp32 learns
    assert final["fp16 autocast, no scaling"] > 0.8 * start  # fp16 without scaling does not
    assert final["fp16 autocast, no scaling"] > 4 * final["fp32"]
    for run in ("fp16 autocast + GradScaler", "bf16 autocast, no scaler"):
        assert final[run] == pytest.approx(final["fp32"], rel=0.1)
    assert zeros["fp16 autocast, no scaling"] > 0.95  # because its gradients underflow
    assert (
        zeros["fp32"] < 0.01 and zeros["fp16 autocast + GradScaler"] < 0.01 and zeros["bf16 autocast, no scaler"] < 0.01
    )
    assert comparison.scale == (2.0**16,) * 60 and not any(comparison.skipped)
    assert set(comparison.seconds) == set(scaling.TRAIN_RUNS)


def test_small_loss_census_underflows(small_census):
    fr = small_census.fractions["activations"]
    assert fr["flushed"] > 0.5 and fr["normal"] == 0.0
    assert scaled_fractions(small_census, 2.0**16)["activations"]["flushed"] < 1e-3


# simulate_scaler and DynamicScaler against GradScaler over drawn scenarios: test_scaling_properties.py


_STOPPED = [True] * 6 + [False] + [True] * 3  # skipped steps when the overflows stop after step 5


@pytest.mark.parametrize(
    "overflow, n_inf, skipped, finite",
    [
        # an inf in the forward pass at every step: at scale 0 the scaled loss is inf * 0 = NaN, the gradients are
        # NaN, every step is skipped and the scale stays 0 * 0.5 = 0; the weights stay finite (and unchanged):
        # training stops silently
        ("forward", 10, [True] * 10, [True] * 10),
        # the same overflows, stopping after step 5: step 6's loss is finite, loss * 0 = 0, its gradients are 0
        # (finite: the check passes), unscaling multiplies them by 1/0 = inf (NaN), and the step is taken: the
        # weights are NaN
        ("forward", 6, _STOPPED, [True] * 6 + [False] * 4),
        # overflows in the backward pass do the same: the check for non-finite gradients (before the division)
        # finds none at scale 0, 1/0 = inf turns them into NaN, and the step is taken
        ("backward", 6, _STOPPED, [True] * 6 + [False] * 4),
    ],
)
def test_a_scale_that_underflows_to_zero_fails_as_gradscaler_does(overflow, n_inf, skipped, finite):
    rows = scaling.compare_with_gradscaler(
        10, inf_steps=tuple(range(n_inf)), init_scale=2.0**-146, growth_interval=100, overflow=overflow
    )
    assert [r["torch_scale"] for r in rows] == [2.0**-146, 2.0**-147, 2.0**-148, 2.0**-149] + [0.0] * 6
    assert [r["torch_skipped"] for r in rows] == skipped and [r["params_finite"] for r in rows] == finite
    assert all(r["ours_scale"] == r["torch_scale"] and r["ours_skipped"] == r["torch_skipped"] for r in rows)
    assert all(r["params_equal"] for r in rows)


def both(record) -> tuple[str, str]:
    return str(record), record._repr_html_()


def test_census_table_shows_percentages_to_two_decimals():
    census = scaling.GradientCensus(
        weights=torch.zeros(0),
        activations=torch.zeros(0),
        fractions={
            "weights": dict(zip(CLASSES, (0.0047, 0.0, 0.0818, 0.9135, 0.0, 0.0, 0.0))),
            "activations": dict(zip(CLASSES, (0.2467, 0.0003, 0.3794, 0.3736, 0.0, 0.0, 0.0))),
        },
        loss=2.31,
        fmt="fp16",
    )
    t = CensusTable.of(census)
    assert t.fractions["activations"]["subnormal"] == 0.3794 and t.loss == 2.31
    for out in both(t):
        assert "flushed (%)" in out and "inf (%)" in out and "saturated" not in out  # fp16's classes of finite values
        assert "subnormal (%)" in out and "91.35" in out and "37.94" in out and "0.03" in out and "loss 2" in out
    assert repr(census) == repr(t)  # a census is shown as its table


def test_comparison_table_names_a_disagreement_and_tiny_scales():
    row = dict(step=0, ours_scale=2.0**-146, torch_scale=2.0**-146, ours_skipped=True, torch_skipped=False,
               params_equal=False)  # fmt: skip
    t = GradScalerComparison.of([row])
    assert not t.agree
    text, html = both(t)
    assert "1.12e-44 = 2^-146" in text and "1 of 1 steps differ" in text and "var(--jp-error-color1" in html


def test_scaler_events_beyond_the_limit_are_counted():
    e = ScalerEvents.of(simulate_scaler(12, inf_steps=(0, 7), growth_interval=3), limit=2)
    assert [x[0] for x in e.events] == [0, 3, 6, 7, 10] and "... and 3 more events" in str(e)


def test_train_summary_rounds_losses_and_gives_percentages():
    runs = records.TrainComparison(
        steps=2,
        loss={"fp32": (1.2345e-5, 1.5678e-6), "fp16 autocast, no scaling": (1.2e-5, 1.2e-5)},
        zero_grad_fraction={"fp32": 0.0, "fp16 autocast, no scaling": 1.0},
        scale=(),
        skipped=(),
        seconds={"fp32": 0.1, "fp16 autocast, no scaling": 0.1},
    )
    s = TrainSummary.of(runs)
    assert s.final == {"fp32": 1.5678e-6, "fp16 autocast, no scaling": 1.2e-5} and s.zero["fp32"] == 0.0
    for out in both(s):
        assert "final loss" in out and "1.57e-06" in out and "1.23e-05" in out and "exactly 0 (%)" in out
        assert "100" in out


def _pitfalls():
    """A dict as lesson 05's pitfall cells build it (their measured values)."""
    saved = {"scale": 2048.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "_growth_tracker": 1}
    return {
        "scheduler_warning": "Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 ...",
        "grad_norm": {"scale": 65536.0, "before_unscale": 26774.33, "after_unscale": 0.4085},
        "state_dict": {"saved": saved, "restored": dict(saved)},
        "bf16": {
            "used": [2.0**16 * 2 ** (k // 5) for k in range(20)],
            "after": [2.0**16 * 2 ** ((k + 1) // 5) for k in range(20)],
            "skipped": [False] * 20,
        },
    }


def test_pitfall_table_says_when_the_state_differs_and_when_nothing_warned():
    p = _pitfalls()
    p["state_dict"]["restored"] = {**p["state_dict"]["saved"], "scale": 65536.0}
    p["scheduler_warning"] = None
    text = str(PitfallTable.of(p))
    assert "state equal: no" in text and "no warning" in text


def test_the_scalers_are_the_lessons_own_code():
    """One copy: the package's scalers and update rule are the ones lesson 05 defines in its cells."""
    from amp_lessons.scaling import key_code

    assert issubclass(scaling.DynamicScaler, key_code.DynamicScaler)
    assert issubclass(scaling.StaticScaler, key_code.StaticScaler)
    assert scaling.update_scale is key_code.update_scale
    # only __init__ is the package's own (its checks): every method learners read is the lesson's
    dunder = {"__doc__", "__module__", "__qualname__", "__firstlineno__", "__static_attributes__"}
    for ours, lessons in (
        (scaling.DynamicScaler, key_code.DynamicScaler),
        (scaling.StaticScaler, key_code.StaticScaler),
    ):
        assert set(vars(ours)) - dunder == {"__init__"}
        assert all(getattr(ours, m) is getattr(lessons, m) for m in ("scale_loss", "unscale_", "step"))


def test_the_loop_lesson_05_shows_is_train_comparisons():
    # lesson 05 shows train_comparison's loop (its bookkeeping left out): every line it shows is in the function
    import inspect
    import json
    import re
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "notebooks" / "05_loss_scaling.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith("## 6 · Training with"))
    shown = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    source = {ln.strip() for ln in inspect.getsource(scaling.train_comparison).splitlines()}
    lines = [ln.split("  #")[0].strip() for ln in shown.splitlines() if ln.strip()]
    assert len(lines) == 11 and all(ln in source for ln in lines), [ln for ln in lines if ln not in source]
    assert set(scaling.TRAIN_RUNS["fp16 autocast + GradScaler"]) == {True, torch.float16}
