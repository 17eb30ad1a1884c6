"""Real-browser test harness: Debian's Chromium driven by the ``playwright`` Python package against a
JupyterLab (or Voilà) server that the tests start themselves.

- The server runs on 127.0.0.1, a free port and a random token, over a temporary copy of the notebooks
  with a temporary HOME, Jupyter config/data/settings directories: autosave and settings never touch the
  repository or the user's own Jupyter set-up. It is stopped (process group) afterwards.
- Chromium is the system's (``/usr/bin/chromium``; ``AMP_COURSE_CHROMIUM`` overrides), launched with the
  flags that work offline (no background networking, no component updates); playwright's own browser download is never used.
- Without Chromium or playwright the browser tests are skipped with a clear message, except in CI
  (``CI=true``), where they must run and fail instead.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("AMP_COURSE_ARTIFACTS", REPO / "artifacts" / "browser"))

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
# The presenter page's offline Voila template (delivery/presenter/jupyter/voila/templates/amp-offline).
VOILA_TEMPLATE = "amp-offline"
VOILA_JUPYTER_PATH = REPO / "delivery" / "presenter" / "jupyter"
# Voilà's options beyond the template, the same as `make present` (delivery/tests/browser/test_voila_presenter.py checks
# that they match): only the two extensions that draw the widgets are loaded (Voilà would also load
# jupyterlab_pygments, code highlighting for a page that shows no code), and one kernel is kept pre-heated (the
# notebook already run when the page is asked for; Voilà starts the next one as soon as one is taken).
VOILA_OPTIONS = [
    '--VoilaConfiguration.extension_allowlist=["@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"]',
    "--VoilaConfiguration.preheat_kernel=True",
]
# A laptop's screen, as learners open the lessons (the room's checks of screen_checks.py run at this size).
VIEWPORT = {"width": 1440, "height": 900}
# Figures for the end-of-run summary travel in report.user_properties under this key (root conftest.py).
FIGURE_KEY = "amp-figure"


def lesson_files() -> list[Path]:
    return sorted((REPO / "notebooks").glob("*.ipynb"))


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def find_chromium() -> str | None:
    explicit = os.environ.get("AMP_COURSE_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def require_browser() -> str:
    """The Chromium executable; skip (fail in CI) when it or playwright is missing."""
    missing = []
    chromium = find_chromium()
    if chromium is None:
        missing.append(
            "Chromium (Debian: `sudo apt-get install chromium`; or set AMP_COURSE_CHROMIUM "
            "to a Chrome/Chromium executable)"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("the playwright Python package (`make setup` installs it)")
    if missing:
        message = "browser tests need " + " and ".join(missing)
        if in_ci():
            pytest.fail(message + "; CI=true, so they must run (.ci/run installs Chromium)", pytrace=False)
        pytest.skip(message)
    return chromium


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _isolated_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HOME=str(home),
        JUPYTER_CONFIG_DIR=str(home / "jupyter-config"),
        JUPYTER_DATA_DIR=str(home / "jupyter-data"),
        JUPYTER_RUNTIME_DIR=str(home / "jupyter-runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "lab-workspaces"),
        IPYTHONDIR=str(home / "ipython"),
        MPLCONFIGDIR=str(home / "mpl"),
        PYTHONUNBUFFERED="1",
    )
    # JupyterLab settings for a test: no news/update pop-up covering the page (it would also try
    # the network), every cell kept in the DOM (no windowing) so outputs can be inspected.
    user_settings = {
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
            "fetchNews": "false",
            "checkForUpdates": False,
        },
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    }
    for rel, value in user_settings.items():
        path = home / "lab-settings" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")
    return env


class Server:
    """A JupyterLab or Voilà server in its own process group, on 127.0.0.1 with a random token."""

    def __init__(self, kind: str, files: list[Path], notebook: str | None = None):
        if kind not in {"lab", "voila"}:
            raise ValueError(f"kind must be 'lab' or 'voila', got {kind!r}")
        self.kind = kind
        self.tmp = Path(tempfile.mkdtemp(prefix=f"amp-course-{kind}-"))
        self.root = self.tmp / "notebooks"
        self.root.mkdir()
        for f in files:
            shutil.copy2(f, self.root / f.name)
        self.home = self.tmp / "home"
        self.home.mkdir()
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.log_path = self.tmp / "server.log"
        env = _isolated_env(self.home)
        allow_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
        if kind == "lab":
            cmd = [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={self.token}",
                f"--ServerApp.root_dir={self.root}",
                "--LabApp.expose_app_in_browser=True",
                *allow_root,
            ]
        else:
            cmd = [
                sys.executable,
                "-m",
                "voila",
                str(self.root / notebook),
                "--no-browser",
                f"--port={self.port}",
                "--Voila.ip=127.0.0.1",
                f"--token={self.token}",
                f"--template={VOILA_TEMPLATE}",
                *VOILA_OPTIONS,
            ]
            env["JUPYTER_PATH"] = str(VOILA_JUPYTER_PATH)
        self._log = open(self.log_path, "w", encoding="utf-8")
        self.proc = subprocess.Popen(
            cmd, cwd=self.root, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.base = f"http://127.0.0.1:{self.port}"
        self._wait_ready()

    def _wait_ready(self, timeout: float = 90.0) -> None:
        """Until the server answers HTTP at all (any status: it is listening)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the {self.kind} server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(f"{self.base}/", timeout=2):
                    return
            except urllib.error.HTTPError:
                return
            except OSError:
                time.sleep(0.25)
        raise RuntimeError(f"the {self.kind} server did not answer within {timeout:.0f} s:\n{self.log()}")

    def url(self, path: str) -> str:
        sep = "&" if "?" in path else "?"
        return f"{self.base}{path}{sep}token={self.token}"

    def api(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url(path), data=data, method=method)
        with urllib.request.urlopen(req, timeout=30) as r:
            body = r.read()
        return json.loads(body) if body else None

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def kernel_pids(self) -> list[int]:
        """Kernels started by this server: its child processes running ipykernel."""
        pids = []
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                stat = (proc / "stat").read_text()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                cmdline = (proc / "cmdline").read_bytes()
            except (OSError, ValueError, IndexError):
                continue
            if ppid == self.proc.pid and b"ipykernel" in cmdline:
                pids.append(int(proc.name))
        return pids

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=20)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait(timeout=10)
        self._log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def launch_chromium(playwright, executable: str):
    return playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)


class ConsoleLog:
    """Every console error and uncaught page error of a page, with where it came from."""

    def __init__(self, page):
        self.errors: list[str] = []
        page.on("console", self._on_console)
        page.on("pageerror", lambda exc: self.errors.append(f"uncaught: {exc}"))

    def _on_console(self, msg) -> None:
        if msg.type == "error":
            loc = msg.location or {}
            self.errors.append(f"{msg.text} ({loc.get('url', '?')}:{loc.get('lineNumber', '?')})")

    def take(self) -> list[str]:
        errors, self.errors = self.errors, []
        return errors


# ---------------------------------------------------------------------------------------------------
# Driving one interactive demo (an output area holding widgets), in JupyterLab or Voilà alike.

# Watches a demo's output for redraws: the time of the first change of any kind and of the first
# new picture (an <img> whose src changes) after the control was touched (keydown/pointerdown/input/click): a
# dragged slider redraws while it moves, before the click that ends the drag.
_WATCH_JS = """
(root) => {
  const w = root.__amp = {t0: null, first: null, img: null};
  const start = () => { if (w.t0 === null) w.t0 = performance.now(); };
  for (const ev of ['keydown', 'pointerdown', 'change', 'click', 'input']) root.addEventListener(ev, start, true);
  new MutationObserver(records => {
    const now = performance.now();
    if (w.t0 === null) return;  // a late redraw of the previous action, before this one began: not this one's
    for (const r of records) {
      if (r.target.closest && r.target.closest('.widget-slider, .widget-dropdown, .widget-text')) continue;
      if (r.type === 'attributes' && r.attributeName !== 'src') continue;
      if (w.first === null) w.first = now;
      if (w.img === null && r.type === 'attributes' && r.target.tagName === 'IMG') w.img = now;
    }
  }).observe(root, {subtree: true, childList: true, characterData: true, attributes: true,
                    attributeFilter: ['src']});
  return true;
}
"""
_RESET_JS = "(root) => { Object.assign(root.__amp, {t0: null, first: null, img: null}); }"
_STATE_JS = "(root) => Object.assign({now: performance.now()}, root.__amp)"
_SIGNATURE_JS = """
(root) => JSON.stringify([
  [...root.querySelectorAll('img')].map(i => i.src),
  [...root.querySelectorAll('.widget-html-content, .widget-readout')].map(e => e.innerText)])
"""
_TEXT_JS = "(root) => root.innerText"
_NEXT_FRAMES_JS = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"


class DemoDriver:
    """Moves every control of one demo and records what the demo redraws.

    ``root`` is the element holding the demo's widgets; ``kernel`` the page's :class:`KernelMessages`. Each action
    waits until the kernel has answered (status idle) every widget message the action sent and two frames have
    rendered since; an action that sends none within ``no_change_s`` changed nothing the kernel draws.
    """

    def __init__(self, page, root, name: str, kernel: KernelMessages, no_change_s: float = 4.0):
        self.page, self.root, self.name, self.kernel = page, root, name, kernel
        self.no_change_s = no_change_s
        self.latencies_ms: list[float] = []
        self.changes = 0
        self.actions: list[str] = []
        # In the presenter view a slide key (arrows, Page Up/Down, Home/End) changes the screen even when a slider
        # has the focus, so there the sliders are moved as a presenter does with the mouse: dragging the handle.
        self.drag_sliders = bool(page.query_selector("#amp-nav"))
        root.evaluate(_WATCH_JS)

    def signature(self) -> str:
        return self.root.evaluate(_SIGNATURE_JS)

    def text(self) -> str:
        return self.root.evaluate(_TEXT_JS)

    def _settle(self, sent_before: int) -> dict:
        k, start = self.kernel, time.monotonic()
        while True:
            if k.sent > sent_before and not k.pending:
                sent = k.sent
                self.page.evaluate(_NEXT_FRAMES_JS)
                if k.sent == sent and not k.pending:
                    return self.root.evaluate(_STATE_JS)
            elif k.sent == sent_before and time.monotonic() - start > self.no_change_s:
                return self.root.evaluate(_STATE_JS)
            if time.monotonic() - start > 60.0:
                raise AssertionError(
                    f"{self.name}: the kernel did not answer within 60 s after {self.actions[-1]} (widget messages "
                    f"sent: {k.sent}, {k.sent - sent_before} of them by this action; unanswered: {len(k.pending)})"
                )
            self.page.wait_for_timeout(50)  # (a playwright call: the page's websocket frames are read meanwhile)

    def act(self, description: str, action, measure: bool = False) -> bool:
        """Run ``action`` (touches a control); True when the demo's pictures/readouts changed."""
        self.root.evaluate(_RESET_JS)
        before = self.signature()
        self.actions.append(description)
        sent_before = self.kernel.sent
        action()
        s = self._settle(sent_before)
        changed = self.signature() != before
        if changed:
            self.changes += 1
            if measure:
                deadline = time.monotonic() + 60.0
                while s["img"] is None and s["first"] is None and time.monotonic() < deadline:
                    # the redraw came after the no-change window (a busy machine): its time is still the latency
                    time.sleep(0.05)
                    s = self.root.evaluate(_STATE_JS)
                end = s["img"] if s["img"] is not None else s["first"]
                assert end >= s["t0"], f"{self.name}: {description}: a redraw timed before the action ({s})"
                self.latencies_ms.append(end - s["t0"])
                if os.environ.get("AMP_COURSE_TRACE"):
                    print(f"{self.name}: {description}: {end - s['t0']:.0f} ms")
        return changed

    # -- the controls ---------------------------------------------------------------------------
    def sliders(self):
        return self.root.query_selector_all(".widget-slider .noUi-handle")

    def _press(self, handle, key: str):
        def go():
            handle.focus()
            self.page.keyboard.press(key)

        def drag():
            track = handle.evaluate_handle("h => h.closest('.noUi-target')").as_element().bounding_box()
            box = handle.bounding_box()
            x0, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
            x1 = {
                "End": track["x"] + track["width"] + 20,
                "Home": track["x"] - 20,
                "ArrowRight": x0 + 0.12 * track["width"],
                "ArrowLeft": x0 - 0.12 * track["width"],
            }[key]
            self.page.mouse.move(x0, y)
            self.page.mouse.down()
            self.page.mouse.move(x1, y, steps=4)
            self.page.mouse.up()

        return drag if self.drag_sliders else go

    def exercise_sliders(self, latency_moves: int = 5) -> None:
        """Every slider to its maximum and its minimum; the first one also stepped ``latency_moves``
        times from the middle, timing each redraw."""
        for k, handle in enumerate(self.sliders()):
            label = f"slider {k}"
            if k == 0:
                for j in range(latency_moves):
                    key = "ArrowRight" if j % 2 == 0 else "ArrowLeft"
                    self.act(f"{label} {key}", self._press(handle, key), measure=True)
            if handle.get_attribute("aria-valuenow") != handle.get_attribute("aria-valuemax"):
                self.act(f"{label} to its maximum", self._press(handle, "End"))
            self.act(f"{label} to its minimum", self._press(handle, "Home"))
            self.act(f"{label} back up", self._press(handle, "End"))

    def exercise_dropdowns(self, measure: bool = False) -> None:
        for k, select in enumerate(self.root.query_selector_all(".widget-dropdown select")):
            options = select.eval_on_selector_all("option", "os => os.map(o => o.value)")
            current = select.evaluate("s => s.value")
            for value in [options[-1], options[0], current]:
                if value != select.evaluate("s => s.value"):
                    self.act(f"dropdown {k} = {value!r}", lambda v=value, s=select: s.select_option(v), measure=measure)

    def exercise_toggle_buttons(self, measure: bool = False) -> None:
        for k, group in enumerate(self.root.query_selector_all(".widget-toggle-buttons")):
            buttons = group.query_selector_all("button")
            order = [b for b in buttons if "mod-active" not in (b.get_attribute("class") or "")]
            order += [b for b in buttons if b not in order]
            for b in order:
                self.act(f"toggle group {k}: {b.inner_text()!r}", b.click, measure=measure)

    def exercise_bit_buttons(self, count: int = 3, measure: bool = True) -> None:
        """Stand-alone toggle buttons (one per bit in the bit explorer): flip a few and back."""
        bits = [
            b
            for b in self.root.query_selector_all("button.widget-toggle-button")
            if not b.evaluate("b => !!b.closest('.widget-toggle-buttons')")
        ]
        for b in bits[:count]:
            self.act("bit button on", b.click, measure=measure)
            self.act("bit button off", b.click, measure=measure)

    def exercise_texts(self, values: list[str]) -> None:
        for k, box in enumerate(self.root.query_selector_all(".widget-text input")):
            original = box.input_value()
            for value in [*values, original]:

                def go(b=box, v=value):
                    b.fill(v)
                    b.press("Enter")

                self.act(f"text {k} = {value!r}", go)

    def exercise_buttons(self) -> None:
        for b in self.root.query_selector_all("button.widget-button"):
            self.act(f"button {b.inner_text()!r}", b.click)


class KernelMessages:
    """Errors and stderr text that kernels send to the page, read off its websockets.

    Exceptions raised in widget callbacks never reach a cell: JupyterLab shows them only in its log
    console, and Voilà nowhere. The kernel still sends them over the websocket, so the tests read them
    there (the v1 kernel protocol frames carry the message header as JSON text).
    """

    _ERROR = re.compile(rb'"msg_type":\s*"error"')
    _STDERR = re.compile(rb'"msg_type":\s*"stream"')
    _EVALUE = re.compile(rb'"(ename|evalue)":\s*"((?:[^"\\]|\\.)*)"')
    _COMM_MSG = re.compile(rb'"msg_type":\s*"comm_msg"')
    _IDLE = re.compile(rb'"execution_state":\s*"idle"')
    _MSG_ID = re.compile(rb'"msg_id":\s*"([^"]+)"')

    def __init__(self, page):
        self.errors: list[str] = []
        self.stderr: list[str] = []
        # the widget messages (comm_msg) the page has sent: how many, their ids, and the ids of the messages the kernel
        # has answered with its status idle (whose parent header names the message; its frame may come first)
        self.sent = 0
        self._sent_ids: set[bytes] = set()
        self._answered: set[bytes] = set()
        page.on("websocket", self._on_websocket)

    @property
    def pending(self) -> set[bytes]:
        """The ids of the widget messages sent that the kernel has not answered yet."""
        return self._sent_ids - self._answered

    def _on_websocket(self, ws) -> None:
        ws.on("framereceived", self._on_frame)
        ws.on("framesent", self._on_sent)

    def _on_sent(self, payload) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "replace")
        if self._COMM_MSG.search(data):
            self._sent_ids.update(self._MSG_ID.findall(data))
            self.sent += 1

    def _on_frame(self, payload) -> None:
        data = payload if isinstance(payload, bytes) else payload.encode("utf-8", "replace")
        if self._IDLE.search(data):
            self._answered.update(self._MSG_ID.findall(data))
        if self._ERROR.search(data):
            parts = {k.decode(): v.decode("utf-8", "replace") for k, v in self._EVALUE.findall(data)}
            self.errors.append(f"{parts.get('ename', '?')}: {parts.get('evalue', '?')}")
        elif self._STDERR.search(data) and b'"stderr"' in data:
            m = re.search(rb'"text":\s*"((?:[^"\\]|\\.)*)"', data)
            self.stderr.append(m.group(1).decode("utf-8", "replace") if m else "?")

    def take(self) -> tuple[list[str], list[str]]:
        errors, stderr = self.errors, self.stderr
        self.errors, self.stderr = [], []
        return errors, stderr


class RemoteRequests:
    """Every request a page makes to a host other than this machine (the course must work offline)."""

    LOCAL = ("http://127.0.0.1:", "http://localhost:", "ws://127.0.0.1:", "data:", "blob:", "about:")

    def __init__(self, page):
        self.urls: list[str] = []
        page.on("request", self._on_request)
        page.on("websocket", lambda ws: self._check(ws.url))

    def _on_request(self, request) -> None:
        self._check(request.url)

    def _check(self, url: str) -> None:
        if not url.startswith(self.LOCAL):
            self.urls.append(url)
