"""The package's structure as executable rules, read from the imports and attribute uses of its modules.

- The base (formats engine, device probes, course list, timing, style, run-time helpers, argument checks)
  imports no lesson topic.
- Experiments never import plots, explorers, matplotlib or ipywidgets: drawing stays in plots.py and
  widgets.py, so an experiment runs (and is tested) without a display.
- Modules import each other at the top, never inside a function.
- No module uses another module's private (``_name``) helper: what two modules share is public in one of
  them, or lives in a base module (``_runtime``, ``_validate``, ``_draw``).
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parent.parent / "amp_lessons"
MODULES = {p.stem: p for p in PKG.glob("*.py") if p.stem != "__init__"}
BASE = {"_runtime", "_validate", "_draw", "formats", "device", "course", "timing", "style"}
DRAWING = {"_draw", "plots", "widgets", "style"}
EXPERIMENTS = set(MODULES) - DRAWING


def _imports(path: Path) -> list[tuple[str, str]]:
    """(module imported, name) pairs, at any depth of the file (function-level imports included)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out += [(a.name, "") for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                out += [(node.module or "", a.name) for a in node.names]
            elif node.module:  # from .formats import x
                out += [(f"amp_lessons.{node.module}", a.name) for a in node.names]
            else:  # from . import formats
                out += [(f"amp_lessons.{a.name}", "") for a in node.names]
    return out


def _package_modules_used(path: Path) -> set[str]:
    return {m.split(".")[1] for m, _ in _imports(path) if m.startswith("amp_lessons.")}


def test_the_base_imports_no_topic():
    for name in BASE:
        used = _package_modules_used(MODULES[name])
        assert used <= BASE, f"{name} imports {sorted(used - BASE)}, which are lesson topics"


def test_experiments_do_not_draw():
    for name in EXPERIMENTS:
        imports = _imports(MODULES[name])
        top = {m.split(".")[0] for m, _ in imports}
        assert not top & {"matplotlib", "ipywidgets"}, f"{name} imports {sorted(top & {'matplotlib', 'ipywidgets'})}"
        assert not _package_modules_used(MODULES[name]) & {"plots", "widgets"}, f"{name} imports plots or widgets"


def _crossings(modules: dict[str, Path] = MODULES) -> set[tuple[str, str]]:
    found = set()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}  # local name -> package module, from "from . import fp8" or "self._fp8 = fp8"
        for m, n in _imports(path):
            if m.startswith("amp_lessons.") and m.count(".") == 1:
                mod = m.split(".")[1]
                if n and not n.startswith("_") and n in modules:
                    aliases[n] = n
                elif not n:
                    aliases[mod] = mod
                elif n.startswith("_") and not n.startswith("__") and not mod.startswith("_"):
                    found.add((name, f"{mod}.{n}"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) or isinstance(node, ast.ImportFrom):
                for a in node.names:
                    if a.name in modules:
                        aliases[a.asname or a.name] = a.name
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Attribute) and base.attr.startswith("_"):  # self._fp8._helper
                    mod = base.attr.lstrip("_")
                elif isinstance(base, ast.Name):
                    mod = aliases.get(base.id)
                else:
                    mod = None
                if mod in modules and mod != name and not mod.startswith("_"):
                    found.add((name, f"{mod}.{node.attr}"))
    return found


def test_no_private_names_cross_modules():
    assert _crossings() == set()


def test_the_rules_see_a_crossing(tmp_path):
    # the checker itself: a module that reaches into another's private helper is caught, both ways
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from . import fp8\nfrom .plots import _staircase\n\n\ndef f(x):\n    return fp8._tensor(x)\n", encoding="utf-8"
    )
    found = _crossings({**MODULES, "probe": probe})
    assert {("probe", "fp8._tensor"), ("probe", "plots._staircase")} <= found


def test_dependencies_between_modules_are_visible_at_the_top():
    # no function-level "from .x import y": what a module depends on is read in its first lines
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top = {id(n) for n in tree.body}
        hidden = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level and id(n) not in top]
        assert not hidden, f"{name}.py imports package modules inside functions, at lines {hidden}"
