"""Lesson 11's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.compiled._checks``, keyed by its name."""

import torch
import torch.nn.functional as F

from tests.checker_rows import Row


def _no_inductor():
    from amp_lessons.compiled import inductor_status

    ok, why = inductor_status()
    return None if ok else why


ROWS: dict[str, Row] = {
    "check_fused_chain": Row(
        lambda s: s.fused_chain,
        lambda h, g, emulate: F.rms_norm(F.silu(g) * h, (h.shape[-1],)),
        lambda h, g, emulate: F.rms_norm(F.silu(g.float()) * h.float(), (h.shape[-1],)).bfloat16(),
        needs=_no_inductor,
    ),
    "check_compile_matching_eager": Row(
        lambda s: s.compile_matching_eager, lambda fn: torch.compile(fn), lambda fn: fn, needs=_no_inductor
    ),
}


# bad calls of the face's callables that once came without a clear error (joined to tests/api_contract.EXTRA): a
# workload name whose error did not name the argument
BAD_CALLS: dict[str, dict[str, list]] = {
    f: {"name": [None, "", "sideways", 3]} for f in ("make_inputs", "eager_casts", "captured_graph", "compile_workload")
}
BAD_CALLS["eager_casts"]["inputs"] = [[1, 2]]  # a list of numbers where the workload's tensors go
