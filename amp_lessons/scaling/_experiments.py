"""Lesson 05's experiments: gradients under a scale (:func:`scale_sweep`, :func:`safe_window`, fast through
:class:`CensusIndex`), the lesson's scalers against ``torch.amp.GradScaler`` (:func:`compare_with_gradscaler`,
:func:`simulate_scaler`: scales equal to torch's bit for bit) and :func:`train_comparison`."""

from __future__ import annotations

import copy
import math
import time
import weakref

import numpy as np
import torch

from .. import _validate
from .._runtime import Progress, one_thread
from .._validate import count, flag, real
from ..formats import CLASSES, Census, get_format
from ..fp16._experiments import GradientCensus, gradient_census_of
from ._checked import DynamicScaler, StaticScaler, scaler_params, update_scale
from ._records import ScalerHistory, ScaleSweep, TrainComparison

__all__ = [
    "CensusIndex",
    "DynamicScaler",
    "GradientCensus",
    "StaticScaler",
    "TRAIN_RUNS",
    "compare_with_gradscaler",
    "gradient_census_of",
    "pitfall_setup",
    "safe_window",
    "scale_sweep",
    "scaled_fractions",
    "simulate_scaler",
    "small_loss_census",
    "train_comparison",
]

#: The runs of :func:`train_comparison`: name -> (autocast enabled, autocast dtype, GradScaler enabled).
TRAIN_RUNS = {
    "fp32": (False, torch.float32, False),
    "fp16 autocast, no scaling": (True, torch.float16, False),
    "fp16 autocast + GradScaler": (True, torch.float16, True),
    "bf16 autocast, no scaler": (True, torch.bfloat16, False),
}


class CensusIndex:
    """A census's gradient magnitudes, sorted once: the census of ``g * scale`` for any scale is then three binary
    searches for the classes' thresholds (:meth:`~amp_lessons.formats.FloatFormat.largest_float32`)."""

    KINDS = ("weights", "activations")

    def __init__(self, census: GradientCensus | dict):
        census = census.tensors if isinstance(census, GradientCensus) else census
        if not isinstance(census, dict) or not set(self.KINDS) <= set(census):
            raise TypeError(
                "census must be a GradientCensus (from amp_lessons.fp16.gradient_census or "
                "scaling.gradient_census_of) or a dict with 'weights' and 'activations' gradient tensors"
            )
        self.sorted, self.zeros, self.nans, self.size = {}, {}, {}, {}
        for kind in self.KINDS:
            g = census[kind]
            if not isinstance(g, torch.Tensor):
                raise TypeError(f"census[{kind!r}] must be a tensor, got {type(g).__name__}")
            a = np.sort(g.detach().reshape(-1).float().abs().numpy())  # NaNs sort to the end
            self.sorted[kind] = a
            self.size[kind] = a.size
            self.zeros[kind] = int(np.searchsorted(a, 0.0, side="right"))
            self.nans[kind] = int(np.isnan(a).sum())

    def counts(self, kind: str, scale: float, fmt="fp16") -> Census:
        """``fmt.census(g * scale)`` of ``kind`` (a :class:`~amp_lessons.formats.Census`), except that "zero" counts
        the exact zeros before scaling."""
        if kind not in self.KINDS:
            raise ValueError(f"kind must be one of {self.KINDS}, got {kind!r}")
        f = get_format(fmt)
        t_zero, t_sub, t_fits = (f.largest_float32(c) for c in ("flushed", "subnormal", "normal"))
        s = np.float32(_validate.positive(scale, "scale"))
        a = self.sorted[kind]
        with np.errstate(over="ignore"):  # overflow to inf is a result here
            b = a * s
        n_zero, n_sub, n_fits = np.searchsorted(b, [t_zero, t_sub, t_fits], side="right").tolist()
        n_zero = max(n_zero, self.zeros[kind])  # an exact zero stays zero
        n_sub, n_fits = max(n_sub, n_zero), max(n_fits, n_zero)
        counts = dict.fromkeys(CLASSES, 0)
        counts["zero"] = self.zeros[kind]
        counts["flushed"] = n_zero - self.zeros[kind]
        counts["subnormal"] = n_sub - n_zero
        counts["normal"] = n_fits - n_sub
        counts[f.overflow_class()] += self.size[kind] - self.nans[kind] - n_fits
        counts["nan"] += self.nans[kind]
        return Census(f.name, "nearest_even", f.default_overflow, tuple(counts.values()))

    def fractions(self, scale: float, fmt="fp16") -> dict[str, dict[str, float]]:
        """``{"weights": {...}, "activations": {...}}``: each kind's fractions of :meth:`counts`."""
        out = {}
        for kind in self.KINDS:
            c = self.counts(kind, scale, fmt)
            out[kind] = {k: c.fraction(k) for k in CLASSES}
        return out


_INDEXES: dict = {}  # id(activations tensor) -> (ref to it, ref to the weights tensor, CensusIndex)


def _index(census) -> CensusIndex:
    """The :class:`CensusIndex` of a census, built once per census (kept while its tensors live)."""
    if isinstance(census, CensusIndex):
        return census
    tensors = census.tensors if isinstance(census, GradientCensus) else census
    acts = tensors.get("activations") if isinstance(tensors, dict) else None
    weights = tensors.get("weights") if isinstance(tensors, dict) else None
    if not (isinstance(acts, torch.Tensor) and isinstance(weights, torch.Tensor)):
        return CensusIndex(census)  # raises the TypeError that says what is expected
    cached = _INDEXES.get(id(acts))
    if cached is not None and cached[0]() is acts and cached[1]() is weights:
        return cached[2]
    index = CensusIndex(census)
    _INDEXES[id(acts)] = (weakref.ref(acts), weakref.ref(weights), index)
    weakref.finalize(acts, _INDEXES.pop, id(acts), None)
    return index


def scaled_fractions(census: dict, scale: float, fmt="fp16") -> dict[str, dict[str, float]]:
    """``{"weights": {...}, "activations": {...}}``: the census fractions of the gradients of ``census`` multiplied
    by ``scale`` (:meth:`CensusIndex.counts`)."""
    return _index(census).fractions(scale, fmt)


#: The exponents e whose 2**e is a (non-zero, finite) float32 number: the scales :func:`scale_sweep` accepts.
SCALE_EXPONENTS = (-149, 127)


def scale_sweep(census: dict, exponents=range(0, 33), fmt="fp16", kind: str = "activations") -> ScaleSweep:
    """For each scale ``2**e`` of ``exponents`` (ints from -149 to 127): the shares of the non-zero gradients of
    ``kind`` ("activations" or "weights") that, once scaled, are "flushed", "subnormal", "saturated" or "inf" in
    ``fmt``. Returns the :class:`ScaleSweep`."""
    index = _index(census)
    lo, hi = SCALE_EXPONENTS
    allowed = f"an int from {lo} to {hi}, so that the scale 2**e is a float32 number, as GradScaler's scale is"
    exps = tuple(_validate.int_in(e, "each of exponents", lo, hi, allowed) for e in _int_items(exponents, "exponents"))
    if not exps:
        raise ValueError("exponents is empty: give at least one exponent, e.g. range(0, 33)")
    f = get_format(fmt)
    if kind not in index.KINDS:
        raise ValueError(f"kind must be one of {index.KINDS}, got {kind!r}")
    nonzero = index.size[kind] - index.zeros[kind] - index.nans[kind]
    shares = {cls: [] for cls in ("flushed", "subnormal", "saturated", "inf")}
    for e in exps:
        c = index.counts(kind, math.ldexp(1.0, e), f)
        for cls, share in shares.items():
            share.append(c[cls] / nonzero if nonzero else 0.0)
    scales = tuple(math.ldexp(1.0, e) for e in exps)
    return ScaleSweep(kind, f.name, nonzero, exps, scales, **{cls: tuple(v) for cls, v in shares.items()})


def _int_items(values, what: str) -> tuple:
    if not isinstance(values, (list, tuple, range, set)):
        raise TypeError(f"{what} must be a list, tuple or range of ints, got {values!r} ({type(values).__name__})")
    return tuple(values)


def safe_window(
    sweep: ScaleSweep, max_underflow: float = 0.01, max_overflow: float = 0.0
) -> tuple[float, float] | None:
    """The smallest and the largest scale of ``sweep`` whose flushed share is at most ``max_underflow`` and whose
    overflowed share is at most ``max_overflow``; None if no scale is."""
    if not isinstance(sweep, ScaleSweep):
        raise TypeError(f"sweep must be the ScaleSweep returned by scale_sweep, got {type(sweep).__name__}")
    max_underflow, max_overflow = real(max_underflow, "max_underflow"), real(max_overflow, "max_overflow")
    for v, what in ((max_underflow, "max_underflow"), (max_overflow, "max_overflow")):
        if not 0 <= v <= 1:  # NaN too
            raise ValueError(
                f"{what}={v!r} is not allowed: it must be a fraction of the gradients, from 0 to 1 (0.01 is 1%)"
            )
    ok = [
        s for s, u, o in zip(sweep.scale, sweep.flushed, sweep.overflowed) if u <= max_underflow and o <= max_overflow
    ]
    return (min(ok), max(ok)) if ok else None


def simulate_scaler(
    n_steps: int,
    inf_steps=(),
    *,
    init_scale: float = 2.0**16,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
) -> ScalerHistory:
    """GradScaler's scale over ``n_steps`` steps, without a model, when the gradients overflow exactly at
    ``inf_steps`` (0-based): the :class:`ScalerHistory`."""
    n_steps = count(n_steps, "n_steps", 0, 10_000_000, "simulated steps")
    scale, growth, backoff, interval = scaler_params(init_scale, growth_factor, backoff_factor, growth_interval)
    if isinstance(inf_steps, (str, bytes, dict)) or not hasattr(inf_steps, "__iter__"):
        raise TypeError(f"inf_steps must be an iterable of step numbers (ints >= 0), got {inf_steps!r}")
    bad = set()
    for k in inf_steps:
        if not _validate.is_int(k, 0):
            raise ValueError(f"inf_steps holds {k!r}, which is not allowed: each step must be an int >= 0")
        bad.add(int(k))
    used, skipped, after = [], [], []
    tracker = 0
    for step in range(n_steps):
        used.append(scale)
        skipped.append(step in bad)
        scale, tracker = update_scale(scale, tracker, step in bad, growth, backoff, interval)
        after.append(scale)
    return ScalerHistory(tuple(used), tuple(skipped), tuple(after))


def _tiny_model(seed: int) -> torch.nn.Module:
    seed = _validate.seed(seed)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))


def compare_with_gradscaler(
    steps: int = 30,
    *,
    inf_steps=(3, 4, 10),
    init_scale: float = 2.0**16,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 5,
    seed: int = 0,
    overflow: str = "backward",
) -> list[dict]:
    """Train two copies of one tiny fp32 model side by side, with :class:`DynamicScaler` and with
    ``torch.amp.GradScaler("cpu")``. At ``inf_steps`` both overflow: ``overflow="backward"`` sets a gradient element
    to inf, ``"forward"`` an input element. One row per step: ``{"step", "ours_scale", "torch_scale",
    "ours_skipped", "torch_skipped", "params_equal" (bit for bit), "params_finite" (GradScaler's model)}``."""
    steps = count(steps, "steps", 1, 10_000, "training steps of two models")
    params = scaler_params(init_scale, growth_factor, backoff_factor, growth_interval)
    if overflow not in ("backward", "forward"):
        raise ValueError(f"overflow={overflow!r} is not allowed: it must be 'backward' or 'forward'")
    bad = {_validate.integer(k, "each of inf_steps") for k in _int_items(inf_steps, "inf_steps")}
    outside = sorted(k for k in bad if not 0 <= k < steps)
    if outside:
        raise ValueError(
            f"inf_steps holds {outside[0]!r}, which is not allowed: each step must be an int from 0 to "
            f"{steps - 1} (steps={steps}: the steps are numbered from 0)"
        )
    ours_model, torch_model = _tiny_model(seed), _tiny_model(seed)
    ours_opt = torch.optim.SGD(ours_model.parameters(), lr=0.1)
    torch_opt = torch.optim.SGD(torch_model.parameters(), lr=0.1)
    ours = DynamicScaler(*params)
    init, growth, backoff, interval = params
    theirs = torch.amp.GradScaler(
        "cpu", init_scale=init, growth_factor=growth, backoff_factor=backoff, growth_interval=interval
    )
    g = torch.Generator().manual_seed(seed)
    rows = []
    with one_thread():  # tiny models: one thread is fastest, and immune to a busy machine
        for step in range(steps):
            x, y = torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)
            row = {"step": step, "ours_scale": ours.scale, "torch_scale": theirs.get_scale()}
            x_used = x
            if step in bad and overflow == "forward":
                x_used = x.clone()
                x_used[0, 0] = math.inf  # an inf in the forward pass: the loss is inf
            for model, scale_loss in ((ours_model, ours.scale_loss), (torch_model, theirs.scale)):
                scale_loss(torch.nn.functional.mse_loss(model(x_used), y)).backward()
                if step in bad and overflow == "backward":
                    model[0].weight.grad[0, 0] = math.inf  # an overflow in the backward pass
            row["ours_skipped"] = not ours.step(ours_opt, ours_model.parameters())
            ours.update()
            theirs.step(torch_opt)
            found = theirs._found_inf_per_device(torch_opt)
            row["torch_skipped"] = bool(sum(float(v) for v in found.values()))
            theirs.update()
            row["params_equal"] = all(
                torch.allclose(a, b, rtol=0, atol=0, equal_nan=True)  # both NaN at a place counts as equal
                for a, b in zip(ours_model.parameters(), torch_model.parameters())
            )
            row["params_finite"] = all(bool(torch.isfinite(p).all()) for p in torch_model.parameters())
            ours_opt.zero_grad(set_to_none=True)
            torch_opt.zero_grad(set_to_none=True)
            rows.append(row)
    return rows


def _comparison_setup(seed: int, steps: int, target_scale: float, batch: int = 64):
    """The data and the 32-64-16 MLP of :func:`train_comparison`: targets of order ``target_scale``."""
    seed = _validate.seed(seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(steps, batch, 32, generator=g)
    w1 = torch.randn(32, 32, generator=g) / math.sqrt(32)
    w2 = torch.randn(32, 16, generator=g)
    y = target_scale * (torch.tanh(x @ w1) @ w2)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 16))
    return x, y, net


def small_loss_census(seed: int = 0, *, target_scale: float = 1e-3, fmt="fp16") -> GradientCensus:
    """The gradient census of :func:`train_comparison`'s model on its first batch: a small loss, so many gradients
    fall below fp16's range."""
    x, y, net = _comparison_setup(seed, 1, _target_scale(target_scale))
    model = torch.nn.Sequential(net, _Scale(target_scale))
    return gradient_census_of(model, torch.nn.functional.mse_loss, (x[0], y[0]), fmt)


def _target_scale(value) -> float:
    return _validate.real_in(
        value, "target_scale", 0, 1, open_low=True,
        allowed="a number in (0, 1]: the size of the model's outputs and targets (1e-3 makes the loss small)",
    )  # fmt: skip


class _Scale(torch.nn.Module):
    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor


def train_comparison(
    steps: int = 60, *, seed: int = 0, progress: bool = True, lr: float = 1e-2, target_scale: float = 1e-3
) -> TrainComparison:
    """Train one tiny model four ways on the CPU (:data:`TRAIN_RUNS`: fp32, fp16 autocast without and with
    GradScaler, bf16 autocast), same start and data, Adam (``lr``). The targets are of order ``target_scale``, so
    the output gradients (about 1e-8) fall below fp16's smallest subnormal. Returns the :class:`TrainComparison`."""
    steps = count(steps, "steps", 1, 10_000, "training steps of four runs")
    progress = flag(progress, "progress")
    lr = _validate.real_in(lr, "lr", 0, 1, open_low=True, allowed="a learning rate for Adam, in (0, 1]")
    target_scale = _target_scale(target_scale)
    x, y, start = _comparison_setup(seed, steps, target_scale)
    out = {"loss": {}, "zero_grad_fraction": {}, "scale": [], "skipped": [], "seconds": {}}
    bar = Progress(total=len(TRAIN_RUNS) * steps, desc="training 4 ways", disable=not progress)
    with one_thread(), bar:
        for name, (use_amp, dtype, use_scaler) in TRAIN_RUNS.items():
            bar.set_postfix_str(name)
            t0 = time.perf_counter()
            model = torch.nn.Sequential(_copy(start), _Scale(target_scale))
            opt = torch.optim.Adam(model.parameters(), lr=lr)
            scaler = torch.amp.GradScaler("cpu", enabled=use_scaler)
            losses, zeros = [], []
            for step in range(steps):
                with torch.autocast("cpu", dtype=dtype, enabled=use_amp):
                    loss = torch.nn.functional.mse_loss(model(x[step]), y[step])
                scaler.scale(loss).backward()
                grads = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
                zeros.append(float((grads == 0).float().mean()))
                if use_scaler:
                    out["scale"].append(scaler.get_scale())
                scaler.step(opt)
                scaler.update()
                if use_scaler:
                    out["skipped"].append(scaler.get_scale() < out["scale"][-1])
                opt.zero_grad(set_to_none=True)
                losses.append(loss.item())
                bar.update()
            out["loss"][name] = tuple(losses)
            out["zero_grad_fraction"][name] = sum(zeros) / steps
            out["seconds"][name] = time.perf_counter() - t0
    return TrainComparison(
        steps=int(steps),
        loss=out["loss"],
        zero_grad_fraction=out["zero_grad_fraction"],
        scale=tuple(out["scale"]),
        skipped=tuple(out["skipped"]),
        seconds=out["seconds"],
    )


_copy = copy.deepcopy  # the name lesson 05 shows in train_comparison's loop


def pitfall_setup(seed: int = 0):
    """``(model, x, y)`` for the recipe's pitfalls: a small seeded fp32 MLP (8 -> 4) and a batch of 32."""
    model = _tiny_model(seed)
    g = torch.Generator().manual_seed(seed)
    x, y = torch.randn(32, 8, generator=g), torch.randn(32, 4, generator=g)
    return model, x, y
