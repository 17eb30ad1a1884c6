"""Checkers for lesson 04's exercises (predicting dtypes under autocast, the binary cross-entropy fix)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..autocast.experiments import trace
from ..checks import CheckResult, call_learner, is_placeholder

__all__ = [
    "check_bce_fix",
    "check_dtype_predictions",
]


def _dtype_exercises():

    return {
        "cpu: a @ b": ("cpu", lambda a, b, h: a @ b),
        "cpu: (a @ b).sum()": ("cpu", lambda a, b, h: (a @ b).sum()),
        "cpu: layer_norm(h)": ("cpu", lambda a, b, h: F.layer_norm(h, h.shape[-1:])),
        "cpu: cat([h, a])": ("cpu", lambda a, b, h: torch.cat([h, a])),
        "cpu: a.double() @ b.double()": ("cpu", lambda a, b, h: a.double() @ b.double()),
        "cuda: (a @ b).sum()": ("cuda", lambda a, b, h: (a @ b).sum()),
        "cuda: softmax(a @ b)": ("cuda", lambda a, b, h: torch.softmax(a @ b, dim=-1)),
        "cuda: cat([h, a])": ("cuda", lambda a, b, h: torch.cat([h, a])),
    }


def check_dtype_predictions(predictions: dict) -> CheckResult:
    """Exercise: predict the output dtype of each expression of the lesson's table under autocast
    (CPU: bf16 autocast, run here; CUDA: fp16 autocast, on a GPU or previewed with fake CUDA
    tensors). ``predictions`` maps each expression to a dtype name such as "torch.float32"."""

    exercises = _dtype_exercises()
    if not isinstance(predictions, dict):
        return CheckResult(
            False, f"predictions must be a dict {{expression: dtype name}}, got {type(predictions).__name__}"
        )
    unknown = sorted(set(predictions) - set(exercises))
    if unknown:
        return CheckResult(False, f"unknown expression(s) {unknown}: use the keys of the exercise's dict")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    wrong, todo = [], []
    for expr, (device_type, fn) in exercises.items():
        guess = predictions.get(expr, "...")
        if is_placeholder(guess):
            todo.append(expr)
            continue
        got = str(trace(fn, a, b, h, device_type=device_type).output.dtype)
        if str(guess).replace("torch.", "") != got.replace("torch.", ""):
            wrong.append(f"{expr}: not {guess}")
    if wrong:
        return CheckResult(
            False,
            f"{len(wrong)} of {len(exercises) - len(todo)} predictions are wrong: " + "; ".join(wrong)
            + ". Hint: look the op up with autocast.policy_of(op, device)",
        )  # fmt: skip
    if todo:
        return CheckResult(
            False,
            f'{len(todo)} of {len(exercises)} still to predict: replace each "..." with a dtype name, '
            f'"torch.<name>", starting with {todo[0]!r}',
            todo=True,
        )
    return CheckResult(True, f"all {len(exercises)} dtypes predicted right, on the CPU and CUDA policies")


def check_bce_fix(fn) -> CheckResult:
    """Exercise: ``fn(logits, target)`` computes the same loss as
    ``binary_cross_entropy(sigmoid(logits), target)`` in a form CUDA autocast accepts. Checked on
    the CPU for the value (fp32) and under the CUDA policy (a GPU, or fake CUDA tensors) for
    running at all and returning fp32."""

    g = torch.Generator().manual_seed(1)
    logits, target = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    want = F.binary_cross_entropy(torch.sigmoid(logits), target)
    got, err = call_learner(fn, logits, target)
    if err:
        return CheckResult(False, err)
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        what = f"a tensor of shape {tuple(got.shape)}" if isinstance(got, torch.Tensor) else f"a {type(got).__name__}"
        return CheckResult(False, f"expected a scalar loss tensor, got {what}")
    if not torch.allclose(got.float(), want, rtol=1e-4, atol=1e-6):
        return CheckResult(
            False,
            f"your loss is {got.item():.6g}, not the value of binary_cross_entropy(sigmoid(z), y) "
            "on the same inputs: keep the same mean reduction",
        )
    try:
        t = trace(fn, logits, target, device_type="cuda")
    except Exception as exc:  # noqa: BLE001 - a checker answers any answer, it never raises
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:160].rstrip(".")
        if not isinstance(exc, RuntimeError) or "unsafe to autocast" not in first:
            return CheckResult(False, f"the value is right, but under the CUDA policy your function fails: {first}")
        return CheckResult(
            False,
            f"the value is right, but CUDA autocast refuses it: {first}. Hint: which loss takes the logits and "
            "applies the sigmoid itself?",
            todo=True,  # the starter: binary_cross_entropy of the sigmoid
        )
    if t.output.dtype != torch.float32:
        return CheckResult(False, f"under CUDA autocast your loss comes out {t.output.dtype}; it should be float32")
    return CheckResult(True, "same loss, accepted by CUDA autocast and computed in fp32")
