"""Re-execute notebooks in a fresh kernel and store their outputs reproducibly (make notebooks).

Restart-and-run-all order (execution counts 1..N), then strip what churns diffs: execution
timestamps, widget state and the widget views that need it (a short text note stays), and the chunks a
kernel happened to send a stream in (consecutive stdout or stderr text is stored as one output, as
JupyterLab shows it). Cell ids are made stable ("cell-01", ...).

The notebook metadata is what JupyterLab itself would write, so that opening a notebook does not
mark it modified: JupyterLab replaces ``language_info`` with its kernel's whenever the two differ
(all fields, the Python version included), so the kernel's own ``language_info`` is kept as it
reported it (a kernel on another Python version still rewrites it: its version differs).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
WIDGET_NOTE = "Interactive widget: run this notebook in JupyterLab to use it."


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata.pop("widgets", None)  # widget state
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    # language_info stays as the executing kernel reported it (run() checks it): JupyterLab writes the same
    for i, cell in enumerate(nb.cells, start=1):
        cell["id"] = f"cell-{i:02d}"
        cell.metadata.pop("execution", None)
        for key in ("collapsed", "scrolled"):
            cell.metadata.pop(key, None)
        merged = []
        for out in cell.get("outputs", []):
            last = merged[-1] if merged else None
            if out.get("output_type") == "stream" and last and last.get("output_type") == "stream":
                if last.get("name") == out.get("name"):
                    last["text"] += out["text"]
                    continue
            merged.append(out)
        if "outputs" in cell:
            cell["outputs"] = merged
        for out in cell.get("outputs", []):
            out.get("metadata", {}).pop("execution", None)
            data = out.get("data")
            if data and WIDGET_MIME in data:
                data.pop(WIDGET_MIME)
                data["text/plain"] = WIDGET_NOTE
    return nb


def run(path: Path, timeout: int) -> float:
    nb = nbformat.read(path, as_version=4)
    t0 = time.perf_counter()
    NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    ).execute()
    elapsed = time.perf_counter() - t0
    if not nb.metadata.get("language_info", {}).get("version"):  # nbclient stores the kernel_info reply's
        raise RuntimeError(f"{path}: the kernel reported no language_info version")
    nbformat.write(clean(nb), path)
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("notebooks", nargs="+", type=Path)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = ap.parse_args()
    for path in args.notebooks:
        print(f"{path}: {run(path, args.timeout):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
