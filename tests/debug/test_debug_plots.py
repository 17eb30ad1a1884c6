"""Tests of amp_lessons.debug._plots."""

import matplotlib

matplotlib.use("Agg")


from amp_lessons import debug
from amp_lessons._draw import named_artists


def test_plot_trace_marks_the_overflowing_rows_and_the_format_limits():
    model = debug.t5_like_model()
    x, _ = debug.t5_like_batch()
    tr = debug.trace_overflow(model, x)
    ax = debug.plot_trace(tr)
    bad = [r["module"] for r in tr.rows(True) if r["fp16 overflow"] > 0]
    assert bad == ["block1.wo", "block1"]
    named = named_artists(ax)
    assert len(named["overflow"]) == 2 and len(named["ok"]) == len(tr.rows(True)) - 2
    line = named_artists(ax)["max-fp16"]
    assert line.get_xdata()[0] == 65504.0
    assert ax.get_xscale() == "log"


def test_plot_bytes_per_parameter_stacks_the_components():
    model = debug.t5_like_model()
    x, _ = debug.t5_like_batch()
    maps = [debug.dtype_map(model, x, loss_fn=lambda o: o.float().sum(), setting=s) for s in ("fp32", "autocast bf16")]
    ax = debug.plot_bytes_per_parameter(maps)
    assert [p.get_width() for p in named_artists(ax)["weights"]] == [4.0, 4.0]
    copies = named_artists(ax)["low-precision weight copies"]
    assert copies[0].get_width() == 0.0 and copies[1].get_width() > 0
