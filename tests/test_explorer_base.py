"""The explorers' shared base (:class:`amp_lessons._explorer.Explorer`): its wiring, its set(), and every explorer of
the course built on it, driven to each control's extremes."""

from __future__ import annotations

import importlib

import ipywidgets as widgets
import pytest
from matplotlib.figure import Figure

from amp_lessons._explorer import Explorer, Picture
from amp_lessons.lessons import TOPICS
from benchmarks.widget_steps import full_cycle, measure_update_ms, moved_widgets, run_moves
from tests.faces import called_names
from tests.pictures import is_png


class Counting(Explorer):
    """Two sliders and a menu (and the ``more`` controls given); counts its draws."""

    def __init__(self, more=None):
        self.a = widgets.IntSlider(1, min=0, max=10)
        self.b = widgets.FloatSlider(0.5, min=0.0, max=1.0)
        self.menu = widgets.Dropdown(options=["x", "y"], value="x")
        self.more = dict(more or {})
        self.draws = 0
        self._pic = Picture((2, 1))
        line = self._pic.fig.add_subplot().plot([0, 1], [0, 1])[0]
        self._pic.freeze({"line": line})
        super().__init__({"a": self.a, "b": self.b, "menu": self.menu, **self.more})

    def draw(self):
        self.draws += 1
        self._pic.parts["line"].set_ydata([0, self.a.value])
        text = f"a={self.a.value} b={self.b.value} menu={self.menu.value}"
        return text + "".join(f" {k}={w.value}" for k, w in self.more.items()), self._pic


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


# --- every explorer of the course, moved by the scripted moves its controls declare ---------------------------------


def _factories() -> dict:
    """The explorer factories the lessons call (``<topic>.<name>``): the ``*_explorer`` names and ``format_designer``
    of each topic's face."""
    called = called_names(TOPICS)
    found = {}
    for topic in TOPICS:
        face = importlib.import_module(f"amp_lessons.{topic}")
        for name in sorted(called[topic] & set(face.__all__)):
            if name.endswith("_explorer") or name == "format_designer":
                found[f"{topic}.{name}"] = getattr(face, name)
    return found


FACTORIES = _factories()

# Explorers built by the test that builds them all and not moved yet, each taken (once) by its own test below
# instead of built again; a test run alone builds its own.
_UNMOVED: dict = {}


def _fresh(name: str):
    """The widget ``FACTORIES[name]()`` returns, built and never moved."""
    return _UNMOVED.pop(name, None) or FACTORIES[name]()


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _drive(ex: Explorer, n: int) -> dict:
    """Run ``n`` scripted moves of every widget of ``ex``, checking after each that the read-out and the picture are
    there. Returns, per moved widget, ``[(state, redraws)]``: its value after each move (a box: its children's
    values; a button: None) and how many redraws completed in that move. ``[0]`` holds the state before."""
    moved = moved_widgets(ex)
    redraws, since = [], [0]
    update = ex.update

    def counted():
        update()
        redraws.append(1)

    def state(w):
        if isinstance(w, widgets.Box):
            return tuple(c.value for c in w.children)
        return None if isinstance(w, widgets.Button) else w.value

    seen = {name: [(state(w), 0)] for name, w in moved.items()}

    def after(name, i):
        if i is not None:
            assert ex.readout.value and is_png(ex.image), (name, i)
            seen[name].append((state(moved[name]), len(redraws) - since[0]))
        since[0] = len(redraws)

    ex.update = counted
    try:
        run_moves(ex, n, after)
    finally:
        del ex.update
    return seen


def _assert_every_widget_moved_to_its_ends(ex: Explorer, seen: dict, n: int) -> None:
    assert set(seen) == set(ex.controls) | set(type(ex).EXTRA_MOVES)
    for name, w in moved_widgets(ex).items():
        states = [s for s, _ in seen[name]]
        drawn = [d for _, d in seen[name][1:]]
        assert len(drawn) == n and any(drawn), (name, drawn)  # moved, and the explorer redrew
        if isinstance(w, (widgets.IntSlider, widgets.FloatSlider)):
            assert {w.min, w.max} <= set(states[1:]), (name, states)
        elif hasattr(w, "options"):
            assert set(w.options) <= set(states[1:]), (name, states)
        elif isinstance(w, (widgets.Text, widgets.Textarea)):
            assert set(type(ex).SAMPLE_TEXTS[name]) <= set(states[1:]), (name, states)
        elif isinstance(w, (widgets.Checkbox, widgets.ToggleButton)):
            assert set(states[1:]) == {True, False}, (name, states)
        elif isinstance(w, widgets.Button):
            assert all(drawn), (name, drawn)  # every click redrew
        elif isinstance(w, widgets.Box):  # every child moved at least once
            changed = {k for a, b in zip(states, states[1:]) for k in range(len(b)) if a[k] != b[k]}
            assert changed == set(range(len(w.children))), (name, changed)


def test_the_lessons_explorers_are_every_explorer_of_the_course():
    assert len(FACTORIES) >= 10, sorted(FACTORIES)
    _UNMOVED.update((name, make()) for name, make in FACTORIES.items())
    built = {type(widget.explorer) for widget in _UNMOVED.values()}
    course = {c for c in _subclasses(Explorer) if c.__module__.startswith("amp_lessons.")}
    assert built == course, built ^ course


@pytest.mark.parametrize("name", list(FACTORIES))
def test_every_explorer_is_an_explorer_and_takes_its_extremes(name):
    """Every control (and every widget the explorer's EXTRA_MOVES names) is moved by the scripted moves, to the ends
    of a slider, to every option of a menu, to every sample text of a text box; the explorer never raises and shows
    a read-out and a picture after each move; measure_update_ms times each of them."""
    ex = _fresh(name).explorer
    assert isinstance(ex, Explorer) and ex.widget.explorer is ex and is_png(ex.image)
    assert ex.controls, name
    start = {k: w.value for k, w in ex.controls.items()}
    n = full_cycle(ex)
    _assert_every_widget_moved_to_its_ends(ex, _drive(ex, n), n)
    assert {k: w.value for k, w in ex.controls.items()} == start  # set back after each widget's moves
    times = measure_update_ms(ex.widget, n=1)
    assert set(times) == set(ex.controls) | set(type(ex).EXTRA_MOVES)
    assert all(0 < t["median"] <= t["max"] for t in times.values())
    with pytest.raises(ValueError, match="no control 'nonsense'"):
        ex.set(nonsense=1)


class Grown(Counting):
    """The test explorer with one control of every kind added, a button and a box of toggle buttons: their moves
    come from their kinds, with no code for them in the scripted moves."""

    SAMPLE_TEXTS = {"label": ("0", "-1e39", "not a number")}
    EXTRA_MOVES = ("again", "bits")

    def __init__(self):
        self.again = widgets.Button(description="again")
        self.again.on_click(lambda _: self.update())
        self.bits = widgets.HBox([widgets.ToggleButton(False) for _ in range(3)])
        more = dict(
            flag=widgets.Checkbox(False),
            label=widgets.Text("1"),
            pick=widgets.ToggleButtons(options=["p", "q", "r"]),
            size=widgets.SelectionSlider(options=[1, 2, 4, 8], value=2),
            shade=widgets.RadioButtons(options=["dark", "light"]),
            count=widgets.IntSlider(3, min=-7, max=40, step=3),
        )
        super().__init__(more)
        for b in self.bits.children:
            self.watch(b, self._on_change)


def test_a_control_added_to_an_explorer_gets_moves_from_its_kind():
    ex = Grown()
    n = full_cycle(ex)
    assert n == 4  # the selection slider's options
    seen = _drive(ex, n)
    _assert_every_widget_moved_to_its_ends(ex, seen, n)
    # the int slider: lo..hi..lo, on its steps counted from its minimum (-7 + 8 x 3), its ends exactly
    assert [s for s, _ in seen["count"][1:]] == [17, 40, 17, -7]
    assert set(measure_update_ms(ex, n=1)) == {"a", "b", "menu", "flag", "label", "pick", "size", "shade", "count",
                                               "again", "bits"}  # fmt: skip


def test_scripted_moves_refuse_what_they_cannot_move():
    with pytest.raises(TypeError, match="text box 'note' but no sample texts.*SAMPLE_TEXTS"):
        measure_update_ms(Counting({"note": widgets.Text("x")}))
    with pytest.raises(TypeError, match="color is a ColorPicker: no scripted move"):
        measure_update_ms(Counting({"color": widgets.ColorPicker()}))

    class Naming(Counting):
        EXTRA_MOVES = ("draws",)

    with pytest.raises(TypeError, match="EXTRA_MOVES names 'draws', which is not a widget"):
        measure_update_ms(Naming())
    with pytest.raises(TypeError, match="VBox"):
        measure_update_ms(widgets.VBox())
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=f"n must be a positive int, got {bad!r}"):
            measure_update_ms(Counting(), n=bad)
