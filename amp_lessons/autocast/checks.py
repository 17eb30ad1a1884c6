"""Checkers for lesson 04's exercises (predicting dtypes under autocast, the binary cross-entropy fix)."""

from __future__ import annotations

import ast
import inspect
import textwrap

import torch
import torch.nn.functional as F

from .._exercise import attempt, correct, exercise, not_yet, your_turn
from ..autocast.experiments import policy_of, trace
from ..checks import CheckResult, is_placeholder

__all__ = [
    "check_bce_fix",
    "check_dtype_predictions",
]


def _dtype_exercises():
    """expression -> (device type, function of (a, b, h, i, offsets), the op to look up)."""
    return {
        "cpu: cumsum(a @ b, 0)": ("cpu", lambda a, b, h, i, o: torch.cumsum(a @ b, 0), "cumsum"),
        "cuda: cumsum(a @ b, 0)": ("cuda", lambda a, b, h, i, o: torch.cumsum(a @ b, 0), "cumsum"),
        "cuda: norm(h)": ("cuda", lambda a, b, h, i, o: torch.norm(h), "norm"),
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
    """The output dtype's name ("float32") of ``fn(*args)`` under the device type's autocast, or "error"."""
    try:
        return _dtype_name(trace(fn, *args, device_type=device_type).output.dtype)
    except RuntimeError:
        return "error"


def _dtype_name(d) -> str:
    return str(d).replace("torch.", "")


@exercise
def check_dtype_predictions(predictions: dict) -> CheckResult:
    """Exercise: predict the output dtype of each expression of the lesson's table under autocast
    (CPU: bf16 autocast, run here; CUDA: fp16 autocast, on a GPU or previewed with fake CUDA
    tensors), or "error" where the call raises. ``predictions`` maps each expression to a dtype name
    such as "torch.float32" (or "float32"), or "error"."""

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
            why = (
                f"{lookup} is {policy!r}: what does that policy do with these inputs' dtypes?"
                if policy
                else f"{lookup} is None: on no {where} list, so ordinary type promotion of the inputs' dtypes "
                "decides (or refuses)"
            )
            wrong.append(f"{expr}: not {guess} ({why})")
    if malformed:
        return not_yet("; ".join(malformed) + '. Write "torch.float32", "float32" or "error"')
    if wrong:
        return not_yet(
            f"{len(wrong)} of {len(exercises) - len(todo)} predictions are wrong: "
            + "; ".join(wrong)
            + ". Remember what autocast does to fp64 and to fp32 inputs of the same op"
        )
    if todo:
        return your_turn(
            f'{len(todo)} of {len(exercises)} still to predict: replace each "..." with a dtype name, '
            f'"torch.<name>", or "error", starting with {todo[0]!r}'
        )
    return correct(f"all {len(exercises)} outcomes predicted right, on the CPU and CUDA policies")


#: the starter's loss, as the exercise gives it
_STARTER_EXPR = "F.binary_cross_entropy(torch.sigmoid(z), y)"


def _is_starter(fn) -> bool:
    """Whether ``fn`` is the exercise's starter as given: a function (or lambda) whose only statement returns
    ``F.binary_cross_entropy(torch.sigmoid(z), y)`` (comments, blank lines and the function's name do not count).
    Read from the function's source; False where there is none."""
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


@exercise
def check_bce_fix(fn) -> CheckResult:
    """Exercise: ``fn(logits, target)`` computes the same loss as
    ``binary_cross_entropy(sigmoid(logits), target)`` in a form CUDA autocast accepts. Checked on
    the CPU for the value (fp32) and under the CUDA policy (a GPU, or fake CUDA tensors) for
    running at all and returning fp32."""

    g = torch.Generator().manual_seed(1)
    logits, target = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    want = F.binary_cross_entropy(torch.sigmoid(logits), target)
    got = attempt(fn, logits, target)
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        what = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else f"a {type(got).__name__}"
        return not_yet(f"expected a scalar loss tensor, got {what}")
    if not torch.allclose(got.float(), want, rtol=1e-4, atol=1e-6):
        return not_yet(
            f"your loss is {got.item():.6g}, not the value of binary_cross_entropy(sigmoid(z), y) "
            "on the same inputs: keep the same mean reduction"
        )
    try:
        t = trace(fn, logits, target, device_type="cuda")
    except Exception as exc:  # noqa: BLE001 - a checker answers any answer, it never raises
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160].rstrip(".")
        if not isinstance(exc, RuntimeError) or "unsafe to autocast" not in first:
            return not_yet(f"the value is right, but under the CUDA policy your function fails: {first}")
        if _is_starter(fn):
            return your_turn(
                f"CUDA autocast refuses the starter: {first}. Rewrite safe_bce so that no binary_cross_entropy "
                "of probabilities runs under autocast"
            )
        return not_yet(
            f"the value is right, but CUDA autocast still refuses it: {first}. The ban is on the op itself "
            "(F.binary_cross_entropy, nn.BCELoss): clamping, casting or moving the sigmoid does not lift it. "
            "Either compute the loss from the logits z without probabilities (log sigmoid(z) = -softplus(-z), "
            "log(1 - sigmoid(z)) = -softplus(z); or the loss in torch.nn.functional that takes logits), or run "
            "this one op with autocast disabled on fp32 inputs"
        )
    if t.output.dtype != torch.float32:
        return not_yet(f"under CUDA autocast your loss comes out {t.output.dtype}; it should be float32")
    return correct("same loss, accepted by CUDA autocast and computed in fp32")
