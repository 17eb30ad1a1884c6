"""Bad input never crashes a lesson: every public callable answers a learner's typo with a clear error raised by
the course, at once and before any large allocation; checkers answer any answer with a CheckResult
(tests/api_contract.py holds the harness). That a checker answers any learner's answer with a CheckResult is
tests/test_checker_contract.py's."""

import dataclasses
import importlib
import inspect
import math
import time

import pytest
import torch

from tests import api_contract as harness

_PROBED: dict[str, list] = {}


def _outcomes_of(module: str) -> list:
    """The contract's outcomes for one module, probed once per process (``make test LESSON=NN`` probes its topic's)."""
    if module not in _PROBED:
        _PROBED[module] = harness.probe_module(module)
    return _PROBED[module]


@pytest.fixture(scope="module")
def outcomes():
    return [o for m in harness.MODULE_NAMES for o in _outcomes_of(m)]


def test_every_public_callable_is_covered(outcomes):
    """A public callable (in an ``__all__``) that the harness can neither call nor classify fails here: give it a
    valid call in ``_valid_value`` (then every argument is probed), or make it a result record or a picture."""
    uncovered = sorted(o.callable for o in outcomes if o.kind == "harness")
    assert not uncovered, "public callables without contract coverage (no valid call known): " + ", ".join(uncovered)


@pytest.mark.parametrize("module", harness.MODULE_NAMES)
def test_every_bad_argument_gets_a_clear_error_at_once(module):
    bad = [
        o
        for o in _outcomes_of(module)
        if o.kind not in ("clear", "probed", "harness", "record", "picture", "exception")
    ]
    assert not bad, harness.report(bad)


def test_the_classifications_are_checked(outcomes):
    fns = harness.public_callables()
    for o in outcomes:
        fn = fns[o.callable]
        if o.kind == "record":  # a class the course builds: a dataclass, or returned by a public function
            assert isinstance(fn, type) and (dataclasses.is_dataclass(fn) or harness._returned_by_the_course(fn))
            assert o.callable not in harness._BUILT_BY_LEARNERS
        elif o.kind == "picture":  # plot_*(result, ax=None) -> Axes
            sig = inspect.signature(fn)
            assert o.callable.split(".")[-1].startswith("plot_") and "ax" in sig.parameters
            assert "Axes" in str(sig.return_annotation)
        elif o.kind == "exception":
            assert isinstance(fn, type) and issubclass(fn, BaseException)


def test_the_harness_reaches_the_whole_api(outcomes):
    fns = harness.public_callables()
    probed = {o.callable for o in outcomes if o.kind == "probed"}
    classified = {o.callable for o in outcomes if o.kind in ("record", "picture", "exception")}
    assert probed | classified == set(fns), sorted(set(fns) - probed - classified)
    assert sum(o.kind == "clear" for o in outcomes) >= len(probed), "each probed callable gets bad calls"


def test_every_topic_and_base_module_is_enumerated():
    from amp_lessons.lessons import TOPICS

    fns = harness.public_callables()
    ids = set(map(id, fns.values()))
    for m in list(TOPICS) + harness.MODULES:
        mod = importlib.import_module(f"amp_lessons.{m}" if m else "amp_lessons")
        public = {n: getattr(mod, n) for n in getattr(mod, "__all__", [])}
        callables = [n for n, o in public.items() if callable(o) and not isinstance(o, (type(math), torch.dtype))]
        assert all(id(public[n]) in ids for n in callables), (m, callables)
    assert {q.split(".")[0] for q in fns} >= set(TOPICS)


def test_the_harness_sees_each_kind_of_bad_answer():
    def silent(n: int = 3):
        return n

    def unclear(steps: int = 3):
        return [0][steps]

    def clear(steps: int = 3):
        if not isinstance(steps, int) or isinstance(steps, bool) or not 1 <= steps <= 1000:
            raise ValueError(f"steps must be an int >= 1, got {steps!r}")

    def vague(steps: int = 3):
        raise ValueError("bad")

    def slow(repeats: int = 3):
        while True:
            pass

    def greedy(size: int = 3):
        return torch.empty(size, 1024, 1024, dtype=torch.uint8)  # size MiB, refused by nothing

    kinds = {
        f.__name__: {o.kind for o in harness.probe(f.__name__, f)} - {"probed"} for f in (silent, unclear, clear, vague)
    }
    assert kinds["silent"] == {"silent"} and "unclear" in kinds["unclear"] and kinds["clear"] == {"clear"}
    assert kinds["vague"] == {"unclear"}  # a ValueError that names neither the argument nor what is allowed
    assert harness._run("slow", slow, [], {"repeats": 10**12}, "repeats", 10**12, limit=0.2).kind == "slow"
    # a size of 10**12 MiB fails in the allocator, under the harness's address-space limit: "huge", at once
    t0 = time.perf_counter()
    assert harness._run("greedy", greedy, [], {"size": 10**12}, "size", 10**12).kind == "huge"
    assert time.perf_counter() - t0 < 5


def test_an_error_raised_inside_torch_is_unclear():
    def deep(x=None):
        return torch.nn.Linear(4, 5)(torch.ones(2, 3))  # torch's message, from torch's Linear: not the course's

    o = harness._run("deep", deep, [], {"x": "x"}, "x", "x")
    assert o.kind == "unclear" and "outside the course" in o.detail


def test_every_extra_bad_call_and_allowance_names_a_public_callable():
    # the contract probes the faces only: a row for a private or removed name would never run
    public = set(harness.public_callables())
    assert not set(harness.EXTRA) - public
    assert not {key[0] for key in harness.ALLOWED} - public
