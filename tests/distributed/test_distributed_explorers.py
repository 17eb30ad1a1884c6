"""Tests of amp_lessons.distributed._explorers (and the sweep it draws): the reduction explorer driven as a learner
would, without a browser."""

import matplotlib

matplotlib.use("Agg")

import math

import pytest
import torch

from amp_lessons.formats import quantize
from tests.faces import internals
from tests.pictures import PNG

distributed = internals("distributed")


def test_the_sweep_is_the_packages_ring_and_pairwise_sums():
    """One pass gives every N's ring sum: bit for bit ring_sum of the first N ranks (from rank 0), and pairwise_sum."""
    for fmt in distributed.REDUCTION_FORMATS:
        g = torch.randn(64, 16, generator=torch.Generator().manual_seed(3))
        sent = g if fmt == "fp32" else quantize(g, fmt)
        exact = g.double().sum(0)
        for order, reference in (("ring", distributed.ring_sum), ("pairwise", distributed.pairwise_sum)):
            s = distributed.reduction_sweep(fmt, order, max_world_size=64, elements=16, seed=3)
            assert s.world_sizes == (2, 4, 8, 16, 32, 64)
            want = reference(sent, fmt)
            assert s.at(64) == float((want.double() - exact).norm() / exact.norm())
            n8 = reference(sent[:8], fmt)
            assert s.at(8) == float((n8.double() - g[:8].double().sum(0)).norm() / g[:8].double().sum(0).norm())


def test_the_sweep_shows_what_the_lesson_says():
    bf16 = distributed.reduction_sweep("bf16", "ring")
    tree = distributed.reduction_sweep("bf16", "pairwise")
    fp32 = distributed.reduction_sweep("fp32", "ring")
    assert bf16.at(4096) > 0.01 > bf16.at(2) and bf16.at(4096) > 5 * tree.at(4096)  # grows with N; the tree far less
    assert max(fp32.errors) < 1e-5 < min(bf16.errors)
    big = distributed.reduction_sweep("fp16", "ring", 1e6)
    assert all(big.overflowed) and all(math.isinf(e) for e in big.errors)  # fp16's range: 65504
    tiny = distributed.reduction_sweep("fp16", "ring", 1e-12)
    assert tiny.flushed == 1.0 and tiny.at(2) == 1.0  # below fp16's smallest subnormal: every gradient lost
    assert distributed.reduction_sweep("bf16", "ring", 1e-12).flushed == 0.0  # bf16 has fp32's range


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(fmt="fp8"), "fmt='fp8' is not allowed"),
        (dict(order="tree"), "order='tree' is not allowed"),
        (dict(scale=0.0), "scale"),
        (dict(scale=1e9), "scale=1000000000.0 is not allowed"),
        (dict(max_world_size=100), "a power of two from 2 to 4096"),
        (dict(max_world_size=8192), "a power of two from 2 to 4096"),
        (dict(elements=10**6), "1 to 1024 values per rank"),
    ],
)
def test_bad_sweep_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        distributed.reduction_sweep(**kwargs)


@pytest.fixture(scope="module")
def explorer():
    return distributed.reduction_explorer().explorer


def test_every_setting_at_its_extremes_draws(explorer):
    lo, hi = explorer.LOG10_SCALES
    for fmt in distributed.REDUCTION_FORMATS:
        for order in distributed.REDUCTION_ORDERS:
            for k in (lo, 0, hi):
                for n in (2, 4096):
                    explorer.set(world_size=n, fmt=fmt, order=order, log10_scale=k)
                    assert bytes(explorer.image.value).startswith(PNG)
                    assert "relative error of the sum" in explorer.readout.value
                    assert explorer.error == explorer.sweep.at(n)


def test_the_failures_it_teaches(explorer):
    explorer.set(world_size=16, fmt="bf16", order="ring", log10_scale=0)  # where it opens: no failure yet
    assert "amp-failure" not in explorer.readout.value
    explorer.set(world_size=4096)
    assert "amp-failure" in explorer.readout.value and "wrong, in every gradient" in explorer.readout.value
    explorer.set(order="pairwise")  # the tree order stays under 1%
    assert "amp-failure" not in explorer.readout.value
    explorer.set(fmt="fp16", order="ring", log10_scale=6)  # most gradients are beyond 65504 before any sum
    assert "amp-failure" in explorer.readout.value and "65504" in explorer.readout.value
    assert explorer.sweep.cast_overflowed > 0.5 and "inf (beyond 65504) before any sum" in explorer.readout.value
    explorer.set(log10_scale=3)  # every gradient fits fp16; the sums of many ranks pass 65504
    assert explorer.sweep.cast_overflowed == 0 and math.isinf(explorer.error)
    assert "the partial sums passed" in explorer.readout.value and "largest value, 65504" in explorer.readout.value
    assert "made 0% inf" in explorer.readout.value
    explorer.set(log10_scale=-12)
    assert "flushed 100% of the gradients" in explorer.readout.value
    explorer.set(fmt="fp32")
    assert "amp-failure" not in explorer.readout.value and explorer.error < 1e-5


def test_the_default_opens_on_a_state_that_shows_the_lesson():
    ex = distributed.ReductionExplorer()
    assert (ex.ranks_slider.value, ex.format_buttons.value, ex.order_buttons.value) == (16, "bf16", "ring")
    assert 0.001 < ex.error < ex.FAILURE_ERROR  # visible on the picture, below the failure line


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(world_size=100), "world_size=100 is not allowed: a power of two from 2 to 4096"),
        (dict(world_size=True), "world_size=True"),
        (dict(fmt="fp8"), "fmt='fp8' is not allowed"),
        (dict(order="tree"), "order='tree' is not allowed"),
        (dict(log10_scale=7), r"log10_scale=7 is not allowed: an int from -12 to 6"),
        (dict(log10_scale=0.5), "log10_scale=0.5"),
    ],
)
def test_bad_explorer_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        distributed.ReductionExplorer(**kwargs)
