"""Lesson 08's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.debug._checks``, keyed by its name."""

import torch

from tests.checker_rows import Row


def _keep_whole_model_fp32(model):
    from amp_lessons.debug._models import KeepFP32

    return KeepFP32(model)


def _starter_hook(model, x):
    """Exercise 1's starter: the body is ``...``."""


def _hooked(test, *, inputs=False, cleanup=True):
    """A naive answer that hooks every module's output (its inputs, with ``inputs``) and returns the first name
    ``test(tensors)`` flags; without ``cleanup`` it removes its hooks only when the model returns."""

    def answer(model, x):
        found = []
        handles = [
            m.register_forward_pre_hook(lambda m, a, n=n: found.append(n) if test(a) else None)
            if inputs
            else m.register_forward_hook(lambda m, a, out, n=n: found.append(n) if test(out) else None)
            for n, m in model.named_modules()
        ]
        try:
            model(x)
        finally:
            if cleanup:
                for h in handles:
                    h.remove()
        for h in handles:
            h.remove()
        return found[0] if found else None

    return answer


# a wrong answer: the inputs checked instead of the outputs, with a forward pre-hook
_first_input_with_inf = _hooked(lambda args: any(not torch.isfinite(a).all() for a in args), inputs=True)


ROWS: dict[str, Row] = {
    "check_nonfinite_hook": Row(lambda s: s.first_nonfinite_module, _starter_hook, _first_input_with_inf),
    "check_first_bad_layer": Row(lambda s: s.FIRST_BAD_LAYER, ..., "block4"),
    "check_fp16_fix": Row(lambda s: s.fix, lambda model: model, _keep_whole_model_fp32),
}


class _NotADtype:
    def __repr__(self):
        return "<not a dtype>"


# Bad calls of lesson 08's face that its argument kinds do not cover (tests/api_contract.py adds them to EXTRA)
BAD_CALLS: dict[str, dict[str, list]] = {
    "dtype_map": {"setting": [["autocast bf16"], {}]},  # unhashable: once a TypeError from the dict lookup
    "why_not_faster": {"dtype": [_NotADtype(), None, "fp32"]},  # the message names dtype, not autocast
    "check_fp16_fix": {"tolerance": [1e30, 1.5]},  # a tolerance above 100% checks nothing
    "t5_like_model": {"bad_block": [7]},  # a block the model does not have
}
