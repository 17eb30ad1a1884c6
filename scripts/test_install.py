"""The course as others install it, tested offline (``make test-install``; CI runs it):

1. **the wheel**: built from the working tree's tracked files (a copy, so the checkout gains no build/ or egg-info),
   it holds every tracked file under ``amp_lessons/`` (every topic sub-package and every data file);
2. installed with ``--no-deps`` into a fresh venv, run from outside the source tree, it imports every topic, finds
   its data files, and runs ``delivery/presenter/explorers.ipynb`` (six topics' explorers) under nbval;
3. **``pip install git+<repository URL>``** (README "Installing the package"): the same, from a git repository
   holding the same files (``git+file://``);
4. **an environment with its own torch** (README "Running on a GPU"): the wheel installed, with its dependencies,
   into a copy of ``.venv-torch-<OWN_TORCH>`` (``make setup-torch``, PyPI's CUDA build) leaves that torch alone:
   same version, same files (path, size, modification time).

The fresh venvs see the pinned environment's packages (torch, numpy, pytest, nbval, ...) through a ``.pth`` line
naming ``.venv``'s site-packages: such a line only adds the directory to ``sys.path``; the ``.pth`` files in it
(among them the editable install of ``amp_lessons``) are not run, so the course comes from the installed wheel
alone, which the script checks. Nothing is downloaded (``--no-index``, ``--no-build-isolation``).

Usage: python scripts/test_install.py --own-torch-env .venv-torch-2.11.0
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "delivery/presenter/explorers.ipynb"


def run(cmd: list[str], cwd: Path | str | None = None, env: dict | None = None) -> str:
    started = time.perf_counter()
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        sys.exit(f"FAILED ({took:.1f} s): {' '.join(map(str, cmd))}\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    print(f"  ok ({took:5.1f} s) {' '.join(map(str, cmd)).strip().splitlines()[0][:150]}")
    return proc.stdout


def clean_env() -> dict:
    """The environment for every child: no PYTHONPATH (the source tree must not leak in), no pip config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV"))}
    env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONWARNINGS"] = "ignore::DeprecationWarning"
    return env


def tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.split("\0") if p and (ROOT / p).is_file()]


def copy_tree(files: list[str], dest: Path) -> None:
    for rel in files:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)


def site_packages(venv: Path) -> Path:
    rel = Path(sysconfig.get_path("purelib")).relative_to(sys.prefix)
    return venv / rel


def fresh_venv(path: Path) -> Path:
    """A new venv that sees the pinned environment's packages (pip and setuptools among them), but not its editable
    amp_lessons. Without pip of its own: ensurepip's setuptools would shadow the pinned environment's."""
    run([sys.executable, "-m", "venv", "--without-pip", path])
    python = path / "bin" / "python"
    pinned = Path(sysconfig.get_path("purelib"))
    (site_packages(path) / "_amp_course_pinned_env.pth").write_text(f"{pinned}\n")
    return python


CHECK_IMPORTS = r"""
import importlib, json, pkgutil, sys
from pathlib import Path
import amp_lessons
src, site = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
pkg = Path(amp_lessons.__file__).resolve().parent
assert pkg.parent == site, f"amp_lessons imported from {pkg}, not from the installed wheel in {site}"
assert not any(Path(p or ".").resolve() == src for p in sys.path), "the source tree is on sys.path"
topics = [m.name for m in pkgutil.iter_modules(amp_lessons.__path__) if m.ispkg]
for name in [m.name for m in pkgutil.walk_packages(amp_lessons.__path__, "amp_lessons.")]:
    mod = importlib.import_module(name)
    assert Path(mod.__file__).resolve().is_relative_to(site), (name, mod.__file__)
from amp_lessons import reference, style
assert style.STYLE_PATH.is_file() and style.STYLE_PATH.is_relative_to(site)
assert reference.DEFAULT_PATH.is_file() and json.loads(reference.DEFAULT_PATH.read_text())
print(json.dumps(sorted(topics)))
"""


def check_installed(python: Path, venv: Path, workdir: Path, expected_topics: list[str], notebook: bool) -> None:
    env = clean_env()
    topics = json.loads(run([python, "-c", CHECK_IMPORTS, ROOT, site_packages(venv)], cwd=workdir, env=env))
    assert topics == expected_topics, f"installed topics {topics} != the source tree's {expected_topics}"
    print(f"  every module of the {len(topics)} topics imports from the installed package: {', '.join(topics)}")
    if notebook:
        nb = workdir / Path(NOTEBOOK).name
        shutil.copy2(ROOT / NOTEBOOK, nb)
        shutil.copy2(ROOT / "tests" / "nbval_sanitize.cfg", workdir / "nbval_sanitize.cfg")
        # the suite's kernel start (a kernel that ends before its first reply is started again, its stderr kept),
        # as a plugin: the repository's conftest.py is not loaded here, and amp_lessons comes from the wheel alone
        shutil.copy2(ROOT / "tests" / "nbval_guard.py", workdir / "nbval_guard.py")
        out = run(
            [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "nbval_guard", "--nbval",
             "--nbval-current-env", "--nbval-sanitize-with=nbval_sanitize.cfg", nb.name],
            cwd=workdir, env=env,
        )  # fmt: skip
        print("  " + out.strip().splitlines()[-1])


def torch_manifest(python: Path) -> tuple[str, dict]:
    code = (
        "import importlib.metadata as m, json, os; d = m.distribution('torch'); files = {}\n"
        "for f in d.files:\n"
        "    p = d.locate_file(f)\n"
        "    if os.path.isfile(p): s = os.stat(p); files[str(f)] = [s.st_size, s.st_mtime_ns]\n"
        "print(json.dumps([d.version, files]))"
    )
    version, files = json.loads(subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout)
    return version, files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--own-torch-env", type=Path, help="a venv with another torch (make setup-torch)")
    args = parser.parse_args()
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="amp-course-install-"))
    try:
        files = tracked_files()
        package_files = sorted(p for p in files if p.startswith("amp_lessons/"))
        topics = sorted(p.split("/")[1] for p in package_files if p.count("/") == 2 and p.endswith("/__init__.py"))

        print("== 1. the wheel, built from a copy of the tracked files")
        src = tmp / "src"
        copy_tree(files, src)
        run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
             src, "-w", tmp / "dist"], env=clean_env())  # fmt: skip
        (wheel,) = (tmp / "dist").glob("amp_lessons-*.whl")
        names = zipfile.ZipFile(wheel).namelist()
        shipped = sorted(n for n in names if ".dist-info/" not in n)
        missing, extra = sorted(set(package_files) - set(shipped)), sorted(set(shipped) - set(package_files))
        assert not missing, f"the wheel lacks tracked files of the package: {missing}"
        assert not extra, f"the wheel holds files that are not tracked under amp_lessons/: {extra}"
        print(f"  {wheel.name}: {len(names)} files, every one of the {len(package_files)} tracked under amp_lessons/")

        print("== 2. the wheel in a fresh venv (--no-deps), used from outside the source tree")
        python = fresh_venv(tmp / "wheel-env")
        run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], env=clean_env())
        (tmp / "run-wheel").mkdir()
        check_installed(python, tmp / "wheel-env", tmp / "run-wheel", topics, notebook=True)

        print("== 3. pip install git+<repository URL> (a git repository of the same files, git+file://)")
        repo = tmp / "repo"
        copy_tree(files, repo)
        git = [
            "git",
            "-c",
            "user.name=amp-course",
            "-c",
            "user.email=amp-course@localhost",
            "-c",
            "init.defaultBranch=main",
        ]
        run([*git, "init", "-q"], cwd=repo)
        run([*git, "add", "-A"], cwd=repo)
        run([*git, "commit", "-q", "-m", "the course"], cwd=repo)
        python = fresh_venv(tmp / "git-env")
        run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
             f"git+file://{repo}"], env=clean_env())  # fmt: skip
        (tmp / "run-git").mkdir()
        check_installed(python, tmp / "git-env", tmp / "run-git", topics, notebook=True)

        if args.own_torch_env:
            own = args.own_torch_env.resolve()
            print(f"== 4. pip install of the course into an environment with its own torch (a copy of {own.name})")
            assert (own / "bin" / "python").exists(), f"{own} is not a venv: make setup-torch TORCH=..."
            copy = tmp / "own-torch-env"
            # hard links (cp -al): seconds for gigabytes; pip replaces files, it never writes into one, so the
            # original venv is not changed. A plain copy where hard links cannot be made (another file system).
            if subprocess.run(["cp", "-al", own, copy], capture_output=True).returncode != 0:
                shutil.rmtree(copy, ignore_errors=True)
                run(["cp", "-a", own, copy])
            python = copy / "bin" / "python"
            before = torch_manifest(python)
            run([python, "-m", "pip", "uninstall", "-q", "-y", "amp_lessons"], env=clean_env())  # the editable one
            # with its dependencies (torch>=2.11, numpy, ...): all satisfied, so nothing is fetched; were pip to
            # want another torch, --no-index would make it fail
            out = run([python, "-m", "pip", "install", "--no-index", wheel], env=clean_env())
            after = torch_manifest(python)
            assert after[0] == before[0], f"pip changed torch {before[0]} to {after[0]}"
            changed = [f for f in set(before[1]) | set(after[1]) if before[1].get(f) != after[1].get(f)]
            assert not changed, f"pip changed {len(changed)} of torch's files, e.g. {sorted(changed)[:5]}"
            assert "torch" not in out.split("Successfully installed", 1)[-1], out
            print(f"  torch {after[0]} untouched: same version, the same {len(after[1])} files (size, mtime)")
            (tmp / "run-own").mkdir()
            check_installed(python, copy, tmp / "run-own", topics, notebook=False)
        print(f"install tests passed in {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
