"""Key code of notebooks/09_distributed.ipynb: generated from its ``#| export`` cells by ``make export``. Do not edit.

Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the
notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.
"""

# ruff: noqa
# fmt: off

# -- notebooks/09_distributed.ipynb, exported cell 1 --
import torch
import torch.distributed as dist


def hello(rank, world_size):
    t = torch.tensor([float(rank + 1)])
    dist.all_reduce(t)                       # a real collective: the sum over the ranks
    return f"rank {rank} of {world_size}: all_reduce gave {t.item():g}"

# -- notebooks/09_distributed.ipynb, exported cell 2 --
import torch.distributed as dist


def one_rank_fails(rank, world_size):
    if rank == 1:
        raise ValueError("rank 1 failed on purpose")
    dist.barrier()                           # rank 0 would wait here forever

# -- notebooks/09_distributed.ipynb, exported cell 3 --
import torch
from torch import nn
from torch.nn.parallel import DistributedDataParallel


def tiny_mlp(seed=0):
    torch.manual_seed(seed)                              # the same initial weights on every rank
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))


def ddp_amp_step(rank, world_size, batches, dtype=torch.float16, comm_hook=None):
    """One DDP training step of this rank's batch under autocast with a GradScaler; returns the model and scaler."""
    model = DistributedDataParallel(tiny_mlp())          # a full fp32 replica on every rank
    if comm_hook is not None:
        model.register_comm_hook(None, comm_hook)        # replaces the fp32 all-reduce of each gradient bucket
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    with torch.autocast("cpu", dtype=dtype):             # fp16/bf16 matmuls, inside the forward only
        loss = model(batches[rank]).float().square().mean()
    scaler.scale(loss).backward()                        # DDP all-reduces the scaled fp32 gradients, bucket by bucket
    scaler.step(opt)                                     # unscales; skips opt.step() if a gradient holds an inf/NaN
    scaler.update()                                      # halves the scale after a skip
    return model, scaler

# -- notebooks/09_distributed.ipynb, exported cell 4 --
import torch
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard


def fsdp_step(rank, world_size, batches, param_dtype=torch.bfloat16, reduce_dtype=torch.float32):
    """One FSDP2 training step of this rank's batch; returns the model, its parameters and gradients sharded."""
    model = tiny_mlp()                                   # the cell above
    mesh = init_device_mesh("cpu", (world_size,))        # these ranks are CPU processes; on GPUs: "cuda"
    policy = MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=reduce_dtype)
    fully_shard(model, mesh=mesh, mp_policy=policy)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)  # after fully_shard: it updates the fp32 shards
    loss = model(batches[rank]).float().square().mean()  # all-gathers the parameters in param_dtype, computes in it
    loss.backward()                                      # reduce-scatters the gradients in reduce_dtype
    opt.step()
    return model
