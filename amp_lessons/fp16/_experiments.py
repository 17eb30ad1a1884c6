"""Lesson 03's experiments: fp16 overflow, underflow and swamping, master weights, gradient census.

All rounding goes through the formats engine (:mod:`amp_lessons.formats`) or an exact scalar twin of it, so any
:class:`~amp_lessons.formats.FloatFormat` can be the accumulator. No fp16 matmul runs here (slow on most CPUs):
"fp16 weights" are fp32 tensors holding fp16 values, a model of fp16 tensor cores with fp32 accumulation.
A running sum adds in float32 and rounds to the accumulator's format: for addends already in a format of at most
11 significant bits this is the correctly rounded sum, as torch's CPU fp16 and bf16 arithmetic give it."""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from .. import _validate
from .._runtime import Progress, one_thread
from .._table import TableRecord
from .._validate import count, finite, flag
from ..formats import CLASSES, FloatFormat, check_modes, float32_input, get_format, quantize
from .key_code import sgd_step

__all__ = [
    "MasterWeightRuns",
    "GradientCensus",
    "SumCopies",
    "census_fractions",
    "check_copies",
    "classify",
    "gradient_census",
    "gradient_census_of",
    "kahan_sum",
    "lost_update_fraction",
    "running_sum",
    "running_sums_of_copies",
    "sgd_step",
    "small_batch",
    "small_model",
    "sum_copies",
    "train_master_weights",
    "update_survives",
]

_MAX_COPIES = 1_000_000
_SCALAR_ROWS = 16  # running sums of at most this many rows loop in Python floats (faster)


def _values(values, what="values") -> torch.Tensor:
    """A float32 tensor from a floating tensor (not float64) or a list of numbers."""
    if isinstance(values, torch.Tensor):
        return float32_input(values, what)
    if isinstance(values, (list, tuple)):
        try:
            return torch.tensor(values, dtype=torch.float32)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{what} must be a tensor or a list of numbers, got {values!r:.80}") from None
    raise TypeError(f"{what} must be a float32 tensor or a list of numbers, got {type(values).__name__}")


_FP32 = get_format("fp32")


def _is_fp32(f: FloatFormat) -> bool:
    return (f.exponent_bits, f.mantissa_bits, f.encoding) == (8, 23, "ieee")


@functools.lru_cache(maxsize=None)
def _scalar_rounder(f: FloatFormat):
    """A function rounding the exact result of one operation to float32 and then to ``f`` (nearest even, the format's
    own overflow), as quantize of a float32 operation's result does, faster."""
    r32, rf = _rounder(_FP32), _rounder(f)
    return r32 if _is_fp32(f) else lambda x: rf(r32(x))


def _rounder(f: FloatFormat):
    m, emin, fmax = f.mantissa_bits, f.emin, f.max
    over = {"inf": math.inf, "saturate": fmax, "nan": math.nan}[f.default_overflow]
    unsigned_zero = not f.has_negative_zero
    frexp, ldexp = math.frexp, math.ldexp

    def rnd(x: float) -> float:
        if x != x:
            return x
        a = -x if x < 0 else x
        if a == 0:
            return 0.0 if unsigned_zero else x
        if a == math.inf:
            r = over
        else:
            e = frexp(a)[1] - 1  # a is in [2**e, 2**(e+1))
            q = e - m if e > emin else emin - m  # the value of the last kept bit: 2**q
            r = ldexp(round(ldexp(a, -q)), q)
            if r > fmax:
                r = over
        if r == 0 and unsigned_zero:
            return 0.0
        return -r if x < 0 else r

    return rnd


def running_sum(values, acc_fmt="fp16", rounding: str = "nearest_even", *, overflow: str | None = None) -> torch.Tensor:
    """Sequential sum with the accumulator rounded to ``acc_fmt`` after every addition.

    ``values`` has shape ``(..., N)``: each row is summed left to right, the addends used as given (float32).
    Each addition is done in float32 and rounded with ``rounding`` (and ``overflow``, default the format's own).
    Returns all partial sums (float32, the shape of ``values``), like ``cumsum``."""
    f = get_format(acc_fmt, what="acc_fmt")
    overflow = check_modes(f, rounding, overflow)
    x = _values(values)
    if x.dim() == 0:
        raise ValueError("values must have at least one dimension (..., N): the last one is summed")
    if x.shape[-1] == 0:
        return x.clone()
    if _is_fp32(f) and overflow == "inf":  # rounding a float32 sum to fp32 changes nothing
        with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are results here, not errors
            out = np.add.accumulate(x.numpy(), axis=-1, dtype=np.float32)  # sequential, in float32
        out += np.float32(0.0)  # the loop starts from +0.0, so a leading -0.0 sums to +0.0
        return torch.from_numpy(np.ascontiguousarray(out))
    rows = x.reshape(-1, x.shape[-1])
    if rows.shape[0] <= _SCALAR_ROWS and rounding == "nearest_even" and overflow == f.default_overflow:
        rnd = _scalar_rounder(f)
        out = torch.tensor(
            [list(itertools.accumulate(row.tolist(), lambda a, v: rnd(a + v), initial=0.0))[1:] for row in rows],
            dtype=torch.float32,
        )
    else:
        out = torch.empty_like(rows)
        acc = torch.zeros(rows.shape[0])
        for i in range(rows.shape[1]):
            acc = quantize(acc + rows[:, i], f, rounding, overflow)
            out[:, i] = acc
    return out.reshape(x.shape)


def _constant_running_sum(v: float, n: int, f: FloatFormat) -> torch.Tensor:
    """``running_sum(torch.full((n,), v), f)``, stopping the loop once the sum stops changing."""
    rnd = _scalar_rounder(f)
    acc, out = 0.0, []
    for _ in range(n):
        new = rnd(acc + v)
        out.append(new)
        if new == acc or new != new:  # stuck (inf + v is inf too) or NaN: it stays so
            break
        acc = new
    result = torch.empty(n)
    result[: len(out)] = torch.tensor(out, dtype=torch.float32)
    result[len(out) :] = out[-1] if out else 0.0
    return result


def kahan_sum(values, fmt="fp16") -> float:
    """Compensated (Kahan) summation of a 1-D tensor with every operation rounded to ``fmt``; returns a float
    within about one ulp of the exact sum."""
    f = get_format(fmt)
    x = _values(values)
    if x.dim() != 1:
        raise ValueError(f"values must be 1-D, got shape {tuple(x.shape)}")
    rnd = _scalar_rounder(f)
    total = comp = 0.0
    for v in x.tolist():
        y = rnd(v - comp)
        t = rnd(total + y)
        comp = rnd(rnd(t - total) - y)
        total = t
    return total


def check_copies(v, n) -> tuple[float, int]:
    """``(v, n)`` checked: v a finite number, n a count from 1 to a million."""
    v = finite(v, "v")
    n = _validate.integer(n, "n")
    if not _validate.is_int(n, 1, _MAX_COPIES):
        raise ValueError(f"n must be from 1 to {_MAX_COPIES:_}, got {n:_}")
    return v, n


def _fp16_copies(v: float, n: int) -> torch.Tensor:
    """``torch.full((n,), v, dtype=torch.float16)``, also for a ``v`` beyond fp16's range (inf)."""
    return torch.tensor(v, dtype=torch.float32).to(torch.float16).expand(n).contiguous()


def running_sums_of_copies(v: float, n: int) -> dict[str, torch.Tensor]:
    """The partial sums of ``n`` copies of ``v`` (float32 tensors of length ``n``), by method:
    ``"fp16 running sum"``, ``"fp32 running sum"``, ``"fp16 addends, fp32 accumulator"``,
    ``"torch.cumsum (fp16 tensor)"`` and ``"exact"`` (``k * fp16(v)``)."""
    v, n = check_copies(v, n)
    t16 = _fp16_copies(v, n)
    v32 = float(torch.tensor(v, dtype=torch.float32))
    v16 = float(t16[0])
    k = np.arange(1, n + 1, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow to inf is what is shown
        fp32 = np.add.accumulate(np.full(n, v32, np.float32)) + np.float32(0.0)  # from +0.0, as a loop
        fp16_fp32 = np.add.accumulate(np.full(n, v16, np.float32)) + np.float32(0.0)
        exact = k * v16
    return {
        "fp16 running sum": _constant_running_sum(v16, n, get_format("fp16")),
        "fp32 running sum": torch.from_numpy(fp32),
        "fp16 addends, fp32 accumulator": torch.from_numpy(fp16_fp32),
        "torch.cumsum (fp16 tensor)": t16.cumsum(0).float(),
        "exact": torch.from_numpy(exact).float(),
    }


def _number_text(v) -> str:
    """None as "none", an int as it is, a float to 8 significant digits."""
    if v is None:
        return "none"
    return str(v) if isinstance(v, int) else f"{v:.8g}"


@dataclass(frozen=True, repr=False)
class SumCopies(TableRecord):
    """``n`` copies of ``v`` summed several ways (:func:`sum_copies`): the final sums (``torch_sum_fp16``:
    torch's fp16 ``sum``, accumulated in fp32 and rounded once), the first index where the fp16 ``cumsum`` is inf, and
    ``stall_value``, where the fp16 running sum stops changing (None if it never does)."""

    v: float
    n: int
    fp16_running_sum: float
    fp32_running_sum: float
    fp16_addends_fp32_accumulator: float
    torch_sum_fp16: float
    torch_sum_fp32: float
    exact: float
    cumsum_first_inf_index: int | None
    stall_value: float | None

    LABELS = {
        "fp16_running_sum": "fp16 running sum",
        "fp32_running_sum": "fp32 running sum",
        "fp16_addends_fp32_accumulator": "fp16 addends, fp32 accumulator",
        "torch_sum_fp16": "torch.sum (fp16 tensor)",
        "torch_sum_fp32": "torch.sum(dtype=float32)",
        "exact": "exact",
        "cumsum_first_inf_index": "cumsum first inf index",
        "stall_value": "stall value",
    }

    def _table(self):
        rows = [(label, _number_text(getattr(self, f))) for f, label in self.LABELS.items()]
        return None, rows, f"{self.n:,} copies of {self.v:g}, summed", ()


def sum_copies(v: float, n: int) -> SumCopies:
    """Sum ``n`` copies of ``v`` several ways; returns the :class:`SumCopies`."""
    v, n = check_copies(v, n)
    sums = running_sums_of_copies(v, n)
    t16 = _fp16_copies(v, n)
    run16 = sums["fp16 running sum"]
    stall = None
    if n > 1:
        same = ((run16[1:] == run16[:-1]) & torch.isfinite(run16[1:])).nonzero()
        stall = float(run16[int(same[0])]) if len(same) else None
    inf = torch.isinf(sums["torch.cumsum (fp16 tensor)"]).nonzero()
    return SumCopies(
        v=v,
        n=n,
        fp16_running_sum=float(run16[-1]),
        fp32_running_sum=float(sums["fp32 running sum"][-1]),
        fp16_addends_fp32_accumulator=float(sums["fp16 addends, fp32 accumulator"][-1]),
        torch_sum_fp16=t16.sum().item(),
        torch_sum_fp32=t16.sum(dtype=torch.float32).item(),
        exact=n * float(t16[0]),
        cumsum_first_inf_index=int(inf[0]) if len(inf) else None,
        stall_value=stall,
    )


def update_survives(weight: float, update: float, fmt="fp16") -> bool:
    """Whether ``weight - update`` (in float32), rounded to ``fmt``, differs from ``weight`` rounded to
    ``fmt``: False means the SGD step is lost."""
    w, u = finite(weight, "weight"), finite(update, "update")
    x = torch.tensor([w, u], dtype=torch.float32)
    f = get_format(fmt)
    new, old = quantize(torch.stack([x[0] - x[1], x[0]]), f).tolist()
    return not (new == old or (math.isnan(new) and math.isnan(old)))


def lost_update_fraction(weights, updates, fmt="fp16") -> float:
    """The fraction of the non-zero ``updates`` lost in ``fmt`` (0.0 when all are zero)."""
    w, u = _values(weights, "weights"), _values(updates, "updates")
    f = get_format(fmt)
    moved = u != 0
    total = int(moved.sum())
    if total == 0:
        return 0.0
    lost = (quantize(w - u, f) == quantize(w, f)) & moved
    return int(lost.sum()) / total


_RUNS = ("fp32", "fp16 weights", "fp32 master weights")


def _regression(seed: int, n: int = 256, d: int = 64, noise: float = 0.01):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w_true = (1.0 + 3.0 * torch.rand(d, generator=g)) * torch.sign(torch.randn(d, generator=g))
    y = x @ w_true + noise * torch.randn(n, generator=g)
    return x, y


@dataclass(frozen=True, repr=False)
class MasterWeightRuns(TableRecord):
    """The three runs of :func:`train_master_weights`, by run name: ``loss`` per step, ``lost_fraction``
    of updates lost in the run's own storage, ``lost_if_fmt`` had it been stored in ``fmt``."""

    fmt: str
    steps: int
    lr: float
    loss: dict[str, tuple[float, ...]]
    lost_fraction: dict[str, float]
    lost_if_fmt: dict[str, float]

    def _table(self):
        header = ("run", "final loss", "updates lost", f"lost if stored in {self.fmt}")
        rows = [
            (run, f"{losses[-1]:.3g}", f"{self.lost_fraction[run]:.2%}", f"{self.lost_if_fmt[run]:.2%}")
            for run, losses in self.loss.items()
        ]
        return header, rows, f"{self.steps} SGD steps (lr {self.lr:g}), weights in fp32 and in {self.fmt}", ()


def train_master_weights(
    steps: int = 300, *, lr: float = 0.1, seed: int = 0, progress: bool = True, fmt="fp16"
) -> MasterWeightRuns:
    """Train one linear regression (64 weights, 256 samples, plain SGD from zero) three ways:
    ``"fp32"``; ``"fp16 weights"`` (weights stored in ``fmt``, small updates lost); ``"fp32 master weights"``
    (an ``fmt`` copy for forward and backward, the update applied to fp32 weights).

    Returns the :class:`MasterWeightRuns`."""
    steps = count(steps, "steps", 1, 100_000, "training steps of three runs", flops_each=3 * 6 * 256 * 64)
    seed, progress = _validate.seed(seed), flag(progress, "progress")
    lr = _validate.real(lr, "lr")
    if not 0 < lr <= 0.5:  # NaN fails too
        raise ValueError(
            f"lr={lr!r} is not allowed: it must be a number in (0, 0.5]; gradient descent on this regression diverges "
            "above 2 / (the largest eigenvalue of x.T @ x / n, about 2.3), about 0.87"
        )
    f = get_format(fmt)
    x, y = _regression(seed)
    xq = quantize(x, f)
    w0 = torch.zeros(x.shape[1])
    weights = {"fp32": w0.clone(), "fp16 weights": quantize(w0, f), "fp32 master weights": w0.clone()}
    loss = {r: [] for r in _RUNS}
    lost = {r: 0.0 for r in _RUNS}
    lost_fmt = {r: 0.0 for r in _RUNS}
    with one_thread():
        for _ in Progress(range(int(steps)), desc="training 3 ways", disable=not progress):
            for run in _RUNS:
                w = weights[run]
                weights[run], update, step_loss = sgd_step(
                    w, x if run == "fp32" else xq, y, lr, fmt=None if run == "fp32" else f, master=run != "fp16 weights"
                )
                loss[run].append(step_loss)
                storage = f if run == "fp16 weights" else _FP32
                lost[run] += lost_update_fraction(w, update, storage)
                lost_fmt[run] += lost_update_fraction(w, update, f)
    return MasterWeightRuns(
        fmt=f.name,
        steps=int(steps),
        lr=lr,
        loss={r: tuple(v) for r, v in loss.items()},
        lost_fraction={r: v / steps for r, v in lost.items()},
        lost_if_fmt={r: v / steps for r, v in lost_fmt.items()},
    )


def small_model(seed: int = 0) -> torch.nn.Module:
    """A small seeded MLP: 64 inputs, two hidden layers of 256 ReLUs, 10 classes."""
    seed = _validate.seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Sequential(
            torch.nn.Linear(64, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 256),
            torch.nn.ReLU(),
            torch.nn.Linear(256, 10),
        )


def small_batch(seed: int = 0, size: int = 256) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded inputs (``size`` x 64) and labels (0..9, from a random linear teacher) for :func:`small_model`."""
    size = count(size, "size", 1, 1_000_000, "samples of 64 inputs")
    g = torch.Generator().manual_seed(_validate.seed(seed))
    x = torch.randn(int(size), 64, generator=g)
    teacher = torch.randn(64, 10, generator=g)
    return x, (x @ teacher).argmax(dim=1)


def classify(x, fmt, rounding: str = "nearest_even") -> list[str]:
    """Where each value of ``x`` (a number, list or tensor) lands in ``fmt``: one class name of
    :data:`amp_lessons.formats.CLASSES` per value, flattened (``"flushed"``: non-zero, rounds to zero)."""
    f = get_format(fmt)
    wide = x if isinstance(x, torch.Tensor) and x.dtype == torch.float64 else None
    t = x.float() if wide is not None else x
    if isinstance(t, (torch.Tensor, list, tuple)):
        t = _values(t, "x")
        if isinstance(x, (list, tuple)):
            wide = torch.tensor(x, dtype=torch.float64)
    else:
        wide = torch.tensor(_validate.real(t, "x"), dtype=torch.float64)
        t = wide.float()
    codes = f.classify(t, rounding)
    if wide is not None:
        codes[(codes == CLASSES.index("zero")) & (wide != 0)] = CLASSES.index("flushed")
    return [CLASSES[c] for c in codes.reshape(-1).tolist()]


def census_fractions(values: torch.Tensor, fmt="fp16") -> dict[str, float]:
    """The fraction of ``values`` in each class of :data:`amp_lessons.formats.CLASSES` in ``fmt``."""
    t = _values(values)
    census = get_format(fmt).census(t)
    return {c: census.fraction(c) for c in CLASSES}


@dataclass(frozen=True, eq=False, repr=False)
class GradientCensus(TableRecord):
    """Where one fp32 pass's gradients land in ``fmt``: the gradient values (``weights``,
    ``activations``), their :func:`census_fractions` and the ``loss``."""

    weights: torch.Tensor
    activations: torch.Tensor
    fractions: dict[str, dict[str, float]]
    loss: float
    fmt: str

    @property
    def tensors(self) -> dict[str, torch.Tensor]:
        """The gradient tensors by kind."""
        return {"weights": self.weights, "activations": self.activations}

    def _table(self):
        shown = get_format(self.fmt).finite_input_classes()
        header = ("gradients of", *(f"{c} (%)" for c in shown))
        rows = [[kind, *(f"{100 * fr[c]:.2f}" for c in shown)] for kind, fr in self.fractions.items()]
        title = f"where the gradient values fall in {self.fmt} (loss {self.loss:.1g})"
        return header, rows, title, ["each row sums to 100%"]


def gradient_census(model=None, *, batch=None, fmt="fp16", seed: int = 0) -> GradientCensus:
    """One forward and backward pass in fp32, then where every gradient would land in ``fmt``.

    ``model`` defaults to :func:`small_model` and ``batch`` (inputs, targets) to :func:`small_batch`; a model of
    your own needs a batch. The loss is cross entropy (integer targets) or mean squared error (float targets).
    Returns the :class:`GradientCensus` of the parameters' and the leaf modules' output gradients."""
    seed = _validate.seed(seed)
    if model is None:
        model = small_model(seed)
        if batch is None:
            batch = small_batch(seed)
    elif not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module or None, got {type(model).__name__}")
    if batch is None:
        raise ValueError("a model of your own needs batch=(inputs, targets)")
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TypeError("batch must be a pair (inputs, targets)")
    targets = batch[1]
    loss_fn = torch.nn.functional.mse_loss if targets.is_floating_point() else torch.nn.functional.cross_entropy
    return gradient_census_of(model, loss_fn, batch, fmt)


def gradient_census_of(model: torch.nn.Module, loss_fn, batch, fmt="fp16") -> GradientCensus:
    """:func:`gradient_census` for any module and loss: ``loss_fn(model(inputs), targets)``
    (``batch`` a pair), or ``loss_fn(model(batch))`` (``batch`` a tensor)."""
    f = get_format(fmt)
    if isinstance(batch, (tuple, list)) and len(batch) == 2:
        inputs, targets = batch
        compute = lambda out: loss_fn(out, targets)  # noqa: E731
    elif isinstance(batch, torch.Tensor):
        inputs, compute = batch, loss_fn
    else:
        raise TypeError("batch must be a pair (inputs, targets) or an inputs tensor")
    grads: list[torch.Tensor] = []

    def on_output(module, args, output):
        if isinstance(output, torch.Tensor) and output.requires_grad:
            output.register_hook(lambda grad: grads.append(grad.detach().reshape(-1).float()))

    leaves = [m for m in model.modules() if not list(m.children())]
    handles = [m.register_forward_hook(on_output) for m in leaves]
    try:
        model.zero_grad(set_to_none=True)
        loss = compute(model(inputs))
        if not (isinstance(loss, torch.Tensor) and loss.numel() == 1):
            raise TypeError(f"loss_fn must return a scalar tensor, got {loss!r:.80}")
        if not loss.requires_grad:
            raise ValueError(
                "no gradients: the loss does not depend on any parameter that requires grad "
                "(is the whole model frozen?)"
            )
        loss.backward()
    finally:
        for h in handles:
            h.remove()
    params = [p.grad.detach().reshape(-1).float() for p in model.parameters() if p.grad is not None]
    if not params or not grads:
        raise ValueError("no gradients: no parameter of the model received a gradient")
    weights, activations = torch.cat(params), torch.cat(grads)
    return GradientCensus(
        weights=weights,
        activations=activations,
        fractions={"weights": census_fractions(weights, f), "activations": census_fractions(activations, f)},
        loss=loss.item(),
        fmt=f.name,
    )
