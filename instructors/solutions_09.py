"""Instructor solutions for lesson 09's exercises (run through the learners' checkers by
tests/test_solutions.py)."""

import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

from amp_lessons.distributed.key_code import tiny_mlp


# Exercise 1: fp16 FSDP2. The policy all-gathers the parameters in fp16 and computes in fp16; reduce_dtype=float32
# sums the ranks' gradients in fp32 (it would default to param_dtype). The optimizer is made after fully_shard, so that
# it holds the sharded fp32 parameters. ShardedGradScaler all-reduces its inf flag, so every rank skips together.
def fsdp_fp16_step(rank, world_size, batches):
    model = tiny_mlp()
    mesh = init_device_mesh("cpu", (world_size,))
    fully_shard(model, mesh=mesh, mp_policy=MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = ShardedGradScaler("cpu")
    loss = model(batches[rank]).float().square().mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return model, scaler


# Exercise 2: in a bf16 reduction every partial sum is a bf16 value: add in fp32 (what gloo's bf16 sum computes),
# round to bf16, pass it on to the next rank.
def ring_sum_bf16(grads):
    acc = grads[0]
    for row in grads[1:]:
        acc = (acc + row).bfloat16().float()
    return acc
