"""Tests of amp_lessons.debug._records' triage on constructed timings: what the verdict concludes from the runs
(medians and quartiles, rounds that disagree, a speed-up no matmul can give) and that it names causes of slowness
only where AMP was not faster."""

import dataclasses

import pytest

from tests.faces import internals

debug = internals("debug")

MS = 1e-3


def triage(fp32, amp, *, rounds=3, fp32_2x=None, **kw) -> debug.Triage:
    """A Triage of the given step times (seconds), a model whose matmuls take 90% of the fp32 step and ran at half
    their fp32 speed under autocast, on a CPU without bf16 instructions."""
    fields = dict(
        device="cpu",
        dtype="bf16",
        threads=1,
        rounds=rounds,
        fp32_times_s=tuple(fp32),
        amp_times_s=tuple(amp),
        fp32_2x_times_s=tuple(fp32_2x if fp32_2x is not None else [2 * t for t in fp32]),
        matmul_share_fp32=0.9,
        matmul_share_amp=0.8,
        casts=4,
        cast_share=0.02,
        model_rate_ratios=(0.5,) * rounds,
        rate_ratios=(0.02,) * rounds,
        hardware="a CPU (AVX2): bf16 matrix instructions no",
        fast_hardware=False,
        odd_dims=[],
        tf32_baseline=False,
    )
    fields.update(kw)
    return debug.Triage(**fields)


def steady(ms, n=15, jitter=0.01):
    """``n`` steps of about ``ms`` milliseconds, a little apart (as an idle machine times them)."""
    return [ms * MS * (1 + jitter * ((i % 5) - 2) / 2) for i in range(n)]


_FP32 = [1.0 * MS, 1.1 * MS, 1.2 * MS] * 5


@pytest.mark.parametrize(
    "fp32, amp, kw, outcome, causes, verdict",
    [
        # the lesson's old stored run: autocast 4x faster, with the matmul finding held by the profiler's ratio
        (steady(1.0), steady(0.25), {}, "faster", [],
         "AMP is faster here: 4.00x the fp32 speed (medians of 15 steps each, beyond the run-to-run spread)."),
        (steady(1.0), steady(2.0), {"fp32_2x": steady(1.1)}, "slower",
         ["low-precision matmuls not faster", "overhead-bound"],
         "AMP is slower here: 0.50x the fp32 speed (medians of 15 steps each, beyond the run-to-run spread). "
         "Causes found: low-precision matmuls not faster; overhead-bound."),
        (_FP32, [x * 0.97 for x in _FP32], {"model_rate_ratios": (1.5,) * 3}, "not faster", [],
         "AMP is not faster here: 1.03x the fp32 speed (medians of 15 steps each, within the run-to-run spread). "
         "None of the findings holds: profile the step (torch.profiler) to see where its time goes."),
    ],
)  # fmt: skip
def test_causes_of_slowness_are_named_only_where_amp_was_not_faster(fp32, amp, kw, outcome, causes, verdict):
    t = triage(fp32, amp, **kw)
    assert t.outcome == outcome and t.causes == causes and t.verdict == verdict
    assert t.findings[0][1] == (outcome != "not faster")  # the matmul finding holds, also where AMP was faster


def test_one_slow_step_does_not_move_the_verdict():
    clean = triage(steady(0.29), steady(0.43))
    spiked = triage([*steady(0.29)[:-1], 64 * MS], [*steady(0.43)[:-1], 17 * MS])  # a time slice lost, each
    assert clean.outcome == spiked.outcome == "slower" and spiked.disturbance is None
    assert spiked.speedup == pytest.approx(clean.speedup, rel=0.02) and spiked.verdict.startswith(
        "AMP is slower here: 0.6"
    )


SPREAD = [1 * MS, 2 * MS, 3 * MS] * 5


@pytest.mark.parametrize(
    "fp32, amp, kw, disturbance",
    [
        # the first round's fp32 steps ran 40 times slower (threads waiting for each other on a busy machine)
        ([64 * MS] * 5 + steady(0.29, 10), steady(0.43), {}, "the typical steps spread too widely"),
        (SPREAD, [x / 2 for x in SPREAD], {}, "the typical steps spread too widely"),
        # five rounds, each steady in itself, the fourth one's autocast twice as slow: a burst of work in that
        # round, too short to move the quartiles of all the steps
        (steady(1.0), steady(0.5, 9) + steady(1.0, 3) + steady(0.5, 3), {"rounds": 5},
         "the rounds disagree: their speed-ups run from 1x to 2x"),
        # matmuls are half the step: faster matmuls give at most 2x; a measured 4x means one setting was slowed
        (steady(4.0), steady(1.0), {"matmul_share_fp32": 0.5}, "a speed-up of 4x beats Amdahl's bound of 2x"),
    ],
)  # fmt: skip
def test_disturbed_runs_give_no_verdict(fp32, amp, kw, disturbance):
    t = triage(fp32, amp, **kw)
    assert t.outcome == "no verdict" and t.causes == [] and t.disturbance.startswith(disturbance), t.disturbance
    assert t.verdict.startswith("No verdict: ") and t.verdict.endswith("Run it again when the machine is idle.")
    assert "faster" not in t.verdict and "Causes" not in t.verdict


def test_a_speed_up_a_little_beyond_amdahls_bound_is_allowed():
    # within the slack: a little beyond the bound is allowed (ops on halved activations)
    near = triage(steady(2.2), steady(1.0), matmul_share_fp32=0.5)
    assert near.amdahl_bound == pytest.approx(2.0) and near.speedup < debug.AMDAHL_SLACK * near.amdahl_bound
    assert near.outcome == "faster"


def test_every_figure_is_a_median():
    t = triage(
        steady(1.0),
        steady(2.0),
        model_rate_ratios=(0.4, 9.0, 0.5),
        rate_ratios=(0.02, 3.0, 0.03),
        fp32_2x=[*steady(1.9)[:-1], 40 * MS],
    )
    assert t.model_rate_ratio == 0.5 and t.rate_ratio == 0.03
    assert t.batch_time_ratio == pytest.approx(1.9, rel=0.02)
    assert t.findings[0][1] is True and "a 256^3 matmul: 0.03x" in t.findings[0][2]


def test_the_gpu_dimension_finding_holds_on_cuda_only():
    cpu = triage(steady(1.0), steady(2.0), odd_dims=["'head' (out_features=10)"])
    gpu = dataclasses.replace(cpu, device="cuda", rate_ratios=())
    assert next(f for f in cpu.findings if f[0] == "dimensions not multiples of 8")[1] is False
    assert next(f for f in gpu.findings if f[0] == "dimensions not multiples of 8")[1] is True
    assert gpu.rate_ratio is None and "256^3" not in gpu.findings[0][2]


def test_the_table_shows_medians_and_quartiles_and_the_verdict_once():
    t = triage(steady(1.0), steady(2.0))
    text, html = str(t), t._repr_html_()
    first = text.splitlines()[0]
    assert (
        first.startswith("fp32 step 1.00 ms (quartiles 0.995–1.00, 15 steps)")
        and "15 steps" in first
        and "1 thread: 0.50x (medians)" in first
    )
    assert text.count("AMP is slower here") == 1 and "verdict: AMP is slower here" in html
    assert t.timings.baseline_s == t.fp32_times_s and t.timings.labels == ("fp32", "bf16 autocast")
