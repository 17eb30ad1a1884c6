"""The delivery rig runs against the course as it is installed (the wheel `make test-install` builds holds
amp_lessons/ and nothing else): its code imports nothing from the course's tests and no private module of the
package, but the one named in PRIVATE_IN_USE with its reason."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DELIVERY = ROOT / "delivery"
# gpu-check's check (d) runs every op of the CUDA autocast table under real autocast, with the sample inputs and the
# result-dtype reading that lesson 04's preview is built from; those builders are not part of the topic's face
# (amp_lessons.autocast.__all__: exactly what the lessons call)
PRIVATE_IN_USE = {"amp_lessons.autocast._policy": {"delivery/gpu_check/gpu_check_tools.py"}}


def _code() -> list[Path]:
    """The delivery rig's own Python code: not its tests, not the workshop hub's venv."""
    return sorted(p for p in DELIVERY.rglob("*.py") if not {".venv", "tests"} & set(p.relative_to(DELIVERY).parts))


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_the_delivery_code_imports_only_the_installed_package():
    files = _code()
    assert len(files) >= 10, [str(p) for p in files]
    found = {}
    for path in files:
        rel = str(path.relative_to(ROOT))
        for name in _imports(path):
            parts = name.split(".")
            private = parts[0] == "amp_lessons" and any(p.startswith("_") and p != "__version__" for p in parts)
            if parts[0] == "tests" or (private and rel not in PRIVATE_IN_USE.get(name, set())):
                found.setdefault(rel, []).append(name)
    assert not found, f"imports from the course's tests or private modules of amp_lessons: {found}"


def test_the_import_reader_sees_what_it_looks_for(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import tests.faces\nfrom amp_lessons._table import text_table\nfrom . import sibling\n")
    assert _imports(probe) == ["tests.faces", "amp_lessons._table", "amp_lessons._table.text_table"]
