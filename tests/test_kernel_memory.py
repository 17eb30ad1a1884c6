"""Tests of the test tooling that measures a notebook kernel's peak memory."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kernel_memory import peak_memory_bytes

ROOT = Path(__file__).resolve().parent.parent


def test_peak_memory_bytes_of_this_process_grows_with_an_allocation():
    # in a fresh interpreter: a long-lived test worker's peak may already be above anything allocated here
    code = (
        "from tests.kernel_memory import peak_memory_bytes as peak\n"
        "before = peak()\n"
        "block = bytearray(512 * 2**20)\n"
        "block[::4096] = b'\\x01' * len(block[::4096])  # touched, so resident\n"
        "print(before, peak())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    if out[0] == "None":
        pytest.skip("no /proc and no resource module here")
    before, after = int(out[0]), int(out[1])
    assert after >= before + 256 * 2**20, (before, after)


def test_peak_memory_bytes_of_another_process():
    if not os.path.exists("/proc/self/status"):
        pytest.skip("needs Linux /proc")
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; print('ready', flush=True); time.sleep(30)"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        peak = peak_memory_bytes(child.pid)
        assert peak is not None and 1 * 2**20 < peak < 2**30
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
    assert peak_memory_bytes(child.pid) is None  # gone


@pytest.mark.parametrize("bad", [0, -3, 1.5, "12", True])
def test_peak_memory_bytes_rejects_bad_pids(bad):
    with pytest.raises(ValueError, match="pid must be a positive int"):
        peak_memory_bytes(bad)
