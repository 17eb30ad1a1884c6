"""amp_lessons: the tested support module of the amp-course (mixed precision in PyTorch).

One module per concern:

- :mod:`amp_lessons.formats` - any binary floating-point format and exact rounding to it
- :mod:`amp_lessons.device`  - what this machine runs natively, emulates, or shows as reference
- :mod:`amp_lessons.course`  - the lessons in order and a workshop schedule
- :mod:`amp_lessons.timing`, :mod:`amp_lessons.reference` - timings and GPU reference measurements
- :mod:`amp_lessons.tf32`, :mod:`amp_lessons.fp16`, :mod:`amp_lessons.autocast`, :mod:`amp_lessons.scaling`,
  :mod:`amp_lessons.e2e`, :mod:`amp_lessons.fp8` - each lesson's experiments
- :mod:`amp_lessons.plots`   - one ``plot_*`` function per picture, in the course style
- :mod:`amp_lessons.widgets` - the interactive explorers
- :mod:`amp_lessons.checks`  - checkers for the exercises
"""

__version__ = "0.1.0"

from .formats import FORMATS, FloatFormat, compose, decompose, from_bits, get_format, quantize, to_bits

__all__ = [
    "FORMATS",
    "FloatFormat",
    "__version__",
    "compose",
    "decompose",
    "from_bits",
    "get_format",
    "quantize",
    "to_bits",
]
