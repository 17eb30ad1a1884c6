"""Tests of amp_lessons.distributed._checks: right answers pass, each typical mistake is named, nothing raises."""

import functools

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.torch_version import TorchVersion

from amp_lessons.distributed.key_code import tiny_mlp
from tests.faces import internals
from tests.test_checks import assert_not_yet

distributed = internals("distributed")


def _fsdp_variant(
    rank,
    world_size,
    batches,
    *,
    param=torch.float16,
    reduce=torch.float32,
    shard=True,
    opt_first=False,
    scaled=True,
    via_scaler=True,
    update=True,
    scaler_cls=ShardedGradScaler,
    device="cpu",
    enabled=True,
    ret="pair",
):
    """An fp16 FSDP2 step with one thing changed."""
    model = tiny_mlp()
    if opt_first:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    if shard:
        mesh = init_device_mesh("cpu", (world_size,))
        fully_shard(model, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=param, reduce_dtype=reduce))
    if not opt_first:
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = scaler_cls(enabled=enabled) if device is None else scaler_cls(device, enabled=enabled)
    loss = model(batches[rank]).float().square().mean()
    (scaler.scale(loss) if scaled else loss).backward()
    if via_scaler:
        scaler.step(opt)
    else:
        opt.step()
    if update:
        scaler.update()
    return {"pair": (model, scaler), "model": model, "dots": ..., "no scaler": (model, opt)}[ret]


def _fsdp_step(**change):
    """The step with ``change``: a partial of a module-level function, so that workers can be forked or spawned."""
    return functools.partial(_fsdp_variant, **change)


def test_check_fsdp_fp16_step_passes_the_solution_and_names_each_mistake():
    right = distributed.check_fsdp_fp16_step(_fsdp_step())
    assert right and "ShardedGradScaler" not in right.message  # the sharded scaler needs no note
    plain = distributed.check_fsdp_fp16_step(_fsdp_step(scaler_cls=torch.amp.GradScaler))
    assert plain and "ShardedGradScaler also agrees" in plain.message  # right on FSDP2, with a note
    cases = {
        "dots": (_fsdp_step(ret="dots"), "so far fsdp_fp16_step returns ..."),
        "model only": (_fsdp_step(ret="model"), "return (model, scaler)"),
        "bf16": (_fsdp_step(param=torch.bfloat16), "all-gathered in bfloat16"),
        "no param_dtype": (_fsdp_step(param=None), "compute ran in fp32"),
        "fp16 reduce": (_fsdp_step(reduce=torch.float16), "reduce-scattered in float16"),
        "not sharded": (_fsdp_step(shard=False), "not sharded"),
        "optimizer first": (_fsdp_step(opt_first=True), "make the optimizer after fully_shard"),
        "no scaler": (_fsdp_step(ret="no scaler"), "not a loss scaler"),
        "loss not scaled": (_fsdp_step(scaled=False), "did not use scaler.scale"),
        "opt.step": (_fsdp_step(via_scaler=False), "No inf checks were recorded"),
        "no update": (_fsdp_step(update=False), "call scaler.update()"),
    }
    for name, (fn, words) in cases.items():
        r = distributed.check_fsdp_fp16_step(fn)
        assert not r and words in r.message, (name, r.message)
        assert r.todo == (name == "dots"), name
    # reduce_dtype=None: torch before 2.15 reduces in param_dtype (fp16 here), 2.15 in the parameters' dtype (fp32)
    default = distributed.check_fsdp_fp16_step(_fsdp_step(reduce=None))
    assert bool(default) == (TorchVersion(torch.__version__) >= "2.15"), default.message
    assert default or "reduce-scattered in float16" in default.message
    r = distributed.check_fsdp_fp16_step(lambda rank, world_size, batches: 1 / 0)
    assert not r and "on rank" in r.message and "ZeroDivisionError" in r.message
    assert not distributed.check_fsdp_fp16_step(42)


def test_check_fsdp_fp16_step_names_a_disabled_scaler():
    """The natural answer ShardedGradScaler() (or GradScaler()) means device="cuda": on a machine without CUDA it
    disables itself, with a warning that stays in the workers' stderr. A disabled scaler passes the finite run (scale
    1, the loss's own gradients) and steps in the overflow run; the checker must say that the scaler is off, not
    send the learner to scaler.step, which the step already calls."""
    off = distributed.check_fsdp_fp16_step(_fsdp_step(enabled=False))
    assert not off and "ShardedGradScaler is disabled" in off.message and "enabled=False" in off.message, off.message
    assert "step through scaler.step" not in off.message
    rows = distributed.observe_fp16_fsdp_step(_fsdp_step(enabled=False), 2)
    assert [r["finite"]["enabled"] for r in rows] == [False, False]
    assert all(r["finite"]["stepped"] and r["overflow"]["stepped"] for r in rows)  # what the trap does
    if torch.cuda.is_available():  # there the default device exists and the scaler stays on
        return
    for cls in (ShardedGradScaler, torch.amp.GradScaler):
        r = distributed.check_fsdp_fp16_step(_fsdp_step(scaler_cls=cls, device=None))
        assert not r and f"your {cls.__name__} is disabled" in r.message, r.message
        assert 'defaults to "cuda"' in r.message and "Disabling" in r.message and "lesson 08, S11" in r.message
        assert "step through scaler.step" not in r.message


def ring(grads):
    acc = grads[0]
    for row in grads[1:]:
        acc = (acc + row).bfloat16().float()
    return acc


def test_check_ring_sum_bf16():
    r = distributed.check_ring_sum_bf16(lambda g: g.sum(0).bfloat16().float())
    assert not r and "reduce_dtype=float32" in r.message
    r = distributed.check_ring_sum_bf16(lambda g: distributed.pairwise_sum(g, "bf16"))
    assert not r and "pairwise" in r.message
    r = distributed.check_ring_sum_bf16(lambda g: g[0])
    assert not r and "differ" in r.message
    assert "shape" in distributed.check_ring_sum_bf16(lambda g: g).message
    assert "return a tensor" in distributed.check_ring_sum_bf16(lambda g: 1.0).message
    r = distributed.check_ring_sum_bf16(lambda g: ring(g).bfloat16())  # the right values, in the wrong dtype
    assert not r and "float32 tensor" in r.message and "torch.bfloat16" in r.message
    assert "raised" in distributed.check_ring_sum_bf16(lambda g: g.nope()).message


# --- the bf16 ring sum on the inputs where a quick answer goes wrong --------------------------------------


def _ring_with(round_hop):
    """A ring sum from rank 0 whose running sum goes through ``round_hop`` after every add."""

    def answer(grads):
        acc = grads[0]
        for row in grads[1:]:
            acc = round_hop(acc + row)
        return acc

    return answer


def test_the_ring_sum_checker_tries_ties_an_overflow_subnormals_and_one_rank():
    # kept finite: right on random gradients, wrong where a bf16 partial sum overflows and stays inf
    r = distributed.check_ring_sum_bf16(_ring_with(lambda s: torch.nan_to_num(s.bfloat16().float())))
    assert_not_yet(r)
    assert "beyond bf16's largest value" in r.message and "stays inf" in r.message
    # subnormals flushed to zero
    ftz = _ring_with(lambda s: torch.where(s.abs() < 2.0**-126, 0.0, s.bfloat16().float()))
    r = distributed.check_ring_sum_bf16(ftz)
    assert_not_yet(r)
    assert "subnormal" in r.message and "no flush to zero" in r.message
    # ties rounded away from zero by hand, with the bits (the random gradients find it first, or the ties)
    half_up = _ring_with(lambda s: ((s.view(torch.int32) + 0x8000) & -65536).view(torch.float32))
    assert_not_yet(distributed.check_ring_sum_bf16(half_up))

    # a loop that assumes two ranks or more, or 32 values per rank
    def first_pair_first(grads):
        acc = (grads[0] + grads[1]).bfloat16().float()
        for row in grads[2:]:
            acc = (acc + row).bfloat16().float()
        return acc

    r = distributed.check_ring_sum_bf16(first_pair_first)
    assert_not_yet(r)
    assert "one rank" in r.message and "IndexError" in r.message

    def from_zeros(grads):
        acc = torch.zeros(32)
        for row in grads:
            acc = (acc + row).bfloat16().float()
        return acc

    r = distributed.check_ring_sum_bf16(from_zeros)
    assert_not_yet(r)
    assert "(3, 4)" in r.message or "one value each" in r.message


def test_the_ring_sum_checker_refuses_the_lessons_sums_however_they_are_reached():
    from amp_lessons.distributed import _experiments

    def through_a_module_attribute(g):
        return getattr(_experiments, "ring" + "_sum")(g, "bf16")

    for fn in (through_a_module_attribute, functools.partial(distributed.pairwise_sum, fmt="bf16")):
        r = distributed.check_ring_sum_bf16(fn)
        assert_not_yet(r)
        assert "write the loop yourself" in r.message
