"""Tests of amp_lessons.compiled._checks: right answers pass, wrong ones fail with a hint, junk never raises."""

import pytest
import torch
import torch._inductor.config as inductor_config
import torch.nn.functional as F

from amp_lessons import compiled
from amp_lessons.compiled import _checks as checks
from amp_lessons.compiled.key_code import chain
from tests.test_checks import assert_not_yet, solution

needs_inductor = pytest.mark.skipif(not compiled.inductor_status()[0], reason="no C++ compiler for Inductor")


def by_hand(h, g, emulate, roundings=("silu", "mul")):  # the kernel in fp32; `roundings`: where emulation rounds
    h, g = h.float(), g.float()
    s = F.silu(g)
    s = s.bfloat16().float() if emulate and "silu" in roundings else s
    y = s * h
    y = y.bfloat16().float() if emulate and "mul" in roundings else y
    return F.rms_norm(y, (y.shape[-1],)).bfloat16()


def test_fused_chain_refuses_eager_bf16_math_and_fp64_before_compiling():
    r = compiled.check_fused_chain(lambda h, g, emulate: chain(h, g))  # the starter: eager mode's chain
    assert not r and r.todo and "eager mode's chain" in r.message and "silu" in r.message
    r = compiled.check_fused_chain(lambda h, g, emulate: chain(h, g.float()).bfloat16())  # mul still reads bf16 h
    assert_not_yet(r)
    assert "ran on bf16 tensors" in r.message
    r = compiled.check_fused_chain(lambda h, g, emulate: chain(h.double(), g.double()).bfloat16())
    assert_not_yet(r)
    assert "float64" in r.message


@needs_inductor
def test_fused_chain_is_compared_bit_for_bit_with_the_kernel():
    right = compiled.check_fused_chain(by_hand)
    assert right, right.message
    assert "once by default and 3 times with emulate=True" in right.message
    # one rounding at the end in both cases: right by default, wrong where the kernel emulates eager
    r = compiled.check_fused_chain(lambda h, g, emulate: by_hand(h, g, False))
    assert_not_yet(r)
    assert "with emulate=True" in r.message and "rounds to bf16 once" in r.message
    for half in (("silu",), ("mul",)):  # one of the two roundings of the emulated kernel is missing
        r = compiled.check_fused_chain(lambda h, g, emulate, half=half: by_hand(h, g, emulate, half))
        assert_not_yet(r)
        assert "with emulate=True" in r.message and "twice" in r.message
    r = compiled.check_fused_chain(lambda h, g, emulate: by_hand(h, g, True))  # eager's roundings by default
    assert_not_yet(r)
    assert "with emulate=False" in r.message and "3 times" in r.message


@needs_inductor
def test_the_kernel_outputs_the_checker_compares_with():
    for *_, eager, plain, emulated in checks._kernel_outputs(0):
        assert (plain != eager).float().mean() > 0.1  # one rounding: differs from eager in many elements
        # torch 2.11's CPU Inductor: the setting changes nothing for the chain (measured)
        assert torch.equal(emulated, eager if checks._emulates(checks._kernel_outputs(0)) else plain)
    release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if release >= (2, 13):  # measured with torch 2.13 and 2.15
        assert checks._emulates(checks._kernel_outputs(0))
    elif release <= (2, 11):
        assert not checks._emulates(checks._kernel_outputs(0))


# The exercises as lesson 11 gives them: a wrong answer gets "Not yet" with its own hint; the two cells swapped
# fail; no message prints a tensor (the starter's Your turn and the solution's Correct: tests/test_checker_contract.py).


def test_fused_chain_exercise():
    def fused_chain(h, g, emulate):  # lesson 11's starter
        return chain(h, g)

    starter = compiled.check_fused_chain(fused_chain)
    assert "tensor(" not in starter.message
    for answer, words in (
        (lambda h, g, emulate: (by_hand(h, g, emulate).float() * 1.01).bfloat16(), ""),
        (lambda h, g, emulate: by_hand(h, g, emulate).float(), "the kernel stores bf16"),  # fp32 out: not rounded
        (lambda h, g, emulate: h[:1], "h and g have shape (16, 64)"),
        (solution("11").compile_matching_eager, ""),  # the other exercise's answer
    ):
        r = compiled.check_fused_chain(answer)
        assert_not_yet(r)
        assert words in r.message and "tensor(" not in r.message, r.message


@needs_inductor
def test_compile_matching_eager_exercise():
    def compile_matching_eager(fn):  # lesson 11's starter
        return torch.compile(fn)

    starter = compiled.check_compile_matching_eager(compile_matching_eager)
    assert starter.todo and "default numerics" in starter.message
    for answer in (solution("11").compile_matching_eager, solution("11").compile_matching_eager_patched):
        right = compiled.check_compile_matching_eager(answer)
        assert right, right.message
        assert "twice" in right.message  # the call of another rank compiled again, with the setting on
        assert ("ignores the setting" in right.message) == (not checks._emulates(checks._kernel_outputs(0)))
    swapped = compiled.check_compile_matching_eager(solution("11").fused_chain)
    assert_not_yet(swapped)
    assert inductor_config.emulate_precision_casts is False


@needs_inductor
def test_compile_matching_eager_reads_the_setting_without_guarding_on_it():
    def options(fn):  # the setting for fn's compiles alone: Dynamo traced fn before Inductor applied it
        return torch.compile(fn, options={"emulate_precision_casts": True})

    with checks._inductor_compiles() as seen:
        compiled_chain = options(checks._fresh(chain))
        h, g = compiled.make_inputs("chain", rows=4, width=8)
        with torch.no_grad():
            compiled_chain(h, g)
            with inductor_config.patch(emulate_precision_casts=True):  # a change of the setting: no new compile
                compiled_chain(h, g)
    assert seen == [True]


@needs_inductor
def test_compile_matching_eager_names_each_mistake():
    def lazy(fn):  # the setting is gone by the time Inductor compiles (at the first call)
        with inductor_config.patch(emulate_precision_casts=True):
            return torch.compile(fn)

    def first_call_only(fn):  # the call of another rank compiles again, without the setting
        compiled_fn, calls = torch.compile(fn), []

        def run(*args):
            calls.append(1)
            if len(calls) == 1:
                with inductor_config.patch(emulate_precision_casts=True):
                    return compiled_fn(*args)
            return compiled_fn(*args)

        return run

    def left_on(fn):  # right numbers, but the whole process keeps the setting
        inductor_config.emulate_precision_casts = True
        return torch.compile(fn)

    for answer, words in (
        (lazy, "compiles at the first call"),
        (first_call_only, "once with emulate_precision_casts off"),
        (left_on, "stays on for every later compile"),
        (lambda fn: fn, "never reached Inductor"),
        (lambda fn: torch.compile(fn, backend="eager"), "never reached Inductor"),
        (lambda fn: 3, "must return a function"),
    ):
        r = compiled.check_compile_matching_eager(answer)
        assert_not_yet(r)
        assert words in r.message, (answer, r.message)
        assert inductor_config.emulate_precision_casts is False  # the checker restores what an answer changed


def test_fused_chain_refuses_compiling_it():
    """The exercise asks for the kernel's arithmetic written eagerly: an answer that compiles the chain (torch.compile,
    or the lesson's own compile_workload) is refused before anything is compared, with or without a C++ compiler."""
    for answer in (
        lambda h, g, emulate: torch.compile(chain, options={"emulate_precision_casts": emulate})(h, g),
        lambda h, g, emulate: compiled.compile_workload("chain", (h, g), emulate_precision_casts=emulate).output,
    ):
        r = compiled.check_fused_chain(answer)
        assert_not_yet(r)
        assert "it compiles" in r.message and "eager PyTorch" in r.message, r.message


@needs_inductor
def test_fused_chain_tries_the_rows_where_the_eps_decides():
    """The second input pair has rows where silu(g) * h is tiny (g = -20 and -100), a row of zeros and large
    values. An rms_norm written with another eps (1e-6, or bf16's, the dtype eager mode hands it) is refused there,
    with the eps named; the instructors' arithmetic matches the kernel on those rows bit for bit."""
    h, g = checks._with_extremes(*compiled.make_inputs("chain", 1, rows=16, width=37))
    assert (F.silu(g[:2].float()) * h[:2].float()).pow(2).mean() < 1e-14  # far below fp32's eps, 1.2e-7
    assert not h[2].any()

    def rms_norm_with(eps):
        def answer(h, g, emulate):
            h, g = h.float(), g.float()
            s = F.silu(g)
            s = s.bfloat16().float() if emulate else s
            y = s * h
            y = y.bfloat16().float() if emulate else y
            return (y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps)).bfloat16()

        return answer

    right = compiled.check_fused_chain(rms_norm_with(torch.finfo(torch.float32).eps))
    assert right, right.message
    for eps in (1e-6, torch.finfo(torch.bfloat16).eps):
        r = compiled.check_fused_chain(rms_norm_with(eps))
        assert_not_yet(r)
        assert "eps" in r.message and "\n- " in r.message, r.message
