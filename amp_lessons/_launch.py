"""The process launcher: :func:`run_group` runs a function on a small real gloo process group of CPU processes,
stops every worker on a failure, a timeout or an interrupt, and reports the rank that failed first."""

from __future__ import annotations

import contextlib
import datetime
import functools
import importlib
import inspect
import multiprocessing
import os
import pickle
import signal
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path

import torch
import torch.distributed as dist

from ._validate import int_at_least, positive

__all__ = [
    "MAX_WORLD_SIZE", "START_METHODS", "ForkUnsafe", "GroupTimeout", "GroupUnavailable", "WorkerError",
    "check_world_size", "fork_runs_backward", "loopback_interface", "run_group"
]  # fmt: skip

MAX_WORLD_SIZE = 8  # real processes: each one is a Python interpreter with torch (about 300 MB)
MAX_TIMEOUT_S = 600.0
# gloo's errors when the loopback interface has no address (it is down, as in a fresh network namespace)
_NO_LOOPBACK = ("Unable to find address for", "Unable to find interface for")


class WorkerError(RuntimeError):
    """A worker of :func:`run_group` raised or died; ``rank`` is the first that failed, ``detail`` its
    traceback (or exit status) and the tail of its log."""

    def __init__(self, rank: int, detail: str):
        super().__init__(f"rank {rank} of the process group failed; every worker was stopped.\n{detail}")
        self.rank = rank
        self.detail = detail


class GroupTimeout(TimeoutError):
    """:func:`run_group` ran past its timeout; every worker was stopped. ``ranks``: those whose ``fn`` had not returned."""

    ranks: list[int] = []


class GroupUnavailable(RuntimeError):
    """No process group can start here (no loopback interface that is up)."""


class ForkUnsafe(GroupUnavailable):
    """torch refused a backward pass in a forked worker (:func:`fork_runs_backward`)."""


def _backward_and_exit() -> None:
    try:
        torch.ones(1, requires_grad=True).sum().backward()
    except BaseException:  # noqa: BLE001 - any failure means: not safe
        os._exit(1)
    os._exit(0)


def fork_runs_backward() -> bool:
    """Whether a process forked from this one can run a backward pass: a forked child tries one and says. Once
    autograd has started its device threads, torch refuses backward in a forked child
    (https://github.com/pytorch/pytorch/wiki/Autograd-and-Fork)."""
    if "fork" not in multiprocessing.get_all_start_methods():
        return False
    with _fork_warning_off():
        p = multiprocessing.get_context("fork").Process(target=_backward_and_exit, daemon=True)
        p.start()
    p.join(60)
    if p.exitcode is None:
        _stop([p])
    return p.exitcode == 0


@contextlib.contextmanager
def _fork_warning_off():
    """Python's DeprecationWarning that fork() in a threaded process may deadlock, silenced."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=r".*use of fork\(\) may lead to deadlocks", category=DeprecationWarning
        )
        yield


def loopback_interface() -> tuple[str | None, bool | None]:
    """``(name, up)`` of the loopback interface, from ``/sys/class/net`` on Linux; elsewhere ``("lo0", None)``."""
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


def check_world_size(world_size, limit: int = MAX_WORLD_SIZE) -> int:
    n = int_at_least(world_size, "world_size", 1)
    if n > limit:
        raise ValueError(f"world_size={world_size!r} is not allowed: at most {limit} here")
    return n


def _worker(fn, rank: int, world_size: int, args: tuple, workdir: str, timeout: float, ifname: str | None):
    """One rank: log to a file, one thread, join the gloo group, run ``fn``, wait for every rank, leave."""
    log = open(os.path.join(workdir, f"rank{rank}.log"), "w", buffering=1)  # noqa: SIM115 - lives until exit
    os.dup2(log.fileno(), 1)  # C++ (gloo) logs go to the file too, not into the notebook's kernel
    os.dup2(log.fileno(), 2)
    sys.stdout = sys.stderr = log
    out = os.path.join(workdir, f"rank{rank}.pkl")
    try:
        torch.set_num_threads(1)
        if torch.cuda._is_in_bad_fork():  # CPU code that asks for CUDA (Adam.step) must not touch it here
            torch.cuda.is_available = lambda: False
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
            dist.barrier()  # no rank closes its sockets while a peer is still connecting
            dist.destroy_process_group()
    except BaseException:  # noqa: BLE001 - every failure goes back to the parent as text
        result = ("error", traceback.format_exc(), time.monotonic())
    with open(out + ".tmp", "wb") as f:
        pickle.dump(result, f)
    os.replace(out + ".tmp", out)
    log.flush()
    if result[0] != "ok":
        os._exit(1)
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
    """Whether a spawned worker can import ``f`` by its module path (not ``__main__``, a lambda or a nested function)."""
    where, qualname = getattr(f, "__module__", None), getattr(f, "__qualname__", None)
    if where in (None, "__main__") or not qualname or "<" in qualname or where not in sys.modules:
        return False
    obj = sys.modules[where]
    for part in qualname.split("."):
        obj = getattr(obj, part, None)
    return obj is f


def _unspawnable(fn, args: tuple) -> str | None:
    """The first of ``fn`` and the functions among ``args`` (and inside partials) that a spawned worker could not
    import, named; None if there is none."""
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
    on this machine (a file rendezvous, the loopback interface); return their results in rank order.

    Every worker is stopped and reaped when one fails (WorkerError, with the first failing rank's traceback),
    when ``timeout`` seconds pass (GroupTimeout), on an interrupt, and before returning. GroupUnavailable: no
    loopback address. ``start_method``: None forks where the platform can and autograd survives a fork
    (:func:`fork_runs_backward`), else spawns (``fn`` must then be importable: TypeError otherwise); a forked
    worker that torch refuses a backward pass raises ForkUnsafe.
    """
    world_size = check_world_size(world_size)
    if (seconds := positive(timeout, "timeout")) > MAX_TIMEOUT_S:
        raise ValueError(f"timeout={timeout!r} is not allowed: at most {MAX_TIMEOUT_S:.0f} seconds")
    timeout = seconds
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
    if method is None:
        fork = "fork" in available and (unspawnable is not None or fork_runs_backward())
        method = "fork" if fork else "spawn"
    if method == "spawn" and unspawnable is not None:
        raise TypeError(
            f"{unspawnable} cannot be spawned: a spawned worker imports a function by its module path, and one "
            "defined in a notebook or inside another function has none. Define it in a module (a notebook's "
            "#| export cell is written to one) and pass that copy"
        )
    if method == "fork":
        # once in the parent, not in every forked worker (fully_shard imports it lazily)
        importlib.import_module("torch._dynamo")
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
            with _fork_warning_off():
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
    """The error of the rank that failed first: one that died without a traceback, else the earliest traceback."""
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
