"""Lesson 11's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.compiled.checks``, keyed by its name."""

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
