"""Tests of amp_lessons.micro._explorers: the recipe explorer driven as a learner would, without a browser."""

import matplotlib

matplotlib.use("Agg")

import math

import pytest

from tests.faces import internals

micro = internals("micro")


@pytest.fixture(scope="module")
def explorer():
    return micro.recipe_explorer().explorer


def test_the_spike_is_the_failure_it_teaches(explorer):
    # a delayed scale fits the steps before the spike: at the spike it clips the new maximum (all the signal
    # is in those few entries), while a current per-tensor scale keeps it
    explorer.set(kind="gradient", recipe="per-tensor delayed (history 16)", step=micro.SPIKE_STEP)
    assert explorer.stats.snr_db < min(1, explorer.SNR_LIMIT_DB)
    assert "amp-failure" in explorer.readout.value and "signal-to-noise" in explorer.readout.value
    # the read-out says why: the 4 saturated values held nearly all of the tensor's power
    assert explorer.stats.saturated == 4 / micro.recipe_tensor("gradient").numel()
    assert "the 4 saturated values" in explorer.readout.value and "of the tensor&#x27;s power" in explorer.readout.value
    explorer.set(step=micro.SPIKE_STEP - 1)
    assert explorer.stats.snr_db > 25
    explorer.set(recipe="per-tensor current", step=micro.SPIKE_STEP)
    assert explorer.stats.snr_db > 25 and explorer.stats.flushed > 0  # fits the spike, flushes the rest
    explorer.set(kind="activations", recipe="MXFP4 (floor)")
    assert 0 < explorer.stats.snr_db < 25 and not math.isinf(explorer.stats.snr_db)


def test_the_opening_spike_is_seen_in_the_picture():
    """The 4 spike values (3e-5 of the gradient) show on the log-scaled share axis: the tensor has a bar far right
    of the bulk that the stored line lacks (the recipe moved those values left, onto the clamp)."""
    import numpy as np

    from amp_lessons.micro import _explorers as explorers

    e = micro.RecipeExplorer()
    fill, line, _ = e._pic.moving
    ax = fill.axes
    assert ax.get_yscale() == "log" and ax.get_ylim()[0] <= 1 / micro.recipe_tensor("gradient").numel()
    before, after = fill.get_data()[0], line.get_data()[0]
    spike = int(np.flatnonzero(before > explorers._FLOOR).max())  # the rightmost bin the tensor fills
    assert before[spike] == 4 / micro.recipe_tensor("gradient").numel() and after[spike] == explorers._FLOOR


def test_a_recipe_that_keeps_the_tensor_shows_no_failure(explorer):
    explorer.set(kind="gradient", recipe="per-tensor current", step=0)
    s = explorer.stats
    assert s.snr_db > 30 and s.flushed < explorer.SHARE_LIMIT and s.saturated < explorer.SHARE_LIMIT
    assert "amp-failure" not in explorer.readout.value


def test_fp4_flushes_and_saturates(explorer):
    explorer.set(kind="activations", recipe="MXFP4 (floor)", step=0)
    s = explorer.stats
    assert s.flushed >= explorer.SHARE_LIMIT and s.saturated > 0
    assert "amp-failure" in explorer.readout.value
    assert f"{100 * s.flushed:.3g}% of the non-zero values flush to 0" in explorer.readout.value
