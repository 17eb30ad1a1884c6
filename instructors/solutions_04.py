"""Instructor solutions for lesson 04's exercise (run through the learner's checker by
tests/test_solutions.py)."""

DTYPE_PREDICTIONS = {
    "cpu: a @ b": "torch.bfloat16",  # mm: lower precision
    "cpu: (a @ b).sum()": "torch.bfloat16",  # sum is on no CPU list: bf16 stays bf16
    "cpu: layer_norm(h)": "torch.bfloat16",  # layer_norm is on no CPU list
    "cpu: cat([h, a])": "torch.float32",  # cat: promote to the widest input
    "cpu: a.double() @ b.double()": "torch.float64",  # fp64 inputs are not autocast
    "cuda: (a @ b).sum()": "torch.float32",  # sum is an fp32 op on CUDA
    "cuda: softmax(a @ b)": "torch.float32",  # softmax is an fp32 op on CUDA
    "cuda: cat([h, a])": "torch.float32",  # no CUDA autocast kernel: ordinary type promotion
}


def bce_fix(logits, target):
    """Exercise 2: the sigmoid fused into the loss, which CUDA autocast runs in fp32."""
    import torch.nn.functional as F

    return F.binary_cross_entropy_with_logits(logits, target)
