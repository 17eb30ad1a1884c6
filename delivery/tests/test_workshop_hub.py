"""The workshop hub (delivery/workshop/, README.md "Running a workshop on one server").

* The kernel wrapper's settings and the Kubernetes values: fast, run by ``make test-delivery``.
* The room (``make test-hub``): the hub on free localhost ports with a temporary state folder, HUB_LEARNERS
  (default 4) learners created through its REST API, each learner's server started, and every learner running
  lessons 00-03 at the same time, each in their own kernels under their own server; then one kernel filled past
  its memory cap. Per learner it prints wall time and the peak resident memory of the kernels' process trees.
  It runs alone (it starts a dozen processes on purpose): its tests carry the ``hub`` marker, which ``make
  test-delivery`` leaves out and ``make test-hub`` alone selects, and are skipped unless AMP_TEST_HUB=1, which
  ``make test-hub`` sets; without the hub's venv (``make setup-workshop``) they are skipped with that reason, except
  under CI=true, where that is a failure.
* Every test that starts the hub needs the hub's own venv, which only ``make setup-workshop`` makes, so they all
  run under ``make test-hub`` alone, and the fast ones above under ``make test-delivery`` alone: no test runs
  twice.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "delivery" / "workshop"
sys.path.insert(0, str(WORKSHOP))

import kernel_wrapper  # noqa: E402
import simulated_room as room  # noqa: E402

IN_CI = os.environ.get("CI", "").lower() == "true"


def _hub_or_skip() -> None:
    why = room.hub_missing()
    if why and IN_CI:
        pytest.fail(f"CI=true and the hub cannot start: {why}")
    if why:
        pytest.skip(why)


# -- the kernel wrapper (no hub needed)
@pytest.mark.parametrize(
    ("text", "expected"),
    [("3G", 3 * 2**30), ("512M", 512 * 2**20), ("2.5GiB", int(2.5 * 2**30)), ("1073741824", 2**30), ("none", None)],
)
def test_memory_sizes(text, expected):
    assert kernel_wrapper.parse_bytes(text) == expected


@pytest.mark.parametrize("text", ["lots", "3 X", "-1G", "100M", ""])
def test_bad_memory_sizes_say_what_is_allowed(text):
    with pytest.raises(ValueError, match="AMP_KERNEL_MEMORY_LIMIT"):
        kernel_wrapper.parse_bytes(text)


@pytest.mark.parametrize("text", ["0", "1.5", "-0.1", "half"])
def test_bad_gpu_fractions(text):
    with pytest.raises(ValueError, match=r"AMP_KERNEL_GPU_FRACTION.*\(0, 1\]"):
        kernel_wrapper.parse_fraction(text)


def test_the_kernel_command_runs_ipykernel_with_the_startup_file():
    cmd, limit = kernel_wrapper.kernel_command(["-f", "k.json"], {"AMP_KERNEL_MEMORY_LIMIT": "2G"})
    assert cmd[:3] == [sys.executable, "-m", "ipykernel_launcher"] and cmd[3:5] == ["-f", "k.json"]
    assert cmd[-1].endswith("kernel_startup.py") and Path(cmd[-1].split("=", 1)[1]).exists()
    assert limit == 2 * 2**30
    assert kernel_wrapper.kernel_command([], {})[1] == 3 * 2**30  # the default cap
    with pytest.raises(ValueError, match="AMP_KERNEL_THREADS"):
        kernel_wrapper.kernel_command([], {"AMP_KERNEL_THREADS": "many"})


def test_the_kernel_spec_points_at_the_course_venv_and_the_wrapper():
    import json

    spec_dir = WORKSHOP / "jupyter" / "kernels" / "python3"
    argv = json.loads((spec_dir / "kernel.json").read_text())["argv"]
    resolved = [Path(a.replace("{resource_dir}", str(spec_dir))).resolve() for a in argv[:2]]
    assert resolved == [(ROOT / ".venv" / "bin" / "python").resolve(), WORKSHOP / "kernel_wrapper.py"]
    assert argv[2:] == ["-f", "{connection_file}"]


def test_a_kernel_over_its_cap_gets_an_error_and_lives_on(monkeypatch):
    """The wrapper's cap in a real kernel: a 4 GiB tensor under a 1 GiB cap fails in the cell, the next cell runs;
    its OpenMP threads wait passively, whatever the server's environment said."""
    from jupyter_client.manager import start_new_kernel

    monkeypatch.setenv("JUPYTER_PATH", str(WORKSHOP / "jupyter"))  # the workshop's "python3" comes first
    monkeypatch.setenv("AMP_KERNEL_MEMORY_LIMIT", "1G")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    km, kc = start_new_kernel(kernel_name="python3")
    try:
        outputs = []

        def run(code):
            reply = kc.execute_interactive(
                code,
                timeout=120,
                output_hook=lambda m: outputs.append(m["content"]["text"]) if m["msg_type"] == "stream" else None,
                stop_on_error=False,
            )
            return reply["content"]

        assert run("import resource; print(resource.getrlimit(resource.RLIMIT_DATA))")["status"] == "ok"
        assert f"({2**30}, {2**30})" in outputs[-1]
        assert run("import os; print(os.environ['OMP_WAIT_POLICY'])")["status"] == "ok" and outputs[-1] == "PASSIVE\n"
        # torch.empty asks for the whole 4 GiB at once: refused before any page is touched, so the test is cheap
        reply = run("import torch; x = torch.empty(2**30, dtype=torch.float32)")
        assert reply["status"] == "error" and "can't allocate memory" in reply["evalue"]
        assert "this workshop kernel may use 1.00 GiB (AMP_KERNEL_MEMORY_LIMIT)" in " ".join(outputs)
        assert run("print(1 + 1)")["status"] == "ok" and outputs[-1] == "2\n"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_the_startup_file_caps_every_gpu_when_asked(monkeypatch):
    """AMP_KERNEL_GPU_FRACTION -> torch.cuda.set_per_process_memory_fraction on each device (CUDA faked: no GPU here)."""
    import torch

    calls = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_per_process_memory_fraction", lambda f, d: calls.append((f, d)))
    monkeypatch.setenv("AMP_KERNEL_GPU_FRACTION", "0.04")

    class Shell:
        custom = None

        def set_custom_exc(self, types, handler):
            self.custom = (types, handler)

    shell = Shell()
    namespace = {"get_ipython": lambda: shell}
    exec(compile((WORKSHOP / "kernel_startup.py").read_text(), "kernel_startup.py", "exec"), namespace)
    assert calls == [(0.04, 0), (0.04, 1)]
    assert shell.custom[0] == (MemoryError, RuntimeError)
    assert set(namespace) - {"__builtins__"} == {"get_ipython"}, "the learner's namespace is left as it was"


@pytest.mark.parametrize("args", [["--lesson", "99_none.ipynb"], ["--max", "0"], ["--factor", "1"]])
def test_the_load_script_refuses_bad_arguments(args, capsys):
    sys.path.insert(0, str(ROOT / "delivery" / "load"))
    import hub_load

    with pytest.raises(SystemExit) as e:
        hub_load.main(args)
    assert e.value.code == 2 and args[0] in capsys.readouterr().err


# -- the Kubernetes values (no cluster here: checked as YAML against the keys Zero to JupyterHub documents)
def test_the_z2jh_values_use_documented_keys():
    """Keys from https://z2jh.jupyter.org/en/stable/resources/reference.html (the chart's configuration reference)."""
    values = yaml.safe_load((WORKSHOP / "z2jh-values.yaml").read_text())
    assert set(values) <= {"hub", "singleuser", "cull", "prePuller", "scheduling", "proxy"}
    hub = values["hub"]["config"]
    assert hub["JupyterHub"]["authenticator_class"] == "shared-password"
    assert "user_password" not in hub.get("SharedPasswordAuthenticator", {}), "no password in the values file"
    single = values["singleuser"]
    assert single["image"]["name"] and single["image"]["tag"] != "latest"
    assert single["memory"]["limit"] and single["memory"]["guarantee"]
    assert single["cpu"]["limit"] >= single["cpu"]["guarantee"]
    assert values["cull"]["enabled"] is True and values["cull"]["timeout"] > 0
    assert values["prePuller"]["hook"]["enabled"] is True
    gpu = yaml.safe_load((WORKSHOP / "z2jh-values-gpu.yaml").read_text())
    profile = gpu["singleuser"]["profileList"][0]
    assert profile["kubespawner_override"]["extra_resource_limits"] == {"nvidia.com/gpu": "1"}
    assert set(gpu) <= {"singleuser", "hub", "cull", "prePuller", "scheduling"}


# -- the hub itself (its own venv: make test-hub, which selects these by their marker, `-m hub`)
HUB_ONLY = pytest.mark.skipif(os.environ.get("AMP_TEST_HUB") != "1", reason="needs the hub's venv: make test-hub")


@pytest.mark.hub
@HUB_ONLY
def test_the_hub_refuses_to_start_without_a_password(tmp_path):
    _hub_or_skip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AMP_WORKSHOP")}
    env["AMP_WORKSHOP_STATE"] = str(tmp_path)
    r = subprocess.run(
        [str(room.HUB_VENV / "bin" / "jupyterhub"), "-f", str(WORKSHOP / "jupyterhub_config.py")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode != 0 and "Set AMP_WORKSHOP_PASSWORD" in r.stdout + r.stderr


@pytest.mark.hub
@HUB_ONLY
def test_a_room_of_learners_runs_lessons_00_to_03_at_once(tmp_path):
    _hub_or_skip()
    n = int(os.environ.get("HUB_LEARNERS", "4"))
    names = [f"learner{i}" for i in range(1, n + 1)]
    hub = room.Hub(tmp_path / "state", memory_limit="3G")
    hub.start()
    try:
        learners, wall = room.run_room(hub, names, room.LESSONS_00_03)
        # one more kernel of the first learner, filled 256 MiB at a time past its 3 GiB cap
        hog_out: list[str] = []
        hog = learners[0].run_notebook(
            "memory_cap_check.ipynb",
            cells=[
                "import torch\nkeep = []\nwhile True:\n    keep.append(torch.ones(2**26))",
                "del keep\nprint('alive')",
            ],
            outputs=hog_out,
        )
    finally:
        left = hub.stop()
    log = hub.log_tail()

    print(f"\n== {n} learners, lessons 00-03 each, all at once: {wall:.1f} s wall")
    print(f"{'learner':<10} {'seconds':>8} {'peak MiB':>9}  per lesson (s / MiB)            failures")
    for lr in learners:
        per = "  ".join(f"{r.notebook[:2]}:{r.seconds:.0f}/{r.peak_rss >> 20}" for r in lr.runs)
        total = sum(r.seconds for r in lr.runs)
        peak = max((r.peak_rss for r in lr.runs), default=0)
        fails = sum(len(r.failures) for r in lr.runs)
        print(f"{lr.name:<10} {total:8.1f} {peak >> 20:9d}  {per}  {fails}")
    print(f"memory cap check: {hog.seconds:.1f} s, peak {hog.peak_rss >> 20} MiB under a 3072 MiB cap; {hog.failures}")

    assert not left, f"processes left after the hub stopped: {left}"
    for lr in learners:
        assert lr.error is None, f"{lr.name}: {lr.error}\n{log}"
        assert [r.notebook for r in lr.runs] == list(room.LESSONS_00_03)
        failures = [f for r in lr.runs for f in r.failures]
        assert failures == [], f"{lr.name}: {failures}"
        home = tmp_path / "state" / "home" / lr.name
        for r in lr.runs:
            assert r.cells > 0 and r.peak_rss > 0
            # the kernel ran in the course's venv, in this learner's home, under the workshop's cap
            assert Path(r.kernel["exe"]).resolve() == (ROOT / ".venv" / "bin" / "python").resolve()
            assert Path(r.kernel["cwd"]).resolve() == home.resolve()
            assert tuple(r.kernel["rlimit_data"]) == (3 * 2**30, 3 * 2**30)
        assert sorted(p.name for p in home.glob("*.ipynb")) == sorted(
            p.name for p in (ROOT / "notebooks").glob("*.ipynb")
        )
    # past the cap: the learner's cell gets the error and the note, the kernel lives on, the machine is untouched
    assert len(hog.failures) == 1 and "can't allocate memory" in hog.failures[0], hog.failures
    assert any("this workshop kernel may use 3.00 GiB" in o for o in hog_out), hog_out
    assert any(o == "alive\n" for o in hog_out), hog_out
    assert hog.peak_rss <= 3 * 2**30 + 2**28
