"""The presenter view (``make present``): delivery/presenter/explorers.ipynb served by Voilà with the course's
offline template, checked in a real Chromium on a 1920 x 1080 projector page, like the lessons: every
explorer renders without code, every control moves (extremes included) and redraws, no kernel or console
error, no request off this machine. Latency is printed beside JupyterLab's.

Projector mode, asserted: every visible text (body text, explorer labels, read-outs) is at least 22 px, so
that a screenshot seen at half size is still readable; every explorer picture is shown at most at its own
pixel size (never upscaled: drawn at projector resolution); one section (heading, explanation, explorer) is
shown at a time, and the Next/Previous buttons and the arrow keys step through all ten explorers.
``AMP_COURSE_UPDATE_IMGS=1`` refreshes the README's screenshot imgs/presenter_1920x1080.png."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import time

import harness
import pytest
import screen_checks
from lab_session import artifact, assert_page_clean, demo_names, exercise_demo

PRESENTER = harness.REPO / "delivery" / "presenter" / "explorers.ipynb"
LATENCY_SECTION = "browser: control-to-redraw latency in the Voila presenter view (median of the timed moves)"
PROJECTOR_SECTION = "browser: the Voila presenter view at 1920 x 1080 (projector mode)"
PROJECTOR = {"width": 1920, "height": 1080}
MIN_TEXT_PX = 22.0
# The README's screenshot of the presenter view: this explorer's screen (4: the magnitude explorer).
README_SHOT = (4, "presenter_1920x1080.png")
# In Voilà each explorer is the output of one cell, inside the page's rendered cells.
_DEMOS = "#rendered_cells .jp-OutputArea:has(.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons)"

# Visible = laid out (an element with display: none anywhere above it has no client rects).
_VISIBLE_DEMOS_JS = f"""
() => [...document.querySelectorAll('{_DEMOS}')].map((d, i) => d.getClientRects().length > 0 ? i : -1)
  .filter(i => i >= 0)
"""
_SECTION_JS = "() => document.body.dataset.ampSection"

# The controls of the explorer on screen: each one's state (a menu's choice, a slider's value, a toggle's pressed
# button), and a way to give one of them the focus as a presenter's click would.
_CONTROLS_JS = f"""
() => {{
  const demo = [...document.querySelectorAll('{_DEMOS}')].find(d => d.getClientRects().length > 0);
  const out = [];
  for (const el of demo.querySelectorAll('select, .noUi-handle, input[type=range], .widget-toggle-button')) {{
    out.push(el.tagName === 'SELECT' ? el.value : (el.getAttribute('aria-valuenow') ?? el.value ?? '')
             + (el.classList.contains('mod-active') ? '*' : ''));
  }}
  return out;
}}
"""
_FOCUS_CONTROL_JS = f"""
k => {{
  const demo = [...document.querySelectorAll('{_DEMOS}')].find(d => d.getClientRects().length > 0);
  const els = [...demo.querySelectorAll('select, .noUi-handle, input[type=range], .widget-toggle-button')];
  const el = els[k % els.length];
  el.focus();
  return document.activeElement === el ? el.tagName + '.' + el.className : null;
}}
"""

# Every visible text node under the rendered cells and the navigation: its element's computed font size.
_TEXT_SIZES_JS = """
() => {
  const out = {smallest: null, count: 0, labels: 0, readouts: 0, body: 0};
  for (const top of [document.getElementById('rendered_cells'), document.getElementById('amp-nav')]) {
    const walker = document.createTreeWalker(top, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      if (!n.textContent.trim() || !el || el.closest('script, style') || el.getClientRects().length === 0) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility === 'hidden') continue;
      const px = parseFloat(cs.fontSize);
      out.count += 1;
      if (el.closest('.widget-label, .widget-readout, .widget-toggle-buttons, .jupyter-button')) out.labels += 1;
      else if (el.closest('.widget-html-content')) out.readouts += 1;
      else if (el.closest('.jp-RenderedMarkdown')) out.body += 1;
      if (out.smallest === null || px < out.smallest.px)
        out.smallest = {px, text: n.textContent.trim().slice(0, 60), cls: el.className, tag: el.tagName};
    }
  }
  return out;
}
"""
# Each visible explorer picture: its natural (PNG) and displayed width, in CSS pixels.
_IMAGES_JS = f"""
() => [...document.querySelectorAll('{_DEMOS} img')].filter(i => i.getClientRects().length > 0)
  .map(i => ({{natural: i.naturalWidth, shown: i.getBoundingClientRect().width}}))
"""


# Webpack's words when a page's copy of a shared package does not satisfy what a loaded extension was built against
# ("Unsatisfied version 4.2.5 from _JUPYTERLAB.CORE_OUTPUT of shared singleton module @jupyterlab/notebook (required
# ^4.6.2)", "No satisfying version (^4.6.2) of shared module @jupyterlab/outputarea found in shared scope default.").
_MISMATCH = re.compile(
    r"Unsatisfied version \S+ .*?of shared singleton module (?P<m1>\S+) \(required (?P<r1>[^)]+)\)"
    r"|No satisfying version \((?P<r2>[^)]+)\) of shared module (?P<m2>\S+) found"
)
# The mismatches that the two extensions the page needs bring with the pinned packages, and no configuration removes:
# Voilà 0.5.13's page carries JupyterLab 4.2.5 (services 7.2.5, coreutils 6.2.5), while jupyterlab_widgets 3.0.17's
# @jupyter-widgets/jupyterlab-manager (static/remoteEntry.*.js) was built against ^4.6.2 and Voilà's own
# @voila-dashboards/widgets-manager8 against ^4.5.10. Webpack warns and uses the page's copy (none of them is a
# strict version); the widgets work (this test moves every control). Any other mismatch (another extension loaded,
# another pin) fails the test; when a Voilà release matches, this set empties and the test says so.
KNOWN_MISMATCHES = {
    ("@jupyterlab/console", "^4.6.2"),
    ("@jupyterlab/logconsole", "^4.6.2"),
    ("@jupyterlab/mainmenu", "^4.6.2"),
    ("@jupyterlab/notebook", "^4.6.2"),
    ("@jupyterlab/outputarea", "^4.6.2"),
    ("@jupyterlab/rendermime", "^4.6.2"),
    ("@jupyterlab/services", "^7.6.2"),
    ("@jupyterlab/settingregistry", "^4.6.2"),
    ("@jupyterlab/translation", "^4.6.2"),
    ("@jupyterlab/rendermime", "^4.5.10"),
    ("@jupyterlab/services", "^7.5.10"),
    ("@jupyterlab/statedb", "^4.5.10"),
    ("@jupyterlab/coreutils", "^6.5.10"),
}


class VersionMismatches:
    """Every console warning of a page that says a shared package's version does not satisfy an extension."""

    def __init__(self, page):
        self.found: set[tuple[str, str]] = set()
        self.texts: list[str] = []
        page.on("console", self._on_console)

    def _on_console(self, msg) -> None:
        m = _MISMATCH.search(msg.text)
        if m:
            self.texts.append(msg.text)
            self.found.add((m["m1"] or m["m2"], m["r1"] or m["r2"]))


def test_make_present_and_the_tests_start_voila_alike():
    """`make present` (README; its recipe in delivery/delivery.mk) serves the page this test checks, with the options
    the tests' server gets (harness.VOILA_OPTIONS): the same notebook, template and template folder, on localhost."""
    lines = (harness.REPO / "delivery" / "delivery.mk").read_text(encoding="utf-8").splitlines()
    recipe = lines[lines.index(next(x for x in lines if x.startswith("present:"))) + 1]
    args = shlex.split(recipe)
    assert f"--template={harness.VOILA_TEMPLATE}" in args, recipe
    assert [a for a in args if a.startswith("--VoilaConfiguration.")] == harness.VOILA_OPTIONS, recipe
    assert f"JUPYTER_PATH={harness.VOILA_JUPYTER_PATH.relative_to(harness.REPO)}" in args, recipe
    assert str(PRESENTER.relative_to(harness.REPO)) in args and "--Voila.ip=127.0.0.1" in args, recipe
    assert (harness.VOILA_JUPYTER_PATH / "voila" / "templates" / harness.VOILA_TEMPLATE / "index.html.j2").exists()
    assert "\ninclude delivery/delivery.mk\n" in (harness.REPO / "Makefile").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def voila_server(chromium_path):
    server = harness.Server("voila", [PRESENTER], notebook=PRESENTER.name)
    yield server
    server.stop()


def check_projector_screen(page, n: int, figure) -> None:
    """Screen ``n`` (explorer ``n - 1``): it alone is shown, its text is large, its pictures are not upscaled."""
    assert page.evaluate(_SECTION_JS) == str(n)
    visible = page.evaluate(_VISIBLE_DEMOS_JS)
    assert visible == [n - 1], f"screen {n}: explorers {visible} visible, expected only explorer {n - 1}"
    sizes = page.evaluate(_TEXT_SIZES_JS)
    assert sizes["labels"] + sizes["readouts"] > 0 and sizes["body"] > 0, f"screen {n}: texts not found: {sizes}"
    smallest = sizes["smallest"]
    figure(PROJECTOR_SECTION, f"screen {n}: smallest text", smallest["px"], "px")
    assert smallest["px"] >= MIN_TEXT_PX, f"screen {n}: text under {MIN_TEXT_PX} px: {smallest}"
    images = page.evaluate(_IMAGES_JS)
    assert images, f"screen {n}: no explorer picture visible"
    for im in images:
        assert im["natural"] >= im["shown"] - 0.5, f"screen {n}: a picture is upscaled: {im}"
    figure(
        PROJECTOR_SECTION,
        f"screen {n}: picture pixels per shown pixel",
        min(i["natural"] / i["shown"] for i in images),
        "x",
    )


_THEME_JS = "() => ({name: document.body.dataset.jpThemeName, light: document.body.dataset.jpThemeLight})"
_KERNEL_ID_JS = "() => JSON.parse(document.getElementById('jupyter-config-data').textContent).kernelId"
_ALL_DRAWN_JS = (
    f"n => document.querySelectorAll('{_DEMOS} img').length >= n "
    "&& getComputedStyle(document.getElementById('rendered_cells')).display !== 'none'"
)
# The screens whose pictures the room's checks are about, saved per theme (presenter-<theme>-screen<n>.png).
SHOTS = (2, 3, 5, 6, 7, 10)
ROOM_SECTION = "browser: the Voila presenter's screens at 1920 x 1080, as the room sees them"
# The opening state of screen 3: the course's TF32 model rounds to nearest, ties to even.
OPENING_CONTROLS = {3: "nearest_even"}


class Room:
    """The room's checks of every screen of one page (screen_checks: (a) legends and labels inside the picture,
    (b) controls wide enough, (c) everything on screen, (d) picture text large enough, (e) dark pictures in the
    dark theme), measured at each explorer's opening state and kept until :meth:`verdict`."""

    def __init__(self, page, server, theme: str, figure):
        self.page, self.theme, self.figure = page, theme, figure
        kernel = screen_checks.Kernel(page.evaluate(_KERNEL_ID_JS), server.home / "jupyter-runtime")
        try:
            self.layouts = list(kernel.layouts().values())  # the explorers in the order the notebook made them
        finally:
            kernel.close()
        self.failures: list[str] = []

    def check(self, n: int, demo) -> None:
        self.page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")  # fit()
        screen = screen_checks.measure(demo)
        found = screen_checks.problems(screen, self.layouts[n - 1], presenter=True, dark=self.theme == "dark")
        if n in OPENING_CONTROLS and OPENING_CONTROLS[n] not in self.page.evaluate(_CONTROLS_JS):
            found["a"].append(f"opens with {self.page.evaluate(_CONTROLS_JS)}, not {OPENING_CONTROLS[n]!r}")
        for rule, texts in found.items():
            self.failures += [f"{self.theme} screen {n} ({rule}): {t}" for t in texts]
        if screen["sliders"]:
            self.figure(
                ROOM_SECTION,
                f"{self.theme} screen {n}: narrowest slider track",
                min(s["px"] for s in screen["sliders"]),
                "px",
            )
        layout = self.layouts[n - 1]
        if layout and screen["pictures"]:
            px = min(t["px"] for t in layout["texts"]) * screen["pictures"][0]["scale"]
            self.figure(ROOM_SECTION, f"{self.theme} screen {n}: smallest picture text", px, "px")
        if n in SHOTS:
            self.page.screenshot(path=artifact(f"presenter-{self.theme}-screen{n}.png"))

    def verdict(self) -> None:
        assert not self.failures, f"{len(self.failures)} failures of the room's checks:\n" + "\n".join(self.failures)


def test_presenter_page_shows_every_explorer_and_each_responds(browser, voila_server, figure):
    expected = demo_names(PRESENTER)
    assert len(expected) == 10, expected  # one per explorer of the course
    page = browser.new_page(viewport=PROJECTOR)
    console = harness.ConsoleLog(page)
    mismatches = VersionMismatches(page)
    kernel = harness.KernelMessages(page)
    remote = harness.RemoteRequests(page)
    extensions = set()
    page.on(
        "request",
        lambda r: (
            extensions.add(m[1]) if (m := re.search(r"/voila/labextensions/(@[^/]+/[^/]+|[^@/]+)/", r.url)) else None
        ),
    )
    try:
        t0 = time.perf_counter()
        page.goto(voila_server.url("/"), wait_until="commit")  # (the page streams as its cells run: waited below)
        page.wait_for_function(_ALL_DRAWN_JS, arg=len(expected), timeout=180_000, polling=200)
        figure(LATENCY_SECTION, "page load until every explorer is drawn", time.perf_counter() - t0, "s")
        # Only the extensions that draw the widgets (harness.VOILA_OPTIONS), and no version mismatch but the known ones.
        assert extensions == {"@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"}, extensions
        unknown = mismatches.found - KNOWN_MISMATCHES
        assert not unknown, f"version mismatches beyond the known ones: {sorted(unknown)}\n" + "\n".join(
            mismatches.texts
        )
        gone = KNOWN_MISMATCHES - mismatches.found
        assert not gone, f"these known version mismatches are gone: remove them from KNOWN_MISMATCHES: {sorted(gone)}"
        figure(LATENCY_SECTION, "console warnings: shared package version mismatches", len(mismatches.texts), "")
        # dark is the presenter's theme (its notebook's metadata, voila.theme; README: "?theme=light" for the light one)
        assert page.evaluate(_THEME_JS) == {"name": "JupyterLab Dark", "light": "false"}
        text = page.inner_text("body")
        assert "import " not in text and "widgets." not in text, "Voila shows code; the presenter view hides it"
        for bad in ("Error displaying widget", "Traceback", "Error rendering"):
            assert bad not in text, f"the presenter page shows {bad!r}"
        demos = page.query_selector_all(_DEMOS)
        assert len(demos) == len(expected), f"{len(demos)} explorers rendered, expected {expected}"

        # The title screen, then with the Next button every explorer in turn, one at a time.
        assert page.evaluate(_SECTION_JS) == "0" and page.evaluate(_VISIBLE_DEMOS_JS) == []
        assert page.is_disabled("#amp-prev")
        page.screenshot(path=artifact("presenter-title.png"))
        room = Room(page, voila_server, "dark", figure)
        for n in range(1, len(expected) + 1):
            page.click("#amp-next")
            check_projector_screen(page, n, figure)
            room.check(n, demos[n - 1])
            i = n - 1
            shot = artifact(f"presenter-screen{n}.png")
            page.screenshot(path=shot)
            if os.environ.get("AMP_COURSE_UPDATE_IMGS") == "1" and n == README_SHOT[0]:
                shutil.copyfile(shot, harness.REPO / "imgs" / README_SHOT[1])
            exercise_demo(page, demos[i], "presenter", i, expected[i], kernel, figure, LATENCY_SECTION)
        assert page.is_disabled("#amp-next")
        # Previous steps back through them all; so do the arrow keys (pressed on the page, not on a control).
        for n in range(len(expected) - 1, 0, -1):
            page.click("#amp-prev")
            assert page.evaluate(_VISIBLE_DEMOS_JS) == [n - 1], f"Previous: screen {n} is not explorer {n - 1}"
        page.click("#amp-prev")
        assert page.evaluate(_SECTION_JS) == "0"
        page.evaluate("() => document.activeElement && document.activeElement.blur()")
        for n in range(1, len(expected) + 1):
            page.keyboard.press("ArrowRight")
            assert page.evaluate(_VISIBLE_DEMOS_JS) == [n - 1], f"ArrowRight: screen {n} is not explorer {n - 1}"
        page.keyboard.press("ArrowLeft")
        assert page.evaluate(_VISIBLE_DEMOS_JS) == [len(expected) - 2]
        # A clicker's keys change the screen even when a control has the focus (the presenter touched a slider or
        # a menu), and leave that control as it was.
        page.keyboard.press("Home")
        for n in range(1, len(expected) + 1):
            page.keyboard.press("PageDown")
            assert page.evaluate(_VISIBLE_DEMOS_JS) == [n - 1], f"PageDown: screen {n} is not explorer {n - 1}"
            for k, key in enumerate(("PageDown", "ArrowRight", " ", "ArrowDown")):
                before = page.evaluate(_CONTROLS_JS)
                focused = page.evaluate(_FOCUS_CONTROL_JS, k)
                assert focused, f"screen {n}: no control of explorer {expected[n - 1]} takes the focus"
                page.keyboard.press(key)
                assert page.evaluate(_VISIBLE_DEMOS_JS) == ([n] if n < len(expected) else [n - 1]), (
                    f"screen {n}: {key!r} with the focus on {focused} did not change the screen"
                )
                if n < len(expected):
                    page.keyboard.press("PageUp")
                    assert page.evaluate(_VISIBLE_DEMOS_JS) == [n - 1], f"screen {n}: PageUp did not come back"
                assert page.evaluate(_CONTROLS_JS) == before, f"screen {n}: {key!r} moved {focused}"
        assert_page_clean("presenter view", kernel, console, remote)
        room.verdict()
    finally:
        page.close()


def test_the_light_theme_is_one_address_away_and_fits_the_room(browser, voila_server, figure):
    """The README's promise: the presenter is dark, and ``?theme=light`` gives the light theme, pre-heated as well
    (run after the dark page, which took the first pre-heated kernel: this one gets the next); every screen passes
    the room's checks there too."""
    page = browser.new_page(viewport=PROJECTOR)
    try:
        t0 = time.perf_counter()
        page.goto(voila_server.url("/?theme=light"), wait_until="commit")
        page.wait_for_function(_ALL_DRAWN_JS, arg=10, timeout=180_000, polling=200)
        figure(LATENCY_SECTION, "page load until every explorer is drawn, ?theme=light", time.perf_counter() - t0, "s")
        assert page.evaluate(_THEME_JS) == {"name": "JupyterLab Light", "light": "true"}
        room = Room(page, voila_server, "light", figure)  # (after the kernel drew its pictures for the light page)
        page.wait_for_timeout(300)  # (their last PNGs on their way to the page)
        demos = page.query_selector_all(_DEMOS)
        for n in range(1, len(demos) + 1):
            page.click("#amp-next")
            room.check(n, demos[n - 1])
        room.verdict()
    finally:
        page.close()
