"""Tests of amp_lessons.fp8.checks, on lesson 07's exercises: each wrong answer gets "Not yet" with its own hint,
and no message of a starter or a wrong answer states the answer (the starter's Your turn and the solution's Correct
are tests/test_checker_contract.py's)."""

import torch

from amp_lessons import formats, fp8
from tests.test_checks import assert_not_yet, assert_your_turn, reveals, solution


def _first_scale():
    """The scale of the checker's first tensor (random normal x 3, seed 7), from the formats engine."""
    x = torch.randn(1000, generator=torch.Generator().manual_seed(7)) * 3
    return formats.FORMATS["fp8_e4m3"].max / float(x.abs().max())


def test_amax_scale_exercise():
    s = solution("07")
    want = _first_scale()
    wrong = {
        (lambda x, m: 2 * s.amax_scale(x, m)): "too large",
        (lambda x, m: 0.5 * s.amax_scale(x, m)): "too small",
        (lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0): "inverse",
        (lambda x, m: m / float(x.max()) if x.abs().max() > 0 else 1.0): "MAGNITUDE",
        (lambda x, m: m / float(x.abs().max())): "all-zero",
        (lambda x, m: "x"): "return a number",
    }
    results = []
    for fn, words in wrong.items():
        r = fp8.check_amax_scale(fn)
        assert_not_yet(r)
        assert words in r.message, r.message
        results.append(r)
    for r in results:
        assert not reveals(r.message, want), r.message


STARTER = {"weights": "...", "activations": "...", "gradients": "..."}


def test_fp8_format_choice_exercise():
    s = solution("07")
    assert_your_turn(fp8.check_fp8_format_choice(dict(STARTER, weights=s.FP8_FORMAT_CHOICE["weights"])))
    other = {"e4m3": "e5m2", "e5m2": "e4m3"}
    for kind in STARTER:
        want = str(s.FP8_FORMAT_CHOICE[kind]).removeprefix("torch.").removeprefix("fp8_").removeprefix("float8_")
        r = fp8.check_fp8_format_choice(dict(STARTER, **{kind: other[want]}))
        assert_not_yet(r)
        assert r.message.startswith(f"{kind}: not {other[want]}") and "Hint" in r.message
        assert not reveals(r.message, want) and not reveals(r.message, f"fp8_{want}"), r.message
    r = fp8.check_fp8_format_choice(dict(s.FP8_FORMAT_CHOICE, gradients="fp16"))
    assert_not_yet(r)
    assert "not an fp8 format" in r.message


def _linear_cases_first():
    g = torch.Generator().manual_seed(11)
    return torch.randn(16, 32, generator=g), torch.randn(8, 32, generator=g) * 0.1, torch.randn(8, generator=g)


def test_fp8_linear_forward_exercise():
    s = solution("07")
    starter = fp8.check_fp8_linear_forward(lambda x, weight, bias: x @ weight.t() + bias)
    assert "never went through fp8" in starter.message
    wrong = {
        (
            lambda x, w, b: fp8.fake_quantize(x, "fp8_e4m3") @ fp8.fake_quantize(w, "fp8_e4m3").t() + b
        ): "without a scale",
        (
            lambda x, w, b: (
                fp8.fake_quantize(x, "fp8_e5m2", fp8.amax_scale(x, "fp8_e5m2"))
                @ fp8.fake_quantize(w, "fp8_e5m2", fp8.amax_scale(w, "fp8_e5m2")).t()
                + b
            )
        ): "e4m3",
        (lambda x, w, b: s.fp8_linear_forward(x, w, b) * 1.01): "own per-tensor scale",
        (lambda x, w, b: x): "shape",
    }
    x, w, b = _linear_cases_first()
    want = s.fp8_linear_forward(x, w, b)
    for fn, words in wrong.items():
        r = fp8.check_fp8_linear_forward(fn)
        assert_not_yet(r)
        assert words in r.message, r.message
        for message in (r.message, starter.message):
            assert not any(reveals(message, float(v)) for v in want.flatten()[:8]), message
