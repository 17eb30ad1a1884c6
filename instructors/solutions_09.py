"""Instructor solutions for lesson 09's exercises (run through the learners' checkers by
tests/test_solutions.py)."""


# Exercise 1: full sharding (FSDP, ZeRO stage 3) splits parameters, gradients and optimizer states alike, so each of
# N ranks holds 1/N of all three: 16 bytes per parameter (fp32 Adam) become 16/N.
def sharded_bytes(param_bytes, grad_bytes, optimizer_bytes, world_size):
    return (param_bytes + grad_bytes + optimizer_bytes) / world_size


# Exercise 2: in a bf16 reduction every partial sum is a bf16 value: add in fp32 (what gloo's bf16 sum computes),
# round to bf16, pass it on to the next rank.
def ring_sum_bf16(grads):
    acc = grads[0]
    for row in grads[1:]:
        acc = (acc + row).bfloat16().float()
    return acc
