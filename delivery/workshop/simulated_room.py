"""Simulated learners on the workshop hub: start it, add learners through its REST API, run lessons in their kernels.

Used by delivery/tests/test_workshop_hub.py (`make test-hub`) and delivery/load/hub_load.py (`make bench-hub`); runs with the
course's .venv python (requests, websocket-client and psutil come with its pins) and starts the hub from the
hub's venv (delivery/workshop/.venv, `make setup-workshop`).

Each learner does what JupyterLab does for a person: it opens a notebook (``POST /user/<name>/api/sessions``, so
the kernel runs under that learner's own single-user server, in their home, with the workshop's capped kernel
spec), sends every code cell as an ``execute_request`` over the kernel's websocket through the hub's proxy, and
waits for the reply. A cell "fails" when its reply is an error. While a notebook runs, a thread samples the
resident memory (RSS) of the kernel's process tree; the peak is the larger of the highest sample and the kernel
process's own high-water mark (``VmHWM``).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests
import websocket

WORKSHOP = Path(__file__).resolve().parent
ROOT = WORKSHOP.parents[1]  # the repository (delivery/workshop/../..)
HUB_VENV = Path(os.environ.get("AMP_HUB_VENV") or WORKSHOP / ".venv")
LESSONS_00_03 = (
    "00_start_here.ipynb",
    "01_float_formats.ipynb",
    "02_tf32.ipynb",
    "03_fp16_overflow_underflow.ipynb",
)


def hub_missing() -> str | None:
    """Why the hub cannot start here (None: it can)."""
    for exe in ("jupyterhub", "configurable-http-proxy", "jupyterhub-singleuser"):
        if not (HUB_VENV / "bin" / exe).exists():
            return f"{HUB_VENV / 'bin' / exe} is missing: run `make setup-workshop` (online) first"
    if not (ROOT / ".venv" / "bin" / "python").exists():
        return f"{ROOT / '.venv'} (the course's environment, where the kernels run) is missing: run `make setup`"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree(pid: int) -> list[psutil.Process]:
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.Error:
        return []


class Hub:
    """The workshop's JupyterHub (delivery/workshop/jupyterhub_config.py) on free localhost ports with its own state folder."""

    def __init__(self, state: Path, memory_limit: str = "3G", extra_env: dict[str, str] | None = None):
        self.state = Path(state)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(32)
        self.env = {
            **os.environ,
            "AMP_WORKSHOP_PASSWORD": secrets.token_urlsafe(12),
            "AMP_WORKSHOP_IP": "127.0.0.1",
            "AMP_WORKSHOP_PORT": str(self.port),
            "AMP_WORKSHOP_HUB_PORT": str(free_port()),
            "AMP_WORKSHOP_PROXY_API_PORT": str(free_port()),
            "AMP_WORKSHOP_STATE": str(self.state),
            "AMP_WORKSHOP_API_TOKEN": self.token,
            "AMP_KERNEL_MEMORY_LIMIT": memory_limit,
            **(extra_env or {}),
        }
        self.proc: subprocess.Popen | None = None
        self.seen: dict[int, str] = {}  # every process of the hub's tree seen while it ran: pid -> name
        self.log_path = self.state / "hub.log"

    # -- lifecycle
    def start(self, timeout: float = 120.0) -> Hub:
        why = hub_missing()
        if why:
            raise RuntimeError(why)
        self.state.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "wb")  # noqa: SIM115  (closed in stop)
        self.proc = subprocess.Popen(
            [str(HUB_VENV / "bin" / "jupyterhub"), "-f", str(WORKSHOP / "jupyterhub_config.py")],
            cwd=self.state,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._log = log
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if self.api("GET", "/").ok:
                    self.remember_processes()
                    return self
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the hub did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def remember_processes(self) -> None:
        if self.proc is not None:
            for p in _tree(self.proc.pid):
                try:
                    self.seen[p.pid] = p.name()
                except psutil.Error:
                    pass

    def stop(self, timeout: float = 60.0) -> list[str]:
        """SIGTERM the hub (it stops every server, kernel and the proxy: cleanup_servers); the processes left alive."""
        if self.proc is None:
            return []
        self.remember_processes()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()
        deadline = time.monotonic() + 15
        alive = []
        while time.monotonic() < deadline:
            alive = [f"{pid} {name}" for pid, name in self.seen.items() if _alive(pid, name)]
            if not alive:
                break
            time.sleep(0.5)
        for entry in alive:  # never leave them behind, but report them
            try:
                psutil.Process(int(entry.split()[0])).kill()
            except psutil.Error:
                pass
        self.proc = None
        return alive

    def __enter__(self) -> Hub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return "(no log)"

    # -- the REST API
    def api(self, method: str, path: str, token: str | None = None, **kw) -> requests.Response:
        headers = {"Authorization": f"token {token or self.token}"}
        return requests.request(method, f"{self.url}/hub/api{path}", headers=headers, timeout=60, **kw)

    def add_learners(self, names: list[str]) -> None:
        r = self.api("POST", "/users", json={"usernames": names})
        r.raise_for_status()

    def start_server(self, name: str) -> None:
        r = self.api("POST", f"/users/{name}/server")
        if r.status_code not in (201, 202):
            raise RuntimeError(f"starting {name}'s server: HTTP {r.status_code} {r.text}")

    def wait_ready(self, name: str, timeout: float = 240.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            user = self.api("GET", f"/users/{name}").json()
            server = (user.get("servers") or {}).get("")
            if server and server.get("ready"):
                self.remember_processes()
                return
            time.sleep(0.5)
        raise RuntimeError(f"{name}'s server was not ready within {timeout:.0f} s:\n{self.log_tail()}")

    def learner_token(self, name: str) -> str:
        r = self.api("POST", f"/users/{name}/tokens", json={"note": "simulated learner", "expires_in": 3600})
        r.raise_for_status()
        return r.json()["token"]

    def stop_server(self, name: str) -> None:
        self.api("DELETE", f"/users/{name}/server")


def _alive(pid: int, name: str) -> bool:
    try:
        p = psutil.Process(pid)
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE and p.name() == name
    except psutil.Error:
        return False


@dataclass
class NotebookRun:
    notebook: str
    seconds: float = 0.0
    peak_rss: int = 0
    cells: int = 0
    failures: list[str] = field(default_factory=list)
    kernel: dict = field(default_factory=dict)  # the kernel process: exe, cwd, RLIMIT_DATA (from psutil)


@dataclass
class Learner:
    hub: Hub
    name: str
    token: str = ""
    runs: list[NotebookRun] = field(default_factory=list)
    error: str | None = None

    @property
    def base(self) -> str:
        return f"{self.hub.url}/user/{self.name}"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"token {self.token}"}

    def run_notebooks(self, notebooks: tuple[str, ...], cell_timeout: float = 600.0) -> None:
        """Run each notebook (in order, a fresh kernel each) under this learner's server; never raises."""
        try:
            for nb in notebooks:
                self.runs.append(self.run_notebook(nb, cell_timeout))
        except Exception as e:  # noqa: BLE001  (reported by the caller, with the hub's log)
            self.error = f"{type(e).__name__}: {e}"

    def run_notebook(
        self,
        notebook: str,
        cell_timeout: float = 600.0,
        cells: list[str] | None = None,
        outputs: list[str] | None = None,
    ) -> NotebookRun:
        """Open ``notebook`` in a new kernel of this learner's server, run its code cells (or ``cells``), close it."""
        if cells is None:
            cells = [
                "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
                for c in json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
                if c["cell_type"] == "code"
            ]
        run = NotebookRun(notebook)
        t0 = time.monotonic()
        r = requests.post(
            f"{self.base}/api/sessions",
            headers=self._headers(),
            json={"path": notebook, "name": notebook, "type": "notebook", "kernel": {"name": "python3"}},
            timeout=120,
        )
        r.raise_for_status()
        session = r.json()
        kid = session["kernel"]["id"]
        sampler = _MemorySampler(kid)
        sampler.start()
        ws = websocket.create_connection(
            f"ws://127.0.0.1:{self.hub.port}/user/{self.name}/api/kernels/{kid}/channels?session_id={uuid.uuid4().hex}",
            header=[f"Authorization: token {self.token}"],
            timeout=cell_timeout,
        )
        try:
            for i, code in enumerate(cells, 1):
                error = _execute(ws, code, self.name, cell_timeout, outputs)
                run.cells += 1
                if error:
                    run.failures.append(f"{notebook} cell {i}: {error}")
        finally:
            ws.close()
            run.seconds = time.monotonic() - t0
            sampler.stop()
            run.peak_rss = sampler.peak
            run.kernel = sampler.facts
            self.hub.remember_processes()
            requests.delete(f"{self.base}/api/sessions/{session['id']}", headers=self._headers(), timeout=120)
        return run


def _execute(
    ws: websocket.WebSocket, code: str, username: str, timeout: float, outputs: list[str] | None = None
) -> str | None:
    """Send one execute_request; return the error's ``ename: evalue`` (None when the cell ran without one).

    ``outputs``, if given, receives the text of every stream and error message the cell sends."""
    msg_id = uuid.uuid4().hex
    ws.send(
        json.dumps(
            {
                "header": {
                    "msg_id": msg_id,
                    "msg_type": "execute_request",
                    "username": username,
                    "session": uuid.uuid4().hex,
                    "version": "5.3",
                    "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                },
                "parent_header": {},
                "metadata": {},
                "content": {
                    "code": code,
                    "silent": False,
                    "store_history": True,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
                "channel": "shell",
                "buffers": [],
            }
        )
    )
    reply, idle, error = None, False, None
    deadline = time.monotonic() + timeout
    while reply is None or not idle:
        if time.monotonic() > deadline:
            return f"no reply within {timeout:.0f} s"
        raw = ws.recv()
        if isinstance(raw, bytes):  # binary frames carry widget buffers: not replies
            continue
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind == "execute_reply":
            reply = msg["content"]
        elif kind == "status" and msg["content"].get("execution_state") == "idle":
            idle = True
        elif kind == "error":
            error = f"{msg['content']['ename']}: {msg['content']['evalue']}"[:300]
            if outputs is not None:
                outputs.append(error)
        elif kind == "stream" and outputs is not None:
            outputs.append(msg["content"]["text"])
        elif kind == "status" and msg["content"].get("execution_state") == "dead":
            return "the kernel died"
    if reply.get("status") != "ok":
        return error or f"{reply.get('ename', 'error')}: {reply.get('evalue', '')}"[:300]
    return None


class _MemorySampler(threading.Thread):
    """The peak RSS of a kernel's process tree, found by its connection file ``kernel-<id>.json``."""

    def __init__(self, kernel_id: str, interval: float = 0.2):
        super().__init__(daemon=True)
        self.needle = f"kernel-{kernel_id}.json"
        self.interval = interval
        self.peak = 0
        self.pid: int | None = None
        self.facts: dict = {}
        self._done = threading.Event()

    def _find(self) -> int | None:
        for p in psutil.process_iter(["cmdline"]):
            if any(self.needle in a for a in p.info["cmdline"] or ()):
                return p.pid
        return None

    def run(self) -> None:
        while not self._done.is_set():
            if self.pid is None:
                self.pid = self._find()
            if self.pid is not None:
                total = 0
                for p in _tree(self.pid):
                    try:
                        total += p.memory_info().rss
                    except psutil.Error:
                        pass
                self.peak = max(self.peak, total)
            self._done.wait(self.interval)

    def stop(self) -> None:
        if self.pid is not None:  # what the kernel ran as (the wrapper has exec'd ipykernel by now) and its peak
            try:
                p = psutil.Process(self.pid)
                self.facts = {"exe": p.exe(), "cwd": p.cwd(), "rlimit_data": p.rlimit(psutil.RLIMIT_DATA)}
            except psutil.Error:
                pass
            try:
                with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            self.peak = max(self.peak, int(line.split()[1]) * 1024)
            except OSError:
                pass
        self._done.set()
        self.join(5)


def run_room(hub: Hub, names: list[str], notebooks: tuple[str, ...]) -> tuple[list[Learner], float]:
    """Add the learners, start their servers, then run ``notebooks`` in every learner at once; (learners, seconds)."""
    hub.add_learners(names)
    for name in names:
        hub.start_server(name)
    learners = []
    for name in names:
        hub.wait_ready(name)
        learners.append(Learner(hub, name, hub.learner_token(name)))
    threads = [threading.Thread(target=lr.run_notebooks, args=(notebooks,)) for lr in learners]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return learners, time.monotonic() - t0
