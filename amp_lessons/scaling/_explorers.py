"""Lesson 05's explorers: a gradient histogram under a loss scale, and the dynamic scaler step by step."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np

from .._draw import named_artists, pow2_ticks
from .._explorer import Explorer, Picture, failure_html, num, readout_table
from .._table import Cell, html_table
from .._validate import int_in
from ..formats import get_format
from ..fp16 import _experiments as fp16
from ..scaling import _experiments as scaling
from ..scaling._plots import plot_scaled_histogram, plot_scaler_history
from ..scaling._records import ScalerHistory
from ..style import style_context

__all__ = ["ScaleExplorer", "ScalerStateExplorer", "scale_explorer", "scaler_state_explorer"]


class ScaleExplorer(Explorer):
    """A loss scale ``2**k`` (k = 0..32) and where a census's gradients land in fp16 under it: the histogram of
    log2 |g x scale| and each kind's ``fractions`` (:func:`amp_lessons.scaling.scaled_fractions`)."""

    MAX_EXPONENT = 32

    def __init__(self, exponent: int = 0, census: dict | None = None, fmt="fp16"):
        self.fmt = get_format(fmt)
        self.slider = widgets.IntSlider(
            0,
            min=0,
            max=self.MAX_EXPONENT,
            description="log2 scale",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        # before the census: a bad exponent is refused at once
        self.slider.value = self.checked(self.slider, "exponent", exponent)
        self.census = fp16.gradient_census(fmt=self.fmt) if census is None else census
        self._index = scaling.CensusIndex(self.census)
        self.fractions: dict = {}
        self._pic = self._background_picture()
        super().__init__({"exponent": self.slider}, [self.slider])

    def _background_picture(self) -> Picture:
        pic = Picture((10, 4.4))
        with style_context():
            ax = pic.fig.add_axes((0.08, 0.13, 0.9, 0.74))
            plot_scaled_histogram(self.census, 0, self.fmt, ax=ax, max_exponent=self.MAX_EXPONENT)
            ax.set_title(f"Where the scaled gradients land in {self.fmt.name}", loc="left", pad=18)
            label = ax.text(
                0.99,
                0.95,
                "",
                transform=ax.transAxes,
                ha="right",
                va="top",
                fontsize=12,
                fontweight="bold",
                bbox=dict(facecolor="white", edgecolor="#999999", alpha=0.9),
            )
        named = named_artists(ax)
        stairs = [named[f"{kind} {part}"] for kind in ("weights", "activations") for part in ("fill", "edge")]
        pic.freeze({"stairs": stairs, "label": label})
        pic.edges = stairs[0].get_data().edges.copy()
        return pic

    def draw(self):
        k = int(self.slider.value)
        scale = math.ldexp(1.0, k)
        self.fractions = self._index.fractions(scale, self.fmt)
        problem = self._problem(k)
        for s in self._pic.parts["stairs"]:
            s.set_data(edges=self._pic.edges + k)
        self._pic.parts["label"].set_text(f"scale = 2^{k} = {scale:,.0f}")
        return (failure_html(problem) if problem else "") + self._readout(k), self._pic

    def _problem(self, k: int) -> str:
        """The shares of the non-zero gradients the scale ``2**k`` flushes or overflows ("" if none)."""
        parts = []
        over = self.fmt.overflow_class()
        for kind in ("weights", "activations"):
            fr = self.fractions[kind]
            nonzero = 1.0 - fr["zero"] - fr["nan"]
            if fr["flushed"] > 0:
                parts.append(
                    f"{100 * fr['flushed'] / nonzero:.3g}% of the non-zero {kind} gradients are flushed to zero"
                )
            if fr[over] > 0:
                parts.append(
                    f"{100 * fr[over] / nonzero:.3g}% of the non-zero {kind} gradients overflow to {over} "
                    "(GradScaler would skip the step)"
                )
        return f"at scale 2^{k} in {self.fmt.name}: " + "; ".join(parts) if parts else ""

    def _readout(self, k: int) -> str:
        """The classes of the non-zero gradients of each kind; the exact zeros' share in a note."""
        rows, zeros = [], []
        shown = [c for c in self.fmt.finite_input_classes() if c != "zero"]
        for kind in ("weights", "activations"):
            fr = self.fractions[kind]
            nonzero = 1.0 - fr["zero"] - fr["nan"]
            share = {c: fr[c] / nonzero if nonzero else 0.0 for c in shown}
            bad = [c in ("flushed", self.fmt.overflow_class()) and share[c] > 0 for c in shown]
            rows.append(
                [kind] + [Cell(f"{100 * share[c]:.3f}%", tone="bad" if b else None, bold=b) for c, b in zip(shown, bad)]
            )
            zeros.append(f"{kind} {100 * fr['zero']:.3f}%")
        head = ("non-zero gradients x 2^" + str(k), *shown)
        note = (
            "shares of the non-zero gradients; exact zeros, which no scale helps, are left out (of all values: "
            + ", ".join(zeros)
            + ")"
        )
        return html_table(head, rows, mono=True, notes=[note])


def scale_explorer(exponent: int = 0, census: dict | None = None) -> widgets.VBox:
    """The scale explorer's widget (its :class:`ScaleExplorer` is ``.explorer``)."""
    return ScaleExplorer(exponent, census).widget


class ScalerStateExplorer(Explorer):
    """GradScaler's rule over 200 steps (:func:`amp_lessons.scaling.simulate_scaler`): sliders for its parameters
    and for log2 of the largest gradient (a step whose ``scale x max |gradient|`` rounds to inf in fp16 overflows
    by itself), a button that makes step ``k`` overflow and one that clears. ``history`` is the shown simulation,
    ``inf_steps`` the injected steps, ``overflow_steps`` those that overflowed by themselves."""

    N_STEPS = 200
    GRAD_RANGE = (-40, 8)  # log2 max |gradient|: 2**8 x 2**8 already overflows fp16
    DEFAULTS = dict(init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000)
    EXTRA_MOVES = ("inject_button", "clear_button")

    def __init__(
        self,
        log2_init_scale: int = 16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 20,
        inf_steps=(40, 41, 130),
        log2_max_gradient: int = -20,
    ):
        f16 = get_format("fp16")
        self._fp16_max, self._fp16_emax, self._fp16_mantissa = f16.max, f16.emax, f16.mantissa_bits
        style, wide = {"description_width": "initial"}, widgets.Layout(width="340px")

        def slider(kind, value, description, layout=wide, **kw):
            return kind(value, description=description, style=style, layout=layout, **kw)

        self.init_slider = slider(widgets.IntSlider, 16, "log2 init_scale", min=0, max=24)
        self.growth_slider = slider(
            widgets.FloatSlider, 2.0, "growth_factor", min=1.1, max=4.0, step=0.1, readout_format=".1f"
        )
        self.backoff_slider = slider(
            widgets.FloatSlider, 0.5, "backoff_factor", min=0.05, max=0.95, step=0.05, readout_format=".2f"
        )
        long = widgets.Layout(width="460px")
        self.interval_slider = slider(
            widgets.IntSlider, 20, "growth_interval (short: default 2000)", long, min=1, max=50
        )
        lo, hi = self.GRAD_RANGE
        self.grad_slider = slider(widgets.IntSlider, -20, "log2 max |gradient|", min=lo, max=hi)
        self.step_slider = slider(widgets.IntSlider, 60, "step k", min=0, max=self.N_STEPS - 1)
        self.inject_button = widgets.Button(
            description="inject inf at step k", button_style="danger", layout=widgets.Layout(width="180px")
        )
        self.clear_button = widgets.Button(description="clear", layout=widgets.Layout(width="80px"))
        self.inf_steps: set[int] = set()
        self.overflow_steps: list[int] = []
        self.history: dict = {}
        self._pic = self._picture()
        controls = {
            "log2_init_scale": self.init_slider,
            "growth_factor": self.growth_slider,
            "backoff_factor": self.backoff_slider,
            "growth_interval": self.interval_slider,
            "log2_max_gradient": self.grad_slider,
        }
        values = (log2_init_scale, growth_factor, backoff_factor, growth_interval, log2_max_gradient)
        for (name, slider), value in zip(controls.items(), values):
            if value is None:
                raise TypeError(f"{name} must be a number, got None")
            slider.value = self.checked(slider, name, value)
        if not isinstance(inf_steps, (list, tuple, set, range)):
            raise TypeError(f"inf_steps must be a list or tuple of step numbers, got {type(inf_steps).__name__}")
        self.inf_steps = {self._check_step(k) for k in inf_steps}
        self.inject_button.on_click(lambda _: self.inject(self.step_slider.value))
        self.clear_button.on_click(lambda _: self.clear())
        rows = [
            widgets.HBox([self.init_slider, self.growth_slider]),
            widgets.HBox([self.backoff_slider, self.interval_slider]),
            self.grad_slider,
            widgets.HBox([self.step_slider, self.inject_button, self.clear_button]),
        ]
        super().__init__(controls, rows)

    # the actions a learner takes (set(), from the base, moves sliders; out-of-range values raise)
    def inject(self, k: int) -> None:
        """Make the gradients of step ``k`` overflow (what the button does with the slider's k)."""
        self.inf_steps.add(self._check_step(k))
        self.update()

    def clear(self) -> None:
        """Remove every injected overflow."""
        self.inf_steps.clear()
        self.update()

    def _check_step(self, k) -> int:
        return int_in(k, "step", 0, self.N_STEPS - 1)

    def params(self) -> dict:
        """The simulate_scaler parameters the sliders show."""
        return dict(
            init_scale=math.ldexp(1.0, int(self.init_slider.value)),
            growth_factor=round(float(self.growth_slider.value), 6),
            backoff_factor=round(float(self.backoff_slider.value), 6),
            growth_interval=int(self.interval_slider.value),
        )

    def _picture(self) -> Picture:
        pic = Picture((10, 4.0))
        stand_in = scaling.simulate_scaler(self.N_STEPS, (0,), growth_interval=1)
        with style_context():
            ax = pic.fig.add_axes((0.09, 0.13, 0.89, 0.78))
            plot_scaler_history(stand_in, ax=ax)
        named = named_artists(ax)
        pic.parts = dict(ax=ax, line=named["scale"], skipped=named["scale skipped"])
        return pic

    def _simulate(self, p: dict) -> ScalerHistory:
        """simulate_scaler with the injected overflows plus every step whose scaled largest gradient rounds to inf
        in fp16 (from 65504 + 16 = 65520 up), found in step order."""
        g = math.ldexp(1.0, int(self.grad_slider.value))
        limit = self._fp16_max + math.ldexp(1.0, self._fp16_emax - self._fp16_mantissa - 1)
        bad = set(self.inf_steps)
        self.overflow_steps = []
        start = 0
        while True:
            h = scaling.simulate_scaler(self.N_STEPS, sorted(bad), **p)
            over = np.flatnonzero(np.asarray(h.scale[start:], dtype=float) * g >= limit) + start
            new = [int(k) for k in over if k not in bad]
            if not new:
                return h
            self.overflow_steps.append(new[0])
            bad.add(new[0])
            start = new[0] + 1

    def draw(self):
        p = self.params()
        self.history = h = self._simulate(p)
        parts = self._pic.parts
        s = np.asarray(h.scale, dtype=float)
        with np.errstate(divide="ignore"):
            y = np.where(s > 0, np.log2(np.where(s > 0, s, 1.0)), np.nan)
        steps = np.arange(s.size)
        bad = np.asarray(h.skipped, dtype=bool)
        parts["line"].set_data(steps, y)
        parts["skipped"].set_data(steps[bad], y[bad])
        parts["skipped"].set_label(f"skipped step (inf/NaN gradient): {int(bad.sum())}")
        ax = parts["ax"]
        finite = y[np.isfinite(y)]
        lo, hi = (math.floor(finite.min()) - 1, math.ceil(finite.max()) + 1) if finite.size else (-1, 1)
        ax.set_ylim(lo, hi)
        pow2_ticks(ax.yaxis, lo, hi, max_ticks=8)
        ax.legend(loc="best", fontsize=9)
        problem = self._problem(h)
        # never frozen (the y range changes with the parameters): its PNG is a full (small) redraw
        return (failure_html(problem) if problem else "") + self._readout(p, h), self._pic

    def _problem(self, h: dict) -> str:
        """The skipped steps (injected or overflowing by themselves) and a scale that underflowed
        to 0 ("" if neither)."""
        parts = []
        skipped = sum(h.skipped)
        if skipped:
            own = self.overflow_steps
            text = f"{skipped} of {self.N_STEPS} steps skipped (inf gradients): {len(self.inf_steps)} injected"
            if own:
                text += (
                    f", {len(own)} where scale x 2^{int(self.grad_slider.value)} passed fp16's max 65504 "
                    f"(first at step {own[0]}, scale {num(h.scale[own[0]])})"
                )
            parts.append(text)
        if h.scale_after[-1] == 0:
            parts.append("the scale underflowed to 0 in float32: every gradient is now scaled to 0")
        return "; ".join(parts)

    def _readout(self, p: dict, h: dict) -> str:
        final = h.scale_after[-1]
        grows = sum(b > a for a, b in zip(h.scale, h.scale_after))
        d = self.DEFAULTS
        rows = [
            ("injected overflows at steps", ", ".join(map(str, sorted(self.inf_steps))) or "none"),
            (
                f"scale x 2^{int(self.grad_slider.value)} overflows fp16 at steps",
                ", ".join(map(str, self.overflow_steps)) or "none",
            ),
            ("steps skipped", f"{sum(h.skipped)} of {self.N_STEPS}"),
            ("times the scale grew", str(grows)),
            ("scale after the last step", num(final) if final > 0 else "0 (underflowed in float32)"),
            (
                "this run",
                f"init_scale {num(p['init_scale'])}, growth_factor {p['growth_factor']:g}, "
                f"backoff_factor {p['backoff_factor']:g}, growth_interval {p['growth_interval']}",
            ),
            (
                "GradScaler defaults",
                f"init_scale 2^16, growth_factor {d['growth_factor']:g}, "
                f"backoff_factor {d['backoff_factor']:g}, growth_interval {d['growth_interval']}",
            ),
        ]
        return readout_table([(k, html.escape(v)) for k, v in rows])


def scaler_state_explorer(**kwargs) -> widgets.VBox:
    """The scaler state explorer's widget (its :class:`ScalerStateExplorer` is ``.explorer``)."""
    return ScalerStateExplorer(**kwargs).widget
