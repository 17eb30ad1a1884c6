"""What this machine is: its CPU, its GPU and what formats they run.

``device_report()`` probes the CPU, the first GPU torch reaches through ``torch.cuda`` (NVIDIA on CUDA, AMD on
ROCm) and an Apple GPU (MPS); each probe can be replaced by data (``cpu=``, ``gpu_properties=``, ``mps=``).
The GPU's name, memory and capability are read from torch; which formats an NVIDIA GPU runs natively is looked
up from its compute capability, not measured; AMD GPUs are not classified. The lessons never use an Apple GPU.
:func:`machine_flops`, :func:`machine_memory_bytes`, :data:`WORK_BUDGET_S` and :data:`MAX_TENSOR_BYTES` come
from ``_machine``.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import warnings
from dataclasses import dataclass, field

import torch

from ._machine import MAX_TENSOR_BYTES, WORK_BUDGET_S, machine_flops, machine_memory_bytes
from ._table import html_table
from ._validate import count, flag, int_at_least, is_int

__all__ = [
    "MAX_TENSOR_BYTES", "WORK_BUDGET_S", "CPUInfo", "DeviceReport", "GPUInfo", "MPSInfo", "cpu_info",
    "default_device", "device_report", "gpu_info", "machine_flops", "machine_memory_bytes", "mps_info"
]  # fmt: skip

# (major compute capability, minimum minor) -> architecture, tensor-core generation (0 = none)
_ARCHITECTURES = [
    ((12, 0), "Blackwell (consumer)", 5),
    ((10, 0), "Blackwell", 5),
    ((9, 0), "Hopper", 4),
    ((8, 9), "Ada Lovelace", 4),
    ((8, 0), "Ampere", 3),
    ((7, 5), "Turing", 2),
    ((7, 0), "Volta", 1),
    ((6, 0), "Pascal", 0),
    ((0, 0), "pre-Pascal", 0),
]


@dataclass(frozen=True)
class CPUInfo:
    """The CPU as torch sees it."""

    name: str
    arch: str
    capability: str  # torch.backends.cpu.get_cpu_capability(): "DEFAULT", "AVX2", "AVX512", ...
    threads: int
    avx512_bf16: bool = False
    amx_bf16: bool = False  # AMX tiles (bf16 matmuls)
    amx_fp16: bool = False
    onednn_fp16: bool = False

    def __post_init__(self):
        for name in ("name", "arch", "capability"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a str, got {getattr(self, name)!r}")
        count(self.threads, "threads", 1, 1 << 20)
        for name in ("avx512_bf16", "amx_bf16", "amx_fp16", "onednn_fp16"):
            flag(getattr(self, name), name)

    @property
    def bf16_hardware(self) -> bool:
        """bf16 matmuls run on dedicated instructions (AVX512-BF16 or AMX) through oneDNN."""
        return self.avx512_bf16 or self.amx_bf16

    @property
    def fp16_hardware(self) -> bool:
        """oneDNN has a fast fp16 matmul path here (``onednn_fp16`` or AMX-FP16); a flag, not a measurement."""
        return self.amx_fp16 or self.onednn_fp16


_VENDORS = ("nvidia", "amd")
_MPS_AUTOCAST_DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


@dataclass(frozen=True)
class GPUInfo:
    """A GPU that torch reaches through ``torch.cuda``, and the low-precision formats it runs natively.

    NVIDIA (``rocm=False``): formats looked up from the compute capability. AMD (``rocm=True``): nothing is
    looked up; ``arch_name`` is the ``gcnArchName``, ``bf16_supported`` is ``torch.cuda.is_bf16_supported()``
    (``None``: not probed), and TF32, fp8 and fp4 are not claimed.
    """

    name: str
    capability: tuple[int, int]
    memory_bytes: int
    multiprocessors: int = 0  # NVIDIA: streaming multiprocessors; AMD: compute units
    rocm: bool = False
    arch_name: str = ""  # AMD: gcnArchName
    bf16_supported: bool | None = None  # AMD: torch.cuda.is_bf16_supported(); None = not probed

    def __post_init__(self):
        cap = self.capability
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        if not (isinstance(cap, tuple) and len(cap) == 2 and all(is_int(v, 0) for v in cap)):
            raise ValueError(f"capability must be a (major, minor) tuple of ints >= 0, got {cap!r}")
        int_at_least(self.memory_bytes, "memory_bytes", 0)
        int_at_least(self.multiprocessors, "multiprocessors", 0)
        if not isinstance(self.rocm, bool):
            raise TypeError(f"rocm must be True (AMD GPU, ROCm) or False (NVIDIA GPU, CUDA), got {self.rocm!r}")
        if not isinstance(self.arch_name, str):
            raise TypeError(f"arch_name must be a str (AMD gcnArchName, or ''), got {self.arch_name!r}")
        if self.bf16_supported is not None and not isinstance(self.bf16_supported, bool):
            raise TypeError(f"bf16_supported must be True, False or None (not probed), got {self.bf16_supported!r}")

    @property
    def vendor(self) -> str:
        """``"amd"`` for a ROCm GPU, else ``"nvidia"``."""
        return "amd" if self.rocm else "nvidia"

    def _arch(self):
        for cap, arch, gen in _ARCHITECTURES:
            if self.capability >= cap:
                return arch, gen
        raise AssertionError("unreachable: (0, 0) matches every capability")

    @property
    def architecture(self) -> str:
        """NVIDIA architecture looked up from the compute capability; ``"AMD (ROCm)"`` for AMD GPUs."""
        return "AMD (ROCm)" if self.rocm else self._arch()[0]

    @property
    def tensor_core_generation(self) -> int:
        """NVIDIA tensor-core generation (1 Volta ... 5 Blackwell); 0 if none or unknown (AMD GPUs)."""
        return 0 if self.rocm else self._arch()[1]

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    @property
    def fp16_tensor_cores(self) -> bool:
        """NVIDIA compute capability >= 7.0 (Volta); False for AMD GPUs (not classified)."""
        return not self.rocm and self.capability >= (7, 0)

    @property
    def tf32(self) -> bool:
        """NVIDIA compute capability >= 8.0 (Ampere); False for AMD GPUs (unknown, not claimed)."""
        return not self.rocm and self.capability >= (8, 0)

    @property
    def bf16(self) -> bool:
        """NVIDIA: compute capability >= 8.0 (Ampere). AMD: ``torch.cuda.is_bf16_supported()`` (False if not probed)."""
        return bool(self.bf16_supported) if self.rocm else self.capability >= (8, 0)

    @property
    def fp8(self) -> bool:
        """NVIDIA compute capability >= 8.9 (Ada Lovelace); False for AMD GPUs (unknown, not claimed)."""
        return not self.rocm and self.capability >= (8, 9)

    @property
    def fp4(self) -> bool:
        """NVIDIA compute capability >= 10.0 (Blackwell); False for AMD GPUs (unknown, not claimed)."""
        return not self.rocm and self.capability >= (10, 0)


@dataclass(frozen=True)
class MPSInfo:
    """An Apple GPU as torch's MPS backend sees it (the lessons do not use it): its name, whether
    ``torch.backends.mps.is_available()``, and the formats ``torch.autocast("mps", dtype=...)`` accepts."""

    name: str
    available: bool
    autocast_dtypes: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        if not isinstance(self.available, bool):
            raise TypeError(f"available must be True or False, got {self.available!r}")
        dts, allowed = self.autocast_dtypes, ", ".join(map(repr, _MPS_AUTOCAST_DTYPES))
        if not isinstance(dts, tuple):
            raise TypeError(f"autocast_dtypes must be a tuple of {allowed}, got {dts!r}")
        if any(d not in _MPS_AUTOCAST_DTYPES for d in dts) or len(set(dts)) != len(dts):
            raise ValueError(f"autocast_dtypes={dts!r} is not allowed: use distinct values from {allowed}")


@dataclass(frozen=True, repr=False)
class DeviceReport:
    torch_version: str
    python_version: str
    cpu: CPUInfo
    gpu: GPUInfo | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    mps: MPSInfo | None = None

    @property
    def device(self) -> str:
        """Where the lessons run their experiments: "cuda" if a GPU was found through ``torch.cuda``, else "cpu"."""
        return "cuda" if self.gpu is not None else "cpu"

    @property
    def apple_gpu(self) -> MPSInfo | None:
        """The Apple GPU (MPS) if torch can use one here, else None. The lessons do not use it."""
        return self.mps if self.mps is not None and self.mps.available else None

    @property
    def mps_autocast(self) -> str:
        """What ``torch.autocast('mps')`` accepts in the installed torch, as a phrase."""
        a = self.apple_gpu
        dts = ", ".join(a.autocast_dtypes) if a is not None else ""
        return f"torch.autocast('mps') accepts {dts}" if dts else "torch.autocast('mps') accepts neither fp16 nor bf16"

    def rows(self) -> list[tuple[str, str]]:
        c, g, a = self.cpu, self.gpu, self.apple_gpu
        yes = {True: "yes", False: "no"}
        bf16_cpu = f"{yes[c.bf16_hardware]} (AVX512-BF16 {yes[c.avx512_bf16]}, AMX {yes[c.amx_bf16]})"
        fp16_cpu = f"{yes[c.fp16_hardware]} (oneDNN fp16 path {yes[c.onednn_fp16]}, AMX-FP16 {yes[c.amx_fp16]})"
        rows = [("torch", self.torch_version), ("python", self.python_version),
                ("CPU", f"{c.name} ({c.arch}), {c.threads} threads"), ("CPU capability", c.capability),
                ("CPU bf16 instructions", bf16_cpu), ("CPU fp16 instructions", fp16_cpu)]  # fmt: skip
        if g is None:
            rows.append(("GPU", f"{'no CUDA GPU' if a is not None else 'none'} found: experiments run on the CPU"))
        elif g.rocm:
            bf16 = {
                True: "yes (torch.cuda.is_bf16_supported())",
                False: "no (torch.cuda.is_bf16_supported())",
                None: "unknown (not probed)",
            }[g.bf16_supported]
            rows += [
                ("GPU", f"{g.name} (AMD, ROCm), {g.memory_gib:.1f} GiB, {g.multiprocessors} compute units"),
                ("gcnArchName", g.arch_name or "unknown"),
                ("tensor cores", "not classified: the NVIDIA generations do not apply to AMD GPUs"),
                ("bf16", bf16),
                ("TF32, fp8, fp4", "unknown: not classified for AMD GPUs"),
            ]
        else:
            native = (("fp16", g.fp16_tensor_cores), ("TF32", g.tf32), ("bf16", g.bf16), ("fp8", g.fp8), ("fp4", g.fp4))
            rows += [
                ("GPU", f"{g.name}, {g.memory_gib:.1f} GiB, {g.multiprocessors} SMs"),
                ("compute capability", f"{g.capability[0]}.{g.capability[1]} ({g.architecture})"),
                ("tensor cores", f"generation {gen}" if (gen := g.tensor_core_generation) else "none known"),
                ("native formats", ", ".join(n for n, ok in native if ok) or "none"),
            ]
        if a is not None:
            where = "CPU" if g is None else "CUDA GPU"
            rows += [
                ("Apple GPU", f"{a.name} (MPS): not used by the lessons, they run on the {where}"),
                ("MPS autocast", f"{self.mps_autocast} in this torch (checked in torch, not run on the GPU)"),
            ]
        rows += [("note", n) for n in self.notes]
        return rows

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        return "\n".join(
            ["Hardware report (measured on this machine)"] + [f"  {k:<{width}}  {v}" for k, v in self.rows()]
        )

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(None, self.rows(), title="Hardware report (measured on this machine)", row_headers=True)


def cpu_info() -> CPUInfo:
    """Probe this machine's CPU through torch (capability level and bf16/fp16 instructions)."""

    def flag(name: str) -> bool:
        fn = getattr(torch.cpu, name, None)  # private probes: absent in some torch versions
        try:
            return bool(fn()) if fn is not None else False
        except RuntimeError:
            return False

    name = _cpu_model_name() or platform.processor() or "unknown CPU"
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except (AttributeError, RuntimeError):
        capability = "unknown"
    return CPUInfo(
        name=name,
        arch=platform.machine() or "unknown",
        capability=capability,
        threads=torch.get_num_threads(),
        avx512_bf16=flag("_is_avx512_bf16_supported"),
        amx_bf16=flag("_is_amx_tile_supported"),
        amx_fp16=flag("_is_amx_fp16_supported"),
        onednn_fp16=_onednn_fp16(),
    )


def _onednn_fp16() -> bool:
    """``torch.ops.mkldnn._is_mkldnn_fp16_supported()`` (private; False where this torch lacks it)."""
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_fp16_supported())
    except (AttributeError, RuntimeError):
        return False


def _cpu_model_name() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":  # platform.processor() says only "arm" or "i386" there
        return _sysctl("machdep.cpu.brand_string")
    return None


def _sysctl(key: str) -> str | None:
    """``sysctl -n key`` (macOS), or None where it fails."""
    try:
        out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.strip() or None


_REQUIRED_PROPERTIES = ("name", "major", "minor", "total_memory")


def gpu_info(properties=None) -> GPUInfo | None:
    """The first GPU torch reaches through ``torch.cuda``, or None if there is none.

    ``properties`` replaces ``torch.cuda.get_device_properties(0)``: ``name``, ``major``, ``minor``,
    ``total_memory``, optionally ``multi_processor_count``, ``vendor`` ("amd"/"nvidia"), ``gcnArchName`` and
    ``bf16_supported``. Without ``vendor``, a ``gfx`` arch name or a ROCm build of torch means AMD.
    """
    real = properties is None
    if real:
        if not torch.cuda.is_available():
            return None
        properties = torch.cuda.get_device_properties(0)
    missing = [k for k in _REQUIRED_PROPERTIES if not hasattr(properties, k)]
    if missing:
        raise TypeError(
            f"properties must look like torch.cuda.get_device_properties(0) (with "
            f"{', '.join(_REQUIRED_PROPERTIES)}); {properties!r} lacks {', '.join(missing)}"
        )
    vendor = getattr(properties, "vendor", None)
    arch_name = getattr(properties, "gcnArchName", "")
    if not isinstance(arch_name, str):
        raise TypeError(f"properties.gcnArchName must be a str, got {arch_name!r}")
    if vendor is None:
        amd = arch_name.startswith("gfx") or getattr(torch.version, "hip", None) is not None
    elif vendor in _VENDORS:
        amd = vendor == "amd"
    else:
        raise ValueError(f"properties.vendor={vendor!r} is not allowed: use one of {', '.join(map(repr, _VENDORS))}")
    if not amd:
        bf16_supported = None  # NVIDIA: looked up from the compute capability
    elif real:
        bf16_supported = bool(torch.cuda.is_bf16_supported())
    else:
        bf16_supported = getattr(properties, "bf16_supported", None)
    name = str(properties.name)
    keys = ("major", "minor", "total_memory", "multi_processor_count")
    major, minor, memory, sms = (int_at_least(getattr(properties, k, 0), f"properties.{k}", 0) for k in keys)
    return GPUInfo(name, (major, minor), memory, sms, amd, arch_name if amd else "", bf16_supported)


def mps_info() -> MPSInfo:
    """Probe for an Apple GPU (MPS) and for what ``torch.autocast("mps")`` accepts in the installed torch
    (decided without the GPU: an ``AutocastMPS`` kernel for ``aten::mm``, and ``torch.autocast("mps", dtype=...)``
    constructed without an error or a warning)."""
    try:
        available = bool(torch.backends.mps.is_available())
    except (AttributeError, RuntimeError):
        available = False
    name = _mps_name() if available else None
    return MPSInfo(name=name or "Apple GPU (MPS)", available=available, autocast_dtypes=_mps_autocast_dtypes())


def _mps_name() -> str | None:
    get_name = getattr(torch.backends.mps, "get_name", None)
    try:
        name = get_name() if get_name is not None else None
    except RuntimeError:
        name = None
    if not name and sys.platform == "darwin":
        name = _sysctl("machdep.cpu.brand_string")
    return name or None


def _mps_autocast_dtypes() -> tuple[str, ...]:
    available = getattr(getattr(torch.amp, "autocast_mode", None), "is_autocast_available", None)
    try:
        if available is not None and not available("mps"):
            return ()
        if not torch._C._dispatch_has_kernel_for_dispatch_key("aten::mm", "AutocastMPS"):
            return ()
    except (AttributeError, RuntimeError):  # private API, or a torch without the AutocastMPS key
        return ()
    accepted = []
    for fmt, dtype in _MPS_AUTOCAST_DTYPES.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                ctx = torch.autocast("mps", dtype=dtype)
            except (RuntimeError, ValueError, AssertionError):
                continue
        if not caught and getattr(ctx, "_enabled", True):
            accepted.append(fmt)
    return tuple(accepted)


def device_report(
    *, cpu: CPUInfo | None = None, gpu_properties=None, mps: MPSInfo | None = None, no_gpu: bool = False
) -> DeviceReport:
    """Probe this machine; ``cpu``, ``gpu_properties`` (see :func:`gpu_info`) and ``mps`` replace the probes to
    describe another machine, ``no_gpu=True`` describes it without a GPU (neither GPU probe runs)."""
    if cpu is not None and not isinstance(cpu, CPUInfo):
        raise TypeError(f"cpu must be a CPUInfo, got {type(cpu).__name__}")
    if mps is not None and not isinstance(mps, MPSInfo):
        raise TypeError(f"mps must be an MPSInfo (or None: probe this machine), got {type(mps).__name__}")
    if not isinstance(no_gpu, bool):
        raise TypeError(f"no_gpu must be True or False, got {no_gpu!r}")
    if no_gpu and gpu_properties is not None:
        raise ValueError("no_gpu=True and gpu_properties contradict each other: give one or the other")
    gpu = None if no_gpu else gpu_info(gpu_properties)
    if mps is None and not no_gpu:
        mps = mps_info()
    notes = []
    if gpu is not None and gpu.rocm:
        notes.append(
            "AMD GPU (ROCm): torch runs it as the 'cuda' device; the NVIDIA tensor-core table "
            "does not apply, so its formats are not classified"
        )
    if mps is not None and mps.available:
        notes.append(
            "Apple GPU (MPS): the lessons do not use it; default_device() is "
            f"{'cuda' if gpu is not None else 'cpu'}, so the experiments run "
            f"{'on the CUDA GPU' if gpu is not None else 'on the CPU'}"
        )
    cpu = cpu if cpu is not None else cpu_info()
    return DeviceReport(torch.__version__, sys.version.split()[0], cpu, gpu, tuple(notes), mps)


def default_device() -> torch.device:
    """``cuda`` if a GPU is usable through ``torch.cuda``, else ``cpu`` (never ``mps``)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")
