"""Checks one notebook as a learner meets it: opened in JupyterLab in a real Chromium, Run All, then every
interactive demo's controls moved (each slider to both extremes, every menu and toggle, the text boxes
with good and bad input) while the page and the kernel are watched for errors.

Asserted: every code cell ran, no cell shows an error, the kernel sent no error (widget callbacks'
exceptions never reach a cell: they are read off the websocket), the browser console shows no errors,
every demo redraws when its controls move, and the kernel's peak memory stays under 3 GiB.
Measured and printed (not asserted): control-to-redraw latency per demo, Run All time, kernel memory.
Saved as test artifacts (artifacts/browser/): a screenshot per notebook and per demo;
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

from tests.kernel_memory import peak_memory_bytes

LATENCY_SECTION = (
    "browser: control-to-redraw latency in JupyterLab, median of the timed moves "
    "(5 slider steps; the bit explorer: menu changes and bit flips); goal < 300 ms"
)
RUN_SECTION = "browser: JupyterLab Run All time and kernel peak memory"
KERNEL_MEMORY_LIMIT = 3 * 1024**3

# README screenshots: (notebook stem, demo index) -> file in imgs/
README_SHOTS = {
    ("01_float_formats", 0): "explorer_bits.png",
    ("03_fp16_overflow_underflow", 0): "explorer_magnitude.png",
    ("05_loss_scaling", 1): "explorer_grad_scaler.png",
}

# Messages the kernel writes to stderr that are JupyterLab/ipywidgets housekeeping, not course errors:
# the widget manager probes for comms before ipywidgets is imported.
BENIGN_STDERR = re.compile(r"^(No such comm( target registered)?: )")

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


_EXPLORER_CALL = (
    r"\b(?:bits|tf32|fp16|autocast|scaling|e2e|fp8|debug|distributed|micro|compiled)\.(\w+_explorer|format_designer)\("
)


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


def exercise_demo(page, root, stem: str, i: int, explorer: str, kernel, figure, section: str) -> None:
    """Every control of demo ``i`` of ``stem`` moved, extremes included; latency recorded."""
    name = f"{stem} #{i} {explorer}"
    root.scroll_into_view_if_needed()
    shot = artifact(f"{stem}-demo{i}.png")
    root.screenshot(path=shot)
    if os.environ.get("AMP_COURSE_UPDATE_IMGS") == "1" and (stem, i) in README_SHOTS:
        shutil.copyfile(shot, harness.REPO / "imgs" / README_SHOTS[(stem, i)])
    demo = harness.DemoDriver(page, root, name)
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


def assert_page_clean(what: str, kernel, console, remote) -> None:
    """No kernel error or stray stderr, no browser console error, no request off this machine."""
    errors, stderr = kernel.take()
    assert not errors, f"{what}: the kernel sent errors: {errors}"
    stderr = [s for s in stderr if not BENIGN_STDERR.match(s)]
    assert not stderr, f"{what}: the kernel wrote to stderr: {stderr}"
    console_errors = console.take()
    assert not console_errors, f"{what}: browser console errors: {console_errors}"
    assert not remote.urls, f"{what}: the page requested resources off this machine: {remote.urls}"


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

        # Run All, as a learner does (Run menu > Run All Cells), and wait for it to finish.
        t0 = time.perf_counter()
        page.evaluate(
            "() => { window.__runAll = undefined; window.jupyterapp.commands"
            ".execute('notebook:run-all-cells').then(r => { window.__runAll = r; }); }"
        )
        page.wait_for_function("() => window.__runAll !== undefined", timeout=300_000, polling=200)
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

        # Every interactive demo: every control moved, extremes included.
        panel = page.evaluate_handle(_NOTEBOOK_JS + ".node").as_element()
        demos = panel.query_selector_all(_DEMOS)
        expected = demo_names(harness.REPO / "notebooks" / notebook)
        assert len(demos) == len(expected), (
            f"{notebook}: {len(demos)} interactive demos rendered, expected {len(expected)} ({expected})"
        )
        for i, root in enumerate(demos):
            exercise_demo(page, root, stem, i, expected[i], kernel, figure, LATENCY_SECTION)

        assert_page_clean(notebook, kernel, console, remote)

        figure(RUN_SECTION, f"{stem}: Run All", run_all_s, "s")
        peaks = [peak_memory_bytes(pid) for pid in lab_server.kernel_pids()]
        peaks = [p for p in peaks if p is not None]
        if peaks:
            figure(RUN_SECTION, f"{stem}: kernel peak memory", max(peaks) / 2**20, "MiB")
            assert max(peaks) <= KERNEL_MEMORY_LIMIT, (
                f"{notebook}: kernel peak memory {max(peaks) / 2**30:.2f} GiB > 3 GiB"
            )
    finally:
        page.close()
        for session in lab_server.api("GET", "/api/sessions") or []:
            lab_server.api("DELETE", f"/api/sessions/{session['id']}")
