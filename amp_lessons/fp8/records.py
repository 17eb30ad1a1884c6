"""Lesson 07's records: the scaling methods the lesson compares (:class:`ScalingMethod`, by :data:`SCALINGS`) and
the frozen results its experiments return, each shown as a small table: what one cast with a scale did
(:class:`CastStats`), one matmul four ways (:class:`ScaledMMComparison`) and the fp8 linear layer's errors against
fp32 (:class:`Fp8LinearErrors`). :mod:`.experiments` makes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import _validate
from .._table import TableRecord, html_table, text_table
from .._validate import count
from ..formats import get_format
from ..timing import format_seconds

__all__ = [
    "CastStats",
    "Fp8LinearErrors",
    "SCALINGS",
    "ScaledMMComparison",
    "ScalingMethod",
]


MAX_DIM = 65_536  # the largest matrix dimension the course accepts (a typo must not fill the memory)

SCALINGS = ("none", "per-tensor", "delayed", "block")
"""Where a :class:`ScalingMethod`'s scale comes from: nowhere (1), the tensor's amax, an amax history, each block's
amax."""


@dataclass(frozen=True)
class ScalingMethod:
    """A way to scale a tensor before its fp8 cast, as :func:`scaling_errors` applies it: ``name`` is the name rows and
    legends show, ``scaling`` one of :data:`SCALINGS`, ``block`` the (rows, columns) of a block sharing one scale
    ("block" only). :data:`SCALING_METHOD_BY_NAME` holds the course's methods; :meth:`blocks` makes a block method of
    any shape."""

    name: str
    scaling: str
    block: tuple[int, int] | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str (the method's display name), got {self.name!r}")
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling={self.scaling!r} is not allowed: use one of {', '.join(map(repr, SCALINGS))}")
        if (self.block is None) != (self.scaling != "block"):
            raise ValueError(f"block={self.block!r} is not allowed with scaling={self.scaling!r}: a (rows, columns) "
                             "pair for 'block', None for the others")  # fmt: skip
        if self.block is not None:
            _validate.block_shape(self.block, "block", MAX_DIM)

    @classmethod
    def blocks(cls, rows: int, cols: int) -> ScalingMethod:
        """The block method of ``rows`` x ``cols`` blocks, named ``"block {rows}x{cols}"``."""
        rows, cols = count(rows, "rows", 1, MAX_DIM), count(cols, "cols", 1, MAX_DIM)
        return cls(f"block {rows}x{cols}", "block", (rows, cols))


# --- errors on real tensors ------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class CastStats(TableRecord):
    """What casting a tensor to ``fmt`` with a scale did (:func:`cast_stats`): ``relative_error`` =
    ``||q - x|| / ||x||`` (inf if a value overflowed to inf), and the shares of all values in three classes of
    :data:`amp_lessons.formats.CLASSES` (:meth:`~amp_lessons.formats.FloatFormat.classify` of the scaled values):
    ``flushed`` (non-zero, became 0), ``saturated`` (beyond the format's range, stored as +-max: e4m3's overflow) and
    ``inf`` (beyond the range, stored as inf: e5m2's overflow). :attr:`overflowed` is the share in the format's
    :meth:`~amp_lessons.formats.FloatFormat.overflow_class`. Shown as a small table."""

    fmt: str
    relative_error: float
    flushed: float
    saturated: float
    inf: float

    @property
    def overflowed(self) -> float:
        """The share of the values beyond the format's range: ``saturated`` in e4m3, ``inf`` in e5m2."""
        return getattr(self, get_format(self.fmt).overflow_class())

    def _table(self):
        rows = [
            ("relative error", f"{self.relative_error:.3g}"),
            ("flushed to 0", f"{self.flushed:.2%}"),
            ("saturated", f"{self.saturated:.2%}"),
            ("inf", f"{self.inf:.2%}"),
        ]
        return None, rows, f"cast to {self.fmt}", ()


# --- fp8 matmul ------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class ScaledMMComparison:
    """One product four ways against a float64 reference (:func:`scaled_mm_compare`). Errors are
    relative (``||out - ref|| / ||ref||``); the ``fp8_*`` fields of ``torch._scaled_mm`` are None where it
    did not run (``skipped`` says why), the times None unless timed."""

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
        """(label, value) for every field that has a value, numbers to 3 significant digits."""
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


# --- an fp8 linear layer ---------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class Fp8LinearErrors(TableRecord):
    """The relative errors (``||fp8 - fp32|| / ||fp32||``) of :func:`fp8_linear_check`'s :class:`Fp8Linear` against
    the fp32 layer: ``output_error`` (e4m3 inputs), ``input_grad_error`` and ``weight_grad_error`` (e5m2 output
    gradients), ``bias_grad_error`` (a sum of the unquantized output gradient: 0 or nearly). Shown as a small
    table."""

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
