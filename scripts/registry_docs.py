"""Write what the docs say of the lesson registry (``amp_lessons.lessons.LESSONS``: lesson 00 and each topic's
``LESSON``), so that adding a lesson is its topic in that list and not five hand edits:

- README.md: the lesson table (number, notebook, ``Lesson.shows``) and the topic list of its layout;
- instructors/README.md: the solutions table (``Lesson.exercises``), the sentence naming the lessons without a graded
  exercise, and the default workshop schedule;
- CONTRIBUTING.md: the topic folders of the layout, in lesson order;
- amp_lessons/__init__.py: the topic list of the package docstring;
- notebooks/00_start_here.ipynb: the summary's line naming the lessons in order (a Markdown cell: its outputs and
  code are not touched).

``python scripts/registry_docs.py`` rewrites them (``make docs`` also re-executes lesson 00, whose lesson list and
schedule come from the registry); ``--check`` writes nothing and exits 1 naming each file that is stale
(tests/test_registry_docs.py runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402

from amp_lessons.lessons import LESSONS, workshop_schedule  # noqa: E402

LAYOUT_COMMENT_COLUMN = 72  # CONTRIBUTING.md's layout block: where the comments start


def _between(text: str, start: str, end: str, body: str, where: str) -> str:
    """``text`` with what lies between the lines ``start`` and ``end`` replaced by ``body``."""
    if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
        raise SystemExit(f"{where}: expected one {start!r} followed by one {end!r}")
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n{body}\n{end}{tail}"


def lesson_table() -> str:
    rows = ["| lesson | notebook | what you see |", "|---|---|---|"]
    rows += [f"| {ls.number} | `{ls.notebook}` | {ls.shows} |" for ls in LESSONS]
    return "\n".join(rows)


def topic_list() -> str:
    """README.md's layout: the topics in lesson order, each with its lesson number."""
    items = ", ".join(f"`{ls.topic}` ({ls.number})" for ls in LESSONS if ls.topic)
    return "\n".join(textwrap.wrap(items, 110, break_on_hyphens=False)) + "."


def _numbers(numbers: list[str]) -> str:
    return numbers[0] if len(numbers) == 1 else f"{', '.join(numbers[:-1])} and {numbers[-1]}"


def solutions_table() -> str:
    rows = ["| lesson | exercises | solutions |", "|---|---|---|"]
    rows += [
        f"| {ls.number} {ls.title} | {ls.exercises} | `solutions_{ls.number}.py` |" for ls in LESSONS if ls.exercises
    ]
    without = [ls.number for ls in LESSONS if not ls.exercises]
    if without:
        verb = "has" if len(without) == 1 else "have"
        rows += ["", f"Lesson{'s' if len(without) > 1 else ''} {_numbers(without)} {verb} no graded exercise."]
    return "\n".join(rows)


def layout_lines() -> str:
    """CONTRIBUTING.md's layout: the topic folders in lesson order, commented at LAYOUT_COMMENT_COLUMN."""
    topics = [f"{ls.topic}/" for ls in LESSONS if ls.topic]
    lines = textwrap.wrap(" ".join(topics), LAYOUT_COMMENT_COLUMN - 4, break_on_hyphens=False)
    comments = ["one folder per lesson topic, in", f"lesson order ({LESSONS[1].number}..{LESSONS[-1].number})"]
    lines += [""] * (len(comments) - len(lines))
    out = []
    for i, line in enumerate(lines):
        comment = comments[i] if i < len(comments) else ""
        out.append(f"  {line}".ljust(LAYOUT_COMMENT_COLUMN) + comment if comment else f"  {line}")
    return "\n".join(s.rstrip() for s in out)


def docstring_topics() -> str:
    items = ", ".join(f":mod:`amp_lessons.{ls.topic}` ({ls.number})" for ls in LESSONS if ls.topic)
    return "\n".join(textwrap.wrap(items, 110, initial_indent="- ", subsequent_indent="  "))


def lesson_path() -> str:
    """Lesson 00's summary line: every lesson after it, by number and title, in order."""
    text = "After this start (00): " + "; ".join(f"{ls.number} {ls.title}" for ls in LESSONS[1:]) + "."
    return "\n".join(textwrap.wrap(text, 110, initial_indent="- ", subsequent_indent="  ", break_on_hyphens=False))


def _start_here(path: Path) -> str:
    nb = nbformat.read(path, as_version=4)
    start, end = "<!-- registry:lessons:start -->", "<!-- registry:lessons:end -->"
    cells = [c for c in nb.cells if c.cell_type == "markdown" and start in c.source]
    if len(cells) != 1:
        raise SystemExit(f"{path.name}: expected one Markdown cell holding {start!r}")
    cells[0].source = _between(cells[0].source, start, end, lesson_path(), path.name)
    return nbformat.writes(nb) + "\n"


def render() -> dict[Path, str]:
    """Every file this script writes, as it should read now."""
    out = {}
    readme = ROOT / "README.md"
    text = _between(
        readme.read_text(encoding="utf-8"),
        "<!-- registry:lessons:start -->",
        "<!-- registry:lessons:end -->",
        lesson_table(),
        "README.md",
    )
    out[readme] = _between(
        text, "<!-- registry:topics:start -->", "<!-- registry:topics:end -->", topic_list(), "README.md"
    )
    inst = ROOT / "instructors" / "README.md"
    text = _between(
        inst.read_text(encoding="utf-8"),
        "<!-- registry:solutions:start -->",
        "<!-- registry:solutions:end -->",
        solutions_table(),
        "instructors/README.md",
    )
    out[inst] = _between(
        text,
        "<!-- schedule:start -->",
        "<!-- schedule:end -->",
        workshop_schedule().to_markdown(),
        "instructors/README.md",
    )
    contributing = ROOT / "CONTRIBUTING.md"
    text = contributing.read_text(encoding="utf-8")
    m = re.search(r"(?m)^  _runtime\.py[^\n]*\n(.*?)\n(?=      __init__\.py)", text, re.S)
    if m is None:
        raise SystemExit("CONTRIBUTING.md: the layout block lost its `_runtime.py` or `__init__.py` line")
    out[contributing] = text[: m.start(1)] + layout_lines() + text[m.end(1) :]
    init = ROOT / "amp_lessons" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    m = re.search(r"The topics, a face each:\n\n(.*?)\n\n\(the lesson registry", text, re.S)
    if m is None:
        raise SystemExit("amp_lessons/__init__.py: the docstring lost its list of topics")
    out[init] = text[: m.start(1)] + docstring_topics() + text[m.end(1) :]
    start_here = ROOT / "notebooks" / "00_start_here.ipynb"
    out[start_here] = _start_here(start_here)
    return out


def stale() -> list[str]:
    """The files that differ from what the registry says (relative paths)."""
    return [str(p.relative_to(ROOT)) for p, text in render().items() if p.read_text(encoding="utf-8") != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        bad = stale()
        for name in bad:
            print(f"{name} is stale: run `make docs` (python scripts/registry_docs.py)", file=sys.stderr)
        return 1 if bad else 0
    for path, text in render().items():
        if path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
