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
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    releases = ci.split('\nTORCH_RELEASES="', 1)[1].split('"', 1)[0].split()
    assert "2.11.0" in releases and "2.15.0" in releases
    assert pins_from_requirements()["torch"] not in releases  # the pin runs in make test itself
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


def test_make_test_torch_runs_every_test_with_another_torch_from_pypi_and_ci_runs_it_offline():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\n.venv-torch-%/.amp-course-installed: requirements.txt pyproject.toml\n", 1)[1]
    recipe = recipe.split("\n\n", 1)[0]
    assert '"torch==$*"' in recipe and "-r .venv-torch-$*/requirements.txt" in recipe  # the other pins
    assert "PIP_CONFIG_FILE=/dev/null" in makefile  # a pip.conf cannot swap the wheel or cap the version
    assert "/etc/xdg" not in makefile and "/opt/" not in makefile  # nothing of one machine
    target = makefile.split("\ntest-torch: setup-torch\n", 1)[1].split("\n\n", 1)[0]
    assert "$(TORCH_VENV)/bin/python -m pytest $(XDIST)" in target
    assert '-m "not hub" tests notebooks delivery/tests delivery/presenter' in target
    assert "--ignore=tests/browser --ignore=delivery/tests/browser" in target
    assert ".venv-torch-*/" in (ROOT / ".gitignore").read_text().splitlines()
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    online, tests = ci.split('echo "== the tests run $mode"', 1)
    assert 'make setup-torch TORCH="$v"' in online and "offline make" not in online
    for command in ("make test", "make portability", 'make test-torch TORCH="$v"', "make test-install"):
        assert f"offline {command}" in tests, command
    assert "unshare --net sh -c 'ip link set lo up && exec \"$@\"'" in ci
    assert "du -sh .venv" in ci  # the environments' size, with each step's time
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "make test-torch TORCH=" in readme and "make test-install" in readme
    assert 'pip install "git+<repository URL>"' in readme
    assert "## Installing the package" in readme and "## Running on a GPU" in readme


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
    assert 'step "make test" offline make test' in ci and 'step "make portability" offline make portability' in ci
    test_target = makefile.split("\ntest: setup\n", 1)[1].split("\n\n", 1)[0]
    assert "tests notebooks --ignore=tests/browser" in test_target and "pytest $(XDIST) tests/browser" in test_target
    assert "delivery" not in test_target  # the course's tests alone; the delivery rig's are make test-delivery
    assert 'step "make test-delivery" offline make test-delivery' in ci


def test_the_machine_matrix_covers_isa_and_thread_counts():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    target = makefile.split("\nportability: setup\n", 1)[1].split("\n\n", 1)[0]
    configs = makefile.split("\nPORTABILITY ?= ", 1)[1].split("\n", 1)[0]
    assert '"ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=AVX2"' in configs
    assert '"OMP_NUM_THREADS=1"' in configs and '"OMP_NUM_THREADS=4"' in configs
    assert "notebooks delivery/presenter" in target and '-m "not hub"' in target
    # the unit tests once, in the first configuration: the course's and the delivery rig's
    assert 'unit="tests delivery/tests --ignore=tests/browser --ignore=delivery/tests/browser"' in target
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


def _delivery_python() -> list[Path]:
    """The delivery rig's Python files (delivery/), not those of the workshop hub's own venv."""
    return [p for p in (ROOT / "delivery").rglob("*.py") if ".venv" not in p.relative_to(ROOT).parts]


def test_every_pytest_started_in_a_subprocess_leaves_pytest_benchmark_out():
    # GPU images often carry pytest-benchmark, which warns under xdist, and the project's warnings are errors: a pytest
    # that a test or script starts must pass -p no:benchmark (as make gpu-check does), else it fails there alone
    pattern = re.compile(r'"-m",\s*"pytest"(.{0,400})', re.S)
    missing = []
    for path in sorted([*(ROOT / "tests").rglob("*.py"), *(ROOT / "scripts").glob("*.py"), *_delivery_python()]):
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            call = m.group(1).split("]", 1)[0]
            if "no:benchmark" not in call and "NO_PLUGINS" not in call:
                missing.append(f"{path.relative_to(ROOT)}: {m.group(0)[:80]!r}")
    assert not missing, missing
