"""Tests of amp_lessons._draw."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from amp_lessons._draw import staircase as _staircase
from amp_lessons.formats import FORMATS, representable_values


@pytest.mark.parametrize("name", [n for n, f in FORMATS.items() if f.bits <= 8])
def test_staircase_matches_the_real_gaps(name):
    """At every representable value but max, the staircase equals the gap to the next value."""
    values = representable_values(name).double().numpy()
    edges, gaps = _staircase(FORMATS[name])
    pos = values[values > 0]
    real_gaps = np.diff(pos)
    stair = gaps[np.searchsorted(edges, pos[:-1], side="right") - 1]
    np.testing.assert_array_equal(stair, real_gaps)


def test_legend_outside_covers_no_data():
    """legend_outside puts the legend right of the axes: a line over the whole axes is not under it."""
    import matplotlib.pyplot as plt

    from amp_lessons._draw import legend_outside

    fig, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    ax.plot([0, 1], [0, 1], label="a line through the whole axes")
    ax.plot([0, 1], [1, 0], label="another")
    legend = legend_outside(ax)
    fig.canvas.draw()
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1
    assert legend.get_window_extent().x1 <= fig.bbox.x1 + 1  # constrained layout leaves room for it


def test_pct_matches_the_printed_formats():
    """pct(x, d) writes what f"{x:.{d}%}" prints, except that a non-zero share printing as 0 says so."""
    from amp_lessons._draw import pct

    for x in (0.0123, 0.5, 0.9134, 1.0, 0.00466):
        assert pct(x, 1) == f"{x:.1%}" and pct(x, 2) == f"{x:.2%}"
    assert pct(0.000253, 1) == "<0.1%" and pct(0.000253, 2) == "0.03%" and pct(0.00004, 2) == "<0.01%"
    assert pct(0, 1) == "0%" and pct(0.000253) == "0.0253%" and pct(0.00001) == "<0.01%"


# --- named artists ----------------------------------------------------------------------------------


def test_named_artists_are_read_only_and_say_which_names_exist():
    import matplotlib.pyplot as plt

    from amp_lessons._draw import NamedArtists, name_artist, named_artists

    fig, ax = plt.subplots()
    assert len(named_artists(ax)) == 0  # an Axes no plot function drew on
    (line,) = ax.plot([0, 1], [0, 1])
    assert name_artist(ax, "line", line) is line
    bars = ax.bar([0, 1], [1, 2])
    name_artist(ax, "bars", bars)
    named = named_artists(ax)
    assert isinstance(named, NamedArtists) and list(named) == ["line", "bars"]
    assert named["line"] is line and named["bars"] == tuple(bars) and type(named["bars"]) is tuple
    with pytest.raises(KeyError, match="no artist named 'nope' on this Axes; its named artists: 'line', 'bars'"):
        named["nope"]
    with pytest.raises(TypeError):
        named["line"] = line  # read-only
    (newer,) = ax.plot([1, 0], [0, 1])
    name_artist(ax, "line", newer)
    assert named_artists(ax)["line"] is newer  # a name drawn again names the newer artist
    with pytest.raises(TypeError, match="Axes"):
        named_artists(fig)
    with pytest.raises(TypeError, match="non-empty str"):
        name_artist(ax, "", line)
    with pytest.raises(TypeError, match="'x' must be an Artist or a list or tuple of Artists, got 'x'"):
        name_artist(ax, "x", [line, "x"])
    with pytest.raises(TypeError, match="'n' must be .*, got 3"):
        name_artist(ax, "n", 3)
    with pytest.raises(TypeError, match="Axes"):
        name_artist(fig, "line", line)
    plt.close(fig)


def _plot_inputs():
    """The cheapest valid inputs of every public plot function, by ``topic.plot_name``: a function of the
    (module-wide) gradient census, giving ``(args, kwargs)``."""
    import torch

    from amp_lessons import debug, fp8, fp16, scaling, timing
    from tests.faces import internals

    distributed = internals("distributed")
    e2e = internals("e2e")
    micro = internals("micro")
    tf32 = internals("tf32")
    from amp_lessons.autocast import output_dtypes
    from amp_lessons.compiled._experiments import PrecisionErrors, RunErrors

    def trace(c):
        return debug.trace_overflow(debug.t5_like_model(), debug.t5_like_batch()[0])

    def maps(c):
        model, (x, _) = debug.t5_like_model(), debug.t5_like_batch()
        return [debug.dtype_map(model, x, loss_fn=lambda o: o.float().sum(), setting="fp32")]

    small = {"g": torch.logspace(-12, 4, 64)}
    run = RunErrors(1e-2, 3e-3, equals_eager=False, ulps_from_eager=1.0, fraction_differing=0.1)
    e2e_row = {"size": 64, "dtype": "fp32", "median_s": 1e-4, "tflops": 0.005, "percent_of_peak": None, "skipped": None}
    mem_row = distributed.MemoryRow("fp32", 2, 4.0, 4.0, 8.0, 16.0)
    train_run = e2e.TrainRun("fp32", True, loss=(2.0, 1.0), step_time_s=0.01, peak_memory_bytes=2**20)
    # fmt: off
    return {
        "bits.plot_bit_layout": lambda c: (("fp16", 1.0), {}),
        "bits.plot_number_line": lambda c: (("fp4_e2m1",), {}),
        "bits.plot_range_precision": lambda c: ((["fp16"],), {}),
        "bits.plot_rounding_error": lambda c: (("fp16",), dict(x=[1.5, 1.0, 7e4])),
        "bits.plot_spacing": lambda c: ((("fp16",),), {}),
        "tf32.plot_error_vs_k": lambda c: ((tf32.error_vs_k((16, 64), ("fp32", "tf32"), m=4, n=4),), {}),
        "tf32.plot_matmul_errors": lambda c: (([tf32.MatmulError("fp32", 1e-4, 1e-6, 1e-5, "measured")],), {}),
        "fp16.plot_format_regions": lambda c: ((1e-5, ["fp16"]), {}),
        "fp16.plot_gradient_histogram": lambda c: ((c,), {}),
        "fp16.plot_loss_curves": lambda c: ((fp16.train_master_weights(2, progress=False),), {}),
        "fp16.plot_running_sums": lambda c: (({"a": [1.0, float("inf")]},), dict(limit=65504)),
        "autocast.plot_output_dtypes": lambda c: ((output_dtypes({"mm": lambda x: x @ x}, torch.ones(2, 2)),), {}),
        "scaling.plot_scale_sweep": lambda c: ((scaling.scale_sweep(c, range(0, 4)),), dict(window=(1.0, 4.0))),
        "scaling.plot_scaled_histogram": lambda c: ((c, 0), {}),
        "scaling.plot_scaler_history": lambda c: ((scaling.simulate_scaler(4, (1,)),), {}),
        "scaling.plot_train_comparison": lambda c: ((scaling.train_comparison(2, progress=False),), {}),
        "e2e.plot_inference": lambda c: (([{"variant": "fp32", "max_abs_error": 0.0, "time_s": 1e-3}],), {}),
        "e2e.plot_throughput": lambda c: (([e2e_row],), {}),
        "e2e.plot_training_runs": lambda c: (([train_run],), {}),
        "fp8.plot_fp8_window": lambda c: ((small,), {}),
        "fp8.plot_scaling_errors": lambda c: ((fp8.scaling_errors(small),), {}),
        "debug.plot_bytes_per_parameter": lambda c: ((maps(c),), {}),
        "debug.plot_trace": lambda c: ((trace(c),), {}),
        "distributed.plot_memory_per_parameter": lambda c: (([mem_row],), {}),
        "distributed.plot_reduction_error": lambda c: ((distributed.reduction_error((2, 4), elements=8),), {}),
        "micro.plot_recipe_snr": lambda c: (({"weight": [micro.RecipeRow("a", 8.0, 20.0, 0.0, 0.0, 0.0)]},), {}),
        "micro.plot_tiny_updates": lambda c: ((micro.tiny_updates(3),), {}),
        "micro.plot_training": lambda c: ((micro.train_low_precision(steps=2, hidden=4, progress=False),), {}),
        "compiled.plot_errors": lambda c: ((PrecisionErrors("mlp", run, run),), {}),
        "compiled.plot_step_times": lambda c: (({"eager": timing.time_fn(lambda: None, repeats=1)},), {}),
    }
    # fmt: on


def _public_plot_functions() -> list[str]:
    """Every plot function of every topic: the lessons' (in the face) and those only explorers draw with."""
    from amp_lessons.lessons import TOPICS
    from tests.faces import internals

    return [f"{topic}.{name}" for topic in TOPICS for name in vars(internals(topic)) if name.startswith("plot_")]


@pytest.fixture(scope="module")
def census():
    from amp_lessons.fp16 import gradient_census

    return gradient_census()


def _drawn(fig) -> set[int]:
    return {id(a) for a in fig.findobj()}


@pytest.mark.parametrize("qualname", _public_plot_functions())
@pytest.mark.parametrize("given_axes", [False, True], ids=["own figure", "given axes"])
def test_every_plot_function_names_the_artists_it_draws(qualname, given_axes, census):
    """Every plot function names what it drew (``named_artists`` of the Axes it returns, in its own figure or on a
    given Axes): Artists drawn in that figure; every legend lies outside its Axes; the figure saves without warning."""
    import io

    import matplotlib.pyplot as plt
    from matplotlib.artist import Artist

    from amp_lessons._draw import named_artists
    from tests.faces import internals

    inputs = _plot_inputs()
    if qualname not in inputs:
        pytest.fail(f"{qualname} is public but has no inputs in tests/test_draw.py's _plot_inputs: add its cheapest")
    topic, name = qualname.split(".")
    plot = getattr(internals(topic), name)
    args, kwargs = inputs[qualname](census)
    given = plt.subplots()[1] if given_axes else None
    ax = plot(*args, **(dict(kwargs, ax=given) if given_axes else kwargs))
    assert ax is given or not given_axes
    named = named_artists(ax)
    assert len(named) > 0, f"{qualname} names none of its artists"
    drawn = _drawn(ax.figure)
    for key, value in named.items():
        artists = value if isinstance(value, tuple) else (value,)
        assert all(isinstance(a, Artist) for a in artists), f"{qualname}: {key!r} is not an Artist or a tuple of them"
        assert all(id(a) in drawn for a in artists), f"{qualname}: {key!r} is not drawn in the returned figure"
    ax.figure.savefig(io.BytesIO(), format="png")
    for each in ax.figure.axes:
        legend = each.get_legend()
        assert legend is None or not legend.get_window_extent().overlaps(each.get_window_extent()), qualname
    plt.close("all")


def test_the_plot_inputs_name_only_public_plot_functions():
    assert set(_plot_inputs()) == set(_public_plot_functions())
