"""The dense peak TFLOP/s that NVIDIA's spec sheets give for a few GPUs (``SPEC_PEAKS``) and how a GPU's name is
matched to its row (``gpu_spec``); public through :mod:`amp_lessons.timing`. A CPU has no entry."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["DTYPE_KEYS", "GPUSpec", "SPEC_PEAKS", "check_dtype_key", "gpu_spec", "spec_peak_tflops"]

DTYPE_KEYS = ("fp32", "tf32", "bf16", "fp16", "fp8")
"""The math a timed matmul runs in, as the spec sheets name it (``dtype_key`` of ``time_fn``)."""


@dataclass(frozen=True)
class GPUSpec:
    """Dense peak TFLOP/s of one GPU from its NVIDIA spec sheet; None where it lacks the format.

    ``match``: alternatives, each a tuple of tokens that must ALL be among the lower-cased alphanumeric tokens of
    ``torch.cuda.get_device_name()`` ("!nvl": must NOT be); whole tokens, so "a10" does not match "A100".
    """

    name: str
    match: tuple[tuple[str, ...], ...]
    fp32: float | None
    tf32: float | None
    bf16: float | None
    fp16: float | None
    fp8: float | None
    note: str = ""

    def peak(self, dtype_key: str) -> float | None:
        check_dtype_key(dtype_key, allow_none=False)
        return getattr(self, dtype_key)

    def matches(self, device_name: str) -> bool:
        tokens = set(_tokens(device_name))
        for alternative in self.match:
            need = {t for t in alternative if not t.startswith("!")}
            refuse = {t[1:] for t in alternative if t.startswith("!")}
            if need <= tokens and not (refuse & tokens):
                return True
        return False


# Source: NVIDIA product datasheets (V100, T4, A10, A100, L4, L40S, H100, H200) and the Ampere GA102 / Ada AD102
# whitepapers (RTX 3090 / 4090). DENSE figures at boost clock: the "with sparsity" tensor-core rates are halved.
# fp32 is the CUDA-core (FMA) rate; GeForce tensor rates are with fp32 accumulation (what torch uses).
# Not listed on purpose (gpu_spec returns None): H100 NVL / H200 NVL, GH200, A10G, L40, V100S, RTX 3090 Ti,
# RTX 4090 D and laptop parts: each has figures of its own.
# fmt: off
SPEC_PEAKS: tuple[GPUSpec, ...] = (
    GPUSpec("Tesla V100 SXM2", (("v100", "sxm2"),), 15.7, None, None, 125.0, None,
            "Volta: fp16 tensor cores only (no TF32, bf16 or fp8)"),
    GPUSpec("Tesla V100 PCIe", (("v100", "pcie"),), 14.0, None, None, 112.0, None,
            "Volta: fp16 tensor cores only (no TF32, bf16 or fp8)"),
    GPUSpec("Tesla T4", (("t4",),), 8.1, None, None, 65.0, None, "Turing: fp16 tensor cores only (no TF32, bf16 or fp8)"),
    GPUSpec("NVIDIA A10", (("a10",),), 31.2, 62.5, 125.0, 125.0, None,
            "Ampere GA102; the AWS A10G is a different, slower part"),
    GPUSpec("NVIDIA A100", (("a100",),), 19.5, 156.0, 312.0, 312.0, None,
            "Ampere GA100; SXM4 and PCIe, 40 and 80 GB share these figures"),
    GPUSpec("NVIDIA L4", (("l4",),), 30.3, 60.0, 121.0, 121.0, 242.5,
            "Ada AD104; datasheet: 120 / 242 / 485 TFLOP/s with sparsity"),
    GPUSpec("NVIDIA L40S", (("l40s",),), 91.6, 183.0, 362.0, 362.0, 733.0,
            "Ada AD102; datasheet: 366 / 733 / 1466 TFLOP/s with sparsity"),
    GPUSpec("NVIDIA H100 SXM", (("h100", "sxm5"), ("h100", "sxm"), ("h100", "hbm3")), 67.0, 495.0, 989.0, 989.0,
            1979.0, "Hopper SXM5; torch names it e.g. 'NVIDIA H100 80GB HBM3'"),
    GPUSpec("NVIDIA H100 PCIe", (("h100", "pcie"),), 51.0, 378.0, 756.0, 756.0, 1513.0,
            "Hopper PCIe (fewer SMs, lower clocks than SXM)"),
    GPUSpec("NVIDIA H200", (("h200", "!nvl"),), 67.0, 495.0, 989.0, 989.0, 1979.0,
            "Hopper SXM with HBM3e: the H100 SXM's compute, more and faster memory"),
    GPUSpec("NVIDIA GeForce RTX 3090", (("rtx", "3090", "!ti", "!laptop", "!mobile"),), 35.6, 35.6, 71.0, 71.0, None,
            "Ampere GA102 whitepaper; tensor rates with fp32 accumulation (fp16 accumulation: 142)"),
    GPUSpec("NVIDIA GeForce RTX 4090", (("rtx", "4090", "!ti", "!d", "!laptop", "!mobile"),), 82.6, 82.6, 165.2,
            165.2, 330.3,
            "Ada AD102 whitepaper; tensor rates with fp32 accumulation (fp16 accumulation: 330.3 / 660.6)"),
)
# fmt: on


def _tokens(name: str) -> list[str]:
    return [t for t in re.split(r"[^a-z0-9]+", name.lower()) if t]


def gpu_spec(name: str) -> GPUSpec | None:
    """The ``SPEC_PEAKS`` row for a ``torch.cuda.get_device_name()`` string, or None if unknown."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a GPU name string such as 'NVIDIA A100-SXM4-80GB', got {name!r}")
    for spec in SPEC_PEAKS:
        if spec.matches(name):
            return spec
    return None


def spec_peak_tflops(name: str, dtype_key: str) -> float | None:
    """Dense spec-sheet peak TFLOP/s of GPU ``name`` in ``dtype_key`` math; None if unknown or absent."""
    check_dtype_key(dtype_key, allow_none=False)
    spec = gpu_spec(name)
    return None if spec is None else spec.peak(dtype_key)


def check_dtype_key(dtype_key, *, allow_none: bool) -> None:
    """Refuse a ``dtype_key`` that is not one of :data:`DTYPE_KEYS` (or None, where ``allow_none``)."""
    if dtype_key is None and allow_none:
        return
    if not isinstance(dtype_key, str) or dtype_key not in DTYPE_KEYS:
        allowed = ", ".join(repr(k) for k in DTYPE_KEYS) + (" or None" if allow_none else "")
        raise ValueError(f"dtype_key must be one of {allowed}, got {dtype_key!r}")
