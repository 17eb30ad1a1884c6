"""Tests of amp_lessons.distributed.checks: right answers pass, each typical mistake is named, nothing raises."""

import torch

from amp_lessons import distributed
from amp_lessons.formats import quantize


def test_check_sharded_bytes():
    assert distributed.check_sharded_bytes(lambda p, g, o, n: (p + g + o) / n)
    cases = {
        (lambda p, g, o, n: p + g + o): "without sharding",
        (lambda p, g, o, n: p / n + g + o): "only the parameters",
        (lambda p, g, o, n: (p + g) / n + o): "optimizer states are sharded too",
        (lambda p, g, o, n: 3.0): "divide by the number of ranks",
        (lambda p, g, o, n: "x"): "not a number",
        (lambda p, g, o, n: 1 / 0): "ZeroDivisionError",
    }
    for fn, words in cases.items():
        r = distributed.check_sharded_bytes(fn)
        assert not r and words in r.message, r.message
    assert "write fn" in distributed.check_sharded_bytes(...).message
    assert not distributed.check_sharded_bytes(42)


def ring(grads):
    acc = grads[0]
    for row in grads[1:]:
        acc = (acc + row).bfloat16().float()
    return acc


def test_check_ring_sum_bf16():
    assert distributed.check_ring_sum_bf16(ring)
    r = distributed.check_ring_sum_bf16(lambda g: g.sum(0).bfloat16().float())
    assert not r and "reduce_dtype=float32" in r.message
    r = distributed.check_ring_sum_bf16(lambda g: distributed.pairwise_sum(g, "bf16"))
    assert not r and "pairwise" in r.message
    r = distributed.check_ring_sum_bf16(lambda g: g[0])
    assert not r and "differ" in r.message
    assert "shape" in distributed.check_ring_sum_bf16(lambda g: g).message
    assert "return a tensor" in distributed.check_ring_sum_bf16(lambda g: 1.0).message
    assert "raised" in distributed.check_ring_sum_bf16(lambda g: g.nope()).message
    assert not distributed.check_ring_sum_bf16(None)
    # the checker's reference is the module's ring_sum
    g = quantize(torch.randn(3, 4), "bf16")
    assert torch.equal(ring(g), distributed.ring_sum(g, "bf16"))
