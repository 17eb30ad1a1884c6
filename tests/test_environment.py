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


def test_package_metadata_claims_only_the_tested_torch_releases():
    # the package claims torch>=2.11: CI runs every test with the pin (2.13.0), with the claimed minimum 2.11.0 and with
    # the newest release 2.15.0 (make test-torch); a range, so that an environment's own torch is kept (README)
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    deps = meta["project"]["dependencies"]
    torch_deps = [d for d in deps if canonical(re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0]) == "torch"]
    assert torch_deps == ["torch>=2.11"]
    assert "error" in meta["tool"]["pytest"]["ini_options"]["filterwarnings"]


def _package_files() -> list[Path]:
    """The files of amp_lessons/ as the repository holds them: git's list in a checkout; in a copy that is not one
    (an unpacked archive, a GPU machine's upload), every file on disk but Python's caches."""
    tracked = subprocess.run(["git", "ls-files", "amp_lessons"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout.strip():
        return [Path(p) for p in tracked.stdout.split()]
    on_disk = (ROOT / "amp_lessons").rglob("*")
    return sorted(
        p.relative_to(ROOT) for p in on_disk if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
    )


def test_the_package_files_are_found_outside_a_git_checkout(monkeypatch):
    def no_git(*args, **kwargs):
        return subprocess.CompletedProcess(args, 128, "", "fatal: not a git repository")

    in_git = _package_files()
    monkeypatch.setattr(subprocess, "run", no_git)
    assert {str(p) for p in in_git} <= {str(p) for p in _package_files()}


def test_the_wheel_ships_every_package_and_data_file():
    # pip install . / git+URL must install every topic sub-package and every data file under amp_lessons/ (make
    # test-install builds and installs the real wheel; this checks the configuration against the tracked files)
    from setuptools import find_packages

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    tool = meta["tool"]["setuptools"]
    assert isinstance(tool["packages"], dict), "a fixed package list leaves the topic sub-packages out of the wheel"
    packages = find_packages(where=str(ROOT), **tool["packages"]["find"])
    files = _package_files()
    dirs = {str(f.parent).replace("/", ".") for f in files if f.name == "__init__.py"}
    assert sorted(packages) == sorted(dirs) and len(packages) > 10
    data = [f for f in files if f.suffix != ".py"]
    assert {f.name for f in data} >= {"amp_lessons.mplstyle", "references.json"}
    globs = tool["package-data"]["amp_lessons"]
    unmatched = [str(f) for f in data if not any(f.relative_to("amp_lessons").match(g) for g in globs)]
    assert not unmatched, f"tracked data files that [tool.setuptools.package-data] leaves out of the wheel: {unmatched}"


def test_python_version_license_and_lint_configuration_agree():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["requires-python"] == ">=3.11"
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
