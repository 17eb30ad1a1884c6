"""Tests of amp_lessons._table: the one table renderer, in HTML and in plain text."""

import pytest

from amp_lessons._table import TONES, Cell, html_table, text_table


def test_html_escapes_text_and_keeps_trusted_markup():
    out = html_table(("a<b", "c"), [["x & y", Cell(html="<i>z</i>")]], title="T<1>", notes=["n<2>"])
    assert "a&lt;b" in out and "x &amp; y" in out and "<i>z</i>" in out
    assert "<b>T&lt;1&gt;</b>" in out and "<li>n&lt;2&gt;</li>" in out


def test_tones_come_from_the_theme_with_a_fallback():
    out = html_table(None, [[Cell("bad", tone="bad", bold=True)]])
    assert "var(--jp-error-color1" in out and "<b>bad</b>" in out and "<th" not in out
    assert all(v.startswith("var(--jp-") and "#" in v for v in TONES.values())
    with pytest.raises(ValueError, match="tone='red' is not one of 'good', 'warn', 'bad', 'muted'"):
        Cell("x", tone="red")


def test_marked_rows_and_row_headers():
    out = html_table(("k", "v"), [["a", "1"], ["b", "2"]], marked=[1], row_headers=True)
    rows = out.split("<tr")[2:]
    assert "rgba(" not in rows[0] and "rgba(" in rows[1]
    assert rows[0].count("<th") == 1 and rows[0].count("<td") == 1


def test_text_table_aligns_columns_under_a_rule():
    out = text_table(("name", "value"), [["fp16", "65504"], ["bf16", Cell("3.39e38", tone="warn")]], title="max")
    assert out.splitlines() == [
        "max",
        "name  value",
        "----  -------",
        "fp16  65504",
        "bf16  3.39e38",
    ]
    assert text_table(None, [["a", "bb"], ["ccc", "d"]], notes=["note"]).splitlines() == ["a    bb", "ccc  d", "note"]
