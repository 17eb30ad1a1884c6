"""Lesson 09's experiments: mixed precision on a real ``torch.distributed`` process group.

Every multi-process experiment starts a small real group of CPU processes with the gloo backend
(:func:`run_group`) and returns plain, picklable data to the notebook:

- :func:`observe_ddp_step`: runs the lesson's DDP step (``key_code.ddp_amp_step``: autocast and GradScaler, written
  in the notebook) and reads, per rank, the dtypes of parameters, activations, gradients and what the gradient
  all-reduce carries; one rank's forward overflows, and every rank's GradScaler skips; the gradients the
  ``bf16_compress_hook`` returns against the fp32 all-reduce.
- :func:`observe_fsdp_step`: runs the lesson's FSDP2 step (``key_code.fsdp_step``: ``fully_shard`` with a
  ``MixedPrecisionPolicy``) and reads the dtype (and shape) of every stage of it from the operations it dispatches
  (all-gather, forward and backward matmuls, reduce-scatter), for ``reduce_dtype`` float32 and bfloat16.
- :func:`fsdp_inf_sync`: fp16 FSDP2 with an inf in one rank's gradient that reduce-scatter delivers to
  another rank's shard: the local view disagrees, the scaler's decision does not.
- :func:`bytes_per_parameter`: the bytes per parameter each rank holds (parameters, gradients, Adam states,
  counted from the storages), against the arithmetic.

The lesson's steps live in its notebook (``#| export`` cells, written to :mod:`.key_code`); this module keeps the
launcher and the observers (an op log of dtypes and collectives, DDP's comm hooks), not a second copy of a step.
- :func:`reduction_error`: the error of summing N ranks' gradients in bf16 and in fp32, in ring order and
  pairwise, for N up to thousands: EMULATED in one process (the formats engine rounds after every add,
  as gloo's bf16 sum does), the emulation checked bit for bit against the real gloo all-reduce for the
  world sizes this machine runs (:func:`gloo_allreduce_check`).

What a laptop cannot show: NCCL, its algorithms (rings, trees, NVLS) and the bandwidth of NVLink or
InfiniBand; the numbers of the reduction are those of the order modelled, not of a particular NCCL run.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import importlib
import inspect
import math
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook, bf16_compress_hook
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch.distributed.tensor import DTensor
from torch.nn.parallel import DistributedDataParallel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from .. import _validate
from .._validate import int_at_least, positive, sequence
from ..checks import is_placeholder
from ..formats import quantize
from .key_code import tiny_mlp

__all__ = [
    "AllreduceCheck",
    "BuildCheck",
    "MAX_EMULATED_WORLD_SIZE",
    "MAX_WORLD_SIZE",
    "MEMORY_SETTINGS",
    "REDUCTION_FORMATS",
    "REDUCTION_METHODS",
    "REDUCTION_ORDERS",
    "DdpStep",
    "FsdpStages",
    "GroupTimeout",
    "ForkUnsafe",
    "GroupUnavailable",
    "MemoryRow",
    "ReductionError",
    "ReductionSweep",
    "ScalerOutcome",
    "WorkerError",
    "bytes_per_parameter",
    "ddp_bf16_hook_build_check",
    "fork_runs_backward",
    "fsdp_inf_sync",
    "gloo_allreduce_check",
    "loopback_interface",
    "observe_ddp_step",
    "observe_fp16_fsdp_step",
    "observe_fsdp_step",
    "reduction_error",
    "reduction_sweep",
    "pairwise_sum",
    "ring_sum",
    "run_group",
]

MAX_WORLD_SIZE = 8  # real processes: each one is a Python interpreter with torch (about 300 MB)
MAX_EMULATED_WORLD_SIZE = 65536  # emulated ranks: one row of a tensor each
MAX_TIMEOUT_S = 600.0
_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
# DTensor warns when GradScaler's found_inf (shape [1], not a scalar) meets DTensor gradients; the scaler
# still reduces it over the mesh (torch/distributed/tensor/_dispatch.py, found_inf_reduce_handler).
_DTENSOR_FOUND_INF_WARNING = "Found a non-scalar tensor with numel=1"
# gloo's errors when the loopback interface has no address (it is down, as in a fresh network namespace)
_NO_LOOPBACK = ("Unable to find address for", "Unable to find interface for")


# --- the launcher -------------------------------------------------------------------------------------


class WorkerError(RuntimeError):
    """A worker of :func:`run_group` raised or died; ``rank`` is the first that failed, ``detail`` its
    traceback (or exit status) and the tail of its log."""

    def __init__(self, rank: int, detail: str):
        super().__init__(f"rank {rank} of the process group failed; every worker was stopped.\n{detail}")
        self.rank = rank
        self.detail = detail


class GroupTimeout(TimeoutError):
    """:func:`run_group` ran past its timeout; every worker was stopped. ``ranks``: the ranks whose ``fn`` had not
    returned (the others had, and were waiting for them)."""

    ranks: list[int] = []


class GroupUnavailable(RuntimeError):
    """No process group can start here (no loopback interface that is up)."""


class ForkUnsafe(GroupUnavailable):
    """torch refused a backward pass in a forked worker (:func:`fork_runs_backward`): this process had run one with an
    accelerator present. The state of the process, not the function, is the cause."""


def _backward_and_exit() -> None:
    try:
        torch.ones(1, requires_grad=True).sum().backward()
    except BaseException:  # noqa: BLE001 - any failure means: not safe
        os._exit(1)
    os._exit(0)


def fork_runs_backward() -> bool:
    """Whether a process forked from this one can run a backward pass.

    Once the autograd engine has started its device threads, which it does at the first backward pass in a process
    that sees an accelerator (a CUDA GPU, for one; a CPU-only machine never starts them), torch refuses every
    backward pass in a forked child: "Unable to handle autograd's threading in combination with fork-based
    multiprocessing" (https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork). Without an accelerator this is
    True at once; with one, a forked child tries a one-element backward pass and says (a few milliseconds)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    if not torch.accelerator.is_available():
        return True
    return _probe_fork()


def _probe_fork() -> bool:
    ctx = multiprocessing.get_context("fork")
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
        )
        p = ctx.Process(target=_backward_and_exit, daemon=True)
        p.start()
    p.join(60)
    if p.exitcode is None:
        _stop([p])
    return p.exitcode == 0


def loopback_interface() -> tuple[str | None, bool | None]:
    """The loopback network interface and whether it is up: ``(name, up)``. On Linux read from
    ``/sys/class/net`` (``(None, False)`` if there is none); elsewhere ``("lo0", None)``: not probed."""
    net = Path("/sys/class/net")
    if not net.is_dir():
        return ("lo0", None)
    for iface in sorted(net.iterdir()):
        try:
            flags = int((iface / "flags").read_text().strip(), 16)
        except (OSError, ValueError):
            continue
        if flags & 0x8:  # IFF_LOOPBACK
            return (iface.name, bool(flags & 0x1))  # IFF_UP
    return (None, False)


def _check_world_size(world_size, limit: int = MAX_WORLD_SIZE) -> int:
    n = int_at_least(world_size, "world_size", 1)
    if n > limit:
        raise ValueError(f"world_size={world_size!r} is not allowed: at most {limit} here")
    return n


def _check_timeout(timeout) -> float:
    t = positive(timeout, "timeout")
    if t > MAX_TIMEOUT_S:
        raise ValueError(f"timeout={timeout!r} is not allowed: at most {MAX_TIMEOUT_S:.0f} seconds")
    return t


def _no_cuda() -> bool:
    return False


def _worker(fn, rank: int, world_size: int, args: tuple, workdir: str, timeout: float, ifname: str | None):
    """One rank: log to a file, one thread, join the gloo group, run ``fn``, wait for every rank, leave."""
    log = open(os.path.join(workdir, f"rank{rank}.log"), "w", buffering=1)  # noqa: SIM115 - lives until exit
    os.dup2(log.fileno(), 1)  # C++ (gloo) logs go to the file too, not into the notebook's kernel
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    out = os.path.join(workdir, f"rank{rank}.pkl")
    try:
        torch.set_num_threads(1)  # as DataLoader workers do: OpenMP is not fork-safe, and 2 ranks share the cores
        if torch.cuda._is_in_bad_fork():
            # forked from a process that had initialized CUDA: torch refuses CUDA here ("Cannot re-initialize CUDA
            # in forked subprocess"), yet some CPU code asks it (Adam.step checks for CUDA graph capture whenever
            # torch.cuda.is_available(): "CUDA error: initialization error", seen on an NVIDIA H200, torch 2.11).
            # These ranks compute on the CPU: tell such code there is no CUDA
            torch.cuda.is_available = _no_cuda
        if ifname is not None:
            os.environ["GLOO_SOCKET_IFNAME"] = ifname  # gloo binds to the loopback interface only
        dist.init_process_group(
            "gloo",
            init_method="file://" + os.path.join(workdir, "store"),
            rank=rank,
            world_size=world_size,
            timeout=datetime.timedelta(seconds=timeout),
        )
        try:
            result = ("ok", fn(rank, world_size, *args))
        except BaseException:  # noqa: BLE001 - SystemExit too; timed before the peers fail in turn
            result = ("error", traceback.format_exc(), time.monotonic())
        if result[0] == "ok":
            Path(workdir, f"rank{rank}.returned").touch()  # what a timeout's message reads: who is still in fn
            # Every rank waits for every other before it leaves the group. A rank that returned at once and closed
            # its sockets while a peer was still connecting to it made that peer's init_process_group fail
            # ("Gloo connectFullMesh failed ... Connection closed by peer") in about 1 run in 20.
            dist.barrier()  # bounded by the group's timeout, and by the launcher's, which stops every rank
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - every failure goes back to the parent as text
        result = ("error", traceback.format_exc(), time.monotonic())
    with open(out + ".tmp", "wb") as f:
        pickle.dump(result, f)
    os.replace(out + ".tmp", out)
    log.flush()
    if result[0] != "ok":
        os._exit(1)  # no atexit handlers of the parent's (forked) interpreter, no flush of its buffers
    os._exit(0)


def _stop(procs) -> None:
    """SIGTERM every live worker, then SIGKILL what is left after a second; reap all."""
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(OSError):
                p.terminate()
    deadline = time.monotonic() + 1.0
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGKILL)
            p.join()


def _log_tail(workdir: str, rank: int, lines: int = 15) -> str:
    try:
        text = Path(workdir, f"rank{rank}.log").read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def _importable(f) -> bool:
    """Whether a spawned worker can import ``f`` by its module path: its module is not ``__main__`` (a notebook, a
    script) and looking its qualified name up in that module gives ``f`` itself (not a lambda, not a function
    defined inside another)."""
    where, qualname = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
    if where in (None, "__main__") or not qualname or "<" in qualname or where not in sys.modules:
        return False
    obj = sys.modules[where]
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is f


def _unspawnable(fn, args: tuple) -> str | None:
    """The first of ``fn`` and the functions among ``args`` that a spawned worker could not import (one defined in
    a notebook's ``__main__``, inside another function, or a lambda), named; None if there is none. A
    ``functools.partial`` is importable where its function and the functions among its arguments are; other
    objects (tensors, modules, classes) are pickled, not imported."""
    todo = [fn, *args]
    while todo:
        f = todo.pop(0)
        if isinstance(f, functools.partial):
            todo += [f.func, *f.args, *f.keywords.values()]
        elif inspect.isfunction(f) and not _importable(f):
            return f"{getattr(f, '__qualname__', f)!r} (module {getattr(f, '__module__', None)!r})"
    return None


_AUTOGRAD_FORK = "Unable to handle autograd's threading in combination with fork-based multiprocessing"


START_METHODS = (None, "fork", "spawn")


def run_group(
    fn, world_size: int = 2, args: tuple = (), *, timeout: float = 60.0, start_method: str | None = None
) -> list:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` fresh processes joined in a gloo process group
    on this machine; return the list of their results (rank order; they must be picklable).

    - The rendezvous is a file store in a private temporary directory (``init_method="file://..."``): no TCP
      port is chosen at all, so none can be taken by another program between choosing and binding it; gloo's
      own connections use the loopback interface only (``GLOO_SOCKET_IFNAME``).
    - Every worker is stopped (SIGTERM, then SIGKILL) and reaped when one fails, when ``timeout`` seconds
      pass (GroupTimeout), when the caller is interrupted, and in any case before returning: no process
      outlives the call. A failure raises WorkerError with the traceback of the rank that failed first (a rank
      that raised, called ``sys.exit``, or exited without returning: ``os._exit``, a signal); a timeout names the
      ranks whose ``fn`` had not returned;
      GroupUnavailable where gloo finds no loopback address (a network namespace whose loopback is down).
    - Every rank waits for all the others (``dist.barrier()``) after its ``fn`` returned and before it leaves the
      group, so no rank closes its connections while a peer is still connecting.
    - ``start_method``: None forks the workers where the platform can (Linux, macOS: a fraction of a second,
      ``fn`` may be any function, one defined in a notebook included) and spawns them elsewhere (Windows);
      "fork" or "spawn" to choose. A spawned worker is a fresh interpreter that imports ``fn`` by its module path
      and unpickles ``args`` (each start imports torch, seconds): a function defined in a notebook or inside
      another function cannot be spawned (TypeError; a notebook's ``#| export`` cells give an importable copy).
    - After a backward pass in this process on a machine with an accelerator, a forked worker cannot run one
      (:func:`fork_runs_backward`): None then spawns the workers where ``fn`` and the functions among ``args``
      can be imported, and forks them otherwise; a forked worker that torch refuses raises ForkUnsafe, which says
      what to do.
    """
    world_size = _check_world_size(world_size)
    timeout = _check_timeout(timeout)
    if not callable(fn):
        raise TypeError(f"fn must be a function fn(rank, world_size, *args), got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {type(args).__name__}")
    if start_method not in START_METHODS:
        raise ValueError(f"start_method={start_method!r} is not allowed: use None (the platform's), 'fork' or 'spawn'")
    available = multiprocessing.get_all_start_methods()
    if start_method is not None and start_method not in available:
        raise ValueError(f"start_method={start_method!r} is not available on this platform: {available}")
    unspawnable = _unspawnable(fn, args)
    method = start_method
    if method is None:  # fork where it is fast and autograd works in the child; else spawn, where fn can be imported
        if "fork" not in available:
            method = "spawn"
        else:
            method = "fork" if unspawnable is not None or fork_runs_backward() else "spawn"
    if method == "spawn" and unspawnable is not None:
        raise TypeError(
            f"{unspawnable} cannot be spawned: a spawned worker imports a function by its module path, and one "
            "defined in a notebook or inside another function has none. Define it in a module (a notebook's "
            "#| export cell is written to one) and pass that copy"
        )
    if method == "fork":
        # once, in the parent: fully_shard imports torch._dynamo lazily, in every forked worker otherwise (2 s each);
        # not at the module's top, where it would cost every import of the topic (the presenter's load) 1 s
        importlib.import_module("torch._dynamo")  # (an import statement would make `torch` local to this function)
    ifname, up = loopback_interface()
    if up is False:
        raise GroupUnavailable(
            "the loopback interface is down (or missing) in this network namespace, so gloo cannot connect "
            "its processes; bring it up (`ip link set lo up`) or run outside the namespace"
        )
    ctx = multiprocessing.get_context(method)
    with tempfile.TemporaryDirectory(prefix="amp-group-") as workdir:
        procs = []
        try:
            with warnings.catch_warnings():
                # Python >= 3.12 warns on fork() in a process with threads (a kernel has some). The child only
                # runs torch on one thread and gloo, and touches no lock of the parent, as DataLoader workers.
                warnings.filterwarnings(
                    "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
                )
                for rank in range(world_size):
                    p = ctx.Process(
                        target=_worker, args=(fn, rank, world_size, args, workdir, timeout, ifname), daemon=True
                    )
                    p.start()
                    procs.append(p)
            deadline = time.monotonic() + timeout
            while True:
                failed = _failed(workdir, procs)
                if failed:  # let the others finish failing on their own (a second at most): the first cause wins
                    grace = time.monotonic() + 1.0
                    while time.monotonic() < grace and any(p.exitcode is None for p in procs):
                        time.sleep(0.005)
                    failed = _failed(workdir, procs)
                    _stop(procs)
                    raise _failure(workdir, procs, failed)
                if all(p.exitcode == 0 for p in procs):
                    break
                if time.monotonic() > deadline:
                    _stop(procs)
                    raise _timeout(workdir, world_size, timeout)
                time.sleep(0.005)
            results = []
            for rank in range(world_size):
                with open(os.path.join(workdir, f"rank{rank}.pkl"), "rb") as f:
                    results.append(pickle.load(f)[1])
            return results
        finally:
            _stop(procs)


def _failed(workdir: str, procs) -> list[int]:
    """Ranks that exited with a non-zero status, or with status 0 but no result (``os._exit(0)`` in ``fn``)."""
    return [
        r
        for r, p in enumerate(procs)
        if p.exitcode not in (None, 0)
        or (p.exitcode == 0 and not os.path.exists(os.path.join(workdir, f"rank{r}.pkl")))
    ]


def _timeout(workdir: str, world_size: int, timeout: float) -> GroupTimeout:
    """The timeout's error, naming the ranks whose ``fn`` had not returned (the others waited for them)."""
    stuck = [r for r in range(world_size) if not os.path.exists(os.path.join(workdir, f"rank{r}.returned"))]
    waiting = [r for r in range(world_size) if r not in stuck]
    who = ", ".join(str(r) for r in stuck) or "none"
    text = (
        f"the process group of {world_size} ran past its timeout of {timeout:g} s; every worker was stopped. "
        f"fn had not returned on rank(s) {who}"
    )
    if stuck and waiting:
        text += f" (rank(s) {', '.join(str(r) for r in waiting)} had returned and waited for them)"
    if stuck:
        text += f". Last lines of rank {stuck[0]}'s log:\n{_log_tail(workdir, stuck[0])}"
    err = GroupTimeout(text)
    err.ranks = stuck
    return err


def _failure(workdir: str, procs, failed: list[int]) -> Exception:
    """The error of the rank that failed first: a rank that died without a traceback (killed, ``os._exit``), else
    the earliest traceback (a peer's failure makes the others fail in their collectives a moment later)."""
    errors, silent = {}, []
    for rank in failed:
        path = os.path.join(workdir, f"rank{rank}.pkl")
        if os.path.exists(path):
            with open(path, "rb") as f:
                status, detail, when = pickle.load(f)
            errors[rank] = (when, detail.rstrip())
        else:
            silent.append(rank)
    if any(m in detail for _, detail in errors.values() for m in _NO_LOOPBACK):
        return GroupUnavailable(
            "gloo found no usable loopback address in this network namespace (the loopback interface is down?); "
            "bring it up (`ip link set lo up`) or run outside the namespace"
        )
    if silent:
        rank = silent[0]
        code = procs[rank].exitcode
        how = f"killed by signal {-code}" if code < 0 else f"exited with status {code}"
        if code == 0:
            how += " before fn returned (os._exit(0)?)"
        return WorkerError(
            rank, f"the worker {how} without a Python traceback. Last lines of its log:\n{_log_tail(workdir, rank)}"
        )
    rank = min(errors, key=lambda r: errors[r][0])
    if _AUTOGRAD_FORK in errors[rank][1]:
        error = ForkUnsafe(
            f"torch refused a backward pass in the forked worker of rank {rank}: this process had already run a "
            "backward pass with an accelerator present, and after that autograd's threads do not survive a fork "
            "(https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork). Restart the kernel and run the "
            "process-group cells before any backward pass, or define the function in a module (a notebook's "
            "#| export cell is written to one) and let run_group spawn the workers (start_method None or 'spawn')"
        )
        error.__cause__ = WorkerError(rank, errors[rank][1])
        return error
    return WorkerError(rank, errors[rank][1])


# --- observers: what a step dispatches, and what it leaves behind ------------------------------------------


class _OpLog(TorchDispatchMode):
    """Records every matmul and collective a step dispatches: (op name, dtypes of the tensor inputs, their shapes,
    dtype of the first output, whether the inputs were all finite before the op ran). A collective's inputs are the
    rank's own values (what it sends), so ``finite`` tells a local inf from one the reduction brought in. Autograd
    runs a CPU backward on the calling thread, and DDP's reducer dispatches its all-reduce there, so the log sees
    backward's matmuls and every collective of DDP and FSDP2."""

    COLLECTIVES = ("allgather", "all_gather", "reduce_scatter", "allreduce")

    def __init__(self):
        super().__init__()
        self.ops: list[dict] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__.strip("_")
        keep = name in ("mm", "addmm") or any(k in name for k in self.COLLECTIVES)
        if keep:
            tensors = [a for a in tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
            finite = all(bool(torch.isfinite(t).all()) for t in tensors if t.is_floating_point())
        out = func(*args, **kwargs)
        if keep:
            outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            self.ops.append(
                {
                    "op": name,
                    "dtypes": tuple(_name(t.dtype) for t in tensors),
                    "shapes": tuple(tuple(t.shape) for t in tensors),
                    "out": _name(outs[0].dtype) if outs else "",
                    "finite": finite,
                }
            )
        return out

    def find(self, *names: str) -> list[dict]:
        return [o for o in self.ops if o["op"] in names or any(n in o["op"] for n in names if len(n) > 5)]


def _name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _local(t: torch.Tensor) -> torch.Tensor:
    return t.to_local() if isinstance(t, DTensor) else t


def _check_step(step, what: str):
    if not callable(step):
        raise TypeError(f"step must be the lesson's {what} function step(rank, world_size, batches, ...), got {step!r}")
    return step


def _batch(rank: int, seed: int, rows: int = 8, cols: int = 16) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed((seed * 1000 + rank) % 2**63))


def _batches(world_size: int, seed: int, overflow_rank: int | None = None) -> list[torch.Tensor]:
    """One batch per rank; on ``overflow_rank`` one input value beyond fp16's largest (65504): autocast's cast of
    the input to fp16 makes it inf, and the backward spreads inf and NaN into that rank's gradients."""
    batches = [_batch(r, seed) for r in range(world_size)]
    if overflow_rank is not None:
        batches[overflow_rank][0, 0] = 1e5
    return batches


# --- DDP with autocast -----------------------------------------------------------------------------------


@dataclass
class DdpStep:
    """What :func:`observe_ddp_step` saw, one entry per rank (lists indexed by rank)."""

    world_size: int
    autocast_dtype: str
    param_dtypes: list[dict[str, str]]
    activation_dtypes: list[list[str]]  # outputs of the forward's matmuls
    grad_dtypes: list[dict[str, str]]
    bucket_dtypes: list[list[str]]  # what each rank's all-reduce carried, per bucket
    local_grad_finite: list[bool]  # what each rank sent into the all-reduce
    reduced_grad_finite: list[bool]  # its gradients after it
    scale_after: list[float]
    stepped: list[bool]  # did optimizer.step() change the parameters
    grads_equal_across_ranks: bool
    bf16_hook_rel_error: float  # |bf16_compress_hook - fp32 all-reduce| / |fp32 all-reduce|, over all grads
    bf16_hook_grad_dtypes: list[str] = field(default_factory=list)
    inf_rank: int | None = None
    bf16_hook_refused: str = ""  # DDP's error when bf16_compress_hook is registered ("" if accepted: a CUDA build)

    def table(self) -> str:
        rows = [
            f"{'rank':>4}  {'params':8} {'activations':12} {'grads':8} {'all-reduce':10} {'sent finite':12} "
            f"{'reduced finite':14} {'scale after':11}  stepped"
        ]
        for r in range(self.world_size):
            rows.append(
                f"{r:>4}  {_one(self.param_dtypes[r].values()):8} {_one(self.activation_dtypes[r]):12} "
                f"{_one(self.grad_dtypes[r].values()):8} {_one(self.bucket_dtypes[r]):10} "
                f"{self.local_grad_finite[r]!s:12} {self.reduced_grad_finite[r]!s:14} "
                f"{_pow2(self.scale_after[r]):11}  {self.stepped[r]}"
            )
        return "\n".join(rows)


def _one(values) -> str:
    return "/".join(sorted(set(values))) or "-"


def _pow2(v: float) -> str:
    k = math.log2(v) if v > 0 else float("nan")
    return f"2^{int(k)}" if k == int(k) else f"{v:g}"


def _ddp_observed(rank: int, world_size: int, step, dtype_name: str, inf_rank, seed: int) -> dict:
    """Runs the lesson's ``step`` under the op log and reads what it left: the dtypes, what the all-reduce carried,
    the scaler's decision; then the same step (no overflow) with the fp32 all-reduce and with bf16_compress_hook."""
    dtype = _DTYPES[dtype_name]
    log = _OpLog()
    with log:
        model, scaler = step(rank, world_size, _batches(world_size, seed, inf_rank), dtype)
    initial = tiny_mlp()
    params = dict(model.module.named_parameters())
    grads = torch.cat([p.grad.flatten() for p in params.values()])
    stepped = any(not torch.equal(p.detach(), q) for p, q in zip(params.values(), initial.parameters()))
    everyone = [None] * world_size
    dist.all_gather_object(everyone, grads)
    equal = all(torch.allclose(everyone[0], g, rtol=0, atol=0, equal_nan=True) for g in everyone)
    reduces = log.find("allreduce")

    refused = ""
    try:  # DDP refuses the hook by name on a build without CUDA/ROCm and NCCL >= 2.10 (or XPU and XCCL)
        DistributedDataParallel(tiny_mlp()).register_comm_hook(None, bf16_compress_hook)
    except TypeError as e:
        refused = str(e)

    def bf16_hook_on_gloo(state, bucket):  # the same function, called under another name: gloo sums bf16
        return bf16_compress_hook(state, bucket)

    pair = []
    for comm in (allreduce_hook, bf16_hook_on_gloo):
        m, _ = step(rank, world_size, _batches(world_size, seed), dtype, comm)
        pair.append(torch.cat([p.grad.flatten() for p in m.parameters()]))
    return {
        "params": {n: _name(p.dtype) for n, p in params.items()},
        "acts": [o["out"] for o in log.find("addmm")],
        "grads": {n: _name(p.grad.dtype) for n, p in params.items()},
        "buckets": [o["dtypes"][0] for o in reduces],
        "local_finite": all(o["finite"] for o in reduces),
        "reduced_finite": bool(torch.isfinite(grads).all()),
        "scale_after": scaler.get_scale(),
        "stepped": stepped,
        "equal": equal,
        "rel": float((pair[1] - pair[0]).norm() / pair[0].norm()),
        "hook_grad_dtype": _name(pair[1].dtype),
        "refused": refused,
    }


def observe_ddp_step(
    step, world_size: int = 2, dtype: str = "fp16", inf_rank: int | None = 1, seed: int = 0, *, timeout: float = 60.0
) -> DdpStep:
    """Runs the lesson's DDP step ``step(rank, world_size, batches, dtype, comm_hook=None) -> (model, scaler)``
    (``key_code.ddp_amp_step``) on ``world_size`` real gloo ranks, each on its own batch, under an op log that sees
    every matmul and what each rank's all-reduce carries. On rank ``inf_rank`` (None: none) one input value is
    beyond fp16's range, so that rank's fp16 forward overflows. Then the same step (no overflow) reduced by the default
    fp32 all-reduce and by ``bf16_compress_hook``; their relative difference is returned."""
    step = _check_step(step, "DDP")
    world_size = _check_world_size(world_size)
    if world_size < 2:
        raise ValueError(f"world_size={world_size!r} is not allowed: DDP needs at least 2 ranks to show anything")
    if dtype not in ("fp16", "bf16"):
        raise ValueError(f"dtype={dtype!r} is not allowed: use 'fp16' or 'bf16'")
    if inf_rank is not None:
        inf_rank = int_at_least(inf_rank, "inf_rank", 0)
        if inf_rank >= world_size:
            raise ValueError(f"inf_rank={inf_rank!r} is not allowed: it must be a rank below world_size={world_size}")
    seed = _validate.seed(seed)
    rs = run_group(_ddp_observed, world_size, (step, dtype, inf_rank, seed), timeout=timeout)
    return DdpStep(
        world_size=world_size,
        autocast_dtype=_name(_DTYPES[dtype]),
        param_dtypes=[r["params"] for r in rs],
        activation_dtypes=[r["acts"] for r in rs],
        grad_dtypes=[r["grads"] for r in rs],
        bucket_dtypes=[r["buckets"] for r in rs],
        local_grad_finite=[r["local_finite"] for r in rs],
        reduced_grad_finite=[r["reduced_finite"] for r in rs],
        scale_after=[r["scale_after"] for r in rs],
        stepped=[r["stepped"] for r in rs],
        grads_equal_across_ranks=all(r["equal"] for r in rs),
        bf16_hook_rel_error=max(r["rel"] for r in rs),
        bf16_hook_grad_dtypes=[r["hook_grad_dtype"] for r in rs],
        inf_rank=inf_rank,
        bf16_hook_refused=rs[0]["refused"],
    )


@dataclass(frozen=True)
class BuildCheck:
    """What DDP's ``register_comm_hook`` checks before it accepts ``bf16_compress_hook`` (by the hook's name), read
    from the installed torch: a CUDA or ROCm build with NCCL 2.10 or newer, or an XPU with XCCL. It is a check on the
    *build*, not on the process group: a CUDA build accepts the hook for a gloo group of CPU processes too."""

    gpu_build: str  # "CUDA 12.8", "ROCm 6.2", or "" for a CPU-only build
    nccl: str  # NCCL version compiled in ("2.27.3"), or "" if none
    xpu_xccl: bool

    @property
    def accepts(self) -> bool:
        nccl = tuple(int(v) for v in self.nccl.split(".")[:2]) if self.nccl else ()
        return (bool(self.gpu_build) and nccl >= (2, 10)) or self.xpu_xccl

    @classmethod
    def of_this_torch(cls) -> BuildCheck:
        gpu = f"CUDA {torch.version.cuda}" if torch.version.cuda else ""
        hip = getattr(torch.version, "hip", None)
        gpu = gpu or (f"ROCm {hip}" if hip else "")
        nccl = ""
        if dist.is_available() and dist.is_nccl_available():
            try:
                v = torch.cuda.nccl.version()
                nccl = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
            except (RuntimeError, AttributeError):
                nccl = ""
        xccl = getattr(dist, "is_xccl_available", None)
        xpu = bool(xccl is not None and xccl() and hasattr(torch, "xpu") and torch.xpu.is_available())
        return cls(gpu, nccl, xpu)

    def __str__(self) -> str:
        build = self.gpu_build or "CPU-only build"
        nccl = f"NCCL {self.nccl}" if self.nccl else "no NCCL"
        verdict = "accepts" if self.accepts else "refuses"
        return f"this torch: {build}, {nccl}: DDP {verdict} bf16_compress_hook"


def ddp_bf16_hook_build_check() -> BuildCheck:
    """The condition under which DDP accepts ``bf16_compress_hook``, evaluated on the installed torch (see
    :class:`BuildCheck`; the check is in ``torch/nn/parallel/distributed.py``, ``_check_comm_hook``)."""
    return BuildCheck.of_this_torch()


# --- FSDP2 with MixedPrecisionPolicy ---------------------------------------------------------------------


@dataclass
class FsdpStages:
    """The dtype at each stage of one FSDP2 training step, per ``reduce_dtype`` (keys "float32", "bfloat16"):
    ``stages[reduce_dtype]`` is a list of (stage, dtype, detail) rows, read on rank 0."""

    world_size: int
    param_dtype: str
    stages: dict[str, list[tuple[str, str, str]]]
    grad_error: dict[str, float]  # relative error of the sharded fp32 gradient against an fp64 reference

    def table(self, reduce_dtype: str) -> str:
        rows = self.stages[reduce_dtype]
        width = max(len(r[0]) for r in rows)
        return "\n".join(f"{stage:<{width}}  {dtype:9} {detail}" for stage, dtype, detail in rows)


def _stages_from(log: _OpLog, model) -> list[tuple[str, str, str]]:
    gathers = log.find("allgather_base", "all_gather_into_tensor")
    mms = log.find("addmm", "mm")
    forward = log.find("addmm")
    scatters = log.find("reduce_scatter_base", "reduce_scatter_tensor")
    w = model[0].weight
    return [
        (
            "sharded parameter (optimizer's copy)",
            _name(w.dtype),
            f"local shard {tuple(_local(w).shape)} of {tuple(w.shape)}",
        ),
        ("all-gathered parameter", _one(o["dtypes"][0] for o in gathers), f"{len(gathers)} all-gather"),
        (
            "matmul operands",
            _one(d for o in mms for d in o["dtypes"]),
            f"{len(forward)} forward, {len(mms) - len(forward)} backward matmuls",
        ),
        ("module output", forward[-1]["out"] if forward else "-", "output_dtype=None: the compute dtype"),
        ("gradient reduce-scatter", _one(o["dtypes"][0] for o in scatters), "the reduce_dtype"),
        ("sharded gradient", _name(w.grad.dtype), f"local shard {tuple(_local(w.grad).shape)}"),
    ]


def _fsdp_observed(rank: int, world_size: int, step, param_name: str, seed: int) -> dict:
    stages, errors = {}, {}
    batches = _batches(world_size, seed)
    for reduce_dtype in (torch.float32, torch.bfloat16):
        log = _OpLog()
        with log:
            model = step(rank, world_size, batches, _DTYPES[param_name], reduce_dtype)
        stages[_name(reduce_dtype)] = _stages_from(log, model)
        # the exact gradient of the mean loss over all ranks' batches, in fp64, for the bf16 computation
        reference = tiny_mlp().double()
        sum(reference(x.double()).square().mean() for x in batches).backward()
        want = torch.cat([p.grad.flatten() / world_size for p in reference.parameters()])
        got = [p.grad.full_tensor().double().flatten() for p in model.parameters()]
        errors[_name(reduce_dtype)] = float((torch.cat(got) - want).norm() / want.norm())
    return {"stages": stages, "errors": errors}


def observe_fsdp_step(
    step, world_size: int = 2, param_dtype: str = "bf16", seed: int = 0, *, timeout: float = 60.0
) -> FsdpStages:
    """Runs the lesson's FSDP2 step ``step(rank, world_size, batches, param_dtype, reduce_dtype) -> model``
    (``key_code.fsdp_step``: ``fully_shard`` with a ``MixedPrecisionPolicy``) on ``world_size`` real gloo ranks,
    for reduce_dtype float32 then bfloat16. The stages are read from the operations the step dispatches (an op log
    sees the all-gathers, every forward and backward matmul and the reduce-scatters with their dtypes). The
    gradient error is against the fp64 gradient of the same loss (the low-precision compute included)."""
    step = _check_step(step, "FSDP2")
    world_size = _check_world_size(world_size)
    if param_dtype not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"param_dtype={param_dtype!r} is not allowed: use 'bf16', 'fp16' or 'fp32'")
    seed = _validate.seed(seed)
    rs = run_group(_fsdp_observed, world_size, (step, param_dtype, seed), timeout=timeout)
    return FsdpStages(world_size, _name(_DTYPES[param_dtype]), rs[0]["stages"], rs[0]["errors"])


def _fp16_step_observed(rank: int, world_size: int, fn, seed: int, overflow_rank: int) -> dict:
    """In each worker: the learner's ``fn(rank, world_size, batches) -> (model, scaler)`` on finite batches, then on
    batches where rank ``overflow_rank``'s input overflows fp16, under the op log; what each step dispatched and left behind."""
    out = {}
    warnings.filterwarnings("ignore", message=_DTENSOR_FOUND_INF_WARNING, category=UserWarning)
    for case, overflow in (("finite", None), ("overflow", overflow_rank)):
        batches = _batches(world_size, seed, overflow)
        log = _OpLog()
        with log:
            got = fn(rank, world_size, batches)
        if is_placeholder(got):
            return {"placeholder": True}
        if not (isinstance(got, tuple) and len(got) == 2 and isinstance(got[0], torch.nn.Module)):
            return {"bad_return": type(got).__name__ if not isinstance(got, tuple) else f"a tuple of {len(got)}"}
        model, scaler = got
        params = list(model.parameters())
        sharded = all(isinstance(p, DTensor) for p in params)
        initial = list(tiny_mlp().parameters())
        full = [p.full_tensor() if isinstance(p, DTensor) else p for p in params]
        grads = [p.grad.full_tensor() if isinstance(p.grad, DTensor) else p.grad for p in params]
        if len(full) != len(initial) or any(f.shape != q.shape for f, q in zip(full, initial)):
            return {"bad_return": "a model that is not tiny_mlp()"}
        stepped = any(not torch.equal(f.detach().float(), q) for f, q in zip(full, initial))
        ratio = err = math.nan
        if all(g is not None for g in grads) and overflow is None:
            reference = tiny_mlp().double()
            sum(reference(x.double()).square().mean() for x in batches).backward()
            want = torch.cat([q.grad.flatten() / world_size for q in reference.parameters()])
            g = torch.cat([t.detach().double().flatten() for t in grads])
            ratio = float(g.norm() / want.norm())
            err = float((g - want).norm() / want.norm())
        get_scale = getattr(scaler, "get_scale", None)
        out[case] = {
            "sharded": sharded,
            "gather": sorted({o["dtypes"][0] for o in log.find("allgather_base", "all_gather_into_tensor")}),
            "scatter": sorted({o["dtypes"][0] for o in log.find("reduce_scatter_base", "reduce_scatter_tensor")}),
            "scaler": type(scaler).__name__,
            "scale": float(get_scale()) if callable(get_scale) else None,
            "stepped": stepped,
            "has_grads": all(g is not None for g in grads),
            "ratio": ratio,
            "err": err,
        }
    return out


def observe_fp16_fsdp_step(
    fn, world_size: int = 2, seed: int = 0, *, overflow_rank: int = 1, timeout: float = 120.0
) -> list[dict]:
    """Runs a learner's fp16 FSDP2 step ``fn(rank, world_size, batches) -> (model, scaler)`` of ``tiny_mlp()`` on
    ``world_size`` real gloo ranks, once with finite batches and once with rank ``overflow_rank``'s input beyond fp16's
    range, under the op log. Per rank: ``{"placeholder": True}`` (it returned ``...``), ``{"bad_return": ...}``, or
    per case ("finite", "overflow") whether the parameters are sharded, the all-gather and reduce-scatter dtypes, the
    scaler's type and scale after the step, whether the parameters changed, and (finite case) the norm ratio and
    relative error of the gradients against the fp64 gradient of the loss ``model(x).float().square().mean()``."""
    if not callable(fn):
        raise TypeError(f"fn must be a function fn(rank, world_size, batches), got {type(fn).__name__}")
    world_size = _check_world_size(world_size)
    if world_size < 2:
        raise ValueError(f"world_size={world_size!r} is not allowed: the step needs at least 2 ranks")
    overflow_rank = int_at_least(overflow_rank, "overflow_rank", 0)
    if overflow_rank >= world_size:
        raise ValueError(f"overflow_rank={overflow_rank!r} is not allowed: a rank below world_size={world_size}")
    seed = _validate.seed(seed)
    return run_group(_fp16_step_observed, world_size, (fn, seed, overflow_rank), timeout=timeout)


@dataclass(frozen=True)
class ScalerOutcome:
    """What one gradient scaler class did on one rank in :func:`fsdp_inf_sync`: ``scaler`` the class's name
    (``"ShardedGradScaler"`` or ``"GradScaler"``), ``local_shard_finite`` whether this rank's gradient shard was
    finite, ``grad_type`` the gradient's type (``"DTensor"`` under FSDP2), ``scale_after`` the scale after
    ``update()``, ``stepped`` whether ``optimizer.step()`` changed this rank's parameters."""

    rank: int
    scaler: str
    local_shard_finite: bool
    grad_type: str
    scale_after: float
    stepped: bool


def _cpu_mesh(world_size: int):
    """The group's ranks as a device mesh on the CPU: they are CPU processes. Left out, ``fully_shard`` puts its
    mesh on the machine's accelerator where there is one (CUDA, MPS), which these gloo ranks do not use."""
    return init_device_mesh("cpu", (world_size,))


def _inf_sync_rank(rank: int, world_size: int, inf_rank: int, seed: int) -> dict[str, ScalerOutcome]:
    out_rows = {}
    warnings.filterwarnings("ignore", message=_DTENSOR_FOUND_INF_WARNING, category=UserWarning)
    for cls in (ShardedGradScaler, torch.amp.GradScaler):
        torch.manual_seed(seed)
        model = nn.Linear(16, 2 * world_size)  # two output rows per rank: rank 0 owns rows 0 and 1
        policy = MixedPrecisionPolicy(param_dtype=torch.float16, reduce_dtype=torch.float32)
        fully_shard(model, mesh=_cpu_mesh(world_size), mp_policy=policy)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = cls("cpu")
        out = model(_batch(rank, seed))
        if rank == inf_rank:  # an inf in output column 0: row 0 of this rank's weight gradient, owned by rank 0
            out.register_hook(lambda g: g.index_fill(1, torch.tensor([0]), math.inf))
        scaler.scale(out.float().square().mean()).backward()
        local = [_local(p.grad) for p in model.parameters()]
        before = [_local(p).detach().clone() for p in model.parameters()]
        scaler.step(opt)
        scaler.update()
        out_rows[cls.__name__] = ScalerOutcome(
            rank=rank,
            scaler=cls.__name__,
            local_shard_finite=all(bool(torch.isfinite(t).all()) for t in local),
            grad_type=type(model.weight.grad).__name__,
            scale_after=scaler.get_scale(),
            stepped=any(not torch.equal(b, _local(p).detach()) for b, p in zip(before, model.parameters())),
        )
    return out_rows


def fsdp_inf_sync(
    world_size: int = 2, inf_rank: int = 1, seed: int = 0, *, timeout: float = 60.0
) -> list[dict[str, ScalerOutcome]]:
    """fp16 FSDP2 (``param_dtype=float16``, ``reduce_dtype=float32``) on one Linear layer: rank ``inf_rank``
    puts an inf in one output column's gradient; reduce-scatter delivers it to the rank that owns that
    row (rank 0), so the other ranks' gradient shards are finite. One entry per rank: the :class:`ScalerOutcome`
    of each scaler class by its name ("ShardedGradScaler", "GradScaler"): whether its local shard is finite, the
    scale after ``update()``, whether the optimizer stepped."""
    world_size = _check_world_size(world_size)
    if world_size < 2:
        raise ValueError(f"world_size={world_size!r} is not allowed: the demo needs at least 2 ranks")
    inf_rank = int_at_least(inf_rank, "inf_rank", 0)
    if inf_rank >= world_size:
        raise ValueError(f"inf_rank={inf_rank!r} is not allowed: it must be a rank below world_size={world_size}")
    seed = _validate.seed(seed)
    return run_group(_inf_sync_rank, world_size, (inf_rank, seed), timeout=timeout)


# --- bytes per parameter -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryRow:
    """Bytes per parameter one rank holds under one setting, by component, counted from the storages of the
    tensors the training step keeps (parameters, ``.grad``, Adam's ``exp_avg`` and ``exp_avg_sq``) and divided
    by the model's parameter count. ``expected`` is the arithmetic (bytes of each dtype, divided by the ranks
    that share them)."""

    setting: str
    world_size: int
    params: float
    grads: float
    optimizer: float
    expected: float

    @property
    def total(self) -> float:
        return self.params + self.grads + self.optimizer


def _storage_bytes(tensors) -> int:
    seen, total = set(), 0
    for t in tensors:
        s = _local(t).untyped_storage()
        if s.data_ptr() not in seen:
            seen.add(s.data_ptr())
            total += s.nbytes()
    return total


MEMORY_SETTINGS = {
    # name: (how the model is wrapped, dtype of the model, autocast dtype, expected bytes per parameter)
    "fp32": ("ddp", torch.float32, None, lambda n: 4 + 4 + 8),
    "AMP (bf16 autocast)": ("ddp", torch.float32, torch.bfloat16, lambda n: 4 + 4 + 8),
    "bf16-true": ("ddp", torch.bfloat16, None, lambda n: 2 + 2 + 4),
    "FSDP fp32": ("fsdp", torch.float32, None, lambda n: 16 / n),
    "FSDP + MixedPrecisionPolicy(bf16)": ("fsdp-mp", torch.float32, None, lambda n: 16 / n),
    "FSDP bf16-true": ("fsdp", torch.bfloat16, None, lambda n: 8 / n),
}


def _memory_rank(rank: int, world_size: int, width: int, seed: int) -> list[dict]:
    rows = []
    for setting, (wrap, dtype, autocast, _) in MEMORY_SETTINGS.items():
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width)).to(dtype)
        n_params = sum(p.numel() for p in model.parameters())
        if wrap == "ddp":
            # the .grad tensors are views of DDP's flat buckets; with the default (False) the reducer keeps the buckets
            # as a second copy of every gradient, 4 more bytes per fp32 parameter that these counts would not see
            model = DistributedDataParallel(model, gradient_as_bucket_view=True)
        else:
            policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16) if wrap == "fsdp-mp" else MixedPrecisionPolicy()
            mesh = _cpu_mesh(world_size)
            for layer in (model[0], model[2]):
                fully_shard(layer, mesh=mesh, mp_policy=policy)
            fully_shard(model, mesh=mesh, mp_policy=policy)
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        x = _batch(rank, seed, rows=4, cols=width).to(dtype)
        with torch.autocast("cpu", dtype=autocast or torch.bfloat16, enabled=autocast is not None):
            out = model(x)
        out.float().square().mean().backward()
        opt.step()
        params = list(model.parameters())
        if wrap == "ddp" and len({p.grad.untyped_storage().data_ptr() for p in params}) != 1:
            # without bucket views every .grad has its own storage, and the reducer's buckets hold a second copy
            # that the counts below would miss (the model is far below DDP's 25 MiB bucket: one bucket)
            raise RuntimeError("DDP's gradients are not views of one bucket: the grads column would be wrong")
        states = [v for st in opt.state.values() for k, v in st.items() if k in ("exp_avg", "exp_avg_sq")]
        rows.append(
            {
                "setting": setting,
                "params": _storage_bytes(params) / n_params,
                "grads": _storage_bytes([p.grad for p in params]) / n_params,
                "optimizer": _storage_bytes(states) / n_params,
            }
        )
    return rows


def bytes_per_parameter(
    world_size: int = 2, width: int = 64, seed: int = 0, *, timeout: float = 60.0
) -> list[MemoryRow]:
    """Measured on ``world_size`` real gloo ranks: the bytes per parameter rank 0 holds after one Adam step of a
    two-layer MLP (``width`` x ``width``, twice) under each of :data:`MEMORY_SETTINGS` (DDP replicates; FSDP2
    shards every layer and the root). ``width`` must be a multiple of ``world_size`` so that no shard is padded."""
    world_size = _check_world_size(world_size)
    width = int_at_least(width, "width", 1)
    if width % world_size or width > 1024:
        raise ValueError(f"width={width!r} is not allowed: a multiple of world_size={world_size}, at most 1024")
    seed = _validate.seed(seed)
    rs = run_group(_memory_rank, world_size, (width, seed), timeout=timeout)
    return [
        MemoryRow(
            r["setting"],
            world_size,
            r["params"],
            r["grads"],
            r["optimizer"],
            MEMORY_SETTINGS[r["setting"]][3](world_size),
        )
        for r in rs[0]
    ]


# --- the precision of gradient reduction ------------------------------------------------------------------------


def _check_grads(grads) -> torch.Tensor:
    if not isinstance(grads, torch.Tensor) or grads.dim() != 2 or not grads.is_floating_point():
        raise TypeError("grads must be a 2-d floating-point tensor: one row per rank")
    if not 1 <= grads.shape[0] <= MAX_EMULATED_WORLD_SIZE:
        raise ValueError(f"grads has {grads.shape[0]} rows (ranks): 1 to {MAX_EMULATED_WORLD_SIZE} are allowed")
    return grads.float()


def _round(x: torch.Tensor, fmt: str) -> torch.Tensor:
    return x if fmt == "fp32" else quantize(x, fmt)


def ring_sum(grads: torch.Tensor, fmt: str = "bf16", start: int = 0) -> torch.Tensor:
    """The sum of the rows of ``grads`` (one per rank) accumulated one rank after another from rank ``start``
    around the ring, the running sum rounded to ``fmt`` ("bf16", "fp16" or "fp32") after every add, as a ring
    reduce-scatter accumulates a chunk hop by hop in the communication dtype. Each add is an fp32 add of two
    ``fmt`` values then one rounding (what gloo's bf16 sum computes). Returned as float32."""
    g = _check_grads(grads)
    if fmt not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"fmt={fmt!r} is not allowed: use 'bf16', 'fp16' or 'fp32'")
    n = g.shape[0]
    start = int_at_least(start, "start", 0)
    if start >= n:
        raise ValueError(f"start={start} is not allowed: it must be a rank, from 0 to {n - 1} (grads has {n} rows)")
    g = _round(g, fmt)
    acc = g[start].clone()
    for i in range(1, n):
        acc = _round(acc + g[(start + i) % n], fmt)
    return acc


def pairwise_sum(grads: torch.Tensor, fmt: str = "bf16") -> torch.Tensor:
    """The sum of the rows of ``grads`` by a binary tree (rank pairs, then pairs of pairs), rounded to ``fmt``
    after every add: the order of a tree all-reduce or recursive halving. Returned as float32."""
    g = _check_grads(grads)
    if fmt not in ("bf16", "fp16", "fp32"):
        raise ValueError(f"fmt={fmt!r} is not allowed: use 'bf16', 'fp16' or 'fp32'")
    level = _round(g, fmt)
    while level.shape[0] > 1:
        if level.shape[0] % 2:
            level = torch.cat([_round(level[:-2:2] + level[1:-1:2], fmt), level[-1:]])
        else:
            level = _round(level[0::2] + level[1::2], fmt)
    return level[0]


@dataclass
class ReductionError:
    """Normwise relative error ||sum - exact|| / ||exact|| of each reduction method at each world size
    (EMULATED in one process; ``exact`` is the fp64 sum of the same bf16 gradients)."""

    world_sizes: list[int]
    errors: dict[str, list[float]]  # method -> error per world size
    elements: int

    def at(self, method: str, world_size: int) -> float:
        return self.errors[method][self.world_sizes.index(world_size)]


REDUCTION_METHODS = ("bf16 ring", "bf16 pairwise", "fp32 ring")


def reduction_error(world_sizes=(2, 8, 64, 512, 4096), elements: int = 256, seed: int = 0) -> ReductionError:
    """For each N of ``world_sizes``: N ranks' gradients (each N(0, 1) per element, rounded to bf16 as a bf16
    backward produces them; ``elements`` per rank) summed in bf16 in ring order, in bf16 pairwise, and in fp32
    in ring order; the normwise error against the exact (fp64) sum. Emulated: one row per rank."""
    sizes = sorted(
        {_check_world_size(n, MAX_EMULATED_WORLD_SIZE) for n in sequence(world_sizes, "world_sizes", "ints")}
    )
    if not sizes or any(n < 2 for n in sizes):
        raise ValueError(f"world_sizes={world_sizes!r} is not allowed: give world sizes of at least 2")
    elements = int_at_least(elements, "elements", 1)
    if elements * sizes[-1] > 2**24:
        raise ValueError(f"elements * world size = {elements * sizes[-1]} is too large here (at most 2**24 values)")
    seed = _validate.seed(seed)
    errors: dict[str, list[float]] = {m: [] for m in REDUCTION_METHODS}
    gen = torch.Generator().manual_seed(seed)
    for n in sizes:
        grads = quantize(torch.randn(n, elements, generator=gen), "bf16")
        exact = grads.double().sum(0)
        for method, got in (
            ("bf16 ring", ring_sum(grads, "bf16")),
            ("bf16 pairwise", pairwise_sum(grads, "bf16")),
            ("fp32 ring", ring_sum(grads, "fp32")),
        ):
            errors[method].append(float((got.double() - exact).norm() / exact.norm()))
    return ReductionError(sizes, errors, elements)


REDUCTION_FORMATS = ("bf16", "fp16", "fp32")
REDUCTION_ORDERS = ("ring", "pairwise")


@dataclass(frozen=True)
class ReductionSweep:
    """The sum of the first N ranks' gradients, for every power of two N in ``world_sizes``, taken in ``fmt``
    ("bf16", "fp16" or "fp32") in ``order`` ("ring" or "pairwise"): the gradients (fp32, N(0, ``scale``^2) per
    element, ``elements`` per rank) are cast to ``fmt`` as a communication hook would, then summed with a rounding
    to ``fmt`` after every add. ``errors[i]``: the normwise relative error against the exact (fp64) sum of the fp32
    gradients, inf where the sum overflowed (``overflowed[i]``); ``flushed``: the share of gradient values the cast
    to ``fmt`` flushed to zero. EMULATED in one process (one row per rank)."""

    world_sizes: tuple[int, ...]
    fmt: str
    order: str
    scale: float
    elements: int
    errors: tuple[float, ...]
    overflowed: tuple[bool, ...]
    flushed: float

    def at(self, world_size: int) -> float:
        if world_size not in self.world_sizes:
            raise ValueError(f"world_size={world_size!r} was not swept: one of {list(self.world_sizes)}")
        return self.errors[self.world_sizes.index(world_size)]


def reduction_sweep(
    fmt: str = "bf16", order: str = "ring", scale: float = 1.0, *, max_world_size: int = 4096, elements: int = 64,
    seed: int = 0,
) -> ReductionSweep:  # fmt: skip
    """:class:`ReductionSweep` of ``fmt`` and ``order`` for N = 2, 4, ..., ``max_world_size`` (a power of two, at
    most 4096). The ring sums of all N come from one pass over the ranks (the ring sum of the first N ranks is the
    running sum after N - 1 adds, as :func:`ring_sum` from rank 0 computes it); the pairwise ones from
    :func:`pairwise_sum`. ``scale`` (from 1e-12 to 1e6) sets the gradients' magnitude, so that fp16's range shows:
    small gradients flush to zero, large sums overflow."""
    if fmt not in REDUCTION_FORMATS:
        raise ValueError(f"fmt={fmt!r} is not allowed: use one of {', '.join(map(repr, REDUCTION_FORMATS))}")
    if order not in REDUCTION_ORDERS:
        raise ValueError(f"order={order!r} is not allowed: use one of {', '.join(map(repr, REDUCTION_ORDERS))}")
    scale = positive(scale, "scale")
    if not 1e-12 <= scale <= 1e6:
        raise ValueError(f"scale={scale!r} is not allowed: the gradients' magnitude, from 1e-12 to 1e6")
    max_world_size = int_at_least(max_world_size, "max_world_size", 2)
    if max_world_size > 4096 or max_world_size & (max_world_size - 1):
        raise ValueError(f"max_world_size={max_world_size!r} is not allowed: a power of two from 2 to 4096")
    elements = int_at_least(elements, "elements", 1)
    if elements > 1024:
        raise ValueError(f"elements={elements!r} is not allowed: 1 to 1024 values per rank")
    seed = _validate.seed(seed)
    g = torch.randn(max_world_size, elements, generator=torch.Generator().manual_seed(seed)) * scale
    sent = _round(g, fmt)  # each rank's gradient in the communication dtype
    flushed = float(((sent == 0) & (g != 0)).float().mean())
    sizes = tuple(2**k for k in range(1, max_world_size.bit_length()))
    exact = g.double().cumsum(0)
    sums = {}
    if order == "ring":
        acc = sent[0].clone()
        for i in range(1, max_world_size):
            acc = _round(acc + sent[i], fmt)
            if i + 1 in sizes:
                sums[i + 1] = acc
    else:
        sums = {n: pairwise_sum(sent[:n], fmt) for n in sizes}
    errors, overflowed = [], []
    for n in sizes:
        got, want = sums[n], exact[n - 1]
        over = not bool(torch.isfinite(got).all())
        overflowed.append(over)
        errors.append(math.inf if over else float((got.double() - want).norm() / want.norm()))
    return ReductionSweep(sizes, fmt, order, float(scale), elements, tuple(errors), tuple(overflowed), flushed)


def _allreduce_rank(rank: int, world_size: int, elements: int, seed: int) -> dict:
    grads = quantize(torch.randn(world_size, elements, generator=torch.Generator().manual_seed(seed)), "bf16")
    out = {}
    for fmt, dtype in (("bf16", torch.bfloat16), ("fp32", torch.float32)):
        t = grads[rank].to(dtype, copy=True)
        dist.all_reduce(t)
        out[fmt] = t.float()
    return {"grads": grads, **out}


@dataclass(frozen=True)
class AllreduceCheck:
    """What the real gloo ``all_reduce`` of :func:`gloo_allreduce_check` gave in one format ``fmt``:
    ``ranks_agree`` whether all ranks got the same result, ``matching_some_ring_order`` the fraction of elements
    equal bit for bit to :func:`ring_sum` from some starting rank in some direction, ``gloo_error`` and
    ``emulated_error`` the normwise errors of gloo and of the emulated ring from rank 0 against the exact sum."""

    fmt: str
    ranks_agree: bool
    matching_some_ring_order: float
    gloo_error: float
    emulated_error: float


def gloo_allreduce_check(
    world_size: int = 2, elements: int = 256, seed: int = 0, *, timeout: float = 60.0
) -> dict[str, AllreduceCheck]:
    """The real gloo ``all_reduce`` (bf16 and fp32) of ``world_size`` ranks' bf16-representable gradients,
    against the emulation: per format, the fraction of elements equal bit for bit to :func:`ring_sum` from
    some starting rank in some direction (gloo splits the tensor in chunks, each reduced along the ring from a
    different rank), whether all ranks got the same result, and the normwise errors of gloo and of the
    emulated ring from rank 0 against the exact sum: format name ("bf16", "fp32") -> its :class:`AllreduceCheck`."""
    world_size = _check_world_size(world_size)
    if world_size < 2:
        raise ValueError(f"world_size={world_size!r} is not allowed: a reduction needs at least 2 ranks")
    elements = int_at_least(elements, "elements", 1)
    if elements > 2**16:
        raise ValueError(f"elements={elements!r} is not allowed: at most {2**16}")
    seed = _validate.seed(seed)
    rs = run_group(_allreduce_rank, world_size, (elements, seed), timeout=timeout)
    grads = rs[0]["grads"]
    exact = grads.double().sum(0)
    report = {}
    for fmt in ("bf16", "fp32"):
        got = rs[0][fmt]
        orders = []
        for start in range(world_size):
            orders.append(ring_sum(grads, fmt, start))
            orders.append(ring_sum(grads.flip(0), fmt, world_size - 1 - start))
        match = torch.zeros(elements, dtype=torch.bool)
        for o in orders:
            match |= o == got
        report[fmt] = AllreduceCheck(
            fmt=fmt,
            ranks_agree=all(torch.equal(r[fmt], got) for r in rs),
            matching_some_ring_order=float(match.float().mean()),
            gloo_error=float((got.double() - exact).norm() / exact.norm()),
            emulated_error=float((orders[0].double() - exact).norm() / exact.norm()),
        )
    return report
