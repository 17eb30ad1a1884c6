"""A learner's kernel with a memory cap: set the limits, then become ipykernel (the workshop's kernel spec runs this).

The workshop's kernel spec (``delivery/workshop/jupyter/kernels/python3/kernel.json``) starts every learner's kernel as
``<course .venv>/bin/python kernel_wrapper.py -f <connection file>``. This sets, from the environment the hub gives
each learner's server (``delivery/workshop/jupyterhub_config.py``):

* ``AMP_KERNEL_MEMORY_LIMIT`` (``3G`` by default; ``512M``, ``2.5G``, bytes, or ``none``): ``RLIMIT_DATA``, soft and
  hard, so the kernel cannot raise it. Since Linux 4.7 it counts the process's private writable memory (heap and
  anonymous mappings: every tensor and array), not the address space, so it does not trip on the address space that
  torch, CUDA and thread arenas reserve without using. An allocation past the cap fails in the learner's cell
  (torch: ``RuntimeError: ... DefaultCPUAllocator: can't allocate memory``; numpy and Python: ``MemoryError``) and
  the kernel lives on; ``kernel_startup.py`` adds a line saying that the workshop's cap was reached. It is a cap
  per process: a subprocess the kernel starts gets its own.
* ``AMP_KERNEL_THREADS`` (unset by default): ``OMP_NUM_THREADS`` for the kernel, so that many learners' kernels on
  a few cores do not each start a thread per core.
* ``AMP_KERNEL_GPU_FRACTION`` (unset by default): read by ``kernel_startup.py``, which calls
  ``torch.cuda.set_per_process_memory_fraction`` with it in each kernel where CUDA is available.

and always ``OMP_WAIT_POLICY=PASSIVE``: the learners' kernels share the server's cores, and under OpenMP's default
policy a thread waiting at a barrier spins, while the partner it waits for is descheduled by another kernel's
spinning thread (``make bench-hub`` measures the room with it). It decides how an idle thread waits, never what a
cell computes.

Standard library only: it runs in the course's environment before anything else.
"""

from __future__ import annotations

import os
import re
import resource
import sys
from pathlib import Path

DEFAULT_LIMIT = "3G"
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def parse_bytes(text: str) -> int | None:
    """``"3G"`` -> 3 GiB in bytes; ``"none"``/``"0"`` -> None (no cap). Binary units K, M, G, T (optional ``i``/``B``)."""
    if not isinstance(text, str):
        raise TypeError(f"a memory size must be a str such as '3G', got {type(text).__name__}")
    s = text.strip()
    if s.lower() in {"none", "0", "unlimited"}:
        return None
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?", s, flags=re.IGNORECASE)
    if not m:
        raise ValueError(
            f"AMP_KERNEL_MEMORY_LIMIT={text!r} is not a memory size: use e.g. '3G', '512M', a number of bytes, or 'none'"
        )
    value = int(float(m.group(1)) * _UNITS[m.group(2).upper()])
    if value < 2**28:
        raise ValueError(f"AMP_KERNEL_MEMORY_LIMIT={text!r} is below 256M: a kernel with torch needs more to start")
    return value


def parse_fraction(text: str) -> float:
    """``AMP_KERNEL_GPU_FRACTION``: a float in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 1.0:
        raise ValueError(
            f"AMP_KERNEL_GPU_FRACTION={text!r} must be a number in (0, 1], e.g. 0.1 for a tenth of the GPU"
        )
    return value


def kernel_command(argv: list[str], env: dict[str, str]) -> tuple[list[str], int | None]:
    """The command that replaces this process, and the memory cap in bytes (None: no cap); validates ``env``."""
    limit = parse_bytes(env.get("AMP_KERNEL_MEMORY_LIMIT", DEFAULT_LIMIT))
    if env.get("AMP_KERNEL_GPU_FRACTION"):
        parse_fraction(env["AMP_KERNEL_GPU_FRACTION"])
    threads = env.get("AMP_KERNEL_THREADS")
    if threads is not None and not (threads.isdigit() and int(threads) >= 1):
        raise ValueError(f"AMP_KERNEL_THREADS={threads!r} must be a whole number >= 1")
    startup = Path(__file__).resolve().with_name("kernel_startup.py")
    cmd = [sys.executable, "-m", "ipykernel_launcher", *argv, f"--IPKernelApp.exec_files={startup}"]
    return cmd, limit


def main(argv: list[str]) -> None:
    try:
        cmd, limit = kernel_command(argv, dict(os.environ))
    except ValueError as e:
        sys.exit(f"amp-course workshop kernel: {e}")
    if limit is not None:
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
        os.environ["AMP_KERNEL_MEMORY_LIMIT_BYTES"] = str(limit)
    if os.environ.get("AMP_KERNEL_THREADS"):
        os.environ["OMP_NUM_THREADS"] = os.environ["AMP_KERNEL_THREADS"]
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main(sys.argv[1:])
