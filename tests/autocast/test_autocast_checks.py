"""Tests of amp_lessons.autocast._checks, on lesson 04's exercises: each wrong answer gets "Not yet" with its own
hint, and no message of a starter or a wrong answer states the answer (the starter's Your turn and the solution's
Correct are tests/test_checker_contract.py's)."""

import contextlib

import pytest
import torch
import torch.nn.functional as F

from amp_lessons import autocast
from amp_lessons.autocast import _experiments
from tests.autocast.contract import _counting
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

STARTER = dict.fromkeys(solution("04").DTYPE_PREDICTIONS, "...")


def test_dtype_predictions_count_what_is_left_and_list_one_wrong_prediction_per_line():
    s = solution("04")
    assert "8 of 8 still to predict" in autocast.check_dtype_predictions(STARTER).message
    half = dict(STARTER, **{k: s.DTYPE_PREDICTIONS[k] for k in list(STARTER)[:4]})
    assert_your_turn(autocast.check_dtype_predictions(half))  # half done, all right so far
    wrong = {k: "torch.float16" for k in STARTER}  # seven of the eight are wrong
    r = autocast.check_dtype_predictions(wrong)
    assert_not_yet(r)
    lines = r.message.split("\n")
    assert len(lines) == 1 + sum(wrong[k] != s.DTYPE_PREDICTIONS[k] for k in STARTER), lines
    assert lines[0] == "7 of 8 predictions are wrong:", lines[0]
    assert all(line.startswith("- ") and len(line) < 160 and "policy_of" in line for line in lines[1:]), lines
    assert "fp64" in lines[-1] and all("fp64" not in line for line in lines[:-1])  # the hint where it applies
    assert not any(reveals(r.message, s.DTYPE_PREDICTIONS[k]) for k in STARTER if wrong[k] != s.DTYPE_PREDICTIONS[k])


def _probability_bce(z, y):
    p = torch.sigmoid(z)
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()


def _disabled_region(z, y):
    with torch.autocast("cuda", enabled=False):
        return F.binary_cross_entropy(torch.sigmoid(z.float()), y.float())


@pytest.mark.parametrize(
    "answer, says",
    [
        (lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y), ["refuses", "unsafe to autocast"]),  # the starter
        # an edited answer still refused gets a hint, not the starter's "your turn"
        (lambda z, y: F.binary_cross_entropy(torch.sigmoid(z).clamp(1e-6, 1 - 1e-6), y), ["the op itself", "softplus"]),
        (lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum"), ["your loss is", "same mean"]),
        (lambda z, y: F.binary_cross_entropy_with_logits(z, y).half(), ["comes out torch.float16"]),
        (lambda z, y: F.binary_cross_entropy_with_logits(z, y).item(), ["your function fails"]),
        # right under the CUDA policy on moderate logits, inf where a sigmoid rounds to 1 (fp32 at 20, fp16 at 10)
        (_probability_bce, ["inf", "softplus"]),
        # F.binary_cross_entropy on .float() inputs in a disabled region: capped at 100 per element
        (_disabled_region, ["+-30", "from the logits"]),
    ],
)
def test_bce_fix_wrong_answers(answer, says):
    g = torch.Generator().manual_seed(1)  # the checker's inputs
    want = F.binary_cross_entropy(torch.sigmoid(torch.randn(16, generator=g) * 3), torch.rand(16, generator=g))
    r = autocast.check_bce_fix(answer)
    assert not r.ok and all(s in r.message for s in says), r.message
    assert not reveals(r.message, want.item()) and "with_logits" not in r.message


def test_bce_fix_tails_and_a_hand_written_logits_form():
    """The tails the checker tries, checked here independently of it; a logits form written out by hand passes."""
    assert _probability_bce(torch.tensor([20.0]), torch.tensor([0.0])).isinf()
    assert _probability_bce(torch.tensor([10.0]).half(), torch.tensor([0.0]).half()).isinf()
    assert F.binary_cross_entropy_with_logits(torch.tensor([20.0]), torch.tensor([0.0])).item() == 20.0
    assert autocast.check_bce_fix(lambda z, y: (F.softplus(-z) * y + F.softplus(z) * (1 - y)).mean())


def _counter(condition, *, reset: bool = True):
    """count_casts(work, *args) counting the ops for which condition(func, args, out); without ``reset`` the count
    carries over from call to call."""
    count, total = _counting(condition), [0]

    def count_casts(work, *args):
        total[0] = count(work, *args) + (0 if reset else total[0])
        return total[0]

    return count_casts


_HALF = (torch.float16, torch.bfloat16)


def _first(args):
    """The dtype of the first tensor among an op's arguments (None where there is none: torch.full, torch.arange)."""
    return next((x.dtype for x in args if isinstance(x, torch.Tensor)), None)


def _is_copy(func):
    return func is torch.ops.aten._to_copy.default


def _right(f, a, o):
    return _is_copy(f) and o.dtype in _HALF and a[0].dtype != o.dtype


def _once_per_tensor():
    """Counts each source tensor once, as if the cache lasted across regions and steps."""
    sources = set()

    def count(work, *args):
        sources.clear()
        return _counter(lambda f, a, o: _right(f, a, o) and not (id(a[0]) in sources or sources.add(id(a[0]))))(
            work, *args
        )

    return count


def _beside(peek):
    """A right count that also calls one of the course's tools."""

    def count(work, *args):
        peek(lambda: None)
        return _counter(_right)(work, *args)

    return count


@pytest.mark.parametrize(
    "count, says",
    [
        (_counter(lambda f, a, o: _is_copy(f)), "a cast up to fp32"),  # every _to_copy, upcasts included
        (_counter(lambda f, a, o: _is_copy(f) and o.dtype == torch.bfloat16 and a[0].dtype != o.dtype), "fp16 is"),
        (_counter(lambda f, a, o: _is_copy(f) and o.dtype.itemsize == 2 and a[0].dtype != o.dtype), "int16"),
        (_counter(lambda f, a, o: _is_copy(f) and o.dtype in _HALF), "keeps its dtype"),  # bf16 -> bf16 counted
        # casts from fp32 only: misses fp64 -> bf16, int64 -> fp16 and fp16 -> bf16
        (_counter(lambda f, a, o: _is_copy(f) and o.dtype in _HALF and a[0].dtype == torch.float32), "any other dtype"),
        # any op whose output is 16-bit and whose first input is not: torch.where(mask, h, h), zeros_like(x, fp16)
        (_counter(lambda f, a, o: isinstance(o, torch.Tensor) and o.dtype in _HALF and _first(a) != o.dtype), "unless"),
        # the cached cast counted at every use: each addmm as three casts (its input, weight and bias)
        (_counter(lambda f, a, o: 3 * (f is torch.ops.aten.addmm.default)), "cached"),
        (_counter(_right, reset=False), "start each count from zero"),
        (_once_per_tensor(), "too few"),
        (lambda work, *args: 5, "no TorchDispatchMode"),
        (lambda work, *args: len(autocast.trace(work, *args).casts), "course's own tools"),
        # the course's tools called beside a right count are seen, however the function was reached
        (_beside(autocast.trace), "course's own tools (autocast.trace)"),
        (_beside(_experiments.profile_tree), "course's own tools (autocast.profile_tree)"),
    ],
)
def test_cast_counter_refuses_naive_counters(count, says):
    r = autocast.check_cast_counter(count)
    assert_not_yet(r)
    assert says in r.message, r.message


def test_cast_counter_your_turn_and_a_right_count():
    assert autocast.check_cast_counter(_counter(_right))
    assert_your_turn(autocast.check_cast_counter(_counter(lambda f, a, o: False)))
    # aten.to never reaches a dispatch mode (x.to(dtype) arrives as _to_copy): no casts counted yet
    r = autocast.check_cast_counter(_counter(lambda f, a, o: f.overloadpacket is torch.ops.aten.to))
    assert not r.ok and "counts no casts yet" in r.message and "trace tables" in r.message, r.message


def test_the_cast_counts_the_lesson_shows():
    """The solution's counter on the lesson's training loop: one region around two SGD steps casts the weights once
    (2 + 2 inputs = 4), one region per step twice (6); and the stale cast: both steps' outputs equal bit for bit.
    (One region around three calls: 5 casts, three regions: 9, are test_autocast_experiments' trace counts.)"""
    count = solution("04").count_casts
    lin, x = torch.nn.Linear(16, 16), torch.randn(4, 16)
    outs = {}

    def steps(one_region):
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        outs[one_region] = []
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if one_region else contextlib.nullcontext()
        with ctx:
            for _ in range(2):
                with contextlib.nullcontext() if one_region else torch.autocast("cpu", dtype=torch.bfloat16):
                    out = lin(x)
                outs[one_region].append(out.detach().clone())
                out.sum().backward()
                opt.step()
                opt.zero_grad()

    assert count(steps, True) == 4 and count(steps, False) == 6
    assert torch.equal(*outs[True]) and not torch.equal(*outs[False])
