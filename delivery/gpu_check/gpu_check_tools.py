"""Checks (d) to (f) of ``make gpu-check`` (``delivery/gpu_check/gpu_check.py``): the course's own tools against the real
thing on a CUDA GPU. (d) ``autocast_policy``: every op of ``amp_lessons.autocast.policy_table("cuda")`` under real
CUDA autocast against the fake-CUDA preview; (e) ``timing_helper``: ``amp_lessons.timing.time_fn`` against
``triton.testing.do_bench``; (f) ``amp_step``: the course's AMP step against a minimal bf16 autocast loop; (h)
``cross_entropy``: the dtypes of ``F.cross_entropy``'s ops under real fp16/bf16 autocast, forward and backward. Each
check is a function ``check_<name>(device) -> dict``; the fake-CUDA side of (d) runs on a CPU too
(delivery/tests/test_gpu_check.py). Importing this module makes no CUDA call."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Callable, Mapping, Sequence

import torch
from gpu_check_args import device_arg, int_arg
from gpu_check_arithmetic import capability_gate

from amp_lessons import timing

# --------------------------------------------------------------------------------------------
# (d) CUDA autocast for real against the fake-CUDA preview
# --------------------------------------------------------------------------------------------

BANNED = "banned"
COARSE = {"fp32_set_opt_dtype": "fp32", "fp32_append_dtype": "fp32"}
"""Table classes that an output dtype cannot tell from "fp32" (they differ in how the fp32 op is called)."""


def _ax():
    """The autocast lesson's reading of torch's autocast lists (its op list, sample builders and result dtype)."""
    from amp_lessons.autocast import _policy

    return _policy


# Ops whose sample the autocast module's generic rules cannot build (its table takes their class from the
# installed header, so it never needs to call them): a hand-made sample each, (sampler) -> (args, kwargs).
EXTRA_SAMPLES = {
    "aten::layer_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,)), t.float((4,))], {}),
    "aten::native_layer_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,)), t.float((4,)), 1e-5], {}),
    "aten::rms_norm": lambda t: ([t.float((2, 4)), [4], t.float((4,))], {}),
    "aten::mv": lambda t: ([t.float((3, 4)), t.float((4,))], {}),
    "aten::addmv": lambda t: ([t.float((3,)), t.float((3, 4)), t.float((4,))], {}),
    "aten::gru_cell": lambda t: (
        [t.float((2, 3)), t.float((2, 4)), t.float((12, 3)), t.float((12, 4)), t.float((12,)), t.float((12,))],
        {},
    ),
    "aten::lstm_cell": lambda t: (
        [t.float((2, 3)), [t.float((2, 4)), t.float((2, 4))], t.float((16, 3)), t.float((16, 4))],
        {},
    ),
    "aten::_thnn_fused_lstm_cell": lambda t: ([t.float((2, 16)), t.float((2, 16)), t.float((2, 4))], {}),
    "aten::_thnn_fused_gru_cell": lambda t: ([t.float((2, 12)), t.float((2, 12)), t.float((2, 4))], {}),
    "aten::cudnn_convolution": lambda t: (
        [t.float((1, 2, 4, 4)), t.float((3, 2, 1, 1)), [0, 0], [1, 1], [1, 1], 1, False, False, True],
        {},
    ),
    "aten::cudnn_convolution_transpose": lambda t: (
        [t.float((1, 2, 4, 4)), t.float((2, 3, 1, 1)), [0, 0], [0, 0], [1, 1], [1, 1], 1, False, False, True],
        {},
    ),
}


def _builds(qualified: str) -> list:
    """Sample-argument builders for one op overload: :data:`EXTRA_SAMPLES`, else the autocast module's own
    (a hand-made sample, or its schema-driven rules over a few shapes), so that both sides get the same inputs."""
    import functools

    ax = _ax()
    if qualified in EXTRA_SAMPLES:
        return [EXTRA_SAMPLES[qualified]]
    if qualified in ax.SAMPLES:
        return [ax.SAMPLES[qualified]]
    name, _, overload = qualified.partition(".")
    schema = torch._C._get_schema(name, overload)
    return [
        functools.partial(
            lambda sampler, s, r, v: ax.generic_sample(schema, sampler, s, r, v),
            s=s,
            r=r,
            v=v,
        )
        for s, r in ax.SHAPES
        for v in ax.VARIANTS
    ]


def _op(qualified: str):
    name, _, overload = qualified.partition(".")
    return getattr(getattr(torch.ops.aten, name.split("::", 1)[1]), overload or "default")


def trace_runner(fake: bool, dtype=torch.float16) -> Callable:
    """``run(qualified, build, dtypes) -> output dtype | "banned"`` through ``amp_lessons.autocast.trace``:
    ``fake=True`` previews CUDA autocast with fake CUDA tensors (no GPU needed), ``fake=False`` runs it on the GPU."""
    if not isinstance(fake, bool):
        raise TypeError(f"fake must be True or False, got {fake!r}")
    from amp_lessons import autocast

    ax = _ax()
    device = "cpu" if fake else "cuda"

    def run(qualified: str, build, dtypes):
        op = _op(qualified)
        args, kwargs = build(ax.Sampler(dtypes, device))
        try:
            tr = autocast.trace(lambda a, kw: op(*a, **kw), args, kwargs, device_type="cuda", dtype=dtype, fake=fake)
        except Exception as e:
            if "unsafe to autocast" in str(e):
                return BANNED
            raise
        return ax.result_dtype(tr.output)

    return run


def op_signature(qualified: str, run: Callable, low=torch.float16) -> dict | None:
    """How autocast treats one op overload, seen through ``run`` (:func:`trace_runner`): the output dtype for
    all-fp32 inputs ("A"), all-``low`` inputs ("B") and a ``low`` first input with fp32 for the rest ("C"),
    from the first sample that runs with fp32 inputs; ``{"banned": True}`` if autocast refuses it; None if no
    sample runs. The module's builders decide the samples, so real and fake get the same ones."""
    fp32 = torch.float32
    for build in _builds(qualified):
        try:
            a = run(qualified, build, [fp32])
        except _ax().CannotBuild:
            return None
        except Exception:  # this sample does not fit the op: try the next one
            continue
        if a == BANNED:
            return {"banned": True}
        sig = {"A": str(a).replace("torch.", "")}
        for key, dtypes in (("B", [low]), ("C", [low, fp32])):
            try:
                sig[key] = str(run(qualified, build, dtypes)).replace("torch.", "")
            except Exception as e:
                sig[key] = f"error: {type(e).__name__}"
        return sig
    return None


def signature_policy(sig: dict | None, low: str = "float16") -> str | None:
    """The autocast class a signature of :func:`op_signature` shows (the rules of the autocast module's own
    measurement): banned; lower_precision (fp32 in, ``low`` out); fp32 (``low`` in, fp32 out); promote (mixed
    inputs give fp32 while ``low`` stays ``low``); None if it shows none of those."""
    if sig is None:
        return None
    if not isinstance(sig, Mapping):
        raise TypeError(f"sig must be a dict from op_signature or None, got {sig!r}")
    if sig.get("banned"):
        return BANNED
    if sig.get("A") == low:
        return "lower_precision"
    if sig.get("B") == "float32":
        return "fp32"
    if sig.get("C") == "float32" and sig.get("B") == low:
        return "promote"
    return None


@contextlib.contextmanager
def quiet():
    """No warnings and no log records (fake tensors log every sample that does not fit an op, with its traceback)."""
    before = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(before)


def compare_autocast(ops: Sequence[str], real: Callable, fake: Callable, table: Mapping[str, str]) -> dict:
    """For each op name of ``ops`` (names of ``policy_table("cuda")``), the signatures of all its autocast
    overloads seen by ``real`` and by ``fake`` (:func:`trace_runner`): equal signatures agree. Returns counts,
    the disagreements, the ops only one side could run, and the policy-table entries the real GPU contradicts."""
    if isinstance(ops, str) or not isinstance(ops, Sequence):
        raise TypeError(f"ops must be a sequence of op names, got {ops!r}")
    if not callable(real) or not callable(fake):
        raise TypeError(f"real and fake must be runners (trace_runner), got {real!r} and {fake!r}")
    if not isinstance(table, Mapping):
        raise TypeError(f"table must be a dict op -> policy, got {table!r}")
    ax = _ax()
    overloads: dict[str, list[str]] = {}
    for q in ax.autocast_ops("cuda"):
        overloads.setdefault(ax.base(q), []).append(q)
    agree, disagree, only_real, only_fake, neither, table_contradicted = [], [], [], [], [], []
    for name in ops:
        if name not in overloads:
            raise ValueError(f"op {name!r} has no CUDA autocast kernel in this torch")
        per = {}
        for q in overloads[name]:
            r, f = op_signature(q, real), op_signature(q, fake)
            if r is None and f is None:
                continue
            per[q] = (r, f)
        if not per:
            neither.append(name)
            continue
        both = {q: rf for q, rf in per.items() if rf[0] is not None and rf[1] is not None}
        if not both:
            (only_real if any(r is not None for r, _ in per.values()) else only_fake).append(name)
        elif all(r == f for r, f in both.values()):
            agree.append(name)
        else:
            disagree.append({"op": name, **{q: {"real": r, "fake": f} for q, (r, f) in both.items() if r != f}})
        real_policies = {signature_policy(r) for r, _ in per.values() if r is not None} - {None}
        if real_policies and COARSE.get(table.get(name), table.get(name)) not in real_policies:
            table_contradicted.append({"op": name, "table": table.get(name), "real": sorted(real_policies)})
    return {
        "ops": len(ops),
        "agree": len(agree),
        "disagree": disagree,
        "only_real_ran": only_real,
        "only_fake_ran": only_fake,
        "neither_ran": neither,
        "table_contradicted_by_real": table_contradicted,
    }


def check_autocast_policy(device="cuda", ops: Sequence[str] | None = None) -> dict:
    """Check (d): :func:`compare_autocast` over every op of ``policy_table("cuda")`` (or ``ops``), real CUDA
    autocast (fp16) on ``device`` against the fake-CUDA preview."""
    d = device_arg(device)
    if d.type != "cuda":
        raise ValueError(f"check (d) runs real CUDA autocast: device must be a CUDA device, got {device!r}")
    from amp_lessons import autocast

    table = autocast.policy_table("cuda")
    ops = sorted(table) if ops is None else list(ops)
    with quiet(), torch.cuda.device(d):
        r = compare_autocast(ops, trace_runner(False), trace_runner(True), table)
    summary = (
        f"{r['agree']}/{r['ops']} ops agree, {len(r['disagree'])} disagree, "
        f"{len(r['only_real_ran'])} only real ran, {len(r['only_fake_ran'])} only fake ran; "
        f"{len(r['table_contradicted_by_real'])} table entries contradicted by the GPU"
    )
    return {"status": "ok", "summary": summary, **r}


# --------------------------------------------------------------------------------------------
# (e) the timing helper against triton's do_bench
# --------------------------------------------------------------------------------------------


def check_timing_helper(device="cuda", size: int = 8192, repeats: int = 20) -> dict:
    """Check (e): ``timing.time_fn`` (CUDA events, L2 flushed and not) against ``triton.testing.do_bench``
    (median) on a size^3 bf16 matmul; do_bench is skipped, saying so, where triton is not installed."""
    d = device_arg(device)
    size, repeats = int_arg(size, "size", 16, 32768), int_arg(repeats, "repeats", 1, 1000)
    g = torch.Generator().manual_seed(0)
    a = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    b = torch.randn(size, size, generator=g).to(d, torch.bfloat16)
    flops = timing.matmul_flops(size, size, size)
    out = {"shape": f"{size}^3 bf16"}
    for flush in (True, False):
        t = timing.time_fn(
            lambda: a @ b, device=d.type, repeats=repeats, flush_l2=flush and d.type == "cuda", flops=flops
        )
        out[f"time_fn_{'flushed' if flush else 'warm'}_ms"] = t.median_s * 1e3
        out[f"time_fn_{'flushed' if flush else 'warm'}_tflops"] = t.tflops
    try:
        from triton.testing import do_bench
    except ImportError:
        out["do_bench"] = "skipped: triton is not installed"
        out["status"], out["summary"] = (
            "ok",
            f"time_fn {out['time_fn_flushed_ms']:.3f} ms; do_bench skipped (no triton)",
        )
        return out
    ms = do_bench(lambda: a @ b, return_mode="median")
    out["do_bench_ms"] = ms
    out["time_fn_over_do_bench"] = out["time_fn_flushed_ms"] / ms
    out["status"] = "ok"
    out["summary"] = (
        f"time_fn {out['time_fn_flushed_ms']:.3f} ms, do_bench {ms:.3f} ms (ratio {out['time_fn_over_do_bench']:.3f})"
    )
    return out


# --------------------------------------------------------------------------------------------
# (f) the course's AMP step against a minimal bf16 autocast loop
# --------------------------------------------------------------------------------------------


def minimal_bf16_step(model, optimizer, config: str, device_type: str):
    """The shortest bf16 autocast training step (no GradScaler: bf16 has fp32's range), with the
    ``make_step`` signature of ``amp_lessons.e2e.train``: forward and loss under autocast, backward,
    optimizer step."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be an nn.Module, got {model!r}")
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"device_type must be 'cpu' or 'cuda', got {device_type!r}")

    def step(x, y):
        with torch.autocast(device_type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def check_amp_step(
    device="cuda", steps: int = 30, rounds: int = 2, model_kwargs: dict | None = None, batch=None
) -> dict:
    """Check (f): ``e2e.train("bf16 autocast")`` with the course's ``amp_step`` and with
    :func:`minimal_bf16_step`, alternately ``rounds`` times (same model, seed and data), ms per step."""
    from amp_lessons import e2e

    d = device_arg(device)
    steps, rounds = int_arg(steps, "steps", 3, 10_000), int_arg(rounds, "rounds", 1, 100)
    if d.type == "cuda":
        gate = capability_gate(torch.cuda.get_device_capability(d), (8, 0), "bf16 tensor cores")
        if gate:
            return {"status": "skipped", "summary": gate}
    # make_step=None: train's own step, the course's amp_step (lesson 06's make_step)
    makers = {"course amp_step": None, "minimal bf16 loop": minimal_bf16_step}
    times: dict[str, list[float]] = {k: [] for k in makers}
    final: dict[str, list[float]] = {k: [] for k in makers}
    model = None
    for _ in range(rounds):
        for name, make in makers.items():
            r = e2e.train(
                "bf16 autocast",
                steps=steps,
                device=d,
                progress=False,
                model_kwargs=model_kwargs,
                batch=batch,
                make_step=make,
            )
            times[name] += list(r.step_times_s)
            final[name].append(r.final_loss)
            model = r.model
    med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
    out = {
        "model": model,
        "steps_per_run": steps,
        "rounds": rounds,
        "ms_per_step": med,
        "ms_per_step_min_max": {k: [min(v) * 1e3, max(v) * 1e3] for k, v in times.items()},
        "final_loss": final,
        "course_over_minimal": med["course amp_step"] / med["minimal bf16 loop"],
    }
    out["status"] = "ok"
    out["summary"] = (
        f"course {med['course amp_step']:.2f} ms/step, minimal {med['minimal bf16 loop']:.2f} ms/step "
        f"(ratio {out['course_over_minimal']:.3f})"
    )
    return out


# --------------------------------------------------------------------------------------------
# (h) cross_entropy under real autocast, forward and backward
# --------------------------------------------------------------------------------------------

LOSS_OPS = ("log_softmax", "nll_loss")
"""The ops of ``F.cross_entropy`` whose dtype the lessons talk about (forward and backward variants)."""


def loss_ops(tr) -> list[list[str]]:
    """``[phase, op, input dtypes, output dtypes]`` of the cross_entropy ops of an autocast trace
    (``amp_lessons.autocast.trace(..., backward=True)``), in the order they ran."""
    rows = []
    for op in tr.ops:
        if any(k in op.name for k in LOSS_OPS):
            dtypes = [", ".join(str(d).removeprefix("torch.") for d in ds) for ds in (op.in_dtypes, op.out_dtypes)]
            rows.append([op.phase, op.name, *dtypes])
    return rows


def check_cross_entropy(device="cuda") -> dict:
    """Check (h): ``F.cross_entropy(lin(x), y)`` (a Linear(16, 8) on the device) under real autocast with fp16 and
    with bf16, forward and backward: the dtype of every log_softmax / nll_loss op (lessons 04 and 08 say which
    precision the loss runs in on a GPU; on a CPU the CPU's policy is what runs)."""
    from amp_lessons import autocast

    d = device_arg(device)
    torch.manual_seed(0)
    lin = torch.nn.Linear(16, 8).to(d)
    x, y = torch.randn(4, 16, device=d), torch.arange(4, device=d)
    out = {}
    for name, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        tr = autocast.trace(
            lambda m, a, b: torch.nn.functional.cross_entropy(m(a), b),
            lin,
            x,
            y,
            device_type=d.type,
            dtype=dtype,
            fake=False,
            backward=True,
        )
        out[name] = loss_ops(tr)
    forward = {k: sorted({r[3].split(", ")[0] for r in rows if r[0] == "forward"}) for k, rows in out.items()}
    summary = "; ".join(f"{k} autocast: forward loss ops output {', '.join(v)}" for k, v in forward.items())
    return {"status": "ok", "summary": summary, "device": str(d), "ops": out}


# --------------------------------------------------------------------------------------------
# (i) lesson 07's cast costs and (j) lesson 06's launch-bound demo, on the GPU, as the lessons run them
# --------------------------------------------------------------------------------------------


def check_fp8_cast_costs(device="cuda", repeats: int = 10) -> dict:
    """Check (i): ``amp_lessons.fp8.fp8_cast_costs`` (the fp8 kernel alone, with the lesson's eager amax + casts of
    both inputs, and with the casts compiled) at 256x512x256 and 8192^3 on the device, under its one named timer."""
    from amp_lessons import fp8

    d = device_arg(device)
    repeats = int_arg(repeats, "repeats", 1, 1000)
    if d.type == "cuda":
        gate = capability_gate(torch.cuda.get_device_capability(d), (8, 9), "fp8 tensor cores")
        if gate:
            return {"status": "skipped", "summary": gate}
    r = fp8.fp8_cast_costs(d, compiled=True, repeats=repeats)
    times = {f"{shape} {product}": seconds for (shape, product), seconds in r.times.items()}
    ratios = {
        key: r.ratio(*key.split(" ", 1)) for key in times if not key.endswith(" bf16") and r.ratio(*key.split(" ", 1))
    }
    skipped = {k if isinstance(k, str) else " ".join(k): why for k, why in r.skipped.items()}
    summary = ", ".join(f"{k} {v:.2f}x bf16" for k, v in ratios.items()) or "nothing timed"
    return {
        "status": "ok",
        "summary": f"{summary} (timer: {r.timer})",
        "timer": r.timer,
        "times_s": times,
        "speed_vs_bf16": ratios,
        "skipped": skipped,
    }


def check_launch_bound(device="cuda", repeats: int = 20) -> dict:
    """Check (j): ``amp_lessons.e2e.launch_bound_demo`` on the device: a tiny and a large model's fp32 and bf16
    autocast steps, how the fp32 step grows with 8x the batch, and what that leaves to faster arithmetic."""
    from amp_lessons import e2e

    d = device_arg(device)
    repeats = int_arg(repeats, "repeats", 3, 1000)
    r = e2e.launch_bound_demo(device=d, repeats=repeats, progress=False)
    models = {}
    for name, s in (("tiny", r.tiny), ("large", r.large)):
        models[name] = {
            "model": s.model,
            "fp32_step_s": s.fp32_step_s,
            "bf16_autocast_step_s": s.bf16_autocast_step_s,
            "speedup": s.speedup,
            "time_growth": s.time_growth,
            "arithmetic_share": s.arithmetic_share,
            "most_from_faster_arithmetic": s.most_from_faster_arithmetic,
        }
    summary = "; ".join(
        f"{k}: bf16 {v['speedup']:.2f}x fp32, {100 * v['arithmetic_share']:.0f}% of the step is arithmetic"
        for k, v in models.items()
    )
    return {"status": "ok", "summary": summary, "width_chosen": r.width_chosen, "models": models}
