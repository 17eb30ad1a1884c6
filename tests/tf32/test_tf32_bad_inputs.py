"""Lesson 02's face answers nonsense with a ValueError or TypeError that names the argument and what is allowed;
an empty selection is an error, an empty matrix works."""

import pytest
import torch

from amp_lessons import tf32


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: tf32.error_vs_k([16], fmts=[]), ValueError, ["fmts is empty"]),
        (lambda: tf32.error_vs_k([16], fmts=["fp16", None]), ValueError, ["fmts[1]=None", "bf16"]),
        (lambda: tf32.error_vs_k([16], fmts="fp16"), TypeError, ["fmts", "'fp16'"]),
        (lambda: tf32.error_vs_k([16, 16]), ValueError, ["strictly increasing", "[16, 16]"]),
        (lambda: tf32.error_vs_k([]), ValueError, ["ks", "[]"]),
        (lambda: tf32.error_vs_k([2.5]), TypeError, ["each k", "2.5"]),
        (lambda: tf32.matmul_errors(8, 8, 8, variants=[]), ValueError, ["variants is empty"]),
        (lambda: tf32.matmul_errors(8, 8, 8, variants=["tf33"]), ValueError, ["'tf33'", "variants", "tf32 emulated"]),
        (lambda: tf32.time_matmuls(0), ValueError, ["size", ">= 1"]),
        (lambda: tf32.time_matmuls(None), TypeError, ["size", "None"]),
        (lambda: tf32.mkldnn_precision_effect(-1), ValueError, ["size", "-1"]),
        (lambda: tf32.mkldnn_precision_effect(10**6), ValueError, ["size=1000000", "at most"]),
        (lambda: tf32.emulated_matmul(torch.ones(2, 2), torch.ones(2, 2), None), ValueError, ["fmt=None", "tf32"]),
        (lambda: tf32.emulated_matmul(torch.ones(2, 2), torch.ones(2, 2), "tf32", 3), ValueError, ["rounding", "3"]),
    ],
)
def test_bad_arguments_are_named(call, error, words):
    with pytest.raises(error) as info:
        call()
    for w in words:
        assert w in str(info.value), str(info.value)


@pytest.mark.skipif(tf32.has_tf32("cuda"), reason="a TF32 GPU measures 'tf32 hardware'")
def test_a_selection_that_would_measure_nothing_here_is_an_error():
    with pytest.raises(ValueError) as info:
        tf32.matmul_errors(8, 8, 8, variants=["tf32 hardware"])
    assert "variants=['tf32 hardware']" in str(info.value) and "tf32 emulated" in str(info.value)


def test_empty_matrices_work():
    assert tf32.emulated_matmul(torch.ones(0, 3), torch.ones(3, 2)).shape == (0, 2)
    assert torch.equal(tf32.emulated_matmul(torch.ones(2, 0), torch.ones(0, 2)), torch.zeros(2, 2))  # an empty sum
