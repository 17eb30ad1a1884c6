"""Tests of amp_lessons.debug._checks: right answers pass, each kind of wrong answer gets its own hint, and
no answer makes a checker raise."""

import pytest
import torch

from tests.faces import internals
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

debug = internals("debug")


def test_first_bad_layer_checker():
    model, x, _ = debug.broken_training_setup(3)
    want = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    assert debug.check_first_bad_layer(want)
    block = want.split(".")[0]
    assert "container" in debug.check_first_bad_layer(block).message
    assert "earlier module" in debug.check_first_bad_layer("head").message
    assert "finite" in debug.check_first_bad_layer("embed").message
    # the hint names the exercise's own variables (broken, xb), not the lesson's model
    assert "trace_overflow(broken, xb" in debug.check_first_bad_layer("embed").message
    assert "not a module" in debug.check_first_bad_layer("nope").message
    for wrong in (block, "head", "embed"):  # no hint names the answer
        assert not reveals(debug.check_first_bad_layer(wrong).message, want)


def test_fp16_fix_checker():
    model, x, _ = debug.broken_training_setup(3)
    bad = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    block, layer = bad.split(".")

    def keep(m):
        getattr(m, block).__setattr__(layer, debug.KeepFP32(getattr(getattr(m, block), layer)))

    assert debug.check_fp16_fix(keep, own_wrapper=False)  # in place, returning None
    # the exercise asks for the learner's own wrapper: the lesson's (exported, and checked) is refused
    from amp_lessons.debug import key_code

    for wrapper in (key_code.KeepFP32, debug.KeepFP32):

        def keep_with(m, wrapper=wrapper):
            getattr(m, block).__setattr__(layer, wrapper(getattr(getattr(m, block), layer)))

        own = debug.check_fp16_fix(keep_with)
        assert not own and "write the wrapper yourself" in own.message and "enabled=False" in own.message
    assert (
        "Linear layers still run in fp16"
        in debug.check_fp16_fix(lambda m: debug.KeepFP32(m), own_wrapper=False).message
    )
    r = debug.check_fp16_fix(lambda m: m)
    assert_your_turn(r)
    assert "still produces inf/NaN" in r.message and bad not in r.message  # never names the answer of exercise 1
    r = debug.check_fp16_fix(lambda m: m.embed.__setattr__("weight", m.embed.weight))  # a change that fixes nothing
    assert_your_turn(r)

    def drop(m):  # finite, but a different model: the block's output is its bias alone
        with torch.no_grad():
            getattr(m, block).wo.weight.zero_()
        return m

    assert "away from the fp32" in debug.check_fp16_fix(drop).message
    assert "must return the model" in debug.check_fp16_fix(lambda m: 3).message


class NoCast(torch.nn.Module):
    """The likeliest first try at the fp32 wrapper: autocast switched off, the fp16 input not cast."""

    def __init__(self, layer, dtype=None):
        super().__init__()
        self.layer, self.dtype = layer, dtype

    def forward(self, x):
        if self.dtype is None:
            with torch.autocast("cpu", enabled=False):
                return self.layer(x)
        with torch.autocast("cpu", dtype=self.dtype):
            return self.layer(x)


def _wrap(wrapper, **kw):
    model, x, _ = debug.broken_training_setup(3)
    bad = debug.trace_overflow(model, x, autocast=torch.float16).first_nonfinite().label
    block, layer = bad.split(".")

    def fix(m):
        getattr(m, block).__setattr__(layer, wrapper(getattr(getattr(m, block), layer), **kw))
        return m

    return fix, bad


def test_a_wrapper_that_does_not_cast_its_input_is_told_to_cast_it():
    fix, bad = _wrap(NoCast)
    r = debug.check_fp16_fix(fix)
    assert_not_yet(r)
    assert "dtype mismatch (symptom S8)" in r.message and "cast the input to float32 (x.float())" in r.message
    assert "inputs do not fit" not in r.message and "first layer" not in r.message
    assert "its input is float16 but its weight is float32" in r.message


def test_a_bf16_region_is_not_the_fp32_the_task_asks_for():
    fix, bad = _wrap(NoCast, dtype=torch.bfloat16)
    r = debug.check_fp16_fix(fix)
    assert_not_yet(r)
    assert "runs in bfloat16 under fp16 autocast, not in float32" in r.message and not reveals(r.message, bad)


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
    with pytest.raises(ValueError, match="inputs do not fit the model: .*\\(2, 7\\) float32"):
        debug.trace_overflow(torch.nn.Linear(8, 2), torch.randn(2, 7))


def _hooked(test, *, inputs=False, cleanup=True):
    """An answer that hooks every module's output (its inputs, with ``inputs``) and returns the first name
    ``test(tensors)`` flags; without ``cleanup`` it removes its hooks only when the model returns."""

    def answer(model, x):
        found = []
        handles = [
            m.register_forward_pre_hook(lambda m, a, n=n: found.append(n) if test(a) else None)
            if inputs
            else m.register_forward_hook(lambda m, a, out, n=n: found.append(n) if test(out) else None)
            for n, m in model.named_modules()
        ]
        try:
            model(x)
        finally:
            if cleanup:
                for h in handles:
                    h.remove()
        for h in handles:
            h.remove()
        return found[0] if found else None

    return answer


def _tensors(out):
    return [out] if isinstance(out, torch.Tensor) else [t for t in out if isinstance(t, torch.Tensor)]


def test_the_hook_exercises_models_break_naive_answers_where_the_tracer_says():
    from amp_lessons.debug._checks import _hook_cases

    for what, model, x, want, _ in _hook_cases():
        assert all(torch.isfinite(p).all() for p in model.parameters()), what  # the weights are finite
        first = debug.trace_overflow(model, x).first_nonfinite()
        assert (None if first is None else first.name) == want, what  # a layer called twice: its name, any call


def test_hook_checker():
    s = solution("08")
    assert debug.check_nonfinite_hook(s.first_nonfinite_module)
    assert_your_turn(debug.check_nonfinite_hook(...))
    assert_your_turn(debug.check_nonfinite_hook(lambda model, x: None))
    # torch.isfinite on a tuple output raises: the hint says outputs can be tuples
    r = debug.check_nonfinite_hook(_hooked(lambda out: not torch.isfinite(out).all()))
    assert_not_yet(r)
    assert "returns a tuple" in r.message and "TypeError" in r.message and "look at every floating tensor" in r.message
    # inf only: a NaN is missed
    r = debug.check_nonfinite_hook(_hooked(lambda out: any(torch.isinf(t).any() for t in _tensors(out))))
    assert "NaN counts too" in r.message
    # the first tensor of a tuple only
    r = debug.check_nonfinite_hook(_hooked(lambda out: not torch.isfinite(_tensors(out)[0]).all()))
    assert "tuple" in r.message and not reveals(r.message, "attn")
    # the order of named_modules() instead of the order the hooks fire: the model itself, then the container

    def by_name(model, x, skip_model=False):
        outs = {}
        handles = [
            m.register_forward_hook(lambda m, a, o, n=n: outs.__setitem__(n, o)) for n, m in model.named_modules()
        ]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        bad = [
            n
            for n, _ in model.named_modules()
            if n in outs and not all(torch.isfinite(t).all() for t in _tensors(outs[n]))
        ]
        bad = [n for n in bad if n or not skip_model]
        return bad[0] if bad else None

    assert "the model itself" in debug.check_nonfinite_hook(by_name).message
    r = debug.check_nonfinite_hook(lambda m, x: by_name(m, x, skip_model=True))
    assert "a container" in r.message and not reveals(r.message, "block.boom")

    def not_finite(out):
        return not all(torch.isfinite(t).all() for t in _tensors(out))

    # the inputs instead of the outputs
    inputs = _hooked(not_finite, inputs=True)
    assert "an earlier module's output already held inf/NaN" in debug.check_nonfinite_hook(inputs).message
    # a name where no output holds inf/NaN
    assert "return None" in debug.check_nonfinite_hook(lambda m, x: s.first_nonfinite_module(m, x) or "head").message
    # hooks left behind, after a normal call and when the model raises
    left = debug.check_nonfinite_hook(lambda m, x: (m.register_forward_hook(lambda *a: None), "wide")[1])
    assert "1 hook is still on the model" in left.message

    assert "when the model raises" in debug.check_nonfinite_hook(_hooked(not_finite, cleanup=False)).message

    # the package's tracer is refused, however it is reached
    def tracer(model, x):
        first = debug.trace_overflow(model, x).first_nonfinite()
        return None if first is None else first.label

    assert "write the hook yourself" in debug.check_nonfinite_hook(tracer).message
    assert "not a module name" in debug.check_nonfinite_hook(lambda m, x: (m(x), "nope")[1]).message


def _keeping(per_name):
    """An answer that keeps one verdict per module name: ``per_name(verdicts, name, bad)`` stores it (the first
    call's, or the last call's), and the first name whose verdict is bad is returned, in the order names came."""

    def answer(model, x):
        verdicts = {}

        def hook(m, args, out, name):
            per_name(verdicts, name, not all(torch.isfinite(t).all() for t in _tensors(out)))

        handles = [m.register_forward_hook(lambda m, a, o, n=n: hook(m, a, o, n)) for n, m in model.named_modules()]
        try:
            model(x)
        finally:
            for h in handles:
                h.remove()
        return next((n for n, bad in verdicts.items() if bad), None)

    return answer


def test_a_hook_that_keeps_one_call_per_module_is_refused():
    """A layer called twice in one forward pass: keeping only its first call misses an inf on the second, keeping
    only its last call misses an inf on the first."""
    first_call = _keeping(lambda v, n, bad: v.setdefault(n, bad))
    last_call = _keeping(lambda v, n, bad: v.__setitem__(n, bad))
    for answer, case in ((first_call, "finite the first time"), (last_call, "inf the first time only")):
        r = debug.check_nonfinite_hook(answer)
        assert_not_yet(r)
        assert case in r.message and "its hook fires at every call" in r.message, r.message
        assert not reveals(r.message, "rnn.fc") and not reveals(r.message, "retry.fc")


def test_a_hook_that_cannot_read_bf16_or_an_empty_output_is_refused():
    import numpy as np

    # numpy has no bf16: a fine answer on fp32 and fp16 outputs fails on a bf16 model
    numpy_answer = _hooked(lambda out: any(not np.isfinite(t.detach().numpy()).all() for t in _tensors(out)))
    r = debug.check_nonfinite_hook(numpy_answer)
    assert_not_yet(r)
    assert "bf16 model" in r.message and "not with numpy" in r.message
    # .max() of an empty output raises; torch.isfinite(t).all() is True for it
    max_answer = _hooked(lambda out: any(not torch.isfinite(t.abs().max()) for t in _tensors(out)))
    r = debug.check_nonfinite_hook(max_answer)
    assert_not_yet(r)
    assert "empty batch" in r.message and "torch.isfinite(t).all() is True" in r.message
    # a threshold at fp16's largest value flags finite outputs
    threshold = _hooked(lambda out: any(bool((t.float().abs() > 65504).any() | t.isnan().any()) for t in _tensors(out)))
    assert_not_yet(debug.check_nonfinite_hook(threshold))
