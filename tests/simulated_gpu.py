"""A simulated GPU for tests: makes the course see a GPU (or an Apple GPU) that this machine does not have.

``simulate(monkeypatch, name)`` patches every probe the course reads to decide what to run where:
``torch.cuda.is_available``, ``device_count``, ``get_device_properties``, ``get_device_name``,
``get_device_capability``, ``is_bf16_supported``, ``mem_get_info``, ``torch.version.cuda`` / ``torch.version.hip``
(the build) and ``torch.backends.mps.is_available`` / ``get_name``. No kernel runs on it: tensors stay on the CPU,
so only the code paths whose *decision* depends on the device are tested this way (what runs where, which device a
lesson picks, the fake-CUDA preview on a machine where CUDA is available).

The figures of each profile are the public specifications of the GPU (name as torch reports it, compute capability,
memory, SM count); the MI300X is a ROCm build of torch (``torch.version.hip`` set, ``gcnArchName`` reported).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import torch
import torch._dynamo  # noqa: F401 - before any patch: at import it records torch.backends.mps.is_available.__wrapped__
from torch._subclasses import fake_tensor


@dataclass(frozen=True)
class GPUProfile:
    name: str  # as torch.cuda.get_device_name() reports it
    capability: tuple[int, int]
    memory_gib: int
    multiprocessors: int
    rocm: bool = False
    arch_name: str = ""  # AMD gcnArchName
    bf16_supported: bool = True  # what torch.cuda.is_bf16_supported() answers
    mps: bool = False  # an Apple GPU (MPS), no CUDA GPU

    @property
    def cuda(self) -> bool:
        return not self.mps

    def properties(self) -> SimpleNamespace:
        p = SimpleNamespace(
            name=self.name,
            major=self.capability[0],
            minor=self.capability[1],
            total_memory=self.memory_gib * 2**30,
            multi_processor_count=self.multiprocessors,
        )
        if self.rocm:
            p.gcnArchName = self.arch_name
        return p


PROFILES: dict[str, GPUProfile] = {
    "H100": GPUProfile("NVIDIA H100 80GB HBM3", (9, 0), 80, 132),
    "A100": GPUProfile("NVIDIA A100-SXM4-80GB", (8, 0), 80, 108),
    "L4": GPUProfile("NVIDIA L4", (8, 9), 24, 58),
    "T4": GPUProfile("Tesla T4", (7, 5), 16, 40, bf16_supported=False),
    "MI300X": GPUProfile(
        "AMD Instinct MI300X", (9, 4), 192, 304, rocm=True, arch_name="gfx942:sramecc+:xnack-", bf16_supported=True
    ),
    "Apple M3": GPUProfile("Apple M3 Max", (0, 0), 0, 0, mps=True),
}
"""Every simulated machine: four NVIDIA generations (Hopper, Ampere, Ada, Turing), an AMD GPU on ROCm and an Apple
GPU (MPS, no CUDA)."""

CUDA_PROFILES = tuple(k for k, p in PROFILES.items() if p.cuda)


def simulate(monkeypatch, profile: str | GPUProfile) -> GPUProfile:
    """Make torch, as the course reads it, report the GPU ``profile`` (a key of :data:`PROFILES`)."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    cuda = torch.cuda
    if p.cuda:
        props = p.properties()
        monkeypatch.setattr(cuda, "is_available", lambda: True)
        monkeypatch.setattr(cuda, "device_count", lambda: 1)
        monkeypatch.setattr(cuda, "get_device_properties", lambda device=None: props)
        monkeypatch.setattr(cuda, "get_device_name", lambda device=None: p.name)
        monkeypatch.setattr(cuda, "get_device_capability", lambda device=None: p.capability)
        monkeypatch.setattr(cuda, "is_bf16_supported", lambda *a, **k: p.bf16_supported)
        monkeypatch.setattr(cuda, "mem_get_info", lambda device=None: (props.total_memory, props.total_memory))
        monkeypatch.setattr(torch.version, "hip", "6.2.41133" if p.rocm else None, raising=False)
        monkeypatch.setattr(torch.version, "cuda", None if p.rocm else "12.8", raising=False)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
        # A fake CUDA tensor's first creation "initialises the GPU context" with a real torch.empty(1, device='cuda')
        # where torch says a GPU is there: torch 2.11 asks torch.cuda.is_available() (patched above, so a CUDA build
        # with no driver raised 'Found no NVIDIA driver'), 2.13 and later torch.accelerator. The simulated GPU has
        # no context to initialise. The function is functools.cache'd, so without this the outcome depended on
        # whether an earlier test in the same process had called it unsimulated.
        monkeypatch.setattr(fake_tensor, "init_gpu_context", lambda device: None, raising=False)
    else:
        monkeypatch.setattr(cuda, "is_available", lambda: False)
        monkeypatch.setattr(cuda, "device_count", lambda: 0)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
        monkeypatch.setattr(torch.backends.mps, "get_name", lambda: p.name, raising=False)
    return p
