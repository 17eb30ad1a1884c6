"""The package's structure as executable rules, read from the imports and attribute uses of its modules.

- The base (formats engine, device probes, course list, timing, style, the checker result, the private
  run-time, argument, drawing and explorer helpers) imports no lesson topic.
- One folder per lesson topic, in lesson order; a topic imports only itself, the base and earlier topics.
  ``reference`` (the table of recordable experiments) sits above the topics: no topic imports it.
- Experiments never import plots, explorers, matplotlib or ipywidgets: drawing stays in ``plots`` and
  ``explorers``, so an experiment runs (and is tested) without a display.
- Modules import each other at the top, never inside a function.
- No module uses another module's private (``_name``) helper: what two modules share is public in one of
  them, or lives in a base module.
- A topic's ``__init__`` exports exactly the public names of its modules, in an explicit ``__all__``.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from amp_lessons.course import TOPICS as COURSE_TOPICS

PKG = Path(__file__).resolve().parent.parent / "amp_lessons"
# lesson order, 01..11: the course's lesson registry
TOPICS = list(COURSE_TOPICS)
ABOVE = {"reference"}


def _dotted(path: Path) -> str:
    parts = list(path.relative_to(PKG).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_dotted(p): p for p in PKG.rglob("*.py") if p != PKG / "__init__.py"}
BASE = {m for m in MODULES if "." not in m and m not in TOPICS and m not in ABOVE}
EXPERIMENTS = {m for m in MODULES if m.split(".")[-1] in ("experiments", "describe")}
DRAWING = {"_draw", "_explorer", "style"} | {m for m in MODULES if m.split(".")[-1] in ("plots", "explorers")}


def _resolve(name: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module of a relative import in module ``name`` (dotted, without ``amp_lessons``)."""
    is_package = path.name == "__init__.py"
    parts = name.split(".") if name else []
    here = parts if is_package else parts[:-1]
    base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
    return ".".join(["amp_lessons", *base, *([node.module] if node.module else [])])


def _imports(name: str, path: Path | None = None) -> list[tuple[str, str, ast.AST]]:
    """(module imported, name, node) for every import of the file, at any depth; ``from .. import fp8``
    gives ("amp_lessons.fp8", "") and ``from ..fp8 import experiments`` ("amp_lessons.fp8.experiments", "")."""
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
        assert t in MODULES and f"{t}.checks" in MODULES or t == "e2e", f"topic {t} has no checks module"
        assert f"{t}.experiments" in MODULES or t == "bits", f"topic {t} has no experiments module"


def test_the_base_imports_no_topic():
    for name in BASE:
        used = {m.split(".")[0] for m in _package_modules_used(name)}
        assert used <= BASE, f"{name} imports {sorted(used - BASE)}, which are not base modules"


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


def test_no_private_names_cross_modules():
    assert _crossings() == set()


def test_the_rules_see_a_crossing(tmp_path):
    # the checker itself: a module that reaches into another's private helper is caught, both ways
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from ..fp8 import experiments as fp8\nfrom .plots import _sum_style\n\n\ndef f(x):\n    return fp8._tensor(x)\n",
        encoding="utf-8",
    )
    found = _crossings({"fp16.probe": probe})
    assert found == {("fp16.probe", "fp8.experiments._tensor"), ("fp16.probe", "fp16.plots._sum_style")}


def test_dependencies_between_modules_are_visible_at_the_top():
    # no function-level "from .x import y": what a module depends on is read in its first lines
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body}
        hidden = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level and id(n) not in top]
        assert not hidden, f"{name} imports package modules inside functions, at lines {hidden}"


def test_a_topic_exports_its_modules_public_names():
    for t in TOPICS:
        package = importlib.import_module(f"amp_lessons.{t}")
        names = []
        for sub in ("experiments", "describe", "plots", "explorers", "checks", "support"):
            if f"{t}.{sub}" in MODULES:
                module = importlib.import_module(f"amp_lessons.{t}.{sub}")
                names += module.__all__
                assert all(not n.startswith("_") for n in module.__all__)
                assert all(hasattr(module, n) for n in module.__all__), f"{t}.{sub} lists a name it lacks"
        assert len(names) == len(set(names)), f"two modules of {t} export one name"
        assert sorted(package.__all__) == sorted(names)
        assert all(getattr(package, n) is not None for n in names)


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
