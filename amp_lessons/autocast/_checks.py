"""Checkers for lesson 04's exercises (predicting dtypes under autocast, the binary cross-entropy fix, a cast counter
written with ``TorchDispatchMode``)."""

from __future__ import annotations

import ast
import contextlib
import inspect
import textwrap

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode, _get_current_dispatch_mode_stack

from .._exercise import attempt, calls_seen, correct, exercise, hint_list, not_yet, your_turn
from ..checks import CheckResult, is_placeholder
from ._experiments import policy_of, trace
from ._records import dtype_name

__all__ = ["check_bce_fix", "check_cast_counter", "check_dtype_predictions"]


def _dtype_exercises():
    """expression -> (device type, function of (a, b, h, i, offsets), the op to look up)."""
    return {
        "cpu: cumsum(a @ b, 0)": ("cpu", lambda a, b, h, i, o: torch.cumsum(a @ b, 0), "cumsum"),
        "cuda: cumsum(a @ b, 0)": ("cuda", lambda a, b, h, i, o: torch.cumsum(a @ b, 0), "cumsum"),
        "cuda: norm(h)": ("cuda", lambda a, b, h, i, o: torch.norm(h), "linalg_vector_norm"),  # what torch.norm runs
        "cpu: addcmul(a, h, h)": ("cpu", lambda a, b, h, i, o: torch.addcmul(a, h, h), "addcmul"),
        "cuda: gelu(a @ b)": ("cuda", lambda a, b, h, i, o: F.gelu(a @ b), "gelu"),
        "cpu: a @ b + a": ("cpu", lambda a, b, h, i, o: a @ b + a, "add"),
        "cpu: embedding_bag(i, h, offsets)": ("cpu", lambda a, b, h, i, o: F.embedding_bag(i, h, o), "embedding_bag"),
        "cpu: bmm(a[None].double(), b[None])": (
            "cpu",
            lambda a, b, h, i, o: torch.bmm(a[None].double(), b[None]),
            "bmm",
        ),
    }


def _outcome(device_type: str, fn, args) -> str:
    try:
        return dtype_name(trace(fn, *args, device_type=device_type).output.dtype)
    except RuntimeError:
        return "error"


@exercise
def check_dtype_predictions(predictions: dict) -> CheckResult:
    """Exercise: ``predictions`` maps each expression of the lesson's table to the dtype name ("torch.float32" or
    "float32") of its output under autocast (CPU bf16; CUDA fp16, previewed without a GPU), or "error"."""
    exercises = _dtype_exercises()
    if not isinstance(predictions, dict):
        return not_yet(f"predictions must be a dict {{expression: dtype name}}, got {type(predictions).__name__}")
    unknown = sorted(set(predictions) - set(exercises))
    if unknown:
        return not_yet(f"unknown expression(s) {unknown}: use the keys of the exercise's dict")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    i, offsets = torch.tensor([0, 2, 1, 3]), torch.tensor([0, 2])
    wrong, todo, malformed = [], [], []
    for expr, (device_type, fn, op_name) in exercises.items():
        guess = predictions.get(expr, "...")
        if is_placeholder(guess):
            todo.append(expr)
            continue
        name = str(guess).strip().replace("torch.", "")
        if name != "error" and not isinstance(getattr(torch, name, None), torch.dtype):
            malformed.append(f"{expr}: {guess!r} is neither a dtype name nor 'error'")
            continue
        got = _outcome(device_type, fn, (a, b, h, i, offsets))
        if name != got:
            where = "CUDA" if device_type == "cuda" else "CPU"
            policy = policy_of(op_name, device_type)
            lookup = f"autocast.policy_of({op_name!r}, {device_type!r})"
            why = f"{lookup} is {policy!r}" if policy else f"{lookup} is None: no {where} list, type promotion"
            if "double()" in expr:
                why += "; and what does autocast do to an fp64 input?"
            wrong.append(f"{expr}: not {guess} ({why})")
    if malformed:
        return not_yet('write "torch.float32", "float32" or "error":\n' + "\n".join(f"- {m}" for m in malformed))
    if wrong:
        return not_yet(
            f"{len(wrong)} of {len(exercises) - len(todo)} predictions are wrong:\n"
            + "\n".join(f"- {w}" for w in wrong)
        )
    if todo:
        return your_turn(
            f'{len(todo)} of {len(exercises)} still to predict: replace each "..." with a dtype name, '
            f'"torch.<name>", or "error", starting with {todo[0]!r}'
        )
    return correct(f"all {len(exercises)} outcomes predicted right, on the CPU and CUDA policies")


_STARTER_EXPR = "F.binary_cross_entropy(torch.sigmoid(z), y)"


def _is_starter(fn) -> bool:
    """Whether ``fn``'s only statement is the starter's ``return F.binary_cross_entropy(torch.sigmoid(z), y)``."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        # no source (code run by exec): the starter's code object calls exactly these four names, with two arguments
        code = getattr(fn, "__code__", None)
        return (
            code is not None
            and set(code.co_names) == {"F", "binary_cross_entropy", "torch", "sigmoid"}
            and code.co_argcount == 2
            and code.co_nlocals == 2
        )
    target = ast.dump(ast.parse(_STARTER_EXPR, mode="eval").body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Lambda):
            body = node.body
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(node.body) == 1:
            body = node.body[0].value if isinstance(node.body[0], ast.Return) else None
        else:
            continue
        if body is not None and ast.dump(body) == target:
            return True
    return False


def _bce_cases():
    """(what, logits, targets, relative tolerance) the loss is checked on, against the float64 loss of the logits."""
    g = torch.Generator().manual_seed(1)
    z, y = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    extremes = torch.tensor([-30.0, -20.0, -10.0, -3.0, 0.5, 10.0, 20.0, 30.0])
    y8 = torch.tensor([0.0, 1.0, 0.3, 1.0, 0.5, 0.0, 0.0, 0.7])
    z16 = torch.tensor([-12.0, -10.0, -6.0, -1.0, 0.5, 6.0, 10.0, 12.0], dtype=torch.float16)
    return [
        # fp32: the loss rounded once more than the float64 reference, a few ulps (1.2e-7 each) at most
        ("fp32 logits, randn x 3", z, y, 1e-4),
        ("fp32 logits at +-10, +-20 and +-30", extremes, y8, 1e-4),
        # fp16 logits, what CUDA autocast hands a loss after a linear layer: fp16 keeps 11 significant bits
        # (4.9e-4 relative per rounding); 5e-3 allows ten roundings and is far below a clamped or infinite loss
        ("fp16 logits, +-6 to +-12", z16, y8.half(), 5e-3),
    ]


@exercise
def check_bce_fix(fn) -> CheckResult:
    """Exercise: ``fn(logits, target)`` computes the mean ``binary_cross_entropy(sigmoid(logits), target)`` in a form
    CUDA autocast accepts, in fp32, and exactly out to logits of +-30 and on fp16 logits."""
    cases = _bce_cases()
    logits, target = cases[0][1], cases[0][2]
    try:
        t = trace(fn, logits, target, device_type="cuda")
    except Exception as exc:  # noqa: BLE001 - a checker answers any answer, it never raises
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160].rstrip(".")
        if not isinstance(exc, RuntimeError) or "unsafe to autocast" not in first:
            attempt(fn, logits, target)  # an error of the function itself: its own "Not yet"
            return not_yet(f"under the CUDA policy your function fails: {first}")
        if _is_starter(fn):
            return your_turn(
                f"CUDA autocast refuses the starter: {first}. Rewrite safe_bce so that no binary_cross_entropy "
                "of probabilities runs under autocast"
            )
        return not_yet(
            f"CUDA autocast still refuses it: {first}. The ban is on the op itself "
            "(F.binary_cross_entropy, nn.BCELoss): clamping, casting or moving the sigmoid does not lift it. "
            "Compute the loss from the logits z without probabilities (log sigmoid(z) = -softplus(-z), "
            "log(1 - sigmoid(z)) = -softplus(z); or the loss in torch.nn.functional that takes logits)"
        )
    if not isinstance(t.output, torch.Tensor) or t.output.dtype != torch.float32:
        what = t.output.dtype if isinstance(t.output, torch.Tensor) else type(t.output).__name__
        return not_yet(f"under CUDA autocast your loss comes out {what}; it should be a float32 tensor")
    for what, z, y, rtol in cases:
        got = attempt(fn, z, y)
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            shape = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
            return not_yet(f"expected a scalar loss tensor, got {shape}")
        want = F.binary_cross_entropy_with_logits(z.double(), y.double())
        value = got.double()
        if not torch.isfinite(value):
            return not_yet(
                f"on {what} your loss is {value.item()}: a probability rounded to 0 or 1 and its log is infinite. "
                "Compute the loss from the logits z without probabilities (log sigmoid(z) = -softplus(-z))"
            )
        if not torch.allclose(value, want, rtol=rtol, atol=0.0):
            hint = (
                "keep the same mean reduction"
                if what.startswith("fp32 logits, randn")
                else "a loss computed from probabilities loses the far tails, where sigmoid rounds to 0 or 1 "
                "(and binary_cross_entropy caps each log at -100): compute it from the logits z"
            )
            return not_yet(f"on {what} your loss is {value.item():.6g}, not the loss of those logits: {hint}")
    return correct("same loss, accepted by CUDA autocast and computed in fp32, exact out to +-30 and on fp16 logits")


_HALF = (torch.float16, torch.bfloat16)


class _Truth(TorchDispatchMode):
    """``aten._to_copy`` calls whose output is fp16 or bf16 and whose input was not."""

    def __init__(self):
        super().__init__()
        self.n = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket is torch.ops.aten._to_copy and isinstance(out, torch.Tensor):
            self.n += out.dtype in _HALF and args[0].dtype != out.dtype
        return out


def _cast_cases():
    """(what, fn, hints) the counter is tried on; each fn opens its own autocast regions."""

    def one_region(lin, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for _ in range(3):
                lin(x)

    def three_regions(lin, x):
        for _ in range(3):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                lin(x)

    def fp16_region(lin, x):
        with torch.autocast("cpu", dtype=torch.float16):
            lin(x)
            lin(x)

    def upcasts(lin, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = lin(x)
            F.mse_loss(out, torch.zeros_like(x))  # an fp32 op: its bf16 input is cast up
            out.float()

    def other_copies(lin, x):
        x.to(torch.int16)
        x.bfloat16().to(torch.bfloat16, copy=True)
        x.double()
        x.half()

    def other_sources(lin, x):
        x.double().bfloat16()  # fp64 -> bf16
        torch.arange(4).half()  # int64 -> fp16
        x.half().bfloat16()  # fp32 -> fp16, then fp16 -> bf16: two casts

    def new_tensors(lin, x):
        h = x.bfloat16()
        torch.where(x > 0, h, h)  # a bool and two bf16 tensors in, bf16 out: no cast
        torch.zeros_like(x, dtype=torch.float16)  # a new fp16 tensor from an fp32 one: no cast
        torch.full((2,), 1.5, dtype=torch.bfloat16)

    def train(lin, x, one_region):
        opt = torch.optim.SGD(lin.parameters(), lr=0.1)
        region = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
        with region() if one_region else contextlib.nullcontext():
            for _ in range(2):
                with contextlib.nullcontext() if one_region else region():
                    loss = lin(x).sum()
                loss.backward()
                opt.step()
                opt.zero_grad()

    look = "print func, args[0].dtype and out.dtype in __torch_dispatch__ to see the ops this work runs"
    per_use = "count each cast op the dispatcher runs, not the ops that use its result: a weight's cast is made once "
    return [
        ("a Linear called 3 times in one bf16 region", one_region, [per_use + "per region and reused (cached)", look]),
        (
            "the same in 3 regions",
            three_regions,
            ["each region casts the weights again: count the casts as they run, not once per tensor", look],
        ),
        ("a Linear called twice under fp16 autocast", fp16_region, ["fp16 is a 16-bit float dtype as well as bf16"]),
        (
            "a bf16 region with an fp32 op (mse_loss) and .float()",
            upcasts,
            ["a cast up to fp32 is not a cast to a 16-bit dtype: look at the output's dtype", look],
        ),
        (
            "x.to(torch.int16), a bf16 copy of a bf16 tensor, x.double(), x.half()",
            other_copies,
            ["int16 is not a float dtype", "a copy that keeps its dtype casts nothing"],
        ),
        (
            "x.double().bfloat16(), torch.arange(4).half(), x.half().bfloat16()",
            other_sources,
            [
                "a cast to fp16 or bf16 from any other dtype counts: fp64, an integer dtype, and the other 16-bit one",
                look,
            ],
        ),
        (
            "torch.where on bf16 tensors, torch.zeros_like(x, dtype=torch.float16), torch.full(..., dtype=bf16)",
            new_tensors,
            ["an op that returns a 16-bit tensor is not a cast unless it is the cast op itself", look],
        ),
        (
            "two SGD steps inside one bf16 region",
            lambda lin, x: train(lin, x, True),
            [
                "the backward pass runs under your mode too; a cast up to fp32 there is not counted",
                "one region around the loop casts the weights once: the second step reuses the stale cast",
            ],
        ),
        (
            "two SGD steps, one bf16 region per step",
            lambda lin, x: train(lin, x, False),
            ["each step's region casts the weights again", look],
        ),
    ]


def _fresh_inputs():
    g = torch.Generator().manual_seed(4)
    lin = torch.nn.Linear(16, 16)
    with torch.no_grad():
        for p in lin.parameters():
            p.copy_(torch.randn(p.shape, generator=g))
    return lin, torch.randn(4, 16, generator=g)


_COURSE_COUNTERS = frozenset({"trace", "profile_tree", "cast_cost", "output_dtypes"})
_EXPERIMENTS_FILE = inspect.getsourcefile(trace)


def _course_counter(code) -> bool:
    return code.co_name in _COURSE_COUNTERS and code.co_filename == _EXPERIMENTS_FILE


@exercise
def check_cast_counter(fn) -> CheckResult:
    """Exercise: ``fn(work, *args)`` runs ``work(*args)`` and returns how many casts to fp16 or bf16 from another
    dtype (``aten._to_copy``) the dispatcher ran, counted with a ``TorchDispatchMode`` you write (not the course's
    tracer)."""

    seen: dict = {"modes": set()}
    counts, wants = [], []
    for what, work, hints in _cast_cases():

        def watched(*args, _work=work):
            for m in _get_current_dispatch_mode_stack():
                seen["modes"].add(type(m))
            return _work(*args)

        with calls_seen(_course_counter) as called:
            got = attempt(fn, watched, *_fresh_inputs())
        course = sorted(t.__name__ for t in seen["modes"] if t.__module__.startswith("amp_lessons."))
        if course or called:
            used = ", ".join(course or sorted(f"autocast.{name}" for name in called))
            return hint_list(
                f"your count uses the course's own tools ({used})",
                ["write the TorchDispatchMode yourself and count in its __torch_dispatch__"],
            )
        if not any(issubclass(t, TorchDispatchMode) for t in seen["modes"]):
            return hint_list(
                "no TorchDispatchMode was active while the work ran",
                [
                    "enter your mode around the call: with CastCounter() as counter: work(*args)",
                    "count the casts inside its __torch_dispatch__",
                ],
            )
        if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.is_floating_point():
            got = got.item()
        if isinstance(got, bool) or not isinstance(got, int):
            return not_yet(f"your function returned {got!r} ({type(got).__name__}); it should return an int count")
        truth = _Truth()
        with truth:
            work(*_fresh_inputs())
        counts.append((what, got, hints))
        wants.append(truth.n)
    if all(got == 0 for _, got, _ in counts):
        return your_turn(
            "your counter counts no casts yet:\n"
            "- in __torch_dispatch__, add one when func is a cast to a 16-bit float dtype\n"
            "- the casts are the ops marked 'cast' in this lesson's trace tables: print func to find them"
        )
    again = attempt(fn, _cast_cases()[0][1], *_fresh_inputs())
    if again != counts[0][1]:
        return hint_list(
            f"the same work counted twice gives {counts[0][1]} and then {again}",
            ["start each count from zero: a counter kept on the class or in a global carries over"],
        )
    for (what, got, hints), want in zip(counts, wants):
        if got != want:
            return hint_list(f"for {what}, your count {got} is {'too many' if got > want else 'too few'}", hints)
    return correct(
        f"your counter agrees with the dispatcher on all {len(counts)} cases, from one weight cast per region "
        "to the casts that one region around a training loop never redoes"
    )
