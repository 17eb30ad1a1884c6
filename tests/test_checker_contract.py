"""The contract every exercise checker of every lesson keeps (amp_lessons._exercise), one row per checker:

- the exercise's starter, untouched, gets "Your turn" (a muted line, not a red one);
- a function answer that raises gets "Not yet" naming the exception's type and message, never a traceback;
- a wrong answer gets "Not yet", and its message does not state the expected answer (a value in any usual spelling;
  for a function, no line of the instructors' code);
- the instructors' solution (instructors/solutions_NN.py) gets "Correct".

The checkers are found from the registry (the ``__all__`` of each topic's ``checks`` module), so a new checker
without a row fails here.
Tests of each checker's own mistakes and hints stay with its topic (tests/<topic>/test_<topic>_checks.py)."""

from __future__ import annotations

import functools
import importlib
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from amp_lessons import _exercise, checks
from amp_lessons.course import LESSONS, TOPICS
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

LESSON_OF = {lesson.topic: lesson.number for lesson in LESSONS if lesson.topic}
# every public name of a topic's checks module is a checker (tested below)
CHECKERS = sorted(
    f"{topic}.{name}" for topic in TOPICS for name in importlib.import_module(f"amp_lessons.{topic}.checks").__all__
)


@dataclass(frozen=True)
class Row:
    """One checker's exercise: ``answer`` reads the solution module's answer; ``starter`` is the notebook's
    starter, or a tuple of the starters a learner may leave; ``wrong`` a wrong answer, or a tuple of them;
    ``params`` gives the exercise's own arguments after the answer (positional, keyword); ``hidden`` is what no
    message of a starter or a wrong answer may state (default: the solution's answer if it is a value)."""

    answer: Callable
    starter: object
    wrong: object
    params: Callable = lambda: ((), {})
    hidden: tuple = ()
    needs: Callable | None = field(default=None)  # a reason to skip, or None
    starter_lists_all: bool = False  # the starter's message lists every choice, the answer among the rest


@functools.cache
def _s(lesson: str):
    return solution(lesson)


def _raises(*args, **kwargs):
    raise ZeroDivisionError("the contract's failing answer")


# ---- the lessons' starters, as their notebooks give them (tests/test_exercise_outputs.py runs the cells) ----


def _bce_starter(z, y):
    return F.binary_cross_entropy(torch.sigmoid(z), y)


def _clipped_starter(model, optimizer, scaler, x, y):
    loss = nn.functional.mse_loss(model(x).float(), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()


def _accumulation_starter(model, optimizer, scaler, micro_batches):
    for x, y in micro_batches:
        loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def _fsdp_starter(rank, world_size, batches):
    from amp_lessons.distributed.key_code import tiny_mlp

    model = tiny_mlp()
    model(batches[rank]).float().square().mean()
    return ...


def _tf32_model(rounding):
    from amp_lessons.formats import quantize

    return lambda a, b: quantize(a, "tf32", rounding) @ quantize(b, "tf32", rounding)


def _fp8_unscaled(x, w, b):
    from amp_lessons.fp8 import fake_quantize

    return fake_quantize(x, "fp8_e4m3") @ fake_quantize(w, "fp8_e4m3").t() + b


def _keep_whole_model_fp32(model):
    from amp_lessons.debug import KeepFP32

    return KeepFP32(model)


def _no_inductor():
    from amp_lessons.compiled import inductor_status

    ok, why = inductor_status()
    return None if ok else why


def _small_census():
    from amp_lessons.scaling import small_loss_census

    return (small_loss_census(),), {}


def _scale_prediction_params():
    e = dict(solution("05").SCALE_PREDICTION_EXERCISE)
    return (e.pop("n_steps"), e.pop("inf_steps")), e


_DTYPES = solution("04").DTYPE_PREDICTIONS
_CUMSUM = "cuda: cumsum(a @ b, 0)"

ROWS: dict[str, Row] = {
    # lesson 01
    "bits.check_max_finite": Row(
        lambda s: s.max_finite,
        (lambda exponent_bits, mantissa_bits: ..., lambda exponent_bits, mantissa_bits: None),
        (
            lambda e, m: _s("01").max_finite(e, m) * 2,
            lambda e, m: (2 - 2.0**-m) * 2.0 ** (2 ** (e - 1)),
            lambda e, m: 2.0 ** (2 ** (e - 1)),
            lambda e, m: 1.0,
        ),
        hidden=(65504.0,),  # fp16's max, the first format tried
    ),
    "bits.check_ulp": Row(
        lambda s: s.ulp_bf16,
        lambda x: None,
        (lambda x: _s("01").ulp_bf16(x) * 2, lambda x: 2.0 ** (math.floor(math.log2(x)) - 7), lambda x: x / 2**8),
        lambda: (("bf16",), {}),
        hidden=(2.0**-7,),  # ulp(1.0), the first value tried
    ),
    "bits.check_decode_bits": Row(
        lambda s: s.DECODED_E4M3, (..., None, "..."), (5.5, -2.75, 3.0), lambda: ((0b0_1000_011, "fp8_e4m3"), {})
    ),
    # its starter lists every format, the answer among them: the messages of wrong answers are read
    "bits.check_format_choice": Row(
        lambda s: s.FORMAT_CHOICE_A, ..., "fp16", lambda: ((1e-6, 1e6, 0.01), {}), starter_lists_all=True
    ),
    # lesson 02
    "tf32.check_tf32_matmul": Row(
        lambda s: s.tf32_matmul,
        lambda a, b: a @ b,
        (
            _tf32_model("toward_zero"),
            _tf32_model("nearest_away"),
            lambda a, b: _tf32_model("nearest_even")(a, b).double(),
            lambda a, b: a,
        ),
    ),
    "tf32.check_error_ratio": Row(
        lambda s: s.ERROR_RATIO, ..., (2.0**5, 2.0, -1.0, "x"), lambda: (("bf16", "tf32"), {})
    ),
    # lesson 03
    "fp16.check_stall_value": Row(
        lambda s: s.STALL_VALUE, ..., (4096.0, 1024.0, 2047.0, "x"), lambda: ((1.0, "fp16"), {})
    ),
    "fp16.check_lost_update": Row(
        lambda s: s.smallest_update,
        (lambda w: ..., lambda w: None),
        (
            lambda w: _s("03").smallest_update(w) * 2,  # the whole gap
            lambda w: _s("03").smallest_update(w) / 4,
            lambda w: 1e-3,
            lambda w: -1.0,
            lambda w: "x",
        ),
        lambda: (("fp16",), {}),
        hidden=(2.0**-11,),  # half the gap at 1.5, the first weight tried
    ),
    # lesson 04
    "autocast.check_dtype_predictions": Row(
        lambda s: s.DTYPE_PREDICTIONS,
        dict.fromkeys(_DTYPES, "..."),
        dict(_DTYPES, **{_CUMSUM: "torch.float16"}),
        hidden=(_DTYPES[_CUMSUM].removeprefix("torch."),),
    ),
    "autocast.check_bce_fix": Row(
        lambda s: s.bce_fix, _bce_starter, lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum")
    ),
    # lesson 05
    "scaling.check_smallest_scale": Row(
        lambda s: s.SMALLEST_SCALE_SMALL_LOSS, ..., (2.0**12, 2.0**10, 3 * 2.0**11, 2.0**40), _small_census
    ),
    "scaling.check_scale_prediction": Row(
        lambda s: s.SCALE_PREDICTION, ..., (2.0**12, 2.0**9, "x"), _scale_prediction_params
    ),
    "scaling.check_scaler_update": Row(
        lambda s: s.scaler_update,
        lambda scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval: (
            scale,
            growth_tracker,
        ),
        lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0),
    ),
    # lesson 06
    "e2e.check_clipped_amp_step": Row(lambda s: s.clipped_amp_step, _clipped_starter, lambda *a: None),
    "e2e.check_accumulated_amp_step": Row(lambda s: s.accumulated_amp_step, _accumulation_starter, lambda *a: None),
    # lesson 07
    "fp8.check_amax_scale": Row(
        lambda s: s.amax_scale,
        lambda x, fmt_max: 1.0,
        lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0,
    ),
    "fp8.check_fp8_format_choice": Row(
        lambda s: s.FP8_FORMAT_CHOICE,
        {"weights": ..., "activations": ..., "gradients": ...},
        {"weights": "e4m3", "activations": "e4m3", "gradients": "e4m3"},
        hidden=("e5m2",),
        starter_lists_all=True,
    ),
    "fp8.check_fp8_linear_forward": Row(lambda s: s.fp8_linear_forward, lambda x, w, b: x @ w.t() + b, _fp8_unscaled),
    # lesson 08
    "debug.check_first_bad_layer": Row(lambda s: s.FIRST_BAD_LAYER, ..., "block4"),
    "debug.check_fp16_fix": Row(lambda s: s.fix, lambda model: model, _keep_whole_model_fp32),
    # lesson 09
    "distributed.check_fsdp_fp16_step": Row(
        lambda s: s.fsdp_fp16_step, _fsdp_starter, lambda rank, world_size, batches: (None, None)
    ),
    "distributed.check_ring_sum_bf16": Row(
        lambda s: s.ring_sum_bf16, lambda grads: grads.sum(0), lambda g: g.sum(0).bfloat16().float()
    ),
    # lesson 10
    "micro.check_rceil_shared_exponent": Row(
        lambda s: s.rceil_shared_exponent,
        lambda amax, element_format="fp8_e4m3": None,
        lambda a, f="fp8_e4m3": solution("10").rceil_shared_exponent(a, f) + 1,
    ),
    "micro.check_stochastic_round": Row(
        lambda s: s.my_stochastic_round,
        lambda x, noise: x.view(torch.int32).view(torch.float32),
        lambda x, noise: x.bfloat16().float(),
    ),
    # lesson 11
    "compiled.check_fused_chain": Row(
        lambda s: s.fused_chain,
        lambda h, g: F.rms_norm(F.silu(g) * h, (h.shape[-1],)),
        lambda h, g: h,
    ),
    "compiled.check_compile_matching_eager": Row(
        lambda s: s.compile_matching_eager, lambda fn: torch.compile(fn), lambda fn: fn, needs=_no_inductor
    ),
}


def test_every_checker_has_a_row_and_every_row_a_checker():
    assert len(CHECKERS) >= 26, CHECKERS
    assert sorted(ROWS) == CHECKERS, f"no row: {sorted(set(CHECKERS) - set(ROWS))}; stale: {set(ROWS) - set(CHECKERS)}"


@pytest.mark.parametrize("name", CHECKERS)
def test_every_checker_is_an_exercise(name):
    topic, check = name.split(".")
    fn = getattr(importlib.import_module(f"amp_lessons.{topic}"), check)  # the topic exports it
    assert check.startswith("check_") and fn is getattr(importlib.import_module(f"amp_lessons.{topic}.checks"), check)
    assert _exercise.is_exercise(fn), f"{name} is not made with amp_lessons._exercise.exercise"


def _setup(name):
    topic, check = name.split(".")
    row = ROWS.get(name)
    if row is None:
        pytest.fail(f"{name} has no row in ROWS")
    if row.needs is not None and (why := row.needs()):
        pytest.skip(why)
    s = solution(LESSON_OF[topic])
    args, kwargs = row.params()
    checker = getattr(importlib.import_module(f"amp_lessons.{topic}"), check)
    return row, row.answer(s), (lambda answer: checker(answer, *args, **kwargs))


def _code_lines(fn) -> list[str]:
    """The instructors' function's lines of code that say something: not its def, comments, nor a line as short
    as a call the exercise names (``scaler.update()``)."""
    lines = [ln.strip() for ln in inspect.getsource(fn).splitlines()[1:]]
    return [ln for ln in lines if len(ln) >= 20 and not ln.startswith(("#", '"""', "return ...", "def "))]


def _each(answers) -> tuple:
    return answers if isinstance(answers, tuple) else (answers,)


def _hidden(row, answer) -> tuple:
    return row.hidden or (() if callable(answer) else (answer,))


@pytest.mark.parametrize("name", CHECKERS)
def test_the_starter_gets_your_turn(name):
    row, answer, check = _setup(name)
    for starter in _each(row.starter):
        r = check(starter)
        assert_your_turn(r)
        for value in () if row.starter_lists_all else _hidden(row, answer):
            assert not reveals(r.message, value), (r.message, value)


@pytest.mark.parametrize("name", CHECKERS)
def test_a_function_that_raises_gets_not_yet_naming_the_exception(name):
    _, answer, check = _setup(name)
    if not callable(answer):
        pytest.skip("the answer is a value, not a function")
    r = check(_raises)
    assert_not_yet(r)
    assert "ZeroDivisionError" in r.message and "the contract's failing answer" in r.message, r.message
    assert "Traceback" not in r.message and 'File "' not in r.message, r.message


@pytest.mark.parametrize("name", CHECKERS)
def test_a_wrong_answer_fails_without_the_answer(name):
    row, answer, check = _setup(name)
    for wrong in _each(row.wrong):
        r = check(wrong)
        assert_not_yet(r)
        for value in _hidden(row, answer):
            assert not reveals(r.message, value), (r.message, value)
        if callable(answer):
            for line in _code_lines(answer):
                assert line not in r.message, (r.message, line)


@pytest.mark.parametrize("name", CHECKERS)
def test_the_instructors_solution_is_correct(name):
    _, answer, check = _setup(name)
    r = check(answer)
    assert isinstance(r, checks.CheckResult) and r.ok and not r.todo, r
    assert repr(r).startswith("Correct: ")
