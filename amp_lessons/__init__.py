"""amp_lessons: the tested support module of the amp-course (mixed precision in PyTorch).

The base, which every lesson uses and which imports no lesson topic:

- :mod:`amp_lessons.formats` - any binary floating-point format, exact rounding to it, where a value lands
- :mod:`amp_lessons.device`  - what this machine runs natively (probes)
- :mod:`amp_lessons.course`  - what a lesson is, what it runs on a machine, a workshop schedule
- :mod:`amp_lessons.timing`, :mod:`amp_lessons.style` - timings; the course's plot style
- :mod:`amp_lessons.checks`  - the result an exercise checker returns
- private helpers: ``_runtime`` (devices, exact fp32, threads, time budgets), ``_validate`` (argument checks),
  ``_launch`` (process groups), ``_table`` (tables), ``_draw`` (plot helpers), ``_explorer`` (what every explorer
  shares), ``_exercise`` (how every checker answers)

One folder per lesson topic. Its face, ``amp_lessons.<topic>`` (its ``__init__.py``), gives exactly the names its
lesson, the presenter and the instructors' solutions call; behind it sit private modules (``_records``: frozen
results; ``_experiments``: data only, no drawing; ``_models``, ``_plots``, ``_explorers``, ``_checks`` as the lesson
needs them; ``_support``: its ``LESSON`` and what it runs where) and ``key_code`` (its exported cells).

The topics, a face each:

- :mod:`amp_lessons.bits` (01), :mod:`amp_lessons.tf32` (02), :mod:`amp_lessons.fp16` (03),
  :mod:`amp_lessons.autocast` (04), :mod:`amp_lessons.scaling` (05), :mod:`amp_lessons.e2e` (06),
  :mod:`amp_lessons.fp8` (07), :mod:`amp_lessons.debug` (08), :mod:`amp_lessons.distributed` (09),
  :mod:`amp_lessons.micro` (10), :mod:`amp_lessons.compiled` (11)

(the lesson registry, ``amp_lessons.lessons.LESSONS``, lists each topic's lesson; ``make docs`` writes this list from it)

and above them :mod:`amp_lessons.lessons` (the lessons in order, what each runs on this machine, the workshop
schedule), :mod:`amp_lessons.recorders` and :mod:`amp_lessons.reference`: GPU reference measurements and the table
of the experiments that record them.
"""

__version__ = "0.1.0"

from ._table import table
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
    "table",
    "to_bits",
]
