"""Checks one notebook as a learner meets it: opened in JupyterLab in a real Chromium, Run All, then every
interactive demo's controls moved (each slider to both extremes, every menu and toggle, the text boxes
with good and bad input) while the page and the kernel are watched for errors.

Asserted: opening the notebook does not mark it modified (JupyterLab rewrites metadata that differs from
its kernel's, e.g. ``language_info``); every code cell ran, no cell shows an error, the kernel sent no error
(widget callbacks' exceptions never reach a cell: they are read off the websocket), the browser console
shows no errors, every demo redraws when its controls move, and the kernel's peak memory stays under 3 GiB.
Every theme: every visible text in the output areas (explorer labels, read-outs, check results, tables) has
WCAG AA contrast against its effective background (https://www.w3.org/TR/WCAG21/#contrast-minimum: 4.5:1,
3:1 for large text), in JupyterLab's light theme after Run All and after the demos moved, and in its dark
theme (switched to once, at the end: no second Run All). Exercise starters untouched by Run All never say
"Not yet" (a neutral "Your turn"), and every explorer shows its failure state (an ``.amp-failure`` element)
at least once while its controls go to their extremes; these two and the unmodified opening are checked
last, so that the others report first.
Measured and printed (not asserted): control-to-redraw latency per demo, Run All time, kernel memory, the
worst contrast ratio per notebook and theme, whether each explorer showed ``.amp-failure``.
Saved as test artifacts (artifacts/browser/): a screenshot per notebook and per demo, and dark-theme ones;
``AMP_COURSE_UPDATE_IMGS=1`` also refreshes the README's screenshots in imgs/.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import time

import harness
import screen_checks

from amp_lessons.lessons import TOPICS
from tests.kernel_memory import peak_memory_bytes

LATENCY_SECTION = (
    "browser: control-to-redraw latency in JupyterLab, median of the timed moves "
    "(5 slider steps; the bit explorer: menu changes and bit flips); goal < 300 ms"
)
RUN_SECTION = "browser: JupyterLab Run All time and kernel peak memory"
CONTRAST_SECTION = "browser: worst WCAG contrast ratio of output text per notebook and theme (AA: 4.5, large text 3)"
FAILURE_SECTION = "browser: explorers that showed their failure state (.amp-failure) at their extremes (1 = seen)"
LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"
KERNEL_MEMORY_LIMIT = 3 * 1024**3

# README screenshots: (notebook stem, demo index) -> file in imgs/
README_SHOTS = {
    ("01_float_formats", 0): "explorer_bits.png",
    ("03_fp16_overflow_underflow", 0): "explorer_magnitude.png",
    ("05_loss_scaling", 1): "explorer_grad_scaler.png",
}

# README screenshots in JupyterLab's dark theme: notebook stem -> (what, file in imgs/); what is the index of
# a demo, or a text that the output area to shoot shows.
DARK_SHOTS = {
    "04_autocast_policies": ("CPU autocast, measured on this machine", "lesson04_dark.png"),
    "07_fp8": (0, "lesson07_dark.png"),
}

# Messages the kernel writes to stderr that are JupyterLab/ipywidgets housekeeping, not course errors:
# the widget manager probes for comms before ipywidgets is imported.
BENIGN_STDERR = re.compile(r"^(No such comm( target registered)?: )")
# stderr a lesson shows on purpose: lesson 11 turns on torch's graph_code log (the graph Dynamo captured) and shows
# Dynamo's warning about the graph break that .item() makes. Such a chunk must consist of records of torch's logging
# from torch/_dynamo ("V1125 19:43:56.515000 8086 torch/_dynamo/output_graph.py:2835] [1/0] ...") and be one of those
# two records, so that any other warning there (a recompile limit, say) still fails.
_TORCH_LOG_LINE = re.compile(r"^[VIWE]\d{4} [\d:.]+ \d+ torch/_dynamo/\S+:\d+\] \[[\d/_]+\]")
INTENDED_STDERR = {"11_compile.ipynb": (_TORCH_LOG_LINE, ("[__graph_code]", "Graph break from `Tensor.item()`"))}


def _intended(what: str, chunk: str) -> bool:
    line_re, records = INTENDED_STDERR.get(what, (None, ()))
    lines = [line for line in chunk.splitlines() if line.strip()]
    return line_re is not None and all(line_re.match(line) for line in lines) and any(r in lines[0] for r in records)


_NOTEBOOK_JS = "() => window.jupyterapp.shell.currentWidget"
_PATH_JS = "() => window.jupyterapp.shell.currentWidget.context.path"
_READY_JS = "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel?.status === 'idle'"
_CELLS_JS = """
() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const out = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    const outputs = c.outputs.toJSON();
    out.push({index: i, count: c.executionCount,
              errors: outputs.filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)});
  }
  return out;
}
"""
_DEMOS = (
    ".jp-Notebook .jp-CodeCell .jp-OutputArea:has(.widget-slider, .widget-dropdown, .widget-text, "
    ".widget-toggle-buttons)"
)
# The model ids of the widgets the notebook's cells show, in order, and the notebook's kernel.
_WIDGET_IDS_JS = """
() => {
  const cells = window.jupyterapp.shell.currentWidget.content.model.cells;
  const ids = [];
  for (let i = 0; i < cells.length; i++) {
    const c = cells.get(i);
    if (c.type !== 'code') continue;
    for (const o of c.outputs.toJSON()) {
      const view = o.data && o.data['application/vnd.jupyter.widget-view+json'];
      if (view) ids.push(view.model_id);
    }
  }
  return ids;
}
"""
_KERNEL_ID_JS = "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.id"
ROOM_SECTION = "browser: the lessons' explorers in JupyterLab at 1440 x 900, as a learner sees them"


# Right after opening, once JupyterLab has written what the kernel reports into the notebook's metadata (its
# NotebookPanel sets language_info when the kernel's info promise resolves, and kernelspec when its spec promise
# does, each in a handler attached when the kernel changed, before ours below), and a moment later: is the
# document modified?
_DIRTY_JS = """
async () => {
  const w = window.jupyterapp.shell.currentWidget;
  await w.context.ready;
  await w.sessionContext.ready;
  const kernel = w.sessionContext.session.kernel;
  await kernel.info;
  await kernel.spec;
  await new Promise(r => setTimeout(r, 200));
  return {dirty: w.context.model.dirty, metadata: w.context.model.metadata};
}
"""

_THEME_JS = """
async (theme) => {
  await window.jupyterapp.commands.execute('apputils:change-theme', {theme});
  return true;
}
"""
_NEXT_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
_THEME_READY_JS = """
(theme) => document.body.dataset.jpThemeName === theme
  && getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim() !== ''
  && (document.body.dataset.jpThemeLight === 'true') === (theme === 'JupyterLab Light')
"""

# WCAG 2.1 contrast of every visible text node in the notebook's output areas: its computed colour against
# the effective background (the ancestors' background colours, composited from the first opaque one up;
# the page's canvas is white under them all), text alpha and ancestor opacity composited too.
_CONTRAST_JS = """
(panel) => {
  const probe = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  function rgba(css) {
    let m = css.match(/^rgba?\\(([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = css.match(/^color\\(srgb ([^)]+)\\)$/);
    if (m) {
      const p = m[1].split(/[ \\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    probe.clearRect(0, 0, 1, 1); probe.fillStyle = '#000'; probe.fillStyle = css; probe.fillRect(0, 0, 1, 1);
    const d = probe.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  }
  const over = (top, bottom) => [0, 1, 2].map(i => top[3] * top[i] + (1 - top[3]) * bottom[i]).concat([1]);
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  function background(el) {
    const layers = [];
    let opacity = 1;
    for (let e = el; e; e = e.parentElement) {
      const cs = getComputedStyle(e);
      const bg = rgba(cs.backgroundColor);
      if (bg[3] > 0) layers.push(bg);
      if (bg[3] >= 1) break;
      opacity *= parseFloat(cs.opacity);
    }
    let bg = [255, 255, 255, 1];
    for (const layer of layers.reverse()) bg = over(layer, bg);
    return {bg, opacity};
  }
  const out = {count: 0, worst: null, failures: []};
  const seen = new Set();
  for (const area of panel.querySelectorAll('.jp-OutputArea')) {
    const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const el = n.parentElement;
      const text = n.textContent.trim();
      // (the prompts, "[13]:", are JupyterLab's own chrome, styled by its theme: not the course's output)
      if (!text || !el || seen.has(el) || el.closest('script, style, .jp-OutputPrompt')) continue;
      seen.add(el);
      const rects = el.getClientRects();
      const cs = getComputedStyle(el);
      if (rects.length === 0 || cs.visibility === 'hidden') continue;
      const {bg, opacity} = background(el);
      const fg = rgba(cs.color);
      const shown = over([fg[0], fg[1], fg[2], fg[3] * opacity], bg);
      const l1 = lum(shown), l2 = lum(bg);
      const ratio = (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
      const px = parseFloat(cs.fontSize);
      const large = px >= 24 || (parseInt(cs.fontWeight) >= 700 && px >= 18.66);
      const need = large ? 3 : 4.5;
      const item = {ratio: Math.round(ratio * 100) / 100, need, text: text.slice(0, 50), color: cs.color,
                    background: 'rgb(' + bg.slice(0, 3).map(Math.round).join(', ') + ')', px};
      out.count += 1;
      if (out.worst === null || ratio < out.worst.ratio) out.worst = item;
      if (ratio < need && out.failures.length < 12) out.failures.push(item);
    }
  }
  return out;
}
"""

# While a demo's controls move: did an element .amp-failure (an explorer at a failure state) ever show?
_FAILURE_WATCH_JS = """
(root) => {
  root.__ampFailure = !!root.querySelector('.amp-failure');
  new MutationObserver(() => { if (!root.__ampFailure && root.querySelector('.amp-failure')) root.__ampFailure = true; })
    .observe(root, {subtree: true, childList: true, attributes: true, characterData: true});
  return true;
}
"""

_EXPLORER_CALL = rf"\b(?:{'|'.join(TOPICS)})\.(\w+_explorer|format_designer)\("


def demo_names(path) -> list[str]:
    """The explorers a stored notebook shows, in order: its code cells calling ``<topic>.<name>_explorer(`` (or the
    format designer)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    names = []
    for c in nb["cells"]:
        m = re.search(_EXPLORER_CALL, "".join(c["source"])) if c["cell_type"] == "code" else None
        if m:
            names.append(m.group(1))
    return names


def artifact(name: str):
    harness.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return harness.ARTIFACTS / name


def exercise_demo(page, root, stem: str, i: int, explorer: str, kernel, figure, section: str) -> bool:
    """Every control of demo ``i`` of ``stem`` moved, extremes included; latency recorded. Returns whether the
    demo showed its failure state (an ``.amp-failure`` element) at least once meanwhile."""
    name = f"{stem} #{i} {explorer}"
    root.scroll_into_view_if_needed()
    shot = artifact(f"{stem}-demo{i}.png")
    root.screenshot(path=shot)
    if os.environ.get("AMP_COURSE_UPDATE_IMGS") == "1" and (stem, i) in README_SHOTS:
        shutil.copyfile(shot, harness.REPO / "imgs" / README_SHOTS[(stem, i)])
    demo = harness.DemoDriver(page, root, name, kernel=kernel)
    root.evaluate(_FAILURE_WATCH_JS)
    demo.exercise_sliders(latency_moves=5)
    demo.exercise_dropdowns(measure=not demo.latencies_ms)
    demo.exercise_toggle_buttons(measure=False)
    demo.exercise_bit_buttons(measure=True)  # the bit explorer's own "moves" (it has no slider)
    demo.exercise_texts(["1e5", "-0.0", "1e400", "not a number", ""])
    demo.exercise_buttons()
    assert demo.changes > 0, f"{name}: no control changed the picture or readout ({demo.actions})"
    assert demo.latencies_ms, f"{name}: no redraw could be timed ({demo.actions})"
    figure(section, f"{name}: median", statistics.median(demo.latencies_ms), "ms")
    figure(section, f"{name}: slowest of {len(demo.latencies_ms)}", max(demo.latencies_ms), "ms")
    sent_errors, _ = kernel.take()
    assert not sent_errors, f"{name}: the kernel raised while its controls moved: {sent_errors}"
    text = demo.text()
    assert "Traceback" not in text, f"{name}: shows a traceback:\n{text[-2000:]}"
    return root.evaluate("root => root.__ampFailure")


def set_theme(page, theme: str) -> None:
    """Switch JupyterLab's theme and wait until its colours apply."""
    page.evaluate(_THEME_JS, theme)
    page.wait_for_function(_THEME_READY_JS, arg=theme, timeout=30_000, polling=100)
    page.evaluate(_NEXT_FRAMES_JS)  # the stylesheet swap painted: two frames rendered after it applies


def light_for_the_next_page(lab_server) -> None:
    """JupyterLab's theme setting back to Light through the server's settings API, so that the next page opens light
    instead of switching (each test still checks that its page is light, and switches it if not)."""
    raw = json.dumps({"theme": LIGHT})
    lab_server.api("PUT", "/lab/api/settings/@jupyterlab/apputils-extension:themes", {"raw": raw})


def check_contrast(page, panel, notebook: str, theme: str) -> dict:
    """Every visible output text's WCAG contrast in ``theme``: the measurement (worst item, failures)."""
    result = panel.evaluate(_CONTRAST_JS)
    assert result["count"] > 0, f"{notebook}: no output text found to check ({theme})"
    return result


def assert_page_clean(what: str, kernel, console, remote) -> None:
    """No kernel error or stray stderr, no browser console error, no request off this machine."""
    errors, stderr = kernel.take()
    assert not errors, f"{what}: the kernel sent errors: {errors}"
    stderr = [s for s in stderr if not BENIGN_STDERR.match(s) and not _intended(what, s)]
    assert not stderr, f"{what}: the kernel wrote to stderr: {stderr}"
    console_errors = console.take()
    assert not console_errors, f"{what}: browser console errors: {console_errors}"
    assert not remote.urls, f"{what}: the page requested resources off this machine: {remote.urls}"


def save_dark_shot(page, panel, demos, stem: str, what, name: str) -> None:
    """A dark-theme screenshot of one demo (``what``: its index) or of the output area showing text ``what``."""
    if isinstance(what, int):
        target = demos[what]
    else:
        target = next((a for a in panel.query_selector_all(".jp-OutputArea") if what in a.inner_text()), None)
        assert target is not None, f"{stem}: no output shows {what!r} for the dark screenshot"
    target.scroll_into_view_if_needed()
    shot = artifact(f"{stem}-dark.png")
    target.screenshot(path=shot)
    if os.environ.get("AMP_COURSE_UPDATE_IMGS") == "1":
        shutil.copyfile(shot, harness.REPO / "imgs" / name)


def run_all(page) -> None:
    """Run > Run All Cells, as a learner does, and wait until every cell has been sent."""
    page.evaluate(
        "() => { window.__runAll = undefined; window.jupyterapp.commands"
        ".execute('notebook:run-all-cells').then(r => { window.__runAll = r; }); }"
    )
    page.wait_for_function("() => window.__runAll !== undefined", timeout=300_000, polling=200)


def check_notebook_in_jupyterlab(notebook, browser, lab_server, figure) -> None:
    stem = notebook.removesuffix(".ipynb")
    page = browser.new_page(viewport=harness.VIEWPORT)
    console = harness.ConsoleLog(page)
    kernel = harness.KernelMessages(page)
    remote = harness.RemoteRequests(page)
    try:
        # ?reset: a fresh workspace, so that only this notebook is open
        page.goto(lab_server.url(f"/lab/tree/{notebook}?reset"))
        page.wait_for_function(_READY_JS, timeout=120_000)
        assert page.evaluate(_PATH_JS) == notebook
        if page.evaluate("() => document.body.dataset.jpThemeName") != LIGHT:
            set_theme(page, LIGHT)  # (the theme is a user setting: an earlier test may have left it dark)

        # Opened, not yet run: the notebook must not show as modified (asserted at the end, with the other
        # checks of stored files: a notebook stored by an older scripts/run_notebooks.py fails only this one).
        opened = page.evaluate(_DIRTY_JS)

        # Run All, as a learner does (Run menu > Run All Cells), and wait for it to finish.
        t0 = time.perf_counter()
        run_all(page)
        run_all_s = time.perf_counter() - t0
        page.wait_for_function(_READY_JS, timeout=60_000)

        cells = page.evaluate(_CELLS_JS)
        not_run = [c["index"] for c in cells if c["count"] is None]
        errors = {c["index"]: c["errors"] for c in cells if c["errors"]}
        assert not errors, f"{notebook}: cells show errors: {errors}"
        assert not not_run, f"{notebook}: Run All left cells unexecuted (by index): {not_run}"
        body = page.inner_text(".jp-Notebook")
        for bad in ("Error displaying widget", "Error rendering", "Traceback (most recent call last)"):
            assert bad not in body, f"{notebook}: the page shows {bad!r}"
        page.screenshot(path=artifact(f"{stem}.png"))
        outputs = "\n".join(page.eval_on_selector_all(".jp-Notebook .jp-OutputArea", "as => as.map(a => a.innerText)"))
        # checked last (its subject, the checkers' neutral answer to untouched starters, may land later)
        not_yet = [line for line in outputs.splitlines() if "Not yet" in line]

        panel = page.evaluate_handle(_NOTEBOOK_JS + ".node").as_element()
        contrast = {LIGHT: [check_contrast(page, panel, notebook, LIGHT)]}

        # Every interactive demo: every control moved, extremes included.
        demos = panel.query_selector_all(_DEMOS)
        expected = demo_names(harness.REPO / "notebooks" / notebook)
        assert len(demos) == len(expected), (
            f"{notebook}: {len(demos)} interactive demos rendered, expected {len(expected)} ({expected})"
        )
        # The room's checks (screen_checks.py) of every explorer at its opening state, before its controls move.
        room = []
        if demos:
            kernel_client = screen_checks.Kernel(page.evaluate(_KERNEL_ID_JS), lab_server.home / "jupyter-runtime")
            try:
                layouts = kernel_client.layouts()
            finally:
                kernel_client.close()
            shown = [layouts[m] for m in page.evaluate(_WIDGET_IDS_JS) if m in layouts]
            assert len(shown) == len(demos), f"{notebook}: {len(shown)} explorers' pictures found, {len(demos)} shown"
            for i, (root, layout) in enumerate(zip(demos, shown)):
                root.scroll_into_view_if_needed()
                screen = screen_checks.measure(root)
                found = screen_checks.problems(screen, layout, presenter=False, dark=False)
                room += [f"#{i} {expected[i]} ({rule}): {t}" for rule, texts in found.items() for t in texts]
                if screen["sliders"]:
                    figure(
                        ROOM_SECTION,
                        f"{stem} #{i}: narrowest slider track",
                        min(x["px"] for x in screen["sliders"]),
                        "px",
                    )
        failure_seen = {}
        for i, root in enumerate(demos):
            seen = exercise_demo(page, root, stem, i, expected[i], kernel, figure, LATENCY_SECTION)
            failure_seen[f"#{i} {expected[i]}"] = seen
            figure(FAILURE_SECTION, f"{stem} #{i} {expected[i]}", float(seen), "seen")

        assert_page_clean(notebook, kernel, console, remote)

        # Every theme: the light theme again (the demos now show other states), then the dark one.
        contrast[LIGHT].append(check_contrast(page, panel, notebook, LIGHT))
        set_theme(page, DARK)
        contrast[DARK] = [check_contrast(page, panel, notebook, DARK)]
        if stem in DARK_SHOTS:
            save_dark_shot(page, panel, demos, stem, *DARK_SHOTS[stem])
        failures = []
        for theme, results in contrast.items():
            worst = min((r["worst"] for r in results), key=lambda w: w["ratio"])
            figure(CONTRAST_SECTION, f"{stem}: {theme}", worst["ratio"], ":1")
            failures += [f"{theme}: {f}" for r in results for f in r["failures"]]
        assert not failures, f"{notebook}: output text under WCAG AA contrast:\n" + "\n".join(failures)

        figure(RUN_SECTION, f"{stem}: Run All", run_all_s, "s")
        peaks = [peak_memory_bytes(pid) for pid in lab_server.kernel_pids()]
        peaks = [p for p in peaks if p is not None]
        if peaks:
            figure(RUN_SECTION, f"{stem}: kernel peak memory", max(peaks) / 2**20, "MiB")
            assert max(peaks) <= KERNEL_MEMORY_LIMIT, (
                f"{notebook}: kernel peak memory {max(peaks) / 2**30:.2f} GiB > 3 GiB"
            )

        late = []  # every one of these reported together
        if opened["dirty"] is not False:
            late.append(f"opening it marks it modified; JupyterLab's metadata now: {json.dumps(opened['metadata'])}")
        if not_yet:
            late.append(f"after Run All, untouched exercises say 'Not yet' (not 'Your turn'): {not_yet}")
        if room:
            late.append(
                f"{len(room)} failures of the room's checks (legends, labels, controls, fit):\n" + "\n".join(room)
            )
        missing = [name for name, seen in failure_seen.items() if not seen]
        if missing:
            late.append(f"explorers never showed .amp-failure at their extremes: {missing}")
        assert not late, f"{notebook}:\n" + "\n".join(late)
    finally:
        page.close()
        light_for_the_next_page(lab_server)
        for session in lab_server.api("GET", "/api/sessions") or []:
            lab_server.api("DELETE", f"/api/sessions/{session['id']}")


# Every picture in the notebook's output areas (plots and explorers): its background, the pixel at (1, 1).
_BACKGROUNDS_JS = """
(selector) => [...document.querySelectorAll(selector)].filter(img => img.naturalWidth > 0).map(img => {
  const c = document.createElement('canvas'); c.width = 4; c.height = 4;
  const g = c.getContext('2d'); g.drawImage(img, 0, 0, 4, 4, 0, 0, 4, 4);
  return [...g.getImageData(1, 1, 1, 1).data.slice(0, 3)];
})
"""
_PLOTS = ".jp-Notebook .jp-OutputArea-output:not(:has(.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons)) img"
_EXPLORER_PICTURES = (
    ".jp-Notebook .jp-OutputArea-output:has(.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons) img"
)
_LAB_THEME_SETTING = ("@jupyterlab", "apputils-extension", "themes.jupyterlab-settings")


def _set_lab_theme(page, lab_server, theme: str) -> None:
    """Switch JupyterLab's theme and wait until the setting is saved where a kernel reads it."""
    set_theme(page, theme)
    setting = lab_server.home.joinpath("lab-settings", *_LAB_THEME_SETTING)
    deadline = time.monotonic() + 30
    while not (setting.is_file() and f'"{theme}"' in setting.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, f"JupyterLab did not save the theme {theme!r} in {setting}"
        time.sleep(0.1)


def check_plots_follow_the_lab_theme(notebook, browser, lab_server) -> None:
    """Run ``notebook`` from the top with JupyterLab set to its dark theme: every picture (plots and explorers) has a
    dark background. Then switch to the light theme and run ``use_style()`` again, as lesson 00 tells learners to:
    the live explorers redraw light, the plots already drawn keep their dark background until their cell runs."""
    stem = notebook.removesuffix(".ipynb")
    page = browser.new_page(viewport=harness.VIEWPORT)
    try:
        page.goto(lab_server.url(f"/lab/tree/{notebook}?reset"))
        page.wait_for_function(_READY_JS, timeout=120_000)
        _set_lab_theme(page, lab_server, DARK)
        run_all(page)
        page.wait_for_function(_READY_JS, timeout=60_000)
        errors = {c["index"]: c["errors"] for c in page.evaluate(_CELLS_JS) if c["errors"]}
        assert not errors, f"{notebook}: cells show errors: {errors}"
        plots, pictures = page.evaluate(_BACKGROUNDS_JS, _PLOTS), page.evaluate(_BACKGROUNDS_JS, _EXPLORER_PICTURES)
        assert plots and pictures, f"{notebook}: {len(plots)} plots and {len(pictures)} explorer pictures shown"
        light = [rgb for rgb in plots + pictures if screen_checks._luminance(rgb) > 0.1]
        assert not light, f"{notebook}, JupyterLab Dark: pictures drawn on a light background: {light}"
        page.locator(_EXPLORER_PICTURES).first.scroll_into_view_if_needed()
        page.screenshot(path=artifact(f"{stem}-dark-run-all.png"))

        _set_lab_theme(page, lab_server, LIGHT)
        kernel = screen_checks.Kernel(page.evaluate(_KERNEL_ID_JS), lab_server.home / "jupyter-runtime")
        try:
            kernel.run("from amp_lessons.style import use_style\nuse_style()")
        finally:
            kernel.close()
        deadline = time.monotonic() + 30  # the explorers redraw in the kernel, then the page shows their new PNGs
        while any(rgb[0] <= 200 for rgb in page.evaluate(_BACKGROUNDS_JS, _EXPLORER_PICTURES)):
            assert time.monotonic() < deadline, f"{notebook}: the explorers stayed dark after use_style() in Light"
            time.sleep(0.2)
        kept = page.evaluate(_BACKGROUNDS_JS, _PLOTS)
        assert all(screen_checks._luminance(rgb) <= 0.1 for rgb in kept), f"{notebook}: a drawn plot changed: {kept}"
        page.locator(_EXPLORER_PICTURES).first.scroll_into_view_if_needed()
        page.screenshot(path=artifact(f"{stem}-light-after-use-style.png"))
    finally:
        page.close()
        light_for_the_next_page(lab_server)
        for session in lab_server.api("GET", "/api/sessions") or []:
            lab_server.api("DELETE", f"/api/sessions/{session['id']}")
