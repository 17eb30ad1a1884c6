"""Lesson 07's explorer: a tensor cast to fp8 under a scale and a block size."""

from __future__ import annotations

import html
import math

import ipywidgets as widgets
import numpy as np
import torch

from .._draw import (
    region_spans,
)
from .._explorer import Explorer, Picture, failure_html, readout_table
from .._runtime import one_thread
from ..formats import get_format
from ..fp8 import _experiments as fp8
from ..style import style_context

__all__ = [
    "Fp8ScalingExplorer",
    "fp8_scaling_explorer",
]


class Fp8ScalingExplorer(Explorer):
    """Scale one tensor (default: the activation gradients of :func:`amp_lessons.fp8.model_tensors`) into fp8: a
    slider for log2 of a per-tensor scale (reaching overflow at the top and a total flush at the bottom), a menu of
    per-block amax scalings (the slider is off then) and the format. The picture is the histogram of
    log2 |x x scale| over the format's window; ``stats`` the shown :class:`CastStats`."""

    MIN_EXPONENT, MAX_EXPONENT = -20, 20  # the slider reaches at least these, further where the tensor needs it
    BLOCKS = ("none", "1x32", "1x128", "128x128")
    FORMATS = {"e4m3": "fp8_e4m3", "e5m2": "fp8_e5m2"}

    def __init__(
        self, exponent: int = 0, block: str = "none", fmt: str = "e4m3", tensor=None, name: str = "activation gradients"
    ):
        if tensor is None:
            names = ("weights", "activations", "weight gradients", "activation gradients")
            if name not in names:
                raise ValueError(f"name={name!r} is not allowed: use one of {names} (a tensor of fp8.model_tensors())")
            tensor = fp8.model_tensors()[name]
        self.name = name
        self.x = fp8.as_matrix(tensor, "tensor")
        if self.x.numel() == 0:
            raise ValueError(f"tensor is empty (shape {tuple(tensor.shape)}): the explorer needs at least one value")
        a = self.x.abs().reshape(-1)
        logs = torch.log2(a[(a > 0) & torch.isfinite(a)])
        # 2**17 is past e5m2's max 57344 (and e4m3's 448); 2**-18 is below half of e5m2's smallest
        # subnormal 2**-16 (and e4m3's 2**-9): the slider's ends reach overflow and a total flush
        top, bottom = (float(logs.max()), float(logs.min())) if logs.numel() else (0.0, 0.0)
        self.max_exponent = max(self.MAX_EXPONENT, math.ceil(17 - top))
        self.min_exponent = min(self.MIN_EXPONENT, math.floor(-18 - top))
        self.slider = widgets.IntSlider(
            0,
            min=self.min_exponent,
            max=self.max_exponent,
            description="log2 scale",
            style={"description_width": "initial"},
            layout=widgets.Layout(width="460px"),
        )
        self.block_box = widgets.Dropdown(options=self.BLOCKS, description="blocks")
        self.fmt_box = widgets.ToggleButtons(options=list(self.FORMATS), description="format")
        controls = self.opened_at(
            {"exponent": self.slider, "block": self.block_box, "fmt": self.fmt_box},
            exponent=exponent,
            block=block,
            fmt=fmt,
        )
        self.stats = None  # the shown CastStats
        self._n = self.x.numel()
        self._lo = math.floor(bottom) + self.min_exponent - 2
        self._hi = max(math.ceil(top) + self.max_exponent, 18) + 2
        self._edges = np.arange(self._lo, self._hi + 1.0)
        peak = float(np.histogram(logs.double().numpy(), bins=self._edges)[0].max(initial=0)) / self._n
        self._ymax = min(1.0, max(2.0 * peak, 0.05))  # 0.05: a tensor of zeros still gets an axis
        self._block_maps = {}  # (fmt, block) -> per-element scale, computed once
        self._pictures: dict[str, Picture] = {}
        for fmt_name in self.FORMATS.values():  # both backgrounds up front: a format switch only blits
            self._picture(fmt_name)
        super().__init__(controls, [widgets.HBox([self.slider, self.block_box]), self.fmt_box])

    def _picture(self, fmt_name: str) -> Picture:
        pic = self._pictures.get(fmt_name)
        if pic is None:
            f = get_format(fmt_name)
            pic = Picture((10, 4.2))
            with style_context():
                ax = pic.fig.add_axes((0.08, 0.14, 0.9, 0.74))
                region_spans(ax, f, self._lo, self._hi)
                zero = np.zeros(len(self._edges) - 1)
                fill = ax.stairs(zero, self._edges, fill=True, alpha=0.45, color="#E6550D")
                edge = ax.stairs(zero, self._edges, lw=1.5, color="#E6550D")
                label = ax.text(
                    0.01,
                    0.95,
                    "",
                    transform=ax.transAxes,
                    ha="left",
                    va="top",
                    fontsize=11,
                    bbox=dict(facecolor="white", edgecolor="#999999", alpha=0.9),
                )
                ax.set_xlim(self._lo, self._hi)
                ax.set_ylim(0, self._ymax)
                ax.set_xlabel("log2 |value x scale| (what is cast to fp8)")
                ax.set_ylabel("fraction of values per binade")
                ax.set_title(f"{self.name} ({self._n:,} values) scaled into {f.name}", loc="left", pad=18)
            pic.freeze({"fill": fill, "edge": edge, "label": label})
            self._pictures[fmt_name] = pic
        return pic

    def _scale(self, f, block: str):
        if block == "none":
            return math.ldexp(1.0, int(self.slider.value))
        key = (f.name, block)
        if key not in self._block_maps:
            br, bc = fp8.BLOCK_SHAPES[block]
            self._block_maps[key] = fp8.block_scale_map(self.x, f, br, bc)
        return self._block_maps[key]

    def _problem(self, f, what: str) -> str:
        """The values the cast loses ("" if none): flushed to zero, saturated or overflowed to inf."""
        parts = []
        if self.stats.flushed > 0:
            parts.append(f"{100 * self.stats.flushed:.3g}% of the values flush to zero")
        if self.stats.overflowed > 0:
            how = {"saturated": "saturate at", "inf": "overflow to inf beyond"}[f.overflow_class()]
            parts.append(f"{100 * self.stats.overflowed:.3g}% {how} {f.name}'s max {f.max:g}")
        return f"{what} in {f.name}: " + "; ".join(parts) if parts else ""

    def draw(self):
        fmt_name, block = self.FORMATS[self.fmt_box.value], self.block_box.value
        f = get_format(fmt_name)
        self.slider.disabled = block != "none"
        with one_thread():
            s = self._scale(f, block)
            self.stats = fp8.cast_stats(self.x, s, f)
            a = (self.x * s).abs().reshape(-1)
            logs = torch.log2(a[(a > 0) & torch.isfinite(a)]).double().numpy()
        heights = np.histogram(logs, bins=self._edges)[0] / self._n
        pic = self._picture(fmt_name)
        pic.parts["fill"].set_data(heights)
        pic.parts["edge"].set_data(heights)
        what = f"scale 2^{int(self.slider.value)}" if block == "none" else f"per-block amax scales ({block} tiles)"
        pic.parts["label"].set_text(what)
        problem = self._problem(f, what)
        return (failure_html(problem) if problem else "") + readout_table(
            [
                ("scaling", html.escape(what)),
                *(
                    []
                    if block == "none"
                    else [("log2 scale slider", f"off: each block is scaled by {f.max:g} / amax(block)")]
                ),
                ("relative error", f"{self.stats.relative_error:.3g}"),
                ("flushed to 0", f"{100 * self.stats.flushed:.3f}% of all values"),
                (f"{f.overflow_class()} (overflow)", f"{100 * self.stats.overflowed:.3f}%"),
            ]
        ), pic


def fp8_scaling_explorer(exponent: int = 0, block: str = "none", fmt: str = "e4m3", tensor=None) -> widgets.VBox:
    """The fp8 scaling explorer's widget (its :class:`Fp8ScalingExplorer` is ``.explorer``)."""
    return Fp8ScalingExplorer(exponent, block, fmt, tensor).widget
