"""Project-wide pytest hooks: report how long each notebook took under nbval.

The budgets (issue 2: each notebook under 30 s, the suite under 2 minutes on the 2-core CI
machine) are reported, not asserted: timing assertions flake on shared machines.
"""

from collections import defaultdict

NOTEBOOK_BUDGET_S = 30.0
SUITE_BUDGET_S = 120.0

_durations: dict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _durations[path] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _durations:
        return
    tr = terminalreporter
    tr.section("notebook run times (nbval, kernel start included)")
    for path, seconds in sorted(_durations.items()):
        flag = "" if seconds <= NOTEBOOK_BUDGET_S else f"  OVER the {NOTEBOOK_BUDGET_S:.0f} s budget"
        tr.write_line(f"{seconds:7.1f} s  {path}{flag}")
    total = sum(_durations.values())
    flag = "" if total <= SUITE_BUDGET_S else f"  OVER the {SUITE_BUDGET_S:.0f} s budget"
    tr.write_line(f"{total:7.1f} s  all notebooks (sum over workers){flag}")
