"""``make gpu-wheels``: the wheelhouse that lets ``make gpu-check`` run on a GPU machine without network.

Run it where there is network, for the GPU machine's Python and platform::

    make gpu-wheels                                   # = python delivery/gpu_check/gpu_wheels.py --dest gpu-wheelhouse
    python delivery/gpu_check/gpu_wheels.py --python-version 3.12 --platform manylinux_2_28_x86_64
    python delivery/gpu_check/gpu_wheels.py --torch-index https://download.pytorch.org/whl/cu128   # a CUDA build of torch
    python delivery/gpu_check/gpu_wheels.py --no-triton          # without triton (check (e) then skips do_bench)

It runs ``pip download`` of every pin of ``requirements.txt`` (torch==2.13.0 on Linux from PyPI is a CUDA
build, with its CUDA libraries and its triton), plus ``triton`` (for ``triton.testing.do_bench``), the build
backend that ``pip install -e .`` needs (setuptools, wheel) and pip, into one folder (default
``gpu-wheelhouse/``, git-ignored). With ``--python-version`` or ``--platform`` pip downloads wheels only
(``--only-binary=:all:``), for a machine other than this one.

Copy the folder next to the checkout on the GPU machine. ``make gpu-check`` sees it (``GPU_WHEELHOUSE``,
default ``gpu-wheelhouse``) and runs ``make setup`` with ``PIP_NO_INDEX=1 PIP_FIND_LINKS=<wheelhouse>``, so
that every install comes from the folder (pip's ``--no-index --find-links``); ``delivery/gpu_check/gpu_check.py
--wheelhouse`` installs triton from it the same way if it is still missing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENTS = ROOT / "requirements.txt"
DEST = ROOT / "gpu-wheelhouse"
EXTRAS = ("setuptools>=69", "wheel", "pip")
"""What ``make setup`` needs besides the pins: the build backend of ``pip install -e .`` and pip itself."""
_PIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")


def pins(requirements: Path = REQUIREMENTS) -> list[str]:
    """The ``name==version`` lines of ``requirements`` (comments and blank lines skipped); anything else
    (an unpinned or malformed line) raises ValueError naming it: the wheelhouse holds exact versions only."""
    if not isinstance(requirements, (str, Path)):
        raise TypeError(f"requirements must be a path, got {requirements!r}")
    out = []
    for i, line in enumerate(Path(requirements).read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if not _PIN.match(line):
            raise ValueError(f"{requirements}:{i}: {line!r} is not an exact pin name==version")
        out.append(line)
    if not out:
        raise ValueError(f"{requirements} pins nothing")
    return out


def download_command(
    dest: Path = DEST,
    *,
    requirements: Path = REQUIREMENTS,
    triton: bool = True,
    torch_index: str | None = None,
    python_version: str | None = None,
    platform: str | None = None,
) -> list[str]:
    """The ``pip download`` command line (a list) that fills ``dest``: every pin, triton if ``triton``, and
    :data:`EXTRAS`, resolved together (so triton is the version torch pins)."""
    if not isinstance(dest, (str, Path)) or not str(dest):
        raise TypeError(f"dest must be a path, got {dest!r}")
    if not isinstance(triton, bool):
        raise TypeError(f"triton must be True or False, got {triton!r}")
    if torch_index is not None and not (isinstance(torch_index, str) and re.match(r"^https?://\S+$", torch_index)):
        raise ValueError(f"torch_index must be an http(s) URL, got {torch_index!r}")
    if python_version is not None and not (
        isinstance(python_version, str) and re.fullmatch(r"3\.\d{1,2}", python_version)
    ):
        raise ValueError(f"python_version must look like '3.12', got {python_version!r}")
    if platform is not None and not (isinstance(platform, str) and re.fullmatch(r"[a-z0-9_]+", platform)):
        raise ValueError(f"platform must be a pip platform tag like 'manylinux_2_28_x86_64', got {platform!r}")
    cmd = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--dest", str(dest)]
    cmd += pins(requirements) + (["triton"] if triton else []) + list(EXTRAS)
    if torch_index:
        cmd += ["--extra-index-url", torch_index]
    if python_version or platform:
        cmd += ["--only-binary=:all:"]
        cmd += ["--python-version", python_version] if python_version else []
        cmd += ["--platform", platform] if platform else []
    return cmd


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpu_wheels.py", description="Download the wheels of make gpu-check.")
    parser.add_argument("--dest", type=Path, default=DEST, help=f"the wheelhouse folder (default {DEST})")
    parser.add_argument("--no-triton", action="store_true", help="leave triton out")
    parser.add_argument("--torch-index", default=None, help="an extra index for torch (a CUDA wheel index)")
    parser.add_argument("--python-version", default=None, help="the GPU machine's Python, e.g. 3.12")
    parser.add_argument("--platform", default=None, help="the GPU machine's pip platform tag")
    parser.add_argument("--print", action="store_true", help="print the pip command, download nothing")
    args = parser.parse_args(argv)
    try:
        cmd = download_command(
            args.dest,
            triton=not args.no_triton,
            torch_index=args.torch_index,
            python_version=args.python_version,
            platform=args.platform,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.print:
        print(" ".join(cmd))
        return 0
    Path(args.dest).mkdir(parents=True, exist_ok=True)
    code = subprocess.run(cmd, check=False).returncode
    if code == 0:
        n = len(list(Path(args.dest).glob("*.whl")))
        print(f"{n} wheels in {args.dest}; on the GPU machine: make gpu-check GPU_WHEELHOUSE={args.dest}")
    return code


if __name__ == "__main__":
    sys.exit(main())
