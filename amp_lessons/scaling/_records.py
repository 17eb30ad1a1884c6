"""Lesson 05's records: the results of :mod:`.experiments` and the small tables the lesson builds from them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._table import Cell, TableRecord
from .._validate import count
from ..formats import get_format
from ..fp16._experiments import GradientCensus

__all__ = [
    "CensusTable",
    "GradScalerComparison",
    "PitfallTable",
    "ScaleSweep",
    "ScalerEvents",
    "ScalerHistory",
    "ScalerState",
    "TrainComparison",
    "TrainSummary",
]


@dataclass(frozen=True, repr=False)
class ScaleSweep(TableRecord):
    """:func:`scale_sweep`'s shares of the ``nonzero`` gradients of ``kind`` that each scale ``2**e`` makes
    ``flushed``, ``subnormal``, ``saturated`` or ``inf`` in ``fmt``, one per scale."""

    kind: str
    fmt: str
    nonzero: int
    exponent: tuple[int, ...]
    scale: tuple[float, ...]
    flushed: tuple[float, ...]
    subnormal: tuple[float, ...]
    saturated: tuple[float, ...]
    inf: tuple[float, ...]

    @property
    def overflowed(self) -> tuple[float, ...]:
        """The shares beyond the format's range, per scale: ``inf`` in fp16 and bf16, ``saturated`` in e4m3."""
        return getattr(self, get_format(self.fmt).overflow_class())

    def _table(self):
        over = get_format(self.fmt).overflow_class()
        header = ("scale", "flushed (%)", "subnormal (%)", f"{over} (%)")
        rows = [
            (f"2^{e}", f"{100 * u:.3g}", f"{100 * s:.3g}", f"{100 * o:.3g}")
            for e, u, s, o in zip(self.exponent, self.flushed, self.subnormal, self.overflowed)
        ]
        title = f"non-zero {self.kind} gradients ({self.nonzero:,}) x scale, rounded to {self.fmt}"
        return header, rows, title, ()


@dataclass(frozen=True, repr=False)
class ScalerHistory(TableRecord):
    """:func:`simulate_scaler`'s scale each step used, whether it was skipped, and the scale after its update."""

    scale: tuple[float, ...]
    skipped: tuple[bool, ...]
    scale_after: tuple[float, ...]

    def _table(self):
        return ScalerEvents.of(self)._table()


@dataclass(frozen=True, repr=False)
class TrainComparison(TableRecord):
    """The four runs of :func:`train_comparison` by name: the loss of each step, the mean fraction of exactly-zero
    gradient elements, the wall time; GradScaler's scale and skips at each step of the run with a scaler."""

    steps: int
    loss: dict[str, tuple[float, ...]]
    zero_grad_fraction: dict[str, float]
    scale: tuple[float, ...]
    skipped: tuple[bool, ...]
    seconds: dict[str, float]

    def _table(self):
        return TrainSummary.of(self)._table()


def _scale_text(x: float) -> str:
    """A loss scale as a number and, where it is one, a power of two: "65536 = 2^16"."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    m, e = math.frexp(x)
    power = f" = 2^{e - 1}" if m == 0.5 else ""
    return (f"{x:.0f}" if x >= 1 and x == int(x) else f"{x:.3g}") + power


def _yes(b: bool) -> str:
    return "yes" if b else "no"


def _need(value, what: str, want: str):
    raise TypeError(f"{what} must be {want}, got {type(value).__name__}: {value!r}"[:300])


@dataclass(frozen=True, repr=False)
class CensusTable(TableRecord):
    """The fractions ``fractions[kind][cls]`` of a gradient census (``scaling.small_loss_census``), its ``loss``
    and ``fmt``, shown as the census's own table."""

    fractions: dict
    loss: float
    fmt: str

    @classmethod
    def of(cls, census) -> CensusTable:
        if not isinstance(census, GradientCensus):
            _need(census, "census", "the GradientCensus of fp16.gradient_census or scaling.small_loss_census")
        fr = {k: dict(v) for k, v in census.fractions.items()}
        return cls(fr, float(census.loss), str(census.fmt))

    def _table(self) -> tuple:
        return GradientCensus._table(self)  # a census's own table: it reads only fractions, loss and fmt


_STATE_MEANING = {
    "scale": "the loss scale the next step multiplies the loss by",
    "growth_factor": "multiplies the scale after growth_interval clean steps in a row",
    "backoff_factor": "multiplies the scale after a step with an inf/NaN gradient",
    "growth_interval": "clean steps in a row before the scale grows",
    "_growth_tracker": "clean steps in a row so far (a private key, saved all the same)",
}


@dataclass(frozen=True, repr=False)
class ScalerState(TableRecord):
    """``torch.amp.GradScaler.state_dict()`` as it is, one row per key: ``state`` holds the (key, value) pairs."""

    state: tuple

    @classmethod
    def of(cls, scaler) -> ScalerState:
        """From a ``torch.amp.GradScaler`` or the dict its ``state_dict()`` returned."""
        if isinstance(scaler, torch.amp.GradScaler):
            scaler = scaler.state_dict()
        if not isinstance(scaler, dict) or not all(isinstance(k, str) for k in scaler):
            _need(scaler, "scaler", "a torch.amp.GradScaler or its state_dict()")
        return cls(tuple(scaler.items()))

    @property
    def state_dict(self) -> dict:
        return dict(self.state)

    @property
    def scale(self) -> float:
        return float(self.state_dict["scale"])

    def _table(self) -> tuple:
        rows = []
        for key, value in self.state:
            shown = _scale_text(value) if key == "scale" and isinstance(value, float) else repr(value)
            rows.append([Cell(key, nowrap=True), shown, _STATE_MEANING.get(key, "")])
        return ("key", "value", "what it is"), rows, "GradScaler.state_dict()", []


_COMPARISON_KEYS = ("step", "ours_scale", "torch_scale", "ours_skipped", "torch_skipped", "params_equal")


@dataclass(frozen=True, repr=False)
class GradScalerComparison(TableRecord):
    """``scaling.compare_with_gradscaler``'s rows as (step, our scale, GradScaler's scale, we skipped, it skipped,
    parameters equal); the table shows the first ``shown``."""

    rows: tuple
    shown: int

    @classmethod
    def of(cls, rows, *, shown: int | None = None) -> GradScalerComparison:
        if not isinstance(rows, (list, tuple)) or not all(
            isinstance(r, dict) and set(_COMPARISON_KEYS) <= set(r) for r in rows
        ):
            _need(rows, "rows", "the list returned by scaling.compare_with_gradscaler")
        shown = len(rows) if shown is None else count(shown, "shown", 1, None, "rows shown")
        return cls(tuple(tuple(r[k] for k in _COMPARISON_KEYS) for r in rows), min(shown, len(rows)))

    @property
    def agree(self) -> bool:
        """Same scale, same skip and equal parameters at every step."""
        return all(o == t and so == st and eq for _, o, t, so, st, eq in self.rows)

    def _table(self) -> tuple:
        header = (
            "step",
            "scale: ours",
            "scale: GradScaler",
            "skipped: ours",
            "skipped: GradScaler",
            "parameters equal",
        )
        rows = [
            [str(s), _scale_text(o), _scale_text(t), _yes(so), _yes(st), Cell(_yes(eq), tone=None if eq else "bad")]
            for s, o, t, so, st, eq in self.rows[: self.shown]
        ]
        n = len(self.rows)
        bad = sum(not (o == t and so == st and eq) for _, o, t, so, st, eq in self.rows)
        notes = [f"steps 0 to {self.shown - 1} of {n} shown" if self.shown < n else ""]
        notes.append(f"all {n} steps agree" if not bad else f"{bad} of {n} steps differ")
        return header, rows, "our DynamicScaler against torch.amp.GradScaler, step by step", notes


@dataclass(frozen=True, repr=False)
class ScalerEvents(TableRecord):
    """The steps of a :class:`ScalerHistory` where the scale changed or the step was skipped: ``events`` of
    (step, scale used, what happened, scale after)."""

    events: tuple
    n_steps: int
    limit: int

    @classmethod
    def of(cls, history, *, limit: int = 20) -> ScalerEvents:
        if not isinstance(history, ScalerHistory):
            _need(history, "history", "the ScalerHistory returned by scaling.simulate_scaler")
        limit = count(limit, "limit", 1, None, "rows shown")
        events = []
        for i, (used, skipped, after) in enumerate(zip(history.scale, history.skipped, history.scale_after)):
            if skipped:
                events.append((i, used, "inf/NaN gradient: step skipped, scale backs off", after))
            elif after != used:
                events.append((i, used, "clean steps in a row reached growth_interval: scale grows", after))
        return cls(tuple(events), len(history.scale), limit)

    @property
    def skipped_steps(self) -> list[int]:
        return [e[0] for e in self.events if "skipped" in e[2]]

    def _table(self) -> tuple:
        rows = [[str(s), _scale_text(u), what, _scale_text(a)] for s, u, what, a in self.events[: self.limit]]
        grew = len(self.events) - len(self.skipped_steps)
        title = f"the scaler over {self.n_steps} steps: {len(self.skipped_steps)} skipped, {grew} growths"
        more = len(self.events) - self.limit
        notes = [f"... and {more} more events" if more > 0 else "", "every other step: taken, scale unchanged"]
        return ("step", "scale used", "what happened", "scale after"), rows, title, notes


@dataclass(frozen=True, repr=False)
class TrainSummary(TableRecord):
    """``scaling.train_comparison``'s runs: ``rows`` of (run, first loss, final loss, fraction of the
    gradient elements exactly zero)."""

    rows: tuple

    @classmethod
    def of(cls, runs) -> TrainSummary:
        if not isinstance(runs, TrainComparison):
            _need(runs, "runs", "the TrainComparison returned by scaling.train_comparison")
        return cls(tuple((n, losses[0], losses[-1], runs.zero_grad_fraction[n]) for n, losses in runs.loss.items()))

    @property
    def final(self) -> dict:
        return {r[0]: r[2] for r in self.rows}

    @property
    def zero(self) -> dict:
        return {r[0]: r[3] for r in self.rows}

    def _table(self) -> tuple:
        rows = [[Cell(n, nowrap=True), f"{a:.3g}", f"{b:.3g}", f"{100 * z:.0f}"] for n, a, b, z in self.rows]
        header = ("run", "first loss", "final loss", "gradient elements exactly 0 (%)")
        return header, rows, "one tiny model trained four ways", []


@dataclass(frozen=True, repr=False)
class PitfallTable(TableRecord):
    """Lesson 05's pitfall measurements, one row per pitfall, from the dict its cells build (keys in ``_KEYS``)."""

    rows: tuple
    result: dict

    _KEYS = {
        "scheduler_warning": None,
        "grad_norm": ("scale", "before_unscale", "after_unscale"),
        "state_dict": ("saved", "restored"),
        "bf16": ("used", "after", "skipped"),
    }

    @classmethod
    def of(cls, pitfalls) -> PitfallTable:
        want = "a dict with the keys " + ", ".join(
            f"{k!r}" + (f" ({', '.join(v)})" if v else "") for k, v in cls._KEYS.items()
        )
        if not isinstance(pitfalls, dict) or not set(cls._KEYS) <= set(pitfalls):
            _need(pitfalls, "pitfalls", want)
        for k, sub in cls._KEYS.items():
            if sub and not (isinstance(pitfalls[k], dict) and set(sub) <= set(pitfalls[k])):
                _need(pitfalls[k], f"pitfalls[{k!r}]", f"a dict with the keys {', '.join(sub)}")
        w, g, s, b = (pitfalls[k] for k in cls._KEYS)
        if not (b["used"] and len(b["used"]) == len(b["after"]) == len(b["skipped"])):
            _need(b, "pitfalls['bf16']", "lists of one equal, non-zero length: used, after, skipped")
        n = len(b["skipped"])
        rows = (
            (
                "lr_scheduler.step() after a skipped first step",
                "warns: " + w.split(". ")[0] + "." if w else "no warning",
            ),
            (
                "clipping before unscale_",
                f"a clip sees a norm {g['scale']:.0f} times too large (about {g['before_unscale']:.0e} "
                f"instead of {g['after_unscale']:.1f})",
            ),
            (
                "the scaler's state in checkpoints",
                f"saved scale {_scale_text(s['saved']['scale'])}; a fresh scaler loaded from it: "
                f"{_scale_text(s['restored']['scale'])}, state equal: {_yes(s['restored'] == s['saved'])}",
            ),
            (
                "a GradScaler around bf16",
                f"{sum(b['skipped'])} of {n} steps skipped; the scale only grows: used at step 0 "
                f"{_scale_text(b['used'][0])}, used at the last step ({n - 1}) {_scale_text(b['used'][-1])}, "
                f"after it {_scale_text(b['after'][-1])}",
            ),
        )
        return cls(rows, pitfalls)

    def _table(self) -> tuple:
        return ("pitfall", "measured"), [list(r) for r in self.rows], "the AMP recipe's pitfalls, measured", []
