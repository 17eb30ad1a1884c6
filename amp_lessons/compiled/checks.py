"""Checkers for lesson 11's exercises, on the pointwise chain ``rms_norm(silu(g) * h)`` of bf16 tensors (lesson 11's
``chain``):

- :func:`check_fused_chain`: the chain as Inductor's fused kernel computes it by default, written in eager PyTorch
  (runs eagerly, milliseconds);
- :func:`check_compile_matching_eager`: a function that compiles another one so that its bf16 results match eager
  mode's (compiles the chain with the learner's function: about a second on a small CPU).

Each returns a :class:`amp_lessons.checks.CheckResult` and never raises on a learner's answer."""

from __future__ import annotations

import types
import warnings

import torch

from .. import _validate
from .._exercise import attempt, correct, exercise, not_yet, your_turn
from ..checks import CheckResult
from .experiments import inductor_status, make_inputs
from .key_code import chain

__all__ = [
    "check_compile_matching_eager",
    "check_fused_chain",
]

_HALF_ULP = 2.0**-8  # bf16 keeps 8 significant bits: one correct rounding is off by at most 2**-8 relatively
_ROWS, _WIDTH = 16, 32  # the chain's inputs: 16 x 64 bf16 values


def _check_output(out, h) -> str | None:
    if not isinstance(out, torch.Tensor):
        return f"your function returned {type(out).__name__}, not a tensor"
    if out.shape != h.shape:
        return f"your function returned shape {tuple(out.shape)}; h and g have shape {tuple(h.shape)}"
    if out.dtype != torch.bfloat16:
        return f"your function returned {out.dtype}; the chain's result is bf16 (round it: .to(torch.bfloat16))"
    return None


def _max_rel(out: torch.Tensor, ref: torch.Tensor) -> float:
    return float(((out.double() - ref).abs() / ref.abs()).max())


@exercise
def check_fused_chain(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(h, g)`` computes ``chain(h, g) = rms_norm(silu(g) * h)`` of bf16 ``h``, ``g`` the way Inductor's
    fused kernel does by default, in eager PyTorch. Checked against an fp64 reference: every element must be within
    one correct rounding (relative error at most 2**-8), which eager mode's op-by-op roundings are not."""
    seed = _validate.seed(seed)
    h, g = make_inputs("chain", seed, rows=_ROWS, width=_WIDTH)
    with torch.no_grad():
        out = attempt(fn, h, g)
        err = _check_output(out, h)
        if err is not None:
            return not_yet(err)
        ref = chain(h.double(), g.double())
        eager = chain(h, g)
    rel, rel_eager = _max_rel(out, ref), _max_rel(eager, ref)
    if rel <= _HALF_ULP:
        return correct(
            f"largest relative error {rel:.2e} <= 2**-8 = {_HALF_ULP:.2e}: one rounding, as in the fused kernel. "
            f"Eager mode's op-by-op roundings give {rel_eager:.2e} on the same inputs"
        )
    if torch.equal(out, eager):
        return your_turn(
            "so far this is eager mode's result: every op of the chain writes bf16, a rounding each. The fused kernel "
            "keeps its intermediates in fp32 registers"
        )
    return not_yet(
        f"largest relative error {rel:.2e} is more than one rounding allows (2**-8 = {_HALF_ULP:.2e}): something "
        "is still rounded to bf16 before the end. The fused kernel converts its bf16 inputs to fp32 once, and converts "
        "to bf16 only what it writes to memory"
    )


def _probe(seen: list, config):
    """The chain, plus one line that records, each time Dynamo traces it, whether it is being compiled and whether
    Inductor's ``emulate_precision_casts`` is on (``config``: ``torch._inductor.config``; Dynamo replays the append after running the compiled graph). A new
    code object each time: Dynamo's cache, kept per code object, starts empty."""

    def probe(h, g):
        seen.append((torch.compiler.is_compiling(), config.emulate_precision_casts))
        return chain(h, g)

    probe.__code__ = probe.__code__.replace()
    return probe


def _bf16_ulp(x: torch.Tensor) -> torch.Tensor:
    """The spacing of bf16 at each element of ``x`` (8 significant bits; subnormals' spacing 2**-133)."""
    _, exponent = torch.frexp(x.double().abs().clamp_min(torch.finfo(torch.bfloat16).tiny))
    return torch.ldexp(torch.ones_like(x, dtype=torch.float64), exponent - 8)


def _mentions_emulation(fn) -> bool:
    """Whether ``fn``'s code (its nested functions included) names ``emulate_precision_casts``: as an attribute,
    a keyword or a string. Read from the code objects, so it needs no source file."""

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


@exercise
def check_compile_matching_eager(fn, seed: int = 0) -> CheckResult:
    """Exercise: ``fn(f)`` returns a compiled version of ``f`` whose bf16 results equal eager mode's on every call
    (Inductor with ``emulate_precision_casts`` on whenever it compiles), and leaves Inductor's settings as they were.

    The checker compiles lesson 11's ``chain`` with ``fn``, calls the result on two pairs of inputs, records at each
    Dynamo trace whether it compiles and with which setting, and compares the results with eager mode's: from torch
    2.13 on, fewer than 1% of the elements may differ, by 1 bf16 ulp at most (where Inductor's and ATen's fp32
    ``exp`` differ in the last bit). torch 2.11's CPU Inductor does not emulate the chain's casts: there only the
    setting is checked."""
    seed = _validate.seed(seed)
    ok, why = inductor_status()
    if not ok:
        return not_yet(why)
    with warnings.catch_warnings():
        # importing Inductor imports torch.utils.mkldnn, whose TorchScript classes warn that TorchScript is
        # deprecated: a warning about torch's own code, not the learner's
        warnings.simplefilter("ignore", DeprecationWarning)
        import torch._inductor.compile_fx  # noqa: F401
        import torch._inductor.config as inductor_config

    before = inductor_config.emulate_precision_casts
    seen: list = []
    probe = _probe(seen, inductor_config)
    run = attempt(fn, probe)
    if not callable(run):
        return not_yet(f"compile_matching_eager(fn) must return a function (fn compiled), got {type(run).__name__}")
    inputs = [make_inputs("chain", s, rows=_ROWS, width=_WIDTH) for s in (seed, seed + 1)]
    outs = []
    try:
        with torch.no_grad():
            for h, g in inputs:
                out = attempt(run, h, g, prefix="the function it returned: ")
                err = _check_output(out, h)
                if err is not None:
                    return not_yet("the function it returned: " + err)
                outs.append(out)
    finally:
        left_on = inductor_config.emulate_precision_casts != before
        inductor_config.emulate_precision_casts = before  # never leave the learner's process changed
    if not any(compiling for compiling, _ in seen):
        return not_yet("the function it returned ran eagerly: Dynamo never traced fn. Compile it with torch.compile")
    settings = [emulate for compiling, emulate in seen if compiling]
    if not any(settings):
        if not _mentions_emulation(fn):
            return your_turn(
                "so far Inductor compiles fn with its default numerics (one bf16 rounding per fused kernel); make it "
                "round where eager mode does"
            )
        return not_yet(
            "Inductor compiled fn with emulate_precision_casts off: torch.compile(fn) only wraps fn, and Inductor "
            "compiles at the first call. The setting must be on while the compiled function is called"
        )
    if not all(settings):
        return not_yet(
            f"Dynamo traced fn {len(settings)} times and Inductor compiled it {settings.count(False)} of them with "
            "emulate_precision_casts off: the first call compiled with it on, a later call outside the setting "
            "compiled again without it (Dynamo recompiles when the setting changes). Keep it on for every call"
        )
    if left_on:
        return not_yet(
            "the results match eager, but emulate_precision_casts stays on for every later compile of the process. "
            "Turn it on only around the calls: torch._inductor.config.patch(...) is a context manager"
        )
    eagers = [chain(h, g) for h, g in inputs]
    differ = sum(int((o != e).sum()) for o, e in zip(outs, eagers))
    total = sum(e.numel() for e in eagers)
    release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if release <= (2, 11):
        return correct(
            "Inductor compiled fn with emulate_precision_casts on at every call. (torch 2.11's CPU Inductor does not "
            f"emulate this chain's casts: {differ} of {total} elements still differ from eager here; torch 2.13 and "
            "later match)"
        )
    ulps = max(float(((o.double() - e.double()).abs() / _bf16_ulp(e)).max()) for o, e in zip(outs, eagers))
    if differ < 0.01 * total and ulps <= 1:
        return correct(
            f"Inductor compiled fn with emulate_precision_casts on at every call; {total - differ} of {total} "
            "elements equal eager mode's bit for bit"
        )
    return not_yet(
        f"emulate_precision_casts was on, yet {differ} of {total} elements differ from eager mode: return fn compiled "
        "by torch.compile itself, with Inductor (the default backend), and nothing else changed"
    )
