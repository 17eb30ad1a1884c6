"""Write each lesson's key code from its notebook into the lesson's topic folder (make export).

A lesson defines the code it is about (the AMP step, the scaler, the fp8 layer, ...) in its own code cells, once.
A code cell whose first line is ``#| export`` (nbdev's marker; d2l's ``#@save`` is the same idea) is key code:
this script copies those cells, in notebook order, into ``amp_lessons/<topic>/key_code.py`` under a header that
names the notebook. The package, the tests and the benchmarks import that module, so there is no second copy
to drift; ``tests/test_key_code.py`` regenerates every module and fails on any difference.

    python scripts/export_key_code.py            # write the modules
    python scripts/export_key_code.py --check    # exit 1 and name the stale modules, write nothing
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARKER = "#| export"
MODULE = "key_code.py"


def _source(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def exported_cells(notebook: Path) -> list[str]:
    """The bodies (marker line removed) of ``notebook``'s ``#| export`` code cells, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    out = []
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        first, _, body = _source(cell).partition("\n")
        if first.strip() == MARKER:
            out.append(body.strip("\n"))
    return out


def render(notebook: Path, bodies: list[str]) -> str:
    """The generated module's text for ``notebook``'s exported cell ``bodies``."""
    rel = notebook.relative_to(ROOT).as_posix()
    head = (
        f'"""Key code of {rel}: generated from its ``#| export`` cells by ``make export``. Do not edit.\n\n'
        "Each block below is one cell of the notebook, in notebook order. To change the code, edit the cell in the\n"
        "notebook and run ``make export``; tests/test_key_code.py fails while this file and the notebook differ.\n"
        '"""\n\n'
        "# ruff: noqa\n"
        "# fmt: off\n"
    )
    blocks = [f"\n# -- {rel}, exported cell {i} --\n{body}\n" for i, body in enumerate(bodies, start=1)]
    return head + "".join(blocks)


def targets() -> dict[Path, str]:
    """Every generated module's path and its expected text, from the course's lesson registry."""
    sys.path.insert(0, str(ROOT))
    from amp_lessons.lessons import LESSONS

    out = {}
    for lesson in LESSONS:
        nb = ROOT / "notebooks" / lesson.notebook
        bodies = exported_cells(nb)
        if not bodies:
            continue
        if lesson.topic is None:
            raise SystemExit(
                f"{nb.name} has {MARKER} cells but lesson {lesson.number} has no topic folder to hold them"
            )
        out[ROOT / "amp_lessons" / lesson.topic / MODULE] = render(nb, bodies)
    return out


def stale() -> list[str]:
    """Generated modules that differ from their notebooks, and key_code modules that no notebook generates."""
    want = targets()
    bad = [p.relative_to(ROOT).as_posix() for p, text in want.items() if not p.exists() or p.read_text() != text]
    bad += [
        p.relative_to(ROOT).as_posix() + " (no notebook exports it)"
        for p in sorted(ROOT.glob(f"amp_lessons/*/{MODULE}"))
        if p not in want
    ]
    return bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="only report modules that differ from their notebooks")
    args = ap.parse_args(argv)
    if args.check:
        bad = stale()
        for b in bad:
            print(f"stale: {b}: run `make export`")
        return 1 if bad else 0
    for path, text in targets().items():
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
