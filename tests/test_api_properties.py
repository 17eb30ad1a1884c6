"""Property-based tests (hypothesis) of the bad-input contract: where tests/test_api_contract.py tries a fixed list of
bad values per kind of argument, these draw them: any string, float, bool, huge or negative int, None, list... for
every argument of a probed kind of every public callable that the harness (tests/api_contract.py) can call, and any
object at all as a learner's answer to every exercise checker.

The examples are drawn deterministically (``derandomize`` in the hypothesis profile of tests/conftest.py), so that a
run on one machine is the run on every machine, and bounded: the whole file takes about 20 s here."""

from __future__ import annotations

import math
import re

import pytest
import torch
from hypothesis import given, settings, strategies as st

from amp_lessons import formats
from amp_lessons.checks import CheckResult
from tests import api_contract as harness
from tests.load import patience

# The exercise checkers: check_* callables that answer with a CheckResult (others named check_* validate arguments)
CHECKERS = sorted(
    n
    for n, f in harness.public_callables().items()
    if n.split(".")[-1].startswith("check_") and "CheckResult" in str(getattr(f, "__annotations__", {}).get("return"))
)


def _targets() -> list[tuple[str, str, str]]:
    """(callable, argument, kind) for every probed argument of every callable with a valid call."""
    out = []
    for qualname, fn in sorted(harness.public_callables().items()):
        if harness.classify(qualname, fn) != "probed" or qualname in CHECKERS:
            continue
        for p in harness.inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or (qualname, p.name) in harness.ALLOWED:
                continue
            kind = harness._kind(p)
            if kind is not None:
                out.append((qualname, p.name, kind))
    return out


TARGETS = _targets()


def _not_a_format(text: str) -> bool:
    try:
        formats.get_format(text)
    except (TypeError, ValueError):
        return True
    return False


_DEVICE = re.compile(r"cpu|cuda(:\d+)?")
_TEXT = st.text(max_size=12)
_NOT_INTEGRAL = st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not float(v).is_integer())
# An int argument given a float is refused even when the float is whole (2.0): the contract says ints are ints.
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)

BAD_VALUES = {
    "count": st.one_of(
        st.booleans(), _FLOATS, _TEXT, st.integers(max_value=-1), st.integers(min_value=10**12, max_value=10**40)
    ),
    "seed": st.one_of(
        st.booleans(), _FLOATS, _TEXT, st.none(), st.integers(max_value=-1), st.integers(min_value=2**63)
    ),
    "device": st.one_of(_TEXT.filter(lambda t: not _DEVICE.fullmatch(t)), st.integers(), _FLOATS),
    "device_type": st.one_of(_TEXT.filter(lambda t: t not in ("cpu", "cuda")), st.integers(), _FLOATS),
    "format": st.one_of(_TEXT.filter(_not_a_format), st.integers(), _FLOATS),
    "bool": st.one_of(_TEXT, st.integers().filter(lambda v: not isinstance(v, bool)), _FLOATS, st.none()),
    "int": st.one_of(st.booleans(), _NOT_INTEGRAL, _TEXT, st.lists(st.integers(), max_size=2)),
    "float": st.one_of(_TEXT, st.none(), st.lists(st.floats(), max_size=2), st.dictionaries(_TEXT, st.integers())),
    "choice": st.one_of(_TEXT.filter(lambda t: t not in formats.ROUNDING_MODES), st.integers(), st.none()),
    # a real number that must be positive: NaN, infinities, zero and negatives too
    "positive": st.one_of(
        _TEXT, st.none(), st.floats(allow_nan=True, allow_infinity=True).filter(lambda v: not 0 < v < math.inf)
    ),
    # a choice among names the callable documents: "~" makes sure no drawn text is one of them
    "text": st.one_of(_TEXT.map(lambda t: "~" + t), st.integers(), st.none()),
}


def test_the_properties_cover_the_probed_api():
    callables = {q for q, _, _ in TARGETS}
    kinds = {k for _, _, k in TARGETS}
    # measured: 339 arguments of 143 callables, every kind of argument (tensors, models and functions: the fixed harness)
    assert len(callables) >= 135 and kinds == set(BAD_VALUES), (len(callables), kinds)


@settings(max_examples=600)
@given(data=st.data())
def test_any_bad_argument_gets_a_clear_error_at_once(data):
    qualname, name, kind = data.draw(st.sampled_from(TARGETS), label="argument")
    bad = data.draw(BAD_VALUES[kind], label="bad value")
    fn = harness.public_callables()[qualname]
    args, kwargs = harness.valid_call(qualname, fn)
    params = [
        p for p in harness.inspect.signature(fn).parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    i = [p.name for p in params].index(name)
    p = params[i]
    a, kw = list(args), dict(kwargs)
    if p.kind == p.KEYWORD_ONLY or (p.default is not p.empty and i >= len(a)):
        kw[name] = bad
    else:
        a[i] = bad
    if harness.allowed(qualname, name, bad) or (kind == "count" and bad == 0 and name in harness.ZERO_ALLOWED):
        return  # a value the harness documents as right for this argument (tests/api_contract.py: ALLOWED)
    outcome = harness._run(qualname, fn, a, kw, name, bad)
    if outcome.kind == "slow":  # a busy machine: look again, longer
        outcome = harness._run(qualname, fn, a, kw, name, bad, limit=5 * harness.LIMIT_S)
    assert outcome.kind == "clear", outcome


def _raising(*args, **kwargs):
    raise RuntimeError("the learner's code failed")


ANY_ANSWER = st.one_of(
    st.none(),
    st.just(...),
    st.booleans(),
    st.integers(),
    _FLOATS,
    _TEXT,
    st.lists(st.one_of(st.integers(), _FLOATS, _TEXT), max_size=4),
    st.dictionaries(_TEXT, st.one_of(st.integers(), _TEXT), max_size=4),
    st.tuples(st.integers(), _FLOATS),
    st.builds(lambda v: lambda *a, **k: v, st.one_of(st.none(), st.integers(), _FLOATS, _TEXT)),
    st.just(_raising),
    st.builds(torch.full, st.tuples(st.integers(1, 3)), st.floats(allow_nan=True, width=32)),
)


@pytest.mark.parametrize("name", CHECKERS)
@settings(max_examples=25)
@given(answer=ANY_ANSWER)
def test_checkers_answer_any_answer_with_a_check_result(name, answer):
    fn = harness.public_callables()[name]
    args, kwargs = harness.valid_call(name, fn)
    with harness._time_limit(patience(20.0)):
        result = fn(answer, *args[1:], **kwargs)
    assert isinstance(result, CheckResult) and isinstance(result.message, str) and result.message, (name, answer)
