"""Reference measurements: GPU results shown next to what a learner's machine measures, each with
its provenance (device, compute capability, torch and CUDA versions, date, the command).

Two kinds of reference:

- recorded: measured on a CUDA GPU and stored in ``amp_lessons/data/references.json``, either by this
  course's own command (``command``) or by a measurement whose method the record describes in words
  (``method``); each names the course commit it was measured with (``commit``)::

      python -m amp_lessons.reference record [--only NAME ...] [--file PATH]
      python -m amp_lessons.reference show [EXPERIMENT]

- published: figures from a cited source (``PUBLISHED``), labelled as not measured by the course.

The recordable experiments are the table ``EXPERIMENTS`` (name -> ``fn(device: str) -> dict``, each
written in its lesson's topic); ``compare()`` puts this machine's results next to every reference.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch

from ._table import TableRecord
from ._validate import path_or_none, sequence
from .recorders import (
    record_fp8_scaled_mm,
    record_matmul_throughput,
    record_tf32_matmul,
    record_timing_check,
    record_training,
)
from .timing import format_seconds

__all__ = [
    "Comparison", "DEFAULT_PATH", "EXPERIMENTS", "Overview", "PUBLISHED", "Record", "compare", "find", "load", "main",
    "overview", "record", "save"
]  # fmt: skip

DEFAULT_PATH = Path(__file__).resolve().parent / "data" / "references.json"
"""The recorded references shipped with the package."""


CLI = "python -m amp_lessons.reference"
NO_CUDA_MESSAGE = (
    "reference measurements need a CUDA GPU, and torch.cuda.is_available() is False on this machine; "
    "the lessons show the published figures meanwhile"
)

_OPTIONAL = ("commit", "method")  # absent from files written before they existed: read as ""
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_CAPABILITY = re.compile(r"\d+\.\d+")
_COMMIT = re.compile(r"[0-9a-f]{7,40}")
_TORCH_MINOR = re.compile(r"\d+\.\d+")


@dataclass(frozen=True)
class Record:
    """One reference: an experiment's results on one device, and where they come from."""

    experiment: str
    device: str  # GPU name as torch reports it
    capability: str  # "9.0", or "" if unknown
    torch: str
    cuda: str  # torch.version.cuda, or ""
    date: str  # ISO "YYYY-MM-DD", or "" for a published figure without one
    command: str  # the exact command that produced it ("" for published figures and for ``method``)
    results: dict = field(default_factory=dict)  # name -> number, string or small dict
    source: str = ""  # "" if measured (by the course's command or ``method``), else the citation
    commit: str = ""  # the course commit it was measured with ("" if unknown)
    method: str = ""  # how it was measured, in words, when no command of the course produced it

    def __post_init__(self):
        problem = _record_problem(asdict(self))
        if problem:
            raise ValueError(f"invalid Record: {problem}")

    @property
    def published(self) -> bool:
        return bool(self.source)

    @property
    def provenance(self) -> str:
        if self.source:
            missing = [k for k in ("capability", "torch", "cuda", "date") if not getattr(self, k)]
            unstated = f"; not stated: {', '.join(missing)}" if missing else ""
            return f"published: {self.source}{unstated} (not measured by this course)"
        parts = [self.device + (f" (sm {self.capability})" if self.capability else "")]
        parts.append(f"torch {self.torch}" if self.torch else "torch version unknown")
        if self.cuda:
            parts.append(f"CUDA {self.cuda}")
        if self.date:
            parts.append(self.date)
        how = f", by `{self.command}`" if self.command else ""
        if self.commit:
            how += f" at course commit {self.commit}"
        if self.method:
            how += f"; method: {self.method}"
        return "measured on " + ", ".join(parts) + how

    @property
    def label(self) -> str:
        """A short label for a table column or a printed figure: "recorded on <GPU>, torch 2.11, <date>"
        (the full story is ``provenance``), or "<device> (published)"."""
        if self.source:
            return f"{self.device} (published)"
        version = _TORCH_MINOR.match(self.torch)
        torch_text = f"torch {version.group(0)}" if version else "torch version unknown"
        return ", ".join([f"recorded on {self.device}", torch_text] + ([self.date] if self.date else []))

    def to_dict(self) -> dict:
        return asdict(self)


_FIELDS = tuple(f.name for f in fields(Record))


def _value_problem(v, *, nested: bool) -> str | None:
    if isinstance(v, bool) or v is None:
        return f"{v!r} is not a number, string or small dict"
    if isinstance(v, (int, float)):
        return None if math.isfinite(v) else f"{v!r} is not finite (JSON cannot store it)"
    if isinstance(v, str):
        return None
    if isinstance(v, dict) and not nested:
        for k, inner in v.items():
            if not isinstance(k, str):
                return f"key {k!r} is not a string"
            p = _value_problem(inner, nested=True)
            if p:
                return f"[{k!r}]: {p}"
        return None
    return f"{v!r} is not a number, string or dict of those"


def _results_problem(results) -> str | None:
    if not isinstance(results, dict):
        return f"field 'results' must be an object (name -> value), got {results!r}"
    for k, v in results.items():
        if not isinstance(k, str) or not k:
            return f"field 'results' has a key {k!r} that is not a non-empty string"
        p = _value_problem(v, nested=False)
        if p:
            return f"field 'results' entry {k!r}: {p}"
    return None


def _iso_date(text: str) -> bool:
    try:
        return bool(_DATE.fullmatch(text)) and bool(datetime.date.fromisoformat(text))
    except ValueError:
        return False


def _record_problem(d) -> str | None:
    """What is wrong with a record given as a dict, or None."""
    if not isinstance(d, dict):
        return f"a record must be an object, got {d!r}"
    missing = [f for f in _FIELDS if f not in d and f not in _OPTIONAL]
    if missing:
        return f"missing field(s) {', '.join(repr(m) for m in missing)}"
    unknown = sorted(set(d) - set(_FIELDS))
    if unknown:
        return f"unknown field(s) {', '.join(repr(u) for u in unknown)} (allowed: {', '.join(_FIELDS)})"
    for f in _FIELDS:
        if f != "results" and not isinstance(d.get(f, ""), str):
            return f"field {f!r} must be a string, got {d[f]!r}"
    for f in ("experiment", "device"):
        if not d[f]:
            return f"field {f!r} must not be empty"
    if d["capability"] and not _CAPABILITY.fullmatch(d["capability"]):
        return f"field 'capability' must look like '9.0' (or be empty), got {d['capability']!r}"
    if d["date"] and not _iso_date(d["date"]):
        return f"field 'date' must be an ISO date YYYY-MM-DD (or empty), got {d['date']!r}"
    if d.get("commit") and not _COMMIT.fullmatch(d["commit"]):
        return f"field 'commit' must be a git commit hash (7 to 40 lowercase hex digits, or empty), got {d['commit']!r}"
    if not d["source"]:
        if not d["command"] and not d.get("method"):
            return (
                "field 'command' must name the command that measured it, or 'method' describe how "
                "(or 'source' must cite a publication)"
            )
        if not d["date"]:
            return "field 'date' must be set for a measured record"
    return _results_problem(d["results"])


# Published figures: what the lessons show until the course's own command has recorded a GPU.
# Two sources that do NOT describe the same experiment; each record holds only what its source
# states, and an empty field means "not stated" (``provenance`` says which ones).
PUBLISHED: tuple[Record, ...] = (
    # PyTorch's TF32 note: one 10240^3 matmul of fp64 randn inputs rounded to fp32 on an A100; its "relative error"
    # is max |error| / mean |fp64 result| (as tf32.matmul_errors); no torch or CUDA version, date or timing method.
    Record("tf32_matmul", "NVIDIA A100 (GA100)", "8.0", "", "", "", "", {
        "shape": "10240x10240 @ 10240x10240", "tf32_time_s": 0.016, "fp32_time_s": 0.11, "tf32_max_error": 0.1747,
        "fp32_max_error": 0.0031, "tf32_rel_error": 0.0022, "fp32_rel_error": 0.000039},
        source="PyTorch docs, CUDA semantics, 'TensorFloat-32 (TF32) on Ampere (and later) devices', "
        "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-devices "
        "(fp64 randn inputs rounded to fp32; timing method not stated)"),
    # The course's original notebook: the same experiment with K = 51200 on a GPU it did not name.
    Record("tf32_matmul", "unknown GPU", "", "", "", "", "",
           {"shape": "10240x51200 @ 51200x10240", "tf32_rel_error": 0.0024, "fp32_rel_error": 8.8293e-05},
           source="the course's original notebook, its stored outputs (relative errors only, no timings; GPU not named)"),
)  # fmt: skip


def _path(path) -> Path:
    p = DEFAULT_PATH if path_or_none(path, "path") is None else Path(path)
    if p.is_dir():
        raise ValueError(f"path must be a reference file (JSON), got the folder {str(p)!r}")
    return p


def _course_commit() -> str:
    """The short hash of the course checkout ("" outside a git checkout)."""
    root = str(Path(__file__).resolve().parent.parent)
    try:
        out = subprocess.run(
            ["git", "-C", root, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and _COMMIT.fullmatch(commit) else ""


def load(path=None) -> list[Record]:
    """The records in ``path`` (default: the shipped file), validated: a missing file raises
    FileNotFoundError, a malformed one ValueError naming the file, the record and the bad field."""
    p = _path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FileNotFoundError(f"no reference file at {p}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not valid JSON ({e})") from None
    if not isinstance(data, dict) or set(data) != {"records"} or not isinstance(data["records"], list):
        raise ValueError(f'{p}: expected an object {{"records": [...]}} and nothing else')
    out = []
    for i, d in enumerate(data["records"]):
        problem = _record_problem(d)
        if problem:
            what = f" ({d['experiment']!r})" if isinstance(d, dict) and isinstance(d.get("experiment"), str) else ""
            raise ValueError(f"{p}: record {i}{what}: {problem}")
        out.append(Record(**d))
    return out


def _sorted_dict(v):
    return {k: _sorted_dict(v[k]) for k in sorted(v)} if isinstance(v, dict) else v


def save(records: Iterable[Record], path=None) -> Path:
    """Write ``records`` to ``path`` (default: the shipped file), sorted and in a fixed layout, so that
    saving the same records twice gives the same bytes."""
    path_or_none(path, "path")
    p = _path(path)
    records = list(sequence(records, "records", "Records")) if not isinstance(records, Iterable) else list(records)
    for i, r in enumerate(records):
        if not isinstance(r, Record):
            raise TypeError(f"records[{i}] must be a reference.Record, got {r!r}")
    if not records:
        raise ValueError("records is empty: saving it would write a file without any reference; give the records")
    records.sort(key=lambda r: (r.experiment, r.device, r.torch, r.cuda, r.date, r.command, r.source))
    body = {"records": [{**r.to_dict(), "results": _sorted_dict(r.results)} for r in records]}
    text = json.dumps(body, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=p.name, suffix=".tmp", dir=p.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def find(experiment: str, *, published: bool = True, path=None) -> list[Record]:
    """References for ``experiment``: recorded ones first (newest first), then published ones."""
    if not isinstance(experiment, str) or not experiment:
        raise ValueError(f"experiment must be a non-empty string, got {experiment!r}")
    p = _path(path)
    recorded = [r for r in (load(p) if p.exists() else []) if r.experiment == experiment]
    recorded.sort(key=lambda r: (r.device, r.torch))
    recorded.sort(key=lambda r: r.date, reverse=True)  # stable: newest first, ties by device
    if not isinstance(published, bool):
        raise TypeError(f"published must be True or False, got {published!r}")
    pub = [r for r in PUBLISHED if r.experiment == experiment] if published else []
    return recorded + pub


EXPERIMENTS: dict[str, Callable[[str], dict]] = {
    "tf32_matmul": record_tf32_matmul,
    "matmul_timing_check": record_timing_check,
    "e2e_matmul_throughput": record_matmul_throughput,
    "e2e_training": record_training,
    "fp8_scaled_mm": record_fp8_scaled_mm,
}
"""The recordable experiments: each runs one lesson's measurement on a CUDA device and returns its results."""


def _cuda_device(device) -> torch.device:
    if not isinstance(device, (str, torch.device)):  # torch.device(3) is 'cuda:3' on a CUDA build: refuse ints here
        raise ValueError(f"device must be 'cuda' or 'cuda:N', got {device!r}")
    try:
        d = torch.device(device)
    except (RuntimeError, TypeError):
        d = None
    if d is None or d.type != "cuda":
        raise ValueError(f"device must be 'cuda' or 'cuda:N', got {device!r}")
    return d


def record(names: Iterable[str] | None = None, path=None, device="cuda", command: str | None = None) -> list[Record]:
    """Run the experiments of ``EXPERIMENTS`` (all, or ``names``) on the CUDA GPU ``device`` and store them
    (with the GPU, versions, date, ``command`` and course commit), replacing an earlier record of the same
    experiment, GPU and torch version; the file is saved after each experiment. Returns the new records."""
    d = _cuda_device(device)
    path_or_none(path, "path")
    if names is not None and not isinstance(names, (str, list, tuple)):
        raise TypeError(f"names must be None, an experiment name or a list of them, got {type(names).__name__}")
    if command is not None and not isinstance(command, str):
        raise TypeError(f"command must be None or a str, got {type(command).__name__}")
    if not torch.cuda.is_available():
        raise RuntimeError(NO_CUDA_MESSAGE)
    known = EXPERIMENTS
    todo = sorted(known) if names is None else [names] if isinstance(names, str) else list(names)
    unknown = [n for n in todo if n not in known]
    if unknown:
        raise ValueError(
            f"unknown experiment(s) {', '.join(repr(u) for u in unknown)}; known: {', '.join(sorted(known))}"
        )
    if command is None:
        command = f"amp_lessons.reference.record(names={todo!r}, device={str(d)!r})"
    p = _path(path)
    gpu = torch.cuda.get_device_name(d)
    major, minor = torch.cuda.get_device_capability(d)
    cuda = torch.version.cuda or ""
    commit = _course_commit()
    existing = load(p) if p.exists() else []
    new = []
    for name in todo:
        results = known[name](str(d))
        problem = _results_problem(results)
        if problem:
            raise ValueError(f"experiment {name!r} returned bad results: {problem}")
        rec = Record(
            experiment=name,
            device=gpu,
            capability=f"{major}.{minor}",
            torch=torch.__version__,
            cuda=cuda,
            date=datetime.date.today().isoformat(),
            command=command,
            results=dict(results),
            source="",
            commit=commit,
        )
        same = (name, gpu, rec.torch, "")
        existing = [r for r in existing if (r.experiment, r.device, r.torch, r.source) != same] + [rec]
        save(existing, p)
        new.append(rec)
    return new


def _fmt(key: str, v) -> str:
    if v is None:
        return "-"
    if isinstance(v, dict):
        return ", ".join(f"{k}={_fmt(k, x)}" for k, x in v.items())
    if isinstance(v, float) and math.isfinite(v):
        return format_seconds(v) if key.endswith("_s") else f"{v:.3g}"
    return str(v)


@dataclass(frozen=True, repr=False)
class Comparison(TableRecord):
    """This machine's results next to every reference of one experiment (a table)."""

    experiment: str
    label: str
    this_machine: dict
    references: tuple[Record, ...]
    _row_headers = True

    def header(self) -> list[str]:
        titles = [
            f"{r.device} [{i}] (published)" if r.source else f"{r.label} [{i}]"
            for i, r in enumerate(self.references, 1)
        ]
        return [self.label, *titles]

    def rows(self) -> list[tuple[str, list[str]]]:
        keys = list(self.this_machine)
        for r in self.references:
            keys += [k for k in r.results if k not in keys]
        return [
            (k, [_fmt(k, self.this_machine.get(k))] + [_fmt(k, r.results.get(k)) for r in self.references])
            for k in keys
        ]

    def notes(self) -> list[str]:
        if not self.references:
            return [f"no reference recorded yet for {self.experiment}: run `{CLI} record` on a CUDA GPU"]
        return [f"[{i}] {r.provenance}" for i, r in enumerate(self.references, 1)]

    def _table(self) -> tuple:
        rows = [[k, *cells] for k, cells in self.rows()]
        return ["", *self.header()], rows, f"{self.experiment}: this machine vs reference", self.notes()


def compare(experiment: str, this_machine: Mapping, label: str, *, path=None, published: bool = True) -> Comparison:
    """A table of ``this_machine``'s results (column ``label``, e.g. "measured on this machine (cpu)")
    next to every reference of ``experiment``, with each reference's provenance under it."""
    if not isinstance(this_machine, Mapping):
        raise TypeError(f"this_machine must be a dict of results, got {this_machine!r}")
    if not isinstance(label, str) or not label:
        raise ValueError(f"label must say where this machine's results come from, got {label!r}")
    return Comparison(experiment, label, dict(this_machine), tuple(find(experiment, published=published, path=path)))


@dataclass(frozen=True, repr=False)
class Overview(TableRecord):
    """Every reference the course holds, one row per record: experiment, ``Record.label`` and figure count."""

    records: tuple[Record, ...]

    def _table(self) -> tuple:
        header = ["experiment", "where it comes from", "figures"]
        rows = [[r.experiment, r.label, str(len(r.results))] for r in self.records]
        recorded = sum(not r.source for r in self.records)
        notes = [
            f"{recorded} recorded on a GPU, {len(self.records) - recorded} published; "
            f"`{CLI} show EXPERIMENT` prints a record's figures and full provenance"
        ]
        return header, rows, "GPU references of the course", notes


def overview(*, path=None, published: bool = True) -> Overview:
    """A table of every reference: the recorded ones of ``path`` (default: the shipped file), then
    (``published``) the published figures. A ``path`` that names no file raises FileNotFoundError."""
    if not isinstance(published, bool):
        raise TypeError(f"published must be True or False, got {published!r}")
    p = _path(path)
    recorded = load(p) if path is not None or p.exists() else []
    names = sorted({r.experiment for r in recorded} | ({r.experiment for r in PUBLISHED} if published else set()))
    return Overview(tuple(r for n in names for r in find(n, published=published, path=p)))


def _print_record(r: Record, file) -> None:
    device = f" ({r.device})" if r.source else ""  # a measured record's provenance names its GPU already
    print(f"{r.experiment}{device}: {r.provenance}", file=file)
    width = max((len(k) for k in r.results), default=0)
    for k, v in r.results.items():
        print(f"  {k:<{width}}  {_fmt(k, v)}", file=file)


def main(argv=None) -> int:
    """``record`` / ``show`` (see the module docstring). Returns the exit code: 0 on success,
    1 if ``show`` found nothing, 2 if ``record`` cannot run (no CUDA GPU, unknown experiment)."""
    if argv is not None:
        argv = list(sequence(argv, "argv", "command-line words (str)"))
    parser = argparse.ArgumentParser(prog=CLI, description="Record or show the course's reference measurements.")
    sub = parser.add_subparsers(dest="action", required=True)
    rec = sub.add_parser("record", help="measure the experiments of EXPERIMENTS on this machine's CUDA GPU")
    rec.add_argument("--only", nargs="+", metavar="NAME", help="only these experiments")
    rec.add_argument("--file", default=None, help=f"the JSON file to update (default: {DEFAULT_PATH})")
    show = sub.add_parser("show", help="print references with their provenance")
    show.add_argument("experiment", nargs="?", help="one experiment (default: all)")
    show.add_argument("--file", default=None, help=f"the JSON file to read (default: {DEFAULT_PATH})")
    args = parser.parse_args(argv)

    if args.action == "record":
        if not torch.cuda.is_available():
            print(f"error: {NO_CUDA_MESSAGE}", file=sys.stderr)
            return 2
        command = " ".join(
            [
                CLI,
                "record",
                *(["--only", *args.only] if args.only else []),
                *(["--file", args.file] if args.file else []),
            ]
        )
        try:
            new = record(args.only, path=args.file, command=command)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        for r in new:
            _print_record(r, sys.stdout)
        print(f"saved to {_path(args.file)}")
        return 0

    p = _path(args.file)
    if args.experiment:
        found = find(args.experiment, path=p)
    else:
        recorded = load(p) if p.exists() else []
        names = sorted({r.experiment for r in [*recorded, *PUBLISHED]})
        found = [r for n in names for r in find(n, path=p)]
    if not found:
        print(f"no reference recorded yet for {args.experiment or 'any experiment'}: run `{CLI} record` on a CUDA GPU")
        return 1
    for r in found:
        _print_record(r, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
