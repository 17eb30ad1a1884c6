"""Tests of amp_lessons.e2e._plots."""

import matplotlib

matplotlib.use("Agg")


from amp_lessons._draw import named_artists

# --- lesson 06: end to end -----------------------------------------------------------------------


def _e2e_rows():
    return [
        {"size": 64, "dtype": "fp32", "median_s": 1e-4, "tflops": 0.005, "percent_of_peak": None, "skipped": None},
        {"size": 128, "dtype": "fp32", "median_s": 5e-4, "tflops": 0.008, "percent_of_peak": None, "skipped": None},
        {"size": 64, "dtype": "fp16", "median_s": 1e-3, "tflops": 0.0005, "percent_of_peak": None, "skipped": None},
        {"size": 128, "dtype": "fp16", "median_s": None, "tflops": None, "percent_of_peak": None, "skipped": "slow"},
        {"size": 64, "dtype": "tf32", "median_s": None, "tflops": None, "percent_of_peak": None, "skipped": "no GPU"},
    ]


def test_plot_throughput_draws_only_measured_points():
    from amp_lessons.e2e import plot_throughput

    ax = plot_throughput(_e2e_rows())
    lines = named_artists(ax)
    assert set(lines) == {"fp32", "fp16"}
    assert list(lines["fp32"].get_xdata()) == [64, 128] and list(lines["fp16"].get_xdata()) == [64]
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log" and "TFLOP/s" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "fp16 (1 size skipped)" in labels and "tf32: not measured here" in labels


def test_plot_training_runs_legend_and_skipped_runs():
    from amp_lessons.e2e import plot_training_runs
    from amp_lessons.e2e._records import TrainRun

    runs = [
        TrainRun("fp32", True, loss=(4.0, 2.0, 1.0), step_time_s=0.05, peak_memory_bytes=3 * 2**20),
        TrainRun("bf16 autocast", True, loss=(4.0, 2.1, 1.1), step_time_s=0.03, peak_memory_bytes=2 * 2**20),
        TrainRun("tf32", False, "not run: no TF32 here"),
    ]
    ax = plot_training_runs(runs)
    named = named_artists(ax)
    assert list(named) == ["fp32", "bf16 autocast"] and [named[k] for k in named] == list(ax.lines)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["fp32: 50.0 ms/step, peak 3.0 MiB", "bf16 autocast: 30.0 ms/step, peak 2.0 MiB"]
    assert any("tf32: no TF32 here" in t.get_text() for t in ax.texts)


def test_plot_inference_errors_and_times():
    from amp_lessons.e2e import plot_inference

    rows = [
        {"variant": "fp32", "max_abs_error": 0.0, "time_s": 2e-3},
        {"variant": "bf16 autocast", "max_abs_error": 1e-2, "time_s": 1e-3},
        {"variant": "fp16 weights", "max_abs_error": 2e-3, "time_s": 4e-3},
    ]
    ax = plot_inference(rows)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["fp32", "bf16 autocast", "fp16 weights"]
    assert ax.get_xscale() == "log"
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["0 (reference)", "0.01", "0.002"]
    time_ax = [a for a in ax.figure.axes if a is not ax][0]
    assert [round(p.get_width(), 6) for p in time_ax.patches] == [2.0, 1.0, 4.0]
