"""amp_lessons.distributed._experiments, lesson 09's facts, on real 2-process gloo groups (each well under a second
here) and on the emulation."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist

from amp_lessons import _launch
from amp_lessons.distributed import _experiments as E, _records as records, key_code
from amp_lessons.formats import quantize

pytestmark = pytest.mark.skipif(_launch.loopback_interface()[1] is False, reason="no loopback interface up here")


def test_ddp_autocast_dtypes_and_one_decision_for_all_ranks():
    s = E.observe_ddp_step(key_code.ddp_amp_step, 2, "fp16", inf_rank=1)
    for r in range(2):
        assert set(s.param_dtypes[r].values()) == {"float32"}  # fp32 master weights
        assert set(s.activation_dtypes[r]) == {"float16"}  # autocast's Linear outputs
        assert set(s.grad_dtypes[r].values()) == {"float32"} and set(s.bucket_dtypes[r]) == {"float32"}
    assert s.local_grad_finite == [True, False]  # only rank 1 sent an inf or NaN into the all-reduce
    assert s.reduced_grad_finite == [False, False]  # the all-reduce gave it to every rank
    assert s.stepped == [False, False] and s.scale_after == [2.0**15] * 2
    assert s.grads_equal_across_ranks
    # DDP refuses bf16_compress_hook by name on a build without CUDA and NCCL >= 2.10 (the CPU wheel), and accepts it
    # on a CUDA build even for this gloo group: the refusal follows the build, never the process group
    check = E.ddp_bf16_hook_build_check()
    assert (s.bf16_hook_refused == "") == check.accepts
    assert check.accepts or "NCCL" in s.bf16_hook_refused
    # the hook's bf16 all-reduce: of the order of bf16's unit roundoff (2^-8 = 0.004) per gradient, 2x room
    assert 1e-4 < s.bf16_hook_rel_error < 8e-3 and s.bf16_hook_grad_dtypes == ["float32", "float32"]
    assert "2^15" in s.table() and "sent finite" in s.table()


def test_ddp_without_overflow_steps_on_every_rank():
    s = E.observe_ddp_step(key_code.ddp_amp_step, 2, "bf16", inf_rank=None)
    assert s.local_grad_finite == s.reduced_grad_finite == s.stepped == [True, True]
    assert s.scale_after == [2.0**16] * 2 and set(s.activation_dtypes[0]) == {"bfloat16"}


def test_fsdp_stages_follow_the_policy():
    s = E.observe_fsdp_step(key_code.fsdp_step, 2, "bf16")
    for reduce_dtype in ("float32", "bfloat16"):
        rows = {stage: dtype for stage, dtype, _ in s.stages[reduce_dtype]}
        details = {stage: detail for stage, _, detail in s.stages[reduce_dtype]}
        assert rows["sharded parameter (optimizer's copy)"] == "float32"
        assert rows["all-gathered parameter"] == rows["matmul operands"] == rows["module output"] == "bfloat16"
        assert details["matmul operands"] == "2 forward, 3 backward matmuls"  # backward's matmuls are bf16 too
        assert rows["gradient reduce-scatter"] == reduce_dtype
        assert rows["sharded gradient"] == "float32"
        assert "local shard (16, 16) of (32, 16)" in s.table(reduce_dtype)
        # bf16 compute dominates at 2 ranks: both errors at the bf16 scale (2^-9), below 1%
        assert 1e-4 < s.grad_error[reduce_dtype] < 1e-2


def test_fsdp_every_rank_skips_although_one_shard_is_finite():
    rows = E.fsdp_inf_sync(2, inf_rank=1)
    for cls in ("ShardedGradScaler", "GradScaler"):
        assert [r[cls].local_shard_finite for r in rows] == [False, True]  # the inf landed in rank 0's shard
        assert [r[cls].stepped for r in rows] == [False, False]
        assert [r[cls].scale_after for r in rows] == [2.0**15] * 2 and rows[0][cls].grad_type == "DTensor"
        assert [(r[cls].rank, r[cls].scaler) for r in rows] == [(0, cls), (1, cls)]


def test_bytes_per_parameter_match_the_arithmetic():
    rows = {r.setting: r for r in E.bytes_per_parameter(2, width=32)}
    assert set(rows) == set(E.MEMORY_SETTINGS)
    for r in rows.values():
        assert r.total == r.expected  # exact: no shard is padded when width is a multiple of the ranks
    assert (rows["fp32"].params, rows["fp32"].grads, rows["fp32"].optimizer) == (4, 4, 8)
    assert rows["bf16-true"].total == 8 and rows["FSDP fp32"].total == 8 and rows["FSDP bf16-true"].total == 4


def test_the_emulation_is_what_gloo_computes():
    report = E.gloo_allreduce_check(2, elements=128)
    assert list(report) == ["bf16", "fp32"]
    for fmt, c in report.items():
        assert c.fmt == fmt and c.ranks_agree and c.matching_some_ring_order == 1.0
    assert report["bf16"].gloo_error == report["bf16"].emulated_error > 0  # 2 ranks: one order only


def test_ring_and_pairwise_sums():
    g = quantize(torch.randn(5, 16, generator=torch.Generator().manual_seed(1)), "bf16")
    manual = g[0].clone()
    for row in g[1:]:
        manual = (manual + row).to(torch.bfloat16).float()
    assert torch.equal(E.ring_sum(g, "bf16"), manual)
    assert torch.equal(E.ring_sum(g, "fp32"), g[0] + g[1] + g[2] + g[3] + g[4])
    assert torch.equal(E.pairwise_sum(g, "fp32"), ((g[0] + g[1]) + (g[2] + g[3])) + g[4])
    assert torch.equal(E.ring_sum(g[:1], "bf16"), g[0])


def test_reduction_error_grows_with_world_size_in_bf16():
    r = E.reduction_error((2, 64, 4096), elements=64)
    ring, pair, fp32 = r.errors["bf16 ring"], r.errors["bf16 pairwise"], r.errors["fp32 ring"]
    assert ring[0] == pair[0] > 0  # two ranks: one add, one rounding, any order
    assert ring[0] < ring[1] < ring[2] and ring[2] > 5 * pair[2]  # ring order grows ~ sqrt(N), the tree ~ log N
    assert max(fp32) < 1e-6 < min(ring)
    assert r.at("bf16 ring", 4096) == ring[2]


def test_the_bf16_hook_build_check_follows_ddps_rule(monkeypatch):
    B = records.BuildCheck
    assert not B("", "", False).accepts  # the CPU wheel
    assert B("CUDA 12.8", "2.27.3", False).accepts  # PyPI's default Linux wheel, with or without a GPU
    assert not B("CUDA 11.3", "2.9.9", False).accepts  # NCCL older than 2.10
    assert B("ROCm 6.2", "2.21.5", False).accepts and B("", "", True).accepts
    assert "refuses" in str(B("", "", False)) and "accepts" in str(B("CUDA 12.8", "2.27.3", False))
    here = E.ddp_bf16_hook_build_check()
    assert here.accepts == bool(torch.version.cuda or getattr(torch.version, "hip", None))
    assert bool(here.nccl) == dist.is_nccl_available()
