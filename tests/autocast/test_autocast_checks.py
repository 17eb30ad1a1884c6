"""Tests of amp_lessons.autocast._checks, on lesson 04's exercises: each wrong answer gets "Not yet" with its own
hint, and no message of a starter or a wrong answer states the answer (the starter's Your turn and the solution's
Correct are tests/test_checker_contract.py's)."""

import contextlib

import pytest
import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from amp_lessons import autocast
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution

STARTER = dict.fromkeys(solution("04").DTYPE_PREDICTIONS, "...")


def _truth(expr: str) -> str:
    """The dtype of one of the exercise's expressions, traced here under autocast."""
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    fns = {  # written out here again, independently of the checker's table
        "cpu: cumsum(a @ b, 0)": ("cpu", lambda a, b, h: torch.cumsum(a @ b, 0)),
        "cuda: norm(h)": ("cuda", lambda a, b, h: torch.norm(h)),
        "cpu: a @ b + a": ("cpu", lambda a, b, h: a @ b + a),
    }
    device_type, fn = fns[expr]
    return str(autocast.trace(fn, a, b, h, device_type=device_type).output.dtype)


def test_the_predictions_hold_on_the_policies():
    """The answers, from the policies: CPU cumsum/add/addcmul/embedding_bag on no list (type promotion), CUDA
    cumsum fp32_set_opt_dtype, norm fp32_append_dtype, gelu on no list (the fp16 of the mm), and bmm's fp64 input
    left alone while its fp32 input is cast to bf16: a mixed-dtype bmm, refused."""
    s = solution("04")
    assert autocast.policy_of("cumsum", "cpu") is None and autocast.policy_of("cumsum", "cuda") == "fp32_set_opt_dtype"
    assert autocast.policy_of("norm", "cuda") == "fp32_append_dtype" and autocast.policy_of("gelu", "cuda") is None
    assert autocast.policy_of("embedding_bag", "cpu") is None and autocast.policy_of("bmm", "cpu") == "lower_precision"
    assert s.DTYPE_PREDICTIONS["cpu: bmm(a[None].double(), b[None])"] == "error"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        try:
            torch.bmm(torch.ones(1, 2, 2, dtype=torch.float64), torch.ones(1, 2, 2))
            raised = False
        except RuntimeError:
            raised = True
    assert raised


def test_dtype_predictions_exercise():
    s = solution("04")
    starter = autocast.check_dtype_predictions(STARTER)
    assert "8 of 8 still to predict" in starter.message
    # half done, all right so far: still the learner's turn
    half = dict(STARTER, **{k: s.DTYPE_PREDICTIONS[k] for k in list(STARTER)[:4]})
    assert_your_turn(autocast.check_dtype_predictions(half))
    for expr in ("cpu: cumsum(a @ b, 0)", "cuda: norm(h)", "cpu: a @ b + a"):
        truth = _truth(expr)
        assert s.DTYPE_PREDICTIONS[expr] == truth
        guess = "torch.float16" if truth != "torch.float16" else "torch.float32"
        r = autocast.check_dtype_predictions(dict(STARTER, **{expr: guess}))
        assert_not_yet(r)
        assert f"{expr}: not {guess}" in r.message and "policy_of" in r.message
        for message in (r.message, starter.message):
            assert not reveals(message, truth) and not reveals(message, truth.removeprefix("torch.")), message


def test_bce_fix_exercise():
    g = torch.Generator().manual_seed(1)  # the checker's inputs
    logits, target = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    want = F.binary_cross_entropy(torch.sigmoid(logits), target).item()
    starter = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y))
    assert "refuses" in starter.message and "unsafe to autocast" in starter.message
    # an edited answer still refused gets a hint, not the starter's "your turn"
    edited = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z).clamp(1e-6, 1 - 1e-6), y))
    assert_not_yet(edited)
    assert "the op itself" in edited.message and "softplus" in edited.message
    assert autocast.check_bce_fix(lambda z, y: (F.softplus(-z) * y + F.softplus(z) * (1 - y)).mean())
    assert "with_logits" not in starter.message and "logits" not in starter.message
    wrong = [
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum")),
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y).half()),
        autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y).item()),
    ]
    for r in wrong:
        assert_not_yet(r)
    assert "your loss is" in wrong[0].message
    for r in [starter, *wrong]:
        assert not reveals(r.message, want), r.message


def _probability_bce(z, y):
    p = torch.sigmoid(z)
    return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()


def test_bce_fix_refuses_a_loss_of_probabilities_that_the_tails_break():
    """The hand-written loss of probabilities runs under the CUDA policy in fp32 and is right on moderate logits, but
    it is inf where a sigmoid rounds to 1: fp32 at z = 20, fp16 at z = 10 (checked here, independently of the
    checker); so is F.binary_cross_entropy on .float() inputs in a disabled region, capped at 100 per element."""
    z, y = torch.randn(16) * 3, torch.rand(16)
    assert torch.isfinite(_probability_bce(z, y))
    assert _probability_bce(torch.tensor([20.0]), torch.tensor([0.0])).isinf()
    assert _probability_bce(torch.tensor([10.0]).half(), torch.tensor([0.0]).half()).isinf()
    assert F.binary_cross_entropy_with_logits(torch.tensor([20.0]), torch.tensor([0.0])).item() == 20.0
    r = autocast.check_bce_fix(_probability_bce)
    assert_not_yet(r)
    assert "inf" in r.message and "softplus" in r.message, r.message

    def disabled_region(z, y):
        with torch.autocast("cuda", enabled=False):
            return F.binary_cross_entropy(torch.sigmoid(z.float()), y.float())

    r = autocast.check_bce_fix(disabled_region)
    assert_not_yet(r)
    assert "+-30" in r.message and "from the logits" in r.message, r.message
    # a logits form written out by hand passes, fp16 included
    assert autocast.check_bce_fix(lambda z, y: (F.softplus(-z) * y + F.softplus(z) * (1 - y)).mean())


def test_dtype_predictions_list_one_wrong_prediction_per_line():
    s = solution("04")
    wrong = {k: "torch.float16" for k in STARTER}  # seven of the eight are wrong
    r = autocast.check_dtype_predictions(wrong)
    assert_not_yet(r)
    lines = r.message.split("\n")
    assert len(lines) == 1 + sum(wrong[k] != s.DTYPE_PREDICTIONS[k] for k in STARTER), lines
    assert lines[0] == "7 of 8 predictions are wrong:", lines[0]
    assert all(line.startswith("- ") and len(line) < 160 for line in lines[1:]), lines
    assert "fp64" in lines[-1] and all("fp64" not in line for line in lines[:-1])  # the hint where it applies


def _counter(condition, *, reset: bool = True):
    """count_casts(work, *args) built on a TorchDispatchMode that counts the ops for which condition(func, args, out)."""
    total = [0]

    class Counter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            total[0] += bool(condition(func, args, out))
            return out

    def count_casts(work, *args):
        if reset:
            total[0] = 0
        with Counter():
            work(*args)
        return total[0]

    return count_casts


_HALF = (torch.float16, torch.bfloat16)


def _first(args):
    """The dtype of the first tensor among an op's arguments (None where there is none: torch.full, torch.arange)."""
    return next((x.dtype for x in args if isinstance(x, torch.Tensor)), None)


def _is_copy(func):
    return func is torch.ops.aten._to_copy.default


@pytest.mark.parametrize(
    "condition, says",
    [
        (lambda f, a, o: _is_copy(f), "a cast up to fp32"),  # every _to_copy, upcasts included
        (lambda f, a, o: _is_copy(f) and o.dtype == torch.bfloat16 and a[0].dtype != o.dtype, "fp16 is"),
        (lambda f, a, o: _is_copy(f) and o.dtype.itemsize == 2 and a[0].dtype != o.dtype, "int16"),
        (lambda f, a, o: _is_copy(f) and o.dtype in _HALF, "keeps its dtype"),  # a bf16 -> bf16 copy counted
        # casts from fp32 only: misses fp64 -> bf16, int64 -> fp16 and fp16 -> bf16
        (lambda f, a, o: _is_copy(f) and o.dtype in _HALF and a[0].dtype == torch.float32, "from any other dtype"),
        # any op whose output is 16-bit and whose first input is not: counts torch.where(mask, h, h) and
        # zeros_like(x, dtype=fp16), which cast nothing
        (
            lambda f, a, o: isinstance(o, torch.Tensor) and o.dtype in _HALF and _first(a) != o.dtype,
            "not a cast unless",
        ),
        # the cached cast counted at every use: each addmm as three casts (its input, weight and bias)
        (lambda f, a, o: 3 * (f is torch.ops.aten.addmm.default), "cached"),
    ],
)
def test_cast_counter_refuses_naive_counters(condition, says):
    r = autocast.check_cast_counter(_counter(condition))
    assert_not_yet(r)
    assert says in r.message, r.message


def test_cast_counter_refuses_a_count_that_carries_over_and_the_course_tracer():
    right = lambda f, a, o: _is_copy(f) and o.dtype in _HALF and a[0].dtype != o.dtype  # noqa: E731
    assert autocast.check_cast_counter(_counter(right))
    r = autocast.check_cast_counter(_counter(right, reset=False))
    assert_not_yet(r)
    assert "start each count from zero" in r.message
    r = autocast.check_cast_counter(lambda work, *args: len(autocast.trace(work, *args).casts))
    assert_not_yet(r)
    assert "course's own tools" in r.message and "TorchDispatchMode yourself" in r.message
    r = autocast.check_cast_counter(lambda work, *args: 5)  # no mode at all
    assert_not_yet(r)
    assert "no TorchDispatchMode" in r.message
    assert_your_turn(autocast.check_cast_counter(_counter(lambda f, a, o: False)))


def test_the_cast_counts_the_lesson_shows():
    """The solution's counter on the lesson's cases: a weight used three times in one region is cast once (3 inputs
    + weight + bias = 5), in three regions three times (9); one region around two SGD steps casts the weights once
    (2 + 2 inputs = 4), one region per step twice (6); and the stale cast: both steps' outputs equal bit for bit."""
    count = solution("04").count_casts
    lin, x = torch.nn.Linear(16, 16), torch.randn(4, 16)

    def calls(regions):
        for _ in range(regions):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                for _ in range(3 // regions):
                    lin(x)

    assert count(calls, 1) == 5 and count(calls, 3) == 9
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


def test_cast_counter_refuses_a_count_once_per_tensor_and_one_that_misses_the_cast_op():
    """Two more naive counters: one that counts each source tensor once (as if the cache lasted across regions and
    steps), and one that looks for aten.to, which never reaches a dispatch mode (x.to(dtype) arrives as _to_copy)."""
    sources = set()

    def once_per_tensor(f, a, o):
        if _is_copy(f) and o.dtype in _HALF and a[0].dtype != o.dtype and id(a[0]) not in sources:
            sources.add(id(a[0]))
            return True
        return False

    def count_once_per_tensor(work, *args):
        sources.clear()
        return _counter(once_per_tensor)(work, *args)

    r = autocast.check_cast_counter(count_once_per_tensor)
    assert_not_yet(r)
    assert "too few" in r.message and r.message.count("\n- ") >= 1, r.message
    r = autocast.check_cast_counter(_counter(lambda f, a, o: f.overloadpacket is torch.ops.aten.to))
    assert not r.ok and "counts no casts yet" in r.message and "trace tables" in r.message, r.message


def test_cast_counter_refuses_the_course_tools_called_beside_a_right_count():
    """A right count that also calls the course's own tracer or profiler is refused: the checker sees the call,
    however the function was reached."""
    right = _counter(lambda f, a, o: _is_copy(f) and o.dtype in _HALF and a[0].dtype != o.dtype)
    from amp_lessons.autocast import _experiments

    for peek in (autocast.trace, _experiments.profile_tree):

        def count(work, *args, _peek=peek):
            _peek(lambda: None)
            return right(work, *args)

        r = autocast.check_cast_counter(count)
        assert_not_yet(r)
        assert "course's own tools" in r.message and f"autocast.{peek.__name__}" in r.message, r.message
