"""Lesson 01, formats and bits: the pictures, explorers and checkers of lesson 01 over the formats engine
(:mod:`amp_lessons.formats`, which every topic uses).

`from amp_lessons import bits` gives the names its lesson, the presenter and the instructors' solutions call (its
``__all__``, which tests/test_structure.py holds equal to those calls); the modules behind it are private:
``_checks``, ``_describe``, ``_explorers``, ``_plots``, ``_support``."""

from ._checks import check_decode_bits, check_format_choice, check_max_finite, check_ulp
from ._explorers import bit_explorer, format_designer
from ._plots import plot_bit_layout, plot_number_line, plot_range_precision, plot_rounding_error, plot_spacing

__all__ = [
    "bit_explorer",
    "check_decode_bits",
    "check_format_choice",
    "check_max_finite",
    "check_ulp",
    "format_designer",
    "plot_bit_layout",
    "plot_number_line",
    "plot_range_precision",
    "plot_rounding_error",
    "plot_spacing",
]
