"""The course's scalers against torch.amp.GradScaler, property-based (hypothesis): for any finite positive initial
scale (down to float32's smallest subnormal, up to near its largest value), growth factor > 1, back-off in (0, 1),
interval >= 1 and any set of overflowing steps, ``simulate_scaler`` gives GradScaler's scale after every step,
exactly, and ``DynamicScaler`` (through ``compare_with_gradscaler``) takes GradScaler's decisions: the same scale,
the same skipped steps, the same weights. 100 scenarios each, drawn deterministically (tests/conftest.py)."""

from __future__ import annotations

import torch
from hypothesis import given, settings, strategies as st

from amp_lessons import scaling

FP32_TINY, FP32_LARGE = 2.0**-149, 1.5 * 2.0**127  # float32 values: the smallest subnormal, 2.6e38

# A scale: mostly spread over float32's exponents, and its extremes on purpose.
INIT_SCALES = st.one_of(
    st.integers(-149, 127).map(lambda e: 2.0**e),
    st.floats(FP32_TINY, FP32_LARGE, allow_nan=False, allow_infinity=False, width=32),
    st.sampled_from([FP32_TINY, 1e-45, 1e-38, 1.0, 2.0**16, FP32_LARGE]),
)
GROWTH = st.floats(1.0, 8.0, exclude_min=True, width=32)
BACKOFF = st.floats(0.0, 1.0, exclude_min=True, exclude_max=True, width=32)


def _gradscaler_scales(n, infs, init, growth, backoff, interval):
    """GradScaler's scale after each of ``n`` steps, an inf planted in the gradient at the steps ``infs``."""
    w = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([w], lr=0.0)
    s = torch.amp.GradScaler(
        "cpu", init_scale=init, growth_factor=growth, backoff_factor=backoff, growth_interval=interval
    )
    out = []
    for step in range(n):
        opt.zero_grad()
        s.scale(w.sum()).backward()
        if step in infs:
            w.grad[0] = float("inf")
        s.step(opt)
        s.update()
        out.append(s.get_scale())
    return out


@settings(max_examples=100)
@given(
    init=INIT_SCALES,
    growth=GROWTH,
    backoff=BACKOFF,
    interval=st.integers(1, 8),
    infs=st.sets(st.integers(0, 24), max_size=12),
)
def test_simulate_scaler_is_gradscaler(init, growth, backoff, interval, infs):
    want = _gradscaler_scales(25, infs, init, growth, backoff, interval)
    got = scaling.simulate_scaler(
        25, sorted(infs), init_scale=init, growth_factor=growth, backoff_factor=backoff, growth_interval=interval
    ).scale_after
    assert [float(x) for x in got] == [float(x) for x in want]


@settings(max_examples=100)
@given(
    init=INIT_SCALES,
    growth=GROWTH,
    backoff=BACKOFF,
    interval=st.integers(1, 5),
    infs=st.sets(st.integers(0, 11), max_size=6),
    seed=st.integers(0, 2**31),
)
def test_dynamic_scaler_takes_gradscalers_decisions(init, growth, backoff, interval, infs, seed):
    kw = dict(init_scale=init, growth_factor=growth, backoff_factor=backoff, growth_interval=interval, seed=seed)
    rows = scaling.compare_with_gradscaler(12, inf_steps=tuple(sorted(infs)), **kw)
    assert len(rows) == 12
    for r in rows:
        assert r["ours_scale"] == r["torch_scale"] and r["ours_skipped"] == r["torch_skipped"], r
        assert r["params_equal"], r
