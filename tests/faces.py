"""What the lessons call: the names of each topic that a lesson's cells, the presenter or the instructors'
solutions use, read from their code (imports of ``amp_lessons.<topic>`` and attributes of the imported topic),
and the ``<topic>.name`` their text names in code spans (a learner who types what the prose names gets it).

A topic's face (``amp_lessons.<topic>.__all__``) holds exactly these names; the rest of a topic lives in its
private modules, which the tests reach through :func:`internals`."""

from __future__ import annotations

import ast
import importlib
import json
import re
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLERS = (
    sorted((ROOT / "notebooks").glob("*.ipynb"))
    + sorted((ROOT / "delivery" / "presenter").glob("*.ipynb"))
    + sorted((ROOT / "instructors").glob("*.py"))
)


def _prose(path: Path) -> str:
    """The code spans (between backticks) of a notebook's markdown cells."""
    if path.suffix != ".ipynb":
        return ""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return "\n".join(re.findall(r"`([^`\n]+)`", text))


def _code(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    src = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    # IPython magics and shell lines are not Python
    return re.sub(r"^\s*[%!].*$", "", src, flags=re.M)


def called_names(topics) -> dict[str, set[str]]:
    """For each topic, the names its callers use: ``from amp_lessons.<topic> import name`` and ``<alias>.name``
    where ``<alias>`` is the imported topic."""
    called = {t: set() for t in topics}
    for path in CALLERS:
        tree = ast.parse(_code(path), filename=str(path))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "amp_lessons":
                aliases.update({a.asname or a.name: a.name for a in node.names if a.name in called})
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("amp_lessons."):
                topic = node.module.split(".")[1]
                if topic in called and node.module.count(".") == 1:
                    called[topic] |= {a.name for a in node.names}
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("amp_lessons.") and a.name.split(".")[1] in called and a.asname:
                        aliases[a.asname] = a.name.split(".")[1]
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                called[aliases[node.value.id]].add(node.attr)
        for topic, name in re.findall(r"(?<![\w.])(\w+)\.([A-Za-z]\w*)", _prose(path)):
            if topic in called:
                called[topic].add(name)
    return called


def internals(topic: str) -> types.SimpleNamespace:
    """Every public name of a topic's private modules (``_records``, ``_experiments``, ...) and its face, as
    one namespace: what the tests of a topic reach beyond what the lessons call."""
    package = importlib.import_module(f"amp_lessons.{topic}")
    names = {}
    for path in sorted(Path(package.__file__).parent.glob("_*.py")):
        if path.stem == "__init__":
            continue
        module = importlib.import_module(f"amp_lessons.{topic}.{path.stem}")
        names.update({n: getattr(module, n) for n in getattr(module, "__all__", [])})
    names.update({n: getattr(package, n) for n in package.__all__})
    return types.SimpleNamespace(**names)
