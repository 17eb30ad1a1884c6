"""What one learner action costs on an explorer of the course, timed in-process: scripted moves of every control the
explorer declares (:attr:`amp_lessons._explorer.Explorer.controls`) and of the widgets it names in ``EXTRA_MOVES``,
derived from each widget's kind, which ``measure_update_ms`` times. Test and benchmark tooling, kept out of the
teaching package: the explorers' tests use it, benchmarks/bench_widgets.py reports the figures.

The moves of one widget, by its kind (a move sets the widget's value or clicks it, as a learner does; the
explorer's observers redraw):

- an int or float slider: swept from its minimum to its maximum and back (lo..hi..lo, both reached exactly);
- a menu, toggle buttons, radio buttons or a selection slider: every option in turn, from the one after the shown one;
- a checkbox or a toggle button: flipped;
- a text box: the explorer's ``SAMPLE_TEXTS[name]`` in turn;
- a button: clicked;
- a box: its enabled children in turn, each moved by its kind.

The only per-explorer data is declared on the explorer's class (``SAMPLE_TEXTS``, ``EXTRA_MOVES``, ``COLD_MOVES``);
a control added to an explorer gets its moves from its kind."""

from __future__ import annotations

import statistics
import time

import ipywidgets as widgets

from amp_lessons._explorer import Explorer


def _sweep(w, i: int, n: int):
    """The slider position of move ``i`` of ``n``: lo..hi in ``n // 2`` moves, then back to lo, on the slider's
    steps (move ``n // 2 - 1`` is the maximum, move ``2 * (n // 2) - 1`` the minimum, both exactly)."""
    lo, hi = w.min, w.max
    half = max(1, n // 2)
    k = (i + 1) % (2 * half)
    t = min(k, 2 * half - k) / half  # 0..1..0
    if t == 0.0:
        return lo
    if t == 1.0:
        return hi
    step = w.step if w.step else (hi - lo) / half
    v = lo + round(t * (hi - lo) / step) * step
    v = min(max(v, lo), hi)
    return int(v) if isinstance(w, widgets.IntSlider) else round(v, 12)


def _move(ex: Explorer, name: str, w, i: int, n: int):
    """The ``i``-th move of widget ``w`` (control or extra widget ``name`` of ``ex``): a function of no argument."""
    if isinstance(w, widgets.Button):
        return w.click
    if isinstance(w, widgets.Box):
        enabled = [c for c in w.children if not getattr(c, "disabled", False)]
        if not enabled:
            raise ValueError(f"{type(ex).__name__}.{name}: no child of the box can be moved (all are disabled)")
        child = enabled[i % len(enabled)]
        return _move(ex, f"{name}[{w.children.index(child)}]", child, i // len(enabled), n)
    if isinstance(w, (widgets.IntSlider, widgets.FloatSlider)):
        value = _sweep(w, i, n)
    elif isinstance(w, widgets.widget_selection._Selection):  # Dropdown, ToggleButtons, RadioButtons, SelectionSlider
        options = list(w._options_values)  # (the values of (label, value) options)
        value = options[(options.index(w.value) + 1) % len(options)]
    elif isinstance(w, (widgets.Checkbox, widgets.ToggleButton)):
        value = not w.value
    elif isinstance(w, (widgets.Text, widgets.Textarea)):
        samples = tuple(ex.SAMPLE_TEXTS.get(name, ()))
        if not samples:
            raise TypeError(
                f"{type(ex).__name__} has a text box {name!r} but no sample texts for it: declare "
                f"SAMPLE_TEXTS = {{{name!r}: (...)}} on the class"
            )
        value = samples[i % len(samples)]
    else:
        raise TypeError(
            f"{type(ex).__name__}.{name} is a {type(w).__name__}: no scripted move for it (sliders, menus, toggle "
            "buttons, checkboxes, text boxes, buttons and boxes of them have one)"
        )

    def act():
        w.value = value

    return act


def moved_widgets(ex: Explorer) -> dict:
    """Every widget of ``ex`` that scripted moves move, by name: its controls, then its ``EXTRA_MOVES``."""
    moved = dict(ex.controls)
    for attr in type(ex).EXTRA_MOVES:
        w = getattr(ex, attr, None)
        if not isinstance(w, widgets.Widget):
            raise TypeError(f"{type(ex).__name__}.EXTRA_MOVES names {attr!r}, which is not a widget of the explorer")
        moved[attr] = w
    return moved


def full_cycle(ex: Explorer) -> int:
    """The number of moves per widget that reaches every slider's ends, every option of every menu, every
    sample text and every child of a box at least once."""
    need = 2
    for name, w in moved_widgets(ex).items():
        if isinstance(w, widgets.widget_selection._Selection):
            need = max(need, len(w.options))
        elif isinstance(w, (widgets.Text, widgets.Textarea)):
            need = max(need, len(ex.SAMPLE_TEXTS.get(name, ())))
        elif isinstance(w, widgets.Box):
            need = max(need, len(w.children))
    return need


def _prepare(ex: Explorer, name: str):
    """What runs, untimed, before each move of ``name``: emptying the caches ``COLD_MOVES`` names for it."""
    cache = type(ex).COLD_MOVES.get(name)
    if cache is None:
        return lambda: None
    store = getattr(ex, cache, None)
    if not hasattr(store, "clear"):
        raise TypeError(f"{type(ex).__name__}.COLD_MOVES names {cache!r} for {name!r}, which is not a cache")
    return store.clear


def run_moves(ex: Explorer, n: int, after=None) -> dict[str, list[float]]:
    """Make ``n`` moves of each widget of ``ex`` (:func:`moved_widgets`), one widget after the other; after each
    widget's moves its controls are set back to where they were. Returns each widget's move times (ms).
    ``after(name, i)``, if given, is called (untimed) after move ``i`` of widget ``name``, and ``after(name, None)``
    once its controls are set back."""
    start = {name: w.value for name, w in ex.controls.items()}
    result = {}
    for name, w in moved_widgets(ex).items():
        prepare = _prepare(ex, name)
        times = []
        for i in range(n):
            prepare()
            act = _move(ex, name, w, i, n)
            t0 = time.perf_counter()
            act()
            times.append(1e3 * (time.perf_counter() - t0))
            if after is not None:
                after(name, i)
        result[name] = times
        ex.set(**start)
        if after is not None:
            after(name, None)
    return result


def measure_update_ms(widget_box, n: int = 20) -> dict[str, dict[str, float]]:
    """Time ``n`` moves of each widget a learner moves on an explorer (its VBox or the controller), in-process:
    each move is what one learner action costs (readout, plot and PNG). Returns ``{name: {"median": ms, "max":
    ms}}``, one entry per control (its :meth:`~amp_lessons._explorer.Explorer.set` name) and per widget of the
    explorer's ``EXTRA_MOVES``. Leaves the controls where they were (other state, such as what a button did, stays)."""
    ex = getattr(widget_box, "explorer", widget_box)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(ex, Explorer):
        raise TypeError(
            f"expected an explorer widget of amp_lessons (e.g. amp_lessons.bits.bit_explorer()), got {type(widget_box).__name__}"
        )
    return {name: {"median": statistics.median(t), "max": max(t)} for name, t in run_moves(ex, n).items()}
