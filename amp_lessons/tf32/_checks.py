"""Checkers for lesson 02's exercises (the course's TF32 matmul model, predicted error ratios of input formats)."""

from __future__ import annotations

import math
from contextlib import contextmanager

import torch

from .. import formats
from .._exercise import attempt, calls_seen, correct, exercise, not_yet, placeholder, your_turn
from ..checks import CheckResult, is_placeholder, off_by
from ..tf32._experiments import emulated_matmul, error_vs_k, matmul_errors

__all__ = [
    "check_error_ratio",
    "check_tf32_matmul",
]


@contextmanager
def _calls_to(*functions):
    """The yielded set: which of ``functions`` were called inside the block."""
    codes = {f.__code__ for f in functions}
    with calls_seen(lambda code: code in codes) as seen:
        yield seen


# float32 bit patterns at the edges, each also with the sign bit: subnormals (a tie among them too), the largest
# subnormal and a normal that round up into the next binade, fp32's max and a value below it (both round up to inf
# in TF32), inf, and NaNs whose payload lies only in the 13 dropped bits (rounding must keep them NaN, not make
# them inf) or only in the kept ones
_EDGE_BITS = (
    0x00000001, 0x00001000, 0x00003000, 0x007FFFFF, 0x00FFFFFF, 0x7F7FFFFF, 0x7F7FF000, 0x7F800000,
    0x7F800001, 0x7F801000, 0x7F801FFF, 0x7FC00000,
)  # fmt: skip


def _rounding_inputs() -> torch.Tensor:
    """float32 values to round to TF32: random normals, zeros, exact ties of both parities, and :data:`_EDGE_BITS`."""
    g = torch.Generator().manual_seed(11)
    x = torch.randn(4096, generator=g) * torch.exp2(torch.randint(-20, 20, (4096,), generator=g).float())
    bits = x.view(torch.int32)
    bits[::4] = (bits[::4] & ~0x3FFF) | 0x1000  # ties, kept last bit 0
    bits[1::4] = (bits[1::4] & ~0x3FFF) | 0x3000  # ties, kept last bit 1
    x[2::64] = 0.0
    edges = torch.tensor(_EDGE_BITS, dtype=torch.int32)
    bits[3 : 3 + 2 * len(_EDGE_BITS) * 8 : 8] = torch.cat([edges, edges | torch.tensor(-0x80000000, dtype=torch.int32)])
    return x


def _differs(got: torch.Tensor, want: torch.Tensor) -> torch.Tensor:
    """Where two float32 tensors hold different values (NaN and NaN are the same value here, whatever payload)."""
    return (got != want) & ~(got.isnan() & want.isnan())


def _check_rounding(rounding) -> CheckResult | str | None:
    """None if ``rounding`` rounds to TF32 as the course's model does, "unchanged" for the starter, else feedback."""
    x = _rounding_inputs()
    want = formats.quantize(x, "tf32", "nearest_even")
    with _calls_to(formats.quantize, emulated_matmul) as used:
        got = attempt(rounding, x.clone(), prefix="round_to_tf32: ")
    if used:
        return not_yet(
            f"round_to_tf32 calls the course's {sorted(used)[0]}: write the rounding yourself, on the bits "
            "(x.view(torch.int32)): add what rounds the 13 dropped bits to nearest, then clear them"
        )
    if not isinstance(got, torch.Tensor) or got.shape != x.shape or got.dtype != torch.float32:
        what = f"{got.dtype} {tuple(got.shape)}" if isinstance(got, torch.Tensor) else type(got).__name__
        return not_yet(f"round_to_tf32 must return a float32 tensor of x's shape, got {what}")
    if not _differs(got, x).any():
        return "unchanged"  # the starter's: judged with the matmul below
    if not _differs(got, want).any():
        return None
    ordinary = torch.isfinite(x) & torch.isfinite(want)  # the rule shows on these; the edges come after it
    low = ((got.view(torch.int32) & 0x1FFF) != 0) & ~got.isnan()
    if low.any():
        return not_yet(
            f"round_to_tf32 leaves bits below TF32's 10 mantissa bits in {int(low.sum())} of {x.numel()} values: "
            "the 13 low bits of each result must be 0"
        )
    for rule, text in (
        (
            "toward_zero",
            "you cut the 13 bits off (toward zero); round to nearest: add half a unit of the kept last bit (0x1000) before clearing them",
        ),
        (
            "nearest_away",
            "ties go away from zero in yours; the H100 measured in this lesson rounds ties to even (the kept last "
            "bit decides whether a tie rounds up)",
        ),
    ):
        if not _differs(got, formats.quantize(x, "tf32", rule))[ordinary].any():
            return not_yet(f"round_to_tf32: {text}")
    ties = ((x.view(torch.int32) & 0x1FFF) == 0x1000) & _differs(got, want) & ordinary
    if ties.any():
        return not_yet(
            f"round_to_tf32 rounds {int(ties.sum())} exact ties wrongly: to even means a tie rounds up only when "
            "the kept last bit (bit 13) is 1"
        )
    lost = x.isnan() & ~got.isnan()
    if lost.any():
        return not_yet(
            f"round_to_tf32 turns {int(lost.sum())} NaNs into inf: a NaN whose set mantissa bits are all among the "
            "13 dropped ones loses them. A NaN must stay NaN"
        )
    wrong = _differs(got, want)
    edges = wrong & ~torch.isfinite(want) | wrong & (want.abs() < formats.FORMATS["tf32"].smallest_normal)
    if edges.any():
        return not_yet(
            f"round_to_tf32 is wrong on {int(edges.sum())} values at the edges of the range (subnormals, values "
            "that round up to inf, inf itself): work on the bits alone, so that a carry into the exponent does "
            "what rounding up must do"
        )
    return not_yet(f"round_to_tf32 differs from round-to-nearest-even in {int(wrong.sum())} of {x.numel()} values")


@exercise
def check_tf32_matmul(fn, rounding=None) -> CheckResult:
    """Exercise: ``fn(a, b)`` is the course's model of a TF32 matmul of float32 matrices: both
    inputs rounded to TF32 to nearest with ties to even (what an H100 was measured to do: the reference
    ``tf32_rounding_per_op``), products summed in IEEE fp32. Compared bit for bit with the course's model (not
    with a tensor core, whose summation is not IEEE fp32) on random inputs that include exact ties.

    ``rounding``: the learner's own ``round_to_tf32(x)``, written on the bits. Given, it is checked on its own
    (exact ties of both parities, both signs, zeros) against the formats engine, and neither it nor ``fn`` may
    call the course's ``formats.quantize`` or ``tf32.emulated_matmul``."""
    bad = None
    if rounding is not None:
        if is_placeholder(rounding) or not callable(rounding):
            return not_yet("pass your rounding function itself: check_tf32_matmul(my_tf32_matmul, round_to_tf32)")
        bad = _check_rounding(rounding)
        if isinstance(bad, CheckResult):
            return bad
    rounding_unchanged = rounding is not None and bad == "unchanged"

    g = torch.Generator().manual_seed(7)
    a = torch.randn(64, 96, generator=g)
    b = torch.randn(96, 48, generator=g)
    # plant exact ties of TF32 (the 13 dropped bits are 1000000000000b) so the rounding rule shows
    a.view(torch.int32)[:, ::3] = (a.view(torch.int32)[:, ::3] & ~0x1FFF) | 0x1000
    b.view(torch.int32)[::3] = (b.view(torch.int32)[::3] & ~0x1FFF) | 0x1000
    want = emulated_matmul(a, b, "tf32", "nearest_even")
    with _calls_to(formats.quantize, emulated_matmul) as used:
        got = attempt(fn, a.clone(), b.clone())
    if rounding is not None and used:
        return not_yet(
            f"my_tf32_matmul calls the course's {sorted(used)[0]}: use your own round_to_tf32 on both inputs, then "
            "multiply in fp32"
        )
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return not_yet(
            f"expected a tensor of shape {tuple(want.shape)}, got {type(got).__name__} "
            f"{tuple(getattr(got, 'shape', ()))}"
        )
    if got.dtype == torch.float32 and torch.equal(got, a @ b) and rounding is not None and not rounding_unchanged:
        return not_yet(
            "your round_to_tf32 is right; my_tf32_matmul still multiplies the inputs as they are: round both with it, "
            "then multiply in fp32"
        )
    if got.dtype == torch.float32 and torch.equal(got, a @ b):
        return your_turn(
            "so far this is the plain fp32 product: round both inputs as the course's TF32 model does "
            + (
                "(quantize to 'tf32', to nearest with ties to even), then multiply in fp32"
                if rounding is None
                else "(to nearest with ties to even, with your round_to_tf32 written on the bits), then multiply "
                "in fp32"
            )
        )
    if got.dtype != torch.float32:
        return not_yet(f"the result of a TF32 matmul is float32, yours is {got.dtype}")
    if rounding_unchanged:
        return not_yet(
            "round_to_tf32 still returns x as it is: write the rounding there, then use it in my_tf32_matmul"
        )
    if torch.equal(got, want):
        return correct(
            "matches the course's TF32 model bit for bit: inputs rounded to TF32 (ties to even), fp32 products"
        )
    for rounding in ("nearest_away", "toward_zero"):
        if torch.equal(got, emulated_matmul(a, b, "tf32", rounding)):
            return not_yet(
                f"you rounded the inputs with {rounding!r}; the H100 measured in this lesson rounds its TF32 inputs "
                "to nearest with ties to even, and so does the course's model (the exact ties in these inputs show "
                "the difference)"
            )
    one_side = [formats.quantize(a, "tf32", "nearest_even") @ b, a @ formats.quantize(b, "tf32", "nearest_even")]
    if any(torch.equal(got, c) for c in one_side):
        return not_yet("only one input was rounded: TF32 math rounds both")
    rel = ((got.double() - want.double()).abs().max() / want.double().abs().mean()).item()
    return not_yet(
        f"differs from the course's TF32 model (relative difference {rel:.2g}); "
        + (
            "hint: round each input with quantize (format 'tf32', to nearest with ties to even), then multiply in fp32"
            if rounding is None
            else "hint: round each input with your round_to_tf32 (checked above: it is right), then multiply in fp32"
        )
    )


# (format, than): pairs no cell of lesson 02 runs, with ratios above, at and below 1 (fp8, fp6 and made-up formats)
_RATIO_PAIRS = (
    ("fp8_e4m3", "tf32"),
    ("fp8_e5m2", "bf16"),
    ("fp6_e3m2", "fp16"),
    ("e5m5", "bf16"),
    ("fp16", "tf32"),
    ("e8m13", "tf32"),
    ("tf32", "fp8_e5m2"),
)
_MADE_UP = {"e5m5": formats.FloatFormat("e5m5", 5, 5), "e8m13": formats.FloatFormat("e8m13", 8, 13)}


def _ratio_format(name: str) -> formats.FloatFormat:
    return _MADE_UP.get(name) or formats.get_format(name)


def _measured_ratios() -> dict[tuple[str, str], float]:
    """Each pair's matmul error ratio, measured now (96 x K @ K x 96, RMS errors summed over K = 256 and 1024)."""
    names = sorted({n for pair in _RATIO_PAIRS for n in pair})
    data = error_vs_k([256, 1024], [_ratio_format(n) for n in names], m=96, n=96, seed=3)
    return {(a, b): sum(data.rms[a]) / sum(data.rms[b]) for a, b in _RATIO_PAIRS}


@exercise
def check_error_ratio(fn) -> CheckResult:
    """Exercise: ``fn(fmt, than)`` (the learner's ``predicted_ratio``) (two :class:`~amp_lessons.formats.FloatFormat`) predicts, from the formats
    alone, how many times larger the error of a matmul of random normal matrices (products summed in fp32) is with
    inputs rounded to ``fmt`` than with inputs rounded to ``than``. Checked against ratios measured now for pairs
    lesson 02 never runs (fp8, fp6 and made-up formats; ratios above, at and below 1): each prediction must be
    within a factor of 1.5. A prediction may not measure: calling the course's ``error_vs_k``, ``matmul_errors``,
    ``emulated_matmul`` or ``formats.quantize`` does not count."""
    if is_placeholder(fn):
        placeholder(fn, "write predicted_ratio(fmt, than) and pass the function itself")
    if not callable(fn):
        return not_yet(f"pass your function itself: check_error_ratio(predicted_ratio), got {type(fn).__name__}")
    predicted = {}
    for a, b in _RATIO_PAIRS:  # the predictions first: a starter or a wrong type is answered before any measurement
        with _calls_to(formats.quantize, emulated_matmul, error_vs_k, matmul_errors) as used:
            got = attempt(fn, _ratio_format(a), _ratio_format(b), prefix=f"predicted_ratio({a}, {b}): ")
        if used:
            return not_yet(
                f"predicted_ratio calls the course's {sorted(used)[0]}: that measures; predict from the two "
                "formats alone (their bits)"
            )
        if is_placeholder(got):
            placeholder(got, "write predicted_ratio(fmt, than): it returns `...` so far")
        try:
            value = float(got)
        except (TypeError, ValueError, OverflowError, RuntimeError):
            return not_yet(f"predicted_ratio({a}, {b}) must return a number, got {got!r}")
        if isinstance(got, bool) or not (math.isfinite(value) and value > 0):
            return not_yet(f"predicted_ratio({a}, {b}) returned {got!r}: a ratio of two errors is a positive number")
        predicted[(a, b)] = value
    measured = _measured_ratios()
    hide = tuple(measured.values()) + tuple(_ratio_format(a).eps / _ratio_format(b).eps for a, b in _RATIO_PAIRS)
    hint = (
        "Hint: with fp32 sums the error comes from rounding the inputs; what sets how far a value of a format "
        "moves when it is rounded?"
    )
    rows = []
    for (a, b), value in predicted.items():
        want = measured[(a, b)]
        if not 1 / 1.5 <= value / want <= 1.5:
            return not_yet(
                f"predicted_ratio({a}, {b}) = {value:g} is {off_by(value, want)}: not within a factor 1.5 of the "
                f"ratio measured now for {a} inputs against {b} inputs. {hint}",
                hide=hide,
            )
        rows.append(f"{a}/{b} {value:.3g} (measured {want:.3g})")
    return correct("every prediction within a factor 1.5 of the ratio measured now: " + "; ".join(rows))
