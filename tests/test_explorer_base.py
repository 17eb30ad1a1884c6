"""The explorers' shared base (:class:`amp_lessons._explorer.Explorer`): its wiring, its set(), and every explorer of
the course built on it, driven to each control's extremes."""

from __future__ import annotations

import ipywidgets as widgets
import pytest
from matplotlib.figure import Figure

from amp_lessons._explorer import Explorer, Picture
from amp_lessons.bits._explorers import BitExplorer, FormatDesigner
from amp_lessons.distributed._explorers import ReductionExplorer
from amp_lessons.fp8._explorers import Fp8ScalingExplorer
from amp_lessons.fp16._explorers import MagnitudeExplorer, SumExplorer
from amp_lessons.micro._explorers import RecipeExplorer
from amp_lessons.scaling._explorers import ScaleExplorer, ScalerStateExplorer
from amp_lessons.tf32._explorers import MatmulPrecisionExplorer
from tests.pictures import is_png


class Counting(Explorer):
    """Two sliders and a menu; counts its draws."""

    def __init__(self):
        self.a = widgets.IntSlider(1, min=0, max=10)
        self.b = widgets.FloatSlider(0.5, min=0.0, max=1.0)
        self.menu = widgets.Dropdown(options=["x", "y"], value="x")
        self.draws = 0
        self._pic = Picture((2, 1))
        line = self._pic.fig.add_subplot().plot([0, 1], [0, 1])[0]
        self._pic.freeze({"line": line})
        super().__init__({"a": self.a, "b": self.b, "menu": self.menu})

    def draw(self):
        self.draws += 1
        self._pic.parts["line"].set_ydata([0, self.a.value])
        return f"a={self.a.value} b={self.b.value} menu={self.menu.value}", self._pic


def test_the_base_wires_widget_readout_and_picture():
    ex = Counting()
    assert ex.widget.explorer is ex
    assert ex.draws == 1 and ex.readout.value == "a=1 b=0.5 menu=x" and is_png(ex.image)
    assert list(ex.controls) == ["a", "b", "menu"]
    assert ex.widget.children[-2:] == (ex.readout, ex.image)
    ex.a.value = 3  # a learner's move redraws
    assert ex.draws == 2 and ex.readout.value.startswith("a=3")


def test_set_changes_several_controls_with_one_redraw():
    ex = Counting()
    before = bytes(ex.image.value)
    ex.set(a=7, b=0.25, menu="y")
    assert ex.draws == 2 and ex.readout.value == "a=7 b=0.25 menu=y"
    assert bytes(ex.image.value) != before
    ex.set(2, None, "x")  # by position, in the controls' order; None leaves a control as it is
    assert ex.draws == 3 and ex.readout.value == "a=2 b=0.25 menu=x"
    ex.set(a=2)  # nothing changes: no redraw
    assert ex.draws == 3


def test_set_refuses_an_unknown_control_naming_it_and_the_known_ones():
    ex = Counting()
    with pytest.raises(ValueError, match=r"no control 'c'.*a, b, menu"):
        ex.set(a=2, c=1)
    assert ex.a.value == 1 and ex.draws == 1  # nothing moved
    with pytest.raises(TypeError, match="at most 3"):
        ex.set(1, 0.5, "x", 4)
    with pytest.raises(TypeError, match="'a' twice"):
        ex.set(2, a=3)


def test_set_checks_every_value_before_any_control_moves():
    ex = Counting()
    with pytest.raises(ValueError, match=r"b=2.*0\.\.1"):
        ex.set(a=5, b=2.0)
    with pytest.raises(TypeError, match="a must be an int"):
        ex.set(a=2.5)
    with pytest.raises(ValueError, match="menu='z' is not one of 'x', 'y'"):
        ex.set(menu="z")
    with pytest.raises(ValueError, match="a=True"):
        ex.set(a=True)
    with pytest.raises(TypeError, match=r"menu must be one of 'x', 'y', got list \['x'\]"):
        ex.set(menu=["x"])  # a collection for a menu: named, not "unhashable type"
    assert (ex.a.value, ex.b.value, ex.menu.value, ex.draws) == (1, 0.5, "x", 1)


def test_holding_defers_the_redraw():
    ex = Counting()
    with ex.holding():
        ex.a.value, ex.b.value = 4, 0.75
    assert ex.draws == 1
    ex.update()
    assert ex.draws == 2 and ex.readout.value == "a=4 b=0.75 menu=x"


def test_a_picture_never_frozen_is_redrawn_whole():
    pic = Picture((2, 1))
    pic.fig.add_subplot().plot([0, 1])
    assert pic.png().startswith(b"\x89PNG") and pic.moving == [] and pic.parts == {}
    assert isinstance(pic.fig, Figure)


EXPLORERS = [
    BitExplorer,
    FormatDesigner,
    MatmulPrecisionExplorer,
    MagnitudeExplorer,
    SumExplorer,
    ScaleExplorer,
    ScalerStateExplorer,
    Fp8ScalingExplorer,
    RecipeExplorer,
    ReductionExplorer,
]
# The text boxes' extremes: what a learner might type at either end (an overflow, an underflow, an unreadable text).
TYPED = {"value": ("1e39", "1e-50", "-0.0", "nan", "not a number"), "v": ("1e5", "3e-8", "0", "not a number")}


def _extremes(name: str, w) -> list:
    if isinstance(w, (widgets.IntSlider, widgets.FloatSlider)):
        return [w.min, w.max]
    if hasattr(w, "options"):
        return [w.options[0], w.options[-1]]
    return list(TYPED[name])


@pytest.mark.parametrize("cls", EXPLORERS, ids=lambda c: c.__name__)
def test_every_explorer_is_an_explorer_and_takes_its_extremes(cls):
    ex = cls()
    assert isinstance(ex, Explorer) and ex.widget.explorer is ex and is_png(ex.image)
    assert ex.controls, cls.__name__
    for name, w in ex.controls.items():
        for value in _extremes(name, w):
            ex.set(**{name: value})
            assert ex.readout.value, (name, value)
            assert is_png(ex.image), (name, value)
    with pytest.raises(ValueError, match="no control 'nonsense'"):
        ex.set(nonsense=1)
