"""Tests of amp_lessons._table: the one table renderer, in HTML and in plain text."""

import pytest

from amp_lessons._table import TONES, Cell, duration_text, html_table, nbytes_text, text_table


def test_html_escapes_text_and_keeps_trusted_markup():
    out = html_table(("a<b", "c"), [["x & y", Cell(html="<i>z</i>")]], title="T<1>", notes=["n<2>"])
    assert "a&lt;b" in out and "x &amp; y" in out and "<i>z</i>" in out
    assert "<b>T&lt;1&gt;</b>" in out and "<li>n&lt;2&gt;</li>" in out


def test_tones_come_from_the_theme_with_a_fallback():
    out = html_table(None, [[Cell("bad", tone="bad", bold=True)]])
    assert "var(--jp-error-color1" in out and "<b>bad</b>" in out and "<th" not in out
    assert all("var(--jp-" in v and "#" in v for v in TONES.values())  # a theme variable, with a fallback colour
    with pytest.raises(ValueError, match="tone='red' is not one of 'good', 'warn', 'bad', 'muted'"):
        Cell("x", tone="red")


def test_marked_rows_and_row_headers():
    out = html_table(("k", "v"), [["a", "1"], ["b", "2"]], marked=[1], row_headers=True)
    rows = out.split("<tr")[2:]
    assert "rgba(" not in rows[0] and "rgba(" in rows[1]
    assert rows[0].count("<th") == 1 and rows[0].count("<td") == 1


def test_text_table_aligns_columns_under_a_rule():
    out = text_table(("name", "value"), [["fp16", "65504"], ["bf16", Cell("3.39e38", tone="warn")]], title="max")
    assert out.splitlines() == ["max", "name  value", "----  -------", "fp16  65504", "bf16  3.39e38"]
    assert text_table(None, [["a", "bb"], ["ccc", "d"]], notes=["note"]).splitlines() == ["a    bb", "ccc  d", "note"]


def test_identifiers_and_short_cells_never_wrap_long_sentences_may():
    out = html_table(("op", "what it does"), [["aten::_log_softmax", "the log of a softmax, in one kernel"]])
    cells = out.split("<td")[1:]
    assert "white-space: nowrap" in cells[0] and "aten::_log_softmax" in cells[0]
    assert "white-space: nowrap" not in cells[1]
    assert Cell("322 µs").keeps_whole and Cell("block1.wo").keeps_whole and not Cell("a long sentence here").keeps_whole
    assert Cell("a long sentence here", nowrap=True).keeps_whole and not Cell("x", nowrap=False).keeps_whole
    assert not Cell(html="<i>z</i>").keeps_whole  # trusted markup decides for itself
    with pytest.raises(TypeError, match="nowrap must be True, False or None"):
        Cell("x", nowrap="yes")


def test_a_table_record_renders_its_table_both_ways():
    from dataclasses import dataclass

    from amp_lessons._table import TableRecord

    @dataclass(frozen=True, repr=False)
    class Speeds(TableRecord):
        ms: float

        def _table(self):
            return ("op", "time (ms)"), [["aten::mm", f"{self.ms:.3g}"]], "times", ["one run"]

        def _marked(self):
            return [0]

    r = Speeds(1.23456)
    assert repr(r) == str(r) == "times\nop        time (ms)\n--------  ---------\naten::mm  1.23\none run"
    html = r._repr_html_()
    assert "<b>times</b>" in html and "time (ms)" in html and ">1.23<" in html and "rgba(" in html
    assert r.ms == 1.23456


def test_durations_and_byte_counts_in_words():
    assert nbytes_text(1536) == "1.5 KiB"
    assert [duration_text(s) for s in (5, 90, 7200, 3 * 86400)] == [
        "about 5 s",
        "about 1.5 minutes",
        "about 2 hours",
        "about 3 days",
    ]


def test_a_lessons_own_table_shows_itself_as_html_and_text():
    from amp_lessons import table

    t = table(("GPU", "TFLOP/s"), [["H100", "804"]], title="8192^3 bf16", notes=["recorded on a GPU"])
    assert "<table" in t._repr_html_() and "H100" in t._repr_html_() and "recorded on a GPU" in t._repr_html_()
    assert str(t).splitlines()[0] == "8192^3 bf16" and "804" in repr(t)
    with pytest.raises(ValueError, match=r"rows\[0\] must be a list or tuple of 2 cells"):
        table(("a", "b"), [["only one"]])
    with pytest.raises(TypeError, match="header must be a non-empty list or tuple"):
        table("ab", [])
