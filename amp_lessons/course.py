"""The course's lessons, in order, and a workshop schedule computed from their time estimates."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._table import html_table

__all__ = [
    "DAY_TWO",
    "LESSONS",
    "Lesson",
    "LessonSupport",
    "Schedule",
    "TOPICS",
    "what_runs_where",
    "workshop_schedule",
]


@dataclass(frozen=True)
class Lesson:
    number: str
    notebook: str
    title: str
    minutes: int
    summary: str
    topic: str | None = None  # the lesson's sub-package of amp_lessons (amp_lessons.<topic>); None for lesson 00
    # Calls the lesson is about, which its own code cells must contain (not only its comments or the package):
    # tests/test_key_code.py asserts them. Cells marked ``#| export`` are copied to amp_lessons/<topic>/key_code.py.
    key_code: tuple[str, ...] = ()


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "00",
        "00_start_here.ipynb",
        "Start here",
        15,
        "what the course teaches, this machine's hardware report, how to work the notebooks",
    ),
    Lesson(
        "01",
        "01_float_formats.ipynb",
        "Floating-point formats and their bits",
        50,
        "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error",
        topic="bits",
    ),
    Lesson(
        "02",
        "02_tf32.ipynb",
        "TF32",
        40,
        "what TF32 matmuls cost in accuracy and buy in speed; the switches",
        topic="tf32",
        key_code=("tf32.emulated_matmul(", "torch.backends.cuda.matmul.fp32_precision"),
    ),
    Lesson(
        "03",
        "03_fp16_overflow_underflow.ipynb",
        "fp16 overflow, underflow and swamping",
        50,
        "the failure modes that mixed precision is designed around",
        topic="fp16",
        key_code=("def sgd_step(", "quantize(weights, fmt)", "sgd_step("),
    ),
    Lesson(
        "04",
        "04_autocast_policies.ipynb",
        "Autocast policies",
        50,
        "which op runs in which precision, where the casts go, CPU versus CUDA",
        topic="autocast",
        key_code=("torch.autocast(", "autocast.trace(", "torch.library.register_autocast(", "torch.amp.custom_fwd("),
    ),
    Lesson(
        "05",
        "05_loss_scaling.ipynb",
        "Loss scaling",
        50,
        "gradient histograms, static and dynamic scaling, GradScaler's state machine",
        topic="scaling",
        key_code=(
            "torch.amp.GradScaler(",
            "scaler.scale(",
            "scaler.step(",
            "scaler.update(",
            "scaler.unscale_(",
            "torch.autocast(",
            "update_scale(",
        ),
    ),
    Lesson(
        "06",
        "06_amp_end_to_end.ipynb",
        "AMP end to end",
        60,
        "tensor cores, speed, memory and accuracy of real training and inference",
        topic="e2e",
        key_code=(
            "torch.autocast(",
            "GradScaler(",
            "scaler.scale(",
            "scaler.unscale_(",
            "clip_grad_norm_(",
            "scaler.step(",
            "scaler.update(",
        ),
    ),
    Lesson(
        "07",
        "07_fp8.ipynb",
        "fp8",
        50,
        "e4m3 and e5m2, per-tensor and block scaling, scaled matmuls",
        topic="fp8",
        key_code=(
            "torch.autograd.Function",
            "ctx.save_for_backward(",
            "torch._scaled_mm(",
            "torch.float8_e4m3fn",
            "amax_scale(",
            "fake_quantize(",
            ".amax(dim=(1, 3))",
        ),
    ),
    Lesson(
        "08",
        "08_debugging.ipynb",
        "When mixed precision goes wrong",
        60,
        "a symptom index with a repro per symptom; an overflow tracer, a speed triage and a dtype map for any model",
        topic="debug",
        key_code=(
            "debug.trace_overflow(",
            "debug.why_not_faster(",
            "torch.autograd.detect_anomaly(",
            "scaler.unscale_(",
            "torch.autocast(device_type, enabled=False)",
        ),
    ),
    Lesson(
        "09",
        "09_distributed.ipynb",
        "Mixed precision at scale: DDP and FSDP2",
        60,
        "real gloo process groups: dtypes of DDP and FSDP2 steps, one scaler decision, bytes per parameter, "
        "the precision of gradient reduction",
        topic="distributed",
        key_code=(
            "DistributedDataParallel(",
            "torch.autocast(",
            "GradScaler(",
            "register_comm_hook(",
            "fully_shard(",
            "MixedPrecisionPolicy(",
            "run_group(",
        ),
    ),
    Lesson(
        "10",
        "10_microscaling.ipynb",
        "Below 8 bits: microscaling, fp8 recipes, bf16 weights",
        45,
        "MX and NVFP4 block scales bit by bit, fp8/fp4 recipes side by side, stochastic rounding and Kahan updates",
        topic="micro",
        key_code=("def mx_block_quantize(", "def floor_shared_exponent(", "torch.frexp(", "mx_block_quantize(x, fmt)"),
    ),
    Lesson(
        "11",
        "11_compile.ipynb",
        "torch.compile and mixed precision",
        40,
        "the graph Dynamo captures of an autocast region, the casts Inductor fuses away, why compiled bf16 differs "
        "from eager, step and compile times",
        topic="compiled",
        key_code=(
            "torch.compile(",
            "emulate_precision_casts",
            "torch._inductor.config.patch(",
            "backend=recorder",
            "torch._logging.set_logs(graph_code=True)",
        ),
    ),
)


TOPICS: tuple[str, ...] = tuple(lesson.topic for lesson in LESSONS if lesson.topic)
"""The lesson topics (sub-packages of amp_lessons), in lesson order: every list of topics derives from this."""


@dataclass(frozen=True)
class LessonSupport:
    """What one lesson runs on a given machine: ``mode`` is how, ``detail`` says what and why."""

    lesson: str
    title: str
    mode: str  # "native", "emulated", "reference", "partly emulated"
    detail: str
    devices: tuple[str, ...] = ("cpu",)  # where the lesson's cells run their experiments: "cpu" and/or "cuda"


_TITLES = {lesson.number: lesson.title for lesson in LESSONS}


def _lacks(g, feature: str, no_gpu: str, hardware: str = "") -> str:
    """Why ``feature`` does not run natively on GPU ``g`` (None: no GPU): AMD GPUs are not classified."""
    if g is None:
        return no_gpu
    if g.rocm:
        return f"{feature} on the {g.name} (AMD) is not classified here"
    return f"the {g.name} has no {feature}{hardware}"


def what_runs_where(report) -> list[LessonSupport]:
    """For each lesson, what runs natively on the machine of ``report`` (an
    :class:`amp_lessons.device.DeviceReport`), what is emulated, what is shown from reference measurements.

    Follows what the lessons do on that machine: they run on ``report.device`` (CUDA GPU or CPU),
    never on an Apple GPU; NVIDIA formats come from the compute-capability table, AMD formats are
    not classified (TF32 and fp8 are treated as absent, bf16 follows torch.cuda.is_bf16_supported()).
    """
    # a DeviceReport by its fields (course cannot import device, which imports course)
    if not all(hasattr(report, k) for k in ("gpu", "cpu", "apple_gpu", "device")):
        raise TypeError(
            f"report must be a DeviceReport (from amp_lessons.device.device_report()), got {type(report).__name__}"
        )
    g, c, a = report.gpu, report.cpu, report.apple_gpu
    amd = g is not None and g.rocm
    on_cpu = "; on the CPU (the Apple GPU is not used)" if a is not None and g is None else ""
    gpu = ("cuda",) if g is not None else ("cpu",)  # lessons that run on the course's device (default_device())
    both = ("cpu", "cuda") if g is not None else ("cpu",)  # lessons with a CPU part and a CUDA branch
    out = [
        LessonSupport("00", _TITLES["00"], "native", "this report, probed from the CPU"),
        LessonSupport(
            "01",
            _TITLES["01"],
            "native",
            "on the CPU: fp16/bf16/fp8 rounding by torch's own casts; TF32, fp6 and fp4 emulated bit-exactly "
            "by the formats engine (they are not torch dtypes)",
        ),
    ]
    if g is not None and g.tf32:
        out.append(LessonSupport("02", _TITLES["02"], "native", f"real TF32 matmuls on the {g.name}", gpu))
    else:
        why = _lacks(g, "TF32", "no CUDA GPU")
        out.append(
            LessonSupport(
                "02",
                _TITLES["02"],
                "emulated",
                f"{why}: TF32 modelled (inputs rounded bit-exactly, fp32 sums); GPU speed from reference{on_cpu}",
                gpu,
            )
        )
    out.append(
        LessonSupport(
            "03", _TITLES["03"], "native", f"fp16/bf16 tensors and sums run on any device (kept small on CPU){on_cpu}"
        )
    )
    if g is None:
        mps = f"; {report.mps_autocast}, but the lesson does not use the Apple GPU" if a is not None else ""
        out.append(
            LessonSupport(
                "04",
                _TITLES["04"],
                "partly emulated",
                f"CPU autocast runs here; the CUDA policy is previewed with fake CUDA tensors{mps}",
            )
        )
    elif amd:
        out.append(
            LessonSupport(
                "04",
                _TITLES["04"],
                "native",
                f"CPU and CUDA autocast both run here (on ROCm, torch's 'cuda' device is the {g.name})",
                both,
            )
        )
    elif not g.bf16:
        out.append(
            LessonSupport(
                "04",
                _TITLES["04"],
                "native",
                f"CPU and CUDA autocast both run here; the {g.name} has no bf16 tensor cores, so CUDA "
                "bf16 autocast runs emulated (slow)",
                both,
            )
        )
    else:
        out.append(
            LessonSupport(
                "04",
                _TITLES["04"],
                "native",
                "CPU and CUDA autocast both run here; the CUDA policy is also previewed with fake CUDA tensors",
                both,
            )
        )
    out.append(
        LessonSupport(
            "05",
            _TITLES["05"],
            "native",
            "GradScaler('cpu') with fp16 autocast on a small model, on the CPU whatever the machine has (on a GPU "
            f"the recipe is the same with the device 'cuda'){on_cpu}",
        )
    )
    if amd:
        if g.bf16:
            fmts = "fp16 and bf16"
        else:
            fmts = (
                "fp16 (bf16 run skipped: torch.cuda.is_bf16_supported() said no)"
                if g.bf16_supported is False
                else "fp16 (bf16 run skipped: bf16 support not probed)"
            )
        out.append(
            LessonSupport(
                "06",
                _TITLES["06"],
                "native",
                f"{fmts} training and inference timed on the {g.name} (AMD: whether they run on its matrix "
                "cores is not classified here)",
                gpu,
            )
        )
    elif g is not None and g.bf16:
        out.append(
            LessonSupport(
                "06", _TITLES["06"], "native", f"bf16 and fp16 training and inference timed on the {g.name}", gpu
            )
        )
    elif g is not None and g.fp16_tensor_cores:
        out.append(
            LessonSupport(
                "06",
                _TITLES["06"],
                "native",
                f"fp16 training and inference timed on the {g.name}; it has no bf16 tensor cores: bf16 "
                "runs emulated (slow) and the bf16 training run is skipped",
                gpu,
            )
        )
    elif c.bf16_hardware:
        out.append(
            LessonSupport(
                "06",
                _TITLES["06"],
                "partly emulated",
                f"bf16 measured on this CPU (it has bf16 instructions); fp16 and GPU speed-ups from reference{on_cpu}",
            )
        )
    else:
        out.append(
            LessonSupport(
                "06",
                _TITLES["06"],
                "reference",
                "this CPU has no bf16/fp16 matrix instructions: fp32 and bf16 training measured here on a model "
                f"scaled to the bf16 rate measured first (bf16 is slower here); GPU speed-ups from reference{on_cpu}",
            )
        )
    # lesson 07 runs its fp8 casts and torch._scaled_mm on the CPU on every machine (small, exact, comparable);
    # the speed of fp8 tensor cores is the H100 reference
    if g is not None and g.fp8:
        why = f"the {g.name} has fp8 tensor cores, which the lesson's cells do not use"
    else:
        why = _lacks(g, "fp8", "no CUDA GPU with fp8 tensor cores", " tensor cores")
    out.append(
        LessonSupport(
            "07",
            _TITLES["07"],
            "emulated",
            f"fp8 casts and torch._scaled_mm run on the CPU ({why}); speed from the H100 reference{on_cpu}",
        )
    )
    if g is not None:
        out.append(
            LessonSupport(
                "08",
                _TITLES["08"],
                "native",
                "the repros and the toolkit run on the CPU; one cell shows that torch.amp.GradScaler() without a device "
                "is enabled here (it means 'cuda')",
                both,
            )
        )
    else:
        out.append(
            LessonSupport(
                "08",
                _TITLES["08"],
                "partly emulated",
                "fp16/bf16 repros run on this CPU (kept tiny); fp16 gradient underflow emulated bit-exactly; "
                f"GPU-only symptoms shown as CPU analogues with public references{on_cpu}",
            )
        )
    out.append(
        LessonSupport(
            "09",
            _TITLES["09"],
            "partly emulated",
            "real DDP and FSDP2 steps on 2-4 CPU processes joined by gloo (the lesson runs no NCCL or GPU "
            "collective); reductions over thousands of ranks emulated bit-exactly, checked against gloo",
        )
    )
    out.append(
        LessonSupport(
            "10",
            _TITLES["10"],
            "emulated",
            "fp4/fp6/e8m0 formats and MX/NVFP4 block scaling rounded bit-exactly by the formats engine (native "
            "only on Blackwell-class GPUs, which the lesson does not use); stochastic rounding and Kahan run on the CPU",
        )
    )
    out.append(
        LessonSupport(
            "11",
            _TITLES["11"],
            "native",
            "torch.compile with Inductor's CPU backend (generated C++, needs a C++ compiler) on this CPU; on a GPU "
            "Inductor would generate Triton kernels instead",
        )
    )
    return out


#: The lesson that opens the second day of a two-day workshop: day one teaches the foundations and the whole AMP
#: recipe (00-06); day two what comes after it (fp8, debugging, distributed training, microscaling, torch.compile).
DAY_TWO = "07"


@dataclass(frozen=True)
class Schedule:
    rows: tuple[tuple[str, str, str, int, str], ...]  # (start, lesson, title, minutes, status); "day" rows split days
    end: str

    @property
    def teaching_minutes(self) -> int:
        return sum(r[3] for r in self.rows if r[1] not in ("break", "day"))

    @property
    def days(self) -> int:
        return 1 + sum(r[1] == "day" for r in self.rows)

    def __repr__(self) -> str:
        lines = [f"{'start':<6} {'lesson':<7} {'min':>4}  title"]
        for s, n, t, m, st in self.rows:
            if n == "day":
                lines.append(f"{s:<6} {'':<7} {'':>4}  {t}")
            else:
                lines.append(f"{s:<6} {n:<7} {m:>4}  {t}{'  (' + st + ')' if st not in ('ready', '') else ''}")
        lines.append(f"{self.end:<6} end    ({self.teaching_minutes} min of lessons)")
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The schedule as a Markdown table (instructors/README.md holds the default workshop's)."""
        lines = ["| start | lesson | title | minutes |", "|---|---|---|---|"]
        for s, n, t, m, _ in self.rows:
            if n == "day":
                lines.append(f"| {s} | — | **{t}** | |")
            else:
                lines.append(f"| {s} | {'—' if n == 'break' else n} | {t} | {m} |")
        lines.append(f"| {self.end} | end | {self.teaching_minutes} min of lessons | |")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = [[s, "" if n == "day" else n, t, "" if n == "day" else str(m), st] for s, n, t, m, st in self.rows]
        rows.append([self.end, "end", f"{self.teaching_minutes} min of lessons", "", ""])
        return html_table(("start", "lesson", "title", "minutes", "status"), rows)


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def workshop_schedule(
    start: str = "09:00",
    break_every: int = 90,
    break_minutes: int = 15,
    lunch_minutes: int = 45,
    notebooks_dir: str | Path | None = None,
    days: int = 2,
) -> Schedule:
    """A schedule through every lesson from ``start`` ("HH:MM"), with a break whenever at least
    ``break_every`` minutes have passed since the last one; the first break at or after 12:00 is
    lunch. ``days=2`` (the default) splits the course over two days, the second starting with lesson
    :data:`DAY_TWO` at ``start``; ``days=1`` runs it all in one (long) day. With ``notebooks_dir``, lessons
    whose notebook is not there are marked "coming"."""
    try:
        h, m = (int(v) for v in start.split(":"))
        if not (0 <= h < 24 and 0 <= m < 60):
            raise ValueError
    except (ValueError, AttributeError):
        raise ValueError(f"start must be a time like '09:00', got {start!r}") from None
    for name, v in (("break_every", break_every), ("break_minutes", break_minutes), ("lunch_minutes", lunch_minutes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive number of minutes, got {v!r}")
    if isinstance(days, bool) or days not in (1, 2):
        raise ValueError(f"days must be 1 or 2, got {days!r}")
    if notebooks_dir is not None and not isinstance(notebooks_dir, (str, Path)):
        raise TypeError(f"notebooks_dir must be None or a folder (str or Path), got {type(notebooks_dir).__name__}")
    t = h * 60 + m
    since_break, rows, had_lunch = 0, [], False
    for lesson in LESSONS:
        if days == 2 and lesson.number == DAY_TWO:
            rows.append((_clock(t), "day", f"end of day 1; day 2 starts at {start}", 0, ""))
            t, since_break, had_lunch = h * 60 + m, 0, False
        elif since_break >= break_every:
            lunch = not had_lunch and t >= 12 * 60
            had_lunch |= lunch
            length = lunch_minutes if lunch else break_minutes
            rows.append((_clock(t), "break", "lunch" if lunch else "break", length, ""))
            t, since_break = t + length, 0
        status = "ready"
        if notebooks_dir is not None and not (Path(notebooks_dir) / lesson.notebook).exists():
            status = "coming"
        rows.append((_clock(t), lesson.number, lesson.title, lesson.minutes, status))
        t += lesson.minutes
        since_break += lesson.minutes
    return Schedule(tuple(rows), _clock(t))


def main(argv: list[str] | None = None) -> int:
    """``python -m amp_lessons.course [--start HH:MM] ...``: print the workshop schedule (Markdown)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m amp_lessons.course", description=main.__doc__)
    parser.add_argument("--start", default="09:00")
    parser.add_argument("--break-every", type=int, default=90)
    parser.add_argument("--break-minutes", type=int, default=15)
    parser.add_argument("--lunch-minutes", type=int, default=45)
    parser.add_argument("--days", type=int, default=2, choices=(1, 2))
    args = parser.parse_args(argv)
    try:
        schedule = workshop_schedule(
            args.start, args.break_every, args.break_minutes, args.lunch_minutes, days=args.days
        )
    except ValueError as e:
        parser.error(str(e))
    print(schedule.to_markdown())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
