"""The package's structure as executable rules, read from the imports and attribute uses of its modules.

- The base (formats engine, device probes, what a lesson is, timing, style, the checker result, the private
  run-time, argument, drawing and explorer helpers) imports no lesson topic.
- One folder per lesson topic, in lesson order; a topic imports only itself, the base and earlier topics.
  ``lessons`` (the lessons in order), ``recorders`` (the GPU reference recorders) and ``reference`` (the table of
  recordable experiments) sit above the topics: no topic imports them.
- Experiments never import plots, explorers, matplotlib or ipywidgets: drawing stays in ``plots`` and
  ``explorers``, so an experiment runs (and is tested) without a display.
- Modules import each other at the top, never inside a function (relative or absolute imports, or
  ``importlib.import_module`` of a named package module, or of a computed name): every import is visible at the top.
- No module uses another module's private (``_name``) helper, by attribute, by ``getattr`` with its name or through
  ``import_module``: what two modules share is public in one of them, or lives in a base module.
- A topic's ``__init__`` (its face) exports exactly the names the lessons, the presenter and the solutions call, in
  an explicit ``__all__``; its other modules are private (``_experiments``, ``_plots``, ...).
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

from amp_lessons.lessons import TOPICS as COURSE_TOPICS
from tests import faces
from tests.faces import called_names, internals

PKG = Path(__file__).resolve().parent.parent / "amp_lessons"
# lesson order, 01..11: the course's lesson registry
TOPICS = list(COURSE_TOPICS)
ABOVE = {"reference", "recorders", "lessons"}


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_dotted(p): p for p in PKG.rglob("*.py") if p != PKG / "__init__.py"}
BASE = {m for m in MODULES if "." not in m and m not in TOPICS and m not in ABOVE}
# modules by role: what runs experiments, the frozen results, the models a lesson trains; none of them draws
EXPERIMENTS = {m for m in MODULES if m.split(".")[-1].lstrip("_") in ("experiments", "describe", "records", "models")}
DRAWING = {"_draw", "_explorer", "style"} | {
    m for m in MODULES if m.split(".")[-1].lstrip("_") in ("plots", "explorers")
}


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a relative import in module ``name`` (dotted, without ``amp_lessons``)."""
    is_package = path.name == "__init__.py"
    parts = name.split(".") if name else []
    here = parts if is_package else parts[:-1]
    base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
    return ".".join(["amp_lessons", *base, *([node.module] if node.module else [])])


def _imports(name: str, path: Path | None = None) -> list[tuple[str, str, ast.AST]]:
    """(module imported, name, node) for every import of the file, at any depth; ``from .. import fp8``
    gives ("amp_lessons.fp8", "") and ``from ..fp8 import experiments`` ("amp_lessons.fp8._experiments", "")."""
    path = MODULES[name] if path is None else path
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, "", node) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = node.module or "" if node.level == 0 else _resolve(name, path, node)
            for a in node.names:
                sub = f"{mod}.{a.name}".removeprefix("amp_lessons.")
                if mod.startswith("amp_lessons") and sub in MODULES:
                    out.append((f"{mod}.{a.name}", "", node))
                else:
                    out.append((mod, a.name, node))
    return out


def _package_modules_used(name: str) -> set[str]:
    return {m.removeprefix("amp_lessons.") for m, _, _ in _imports(name) if m.startswith("amp_lessons.")}


def _topic(module: str) -> str | None:
    head = module.split(".")[0]
    return head if head in TOPICS else None


def test_the_layout():
    assert {"formats", "device", "course", "timing", "style", "checks"} <= BASE
    for t in TOPICS:
        assert t in MODULES and f"{t}._checks" in MODULES or t == "e2e", f"topic {t} has no checks module"
        assert f"{t}._experiments" in MODULES or t == "bits", f"topic {t} has no experiments module"


def test_the_base_imports_no_topic():
    for name in BASE:
        used = {m.split(".")[0] for m in _package_modules_used(name)}
        assert used <= BASE, f"{name} imports {sorted(used - BASE)}, which are not base modules"
    assert "course" not in {m.split(".")[0] for m in _package_modules_used("device")}, "the probes know no lesson"


NETWORK = {"urllib", "http", "socket", "requests", "httpx", "aiohttp", "ftplib", "smtplib"}


def test_the_package_opens_no_connection():
    for name in MODULES:
        used = {m.split(".")[0] for m, _, _ in _imports(name)} & NETWORK
        assert not used, f"{name} imports {sorted(used)}"


# the one raise the key code shows on purpose: lesson 09's rank that fails, to show what the launcher reports
DELIBERATE_RAISES = {"distributed.key_code.one_rank_fails"}


def _argument_checks(name: str, path: Path) -> list[str]:
    """The ``if ...: raise ValueError/TypeError`` statements of a module, by function, and its imports of the
    argument helpers (``_validate``)."""
    found = [f"imports {m}" for m, _, _ in _imports(name, path) if m.split(".")[-1] == "_validate"]
    for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or f"{name}.{fn.name}" in DELIBERATE_RAISES:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.If) and any(
                isinstance(r, ast.Raise)
                and r.exc is not None
                and "Error" in ast.unparse(r.exc)
                and ast.unparse(r.exc).split("(")[0] in ("ValueError", "TypeError")
                for r in ast.walk(node)
            ):
                found.append(f"{fn.name}, line {node.lineno}")
    return found


def test_the_key_code_learners_read_checks_no_argument():
    """The cells a lesson exports (``<topic>/key_code.py``) show the mechanism only; the face's wrappers check the
    arguments (the argument contract probes the faces)."""
    key_code = [m for m in MODULES if m.endswith(".key_code")]
    assert len(key_code) >= 8
    for name in key_code:
        assert not _argument_checks(name, MODULES[name]), (name, _argument_checks(name, MODULES[name]))


def test_the_key_code_rule_sees_a_check(tmp_path):
    probe = tmp_path / "key_code.py"
    probe.write_text(
        "from .. import _validate\n\n\ndef f(x):\n    if not isinstance(x, int):\n"
        "        raise TypeError('x')\n    if x < 0:\n        raise RuntimeError('state')\n    return x\n",
        encoding="utf-8",
    )
    assert _argument_checks("fp8.key_code", probe) == ["imports amp_lessons._validate", "f, line 5"]


def test_every_pytest_started_in_a_subprocess_leaves_pytest_benchmark_out():
    # GPU images often carry pytest-benchmark, which warns under xdist, and the project's warnings are errors: a pytest
    # that a test or script starts must pass -p no:benchmark (as make gpu-check does), else it fails there alone
    root = PKG.parent
    pattern = re.compile(r'"-m",\s*"pytest"(.{0,400})', re.S)
    missing = []
    delivery = [p for p in (root / "delivery").rglob("*.py") if ".venv" not in p.relative_to(root).parts]
    for path in sorted([*(root / "tests").rglob("*.py"), *(root / "scripts").glob("*.py"), *delivery]):
        for m in pattern.finditer(path.read_text(encoding="utf-8")):
            call = m.group(1).split("]", 1)[0]
            if "no:benchmark" not in call and "NO_PLUGINS" not in call:
                missing.append(f"{path.relative_to(root)}: {m.group(0)[:80]!r}")
    assert not missing, missing


def test_a_topic_imports_only_earlier_topics():
    for name in MODULES:
        t = _topic(name)
        if t is None:
            continue
        for used in _package_modules_used(name):
            head = used.split(".")[0]
            assert head not in ABOVE, f"{name} imports {used}: the topics never import what sits above them"
            u = _topic(used)
            if u is not None:
                assert TOPICS.index(u) <= TOPICS.index(t), f"{name} (lesson {t}) imports the later topic {used}"


def test_experiments_do_not_draw():
    for name in EXPERIMENTS | (BASE - DRAWING):
        top = {m.split(".")[0] for m, _, _ in _imports(name)}
        assert not top & {"matplotlib", "ipywidgets"}, f"{name} imports {sorted(top & {'matplotlib', 'ipywidgets'})}"
        drawn = _package_modules_used(name) & DRAWING
        assert not drawn, f"{name} imports {sorted(drawn)}"


def _crossings(modules: dict[str, Path] = MODULES) -> set[tuple[str, str]]:
    """(module, other.private_name) for every use of another module's ``_name``."""
    found = set()
    for name, path in modules.items():
        aliases = {}  # local name -> package module
        for mod, n, node in _imports(name, path):
            if not mod.startswith("amp_lessons."):
                continue
            target = mod.removeprefix("amp_lessons.")
            if not n:
                local = next(a.asname or a.name for a in node.names if target.endswith(a.name.split(".")[-1]))
                aliases[local] = target
            elif n.startswith("_") and not n.startswith("__") and target != name:
                found.add((name, f"{target}.{n}"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            # getattr(fp8, "_tensor"): a private name read by its string
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "getattr"
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and _private(node.args[1].value)
            ):
                mod = _package_module_of(node.args[0], aliases)
                if mod is not None and mod != name:
                    found.add((name, f"{mod}.{node.args[1].value}"))
            if isinstance(node, ast.Attribute) and _private(node.attr) and _imported_module(node.value):
                # importlib.import_module("amp_lessons.fp8._experiments")._tensor
                found.add((name, f"{_imported_module(node.value)}.{node.attr}"))
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Attribute) and base.attr.startswith("_"):  # self._fp8._helper
                    mod = aliases.get(base.attr.lstrip("_"))
                elif isinstance(base, ast.Name):
                    mod = aliases.get(base.id)
                else:
                    mod = None
                if mod is not None and mod != name:
                    found.add((name, f"{mod}.{node.attr}"))
    return found


def _private(n) -> bool:
    return isinstance(n, str) and n.startswith("_") and not n.startswith("__")


def _is_import_module(call) -> bool:
    f = call.func if isinstance(call, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module"
    )


def _imported_module(node) -> str | None:
    """The package module of ``importlib.import_module("amp_lessons.x")`` (dotted, without amp_lessons), else None."""
    if _is_import_module(node) and node.args and isinstance(node.args[0], ast.Constant):
        target = node.args[0].value
        if isinstance(target, str) and target.startswith("amp_lessons."):
            return target.removeprefix("amp_lessons.")
    return None


def _package_module_of(node, aliases: dict[str, str]) -> str | None:
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return _imported_module(node)


def _hidden_imports(name: str, path: Path) -> list[str]:
    """What module ``name`` imports of the package out of sight: an import of amp_lessons inside a function
    (relative or absolute), an ``import_module`` of a named package module, or of a computed name anywhere but in the
    first lines of the lessons list (``lessons``), which imports the topics it names there."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body}
    in_functions = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                    for n in ast.walk(f)}  # fmt: skip
    found = []
    for node in ast.walk(tree):
        if id(node) in top:
            continue
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("amp_lessons")):
            found.append(f"line {node.lineno}: from {'.' * node.level}{node.module or ''} import")
        elif isinstance(node, ast.Import) and any(a.name.split(".")[0] == "amp_lessons" for a in node.names):
            found.append(f"line {node.lineno}: import {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Call) and _is_import_module(node) and node.args:
            arg = node.args[0]
            if _imported_module(node) is not None:
                found.append(f"line {node.lineno}: import_module({arg.value!r})")
            elif not isinstance(arg, ast.Constant) and (name != "lessons" or id(node) in in_functions):
                found.append(f"line {node.lineno}: import_module of a computed name")
    return found


def test_no_private_names_cross_modules():
    assert _crossings() == set()


def test_the_rules_see_a_crossing(tmp_path):
    # the checker itself: a module that reaches into another's private helper is caught, both ways
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..fp8 import _experiments as fp8\nfrom ._plots import _sum_style\n\n\ndef f(x):\n    return fp8._tensor(x)\n",
        encoding="utf-8",
    )
    found = _crossings({"fp16.probe": probe})
    assert found == {("fp16.probe", "fp8._experiments._tensor"), ("fp16.probe", "fp16._plots._sum_style")}


def test_dependencies_between_modules_are_visible_at_the_top():
    # no function-level "from .x import y", "import amp_lessons.x" or import_module("amp_lessons.x"): what a module
    # depends on is read in its first lines; the lessons list imports there the topics it names
    for name, path in MODULES.items():
        hidden = _hidden_imports(name, path)
        assert not hidden, f"{name} imports package modules out of sight: {hidden}"


def test_the_rules_see_hidden_imports_and_private_names_read_by_string(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import importlib\n\nfrom ..fp8 import _experiments as fp8\n\n\n"
        "def f(x, topic):\n"
        "    import amp_lessons.bits\n"
        "    from amp_lessons.tf32 import _experiments\n"
        "    from . import _plots\n"
        "    m = importlib.import_module('amp_lessons.micro._experiments')\n"
        "    importlib.import_module(f'amp_lessons.{topic}')\n"
        "    importlib.import_module('torch._dynamo')\n"
        "    getattr(x, '_enabled', True)\n"
        "    return getattr(fp8, '_tensor'), importlib.import_module('amp_lessons.scaling._plots')._style\n",
        encoding="utf-8",
    )
    assert _crossings({"fp16.probe": probe}) == {
        ("fp16.probe", "fp8._experiments._tensor"),
        ("fp16.probe", "scaling._plots._style"),
    }
    hidden = _hidden_imports("fp16.probe", probe)
    assert [h.split(":", 1)[1].strip() for h in hidden] == [
        "import amp_lessons.bits",
        "from amp_lessons.tf32 import",
        "from . import",
        "import_module('amp_lessons.micro._experiments')",
        "import_module of a computed name",
        "import_module('amp_lessons.scaling._plots')",
    ], hidden
    assert _hidden_imports("course", probe) == hidden  # no module is exempt: course no longer imports topics
    assert _hidden_imports("lessons", probe) == hidden  # the lessons list too, inside a function
    listed = tmp_path / "listed.py"  # the lessons list's own form: the topics it names, imported in its first lines
    listed.write_text(
        "import importlib\n\nNAMES = ('bits',)\nT = {n: importlib.import_module(f'amp_lessons.{n}._support') "
        "for n in NAMES}\n",
        encoding="utf-8",
    )
    assert _hidden_imports("lessons", listed) == []
    assert _hidden_imports("course", listed) == ["line 4: import_module of a computed name"]


def test_a_topics_face_is_what_the_lessons_call():
    """``amp_lessons.<topic>.__all__`` is exactly the names the lesson's cells, the presenter and the instructors'
    solutions use (read from their code); everything else of the topic is in its private modules."""
    called = called_names(TOPICS)
    for t in TOPICS:
        package = importlib.import_module(f"amp_lessons.{t}")
        defined = set(vars(internals(t)))
        assert sorted(package.__all__) == sorted(called[t] & defined), t
        assert all(getattr(package, n) is not None for n in package.__all__)
        assert not called[t] - defined - {"key_code"}, f"lessons call names {t} lacks: {called[t] - defined}"


def test_the_face_reader_sees_each_way_of_calling(tmp_path, monkeypatch):
    nb = tmp_path / "x.py"
    nb.write_text(
        "from amp_lessons import bits as b, fp16\nfrom amp_lessons.tf32 import plot_error_vs_k\n"
        "import amp_lessons.micro as m\nb.plot_spacing()\nfp16.sum_sweep\nm.recipe_table()\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(faces, "CALLERS", [nb])
    found = faces.called_names(["bits", "fp16", "tf32", "micro"])
    assert found == {
        "bits": {"plot_spacing"},
        "fp16": {"sum_sweep"},
        "tf32": {"plot_error_vs_k"},
        "micro": {"recipe_table"},
    }


def test_a_topics_modules_are_private():
    # the face is the topic's only public module, beside the key code its notebook exports
    for t in TOPICS:
        subs = {m.split(".", 1)[1] for m in MODULES if m.startswith(f"{t}.")}
        assert all(s.startswith("_") or s == "key_code" for s in subs), (t, subs)


def test_no_public_name_is_imported_under_a_private_alias():
    """`from x import name as _name` hides where a helper comes from and makes a public name look private: the
    package imports names as they are, or calls them module-qualified (`_validate.seed(...)`) where they would clash."""
    aliased = []
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                aliased += [
                    f"{name}: {a.name} as {a.asname}"
                    for a in node.names
                    if a.asname and a.asname.startswith("_") and not a.name.startswith("_")
                ]
    assert not aliased, aliased


MAX_MODULE_LINES = 700


def test_no_module_is_over_700_lines():
    # modules by role (records, experiments, models, plots, explorers, checks) and infrastructure in the base keep
    # every file short enough to read in one sitting; the package, the scripts and the delivery rig alike (not the
    # workshop hub's own venv under delivery/workshop/.venv)
    root = PKG.parent
    delivery = [p for p in (root / "delivery").rglob("*.py") if ".venv" not in p.relative_to(root).parts]
    assert len(delivery) >= 10, "the delivery rig's Python files (delivery/) are not found"
    files = sorted([*PKG.rglob("*.py"), *(root / "scripts").rglob("*.py"), *delivery])
    sizes = {str(p.relative_to(root)): len(p.read_text(encoding="utf-8").splitlines()) for p in files}
    long = {f: n for f, n in sizes.items() if n > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"
