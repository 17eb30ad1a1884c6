"""Checkers for lesson 08's exercises: the first non-finite module's hook, the first layer that overflows fp16, and
its fix."""

from __future__ import annotations

import contextlib
import copy
from collections import OrderedDict

import torch
from torch import nn

from .. import _validate
from .._exercise import attempt, calls_seen, correct, exercise, not_yet, placeholder, your_turn
from .._validate import flag, real_in
from ..checks import CheckResult, call_learner
from . import _experiments as experiments, _records as records
from ._experiments import trace_overflow
from ._models import broken_training_setup
from .key_code import KeepFP32  # the lesson's own wrapper (and the checked one, its subclass)

__all__ = ["check_first_bad_layer", "check_fp16_fix", "check_nonfinite_hook"]


class _Fn(nn.Module):
    """A module whose forward is ``fn(self, x)``, with ``children`` as its submodules."""

    def __init__(self, fn, **children):
        super().__init__()
        self.fn = fn
        for name, child in children.items():
            self.add_module(name, child)

    def forward(self, x):
        return self.fn(self, x)


def _scale(factor: float) -> _Fn:
    """x times a constant: 1e39 makes every non-zero float32 value inf."""
    return _Fn(lambda m, x: x * factor)


def _root() -> _Fn:
    """The square root of its input: NaN, not inf, for a negative value."""
    return _Fn(lambda m, x: torch.sqrt(x))


def _retry(m, x):
    """fc on its input times 1e39 (inf), then again on the input where that gave inf/NaN."""
    first = m.fc(x * 1e39)
    return torch.where(torch.isfinite(first), first, m.fc(x))


def _raise_after(m, x):
    m.fc(x)
    raise RuntimeError("the model's own error, raised after fc ran")


def _linear(n_in: int, n_out: int, g: torch.Generator, gain: float = 1.0) -> nn.Linear:
    lin = nn.Linear(n_in, n_out)
    with torch.no_grad():
        lin.weight.copy_(gain * torch.randn(n_out, n_in, generator=g) / n_in**0.5)
        lin.bias.zero_()
    return lin


_TUPLE_HINT = (
    "a module's output can be a tuple (or a list, or a dict) of tensors, as attention modules return: look at every "
    "floating tensor in it"
)


_REUSED_HINT = (
    "a module can run more than once in one forward pass (a shared or weight-tied layer): its hook fires at every "
    "call. Keep the calls in the order they come and take the first whose output holds inf/NaN; do not keep only "
    "the first or the last call of each name"
)


def _hook_cases() -> list[tuple[str, nn.Module, torch.Tensor, str | None, str]]:
    """(what, model, input, the first module whose output is not finite or None, a hint or "")."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 8, generator=g)
    later = nn.Sequential(
        OrderedDict(embed=_linear(8, 16, g), act=nn.ReLU(), grow=_scale(1e30), wide=_linear(16, 16, g, 1e10),
                    head=_linear(16, 4, g))
    )  # fmt: skip
    nested = nn.Sequential(
        OrderedDict(
            stem=_linear(8, 16, g),
            block=nn.Sequential(OrderedDict(fc=_linear(16, 16, g), boom=_scale(1e39), norm=nn.LayerNorm(16))),
            head=_linear(16, 4, g),
        )
    )
    pair = nn.Sequential(
        OrderedDict(
            proj=_linear(8, 16, g),
            attn=_Fn(lambda m, x: (x.tanh(), torch.exp(x * 100))),
            pick=_Fn(lambda m, p: p[0]),
            head=_linear(16, 4, g),
        )
    )
    half = nn.Sequential(
        OrderedDict(a=_linear(8, 32, g), b=_linear(32, 32, g, 5e4), c=_linear(32, 4, g))
    ).half()  # b's outputs reach about 1e5, beyond fp16's 65504
    root = nn.Sequential(OrderedDict(fc=_linear(8, 8, g), root=_root(), head=_linear(8, 4, g)))
    fine = nn.Sequential(OrderedDict(fc=_linear(8, 16, g), act=nn.ReLU(), head=_linear(16, 4, g)))
    # a module called twice: its first output about 1e15 (times 1e10, finite), its second about 1e40, inf
    twice = nn.Sequential(OrderedDict(embed=_linear(8, 16, g),
                                      rnn=_Fn(lambda m, x: m.fc(m.fc(x) * 1e10), fc=_linear(16, 16, g, 1e15)),
                                      head=_linear(16, 4, g)))  # fmt: skip
    retry = nn.Sequential(OrderedDict(embed=_linear(8, 16, g), retry=_Fn(_retry, fc=_linear(16, 16, g)),
                                      head=_linear(16, 4, g)))  # fmt: skip
    # bf16 keeps fp32's range: b's outputs (about 1e6) are finite there; the square root of a negative is NaN
    wide_bf16 = nn.Sequential(
        OrderedDict(a=_linear(8, 32, g), b=_linear(32, 32, g, 1e6), root=_root(), c=_linear(32, 4, g))
    ).bfloat16()
    return [
        ("a model whose overflow comes in a later layer", later, x, "wide", ""),
        ("a model whose overflow is inside a container", nested, x, "block.boom", ""),
        ("a model with a module that returns a tuple", pair, x, "attn", _TUPLE_HINT),
        ("a pure fp16 model", half, x.half(), "b", ""),
        ("a model whose first bad output is NaN, not inf", root, x, "root",
         "NaN counts too: torch.isfinite is False for inf, -inf and NaN"),
        ("a model whose outputs are all finite", fine, x, None, ""),
        ("a model that calls one layer twice, finite the first time", twice, x, "rnn.fc", _REUSED_HINT),
        ("a model that calls one layer twice, inf the first time only", retry, x, "retry.fc", _REUSED_HINT),
        ("a bf16 model whose outputs exceed fp16's range (65504) and stay finite", wide_bf16, x.bfloat16(), "root",
         "test with torch.isfinite, not a threshold (bf16 holds values up to about 3.4e38) and not with numpy, "
         "which has no bf16"),
        ("an empty batch (0 rows)", fine, x[:0], None,
         "an empty output holds no inf/NaN: torch.isfinite(t).all() is True for it, while t.max() raises"),
    ]  # fmt: skip


def _hooks_left(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


@contextlib.contextmanager
def _calls_to_tracer():
    """The calls of the package's tracer made inside the block, seen by where their code lives."""
    where = {experiments.__file__: "trace_overflow", records.__file__: "first_nonfinite"}
    with calls_seen(lambda code: where.get(code.co_filename) == code.co_name) as seen:
        yield seen


@exercise
def check_nonfinite_hook(fn) -> CheckResult:
    """Exercise: ``fn(model, x)`` hooks every module of ``model``, runs ``model(x)`` once, removes the hooks (also
    when the model raises) and returns the name of the first module, in the order the hooks fire, whose output holds
    an inf or a NaN (None if none does). The package's tracer is refused."""
    placeholder(fn, "write first_nonfinite_module(model, x) and pass the function itself")
    if not callable(fn):
        return not_yet(f"pass the function first_nonfinite_module itself, got {type(fn).__name__}")
    for i, (what, model, x, want, hint) in enumerate(_hook_cases()):
        calls: list = []
        counter = model.register_forward_pre_hook(lambda m, a, calls=calls: calls.append(1))
        with _calls_to_tracer() as used:
            got, err = call_learner(fn, model, x)
        counter.remove()
        if used:
            return not_yet(
                "it calls the course's debug.trace_overflow: write the hook yourself (module.register_forward_hook "
                "on each module of model.named_modules())"
            )
        if i == 0 and not calls and got is None and err is None:
            return your_turn("so far it never runs the model: hook every module, run model(x) once, return a name")
        tip = f". Hint: {hint}" if hint else ""
        if err:
            return not_yet(f"on {what}, {err}{tip}")
        if (left := _hooks_left(model)) > 0:
            return not_yet(
                f"after it returns, {left} hook{'s are' if left > 1 else ' is'} still on the model: keep the handles "
                "that register_forward_hook returns and call .remove() on each, in a finally block"
            )
        if got == want:
            continue
        if not (got is None or isinstance(got, str)):
            return not_yet(f"return the module's name as a string (or None), got {type(got).__name__}")
        names = dict(model.named_modules())
        hide = () if want is None else (want,)
        if want is None:
            return not_yet(f"on {what} it returned {got!r}: no output holds inf/NaN there, so return None{tip}")
        if got is None:
            return not_yet(f"on {what} it returned None, but a module's output holds inf/NaN there{tip}", hide=hide)
        if got not in names:
            return not_yet(f"on {what} it returned {got!r}, which is not a module name: use named_modules()' names")
        if hint == _REUSED_HINT and got != "":
            return not_yet(f"on {what} it returned {got!r}{tip}", hide=hide)
        if got == "":
            return not_yet(
                f"on {what} it returned '', the model itself: its output holds inf/NaN because a module inside it "
                "produced one first. Take the first output, in the order the hooks fire",
                hide=hide,
            )
        if want.startswith(got + "."):
            return not_yet(
                f"on {what} it returned {got!r}, a container: its forward hook fires after those of the modules "
                "inside it, so the first output to hold inf/NaN is one of theirs. Keep the order the hooks fire in, "
                "not the order of named_modules()",
                hide=hide,
            )
        seen = {r.label: r.output is not None and r.output.has_nonfinite for r in trace_overflow(model, x).records}
        if not seen.get(got, False):
            return not_yet(
                f"on {what} it returned {got!r}, whose output is finite: look at each module's output, not its "
                f"input{tip}",
                hide=hide,
            )
        return not_yet(
            f"on {what} it returned {got!r}, but an earlier module's output already held inf/NaN: return the first, "
            "in the order the hooks fire",
            hide=hide,
        )
    raises = _Fn(_raise_after, fc=nn.Linear(8, 8))
    with _calls_to_tracer() as used:
        call_learner(fn, raises, torch.randn(2, 8))
    if used:
        return not_yet("it calls the course's debug.trace_overflow: write the hook yourself")
    if (left := _hooks_left(raises)) > 0:
        return not_yet(
            f"when the model raises, {left} hook{'s stay' if left > 1 else ' stays'} on it: remove the hooks in a "
            "finally block (try: model(x) finally: handle.remove() for each)"
        )
    return correct(
        "the first module whose output holds inf/NaN, on ten models: an overflow in a later layer, one inside a "
        "container, one in a tuple output, an fp16 overflow, a NaN, none at all, a layer called twice (inf on its "
        "second call, then on its first only), large finite bf16 values, an empty batch; and no hook left behind, "
        "also when the model raised"
    )


@exercise
def check_first_bad_layer(answer, seed: int = 3) -> CheckResult:
    """Exercise: the name (``"block0.wi"``) of the first module of :func:`amp_lessons.debug.broken_training_setup`
    (``seed``) whose output holds an inf or a NaN under fp16 autocast."""
    seed = _validate.seed(seed)
    placeholder(answer, "replace `...` with a module name as named_modules() spells it, such as 'block0.wi'")
    if not isinstance(answer, str):
        return not_yet(f"give the module's name as a string, e.g. 'block0.wi', not {type(answer).__name__}")
    model, x, _ = broken_training_setup(seed)
    trace = trace_overflow(model, x, autocast=torch.float16)
    first = trace.first_nonfinite("output")
    names = [r.label for r in trace.records]
    if answer == first.label:
        inp = first.input
        return correct(
            f"{first.label} ({first.type}) is the first module whose fp16 output holds inf/NaN; its input was "
            f"finite (abs max about {inp.absmax:.0e}), so the overflow happens inside it"
        )
    if answer not in names:
        return not_yet(f"{answer!r} is not a module of this model; its modules are {names}")
    rec = trace.record(answer)
    if rec.output is None or not rec.output.has_nonfinite:
        seen = "" if rec.output is None else f" (abs max about {rec.output.absmax:.0e})"
        return not_yet(
            f"{answer}'s output is finite under fp16 autocast{seen}. Hint: "
            "trace the exercise's model on its batch, debug.trace_overflow(broken, xb, autocast=torch.float16), "
            "and ask the trace for .first_nonfinite()",
            hide=first.label,
        )
    if first.label.startswith(answer + "."):
        return not_yet(f"{answer} is a container; which module inside it overflows first?", hide=first.label)
    return not_yet(
        f"{answer}'s output holds inf/NaN, but it only passes on what an earlier module produced: its input "
        "already held inf/NaN. Look for the first one in forward order",
        hide=first.label,
    )


def _unchanged(fixed: nn.Module, model: nn.Module) -> bool:
    """Whether ``fixed`` is still ``model``: the same modules and the same parameters."""
    a, b = dict(fixed.named_parameters()), dict(model.named_parameters())
    return (
        repr(fixed) == repr(model)
        and type(fixed) is type(model)
        and a.keys() == b.keys()
        and all(a[k].shape == b[k].shape and torch.equal(a[k], b[k]) for k in a)
    )


@exercise
def check_fp16_fix(fix, seed: int = 3, tolerance: float = 0.05, *, own_wrapper: bool = True) -> CheckResult:
    """Exercise: ``fix(model)`` returns (or changes in place) :func:`amp_lessons.debug.broken_training_setup`'s
    model so that under fp16 autocast its output is finite and within ``tolerance`` (relative to the largest) of the
    fp32 output, with most Linear layers still in fp16. ``own_wrapper=False`` accepts the lesson's ``KeepFP32``."""
    tolerance = real_in(tolerance, "tolerance", 0, 1, open_low=True, allowed="a fraction in (0, 1], e.g. 0.05 for 5%")
    own_wrapper = flag(own_wrapper, "own_wrapper")
    placeholder(fix, "write fix(model) and pass the function itself")
    model, x, _ = broken_training_setup(seed)
    with torch.no_grad():
        want = model(x)
    candidate = copy.deepcopy(model)
    if not callable(fix):
        return not_yet(f"expected a function fix(model), got {type(fix).__name__}")
    first_bad = trace_overflow(model, x, autocast=torch.float16).first_nonfinite("output").label
    layer = candidate.get_submodule(first_bad)  # the layer to keep in fp32, found again by identity after the fix
    got = attempt(fix, candidate, call="fix(model)")
    fixed = candidate if got is None else got
    if not isinstance(fixed, nn.Module):
        return not_yet(f"fix(model) must return the model (or None), got {type(fixed).__name__}")
    try:
        with torch.no_grad():
            trace = trace_overflow(fixed, x, autocast=torch.float16)
            with torch.autocast("cpu", dtype=torch.float16):
                out = fixed(x).float()
    except Exception as exc:  # noqa: BLE001 - any error of the learner's model is feedback
        if isinstance(exc, ValueError) and "on a dtype mismatch" in str(exc):
            return not_yet(
                "the fixed model fails on a dtype mismatch (symptom S8): your wrapper switches autocast off, but the "
                "layer still receives the float16 activation that autocast produced before it, and meets its float32 "
                "weight. Inside the wrapper's forward, cast the input to float32 (x.float()) before calling the "
                f"layer. What the tracer said: {exc}"
            )
        return not_yet(f"the fixed model raised {type(exc).__name__}: {exc}")
    if own_wrapper and any(isinstance(m, KeepFP32) for m in fixed.modules()):
        return not_yet(
            "fix(model) uses the lesson's KeepFP32: write the wrapper yourself, a module of your own whose "
            "forward runs the layer with autocast switched off (torch.autocast(device_type, enabled=False)) on "
            "fp32 inputs"
        )
    bad = trace.first_nonfinite("output")
    if bad is not None:
        still = (
            "under fp16 autocast the model still produces inf/NaN: find the layer with debug.trace_overflow and "
            "keep just that one out of fp16"
        )
        if _unchanged(fixed, model):
            return your_turn("so far fix(model) leaves the model as it was: " + still)
        return not_yet(still)
    linears = [r for r in trace.records if r.type == "Linear"]
    in_fp16 = [r for r in linears if r.output is not None and r.output.dtype == "float16"]
    if len(in_fp16) < len(linears) // 2:
        return not_yet(
            f"only {len(in_fp16)} of {len(linears)} Linear layers still run in fp16: keep just the layer that "
            "overflows in fp32 and let autocast do the rest"
        )
    if out.shape != want.shape:
        return not_yet(f"the fixed model's output has shape {tuple(out.shape)}, not {tuple(want.shape)}")
    rel = float((out - want).abs().max() / want.abs().max())
    if rel > tolerance:
        return not_yet(
            f"the output is finite but {rel:.1%} away from the fp32 model's (limit {tolerance:.0%}): the fix "
            "changed what the model computes"
        )
    names = {id(m): name for name, m in fixed.named_modules()}
    name = names.get(id(layer)) or next(
        (n for n, m in fixed.named_modules() if isinstance(m, nn.Linear) and m.weight.shape == layer.weight.shape
         and torch.equal(m.weight, layer.weight)),
        None,
    )  # fmt: skip
    kept = [r for r in trace.records if r.name == name and r.output is not None]
    if kept and kept[0].output.dtype != "float32":
        return not_yet(
            f"the layer that overflowed now runs in {kept[0].output.dtype} under fp16 autocast, not in float32: "
            "a bf16 region keeps fp32's range but not its precision, and the task asks for fp32. Switch autocast "
            "off around it (torch.autocast(device_type, enabled=False)) and cast its input to float32",
            hide=first_bad,
        )
    return correct(
        f"finite under fp16 autocast, {len(in_fp16)} of {len(linears)} Linear layers still in fp16, output within "
        f"{tolerance:.0%} of fp32"
    )
