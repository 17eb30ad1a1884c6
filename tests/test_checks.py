"""Tests of amp_lessons.checks, and the helpers the topics' checker tests share: ``solution`` (an instructor
solution module) and ``reveals`` (whether a message states a value)."""

import importlib.util
import math
import re
from pathlib import Path

import pytest

from amp_lessons import checks
from amp_lessons._table import TONES

ROOT = Path(__file__).resolve().parent.parent


def solution(lesson: str):
    """The instructors' solution module of ``lesson`` ("01" .. "11")."""
    spec = importlib.util.spec_from_file_location(
        f"solutions_{lesson}", ROOT / "instructors" / f"solutions_{lesson}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _forms(value) -> set[str]:
    if isinstance(value, str):
        return {value}
    v = float(value)
    forms = {repr(v), f"{v:g}", f"{v:.6g}", f"{v:.4g}", f"{v:.3g}", f"{v:.2g}"}
    if v.is_integer():
        forms.add(str(int(v)))
    mantissa, exponent = math.frexp(abs(v))
    if v > 0 and mantissa == 0.5:
        k = exponent - 1
        forms |= {f"2**{k}", f"2^{k}", f"2 ** {k}", f"2.0**{k}", f"2.0 ** {k}", f"2**({k})"}
    return forms


def reveals(message: str, value) -> bool:
    """Whether ``message`` states ``value`` (a number in any of the usual spellings, as a whole number: 448 is
    not found in 4480 or 1.448; or a string)."""
    return any(re.search(rf"(?<![\w.\-]){re.escape(f)}(?!\d)(?!\.\d)", message) for f in _forms(value))


def assert_your_turn(r):
    assert isinstance(r, checks.CheckResult) and r.todo and not r.ok and not r, r
    assert repr(r).startswith("Your turn: ") and TONES["bad"] not in r._repr_html_()


def assert_not_yet(r):
    assert isinstance(r, checks.CheckResult) and not r.ok and not r.todo and not r, r
    assert repr(r).startswith("Not yet: ")


def test_result_display():
    ok, bad = checks.CheckResult(True, "fine"), checks.CheckResult(False, "a <b> tag")
    assert repr(ok) == "Correct: fine" and repr(bad) == "Not yet: a <b> tag"
    assert "&lt;b&gt;" in bad._repr_html_()
    assert TONES["good"] in ok._repr_html_() and TONES["bad"] in bad._repr_html_()


def test_your_turn_is_a_third_state_in_a_muted_tone():
    todo = checks.CheckResult(False, "replace `...` with your value", todo=True)
    assert not todo and not todo.ok and todo.todo
    assert repr(todo) == "Your turn: replace `...` with your value"
    html = todo._repr_html_()
    assert TONES["muted"] in html and TONES["bad"] not in html and TONES["good"] not in html
    assert "Your turn:" in html and "Not yet" not in html and "&#9998;" in html
    # positional construction as before, and frozen
    assert checks.CheckResult(False, "m", True) == todo.__class__(False, "m", todo=True)
    assert checks.CheckResult(False, "m").todo is False
    with pytest.raises(AttributeError):
        todo.ok = True
    with pytest.raises(ValueError, match="todo"):
        checks.CheckResult(True, "both", todo=True)
    with pytest.raises(TypeError, match="todo"):
        checks.CheckResult(False, "m", todo="yes")


def test_placeholders():
    for p in (None, ..., "...", "", "  ...  "):
        assert checks.is_placeholder(p)
    for a in (0, 0.0, "e4m3", math.nan, [], "x"):
        assert not checks.is_placeholder(a)


def test_off_by_names_the_miss_not_the_answer():
    assert checks.off_by(131072.0, 65536.0) == "too large by a factor of 2"
    assert checks.off_by(1.0, 8.0) == "too small by a factor of 8"
    assert checks.off_by(3.0, 1.0) == "too large" and checks.off_by(0.3, 1.0) == "too small"
    assert checks.off_by(2.0**20, 1.0) == "too large"  # beyond 2**16: the factor would give the answer away
    assert checks.off_by(-1.0, 1.0) == "of the wrong sign" and checks.off_by(0, 2.0) == "zero"
    assert checks.off_by("x", 1.0) == "not a number" and checks.off_by(None, 1.0) == "not a number"
    assert checks.off_by(math.nan, 1.0) == "not it" and checks.off_by(2.0, 2.0) == "right"
    for got, want in ((131072.0, 65536.0), (3.0, 0.0078125), (1e-3, 42.1954)):
        assert not reveals(checks.off_by(got, want), want)
    with pytest.raises(TypeError, match="want"):
        checks.off_by(1.0, "x")


def test_reveals():
    assert reveals("expected 65504.0", 65504.0) and reveals("it is 65504", 65504)
    assert reveals("GradScaler has 32768.0", 32768.0) and reveals("use 2**15", 32768.0)
    assert reveals("expected 42.1954", 42.19539260864258) and reveals("fn(1.0) gave -8", -8)
    assert not reveals("fp16 overflows at 655040", 65504.0) and not reveals("bf16", 16)
    assert not reveals("a step of 2**-8", 8) and not reveals("1.448", 448)


def test_call_learner_turns_an_error_into_a_short_message():
    import torch

    got, err = checks.call_learner(lambda x, n: 1 / 0, torch.zeros(2, 3), 4)
    assert (
        got is None
        and err == "calling it with (a float32 tensor of shape (2, 3), 4) raised ZeroDivisionError: division by zero"
    )
    assert checks.call_learner(lambda x: x + 1, 1) == (2, None)
    assert checks.call_learner(3, 1)[1].startswith("expected a function")
