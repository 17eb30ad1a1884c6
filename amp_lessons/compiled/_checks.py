"""Checkers for lesson 11's exercises, on the pointwise chain ``rms_norm(silu(g) * h)`` of bf16 tensors (lesson 11's
``chain``): the fused kernel's arithmetic written eagerly (:func:`check_fused_chain`), and a compile whose bf16
results match eager mode's (:func:`check_compile_matching_eager`)."""

from __future__ import annotations

import contextlib
import functools
import os
import types

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from .. import _validate
from .._exercise import attempt, calls_seen, correct, exercise, finish, hint_list, not_yet, your_turn
from ..checks import CheckResult, call_learner
from . import _experiments as experiments
from ._experiments import import_inductor, inductor_status, make_inputs
from .key_code import chain

__all__ = [
    "check_compile_matching_eager",
    "check_fused_chain",
]

_ROWS = 16
_WIDTHS = (32, 37)  # the chain's inputs: 16 x 64 and 16 x 74 bf16 values (74: the kernel's vector loop has a tail)
_NOT_ARITHMETIC = {"_to_copy", "to", "copy_", "copy", "clone", "detach", "alias", "lift_fresh", "empty_like"}


def _with_extremes(h, g):
    """``h``, ``g`` with rows where a random input hides a mistake: silu(g) tiny (rms_norm's eps decides), a
    subnormal, h zero, g large."""
    h, g = h.clone(), g.clone()
    g[0], g[1], h[2], g[3] = -20.0, -100.0, 0.0, 60.0
    return h, g


def _compiles():
    """Calls of ``torch.compile``, Dynamo, Inductor or this lesson's compiled workloads inside the block."""
    torch_dir = os.path.dirname(torch.__file__)
    entries = {
        (os.path.join(torch_dir, "__init__.py"), "compile"),
        (os.path.join(torch_dir, "_dynamo", "eval_frame.py"), "optimize"),
    }
    compilers = (
        os.path.join(torch_dir, "_dynamo", "convert_frame.py"),
        os.path.join(torch_dir, "_inductor", "compile_fx.py"),
    )
    mine = experiments.__file__

    def wanted(code) -> bool:
        # eager ops under a dispatch mode pass through Dynamo's decorators (torch.compiler.disable): not counted
        f = code.co_filename
        return (f, code.co_name) in entries or f in compilers or f == mine

    return calls_seen(wanted)


def _check_output(out, h) -> str | None:
    if not isinstance(out, torch.Tensor):
        return f"your function returned {type(out).__name__}, not a tensor"
    if out.shape != h.shape:
        return f"your function returned shape {tuple(out.shape)}; h and g have shape {tuple(h.shape)}"
    if out.dtype != torch.bfloat16:
        return f"your function returned {out.dtype}; the kernel stores bf16 (round it: .to(torch.bfloat16))"
    return None


def _fresh(fn):
    """``fn`` with a code object of its own: Dynamo keeps its cache per code object, so this one starts empty."""
    return types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__)


@functools.lru_cache(maxsize=4)
def _kernel_outputs(seed: int) -> tuple:
    """For each input pair of ``seed``: (h, g, eager, Inductor's output, Inductor's output with
    ``emulate_precision_casts=True``), cached for the process."""
    import_inductor()
    out = []
    with torch.no_grad():
        plain = torch.compile(_fresh(chain), dynamic=False, options={"emulate_precision_casts": False})
        emulating = torch.compile(_fresh(chain), dynamic=False, options={"emulate_precision_casts": True})
        for i, width in enumerate(_WIDTHS):
            h, g = make_inputs("chain", seed + i, rows=_ROWS, width=width)
            if i:
                h, g = _with_extremes(h, g)
            out.append((h, g, chain(h, g), plain(h, g), emulating(h, g)))
    return tuple(out)


def _emulates(refs) -> bool:
    """Whether this torch's CPU Inductor applies ``emulate_precision_casts`` to the chain (torch 2.11's does not)."""
    return any(not torch.equal(plain, emulated) for *_, plain, emulated in refs)


class _Ops(TorchDispatchMode):
    """Records the ATen ops run on bf16 or fp64 tensors, and the roundings from fp32 to bf16."""

    def __init__(self):
        super().__init__()
        self.bf16_math, self.fp64, self.roundings = [], [], 0

    def __torch_dispatch__(self, func, types_, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        ins = [t.dtype for t in torch.utils._pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        outs = [t.dtype for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]
        if torch.float64 in ins + outs:
            self.fp64.append(name)
        if name in _NOT_ARITHMETIC or func.is_view:
            if name in ("_to_copy", "to", "copy_", "copy") and torch.bfloat16 in outs and torch.float32 in ins:
                self.roundings += 1
        elif torch.bfloat16 in ins + outs:
            self.bf16_math.append(name)
        return out


def _run_traced(fn, h, g, emulate: bool):
    ops = _Ops()
    with _compiles() as compiling, ops:
        out, err = call_learner(fn, h, g, emulate)
    if compiling:
        finish(
            not_yet(
                "it compiles (torch.compile, or the lesson's compiled workloads): write the kernel's arithmetic "
                "yourself, in eager PyTorch, so that you see where it rounds; the checker compiles the chain for you"
            )
        )
    if err:
        finish(not_yet(err))
    return out, ops


def _times(n: int) -> str:
    return {0: "never", 1: "once", 2: "twice"}.get(n, f"{n} times")


@exercise
def check_fused_chain(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(h, g, emulate)`` computes ``chain(h, g) = rms_norm(silu(g) * h)`` of bf16 ``h``, ``g`` as the
    C++ kernel Inductor fuses it into does, in eager PyTorch (fp32, with the kernel's roundings to bf16), by default
    (``emulate=False``) and with ``emulate_precision_casts`` (``emulate=True``). Compared bit for bit with the
    kernel's output on two input pairs (where this torch's CPU Inductor ignores the setting, ``emulate=True`` is
    compared with eager mode's). Compiling is refused."""
    seed = _validate.seed(seed)
    h0, g0 = make_inputs("chain", seed, rows=_ROWS, width=_WIDTHS[0])
    runs = {}
    with torch.no_grad():
        for emulate in (False, True):
            out, ops = _run_traced(fn, h0, g0, emulate)
            err = _check_output(out, h0)
            if err is not None:
                return not_yet(f"with emulate={emulate}, {err}")
            if ops.bf16_math:
                if torch.equal(out, chain(h0, g0)):
                    return your_turn(
                        f"so far this is eager mode's chain: {', '.join(dict.fromkeys(ops.bf16_math))} run on bf16 "
                        "tensors. The fused kernel converts h and g to fp32 once, computes in fp32, and rounds to bf16 "
                        "only with a conversion (x.to(torch.bfloat16))"
                    )
                return not_yet(
                    f"with emulate={emulate}, {', '.join(dict.fromkeys(ops.bf16_math))} ran on bf16 tensors: the "
                    "kernel computes in fp32 (convert h and g with .float() first) and makes bf16 only by converting "
                    "a value (.to(torch.bfloat16))"
                )
            if ops.fp64:
                return not_yet(
                    f"with emulate={emulate}, {', '.join(dict.fromkeys(ops.fp64))} used float64: the kernel computes "
                    "in fp32, and its last bits are what the check compares"
                )
            runs[emulate] = ops.roundings
    ok, why = inductor_status()
    if not ok:
        return not_yet(why)
    refs = _kernel_outputs(seed)
    emulates = _emulates(refs)
    differ, total = {False: 0, True: 0}, sum(r[2].numel() for r in refs)
    tiny = {False: 0, True: 0}  # of those, in the rows of _with_extremes where silu(g) is tiny (the eps decides)
    with torch.no_grad():
        for i, (h, g, eager, plain, emulated) in enumerate(refs):
            for emulate, want in ((False, plain), (True, emulated if emulates else eager)):
                out = attempt(fn, h, g, emulate)
                err = _check_output(out, h)
                if err is not None:
                    return not_yet(f"with emulate={emulate}, on inputs of shape {tuple(h.shape)}, {err}")
                differ[emulate] += int((out != want).sum())
                tiny[emulate] += int((out != want)[:2].sum()) if i else 0
    eps = (
        "on the rows where silu(g) * h is tiny, rms_norm's eps decides the result: F.rms_norm on fp32 values (eps "
        "None) uses fp32's eps, as the kernel does"
    )
    if differ[False]:
        hints = [
            "by default the kernel keeps every intermediate in fp32 registers and rounds only what it writes to memory",
            "load h and g as fp32 once (.float()), then compute silu, the product and rms_norm in fp32",
        ]
        return hint_list(
            f"with emulate=False, {differ[False]} of {total} elements differ from the kernel's output; your function "
            f"rounds to bf16 {_times(runs[False])}",
            [eps] if tiny[False] == differ[False] else hints + ([eps] if tiny[False] else []),
        )
    if differ[True]:
        hints = [
            "the emulating kernel rounds wherever eager mode writes a bf16 tensor, then goes on in fp32: section "
            "1 says which tensors eager mode writes in bf16",
            "one rounding at the end is what the kernel does without emulation",
        ]
        return hint_list(
            f"with emulate=True, {differ[True]} of {total} elements differ from the "
            f"{'emulating kernel' if emulates else 'eager result'}; your function rounds to bf16 {_times(runs[True])}",
            [eps] if tiny[True] == differ[True] else hints + ([eps] if tiny[True] else []),
        )
    note = (
        ""
        if emulates
        else (
            " (this torch's CPU Inductor ignores emulate_precision_casts for the chain, so emulate=True was compared "
            "with eager mode's result, which the setting reproduces from torch 2.13 on)"
        )
    )
    return correct(
        f"{total} of {total} elements equal the kernel's bit for bit, with and without emulation{note}. Your "
        f"function rounds to bf16 {_times(runs[False])} by default and {_times(runs[True])} with emulate=True"
    )


@contextlib.contextmanager
def _inductor_compiles():
    """The setting of ``emulate_precision_casts`` each time Inductor compiles a graph in the block, read in
    ``compile_fx`` (with ``options=`` applied), not in the traced code, where Dynamo would guard on it."""
    compile_fx, config = import_inductor()
    seen, depth, original = [], [], compile_fx.compile_fx

    def spy(gm, example_inputs, *args, **kwargs):
        if not depth:  # compile_fx calls itself once it has applied its config_patches: count the outer call
            patches = kwargs.get("config_patches") or {}
            seen.append(bool(patches.get("emulate_precision_casts", config.emulate_precision_casts)))
        depth.append(1)
        try:
            return original(gm, example_inputs, *args, **kwargs)
        finally:
            depth.pop()

    compile_fx.compile_fx = spy
    try:
        yield seen
    finally:
        compile_fx.compile_fx = original


def _mentions_emulation(fn) -> bool:
    """Whether ``fn``'s code objects (nested ones included) name ``emulate_precision_casts``."""

    def names(code) -> bool:
        if "emulate_precision_casts" in code.co_names:
            return True
        for const in code.co_consts:
            if isinstance(const, types.CodeType) and names(const):
                return True
            if const == "emulate_precision_casts" or (isinstance(const, tuple) and "emulate_precision_casts" in const):
                return True
        return False

    code = getattr(fn, "__code__", None)
    return isinstance(code, types.CodeType) and names(code)


def _judge_settings(fn, seen: list, shapes: list) -> None:
    """End the check if Inductor never compiled, or compiled once with the setting off."""
    if not seen:
        finish(
            not_yet(
                "the function it returned never reached Inductor: it ran eagerly, or with another backend. Compile "
                "fn with torch.compile (Inductor is its default backend)"
            )
        )
    if not seen[0]:
        if not _mentions_emulation(fn):
            finish(
                your_turn(
                    "so far Inductor compiles fn with its default numerics (one bf16 rounding per fused kernel); make "
                    "it round where eager mode does"
                )
            )
        finish(
            not_yet(
                "Inductor compiled fn with emulate_precision_casts off: torch.compile(fn) only wraps fn, and Inductor "
                "compiles at the first call. The setting must be on when Inductor compiles"
            )
        )
    if not all(seen):
        finish(
            not_yet(
                f"Inductor compiled fn {_times(len(seen))} (the last call had inputs of another shape, {shapes[-1]}: "
                f"Dynamo compiles again for a new shape), {_times(seen.count(False))} with emulate_precision_casts "
                "off: the setting in force at each compile counts. Keep it on for every compile of fn"
            )
        )


@exercise
def check_compile_matching_eager(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(f)`` returns a compiled version of ``f`` whose bf16 results equal eager mode's on every call
    (``emulate_precision_casts`` on whenever Inductor compiles ``f``), leaving Inductor's settings as they were.
    Checked on lesson 11's ``chain`` with three input pairs, the last of another rank (so Dynamo compiles again)."""
    seed = _validate.seed(seed)
    ok, why = inductor_status()
    if not ok:
        return not_yet(why)
    _, config = import_inductor()
    before = config.emulate_precision_casts
    inputs = [make_inputs("chain", seed + i, rows=_ROWS, width=w) for i, w in enumerate((_WIDTHS[0],) + _WIDTHS)]
    # the last pair as 2 x 8 x 74: a tensor of another rank fails a guard whatever Dynamo made dynamic before
    inputs[-1] = tuple(t.reshape(2, _ROWS // 2, -1) for t in inputs[-1])
    shapes = [tuple(h.shape) for h, _ in inputs]
    outs = []
    try:
        with _inductor_compiles() as seen:
            run = attempt(fn, _fresh(chain))
            if not callable(run):
                return not_yet(
                    f"compile_matching_eager(fn) must return a function (fn compiled), got {type(run).__name__}"
                )
            with torch.no_grad():
                for i, (h, g) in enumerate(inputs):
                    out = attempt(run, h, g, prefix="the function it returned: ")
                    err = _check_output(out, h)
                    if err is not None:
                        return not_yet("the function it returned: " + err)
                    outs.append(out)
                    if i == 0:
                        _judge_settings(fn, seen, shapes[:1])
    finally:
        left_on = config.emulate_precision_casts != before
        config.emulate_precision_casts = before  # never leave the learner's process changed
    _judge_settings(fn, seen, shapes)
    if left_on:
        return not_yet(
            "the results match eager, but emulate_precision_casts stays on for every later compile of the process. "
            "Turn it on for fn alone"
        )
    eagers = [chain(h, g) for h, g in inputs]
    differ = sum(int((o != e).sum()) for o, e in zip(outs, eagers))
    total = sum(e.numel() for e in eagers)
    if not _emulates(_kernel_outputs(seed)):
        return correct(
            f"Inductor compiled fn {_times(len(seen))}, each time with emulate_precision_casts on. (This torch's CPU "
            f"Inductor ignores the setting for this chain: {differ} of {total} elements still differ from eager "
            "here; torch 2.13 and later match)"
        )
    if differ == 0:
        return correct(
            f"Inductor compiled fn {_times(len(seen))} (again for the last shape), each time with "
            f"emulate_precision_casts on; {total} of {total} elements equal eager mode's bit for bit"
        )
    return not_yet(
        f"emulate_precision_casts was on, yet {differ} of {total} elements differ from eager mode: return fn compiled "
        "by torch.compile itself, with Inductor (the default backend), and nothing else changed"
    )
