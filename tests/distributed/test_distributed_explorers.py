"""Tests of amp_lessons.distributed._explorers (and the sweep it draws): the reduction explorer driven as a learner
would, without a browser."""

import matplotlib

matplotlib.use("Agg")

import math

import torch

from amp_lessons.formats import quantize
from tests.faces import internals

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


def test_the_default_opens_on_the_lesson_and_the_failures_it_teaches():
    ex = distributed.ReductionExplorer()
    assert (ex.ranks_slider.value, ex.format_buttons.value, ex.order_buttons.value) == (16, "bf16", "ring")
    # visible on the picture, below the failure line: no failure yet
    assert 0.001 < ex.error < ex.FAILURE_ERROR and "amp-failure" not in ex.readout.value
    ex.set(world_size=4096)
    assert "amp-failure" in ex.readout.value and "wrong, in every gradient" in ex.readout.value
    ex.set(order="pairwise")  # the tree order stays under 1%
    assert "amp-failure" not in ex.readout.value
    ex.set(fmt="fp16", order="ring", log10_scale=6)  # most gradients are beyond 65504 before any sum
    assert "amp-failure" in ex.readout.value and "65504" in ex.readout.value
    assert ex.sweep.cast_overflowed > 0.5 and "inf (beyond 65504) before any sum" in ex.readout.value
    ex.set(log10_scale=3)  # every gradient fits fp16; the sums of many ranks pass 65504
    assert ex.sweep.cast_overflowed == 0 and math.isinf(ex.error)
    assert "the partial sums passed" in ex.readout.value and "largest value, 65504" in ex.readout.value
    assert "made 0% inf" in ex.readout.value
    ex.set(log10_scale=-12)
    assert "flushed 100% of the gradients" in ex.readout.value
    ex.set(fmt="fp32")
    assert "amp-failure" not in ex.readout.value and ex.error < 1e-5
