"""Tests of amp_lessons.distributed.checks: right answers pass, each typical mistake is named, nothing raises."""

import torch

from amp_lessons import distributed
from amp_lessons.formats import quantize
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


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
    assert_your_turn(distributed.check_sharded_bytes(...))
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


# The exercises as lesson 09 gives them: (a) the starter gets "your turn", (b) the instructors' solution is
# correct, (c) a wrong answer gets "Not yet", (d) no message of a starter or a wrong answer states the answer.


def test_sharded_bytes_exercise():
    s = solution("09")
    want = s.sharded_bytes(4, 4, 8, 2)  # the first case the checker tries

    def sharded_bytes(param_bytes, grad_bytes, optimizer_bytes, world_size):  # lesson 09's starter
        return ...

    starter = distributed.check_sharded_bytes(sharded_bytes)
    assert_your_turn(starter)
    assert distributed.check_sharded_bytes(s.sharded_bytes)
    wrong = [
        distributed.check_sharded_bytes(fn)
        for fn in (lambda p, g, o, n: p + g + o, lambda p, g, o, n: p / n + g + o, lambda p, g, o, n: 3.0)
    ]
    for r in wrong:
        assert_not_yet(r)
    for r in [starter, *wrong]:
        told = r.message.split(")", 1)[-1]  # after the arguments of the call, fn(4, 4, 8, 2)
        assert not reveals(told, want) and "expected" not in r.message, r.message


def test_ring_sum_bf16_exercise():
    s = solution("09")
    starter = distributed.check_ring_sum_bf16(lambda grads: grads.sum(0))
    assert_your_turn(starter)
    assert "reduce_dtype=float32" in starter.message
    assert distributed.check_ring_sum_bf16(s.ring_sum_bf16)
    for fn in (lambda g: g.sum(0).bfloat16().float(), lambda g: distributed.pairwise_sum(g, "bf16"), lambda g: g[0]):
        assert_not_yet(distributed.check_ring_sum_bf16(fn))
    # the answer is a tensor; no message prints one
    gen = torch.Generator().manual_seed(0)
    want = distributed.ring_sum(quantize(torch.randn(2, 32, generator=gen), "bf16"), "bf16")
    for r in (starter, distributed.check_ring_sum_bf16(lambda g: g[0])):
        assert not any(reveals(r.message, float(v)) for v in want[:8] if abs(float(v)) > 1e-3), r.message
