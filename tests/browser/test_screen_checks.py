"""The room's checks (screen_checks.py) on pictures and screens of known faults, without a browser: a legend
past the picture's edge, a legend over a label, narrow controls, a picture below the screen, small or dark-on-dark
text are found, with their sizes; and the base's own remedies (fit_inside, the dark theme) clear them."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest
import screen_checks
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from amp_lessons._explorer import fit_inside, picture_layout
from amp_lessons.style import use_style


def drawn(fig):
    fig.canvas.draw()
    return fig


def legend_right_of_axes(wide: bool = True):
    fig = Figure(figsize=(6, 3), dpi=100, layout="none")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.1, 0.15, 0.85, 0.75))
    ax.plot([0, 1], [0, 1], label="a label long enough to pass the edge" if wide else "short")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return drawn(fig)


def test_a_legend_past_the_edge_is_found_with_its_overflow_and_fit_inside_brings_it_in():
    fig = legend_right_of_axes()
    layout = picture_layout(fig)
    legend = [o for o in layout["outside"] if o["kind"] == "legend"]
    assert legend and legend[0]["by"] > 100, layout["outside"]  # right of an axes 85% wide: most of it outside
    assert fit_inside(fig)
    fig.canvas.draw()
    assert picture_layout(fig)["outside"] == []


def test_a_legend_over_a_label_is_found():
    fig = Figure(figsize=(6, 3), dpi=100, layout="none")
    FigureCanvasAgg(fig)
    ax = fig.add_axes((0.3, 0.15, 0.65, 0.75))
    ax.plot([0, 1], [0, 1], label="line")
    ax.set_yticks([0.5], ["fp32 row label"])
    ax.legend(loc="center left", bbox_to_anchor=(-0.45, 0.5))
    overlaps = picture_layout(drawn(fig))["overlaps"]
    assert [o["text"] for o in overlaps] == ["fp32 row label"] and overlaps[0]["area"] > 10


SCREEN = {
    "sliders": [{"label": "growth_interval", "px": 0}, {"label": "ok", "px": 300}],
    "texts": [{"label": "v", "room": 42, "need": 99, "value": "16.0"}],
    "menus": [{"label": "recipe", "room": 268, "need": 374, "value": "per-tensor delayed (history 16)"}],
    "boxes": [{"what": "IMG", "rect": [17, 645, 1232, 1131]}, {"what": "readout", "rect": [17, 200, 900, 600]}],
    "pictures": [{"natural": [1600, 640], "shown": [17, 645, 1232, 1131], "scale": 0.66, "corner": [255, 255, 255]}],
    "viewport": [1920, 1080],
    "nav": None,
}


def test_screen_faults_are_found_with_their_measures():
    layout = {"size": [1600, 640], "outside": [], "overlaps": [], "texts": [
        {"text": "fp32", "px": 20.0, "color": "#000000", "box_color": None, "in_legend": None}]}  # fmt: skip
    found = screen_checks.problems(SCREEN, layout, presenter=True, dark=True)
    assert len(found["b"]) == 3 and "0 px" in found["b"][0] and "42 px" in found["b"][1] and "268 px" in found["b"][2]
    assert len(found["c"]) == 1 and "bottom 1131" in found["c"][0]
    assert len(found["d"]) == 1 and "13.2 px on screen" in found["d"][0]
    assert len(found["e"]) == 1 and "not dark" in found["e"][0]  # a white picture (its black text reads fine)
    dark_picture = {**SCREEN, "pictures": [{**SCREEN["pictures"][0], "corner": [33, 33, 33]}]}
    found = screen_checks.problems(dark_picture, layout, presenter=True, dark=True)
    assert len(found["e"]) == 1 and "'fp32' #000000 at 1.3" in found["e"][0]  # black text on the dark picture
    # JupyterLab: the notebook scrolls (no bottom edge), picture text size and dark pictures are the presenter's
    lab = screen_checks.problems(SCREEN, layout, presenter=False, dark=False)
    assert not lab["c"] and not lab["d"] and not lab["e"] and len(lab["b"]) == 3


@pytest.fixture
def dark_then_light():
    with matplotlib.rc_context():
        use_style(theme="dark")
        yield
        use_style()


def test_the_dark_theme_draws_dark_with_readable_text_and_switches_back(dark_then_light):
    from amp_lessons._explorer import Picture
    from amp_lessons.style import recolor

    pic = Picture((6, 3))
    ax = pic.fig.add_subplot()
    ax.plot([0, 1], [0, 1], color="#000000", label="fp32")
    ax.text(0.5, 0.5, "grey note", color="#444444")
    ax.legend()
    pic.png()
    layout = picture_layout(pic.fig)
    corner = screen_checks._hex_rgb(layout["background"])
    assert screen_checks._luminance(corner) < 0.05
    assert min(screen_checks.contrast(screen_checks._hex_rgb(t["color"]), corner) for t in layout["texts"]) >= 4.5
    use_style(theme="light")  # the picture follows (recolor): white again, the note its own grey
    layout = picture_layout(pic.fig)
    assert layout["background"] == "#ffffff"
    assert {t["text"]: t["color"] for t in layout["texts"]}["grey note"] == "#444444"
    with pytest.raises(ValueError, match="theme='blue'"):
        recolor(pic.fig, "blue")
