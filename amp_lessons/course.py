"""The course's lessons, in order, and a workshop schedule computed from their time estimates."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from ._table import Cell, html_table
from ._validate import flag, int_in

__all__ = [
    "DAY_TWO",
    "LESSONS",
    "Lesson",
    "LessonSupport",
    "MODES",
    "Runs",
    "Schedule",
    "TOPICS",
    "WhatRunsWhere",
    "apple_gpu_unused",
    "check_report",
    "gpu_lacks",
    "lesson_devices",
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
    # README.md's lesson table: what the learner sees in the lesson (scripts/registry_docs.py writes the table)
    shows: str = ""
    # instructors/README.md's solutions table: the lesson's graded exercises, "" for none (its solutions are
    # instructors/solutions_<number>.py)
    exercises: str = ""


LESSONS: tuple[Lesson, ...] = (
    Lesson(
        "00",
        "00_start_here.ipynb",
        "Start here",
        15,
        "what the course teaches, this machine's hardware report, how to work the notebooks",
        shows="the plan, your machine's hardware report, what runs natively / emulated / as reference",
    ),
    Lesson(
        "01",
        "01_float_formats.ipynb",
        "Floating-point formats and their bits",
        50,
        "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error",
        topic="bits",
        shows=(
            "fp32, TF32, fp16, bf16, fp8 as bits; range versus precision; rounding and its error; bit explorer "
            "and format designer"
        ),
        exercises="largest finite value, bf16 ulp, decode an e4m3 byte, choose a format",
    ),
    Lesson(
        "02",
        "02_tf32.ipynb",
        "TF32",
        40,
        "what TF32 matmuls cost in accuracy and buy in speed; the switches",
        topic="tf32",
        key_code=("tf32.emulated_matmul(", "torch.backends.cuda.matmul.fp32_precision"),
        shows=(
            "TF32's switches (current and legacy API), its error against fp64 (real on an Ampere+ GPU; "
            "elsewhere modelled: inputs rounded to TF32 bit-exactly, products summed in float32), error "
            "against K, speed with GPU references"
        ),
        exercises="round to TF32 on the bits and a TF32 matmul by hand, bf16/TF32 error ratio",
    ),
    Lesson(
        "03",
        "03_fp16_overflow_underflow.ipynb",
        "fp16 overflow, underflow and swamping",
        50,
        "the failure modes that mixed precision is designed around",
        topic="fp16",
        key_code=("def sgd_step(", "quantize(weights, fmt)", "sgd_step("),
        shows=(
            "overflow (the 4096 x 16 sum explained correctly), swamping and Kahan summation, lost weight "
            "updates and fp32 master weights, a gradient census, and how a smaller loss pushes it under fp16's "
            "range; magnitude and sum explorers"
        ),
        exercises="value where a running sum stalls, smallest update that survives",
    ),
    Lesson(
        "04",
        "04_autocast_policies.ipynb",
        "Autocast policies",
        50,
        "which op runs in which precision, where the casts go, CPU versus CUDA",
        topic="autocast",
        key_code=("torch.autocast(", "autocast.trace(", "torch.library.register_autocast(", "torch.amp.custom_fwd("),
        shows=(
            "the CPU and CUDA autocast policy tables of the installed torch (CUDA previewed with fake CUDA "
            "tensors), eligibility rules, op-by-op dtype traces, the profiler tree and the cost of casts, "
            "custom ops, troubleshooting"
        ),
        exercises="predict each op's dtype under autocast, make a banned loss work under autocast",
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
        shows=(
            "gradient histograms against fp16's range, a scale slider and the safe window, loss scaling from "
            "scratch checked against `GradScaler`, its state machine with sliders, training with and without "
            "scaling, the full recipe's pitfalls"
        ),
        exercises="GradScaler's update rule, smallest safe scale, the scale after a run of steps",
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
        shows=(
            "tensor-core generations, matmul throughput by dtype and size, a small transformer trained with "
            "the AMP recipe (step time, peak memory, loss), inference by autocast vs cast weights, where fp16 "
            "inference overflows; checklist and troubleshooting"
        ),
        exercises=(
            "the AMP step with gradient clipping, in the recipe's order; one optimizer step accumulated over "
            "micro-batches (each loss divided by their number, one `step` and one `update`)"
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
        shows=(
            "e4m3 and e5m2 bit by bit, what casts do on overflow, why fp8 needs scaling (per-tensor, delayed, "
            "block-wise) on a real model's tensors, `torch._scaled_mm` against an exact emulation, a miniature "
            "fp8 linear layer"
        ),
        exercises="the hybrid recipe's formats, the per-tensor scale, an fp8 linear forward",
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
        shows=(
            "a symptom index (16 symptoms, each with a repro, the diagnosis, the fix shown working and its "
            "public source: NaN loss that GradScaler cannot fix, a loss scale that halves forever, Adam's eps "
            "in fp16, scaler errors and warnings, masked softmax, dtype errors at autocast boundaries, custom "
            'autograd functions, "AMP is not faster"); a toolkit for any model: overflow/underflow tracer, '
            "speed triage, dtype map"
        ),
        exercises="the first layer that overflows fp16; a fix that keeps it in fp32",
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
        shows=(
            "mixed precision at scale on a real gloo process group of CPU processes: the dtype of every stage "
            "of a DDP + autocast step and of an FSDP2 `MixedPrecisionPolicy` step, one GradScaler decision on "
            "every rank (DDP, fp16 FSDP2), bytes per parameter measured (fp32, AMP, bf16-true, sharded), the "
            "error of bf16 vs fp32 gradient reduction up to 4096 ranks (emulated, checked against gloo), "
            "framework flags mapped"
        ),
        exercises="an fp16 FSDP2 step with a sharded loss scaler, a ring sum in bf16",
    ),
    Lesson(
        "10",
        "10_microscaling.ipynb",
        "Below 8 bits: microscaling, fp8 recipes, bf16 weights",
        45,
        "MX and NVFP4 block scales bit by bit, fp8/fp4 recipes side by side, stochastic rounding and Kahan updates",
        topic="micro",
        key_code=("def mx_block_quantize(", "def floor_shared_exponent(", "torch.frexp(", "mx_block_quantize(x, fmt)"),
        shows=(
            "below 8 bits: OCP MX (MXFP8, MXFP4) and NVFP4 block scales bit by bit, e8m0 and the floor vs "
            "round-up scale rules, fp8/fp4 recipes side by side on tensors with outliers and a gradient spike, "
            "stochastic rounding and Kahan-compensated bf16 weight updates (all emulated bit-exactly)"
        ),
        exercises="MX's RCEIL shared exponent, bf16 stochastic rounding written on the bits",
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
        shows=(
            "`torch.compile` and mixed precision, measured on this machine's CPU (Inductor generates C++; "
            "needs a C++ compiler): the graph Dynamo captures of an autocast region, eager's casts against the "
            "kernels Inductor generates, compiled bf16 against eager and fp64 with and without "
            "`emulate_precision_casts`, step and compile times, the fp8 cast probed eager and compiled"
        ),
        exercises="the fused kernel's numerics, compiling to match eager (`emulate_precision_casts`)",
    ),
)


TOPICS: tuple[str, ...] = tuple(lesson.topic for lesson in LESSONS if lesson.topic)
"""The lesson topics (sub-packages of amp_lessons), in lesson order: every list of topics derives from this."""


MODES: tuple[str, ...] = ("native", "emulated", "partly emulated", "reference")
"""How a lesson runs on a machine: on its own hardware, emulated (casts bit-exact, arithmetic modelled), partly
emulated, or shown from reference measurements recorded on a named GPU."""


@dataclass(frozen=True)
class Runs:
    """What one lesson runs on a given machine, as its topic says (``amp_lessons.<topic>.runs_where(report)``):
    ``mode`` is how (one of :data:`MODES`), ``detail`` says what and why, ``devices`` where its cells run their
    experiments ("cpu" and/or "cuda")."""

    mode: str
    detail: str
    devices: tuple[str, ...] = ("cpu",)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode={self.mode!r} is not allowed: use one of {', '.join(map(repr, MODES))}")
        if not isinstance(self.detail, str) or not self.detail:
            raise ValueError(f"detail={self.detail!r} is not allowed: say what the lesson runs, in words")
        if not self.devices or not set(self.devices) <= {"cpu", "cuda"}:
            raise ValueError(f"devices={self.devices!r} is not allowed: a tuple of 'cpu' and/or 'cuda'")


@dataclass(frozen=True)
class LessonSupport:
    """What one lesson runs on a given machine: ``mode`` is how, ``detail`` says what and why."""

    lesson: str
    title: str
    mode: str  # one of MODES
    detail: str
    devices: tuple[str, ...] = ("cpu",)  # where the lesson's cells run their experiments: "cpu" and/or "cuda"


@dataclass(frozen=True)
class WhatRunsWhere:
    """Every lesson's :class:`LessonSupport` on one machine, in lesson order: iterate it for the rows; it shows
    itself as a table."""

    rows: tuple[LessonSupport, ...]

    def __iter__(self):
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        lines = ["What each lesson runs here:"]
        lines += [f"  {s.lesson} {s.title:<38} {s.mode:<16} {s.detail}" for s in self.rows]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        tone = {"native": "good", "emulated": "warn", "partly emulated": "warn", "reference": "muted"}
        rows = [[s.lesson, s.title, Cell(s.mode, tone=tone[s.mode], bold=True), s.detail] for s in self.rows]
        return html_table(("lesson", "title", "mode", "detail"), rows, title="What each lesson runs here")


def gpu_lacks(report, feature: str, no_gpu: str, *, tensor_cores: bool = False) -> str:
    """Why ``feature`` (say "fp8") does not run natively on the GPU of ``report`` (an
    :class:`amp_lessons.device.DeviceReport`); ``no_gpu`` is the reason on a machine without one; ``tensor_cores``:
    the feature is a kind of tensor core ("the T4 has no fp8 tensor cores"). AMD GPUs are not classified."""
    g = check_report(report).gpu
    for value, what in ((feature, "feature"), (no_gpu, "no_gpu")):
        if not isinstance(value, str) or not value:
            raise TypeError(f"{what} must be a non-empty str (words of the reason), got {value!r}")
    flag(tensor_cores, "tensor_cores")
    if g is None:
        return no_gpu
    if g.rocm:
        return f"{feature} on the {g.name} (AMD) is not classified here"
    return f"the {g.name} has no {feature}{' tensor cores' if tensor_cores else ''}"


def check_report(report):
    """``report`` if it is a :class:`amp_lessons.device.DeviceReport` (known by its fields: the base does not import
    device's probes here), else a TypeError that says where one comes from."""
    if not all(hasattr(report, k) for k in ("gpu", "cpu", "apple_gpu", "device", "mps_autocast")):
        raise TypeError(
            f"report must be a DeviceReport (from amp_lessons.device.device_report()), got {type(report).__name__}"
        )
    return report


def apple_gpu_unused(report) -> str:
    """The words a lesson adds on a Mac whose Apple GPU torch can use and the lessons do not (else "")."""
    report = check_report(report)
    return "; on the CPU (the Apple GPU is not used)" if report.apple_gpu is not None and report.gpu is None else ""


def lesson_devices(report, *, cpu_part: bool = False) -> tuple[str, ...]:
    """Where a lesson that runs on the course's device (``default_device()``) runs its cells on the machine of
    ``report``; ``cpu_part=True``: a lesson with a CPU part and a CUDA branch."""
    flag(cpu_part, "cpu_part")
    if check_report(report).gpu is None:
        return ("cpu",)
    return ("cpu", "cuda") if cpu_part else ("cuda",)


def what_runs_where(report) -> WhatRunsWhere:
    """For each lesson, what runs natively on the machine of ``report`` (an
    :class:`amp_lessons.device.DeviceReport`), what is emulated, what is shown from reference measurements.

    Each topic answers for its own lesson (``amp_lessons.<topic>.runs_where(report)``), following what its cells
    do on that machine: they run on ``report.device`` (CUDA GPU or CPU), never on an Apple GPU; NVIDIA formats come
    from the compute-capability table, AMD formats are not classified (TF32 and fp8 are treated as absent, bf16
    follows torch.cuda.is_bf16_supported()). The registry imports each topic by its name, here, when asked.
    """
    check_report(report)
    rows = []
    for lesson in LESSONS:
        if lesson.topic is None:
            runs = Runs("native", "this report, probed from the CPU")
        else:
            runs = importlib.import_module(f"amp_lessons.{lesson.topic}").runs_where(report)
            if not isinstance(runs, Runs):
                raise TypeError(
                    f"amp_lessons.{lesson.topic}.runs_where returned {type(runs).__name__}, not a course.Runs"
                )
        rows.append(LessonSupport(lesson.number, lesson.title, runs.mode, runs.detail, runs.devices))
    return WhatRunsWhere(tuple(rows))


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
        int_in(v, name, 1, allowed="a positive number of minutes")
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
