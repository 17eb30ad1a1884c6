"""Tests of amp_lessons.scaling._explorers."""

import matplotlib

matplotlib.use("Agg")

import math

import numpy as np
import pytest

from tests.faces import internals
from tests.pictures import is_png

scaling = internals("scaling")


@pytest.fixture(scope="module")
def scales():
    return scaling.scale_explorer().explorer


@pytest.fixture(scope="module")
def scaler_states():
    return scaling.scaler_state_explorer().explorer


def test_scale_explorer_readout_is_scaled_fractions(scales):
    from amp_lessons.scaling._experiments import scaled_fractions

    for k in (0, 16, 32, 5):
        scales.set(exponent=k)
        assert scales.fractions == scaled_fractions(scales.census, 2.0**k)
        assert is_png(scales.image)
        fill = scales._pic.moving[0]
        assert np.array_equal(fill.get_data().edges, scales._pic.edges + k)
    assert "flushed" in scales.readout.value and "inf" in scales.readout.value


def test_scaler_state_explorer_is_simulate_scaler(scaler_states):
    from amp_lessons.scaling import simulate_scaler

    ex = scaler_states
    assert sum(ex.history.skipped) == 3 and ex.overflow_steps == []  # the opening state: only the injected ones
    assert "amp-failure" in ex.readout.value and "3 of 200 steps skipped" in ex.readout.value
    ex.clear()
    assert sum(ex.history.skipped) == 0 and "amp-failure" not in ex.readout.value
    ex.set(log2_init_scale=10, growth_factor=2.0, backoff_factor=0.5, growth_interval=20)
    ex.inject(30)
    ex.step_slider.value = 31
    ex.inject_button.click()  # the button injects at the slider's step
    assert ex.inf_steps == {30, 31}
    want = simulate_scaler(ex.N_STEPS, (30, 31), init_scale=2.0**10, growth_interval=20)
    assert ex.history == want
    line = ex._pic.parts["line"]
    assert list(line.get_ydata()) == [math.log2(s) for s in want.scale]
    assert list(ex._pic.parts["skipped"].get_xdata()) == [30, 31]
    assert "2000" in ex.readout.value and "30, 31" in ex.readout.value
    ex.clear_button.click()
    assert ex.inf_steps == set() and not any(ex.history.skipped)
    assert is_png(ex.image)


def test_scale_explorer_marks_flushes_and_overflows_only():
    ex = scaling.ScaleExplorer(0)
    w = ex.fractions["weights"]
    assert w["flushed"] > 0 and w["inf"] == 0  # unscaled, some weight gradients flush
    assert "amp-failure" in ex.readout.value and "flushed to zero" in ex.readout.value
    ex.set(exponent=16)
    assert all(ex.fractions[k]["flushed"] == ex.fractions[k]["inf"] == 0 for k in ex.fractions)
    assert "amp-failure" not in ex.readout.value
    ex.set(exponent=ex.MAX_EXPONENT)
    assert ex.fractions["weights"]["inf"] > 0.5
    assert "amp-failure" in ex.readout.value and "overflow to inf" in ex.readout.value


def fp16_overflows(x: float) -> bool:
    import torch

    return bool(torch.isinf(torch.tensor(x, dtype=torch.float32).to(torch.float16)))


@pytest.mark.parametrize(
    "settings",
    [
        dict(log2_max_gradient=8),  # the first step already overflows: 2^16 x 2^8 > 65504
        dict(growth_factor=4.0, growth_interval=1),  # the scale grows until 2^-20 x scale overflows
        dict(log2_init_scale=24, log2_max_gradient=0, backoff_factor=0.95),
    ],
)
def test_scaler_state_explorer_overflows_by_itself(settings):
    ex = scaling.ScalerStateExplorer(inf_steps=())
    assert sum(ex.history.skipped) == 0 and "amp-failure" not in ex.readout.value
    ex.set(**settings)
    h, g = ex.history, 2.0**ex.grad_slider.value
    skipped = [k for k, s in enumerate(h.skipped) if s]
    assert skipped and skipped == ex.overflow_steps
    # a step is skipped exactly when its scaled largest gradient rounds to inf in fp16
    assert all(fp16_overflows(s * g) == bad for s, bad in zip(h.scale, h.skipped))
    assert h == scaling.simulate_scaler(ex.N_STEPS, skipped, **ex.params())
    assert "amp-failure" in ex.readout.value and f"{len(skipped)} of 200 steps skipped" in ex.readout.value
    assert is_png(ex.image)


def test_scale_explorer_counts_as_the_sweep_and_the_exercise_do():
    # one definition: shares of the NON-ZERO activation gradients. On the small-loss census at 2^10 the explorer
    # once said 0.84% (of all values, zeros included) while the checker said 1.05% (of the non-zero ones)
    census = scaling.small_loss_census()
    sweep = scaling.scale_sweep(census, range(0, 33))
    ex = scaling.ScaleExplorer(0, census=census)
    for k in (9, 10, 11):
        ex.set(exponent=k)
        text = f"{100 * sweep.flushed[k]:.3g}% of the non-zero activations gradients are flushed to zero"
        assert text in ex.readout.value, (k, text)
        assert f"{100 * sweep.flushed[k]:.3f}%" in ex.readout.value  # the table's flushed column, same share
    ex.set(exponent=10)
    assert "1.05% of the non-zero activations" in ex.readout.value and "0.84" not in ex.readout.value
    assert scaling.check_smallest_scale(2.0**10, census=census).message.count("1.05%") == 1
