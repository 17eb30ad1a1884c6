"""Checkers for lesson 09's exercises: an fp16 FSDP2 training step (run on a real gloo group), and a bf16 ring sum.

Each returns a :class:`amp_lessons.checks.CheckResult` and never raises on a learner's answer."""

from __future__ import annotations

import math

import torch

from .. import _validate
from .._exercise import calls_seen, correct, exercise, not_yet, placeholder, your_turn
from ..checks import CheckResult, call_learner
from ..formats import quantize
from . import _experiments as E
from ._experiments import pairwise_sum, ring_sum

__all__ = [
    "check_fsdp_fp16_step",
    "check_ring_sum_bf16",
]

# the batches' seed, the overflowing rank, and the loss scaler's defaults (init_scale 2^16, backoff 1/2)
_SEED, _OVERFLOW_RANK, _INIT_SCALE = 0, 1, 2.0**16


@exercise
def check_fsdp_fp16_step(fn, world_size: int = 2) -> CheckResult:
    """Exercise: ``fn(rank, world_size, batches) -> (model, scaler)`` is one fp16 FSDP2 training step of
    ``tiny_mlp()``: ``fully_shard`` with fp16 compute and fp32 gradient reduction, SGD, and a loss scaler whose
    decision is the same on every rank. Run on ``world_size`` real gloo ranks, once with finite batches (the step
    must be taken, with the loss's gradient) and once with an input on rank 1 beyond fp16's range (every rank must
    skip and halve its scale); the all-gather and reduce-scatter dtypes are read from what the step dispatched."""
    if not isinstance(world_size, int) or isinstance(world_size, bool) or not 2 <= world_size <= E.MAX_WORLD_SIZE:
        raise ValueError(f"world_size={world_size!r} is not allowed: an integer from 2 to {E.MAX_WORLD_SIZE}")
    placeholder(fn, "write fsdp_fp16_step(rank, world_size, batches) and pass the function")
    if not callable(fn):
        return not_yet(f"pass the function itself, not {type(fn).__name__} {fn!r}")
    try:
        rs = E.observe_fp16_fsdp_step(fn, world_size, _SEED, overflow_rank=_OVERFLOW_RANK, timeout=120)
    except E.WorkerError as e:
        last = [ln for ln in e.detail.splitlines() if ln.strip()]
        return not_yet(f"on rank {e.rank} your step raised {last[-1].strip() if last else 'an error'}")
    except E.GroupTimeout as e:
        return not_yet(
            f"the step did not finish in 120 s (rank(s) {e.ranks} still in it): does one rank wait for a collective "
            "that the others never start?"
        )
    except E.ForkUnsafe as e:  # the kernel's state, not the answer: a muted line, not a red verdict
        return your_turn(f"the check cannot run your step in this kernel now: {e}")
    except (TypeError, E.GroupUnavailable) as e:
        return not_yet(f"the check could not start a process group here: {e}")
    first = rs[0]
    if first.get("placeholder"):
        return your_turn(
            "so far fsdp_fp16_step returns ...: shard the model, step through a loss scaler, return (model, scaler)"
        )
    if "bad_return" in first:
        return not_yet(f"return (model, scaler): the model you sharded and its scaler; got {first['bad_return']}")
    fin, ovf = first["finite"], first["overflow"]
    if not fin["sharded"]:
        return not_yet(
            "the parameters are plain tensors, not sharded: call fully_shard(model, mp_policy=...) before you make "
            "the optimizer"
        )
    if fin["gather"] != ["float16"]:
        got = "/".join(fin["gather"]) or "nothing"
        why = (
            "the compute ran in fp32 then: give MixedPrecisionPolicy a param_dtype"
            if got == "float32"
            else "param_dtype sets the dtype of the gathered parameters and of the compute, and this step is fp16"
        )
        return not_yet(f"the parameters were all-gathered in {got}: {why}")
    if fin["scatter"] != ["float32"]:
        got = "/".join(fin["scatter"]) or "nothing"
        return not_yet(
            f"the gradients were reduce-scattered in {got}: the sum over the ranks then rounds to fp16 at every hop "
            "and can overflow (section 5). reduce_dtype sets it (left at None, torch before 2.15 reduces in param_dtype)"
        )
    if fin["scale"] is None:
        return not_yet(
            f"the second value returned is a {fin['scaler']}, not a loss scaler: fp16 gradients need one (the fp16 "
            "range starts at 6e-8), and one whose decision is the same on every rank"
        )
    if fin.get("enabled") is False:
        said = [w for w in fin.get("warnings", ()) if "Disabling" in w or "not available" in w]
        why, fix = (
            (
                f'its device defaults to "cuda", and without CUDA it turned itself off; the ranks warned "{said[0]}" '
                "in their own output, which the notebook does not show (lesson 08, S11)",
                "These ranks are CPU processes: make the scaler for their device",
            )
            if said
            else ("it was made with enabled=False", "Leave it enabled")
        )
        return not_yet(
            f"your {fin['scaler']} is disabled: {why}. A disabled scaler passes the loss through unscaled and always "
            f"steps, so it cannot skip an overflowed step. {fix}"
        )
    if not fin["has_grads"]:
        return not_yet("after your step the parameters have no gradients: call backward on the scaled loss")
    no_step = [r for r, x in enumerate(rs) if not x["finite"]["stepped"]]
    if no_step:
        return not_yet(
            f"with finite gradients the parameters did not change on rank(s) {no_step}: make the optimizer after "
            "fully_shard (it must hold the sharded parameters) and call scaler.step(opt)"
        )
    ratio = fin["ratio"]
    if math.isclose(ratio, 1 / _INIT_SCALE, rel_tol=0.05):
        return not_yet(
            "the gradients the optimizer used are 2^-16 of the loss's gradients: the scaler unscaled gradients that "
            "were never scaled. Call backward on scaler.scale(loss)"
        )
    if math.isclose(ratio, _INIT_SCALE, rel_tol=0.05):
        return not_yet(
            "the optimizer stepped with gradients still multiplied by the scale (2^16): call scaler.step(opt), "
            "which unscales them first, instead of opt.step()"
        )
    if not fin["err"] < 0.05:  # fp16 compute of a 16-32-8 MLP: about 1e-3; a wrong loss or lr misses by far more
        return not_yet(
            f"the gradients differ from those of the starter's loss by {fin['err']:.0%}: keep the loss "
            "model(batches[rank]).float().square().mean() and call backward once"
        )
    stepped = [r for r, x in enumerate(rs) if x["overflow"]["stepped"]]
    if stepped:
        return not_yet(
            f"rank {_OVERFLOW_RANK}'s fp16 forward overflowed, yet the parameters changed on rank(s) {stepped}: step "
            "through scaler.step(opt), which skips the update when a gradient holds an inf or a NaN"
        )
    scales = [x["overflow"]["scale"] for x in rs]
    if any(s != _INIT_SCALE / 2 for s in scales):
        return not_yet(
            f"after the skipped step the scales are {scales}: call scaler.update() after scaler.step(opt), which "
            "halves the scale after a skip"
        )
    note = ""
    if ovf["scaler"] != "ShardedGradScaler":
        note = (
            f" Your {ovf['scaler']} agreed here only because FSDP2's gradients are DTensors, whose inf check is "
            "reduced over the mesh; ShardedGradScaler also agrees where gradients are local tensors"
        )
    return correct(
        "fp16 all-gather and compute, fp32 reduce-scatter; with finite gradients every rank stepped, and when rank "
        f"{_OVERFLOW_RANK} overflowed every rank skipped and halved its scale." + note
    )


_BF16_MAX = (2 - 2**-7) * 2.0**127  # bf16's largest finite value, about 3.39e38


def _ring_cases(seed: int) -> list[tuple[str, torch.Tensor, str]]:
    """(what, grads, hint) the ring sum is tried on: random gradients of 2, 7 and 64 ranks, then the inputs where a
    quick answer goes wrong, each with what to look at."""
    gen = torch.Generator().manual_seed(seed)
    cases = [
        (f"{n} ranks of 32 random values", quantize(torch.randn(n, 32, generator=gen), "bf16"), "") for n in (2, 7, 64)
    ]
    k = torch.arange(32, dtype=torch.float32)
    ties = torch.stack([torch.ones(32), (2 * k + 1) * 2.0**-8 * (1 - 2 * (k % 2))])  # 1 + odd * 2^-8: halfway
    overflow = torch.tensor([[_BF16_MAX, 2.0**119, -_BF16_MAX]]).T.repeat(1, 4)  # finite in fp32, inf in a bf16 ring
    cases += [
        ("sums that fall exactly halfway between two bf16 values", ties,
         "round to nearest with ties to even, as Tensor.bfloat16() does: truncating the low bits or rounding halves "
         "up gives another value"),
        ("a running sum beyond bf16's largest value (about 3.39e38), brought back by the last rank", overflow,
         "in a bf16 ring the partial sum rounds to inf at that hop and stays inf; only an fp32 sum gets it back"),
        ("values of about 1e-39 (subnormal)", quantize(torch.randn(6, 32, generator=gen) * 1e-39, "bf16"),
         "keep every tiny value: round each partial sum to bf16, nothing else (no flush to zero, no fp16)"),
        ("one rank", quantize(torch.randn(1, 32, generator=gen), "bf16"), "with one rank the sum is its own row"),
        ("5 ranks of one value each", quantize(torch.randn(5, 1, generator=gen), "bf16"),
         "a row can hold a single value: sum over the ranks (dim 0) whatever the row's length"),
    ]  # fmt: skip
    return cases


def _calls_to_the_lesson():
    """The calls of the lesson's own sums (:func:`ring_sum`, :func:`pairwise_sum`) made inside the block, however the
    answer reached them."""
    where = E.__file__
    return calls_seen(lambda code: code.co_filename == where and code.co_name in ("ring_sum", "pairwise_sum"))


@exercise
def check_ring_sum_bf16(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(grads)`` (a float32 tensor, one row per rank, bf16-representable values) returns the
    sum of the rows accumulated rank 0, 1, 2, ... with the running sum rounded to bf16 after every add (as
    a bf16 ring reduce-scatter does), as a float32 tensor. Compared bit for bit with
    :func:`amp_lessons.distributed.ring_sum` on random gradients of 2, 7 and 64 ranks, on sums halfway between two
    bf16 values, on a partial sum beyond bf16's range, on subnormal values, on one rank and on rows of one value.
    A call of the lesson's ``ring_sum`` or ``pairwise_sum`` is refused."""
    seed = _validate.seed(seed)
    placeholder(fn, "write fn(grads) and pass the function itself")
    if not callable(fn):
        return not_yet(f"pass the function ring_sum_bf16 itself, got {type(fn).__name__}")
    for i, (what, grads, hint) in enumerate(_ring_cases(seed)):
        n, width = grads.shape
        with _calls_to_the_lesson() as used:
            got, err = call_learner(fn, grads.clone())
        if used:
            return not_yet(f"write the loop yourself rather than calling the lesson's {sorted(used)[0]}")
        if err:
            return not_yet(f"on {what}, {err}" + (f". Hint: {hint}" if hint else ""))
        if not isinstance(got, torch.Tensor):
            return not_yet(f"return a tensor, got {type(got).__name__}")
        if got.shape != (width,):
            return not_yet(f"on {what} the sum has shape ({width},), got {tuple(got.shape)}")
        if got.dtype != torch.float32:
            return not_yet(
                f"return the sums as a float32 tensor (bf16 values held in float32, as the rows are), got {got.dtype}"
            )
        want = ring_sum(grads, "bf16")
        if torch.equal(got, want):
            continue
        if i == 0 and torch.equal(got, grads.sum(0)):
            return your_turn(
                "so far this sums in fp32, like reduce_dtype=float32. What does a bf16 ring hold after each hop?"
            )
        if torch.equal(got, quantize(grads.sum(0), "bf16")) and not hint:
            return not_yet(
                f"with {n} ranks your result equals the sum accumulated in fp32 (rounded once at most): that is "
                "reduce_dtype=float32. In a bf16 reduction every partial sum is a bf16 value: round after each add"
            )
        if n > 2 and torch.equal(got, pairwise_sum(grads, "bf16")):
            return not_yet("that is a tree (pairwise) order; the ring adds rank 0, then 1, then 2, ...")
        wrong = int((got != want).sum()) if got.shape == want.shape else width
        return not_yet(
            f"on {what}, {wrong} of {width} sums differ from the bf16 ring sum"
            + (f". Hint: {hint}" if hint else ": add rank 0, then 1, then 2, ..., and round to bf16 after every add")
        )
    return correct(
        "bit for bit the bf16 ring sum: 2, 7 and 64 ranks, ties rounded to even, an overflow that stays inf, subnormal "
        "values, one rank and one value per rank"
    )
