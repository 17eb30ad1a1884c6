"""``make gpu-check``: everything the course can only check on an NVIDIA GPU, in one command of at most 9 minutes.

Run it on a machine with one CUDA GPU (compute capability 8.0 or newer for TF32 and bf16, 8.9 or newer
for fp8)::

    make gpu-check                          # setup, then: python delivery/gpu_check/gpu_check.py
    python delivery/gpu_check/gpu_check.py --plan      # the time budget of each step, nothing run
    python delivery/gpu_check/gpu_check.py --only tf32_rounding scaled_mm --skip-pytest --skip-references

Steps, in order, each under a hard time limit (:data:`PLAN`; the limits add up to :data:`BUDGET_S`, which
leaves ``make setup`` the rest of the 9 minutes):

1. ``pytest -n <cores> --dist loadfile tests notebooks --ignore=tests/browser``: the unit tests and nbval, on the GPU;
2. ``python -m amp_lessons.reference record --file <results>/references.json``: the course's reference measurements;
3. the hardware-vs-emulation checks (:data:`CHECKS`), in a child process, one JSON file each:

   (a) ``tf32_rounding``: how the GPU rounds fp32 inputs to TF32, per op (mm, linear, addmm, bmm at
       n = 8, 64, 4096 and cuDNN conv2d): ``A @ I`` and ``I @ A`` with I the identity, so that every
       product is exact and only the rounding of the inputs shows; the inputs hold many exact ties (low 13
       mantissa bits 0x1000). Mismatches are counted against the three models nearest_even,
       nearest_away and toward_zero of :func:`amp_lessons.formats.quantize`, and against the unrounded
       fp32 input (a kernel that does not use TF32 at all);
   (b) ``lowp_matmul``: fp16 and bf16 matmuls against an fp32-accumulating emulation of the same (exact)
       inputs, in ulps of the result;
   (c) ``scaled_mm``: ``torch._scaled_mm`` (e4m3 x e4m3 -> bf16, tensorwise scales) against an fp32
       emulation of the scaled fp8 product, and ``use_fast_accum`` True/False at large K against the exact
       product of the fp8 inputs (sm_89 or newer; "skipped: needs sm_89+" otherwise);
   (d) ``autocast_policy``: every op of ``amp_lessons.autocast.policy_table("cuda")`` under real CUDA
       autocast against the fake-CUDA preview (``autocast.trace(..., device_type="cuda", fake=True)``);
   (e) ``timing_helper``: ``amp_lessons.timing.time_fn`` against ``triton.testing.do_bench`` on an 8192^3
       bf16 matmul (do_bench skipped, with a note, where triton is not installed);
   (f) ``amp_step``: the course's AMP step (``amp_lessons.e2e.amp_step``, bf16 autocast) against a minimal
       bf16 autocast loop on the same model and data, ms per step;
   (g) ``lowp_sum``: the fp16/bf16 matmul's summation seen in fp32 outputs (``torch.mm(a, b,
       out_dtype=torch.float32)``, else a TF32 matmul of the exact inputs, said in the result), against a
       sequential fp32 sum of the exact products and the exact product rounded to fp32: max and mean fp32 ulps;
   (h) ``cross_entropy``: ``F.cross_entropy`` of a small Linear under real fp16 and bf16 CUDA autocast, forward and
       backward (``amp_lessons.autocast.trace(..., fake=False, backward=True)``): the dtype of each
       log_softmax / nll_loss op;
   (i) ``fp8_cast_costs``: lesson 07's cast-cost table on the GPU (``amp_lessons.fp8.fp8_cast_costs``: the fp8 kernel
       alone, with the eager amax + casts of both inputs, with the casts compiled) at 256x512x256 and 8192^3;
   (j) ``launch_bound``: lesson 06's launch-bound demo on the GPU (``amp_lessons.e2e.launch_bound_demo``).

Everything lands in one folder, ``gpu-check-results/<date>-<gpu>/`` (git-ignored): ``pytest.json`` and
``pytest.log``, ``references.json`` (the recorded references, :mod:`amp_lessons.reference`'s format) with
``record_references.json`` and its log, ``check_<name>.json`` for each check, and ``summary.txt``, the
table printed at the end. The exit status is 0 only if pytest passed and every step and check ran
(a finding such as a rounding model that does not match is data, not a failure).

Offline GPU machines: ``make gpu-wheels`` (``delivery/gpu_check/gpu_wheels.py``) downloads the pinned wheels of
``requirements.txt``, triton and the build backend into ``gpu-wheelhouse/`` on a machine with network; copy
that folder next to the checkout, and ``make gpu-check`` installs from it with ``pip --no-index
--find-links gpu-wheelhouse`` (``--wheelhouse`` here installs triton from it if it is missing).

This file is the command: the plan and its time budget, the results folder and summary, running the steps and
the command line. The checks are functions in the modules next to it: (a) to (c) and (g), the GPU's arithmetic
against emulations, in ``gpu_check_arithmetic.py``; (d) to (f) and (h) to (j), the course's tools and lessons against CUDA, in
``gpu_check_tools.py``;
their argument checks in ``gpu_check_args.py``.

Without a GPU the script stops at once with exit status 2 and says what each step needs. Its CPU parts
(the TF32 mismatch counter and tie inputs, the emulations, the results writer and summary, the budget plan)
are tested in ``delivery/tests/test_gpu_check.py``. Importing this module makes no CUDA call.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from amp_lessons import table

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the checks live next to this script: importable also when it is loaded by its path
    sys.path.append(str(HERE))

from gpu_check_args import number_arg  # noqa: E402
from gpu_check_arithmetic import check_lowp_matmul, check_lowp_sum, check_scaled_mm, check_tf32_rounding  # noqa: E402
from gpu_check_tools import (  # noqa: E402
    check_amp_step,
    check_autocast_policy,
    check_cross_entropy,
    check_fp8_cast_costs,
    check_launch_bound,
    check_timing_helper,
)

ROOT = HERE.parents[1]  # the repository (delivery/gpu_check/../..)
RESULTS_ROOT = ROOT / "gpu-check-results"
WHEELHOUSE = ROOT / "gpu-wheelhouse"
NO_GPU_EXIT = 2


# --------------------------------------------------------------------------------------------
# The time budget
# --------------------------------------------------------------------------------------------

TOTAL_S = 540.0
"""The promise: ``make gpu-check`` takes at most 9 minutes on one NVIDIA GPU."""


@dataclass(frozen=True)
class Step:
    """One step of ``gpu-check``: its H100 estimate and the hard limit it runs under."""

    name: str
    what: str
    estimate_s: float
    limit_s: float


PLAN: tuple[Step, ...] = (
    Step(
        "pytest",
        "unit tests and nbval on the GPU (the course's nbval alone took a few minutes on an H100 with 4 workers; "
        "one worker per core here)",
        180.0,
        225.0,
    ),
    Step(
        "references",
        "python -m amp_lessons.reference record (5 experiments: 8192^3 matmuls, 4 training runs of 100 steps)",
        60.0,
        90.0,
    ),
    Step("checks", "checks (a)-(j) in one child process (its start, then each check's own estimate)", 130.0, 165.0),
)
CHECKS_START_S = 10.0
"""The checks process's start on a GPU machine (Python, torch, CUDA context), an estimate."""
DEADLINE_MARGIN_S = 5.0
"""The checks process stops starting checks this long before the step's limit."""
SKIP_FACTOR = 1.5
"""A check starts only if this many times its estimate is left before the deadline."""
SETUP_S = 60.0
"""What the plan leaves ``make setup``: nothing to do when .venv is current (a few seconds), an offline
install from the wheelhouse otherwise (estimate: about a minute for torch and its CUDA libraries)."""
BUDGET_S = sum(s.limit_s for s in PLAN)
"""The script's own budget: the sum of the steps' hard limits (480 s = TOTAL_S - SETUP_S)."""


def budget_plan(budget_s: float = BUDGET_S, steps: Sequence[Step] = PLAN) -> list[dict]:
    """Each step's hard limit within ``budget_s`` seconds: ``[{"step", "what", "estimate_s", "limit_s",
    "starts_by_s"}]``; when ``budget_s`` is under the limits' sum, each step keeps its estimate and the same
    share of its margin, so that the limits add up to ``budget_s``. A budget that cannot hold the estimates
    raises ValueError naming it."""
    budget_s = number_arg(budget_s, "budget_s", 0.0, 3600.0, low_open=True)
    if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence) or not steps:
        raise TypeError(f"steps must be a non-empty sequence of Step, got {steps!r}")
    for s in steps:
        if not isinstance(s, Step):
            raise TypeError(f"steps must hold Step objects, got {s!r}")
    estimate = sum(s.estimate_s for s in steps)
    if budget_s < estimate:
        raise ValueError(
            f"budget_s={budget_s!r} is below the steps' estimated {estimate:g} s on an H100: the steps cannot fit"
        )
    limits = sum(s.limit_s for s in steps)
    # between the estimates and the limits, every step gets the same share of its margin
    share = min(1.0, (budget_s - estimate) / (limits - estimate)) if limits > estimate else 1.0
    out, start = [], 0.0
    for s in steps:
        limit = s.estimate_s + (s.limit_s - s.estimate_s) * share
        out.append({"step": s.name, "what": s.what, "estimate_s": s.estimate_s, "limit_s": limit, "starts_by_s": start})
        start += limit
    return out


def steps_to_run(skip_pytest: bool = False, skip_references: bool = False) -> tuple[Step, ...]:
    """The steps of :data:`PLAN` that run: a skipped step takes no part of the budget."""
    skipped = {"pytest"} if skip_pytest else set()
    skipped |= {"references"} if skip_references else set()
    return tuple(s for s in PLAN if s.name not in skipped)


def plan_text(budget_s: float = BUDGET_S, steps: Sequence[Step] = PLAN) -> str:
    rows = [
        (p["step"], f"{p['estimate_s']:.0f} s", f"{p['limit_s']:.0f} s", f"{p['starts_by_s']:.0f} s", p["what"])
        for p in budget_plan(budget_s, steps)
    ]
    rows += [(f"  check {c.letter} {c.name}", f"{c.estimate_s:.0f} s", "", "", c.what) for c in CHECKS]
    notes = [
        f"limits add up to {sum(p['limit_s'] for p in budget_plan(budget_s, steps)):.0f} s; make setup gets the rest of "
        f"{TOTAL_S:.0f} s ({SETUP_S:.0f} s: seconds when .venv is current, an offline install from the wheelhouse otherwise)",
        "estimates: H100 figures; a step that reaches its limit is stopped and reported as a timeout",
    ]
    return str(
        table(("step", "estimate", "limit", "starts by", "what"), rows, title="gpu-check time budget", notes=notes)
    )


# --------------------------------------------------------------------------------------------
# The checks, the results folder and the summary
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Check:
    letter: str
    name: str
    fn: Callable
    estimate_s: float  # H100 estimate
    what: str


CHECKS: tuple[Check, ...] = (
    Check("a", "tf32_rounding", check_tf32_rounding, 10.0, "TF32 input rounding per op vs 3 models (GPU with TF32)"),
    Check("b", "lowp_matmul", check_lowp_matmul, 5.0, "fp16/bf16 matmul vs fp32-sum emulation, ulps"),
    Check("c", "scaled_mm", check_scaled_mm, 5.0, "torch._scaled_mm e4m3 vs emulation; fast accum (sm_89+)"),
    Check("g", "lowp_sum", check_lowp_sum, 5.0, "fp16/bf16 matmul summation in fp32 ulps, fp32 outputs"),
    Check("h", "cross_entropy", check_cross_entropy, 3.0, "cross_entropy's dtypes under real fp16/bf16 autocast"),
    Check("i", "fp8_cast_costs", check_fp8_cast_costs, 15.0, "lesson 07's cast costs: kernel, eager, compiled casts"),
    Check("j", "launch_bound", check_launch_bound, 10.0, "lesson 06's launch-bound demo, tiny vs large model"),
    Check("e", "timing_helper", check_timing_helper, 10.0, "timing.time_fn vs triton do_bench, 8192^3 bf16"),
    Check("f", "amp_step", check_amp_step, 25.0, "course AMP step vs minimal bf16 loop, ms/step"),
    Check("d", "autocast_policy", check_autocast_policy, 30.0, "real CUDA autocast vs fake preview, every op"),
)
"""The checks in the order they run: the timings (e, f) on a GPU nothing else has touched yet, the
autocast sweep (d), which calls every op with made-up inputs, last."""
_BY_NAME = {c.name: c for c in CHECKS}

STATUSES = ("ok", "passed", "skipped", "failed", "error", "timeout")
_BAD = ("failed", "error", "timeout")


def gpu_slug(name: str) -> str:
    """A folder-safe form of a GPU name: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    if not slug:
        raise ValueError(f"name {name!r} has no letter or digit to name a folder with")
    return slug


def results_folder(gpu_name: str, date: datetime.date | None = None, root: Path = RESULTS_ROOT) -> Path:
    """A new folder ``root/<date>-<gpu>`` (``-2``, ``-3``... appended when it exists already), created."""
    date = datetime.date.today() if date is None else date
    if not isinstance(date, datetime.date):
        raise TypeError(f"date must be a datetime.date, got {date!r}")
    if not isinstance(root, (str, Path)):
        raise TypeError(f"root must be a path, got {root!r}")
    base = Path(root) / f"{date.isoformat()}-{gpu_slug(gpu_name)}"
    folder, i = base, 1
    while folder.exists():
        i += 1
        folder = base.with_name(f"{base.name}-{i}")
    folder.mkdir(parents=True)
    return folder


def _jsonable(v):
    if isinstance(v, Mapping):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


def write_result(folder, name: str, result: Mapping) -> Path:
    """Write one step's or check's ``result`` (a dict with "status" from :data:`STATUSES` and a one-line
    "summary") to ``folder/<name>.json``, with ``name`` added; non-finite floats become strings."""
    if not isinstance(folder, (str, Path)) or not Path(folder).is_dir():
        raise ValueError(f"folder must be an existing directory, got {folder!r}")
    if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9_]+", name):
        raise ValueError(f"name must be lower-case letters, digits and _, got {name!r}")
    if not isinstance(result, Mapping):
        raise TypeError(f"result must be a dict, got {result!r}")
    if result.get("status") not in STATUSES:
        raise ValueError(f"result['status'] must be one of {', '.join(STATUSES)}, got {result.get('status')!r}")
    if not isinstance(result.get("summary"), str):
        raise ValueError(f"result['summary'] must be a one-line string, got {result.get('summary')!r}")
    path = Path(folder) / f"{name}.json"
    body = {"name": name, **_jsonable(result)}
    path.write_text(json.dumps(body, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    return path


SUMMARY_ORDER = ("pytest", "record_references", *(f"check_{c.name}" for c in CHECKS))


def summarize(folder, expected: Sequence[str] = SUMMARY_ORDER) -> tuple[str, bool]:
    """The summary table of ``folder`` (every ``*.json`` written by :func:`write_result`: the ``expected``
    ones first, in that order, then any others) and whether everything ran: False if a result is failed,
    error or timeout, or an ``expected`` one is missing."""
    if not isinstance(folder, (str, Path)) or not Path(folder).is_dir():
        raise ValueError(f"folder must be an existing directory, got {folder!r}")
    if isinstance(expected, str) or not isinstance(expected, Sequence):
        raise TypeError(f"expected must be a sequence of result names, got {expected!r}")
    found = {}
    for p in sorted(Path(folder).glob("*.json")):
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(d, dict) and d.get("status") in STATUSES and d.get("name") == p.stem:
            found[p.stem] = d
    rows, ok = [], True
    for name in [*expected, *sorted(set(found) - set(expected))]:
        d = found.get(name)
        label = name
        if name.startswith("check_") and name[6:] in _BY_NAME:
            label = f"({_BY_NAME[name[6:]].letter}) {name[6:]}"
        if d is None:
            rows.append((label, "missing", "", "no result written"))
            ok = False
            continue
        ok = ok and d["status"] not in _BAD
        secs = d.get("seconds")
        rows.append((label, d["status"], f"{secs:.1f} s" if isinstance(secs, (int, float)) else "", d["summary"]))
    text = str(table(("step", "status", "time", "result"), rows, title=f"gpu-check summary: {Path(folder)}"))
    return text, ok


def run_check(check: Check, device: str, folder: Path) -> dict:
    """Run one check, time it, write ``check_<name>.json`` (an exception becomes status "error" with its
    traceback); returns the result."""
    t0 = time.perf_counter()
    try:
        result = dict(check.fn(device))
    except Exception as e:  # a broken check must not stop the others
        result = {"status": "error", "summary": f"{type(e).__name__}: {e}"[:300], "traceback": traceback.format_exc()}
    result["seconds"] = time.perf_counter() - t0
    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    write_result(folder, f"check_{check.name}", result)
    return result


def run_checks(folder: Path, names: Sequence[str], deadline: float, device: str = "cuda") -> None:
    """The child process of step 3: each check in turn, skipped (status "skipped") when less time is left
    before ``deadline`` (a ``time.time()``) than :data:`SKIP_FACTOR` times its estimate."""
    for c in CHECKS:
        if c.name not in names:
            continue
        left = deadline - time.time()
        if left < SKIP_FACTOR * c.estimate_s:
            write_result(
                folder,
                f"check_{c.name}",
                {
                    "status": "skipped",
                    "summary": f"skipped: time budget ({left:.0f} s left, estimate {c.estimate_s:.0f} s)",
                },
            )
            continue
        print(f"== check ({c.letter}) {c.name}: {c.what}", flush=True)
        r = run_check(c, device, folder)
        print(f"   {r['status']} in {r['seconds']:.1f} s: {r['summary']}", flush=True)


# --------------------------------------------------------------------------------------------
# Running the steps
# --------------------------------------------------------------------------------------------

NEEDS = (
    ("pytest on the GPU (unit tests, nbval)", "a CUDA GPU"),
    ("references (python -m amp_lessons.reference record)", "a CUDA GPU"),
    ("(a) TF32 input rounding", "a CUDA GPU with TF32 tensor cores (sm_80+)"),
    ("(b) fp16/bf16 matmul vs emulation", "a CUDA GPU (bf16: sm_80+)"),
    ("(c) torch._scaled_mm fp8 vs emulation", "a CUDA GPU with fp8 tensor cores (sm_89+)"),
    ("(d) CUDA autocast vs fake preview", "a CUDA GPU"),
    ("(e) time_fn vs triton do_bench", "a CUDA GPU; triton for do_bench"),
    ("(f) course AMP step vs minimal bf16 loop", "a CUDA GPU with bf16 (sm_80+)"),
)


def no_gpu_message() -> str:
    """What ``gpu-check`` says where torch sees no CUDA GPU: which step needs what, and this torch's build."""
    build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build (torch.version.cuda is None)"
    width = max(len(what) for what, _ in NEEDS)
    lines = [
        "gpu-check needs a CUDA GPU, and torch.cuda.is_available() is False on this machine: nothing was run.",
        f"  torch {torch.__version__}, {build}; Python {platform.python_version()}, {platform.system()} {platform.machine()}",
        *(f"  {what:<{width}}  needs {need}" for what, need in NEEDS),
    ]
    if not torch.version.cuda:
        lines.append(
            "  This torch cannot use a GPU at all: install a CUDA build (README.md, TORCH_INDEX), or the wheels that "
            "`make gpu-wheels` downloads."
        )
    lines.append(
        "  Without a GPU, `make test` runs the course's CPU tests (`make test-delivery`: this script's CPU parts)."
    )
    return "\n".join(lines)


def _kill(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run_logged(cmd: Sequence[str], log: Path, timeout_s: float, env: Mapping | None = None) -> tuple[int | None, float]:
    """Run ``cmd`` in its own process group, its output both printed and written to ``log``; killed (with its
    children) after ``timeout_s``. Returns (exit code, or None on timeout; seconds)."""
    timeout_s = number_arg(timeout_s, "timeout_s", 0.0, 86400.0, low_open=True)
    t0 = time.perf_counter()
    timed_out = threading.Event()
    with (
        open(log, "w", encoding="utf-8") as fh,
        subprocess.Popen(
            list(cmd),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            start_new_session=True,
            env=None if env is None else dict(env),
        ) as proc,
    ):

        def expire():
            timed_out.set()
            _kill(proc)

        timer = threading.Timer(timeout_s, expire)
        timer.start()
        try:
            for line in proc.stdout:
                sys.stdout.write(line)
                fh.write(line)
            proc.wait()
        finally:
            timer.cancel()
    return (None if timed_out.is_set() else proc.returncode), time.perf_counter() - t0


def _last_line(log: Path, pattern: str) -> str:
    lines = [ln.strip() for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    hits = [ln for ln in lines if re.search(pattern, ln)]
    return (hits or lines or ["(no output)"])[-1][:300]


def pytest_command(cores: int) -> list[str]:
    """The pytest step's command. ``-p no:benchmark``: a GPU image may carry pytest-benchmark, which warns under
    xdist, and the course's tests turn warnings into errors (seen on an H200 image: an INTERNALERROR before any
    test ran); where the plugin is absent the option does nothing."""
    cmd = [sys.executable, "-m", "pytest", "-p", "no:benchmark", "-n", str(cores), "--dist", "loadfile"]
    # the course's tests and lessons, and the delivery rig's unit tests (delivery/tests: not the hub, not the browser)
    return (
        cmd
        + ["-m", "not hub", "tests", "notebooks", "delivery/tests", "--ignore=delivery/tests/browser"]
        + ["--ignore=tests/browser"]
    )


def step_pytest(folder: Path, limit_s: float) -> dict:
    cmd = pytest_command(os.cpu_count() or 1)
    # one worker per core, each on one OpenMP thread: on a 16-core H200 machine, 16 workers with torch's default of
    # 16 threads each had run 63% of the unit tests in 420 s; with one thread each, 97% in 235 s
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    code, secs = run_logged(cmd, folder / "pytest.log", limit_s, env=env)
    line = _last_line(folder / "pytest.log", r"(passed|failed|error)")
    status = "timeout" if code is None else ("passed" if code == 0 else "failed")
    summary = f"stopped at the {limit_s:.0f} s limit; last: {line}" if code is None else line.strip("= ")
    return {"status": status, "summary": summary, "seconds": secs, "returncode": code, "command": " ".join(cmd[1:])}


def step_references(folder: Path, limit_s: float) -> dict:
    cmd = [sys.executable, "-m", "amp_lessons.reference", "record", "--file", str(folder / "references.json")]
    code, secs = run_logged(cmd, folder / "references.log", limit_s)
    if code is None:
        status, summary = "timeout", f"stopped at the {limit_s:.0f} s limit"
    elif code == 0:
        n = len(json.loads((folder / "references.json").read_text())["records"])
        status, summary = "ok", f"{n} references recorded in references.json"
    else:
        status, summary = "failed", _last_line(folder / "references.log", r"rror")
    return {"status": status, "summary": summary, "seconds": secs, "returncode": code, "command": " ".join(cmd[1:])}


def step_checks(folder: Path, names: Sequence[str], limit_s: float) -> dict:
    deadline = time.time() + limit_s - DEADLINE_MARGIN_S
    cmd = [sys.executable, str(Path(__file__).resolve()), "--run-checks", str(folder), "--deadline", f"{deadline:.3f}"]
    cmd += ["--only", *names]
    code, secs = run_logged(cmd, folder / "checks.log", limit_s)
    for c in CHECKS:
        if c.name in names and not (folder / f"check_{c.name}.json").exists():
            if code is None:
                why, text = "timeout", f"no result: the checks process reached its {limit_s:.0f} s limit"
            else:
                last = _last_line(folder / "checks.log", r"rror")
                why, text = "error", f"no result: the checks process exited with code {code} ({last})"
            write_result(folder, f"check_{c.name}", {"status": why, "summary": text})
    return {"code": code, "seconds": secs}


def ensure_triton(wheelhouse: Path | None) -> str:
    """Install triton from ``wheelhouse`` (offline: ``pip --no-index --find-links``) if it is missing and the
    wheelhouse holds a triton wheel; returns what happened."""
    import importlib.util

    if importlib.util.find_spec("triton") is not None:
        return "triton installed"
    if wheelhouse is None or not any(Path(wheelhouse).glob("triton-*.whl")):
        return "triton not installed and no triton wheel in the wheelhouse: check (e) skips do_bench"
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-index", "--find-links", str(wheelhouse), "triton"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return (
        "triton installed from the wheelhouse"
        if proc.returncode == 0
        else f"triton install failed: {proc.stderr[-300:]}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="gpu_check.py", description="The course's checks on an NVIDIA GPU (make gpu-check)."
    )
    parser.add_argument("--plan", action="store_true", help="print the time budget and exit")
    parser.add_argument(
        "--budget", type=float, default=BUDGET_S, help=f"seconds for all steps (default {BUDGET_S:.0f})"
    )
    parser.add_argument("--only", nargs="+", choices=[c.name for c in CHECKS], help="only these checks")
    parser.add_argument("--skip-pytest", action="store_true", help="no pytest step")
    parser.add_argument("--skip-references", action="store_true", help="no reference recording")
    parser.add_argument("--results", type=Path, default=RESULTS_ROOT, help=f"results root (default {RESULTS_ROOT})")
    parser.add_argument(
        "--wheelhouse", type=Path, default=None, help="offline wheels (delivery/gpu_check/gpu_wheels.py)"
    )
    parser.add_argument("--run-checks", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--deadline", type=float, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    names = args.only or [c.name for c in CHECKS]
    steps = steps_to_run(args.skip_pytest, args.skip_references)

    if args.plan:
        print(plan_text(args.budget, steps))
        return 0
    if not torch.cuda.is_available():
        print(no_gpu_message(), file=sys.stderr)
        return NO_GPU_EXIT
    if args.run_checks is not None:  # the child process of step 3
        run_checks(args.run_checks, names, args.deadline or time.time() + PLAN[-1].limit_s)
        return 0

    start = time.time()
    plan = {p["step"]: p for p in budget_plan(args.budget, steps)}
    gpu = torch.cuda.get_device_name(0)
    major, minor = torch.cuda.get_device_capability(0)
    folder = results_folder(gpu, root=args.results)
    print(f"gpu-check on {gpu} (sm_{major}{minor}), torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"results: {folder}")
    print(plan_text(args.budget, steps))
    triton_note = ensure_triton(args.wheelhouse)
    print(triton_note)
    env_note = {
        "gpu": gpu,
        "capability": f"{major}.{minor}",
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cpu_cores": os.cpu_count(),
        "triton": triton_note,
        "date": datetime.date.today().isoformat(),
        "budget_s": args.budget,
    }
    (folder / "environment.json").write_text(json.dumps(env_note, indent=2) + "\n", encoding="utf-8")

    def left() -> float:
        return args.budget - (time.time() - start)

    if not args.skip_pytest:
        print("== pytest", flush=True)
        write_result(folder, "pytest", step_pytest(folder, min(plan["pytest"]["limit_s"], left())))
    if not args.skip_references:
        print("== references", flush=True)
        write_result(folder, "record_references", step_references(folder, min(plan["references"]["limit_s"], left())))
    print("== checks", flush=True)
    step_checks(folder, names, max(1.0, left()))

    expected = (["pytest"] if not args.skip_pytest else []) + (
        ["record_references"] if not args.skip_references else []
    )
    expected += [f"check_{c.name}" for c in CHECKS if c.name in names]
    table, ok = summarize(folder, expected)
    (folder / "summary.txt").write_text(table + "\n", encoding="utf-8")
    print()
    print(table)
    print(f"\n{'all steps ran' if ok else 'SOME STEPS FAILED'} in {time.time() - start:.0f} s; results in {folder}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
