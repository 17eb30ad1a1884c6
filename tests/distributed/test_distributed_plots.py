"""Tests of amp_lessons.distributed._plots (on data built directly: no process group needed)."""

import matplotlib

matplotlib.use("Agg")


from amp_lessons import distributed
from amp_lessons._draw import named_artists
from amp_lessons.distributed._records import MemoryRow


def test_plot_reduction_error_draws_one_line_per_method_and_marks_zeros():
    r = distributed.reduction_error((2, 16, 128), elements=32)
    ax = distributed.plot_reduction_error(r)
    for method in distributed.REDUCTION_METHODS:
        line = named_artists(ax)[method]
        assert list(line.get_xdata()) == [2, 16, 128]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert r.errors["fp32 ring"][0] == 0  # two ranks in fp32: exact, drawn at the floor
    assert named_artists(ax)["fp32 ring"].get_ydata()[0] == 1e-10
    assert ax.get_legend().get_texts()[-1].get_text() == "error exactly 0 (drawn at 1e-10)"  # the legend names it


def test_plot_memory_per_parameter_stacks_the_components():
    rows = [MemoryRow("fp32", 2, 4.0, 4.0, 8.0, 16.0), MemoryRow("FSDP fp32", 2, 2.0, 2.0, 4.0, 8.0)]
    ax = distributed.plot_memory_per_parameter(rows)
    params, optim = named_artists(ax)["parameters"], named_artists(ax)["optimizer states"]  # one bar per setting
    assert [p.get_width() for p in params] == [4.0, 2.0]
    assert [p.get_x() for p in optim] == [8.0, 4.0]
    assert list(named_artists(ax)["expected"].get_xdata()) == [16.0, 8.0]
