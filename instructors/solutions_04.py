"""Instructor solutions for lesson 04's exercises (run through the learner's checker by
tests/test_solutions.py)."""

DTYPE_PREDICTIONS = {
    "cpu: cumsum(a @ b, 0)": "torch.bfloat16",  # cumsum is on no CPU list: the bf16 of the mm stays bf16
    "cuda: cumsum(a @ b, 0)": "torch.float32",  # fp32_set_opt_dtype on CUDA: reads fp16, writes fp32
    "cuda: norm(h)": "torch.float32",  # torch.norm runs linalg_vector_norm: fp32_set_opt_dtype, writes fp32
    "cpu: addcmul(a, h, h)": "torch.float32",  # on no CPU list: type promotion of fp32 and bf16
    "cuda: gelu(a @ b)": "torch.float16",  # gelu is on no CUDA list: it keeps the fp16 of the mm
    "cpu: a @ b + a": "torch.float32",  # add is on no list: bf16 + fp32 promotes to fp32
    "cpu: embedding_bag(i, h, offsets)": "torch.bfloat16",  # on no CPU list: the weight's dtype
    # bmm is lower_precision: the fp32 input is cast to bf16, the fp64 one left alone: mixed dtypes, refused
    "cpu: bmm(a[None].double(), b[None])": "error",
}


def bce_fix(logits, target):
    """Exercise 2: the sigmoid fused into the loss, which CUDA autocast runs in fp32."""
    import torch.nn.functional as F

    return F.binary_cross_entropy_with_logits(logits, target)


def count_casts(work, *args):
    """Exercise 3: run ``work(*args)`` under a TorchDispatchMode that counts every ``aten._to_copy`` whose output is
    a 16-bit float dtype (fp16 or bf16) and whose input had another dtype."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    class CastCounter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.casts = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func is torch.ops.aten._to_copy.default:
                if out.dtype in (torch.float16, torch.bfloat16) and args[0].dtype != out.dtype:
                    self.casts += 1
            return out

    with CastCounter() as counter:
        work(*args)
    return counter.casts
