"""Bad input never crashes a lesson: every public callable answers a learner's typo with a clear error, at
once; checkers answer any answer with a CheckResult (tests/api_contract.py holds the harness)."""

import math

import pytest
import torch

from amp_lessons.checks import CheckResult
from tests import api_contract as harness


@pytest.fixture(scope="module")
def outcomes():
    return harness.probe_all()


def test_every_bad_argument_gets_a_clear_error_at_once(outcomes):
    bad = [o for o in outcomes if o.kind not in ("clear", "harness", "record")]
    assert not bad, harness.report(bad)


def test_the_harness_reaches_most_of_the_api(outcomes):
    probed = {o.callable for o in outcomes if o.kind not in ("harness", "record")}
    records = {o.callable for o in outcomes if o.kind == "record"}
    missing = {o.callable for o in outcomes if o.kind == "harness"}
    # measured: of 282 public callables, 149 have arguments of a probed kind; 44 are result records (dataclasses
    # the course builds); 17 have no valid call known to the harness: pictures of results (their only other
    # argument is ``ax``), the compiled workloads' comparisons (each would compile a model), a profiler tree,
    # a worker error and fp8.cast_stats (four tensors of one cast)
    assert len(probed) >= 140 and len(missing) <= 20 and len(records) <= 60, sorted(missing)
    assert sum(o.kind == "clear" for o in outcomes) >= 900


def test_the_harness_sees_each_kind_of_bad_answer():
    def silent(n: int = 3):
        return n

    def unclear(steps: int = 3):
        return [0][steps]

    def clear(steps: int = 3):
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 1000:
            raise ValueError(f"steps must be an int >= 1, got {steps!r}")

    def slow(repeats: int = 3):
        while True:
            pass

    kinds = {f.__name__: {o.kind for o in harness.probe(f.__name__, f)} for f in (silent, unclear, clear)}
    assert kinds["silent"] == {"silent"} and "unclear" in kinds["unclear"] and kinds["clear"] == {"clear"}
    assert harness._run("slow", slow, [], {"repeats": 10**12}, "repeats", 10**12, limit=0.2).kind == "slow"


def _raises(*args):
    raise RuntimeError("the learner's function failed")


ODD_ANSWERS = [None, ..., "x", "", 3, -1.5, math.nan, math.inf, [], {}, (), object(), _raises, lambda *a: "x",
               torch.ones(2), True]  # fmt: skip


CHECKERS = sorted(
    n
    for n, f in harness.public_callables().items()
    if n.split(".")[-1].startswith("check_") and "CheckResult" in str(getattr(f, "__annotations__", {}).get("return"))
)


def test_every_exercise_checker_is_probed():
    assert len(CHECKERS) >= 15, CHECKERS


@pytest.mark.parametrize("name", CHECKERS)
def test_checkers_answer_any_answer(name):
    fn = harness.public_callables()[name]
    call = harness.valid_call(name, fn)
    assert call is not None, f"the harness has no valid call of {name}"
    args, kwargs = call
    for answer in ODD_ANSWERS:
        with harness._time_limit(20.0):
            result = fn(answer, *args[1:], **kwargs)
        assert isinstance(result, CheckResult) and not result.ok and result.message, (name, answer)
