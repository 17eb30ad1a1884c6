"""Lesson 02's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.tf32._checks``, keyed by its name."""

from tests.checker_rows import Row


def _tf32_model(rounding):
    from amp_lessons.formats import quantize

    return lambda a, b: quantize(a, "tf32", rounding) @ quantize(b, "tf32", rounding)


ROWS: dict[str, Row] = {
    "check_tf32_matmul": Row(
        lambda s: s.tf32_matmul,
        lambda a, b: a @ b,
        (
            _tf32_model("toward_zero"),
            _tf32_model("nearest_away"),
            lambda a, b: _tf32_model("nearest_even")(a, b).double(),
            lambda a, b: a,
        ),
    ),
    "check_error_ratio": Row(
        lambda s: s.predicted_ratio,
        (..., lambda fmt, than: ...),
        (
            lambda fmt, than: 8.0,  # bf16 against TF32, measured in the lesson, for every pair
            lambda fmt, than: 2.0 ** (fmt.mantissa_bits - than.mantissa_bits),  # the law upside down
            lambda fmt, than: than.mantissa_bits / fmt.mantissa_bits,  # bits, not powers of two
            lambda fmt, than: 2.0 ** (than.exponent_bits - fmt.exponent_bits),  # exponent bits set the range only
            lambda fmt, than: -1.0,
            lambda fmt, than: "x",
        ),
    ),
}

# Bad calls of the topic's face beyond the argument contract's kinds (tests/api_contract.py joins them to EXTRA): a K
# given twice, an unknown format among good ones, an unknown variant.
BAD_CALLS: dict[str, dict[str, list]] = {
    "error_vs_k": {"ks": [[16, 16], [64, 16], [], [2.5]], "fmts": [["fp16", "fp99"], ["fp16", None], "fp16"]},
    "matmul_errors": {"variants": [["fp32", "tf33"]]},
    "mkldnn_precision_effect": {"size": [10**6]},
    "emulated_matmul": {"fmt": [None]},
}
