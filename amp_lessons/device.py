"""What this machine is, and what each lesson can run on it: natively, emulated, or as reference.

``device_report()`` probes the CPU and the first CUDA GPU. Every probe can be replaced by data
(``cpu=``, ``gpu_properties=``), so that the GPU branches are tested on machines without one.
"""

from __future__ import annotations

import html
import platform
import sys
from dataclasses import dataclass, field

import torch

from .course import LESSONS as _COURSE

__all__ = [
    "CPUInfo",
    "DeviceReport",
    "GPUInfo",
    "LESSONS",
    "LessonSupport",
    "cpu_info",
    "default_device",
    "device_report",
    "gpu_info",
    "peak_memory_bytes",
]

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

    @property
    def bf16_hardware(self) -> bool:
        """bf16 matmuls run on dedicated instructions (AVX512-BF16 or AMX) through oneDNN."""
        return self.avx512_bf16 or self.amx_bf16

    @property
    def fp16_hardware(self) -> bool:
        """fp16 matmuls run on dedicated instructions (AMX-FP16); otherwise a slow fallback."""
        return self.amx_fp16


@dataclass(frozen=True)
class GPUInfo:
    """A CUDA GPU and the low-precision formats its tensor cores run natively."""

    name: str
    capability: tuple[int, int]
    memory_bytes: int
    multiprocessors: int = 0
    rocm: bool = False

    def __post_init__(self):
        cap = self.capability
        if (not isinstance(cap, tuple) or len(cap) != 2
                or not all(isinstance(v, int) and v >= 0 for v in cap)):
            raise ValueError(f"capability must be a (major, minor) tuple of ints >= 0, got {cap!r}")
        if not isinstance(self.memory_bytes, int) or self.memory_bytes < 0:
            raise ValueError(f"memory_bytes must be an int >= 0, got {self.memory_bytes!r}")

    def _arch(self):
        for cap, arch, gen in _ARCHITECTURES:
            if self.capability >= cap:
                return arch, gen
        raise AssertionError("unreachable: (0, 0) matches every capability")

    @property
    def architecture(self) -> str:
        return "AMD (ROCm)" if self.rocm else self._arch()[0]

    @property
    def tensor_core_generation(self) -> int:
        """NVIDIA tensor-core generation (1 Volta ... 5 Blackwell); 0 if none or unknown."""
        return 0 if self.rocm else self._arch()[1]

    @property
    def memory_gib(self) -> float:
        return self.memory_bytes / 2**30

    # Which formats the tensor cores run natively (NVIDIA; ROCm is not classified here).
    @property
    def fp16_tensor_cores(self) -> bool:
        return not self.rocm and self.capability >= (7, 0)

    @property
    def tf32(self) -> bool:
        return not self.rocm and self.capability >= (8, 0)

    @property
    def bf16(self) -> bool:
        return not self.rocm and self.capability >= (8, 0)

    @property
    def fp8(self) -> bool:
        return not self.rocm and self.capability >= (8, 9)

    @property
    def fp4(self) -> bool:
        return not self.rocm and self.capability >= (10, 0)


@dataclass(frozen=True)
class LessonSupport:
    lesson: str
    title: str
    mode: str  # "native", "emulated", "reference", "partly emulated"
    detail: str


LESSONS = {lesson.number: lesson.title for lesson in _COURSE}


@dataclass(frozen=True, repr=False)
class DeviceReport:
    torch_version: str
    python_version: str
    cpu: CPUInfo
    gpu: GPUInfo | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def device(self) -> str:
        """Where the lessons run their experiments: "cuda" if a GPU was found, else "cpu"."""
        return "cuda" if self.gpu is not None else "cpu"

    def lesson_support(self) -> list[LessonSupport]:
        """For each lesson, what runs natively here, what is emulated, what is reference."""
        g, c = self.gpu, self.cpu
        out = [
            LessonSupport("00", LESSONS["00"], "native", "this report"),
            LessonSupport(
                "01", LESSONS["01"], "native",
                "fp16/bf16/fp8 rounding by torch's own casts; TF32, fp6 and fp4 emulated bit-exactly "
                "by the formats engine (they are not torch dtypes)"),
        ]
        if g is not None and g.tf32:
            out.append(LessonSupport("02", LESSONS["02"], "native", f"real TF32 matmuls on the {g.name}"))
        else:
            why = f"the {g.name} has no TF32" if g is not None else "no CUDA GPU"
            out.append(LessonSupport(
                "02", LESSONS["02"], "emulated",
                f"{why}: TF32 inputs emulated bit-exactly, multiplied in fp32; GPU speed from reference"))
        out.append(LessonSupport(
            "03", LESSONS["03"], "native", "fp16/bf16 tensors and sums run on any device (kept small on CPU)"))
        if g is not None:
            out.append(LessonSupport("04", LESSONS["04"], "native", "CPU and CUDA autocast both run here"))
        else:
            out.append(LessonSupport(
                "04", LESSONS["04"], "partly emulated",
                "CPU autocast runs here; the CUDA policy is previewed with fake CUDA tensors"))
        out.append(LessonSupport(
            "05", LESSONS["05"], "native",
            f"GradScaler('{self.device}') with fp16 autocast on a small model"))
        if g is not None and (g.bf16 or g.fp16_tensor_cores):
            fmts = "bf16 and fp16" if g.bf16 else "fp16 (no bf16 tensor cores)"
            out.append(LessonSupport("06", LESSONS["06"], "native", f"{fmts} training and inference timed on the {g.name}"))
        elif c.bf16_hardware:
            out.append(LessonSupport(
                "06", LESSONS["06"], "partly emulated",
                "bf16 measured on this CPU (it has bf16 instructions); fp16 and GPU speed-ups from reference"))
        else:
            out.append(LessonSupport(
                "06", LESSONS["06"], "reference",
                "this CPU has no bf16/fp16 matrix instructions: accuracy measured here, speed from reference"))
        if g is not None and g.fp8:
            out.append(LessonSupport("07", LESSONS["07"], "native", f"fp8 scaled matmuls on the {g.name}'s tensor cores"))
        else:
            out.append(LessonSupport(
                "07", LESSONS["07"], "emulated",
                "fp8 casts and torch._scaled_mm run on the CPU (no fp8 hardware); speed from reference"))
        return out

    def rows(self) -> list[tuple[str, str]]:
        c, g = self.cpu, self.gpu
        yes = {True: "yes", False: "no"}
        rows = [
            ("torch", self.torch_version),
            ("python", self.python_version),
            ("CPU", f"{c.name} ({c.arch}), {c.threads} threads"),
            ("CPU capability", c.capability),
            ("CPU bf16 instructions", f"{yes[c.bf16_hardware]} (AVX512-BF16 {yes[c.avx512_bf16]}, AMX {yes[c.amx_bf16]})"),
            ("CPU fp16 instructions", f"{yes[c.fp16_hardware]} (AMX-FP16 {yes[c.amx_fp16]})"),
        ]
        if g is None:
            rows.append(("GPU", "none found: experiments run on the CPU"))
        else:
            rows += [
                ("GPU", f"{g.name}, {g.memory_gib:.1f} GiB, {g.multiprocessors} SMs"),
                ("compute capability", f"{g.capability[0]}.{g.capability[1]} ({g.architecture})"),
                ("tensor cores", f"generation {g.tensor_core_generation}" if g.tensor_core_generation else "none known"),
                ("native formats", ", ".join(n for n, ok in (("fp16", g.fp16_tensor_cores), ("TF32", g.tf32),
                                                               ("bf16", g.bf16), ("fp8", g.fp8), ("fp4", g.fp4)) if ok) or "none"),
            ]
        rows += [("note", n) for n in self.notes]
        return rows

    def __str__(self) -> str:
        width = max(len(k) for k, _ in self.rows())
        lines = ["Hardware report (measured on this machine)"]
        lines += [f"  {k:<{width}}  {v}" for k, v in self.rows()]
        lines.append("What each lesson runs here:")
        lines += [f"  {s.lesson} {s.title:<38} {s.mode:<16} {s.detail}" for s in self.lesson_support()]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        esc = html.escape
        t = "".join(f"<tr><th style='text-align:left'>{esc(k)}</th><td style='text-align:left'>{esc(v)}</td></tr>"
                    for k, v in self.rows())
        colour = {"native": "#1a7f37", "emulated": "#9a6700", "partly emulated": "#9a6700", "reference": "#6e7781"}
        ls = "".join(
            f"<tr><td>{s.lesson}</td><td style='text-align:left'>{esc(s.title)}</td>"
            f"<td style='color:{colour[s.mode]};font-weight:bold'>{s.mode}</td>"
            f"<td style='text-align:left'>{esc(s.detail)}</td></tr>" for s in self.lesson_support())
        return (f"<b>Hardware report</b> (measured on this machine)<table>{t}</table>"
                f"<b>What each lesson runs here</b><table><tr><th>lesson</th><th>title</th><th>mode</th>"
                f"<th style='text-align:left'>detail</th></tr>{ls}</table>")


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
    )


def _cpu_model_name() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def gpu_info(properties=None) -> GPUInfo | None:
    """The first CUDA GPU, or None. ``properties`` replaces ``torch.cuda.get_device_properties(0)``
    (anything with name, major, minor, total_memory, multi_processor_count)."""
    if properties is None:
        if not torch.cuda.is_available():
            return None
        properties = torch.cuda.get_device_properties(0)
    return GPUInfo(
        name=str(properties.name),
        capability=(int(properties.major), int(properties.minor)),
        memory_bytes=int(properties.total_memory),
        multiprocessors=int(getattr(properties, "multi_processor_count", 0)),
        rocm=getattr(torch.version, "hip", None) is not None,
    )


def device_report(*, cpu: CPUInfo | None = None, gpu_properties=None, no_gpu: bool = False) -> DeviceReport:
    """Probe this machine. Pass ``cpu``/``gpu_properties`` to describe another machine (tests),
    or ``no_gpu=True`` to describe this one as if it had no GPU."""
    if cpu is not None and not isinstance(cpu, CPUInfo):
        raise TypeError(f"cpu must be a CPUInfo, got {type(cpu).__name__}")
    gpu = None if no_gpu else gpu_info(gpu_properties)
    notes = []
    if gpu is not None and gpu.rocm:
        notes.append("ROCm GPU: the native-format columns cover NVIDIA GPUs only")
    return DeviceReport(
        torch_version=torch.__version__,
        python_version=sys.version.split()[0],
        cpu=cpu if cpu is not None else cpu_info(),
        gpu=gpu,
        notes=tuple(notes),
    )


def default_device() -> torch.device:
    """``cuda`` if a CUDA GPU is usable, else ``cpu`` (never fails)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def peak_memory_bytes(pid: int | None = None) -> int | None:
    """Peak resident memory (bytes) of process ``pid`` (default: this one), or None where unknown.

    Read from ``/proc/<pid>/status`` (``VmHWM``) on Linux; elsewhere, for this process only, from
    ``resource.getrusage`` (kilobytes on Linux, bytes on macOS). The tests use it to check that no
    notebook's kernel goes above the course's memory budget.
    """
    if pid is not None and (isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0):
        raise ValueError(f"pid must be a positive int or None (this process), got {pid!r}")
    target = "self" if pid is None else str(pid)
    try:
        with open(f"/proc/{target}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if pid is None:
        try:
            import resource
        except ImportError:  # Windows
            return None
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024
    return None
