"""Lesson 01's rows of the exercise-checker contract (tests/test_checker_contract.py): one per checker of
``amp_lessons.bits._checks``, keyed by its name."""

import math

from tests.checker_rows import Row, solution_of

ROWS: dict[str, Row] = {
    "check_max_finite": Row(
        lambda s: s.max_finite,
        (lambda exponent_bits, mantissa_bits: ..., lambda exponent_bits, mantissa_bits: None),
        (
            lambda e, m: solution_of("01").max_finite(e, m) * 2,
            lambda e, m: (2 - 2.0**-m) * 2.0 ** (2 ** (e - 1)),
            lambda e, m: 2.0 ** (2 ** (e - 1)),
            lambda e, m: 1.0,
        ),
        hidden=(65504.0,),  # fp16's max, the first format tried
    ),
    "check_ulp": Row(
        lambda s: s.ulp_bf16,
        lambda x: None,
        (
            lambda x: solution_of("01").ulp_bf16(x) * 2,
            lambda x: 2.0 ** (math.floor(math.log2(x)) - 7),
            lambda x: x / 2**8,
        ),
        lambda: (("bf16",), {}),
        hidden=(2.0**-7,),  # ulp(1.0), the first value tried
    ),
    "check_decode_bits": Row(
        lambda s: s.DECODED_E4M3, (..., None, "..."), (5.5, -2.75, 3.0), lambda: ((0b0_1000_011, "fp8_e4m3"), {})
    ),
    # its starter lists every format, the answer among them: the messages of wrong answers are read
    "check_format_choice": Row(
        lambda s: s.FORMAT_CHOICE_A, ..., "fp16", lambda: ((1e-6, 1e6, 0.01), {}), starter_lists_all=True
    ),
}

# Bad calls of the topic's face beyond the argument contract's kinds (tests/api_contract.py joins them to EXTRA): a
# bool or a float for a code, a scale format where an exercise needs an element format, limits no format meets.
BAD_CALLS: dict[str, dict[str, list]] = {
    "check_decode_bits": {"code": [True, 2.0, 256, -1], "fmt": ["e8m0", None]},
    "check_ulp": {"fmt": ["e8m0", "fp99"]},
    "check_format_choice": {"low": [True], "high": [1e39], "max_rel_error": [1e-9]},
    "plot_spacing": {"formats": [(), 16, ("fp16", "fp99")]},
    "plot_rounding_error": {"x": [[1.0, -2.0], [[1.0]], [], "abc", [1.0, math.inf]]},
    "plot_number_line": {"fmt": ["fp16"], "hi": [math.inf], "scale": ["log2"]},
}
