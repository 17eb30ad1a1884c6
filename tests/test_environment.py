"""The pinned environment: requirements.txt is the one place for pins; environment.yml agrees."""

import importlib.util
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.-]+)==([A-Za-z0-9_.+-]+)$")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_from_requirements() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        m = PIN.match(line)
        assert m, f"requirements.txt: {line!r} is not an exact pin (name==version)"
        pins[canonical(m.group(1))] = m.group(2)
    return pins


def test_requirements_pin_exact_versions_and_cpu_torch():
    pins = pins_from_requirements()
    assert pins["torch"] == "2.13.0"
    for name in ("numpy", "matplotlib", "ipywidgets", "jupyterlab", "ipykernel", "pytest", "nbval", "pytest-xdist"):
        assert name in pins, f"{name} is not pinned"


def test_environment_yml_parses_and_agrees_with_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["name"] == "amp-course"
    assert env["channels"] == ["conda-forge", "nodefaults"]
    deps = env["dependencies"]
    conda = [d for d in deps if isinstance(d, str)]
    pip_sections = [d["pip"] for d in deps if isinstance(d, dict) and "pip" in d]
    assert len(pip_sections) == 1, "environment.yml needs exactly one pip section"
    assert "pip" in conda and any(d.startswith("python=3.11") for d in conda)
    env_pins = {}
    for line in pip_sections[0]:
        if line.startswith("--extra-index-url "):  # where torch's CPU build comes from (Binder)
            continue
        m = PIN.match(line.strip())
        assert m, f"environment.yml pip entry {line!r} is not an exact pin"
        env_pins[canonical(m.group(1))] = m.group(2)
    assert env_pins == pins_from_requirements()


def test_package_metadata_claims_only_the_tested_torch():
    # CI tests torch 2.13 (requirements.txt); older releases differ in behaviour the lessons show (the CUDA
    # autocast lists, float8_e4m3fn overflow), so the package claims no release older than the tested one
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = meta["project"]["dependencies"]
    pinned = next(line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("torch=="))
    assert f"torch>={pinned.split('==')[1].rsplit('.', 1)[0]}" in deps
    assert "error" in meta["tool"]["pytest"]["ini_options"]["filterwarnings"]


def test_binder_installs_the_package():
    assert "pip install --no-deps -e ." in (ROOT / "postBuild").read_text()


def test_ci_calls_make_test():
    text = (ROOT / ".ci" / "run").read_text()
    assert "make test" in text and "CI=true" in text


def test_ci_runs_the_readme_test_command_with_the_browser_tests_and_offline():
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text(encoding="utf-8")
    ci = (root / ".ci" / "run").read_text(encoding="utf-8")
    makefile = (root / "Makefile").read_text(encoding="utf-8")
    assert "make lab " in readme and "make test " in readme  # the two quick-start commands
    assert "export CI=true" in ci and "apt-get install" in ci and "chromium" in ci
    assert "unshare --net sh -c 'ip link set lo up && make test && make portability'" in ci
    test_target = makefile.split("\ntest: setup\n", 1)[1].split("\n\n", 1)[0]
    assert "tests notebooks presenter" in test_target and "tests/browser" in test_target


def test_the_machine_matrix_covers_isa_and_thread_counts():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = makefile.split("\nportability: setup\n", 1)[1].split("\n\n", 1)[0]
    configs = makefile.split("\nPORTABILITY ?= ", 1)[1].split("\n", 1)[0]
    assert '"ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2"' in configs
    assert '"OMP_NUM_THREADS=1"' in configs and '"OMP_NUM_THREADS=4"' in configs
    assert "notebooks presenter" in target and "tests --ignore=tests/browser" in target  # unit tests once
    assert "make portability" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_python_version_license_and_lint_configuration_agree():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"] == ">=3.11"  # the Makefile refuses older Pythons, the README says 3.11
    assert "sys.version_info >= (3, 11)" in (ROOT / "Makefile").read_text()
    assert "Python ≥ 3.11" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert meta["project"]["license"] == {"text": "MIT"} and "MIT License" in (ROOT / "LICENSE").read_text()
    assert "ruff" in pins_from_requirements() and meta["tool"]["ruff"]["lint"]["select"]


def _ruff(*args: str) -> None:
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI") == "true":
            raise AssertionError("ruff is not installed: make setup installs it from requirements.txt")
        pytest.skip("ruff is not installed (make setup installs it)")
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", *args, "--no-cache", "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_ruff_is_clean():
    _ruff("check", "--output-format", "concise")


def test_ruff_format_is_clean():
    # the Python files keep ruff's format (``ruff format``); notebooks are excluded in pyproject.toml
    _ruff("format", "--check")
