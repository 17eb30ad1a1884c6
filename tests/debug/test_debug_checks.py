"""Tests of amp_lessons.debug._checks: right answers pass, each kind of wrong answer gets its own hint, and
no answer makes a checker raise."""

import pytest
import torch

from tests.debug.contract import _hooked
from tests.faces import internals
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

debug = internals("debug")


def test_first_bad_layer_checker():
    model, x, _ = debug.broken_training_setup(3)
    want = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    assert want == BAD and debug.check_first_bad_layer(want)
    block = want.split(".")[0]
    assert "container" in debug.check_first_bad_layer(block).message
    assert "earlier module" in debug.check_first_bad_layer("head").message
    assert "finite" in debug.check_first_bad_layer("embed").message
    # the hint names the exercise's own variables (broken, xb), not the lesson's model
    assert "trace_overflow(broken, xb" in debug.check_first_bad_layer("embed").message
    assert "not a module" in debug.check_first_bad_layer("nope").message
    for wrong in (block, "head", "embed"):  # no hint names the answer
        assert not reveals(debug.check_first_bad_layer(wrong).message, want)


BAD = "block4.wo"  # broken_training_setup(3)'s first layer to overflow fp16 (test_first_bad_layer_checker)


class NoCast(torch.nn.Module):
    """The likeliest first try at the fp32 wrapper: autocast switched off, the fp16 input not cast."""

    def __init__(self, layer, dtype=None):
        super().__init__()
        self.layer, self.dtype = layer, dtype

    def forward(self, x):
        with torch.autocast("cpu", dtype=self.dtype or torch.float16, enabled=self.dtype is not None):
            return self.layer(x)


def _wrap(wrapper, **kw):
    """fix(model): the layer that overflows wrapped in ``wrapper``, in place."""
    return lambda m: m.get_submodule("block4").__setattr__("wo", wrapper(m.get_submodule(BAD), **kw))


def test_fp16_fix_checker():
    assert debug.check_fp16_fix(_wrap(debug.KeepFP32), own_wrapper=False)  # in place, returning None
    # the exercise asks for the learner's own wrapper: the lesson's (exported, and checked) is refused
    from amp_lessons.debug import key_code

    for wrapper in (key_code.KeepFP32, debug.KeepFP32):
        own = debug.check_fp16_fix(_wrap(wrapper))
        assert not own and "write the wrapper yourself" in own.message and "enabled=False" in own.message
    r = debug.check_fp16_fix(lambda m: debug.KeepFP32(m), own_wrapper=False)
    assert "Linear layers still run in fp16" in r.message
    r = debug.check_fp16_fix(lambda m: m)
    assert_your_turn(r)
    assert "still produces inf/NaN" in r.message and BAD not in r.message  # never names the answer of exercise 1
    r = debug.check_fp16_fix(lambda m: m.embed.__setattr__("weight", m.embed.weight))  # a change that fixes nothing
    assert_your_turn(r)

    def drop(m):  # finite, but a different model: the block's output is its bias alone
        with torch.no_grad():
            m.get_submodule(BAD).weight.zero_()
        return m

    assert "away from the fp32" in debug.check_fp16_fix(drop).message
    assert "must return the model" in debug.check_fp16_fix(lambda m: 3).message
    # autocast switched off, the input not cast: told to cast it
    r = debug.check_fp16_fix(_wrap(NoCast))
    assert_not_yet(r)
    assert "dtype mismatch (symptom S8)" in r.message and "cast the input to float32 (x.float())" in r.message
    assert "its input is float16 but its weight is float32" in r.message and "inputs do not fit" not in r.message
    # a bf16 region is not the fp32 the task asks for
    r = debug.check_fp16_fix(_wrap(NoCast, dtype=torch.bfloat16))
    assert_not_yet(r)
    assert "runs in bfloat16 under fp16 autocast, not in float32" in r.message and not reveals(r.message, BAD)


def test_the_tracer_names_a_dtype_mismatch_inside_the_model_not_the_inputs():
    """Symptom S8 in the learner's own model: a bf16 activation leaves the autocast region and meets an fp32 layer."""

    class EncoderDecoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc, self.dec = torch.nn.Linear(8, 4), torch.nn.Linear(4, 2)

        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                h = self.enc(x)
            return self.dec(h)

    model = EncoderDecoder()
    with pytest.raises(ValueError, match="inside 'dec' \\(Linear\\) on a dtype mismatch: its input is bfloat16 but its "
                       "weight is float32") as e:  # fmt: skip
        debug.trace_overflow(model, torch.randn(2, 8))
    assert "The inputs are not the cause" in str(e.value) and "x.float()" in str(e.value)
    assert isinstance(e.value.__cause__, RuntimeError)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in model.modules())  # hooks removed
    # inputs of the wrong dtype for the first layer are still the inputs' fault
    with pytest.raises(ValueError, match="inputs do not fit the model: .*float16.*first layer"):
        debug.trace_overflow(torch.nn.Linear(8, 2), torch.randn(2, 8).half())


def _tensors(out):
    return [out] if isinstance(out, torch.Tensor) else [t for t in out if isinstance(t, torch.Tensor)]


def _not_finite(out):
    return not all(torch.isfinite(t).all() for t in _tensors(out))


def _by_name(skip_model=False):
    """The order of named_modules() instead of the order the hooks fire (the model itself, then the container)."""

    def answer(model, x):
        outs = {}
        handles = [
            m.register_forward_hook(lambda m, a, o, n=n: outs.__setitem__(n, o)) for n, m in model.named_modules()
        ]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        bad = [n for n, _ in model.named_modules() if n in outs and _not_finite(outs[n]) and (n or not skip_model)]
        return bad[0] if bad else None

    return answer


def _keeping(per_name):
    """An answer that keeps one verdict per module name: ``per_name(verdicts, name, bad)`` stores it (the first
    call's, or the last call's), and the first name whose verdict is bad is returned, in the order names came."""

    def answer(model, x):
        verdicts = {}

        def hook(name, out):  # returns None: the output is kept
            per_name(verdicts, name, _not_finite(out))

        handles = [m.register_forward_hook(lambda m, a, o, n=n: hook(n, o)) for n, m in model.named_modules()]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        return next((n for n, bad in verdicts.items() if bad), None)

    return answer


def _tracer(model, x):
    first = debug.trace_overflow(model, x).first_nonfinite()
    return None if first is None else first.label


def _numpy_test(out):
    import numpy as np

    return any(not np.isfinite(t.detach().numpy()).all() for t in _tensors(out))


_REUSED = "its hook fires at every call"


@pytest.mark.parametrize(
    "answer, says, hidden",
    [
        # torch.isfinite on a tuple output raises: the hint says outputs can be tuples
        (_hooked(lambda out: not torch.isfinite(out).all()),
         ["returns a tuple", "TypeError", "look at every floating tensor"], ()),
        (_hooked(lambda out: any(torch.isinf(t).any() for t in _tensors(out))), ["NaN counts too"], ()),  # inf only
        (_hooked(lambda out: not torch.isfinite(_tensors(out)[0]).all()), ["tuple"], ("attn",)),  # a tuple's first
        (_by_name(), ["the model itself"], ()),
        (_by_name(skip_model=True), ["a container"], ("block.boom",)),
        (_hooked(_not_finite, inputs=True), ["an earlier module's output already held inf/NaN"], ()),
        (lambda m, x: solution("08").first_nonfinite_module(m, x) or "head", ["return None"], ()),
        (lambda m, x: (m.register_forward_hook(lambda *a: None), "wide")[1], ["1 hook is still on the model"], ()),
        (_hooked(_not_finite, cleanup=False), ["when the model raises"], ()),
        (_tracer, ["write the hook yourself"], ()),  # the package's tracer is refused, however it is reached
        (lambda m, x: (m(x), "nope")[1], ["not a module name"], ()),
        # a layer called twice: keeping only its first call misses an inf on the second, only its last the first
        (_keeping(lambda v, n, bad: v.setdefault(n, bad)), ["finite the first time", _REUSED], ("rnn.fc", "retry.fc")),
        (_keeping(lambda v, n, bad: v.__setitem__(n, bad)), ["inf the first time only", _REUSED],
         ("rnn.fc", "retry.fc")),
        # numpy has no bf16: a fine answer on fp32 and fp16 outputs fails on a bf16 model
        (_hooked(_numpy_test), ["bf16 model", "not with numpy"], ()),
        # .max() of an empty output raises; torch.isfinite(t).all() is True for it
        (_hooked(lambda out: any(not torch.isfinite(t.abs().max()) for t in _tensors(out))),
         ["empty batch", "torch.isfinite(t).all() is True"], ()),
        # a threshold at fp16's largest value flags finite outputs
        (_hooked(lambda out: any(bool((t.float().abs() > 65504).any() | t.isnan().any()) for t in _tensors(out))),
         [], ()),
    ],
)  # fmt: skip
def test_hook_checker_refuses_naive_answers(answer, says, hidden):
    r = debug.check_nonfinite_hook(answer)
    assert_not_yet(r)
    assert all(s in r.message for s in says), r.message
    assert not any(reveals(r.message, h) for h in hidden), r.message


def test_hook_checker_your_turn():
    assert_your_turn(debug.check_nonfinite_hook(...))
    assert_your_turn(debug.check_nonfinite_hook(lambda model, x: None))
