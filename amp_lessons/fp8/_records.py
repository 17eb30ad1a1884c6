"""Lesson 07's records: the scaling methods (:class:`ScalingMethod`) and the frozen results the experiments return,
each shown as a small table, and the recorded fp8 cost table (:func:`fp8_costs_of`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._table import TableRecord, html_table, text_table
from .._validate import count
from ..formats import get_format
from ..timing import format_seconds

__all__ = [
    "CastCosts",
    "CastStats",
    "fp8_costs_of",
    "Fp8LinearErrors",
    "ScalingMethod",
]


MAX_DIM = 65_536  # the largest matrix dimension the course accepts (a typo must not fill the memory)


@dataclass(frozen=True)
class ScalingMethod:
    """A way to scale a tensor before its fp8 cast: ``name`` (shown in rows and legends), ``scaling`` ("none",
    "per-tensor", "delayed" or "block") and ``block``, the (rows, columns) sharing one scale ("block" only)."""

    name: str
    scaling: str
    block: tuple[int, int] | None = None

    @classmethod
    def blocks(cls, rows: int, cols: int) -> ScalingMethod:
        """The block method of ``rows`` x ``cols`` blocks, named ``"block {rows}x{cols}"``."""
        rows, cols = count(rows, "rows", 1, MAX_DIM), count(cols, "cols", 1, MAX_DIM)
        return cls(f"block {rows}x{cols}", "block", (rows, cols))


@dataclass(frozen=True, repr=False)
class CastStats(TableRecord):
    """What casting a tensor to ``fmt`` with a scale did: ``relative_error`` ``||q - x|| / ||x||`` and the shares of
    values ``flushed`` (non-zero, became 0), ``saturated`` (stored as +-max: e4m3) and ``inf`` (e5m2)."""

    fmt: str
    relative_error: float
    flushed: float
    saturated: float
    inf: float

    @property
    def overflowed(self) -> float:
        return getattr(self, get_format(self.fmt).overflow_class())

    def _table(self):
        rows = [
            ("relative error", f"{self.relative_error:.3g}"),
            ("flushed to 0", f"{self.flushed:.2%}"),
            ("saturated", f"{self.saturated:.2%}"),
            ("inf", f"{self.inf:.2%}"),
        ]
        return None, rows, f"cast to {self.fmt}", ()


@dataclass(frozen=True, repr=False)
class ScaledMMComparison:
    """One product four ways against float64 (:func:`scaled_mm_compare`): relative errors; the ``fp8_*`` fields of
    ``torch._scaled_mm`` None where it did not run (``skipped`` says why), the times None unless timed."""

    shape: str
    device: str
    scale_a: float
    scale_b: float
    fp32_rel_error: float
    bf16_rel_error: float
    fp8_emulated_rel_error: float
    fp8_rel_error: float | None = None
    fp8_vs_emulation_max_abs_diff: float | None = None
    fp8_vs_emulation_rel_diff: float | None = None  # the max abs diff over the largest |output|
    skipped: str | None = None
    fp8_time_s: float | None = None
    bf16_time_s: float | None = None
    fp8_tflops: float | None = None
    bf16_tflops: float | None = None
    fp8_speedup_over_bf16: float | None = None

    _LABELS = {
        "scale_a": "amax scale of a",
        "scale_b": "amax scale of b",
        "fp32_rel_error": "fp32 matmul error",
        "bf16_rel_error": "bf16 matmul error",
        "fp8_emulated_rel_error": "fp8 e4m3, emulated (fake_quantize + fp32 matmul) error",
        "fp8_rel_error": "fp8 e4m3, torch._scaled_mm error",
        "fp8_vs_emulation_max_abs_diff": "_scaled_mm vs emulation: max abs diff",
        "fp8_vs_emulation_rel_diff": "_scaled_mm vs emulation: max diff / max |output|",
        "fp8_time_s": "fp8 time",
        "bf16_time_s": "bf16 time",
        "fp8_tflops": "fp8 TFLOP/s",
        "bf16_tflops": "bf16 TFLOP/s",
        "fp8_speedup_over_bf16": "fp8 speed-up over bf16",
    }

    def rows(self) -> list[tuple[str, str]]:
        out = []
        for name, label in self._LABELS.items():
            v = getattr(self, name)
            if v is not None:
                out.append((label, format_seconds(v) if name.endswith("_s") else f"{v:.3g}"))
        if self.skipped:
            out.append(("torch._scaled_mm", self.skipped))
        return out

    def __str__(self) -> str:
        return text_table(("", self.shape), self.rows(), title=f"one matmul four ways on {self.device}", rule=False)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return html_table(("", self.shape), self.rows(), title=f"one matmul four ways on {self.device}")


@dataclass(frozen=True, repr=False)
class Fp8LinearErrors(TableRecord):
    """The relative errors of :class:`Fp8Linear` against the fp32 layer (:func:`fp8_linear_check`)."""

    output_error: float
    input_grad_error: float
    weight_grad_error: float
    bias_grad_error: float

    LABELS = {
        "output_error": "output",
        "input_grad_error": "input gradient",
        "weight_grad_error": "weight gradient",
        "bias_grad_error": "bias gradient",
    }

    def _table(self):
        rows = [(label, f"{getattr(self, f):.3g}") for f, label in self.LABELS.items()]
        return ("of the fp8 layer", "relative error"), rows, "Fp8Linear against fp32 nn.Linear", ()


CAST_COST_VARIANTS = {
    "bf16": "bf16 matmul",
    "fp8": "fp8 kernel alone",
    "fp8+casts": "fp8 + eager amax and casts of both inputs",
    "fp8+compiled casts": "fp8 + the casts compiled (torch.compile)",
}


@dataclass(frozen=True, repr=False)
class CastCosts(TableRecord):
    """What an fp8 matmul costs with its casts (:func:`fp8_cast_costs`): ``times`` maps ``(shape, variant)`` to
    seconds per call under the one ``timer``; ``skipped`` maps a shape, or ``(shape, variant)``, to why not timed."""

    device: str
    timer: str
    times: dict
    skipped: dict

    def ratio(self, shape: str, variant: str) -> float | None:
        """bf16's time over ``variant``'s at ``shape`` (None where either was not timed)."""
        t, b = self.times.get((shape, variant)), self.times.get((shape, "bf16"))
        return None if t is None or b is None else b / t

    def _table(self):
        rows = []
        shapes = list(dict.fromkeys([s for s, _ in self.times] + [s for s in self.skipped if isinstance(s, str)]))
        for shape in shapes:
            if shape in self.skipped:
                rows.append((shape, "(every product)", "skipped", "-"))
                continue
            for key, label in CAST_COST_VARIANTS.items():
                t = self.times.get((shape, key))
                if t is None:
                    rows.append((shape, label, "skipped", "-"))
                    continue
                r = self.ratio(shape, key)
                rows.append((shape, label, format_seconds(t), "1" if key == "bf16" else f"{r:.2f}x"))
        notes = [f"{k if isinstance(k, str) else ' '.join(k)}: {why}" for k, why in self.skipped.items()]
        title = f"an fp8 matmul and its casts on {self.device}; timer: {self.timer}"
        return ("M x K x N", "product", "time per call", "speed vs bf16"), rows, title, notes


@dataclass(frozen=True, repr=False)
class Fp8CostReference(TableRecord):
    """Times of fp8 and bf16 products recorded on a named GPU: ``times_us`` maps ``(shape, variant)`` to
    microseconds, one per timer of ``timers``; :meth:`ratio` compares two variants under one timer, never across."""

    label: str
    method: str
    timers: dict
    variants: dict
    times_us: dict

    def time_us(self, shape: str, variant: str, timer: str) -> float:
        if timer not in self.timers:
            raise ValueError(f"timer={timer!r} is not allowed: use one of {', '.join(map(repr, self.timers))}")
        if (shape, variant) not in self.times_us:
            known = sorted({s for s, _ in self.times_us}), sorted({v for _, v in self.times_us})
            raise ValueError(
                f"no time for shape={shape!r}, variant={variant!r}: shapes {known[0]}, variants {known[1]}"
            )
        return self.times_us[shape, variant][list(self.timers).index(timer)]

    def ratio(self, shape: str, variant: str, timer: str) -> float:
        """bf16's time over ``variant``'s at ``shape``, both under ``timer`` (above 1: faster than bf16)."""
        return self.time_us(shape, "bf16", timer) / self.time_us(shape, variant, timer)

    def _table(self):
        rows = []
        for (shape, variant), times in self.times_us.items():
            cells = [
                f"{t:.1f}" + ("" if variant == "bf16" else f" ({self.ratio(shape, variant, k):.2f}x)")
                for t, k in zip(times, self.timers)
            ]
            rows.append((shape, variant, *cells))
        notes = [self.method]
        notes += [f"{k}: {v}" for k, v in self.timers.items()]
        notes += [f"{k}: {v}" for k, v in self.variants.items()]
        header = ("M x K x N", "product", *(f"{k} (µs)" for k in self.timers))
        return header, rows, f"fp8 and bf16 products, times in µs (x: speed vs bf16, same timer), {self.label}", notes


COST_TIMERS = {
    "events": "CUDA events around each call, median of 30, the GPU idle between calls",
    "events after memset": "the same, after a 256 MiB memset before each call (the memset keeps the GPU busy "
    "while the call is launched, so the events time mostly the kernels, not the launch)",
    "do_bench": "triton.testing.do_bench (mean)",
    "wall": "wall clock with torch.cuda.synchronize() on both sides, median of 50",
}
COST_VARIANTS = {
    "bf16": "bf16 matmul",
    "fp8": "fp8 kernel alone (inputs cast, scale tensors on the GPU, before timing)",
    "fp8 unscaled": "fp8 kernel on unscaled e4m3 casts of the inputs",
    "fp8 + host scales": "fp8 with its two scale tensors built from Python floats inside the timed call",
    "fp8 + eager casts": "fp8 with the eager amax + scale + clamp + cast of both bf16 inputs (the lesson's "
    "to_fp8) inside the timed call",
}
_RECORDED_VARIANT = {"bf16": "bf16", "fp8": "fp8", "fp8unsc": "fp8 unscaled", "fp8+hostsc": "fp8 + host scales",
                     "fp8+casts": "fp8 + eager casts"}  # fmt: skip
_RECORDED_TIMER = {"events": "events_us", "events after memset": "events_after_memset_us", "do_bench": "do_bench_us",
                   "wall": "wall_us"}  # fmt: skip


def fp8_costs_of(record) -> Fp8CostReference:
    """The fp8 cost table of the reference record ``amp_lessons.reference.find("fp8_cast_costs")``: larger shapes
    first, products in :data:`COST_VARIANTS` order."""
    results, rows = getattr(record, "results", None), {}
    if not isinstance(results, dict) or not hasattr(record, "label") or not hasattr(record, "method"):
        raise TypeError(f"record must be a reference Record (amp_lessons.reference), got {type(record).__name__}")
    for name, times in results.items():
        shape, _, product = name.partition(" ")
        if product not in _RECORDED_VARIANT or set(times) != set(_RECORDED_TIMER.values()):
            raise ValueError(f"record holds {name!r}: not an fp8 cost row (products {', '.join(_RECORDED_VARIANT)})")
        rows[shape, _RECORDED_VARIANT[product]] = tuple(times[_RECORDED_TIMER[t]] for t in COST_TIMERS)
    order = list(COST_VARIANTS)

    def size(shape: str) -> int:
        return -math.prod(int(n) for n in shape.split("x"))

    keys = sorted(rows, key=lambda k: (size(k[0]), order.index(k[1])))
    return Fp8CostReference(record.label, record.method, COST_TIMERS, COST_VARIANTS, {k: rows[k] for k in keys})
