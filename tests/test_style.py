"""Tests of amp_lessons.style: one local style file, fixed colours per format."""

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from amp_lessons.formats import FORMATS
from amp_lessons.style import FORMAT_COLORS, STYLE_PATH, format_color, lab_theme, theme, use_style


def test_style_file_is_local_and_applies():
    assert STYLE_PATH.is_file() and STYLE_PATH.parent.name == "amp_lessons"
    assert "http" not in STYLE_PATH.read_text()
    with matplotlib.rc_context():
        use_style()
        assert plt.rcParams["axes.grid"] is True
        assert plt.rcParams["font.size"] == 11


def test_style_leaves_layout_to_each_figure():
    """No layout engine in the style: a notebook's fig.tight_layout() must not warn."""
    with matplotlib.rc_context():
        use_style()
        fig, ax = plt.subplots()
        fig.tight_layout()


def test_format_colors_fixed_and_distinct():
    assert set(FORMAT_COLORS) == set(FORMATS)
    assert len(set(FORMAT_COLORS.values())) == len(FORMAT_COLORS)
    assert format_color("bf16") == FORMAT_COLORS["bf16"]
    assert format_color(FORMATS["fp16"]) == FORMAT_COLORS["fp16"]


def test_format_color_fallback_is_stable_and_unused():
    c = format_color("my_e3m4")
    assert c == format_color("my_e3m4") and c not in FORMAT_COLORS.values()


def test_projector_mode_raises_explorer_resolution_and_type_and_switches_back():
    from amp_lessons._explorer import Picture
    from amp_lessons.style import PROJECTOR_DPI, PROJECTOR_MAX_WIDTH_PX, explorer_dpi, projector_mode

    with matplotlib.rc_context():
        use_style()
        assert not projector_mode() and explorer_dpi() == 80
        screen = Picture((10, 4)).canvas.get_width_height()
        try:
            use_style(projector=True)
            assert projector_mode() and explorer_dpi() == PROJECTOR_DPI >= 150
            assert plt.rcParams["font.size"] > 11 and plt.rcParams["axes.labelsize"] > 12
            assert plt.rcParams["figure.dpi"] == PROJECTOR_DPI
            # an explorer's picture: at most PROJECTOR_MAX_WIDTH_PX wide at twice the screen's resolution, its shape
            # kept, so that it is shown 1:1 with its type in points (as large as the room needs)
            projector = Picture((10, 4)).canvas.get_width_height()
            assert screen == (800, 320) and projector == (PROJECTOR_MAX_WIDTH_PX, 416) == (1040, 416)
        finally:
            use_style()
        assert not projector_mode() and explorer_dpi() == 80 and plt.rcParams["font.size"] == 11


def test_style_context_undoes_the_style_but_keeps_interactive_mode():
    """What a backend switches on while a course plot draws (the inline backend, loaded by the first figure of a
    session, turns interactive mode on) stays on: otherwise no later figure would be shown."""
    from amp_lessons.style import style_context

    was = matplotlib.is_interactive()
    try:
        matplotlib.interactive(False)
        with matplotlib.rc_context({"font.size": 7}):
            with style_context():
                assert plt.rcParams["font.size"] == 11
                matplotlib.interactive(True)
            assert plt.rcParams["font.size"] == 7 and matplotlib.is_interactive()
            with pytest.raises(ZeroDivisionError), style_context():  # an error inside changes nothing of this
                matplotlib.interactive(False)
                raise ZeroDivisionError
            assert plt.rcParams["font.size"] == 7 and not matplotlib.is_interactive()
    finally:
        matplotlib.interactive(was)


def test_every_figure_of_a_session_is_shown_inline(monkeypatch):
    """In a fresh Jupyter kernel with the inline backend: a course plot as the session's first figure, another
    course plot, then a learner's plain plt.plot each show a PNG (a regression test: after the first course plot,
    restoring rcParams switched interactive mode off and no later figure was displayed). The kernel starts as
    JupyterLab starts it: an MPLBACKEND forced on the environment (README, Troubleshooting) is not passed on."""
    monkeypatch.delenv("MPLBACKEND", raising=False)
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    cells = [
        "from amp_lessons import compiled\nfrom amp_lessons.style import use_style\nuse_style()",
        "compiled.plot_errors({'eager': (1e-2, 3e-3), 'compiled': (8e-3, 2e-3)});",
        'import matplotlib\nassert matplotlib.get_backend().endswith("backend_inline")',
        "compiled.plot_errors({'eager': (2e-2, 4e-3), 'compiled': (9e-3, 1e-3)});",
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3]);",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    # ipykernel makes the inline backend the default (MPLBACKEND), as in JupyterLab
    nbclient.NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    pngs = [sum("image/png" in o.get("data", {}) for o in c.outputs) for c in nb.cells]
    assert pngs == [0, 1, 0, 1, 1]


_THEME_FILE = ("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")


def _lab(tmp_path, monkeypatch, user=None, site=None):
    """JupyterLab's settings as a kernel finds them: the user's file (text) and a site's overrides.json (dict)."""
    monkeypatch.setenv("JUPYTERLAB_SETTINGS_DIR", str(tmp_path / "user"))
    monkeypatch.setenv("JUPYTERLAB_DIR", str(tmp_path / "app"))
    if user is not None:
        path = tmp_path.joinpath("user", *_THEME_FILE)
        path.parent.mkdir(parents=True)
        path.write_text(user)
    if site is not None:
        (tmp_path / "app" / "settings").mkdir(parents=True)
        (tmp_path / "app" / "settings" / "overrides.json").write_text(json.dumps(site))


@pytest.mark.parametrize(
    "user, site, expected",
    [
        (None, None, None),  # nothing set: JupyterLab shows its light default, the plots too
        ('{\n  // chosen in Settings > Theme\n  "theme": "JupyterLab Dark",\n}', None, "dark"),
        ('{"theme": "JupyterLab Light"}', None, "light"),
        ('{"theme": "JupyterLab Dark", "adaptive-theme": true}', None, None),  # follows the system: unknown here
        (None, {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}}, "dark"),  # the site's default
        (
            '{"theme": "JupyterLab Light"}',
            {"@jupyterlab/apputils-extension:themes": {"theme": "JupyterLab Dark"}},
            "light",
        ),
        ('{"theme": "JupyterLab Da', None, None),  # a file half written: as if unset
        ('{"theme": "Solarized Dark", "x": "a // not a comment"}', None, "dark"),
    ],
)
def test_lab_theme_reads_jupyterlabs_setting(tmp_path, monkeypatch, user, site, expected):
    _lab(tmp_path, monkeypatch, user, site)
    assert lab_theme() == expected


def test_plots_take_jupyterlabs_theme_and_explicit_themes_win(tmp_path, monkeypatch):
    _lab(tmp_path, monkeypatch, '{"theme": "JupyterLab Dark"}')
    try:
        use_style()  # a lesson's setup cell
        assert theme() == "dark" and matplotlib.colors.to_hex(plt.rcParams["figure.facecolor"]) == "#212121"
        use_style(theme="light")
        assert theme() == "light" and matplotlib.colors.to_hex(plt.rcParams["figure.facecolor"]) == "#ffffff"
        with pytest.raises(ValueError, match=r"theme='blue' is not a theme: use one of 'light', 'dark', 'auto'"):
            use_style(theme="blue")
    finally:
        use_style(theme="light")
