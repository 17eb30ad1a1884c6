"""Lesson 03's explorers: a magnitude in every format, and a running sum that stalls."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
import torch

from .._draw import named_artists
from .._explorer import Explorer, Picture, error_html, failure_html, parse_value, readout_table
from .._table import Cell, html_table
from ..formats import get_format, quantize
from ..fp16 import _experiments as fp16
from ..fp16._plots import plot_format_regions, plot_running_sums
from ..style import style_context

__all__ = ["MagnitudeExplorer", "SumExplorer", "magnitude_explorer", "sum_explorer"]


def _rel_text(err: float) -> str:
    if math.isnan(err):
        return "n/a"
    if math.isinf(err):
        return "inf"
    if err == 0:
        return "0 (exact)"
    return f"{err:.3g}"


class MagnitudeExplorer(Explorer):
    """Slide |x| over 90 decades and see its class, stored value and relative error in fp32, bf16, fp16,
    fp8 e4m3 and fp8 e5m2, with a marker on each format's regions. ``value``, ``classes``, ``stored`` and ``errors``
    hold what is shown."""

    FORMATS = ("fp32", "bf16", "fp16", "fp8_e4m3", "fp8_e5m2")
    LO, HI = -50.0, 40.0

    def __init__(self, log10_value: float = -5.0, sign: str = "+"):
        self.slider = widgets.FloatSlider(
            0.0,
            min=self.LO,
            max=self.HI,
            step=0.1,
            readout_format=".1f",
            description="log10 |x|",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        self.slider.value = self.checked(self.slider, "log10_value", log10_value)
        self.sign_buttons = widgets.ToggleButtons(
            options=["+", "-"], value=sign, description="sign", style={"button_width": "36px"}
        )
        self.value = math.nan
        self.classes: dict[str, str] = {}
        self.stored: dict[str, float] = {}
        self.errors: dict[str, float] = {}
        self._fmts = [get_format(n) for n in self.FORMATS]
        self._pic = self._background_picture()
        super().__init__({"log10_value": self.slider, "sign": self.sign_buttons})

    def _background_picture(self) -> Picture:
        pic = Picture((10.5, 4.0))
        with style_context():
            ax = pic.fig.add_axes((0.1, 0.27, 0.88, 0.64))
            plot_format_regions(1.0, self.FORMATS, ax=ax)
            ax.set_title("Where |x| lands in each format (marker: |x|)", loc="left")
        named = named_artists(ax)
        pic.freeze({"line": named["marker"], "dots": named["marker dots"]})
        pic.lo, pic.hi = ax.get_xlim()
        return pic

    def draw(self):
        log10 = round(float(self.slider.value), 6)
        value = 10.0**log10 * (-1.0 if self.sign_buttons.value == "-" else 1.0)
        self.value = value
        x = torch.tensor([value], dtype=torch.float32)
        rows = []
        for f in self._fmts:
            cls = fp16.classify(value, f)[0]  # the Python float: one that float32 flushes is "flushed"
            stored = float(quantize(x, f)[0])
            err = math.inf if math.isinf(stored) else abs(stored - value) / abs(value)
            self.classes[f.name], self.stored[f.name], self.errors[f.name] = cls, stored, err
            rows.append((f.name, cls, repr(stored), _rel_text(err)))
        shown = min(max(abs(value), self._pic.lo), self._pic.hi)
        self._pic.parts["line"].set_xdata([shown, shown])
        self._pic.parts["dots"].set_xdata([shown] * len(self._fmts))
        problem = self._problem()
        return (failure_html(problem) if problem else "") + self._readout(value, rows), self._pic

    def _problem(self) -> str:
        """The formats in which the shown value is lost ("" if none)."""
        lost = dict(
            flushed="flushes to 0", inf="overflows to inf", saturated="saturates to {stored!r}", nan="becomes NaN"
        )
        parts = [
            f"{lost[c].format(stored=self.stored[name])} in {name}" for name, c in self.classes.items() if c in lost
        ]
        return f"x = {self.value!r} " + "; ".join(parts) if parts else ""

    @staticmethod
    def _readout(value: float, rows) -> str:
        tone = dict(normal="good", subnormal="warn", zero="muted")  # the other classes lose the value: "bad"
        cells = [
            (name, Cell(cls, tone=tone.get(cls, "bad"), bold=True), stored, Cell(html=err))
            for name, cls, stored, err in rows
        ]
        return (
            f"<div style='font-family: monospace; font-size: 13px'>x = {html.escape(repr(value))}</div>"
            + html_table(("format", "class", "stored value", "relative error"), cells, mono=True)
        )


def magnitude_explorer(log10_value: float = -5.0) -> widgets.VBox:
    """The magnitude explorer's widget (its :class:`MagnitudeExplorer` is ``.explorer``)."""
    return MagnitudeExplorer(log10_value).widget


class SumExplorer(Explorer):
    """Sum ``n`` copies of ``v`` in fp16 and fp32 ways: a table (:func:`amp_lessons.fp16.sum_copies`) and the
    running sums, drawn in units of the exact final sum. ``result`` is the shown ``sum_copies(v, n)``, ``error`` the
    last input problem ("" if none)."""

    N_MAX = 8192
    LINES = (
        "exact",
        "fp32 running sum",
        "fp16 addends, fp32 accumulator",
        "torch.cumsum (fp16 tensor)",
        "fp16 running sum",
    )
    READOUT = ("fp16_running_sum", "fp16_addends_fp32_accumulator", "torch_sum_fp16", "exact")  # SumCopies fields
    TOPS = (1.15, 2.3)  # y-axis tops, in units of the exact final sum: one background each
    FP16_MAX = 65504.0
    SAMPLE_TEXTS = {
        "v": ("0.01", "16", "-16", "1", "3e-8", "1e5", "0", "65504", "0.1", "1e-30", "2049", "1e38", "0.3333", "nan",
              "not a number")
    }  # fmt: skip

    def __init__(self, v: float = 16.0, n: int = 4096):
        v = parse_value(v) if isinstance(v, str) else v
        fp16.check_copies(v, n)  # raises for a non-finite v or a bad n
        if not 1 <= n <= self.N_MAX:
            raise ValueError(f"n must be from 1 to {self.N_MAX}, got {n}")
        self.v_box = widgets.Text(
            value=repr(float(v)), description="v", continuous_update=False, layout=widgets.Layout(width="240px")
        )
        self.n_slider = widgets.IntSlider(
            int(n),
            min=1,
            max=self.N_MAX,
            description="n copies",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="520px"),
        )
        self.result = None  # the shown SumCopies
        self.v16 = math.nan  # the shown v rounded to fp16
        self._shown_problem = ""
        self.error = ""
        self._curves_v = None
        self._curves: dict = {}
        self._pictures = {top: self._background_picture(top) for top in self.TOPS}
        super().__init__({"v": self.v_box, "n": self.n_slider})

    def check(self, name: str, value):
        """``v``: a number or a string (an unreadable one is explained in the read-out)."""
        if name == "v":
            return value if isinstance(value, str) else repr(parse_value(value))
        return super().check(name, value)

    def _background_picture(self, top: float) -> Picture:
        """Axes in units of the exact final sum; lines, ticks and markers move."""
        from matplotlib.collections import LineCollection

        pic = Picture((9, 4.4))
        stand_in = {k: np.linspace(1.0 / 64, 1.0, 64) for k in self.LINES}
        with style_context():
            ax = pic.fig.add_axes((0.125, 0.14, 0.86, 0.78))
            plot_running_sums(stand_in, ax=ax, limit=1.0, limit_label=f"fp16 max {self.FP16_MAX:g}")
            ax.xaxis.labelpad = 20  # room for the tick labels drawn as moving texts
            ax.yaxis.labelpad = 50
            ax.set_xlim(0, 1.02)
            ax.set_ylim(-0.03 * top, top)
            ax.set_xticks([], [])
            ax.set_yticks([], [])
            ax.grid(False)
            ax.set_title("Running sums of n copies of v (triangle: the line became inf there)", loc="left")
            legend = ax.get_legend()  # drawn last, over the lines
            grid = [LineCollection([], colors="#DDDDDD", lw=0.8, zorder=0) for _ in range(2)]
            for g in grid:
                ax.add_collection(g, autolim=False)
            named = named_artists(ax)
            lines = [named[k] for k in self.LINES]
            limit = named["limit"]
            markers = [ax.plot([], [], ls="", marker="^", ms=10, color=ln.get_color(), zorder=5)[0] for ln in lines]
            xt = [
                ax.text(0, -0.015, "", transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=10)
                for _ in range(8)
            ]
            yt = [
                ax.text(-0.008, 0, "", transform=ax.get_yaxis_transform(), ha="right", va="center", fontsize=10)
                for _ in range(8)
            ]
        pic.freeze([*grid, *lines, limit, *markers, *xt, *yt, legend])
        pic.parts = dict(ax=ax, grid=grid, lines=lines, limit=limit, markers=markers, xt=xt, yt=yt, top=top)
        return pic

    def draw(self):
        try:
            v = parse_value(self.v_box.value)
            n = int(self.n_slider.value)
            result = fp16.sum_copies(v, n)
        except (ValueError, TypeError) as err:
            self.error = str(err)
            text = self.v_box.value.strip()
            try:
                typed = parse_value(text)
            except ValueError:
                self.error = f"v = {text!r} is not a number: type one such as 16, 0.1, -2.5e-6 or 1e5"
            else:
                if not math.isfinite(typed):
                    self.error = (
                        f"v = {text!r} reads as {typed!r}, which has nothing to sum: type a finite v "
                        f"(anything beyond {self.FP16_MAX:g}, such as 1e5, already overflows fp16)"
                    )
            kept = (failure_html(self._shown_problem) if self._shown_problem else "") + self._readout()
            note = "<div>the table and picture still show the last valid v:</div>" if self.result else ""
            return error_html(self.error) + (note + kept if self.result else ""), None
        self.error = ""
        self.result = result
        self.v16 = float(torch.tensor(v, dtype=torch.float32).to(torch.float16))
        if self._curves_v != v:  # the curves depend on v only: n just cuts them
            self._curves = fp16.running_sums_of_copies(v, self.N_MAX)
            self._curves_v = v
        self._shown_problem = problem = self._problem(v, n)
        return (failure_html(problem) if problem else "") + self._readout(), self._draw(v, n)

    def _problem(self, v: float, n: int) -> str:
        """What goes wrong in the shown sums ("" if nothing): underflow, overflow, swamping."""
        r, v16, top = self.result, self.v16, self.FP16_MAX
        if v16 == 0 and v != 0:
            return (
                f"underflow: v = {v!r} rounds to {v16!r} in fp16 (less than half its smallest subnormal "
                f"2^-24 = {2.0**-24!r}), so every fp16 addend is 0 and the fp16 sums stay 0"
            )
        if math.isinf(v16):
            return (
                f"overflow: v = {v!r} is beyond fp16's largest finite value {top:g}, so fp16(v) = {v16!r} and "
                "every sum of fp16 addends is inf"
            )
        problems = []
        run16 = self._curves["fp16 running sum"][:n]
        inf = torch.isinf(run16).nonzero()
        if len(inf):
            problems.append(
                f"overflow: the fp16 running sum passes {top:g} and becomes {float(run16[-1])!r} "
                f"at term {int(inf[0]) + 1} (exact n x fp16(v) = {r.exact!r})"
            )
        elif r.cumsum_first_inf_index is not None:
            problems.append(
                f"overflow: torch.cumsum of the fp16 tensor becomes inf at index {r.cumsum_first_inf_index}"
            )
        if r.stall_value is not None and v16 != 0:
            problems.append(
                f"swamping: the fp16 running sum stops at {r.stall_value!r}, where v = {v16!r} is at most half "
                f"the spacing of fp16 numbers; it ends at {r.fp16_running_sum!r} instead of {r.exact!r}"
            )
        return "; ".join(problems)

    def _readout(self) -> str:
        r = self.result
        rows = [("v stored in fp16", repr(self.v16))]
        rows += [
            (r.LABELS[k], f"<b>{getattr(r, k)!r}</b>" if k == "fp16_running_sum" else repr(getattr(r, k)))
            for k in self.READOUT
        ]
        rows.append(("torch.sum(dtype=float32)", repr(r.torch_sum_fp32)))
        stall = r.stall_value
        if self.v16 == 0:
            stall_text = "never: fp16(v) is 0, adding it changes nothing"
        else:
            stall_text = "never (within n terms)" if stall is None else repr(stall)
        rows.append(("fp16 running sum stalls at", stall_text))
        first_inf = r.cumsum_first_inf_index
        rows.append(("fp16 cumsum first inf at index", "never" if first_inf is None else str(first_inf)))
        return readout_table(rows)

    def _draw(self, v: float, n: int) -> Picture:
        from matplotlib.ticker import MaxNLocator

        exact = float(self._curves["exact"][n - 1])
        unit = exact if (exact != 0 and math.isfinite(exact)) else n * float(torch.tensor(v, dtype=torch.float32))
        if unit == 0 or not math.isfinite(unit):
            unit = 1.0
        ys = {k: self._curves[k][:n].double().numpy() / unit for k in self.LINES}
        peak = max((float(np.nanmax(y[np.isfinite(y)])) for y in ys.values() if np.isfinite(y).any()), default=0.0)
        top = next((t for t in self.TOPS if peak <= t), self.TOPS[-1])
        pic = self._pictures[top]
        p = pic.parts
        x = np.arange(1, n + 1) / n
        limit = abs(self.FP16_MAX / unit) if unit != 1.0 or exact != 0 else math.inf
        p["limit"].set_ydata([limit, limit])
        p["limit"].set_visible(limit <= top)
        for line, marker, k in zip(p["lines"], p["markers"], self.LINES):
            y = ys[k]
            line.set_data(x, np.where(np.isfinite(y), y, np.nan))
            inf = np.flatnonzero(np.isinf(y))
            marker.set_visible(inf.size > 0)
            if inf.size:
                marker.set_data([(inf[0] + 1) / n], [min(limit, 0.97 * top)])
        self._ticks(
            p["grid"][0],
            p["xt"],
            MaxNLocator(6, steps=[1, 2, 2.5, 5, 10], integer=True).tick_values(0, n),
            1.0 / n,
            1.02,
            vertical=True,
        )
        self._ticks(
            p["grid"][1],
            p["yt"],
            MaxNLocator(6, steps=[1, 2, 2.5, 5, 10]).tick_values(*sorted((0.0, top * unit))),
            1.0 / unit,
            top,
            vertical=False,
        )
        return pic

    @staticmethod
    def _ticks(grid, texts, values, scale: float, top: float, *, vertical: bool) -> None:
        pos = [(float(t), float(t) * scale) for t in values]
        pos = [(t, q) for t, q in pos if -1e-9 <= q <= top * (1 + 1e-9)]
        if vertical:
            grid.set_segments([[(q, -1.0), (q, 10.0)] for _, q in pos])
        else:
            grid.set_segments([[(-1.0, q), (2.0, q)] for _, q in pos])
        for i, text in enumerate(texts):
            if i < len(pos):
                t, q = pos[i]
                text.set_text(f"{t:.6g}")
                text.set_position((q, -0.015) if vertical else (-0.008, q))
                text.set_visible(True)
            else:
                text.set_visible(False)


def sum_explorer(v: float = 16.0, n: int = 4096) -> widgets.VBox:
    """The sum explorer's widget (its :class:`SumExplorer` is ``.explorer``)."""
    return SumExplorer(v, n).widget
