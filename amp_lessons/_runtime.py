"""The small run-time helpers every topic needs: one device parser, exact fp32 matmuls, one thread for
tiny ops, a quiet C++ stderr. Part of the package's base: it imports no topic module."""

from __future__ import annotations

import contextlib
import os
import warnings

import torch

__all__ = ["exact_fp32", "fp32_precision", "one_thread", "parse_device", "quiet_fd2"]


def parse_device(device, *, require_available: bool = True) -> torch.device:
    """``device`` ('cpu', 'cuda', 'cuda:N' or a ``torch.device`` of type cpu or cuda) as a ``torch.device``.

    ValueError for anything else (naming the value and what is allowed); RuntimeError for a CUDA device
    on a machine where torch sees no CUDA GPU, unless ``require_available`` is False."""
    bad = ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or a torch.device of type cpu or cuda, got {device!r}")
    if isinstance(device, torch.device):
        d = device
    elif isinstance(device, str):
        try:
            d = torch.device(device)
        except (RuntimeError, TypeError):
            raise bad from None
    else:
        raise bad
    if d.type not in ("cpu", "cuda"):
        raise bad
    if require_available and d.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={device!r} was asked for, but torch sees no CUDA GPU on this machine; use device='cpu'"
        )
    return d


@contextlib.contextmanager
def fp32_precision(matmul: str | None = None, conv: str | None = None, cpu_matmul: str | None = None):
    """Set the fp32 math of CUDA matmuls / cuDNN convolutions / CPU (oneDNN) matmuls with the
    current API (``"ieee"`` or ``"tf32"``; ``"bf16"`` too for the CPU) and restore it on exit."""
    knobs = [
        (torch.backends.cuda.matmul, matmul, ("ieee", "tf32")),
        (torch.backends.cudnn.conv, conv, ("ieee", "tf32")),
        (torch.backends.mkldnn.matmul, cpu_matmul, ("ieee", "tf32", "bf16")),
    ]
    saved = []
    try:
        for obj, value, allowed in knobs:
            if value is None:
                continue
            if value not in allowed:
                raise ValueError(f"precision {value!r} is not allowed here: use one of {', '.join(allowed)}")
            saved.append((obj, obj.fp32_precision))
            obj.fp32_precision = value
        yield
    finally:
        for obj, old in reversed(saved):
            obj.fp32_precision = old


def exact_fp32(d: torch.device):
    """IEEE fp32 matmuls on ``d``'s kind of device (no TF32 on a GPU, no bf16 rounding on an AMX CPU),
    touching only that device's switch."""
    return fp32_precision(matmul="ieee") if d.type == "cuda" else fp32_precision(cpu_matmul="ieee")


@contextlib.contextmanager
def one_thread():
    """Run tiny tensor ops on one thread (restored afterwards): splitting a 256 x 64 matmul across
    threads gains nothing, and on a busy machine (tests in parallel, a notebook kernel next to
    them) waiting for descheduled threads makes each op cost milliseconds."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# torch 2.11's profiler warns this on every start (a bug: 2.13 warns only where one profiler object starts a second
# cycle); the course's profilers run one cycle each, so it says nothing about them
_PROFILER_CYCLE_WARNING = r"Warning: Profiler clears events at the end of each cycle"


@contextlib.contextmanager
def quiet_fd2():
    """Silence the profiler's start/stop: its C++ stderr (libkineto prints a line for each) and torch 2.11's
    UserWarning "Profiler clears events at the end of each cycle", given on every start of a profiler there."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PROFILER_CYCLE_WARNING, category=UserWarning)
        try:
            saved = os.dup(2)
        except OSError:
            yield
            return
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 2)
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
