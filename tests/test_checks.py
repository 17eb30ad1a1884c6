"""Tests of amp_lessons.checks."""

from amp_lessons import checks


def test_result_display():
    ok, bad = checks.CheckResult(True, "fine"), checks.CheckResult(False, "a <b> tag")
    assert repr(ok) == "Correct: fine" and repr(bad) == "Not yet: a <b> tag"
    assert "&lt;b&gt;" in bad._repr_html_()
