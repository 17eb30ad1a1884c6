"""Lesson 04's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.autocast._checks``, keyed by its name."""

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from tests.checker_rows import Row, solution_of


def _bce_starter(z, y):
    return F.binary_cross_entropy(torch.sigmoid(z), y)


def _counting(condition):
    """count_casts(work, *args) on a TorchDispatchMode that counts the ops ``condition(func, args, out)`` holds for."""

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.casts = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.casts += bool(condition(func, args, out))
            return out

    def count_casts(work, *args):
        with Counter() as counter:
            work(*args)
        return counter.casts

    return count_casts


_count_casts_starter = _counting(lambda f, a, o: False)  # the notebook's starter: counts nothing yet
_count_every_copy = _counting(lambda f, a, o: f is torch.ops.aten._to_copy.default)  # whatever its dtypes


def _count_with_the_course_tracer(work, *args):
    from amp_lessons import autocast

    return len(autocast.trace(work, *args).casts)


#: bad calls of the topic's face, beyond the contract's own (tests/api_contract.py adds them to its EXTRA)
BAD_CALLS = {
    "policy_of": {"op_name": ["", "sideways", "__class__", "aten::", "torch.nn.functional.cross_entropy"]},
    "output_dtypes": {"exprs": [{}, {"a": 3}], "device_types": [[], ("cpu", "cpu"), None, ("tpu",)]},
}

_DTYPES = solution_of("04").DTYPE_PREDICTIONS
_CUMSUM = "cuda: cumsum(a @ b, 0)"

ROWS: dict[str, Row] = {
    "check_dtype_predictions": Row(
        lambda s: s.DTYPE_PREDICTIONS,
        dict.fromkeys(_DTYPES, "..."),
        dict(_DTYPES, **{_CUMSUM: "torch.float16"}),
        hidden=(_DTYPES[_CUMSUM].removeprefix("torch."),),
    ),
    "check_bce_fix": Row(
        lambda s: s.bce_fix,
        _bce_starter,
        (
            lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum"),
            # the probability form written out: right on moderate fp32 logits, inf at z = 20 and on fp16 at z = 10
            lambda z, y: -(y * torch.log(torch.sigmoid(z)) + (1 - y) * torch.log(1 - torch.sigmoid(z))).mean(),
        ),
    ),
    "check_cast_counter": Row(
        lambda s: s.count_casts, _count_casts_starter, (_count_every_copy, _count_with_the_course_tracer)
    ),
}
