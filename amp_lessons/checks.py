"""Checkers for the exercises: each says what is right, or exactly what is wrong and a hint.

A checker never raises on a wrong or unfinished answer (a learner's "Run All" must go on); it
returns a :class:`CheckResult`, which shows as a coloured line in a notebook. Answers are checked
against the formats engine, never against a stored number.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from . import formats
from .autocast import trace
from .fp16 import gradient_census, running_sum, update_survives
from .scaling import safe_window, scale_sweep, simulate_scaler
from .tf32 import emulated_matmul, error_vs_k

__all__ = [
    "CheckResult",
    "check_bce_fix",
    "check_decode_bits",
    "check_dtype_predictions",
    "check_error_ratio",
    "check_format_choice",
    "check_lost_update",
    "check_max_finite",
    "check_scale_prediction",
    "check_smallest_scale",
    "check_stall_value",
    "check_tf32_matmul",
    "check_ulp",
]


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    message: str

    def __bool__(self) -> bool:
        return self.ok

    def __repr__(self) -> str:
        return ("Correct: " if self.ok else "Not yet: ") + self.message

    def _repr_html_(self) -> str:
        colour, mark = ("#1a7f37", "&#10004; Correct") if self.ok else ("#cf222e", "&#10008; Not yet")
        return f"<div style='color:{colour}'><b>{mark}:</b> {html.escape(self.message)}</div>"


def _call(fn, *args):
    """Call the learner's function; turn an exception into a message instead of raising."""
    if not callable(fn):
        return None, f"expected a function, got {type(fn).__name__} {fn!r}"
    try:
        return fn(*args), None
    except Exception as exc:  # noqa: BLE001 - any error in the learner's code is feedback
        return None, f"calling it with {args} raised {type(exc).__name__}: {exc}"


def _same(got, want: float) -> bool:
    try:
        got = float(got)
    except (TypeError, ValueError):
        return False
    return got == want or (math.isnan(got) and math.isnan(want))


# (exponent_bits, mantissa_bits) pairs that cover wide, narrow and degenerate IEEE formats
_IEEE_CASES = [(5, 10), (8, 7), (8, 23), (5, 2), (8, 10), (3, 4), (2, 1), (6, 0)]


def check_max_finite(fn) -> CheckResult:
    """Exercise: ``fn(exponent_bits, mantissa_bits)`` returns the largest finite value of the IEEE
    format with those widths (the all-ones exponent is reserved for inf and NaN)."""
    for e, m in _IEEE_CASES:
        want = formats.FloatFormat(f"e{e}m{m}", e, m).max
        got, err = _call(fn, e, m)
        if err:
            return CheckResult(False, err)
        if not _same(got, want):
            if _same(got, math.ldexp(2 - 2.0**-m, 2 ** (e - 1))):
                hint = "the all-ones exponent is inf/NaN, so the largest exponent field is 2**e - 2"
            elif _same(got, math.ldexp(1.0, 2 ** (e - 1))):
                hint = "the mantissa of the largest value is all ones: 1.11...1 in binary = 2 - 2**-m"
            else:
                hint = "max = (2 - 2**-m) * 2**emax, emax = (2**e - 2) - bias, bias = 2**(e-1) - 1"
            return CheckResult(False, f"for e={e}, m={m} you returned {got!r}; expected {want!r}. Hint: {hint}")
    return CheckResult(
        True, f"your formula gives the right max for all {len(_IEEE_CASES)} formats tried, from fp32 to 4-bit formats"
    )


def check_ulp(fn, fmt: str = "bf16") -> CheckResult:
    """Exercise: ``fn(x)`` returns the gap between positive ``x`` (a value of ``fmt``) and the next
    larger value of ``fmt`` (its ulp)."""
    f = formats.get_format(fmt)
    probes = [1.0, 1.5, 3.0, 1000.0, f.max / 2, f.smallest_normal, f.smallest_normal * 2, f.smallest_subnormal * 3]
    values = formats.quantize(torch.tensor(probes, dtype=torch.float32), f).tolist()
    for x in values:
        nxt = formats.from_bits(formats.to_bits(torch.tensor([x]), f) + 1, f).item()
        want = nxt - x
        got, err = _call(fn, x)
        if err:
            return CheckResult(False, err)
        if not _same(got, want):
            hint = (
                "below the smallest normal the gap is constant: 2**(emin - m)"
                if x < f.smallest_normal
                else "the gap is 2**(exponent - m), where 2**exponent <= x < 2**(exponent+1)"
            )
            return CheckResult(False, f"ulp({x!r}) in {f.name}: you returned {got!r}, expected {want!r}. Hint: {hint}")
    return CheckResult(True, f"right gap for all {len(values)} {f.name} values tried, subnormals included")


def check_decode_bits(answer, code: int, fmt: str = "fp8_e4m3") -> CheckResult:
    """Exercise: decode the bit pattern ``code`` of ``fmt`` by hand; ``answer`` is the value."""
    f = formats.get_format(fmt)
    if not isinstance(code, int) or not 0 <= code < 2**f.bits:
        raise ValueError(f"code must be an int in 0..{2**f.bits - 1} for {f.name}, got {code!r}")
    want = formats.from_bits(torch.tensor([code]), f).item()
    if answer is None or answer is ...:
        return CheckResult(False, f"replace the placeholder with your value for 0b{code:0{f.bits}b}")
    if _same(answer, want):
        return CheckResult(True, f"0b{code:0{f.bits}b} in {f.name} is {want!r}")
    s, e, m = (int(v) for v in formats.decompose(torch.tensor([want]), f))
    return CheckResult(
        False,
        f"{answer!r} is not it. Hint: sign {s}, exponent field {e} "
        f"(minus bias {f.bias}), mantissa field {m} of {2**f.mantissa_bits}",
    )


def check_format_choice(name, low: float, high: float, max_rel_error: float) -> CheckResult:
    """Exercise: pick a format (a name in FORMATS) that holds every magnitude from ``low`` to
    ``high`` as a normal number, with relative rounding error at most ``max_rel_error``, using the
    fewest bits."""
    if not (0 < low < high) or not 0 < max_rel_error < 1:
        raise ValueError(f"need 0 < low < high and 0 < max_rel_error < 1, got {low}, {high}, {max_rel_error}")
    if name not in formats.FORMATS:
        return CheckResult(False, f"{name!r} is not a format name; choose one of {', '.join(formats.FORMATS)}")

    def fits(f):
        return f.smallest_normal <= low and f.max >= high and f.unit_roundoff <= max_rel_error

    f = formats.FORMATS[name]
    if f.max < high:
        return CheckResult(False, f"{name} overflows: its max is {f.max:g} < {high:g}")
    if f.smallest_normal > low:
        return CheckResult(
            False, f"{name} cannot hold {low:g} as a normal number (smallest normal {f.smallest_normal:g})"
        )
    if f.unit_roundoff > max_rel_error:
        return CheckResult(False, f"{name} rounds with relative error up to {f.unit_roundoff:g} > {max_rel_error:g}")
    fewest = min(g.bits for g in formats.FORMATS.values() if fits(g))
    if f.bits > fewest:
        return CheckResult(False, f"{name} works, but a {fewest}-bit format works too")
    return CheckResult(
        True, f"{name} ({f.bits} bits) holds {low:g}..{high:g} with relative error <= {f.unit_roundoff:g}"
    )


def check_tf32_matmul(fn) -> CheckResult:
    """Exercise: ``fn(a, b)`` emulates a TF32 tensor-core matmul of float32 matrices: both inputs
    rounded to TF32 as NVIDIA's conversion does (ties away from zero), products summed in fp32.
    Compared bit for bit with the course's emulation on random inputs that include exact ties."""

    g = torch.Generator().manual_seed(7)
    a = torch.randn(64, 96, generator=g)
    b = torch.randn(96, 48, generator=g)
    # plant exact ties of TF32 (the 13 dropped bits are 1000000000000b) so the rounding rule shows
    a.view(torch.int32)[:, ::3] = (a.view(torch.int32)[:, ::3] & ~0x1FFF) | 0x1000
    b.view(torch.int32)[::3] = (b.view(torch.int32)[::3] & ~0x1FFF) | 0x1000
    want = emulated_matmul(a, b, "tf32", "nearest_away")
    got, err = _call(fn, a.clone(), b.clone())
    if err:
        return CheckResult(False, err)
    if not isinstance(got, torch.Tensor) or got.shape != want.shape:
        return CheckResult(
            False,
            f"expected a tensor of shape {tuple(want.shape)}, got {type(got).__name__} "
            f"{tuple(getattr(got, 'shape', ()))}",
        )
    if got.dtype != torch.float32:
        return CheckResult(False, f"the result of a TF32 matmul is float32, yours is {got.dtype}")
    if torch.equal(got, want):
        return CheckResult(True, "bit-exact: inputs rounded to TF32 with ties away from zero, fp32 accumulation")
    for rounding in ("nearest_even", "toward_zero"):
        if torch.equal(got, emulated_matmul(a, b, "tf32", rounding)):
            return CheckResult(
                False,
                f"you rounded the inputs with {rounding!r}; NVIDIA's fp32 -> TF32 "
                "conversion rounds ties away from zero ('nearest_away')",
            )
    if torch.equal(got, a @ b):
        return CheckResult(False, "that is the plain fp32 product: round both inputs to TF32 first")
    one_side = [formats.quantize(a, "tf32", "nearest_away") @ b, a @ formats.quantize(b, "tf32", "nearest_away")]
    if any(torch.equal(got, c) for c in one_side):
        return CheckResult(False, "only one input was rounded: a tensor core rounds both")
    rel = ((got.double() - want.double()).abs().max() / want.double().abs().mean()).item()
    return CheckResult(
        False,
        f"differs from the TF32 emulation (relative difference {rel:.2g}); "
        "hint: quantize(a, 'tf32', 'nearest_away') @ quantize(b, 'tf32', 'nearest_away')",
    )


def check_error_ratio(answer, low: str = "bf16", high: str = "tf32") -> CheckResult:
    """Exercise: predict how many times larger the matmul error is with ``low`` inputs than with
    ``high`` inputs (both accumulated in fp32). Checked against a measurement made now (within a
    factor of 1.5 of the measured ratio)."""

    fl, fh = formats.get_format(low), formats.get_format(high)
    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with your predicted ratio (a number)")
    try:
        answer = float(answer)
    except (TypeError, ValueError):
        return CheckResult(False, f"the answer must be a number, got {answer!r}")
    data = error_vs_k([256, 1024], (fl, fh), m=96, n=96, seed=3)
    measured = sum(data["rms"][fl.name]) / sum(data["rms"][fh.name])
    hint = (
        f"each input's relative rounding error is about eps/2, so the error scales with eps: "
        f"{fl.name} eps = 2**-{fl.mantissa_bits}, {fh.name} eps = 2**-{fh.mantissa_bits}"
    )
    if answer <= 0 or not math.isfinite(answer):
        return CheckResult(False, f"{answer!r} cannot be a ratio of errors. Hint: {hint}")
    if 1 / 1.5 <= answer / measured <= 1.5:
        return CheckResult(
            True,
            f"measured now: {measured:.3g}; the eps ratio is "
            f"2**{fh.mantissa_bits - fl.mantissa_bits} = {fl.eps / fh.eps:g}",
        )
    return CheckResult(False, f"{answer:g} is not within a factor 1.5 of the measured ratio. Hint: {hint}")


def check_stall_value(answer, v: float = 1.0, fmt: str = "fp16") -> CheckResult:
    """Exercise: the value at which a true ``fmt`` running sum of copies of ``v`` stops growing.
    Checked against a running sum done now with the formats engine."""

    f = formats.get_format(fmt)
    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with the value where the sum gets stuck")
    n = 2 ** (f.mantissa_bits + 3)
    sums = running_sum(torch.full((n,), float(v)), f)
    stuck = (sums[1:] == sums[:-1]).nonzero()
    if len(stuck) == 0:
        raise ValueError(f"a {f.name} running sum of {v} does not stall within {n} terms")
    want = sums[int(stuck[0])].item()
    if _same(answer, want):
        return CheckResult(
            True,
            f"{want:g}: there the gap between {f.name} neighbours is {2 * v:g}, so adding "
            f"{v:g} is a tie that rounds back to the even neighbour",
        )
    return CheckResult(
        False,
        f"{answer!r} is not it. Hint: find where the gap between neighbours "
        f"(2**(exponent - {f.mantissa_bits})) reaches {2 * v:g}",
    )


def check_lost_update(fn, fmt: str = "fp16") -> CheckResult:
    """Exercise: ``fn(w)`` returns the threshold below which an update ``u`` to a positive weight
    ``w`` (a normal value of ``fmt``, not a power of two) is lost: ``w - u`` rounds back to ``w``
    for ``u`` below it and changes for ``u`` above it. Checked by rounding ``w - u`` just below
    and just above the learner's threshold."""

    f = formats.get_format(fmt)
    ws = formats.quantize(torch.tensor([1.5, 3.0, 1000.0, 0.1, 3e-3, 60000.0]), f).tolist()
    ws = [w for w in ws if w <= f.max and w >= f.smallest_normal and math.frexp(w)[0] != 0.5]
    for w in ws:
        got, err = _call(fn, w)
        if err:
            return CheckResult(False, err)
        try:
            t = float(got)
        except (TypeError, ValueError):
            return CheckResult(False, f"smallest_update({w!r}) returned {got!r}; expected a number")
        if not (t > 0 and math.isfinite(t)):
            return CheckResult(False, f"smallest_update({w!r}) returned {got!r}; expected a positive number")
        below, above = t * (1 - 1e-3), t * (1 + 1e-3)
        if update_survives(w, below, f) or not update_survives(w, above, f):
            gap = 2.0 ** (math.frexp(w)[1] - 1 - f.mantissa_bits)
            return CheckResult(
                False,
                f"for w = {w!r} your threshold {t:g} is wrong: the gap between {f.name} "
                f"neighbours there is {gap:g}; an update is lost while w - u is nearer to w",
            )
    return CheckResult(
        True,
        f"right for all {len(ws)} weights tried: half the gap between neighbours, "
        f"(2**(exponent - {f.mantissa_bits})) / 2",
    )


def _dtype_exercises():

    return {
        "cpu: a @ b": ("cpu", lambda a, b, h: a @ b),
        "cpu: (a @ b).sum()": ("cpu", lambda a, b, h: (a @ b).sum()),
        "cpu: layer_norm(h)": ("cpu", lambda a, b, h: F.layer_norm(h, h.shape[-1:])),
        "cpu: cat([h, a])": ("cpu", lambda a, b, h: torch.cat([h, a])),
        "cpu: a.double() @ b.double()": ("cpu", lambda a, b, h: a.double() @ b.double()),
        "cuda: (a @ b).sum()": ("cuda", lambda a, b, h: (a @ b).sum()),
        "cuda: softmax(a @ b)": ("cuda", lambda a, b, h: torch.softmax(a @ b, dim=-1)),
        "cuda: cat([h, a])": ("cuda", lambda a, b, h: torch.cat([h, a])),
    }


def check_dtype_predictions(predictions: dict) -> CheckResult:
    """Exercise: predict the output dtype of each expression of the lesson's table under autocast
    (CPU: bf16 autocast, run here; CUDA: fp16 autocast, on a GPU or previewed with fake CUDA
    tensors). ``predictions`` maps each expression to a dtype name such as "torch.float32"."""

    exercises = _dtype_exercises()
    if not isinstance(predictions, dict):
        return CheckResult(
            False, f"predictions must be a dict {{expression: dtype name}}, got {type(predictions).__name__}"
        )
    unknown = sorted(set(predictions) - set(exercises))
    if unknown:
        return CheckResult(False, f"unknown expression(s) {unknown}: use the keys of the exercise's dict")
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(4, 4, generator=g), torch.randn(4, 4, generator=g)
    h = torch.randn(4, 4, generator=g).bfloat16()
    wrong, todo = [], []
    for expr, (device_type, fn) in exercises.items():
        guess = predictions.get(expr, "...")
        if guess in ("...", None, ""):
            todo.append(expr)
            continue
        got = str(trace(fn, a, b, h, device_type=device_type).output.dtype)
        if str(guess).replace("torch.", "") != got.replace("torch.", ""):
            wrong.append(f"{expr}: you said {guess}, it is {got}")
    if wrong:
        return CheckResult(False, "; ".join(wrong) + ". Hint: look the op up with autocast.policy_of(op, device)")
    if todo:
        return CheckResult(False, f"{len(todo)} of {len(exercises)} still to predict, e.g. {todo[0]!r}")
    return CheckResult(True, f"all {len(exercises)} dtypes predicted right, on the CPU and CUDA policies")


def check_bce_fix(fn) -> CheckResult:
    """Exercise: ``fn(logits, target)`` computes the same loss as
    ``binary_cross_entropy(sigmoid(logits), target)`` in a form CUDA autocast accepts. Checked on
    the CPU for the value (fp32) and under the CUDA policy (a GPU, or fake CUDA tensors) for
    running at all and returning fp32."""

    g = torch.Generator().manual_seed(1)
    logits, target = torch.randn(16, generator=g) * 3, torch.rand(16, generator=g)
    want = F.binary_cross_entropy(torch.sigmoid(logits), target)
    got, err = _call(fn, logits, target)
    if err:
        return CheckResult(False, err)
    if not isinstance(got, torch.Tensor) or got.numel() != 1:
        return CheckResult(False, f"expected a scalar loss tensor, got {got!r}")
    if not torch.allclose(got.float(), want, rtol=1e-4, atol=1e-6):
        return CheckResult(
            False,
            f"your loss is {got.item():.6g}, binary_cross_entropy(sigmoid(z), y) is "
            f"{want.item():.6g}: same inputs, same mean reduction",
        )
    try:
        t = trace(fn, logits, target, device_type="cuda")
    except RuntimeError as exc:
        return CheckResult(
            False,
            f"CUDA autocast still refuses it: {str(exc).splitlines()[0][:120]}. Hint: "
            "which loss takes the logits and applies the sigmoid itself?",
        )
    if t.output.dtype != torch.float32:
        return CheckResult(False, f"under CUDA autocast your loss comes out {t.output.dtype}; it should be float32")
    return CheckResult(True, "same loss, accepted by CUDA autocast and computed in fp32")


def _power_of_two(answer):
    """``answer`` as a float if it is a positive power of two, else None."""
    try:
        v = float(answer)
    except (TypeError, ValueError):
        return None
    return v if v > 0 and math.isfinite(v) and math.frexp(v)[0] == 0.5 else None


def check_smallest_scale(answer, census=None, max_underflow: float = 0.01) -> CheckResult:
    """Exercise: the smallest power-of-two loss scale (1, 2, 4, ...) at which at most
    ``max_underflow`` of the non-zero activation gradients of ``census`` (default: the lesson's
    :func:`amp_lessons.fp16.gradient_census`) round to zero in fp16, with none overflowing.
    Computed now with :func:`amp_lessons.scaling.scale_sweep` over the scales 2**0 .. 2**63."""

    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with a scale such as 2**10")
    census = gradient_census() if census is None else census
    sweep = scale_sweep(census, range(0, 64), "fp16", "activations")
    window = safe_window(sweep, max_underflow, 0.0)
    if window is None:
        raise ValueError("no power-of-two scale from 2**0 to 2**63 meets the limits for this census")
    want = window[0]
    v = _power_of_two(answer)
    if v is None:
        return CheckResult(
            False,
            f"{answer!r} is not a power of two: loss scales are powers of two, so that "
            "scaling and unscaling are exact. Try 2**k",
        )
    k = round(math.log2(v))
    rows = dict(zip(sweep["exponent"], zip(sweep["underflow"], sweep["overflow"])))
    limit = f"{100 * max_underflow:g}%"
    if v == want:
        extra = "" if want > 1 else " (no scaling needed for this census)"
        return CheckResult(
            True,
            f"2^{k}: {100 * rows[k][0]:.3g}% of the non-zero activation gradients still "
            f"underflow, at most {limit}{extra}; the safe window goes up to 2^{round(math.log2(window[1]))}",
        )
    if k in rows and rows[k][1] > 0:
        return CheckResult(
            False,
            f"at 2^{k}, {100 * rows[k][1]:.3g}% of the non-zero activation gradients overflow to inf. "
            "Hint: a smaller scale",
        )
    if v < want:
        under = rows[k][0] if k in rows else 1.0
        return CheckResult(
            False,
            f"at 2^{k}, {100 * under:.3g}% of the non-zero activation gradients still round "
            f"to zero (limit {limit}). Hint: a larger scale",
        )
    return CheckResult(
        False,
        f"2^{k} works, but it is not the smallest: 2^{k - 1} also keeps underflow at most {limit}. "
        "Hint: use scale_sweep and look for the first scale under the limit",
    )


def check_scale_prediction(answer, n_steps: int, inf_steps, **params) -> CheckResult:
    """Exercise: the loss scale after ``n_steps`` steps of GradScaler's rule when the gradients
    overflow at ``inf_steps`` (0-based), with ``params`` (init_scale, growth_factor, backoff_factor,
    growth_interval; GradScaler's defaults otherwise). Checked with
    :func:`amp_lessons.scaling.simulate_scaler`."""

    history = simulate_scaler(n_steps, inf_steps, **params)
    want = history["scale_after"][-1] if n_steps else simulate_scaler(1, (), **params)["scale"][0]
    if answer is None or answer is ...:
        return CheckResult(False, "replace the placeholder with the scale you predict")
    if _same(answer, want):
        return CheckResult(
            True,
            f"{want:g}: {sum(history['skipped'])} back-off(s) and "
            f"{sum(b > a for a, b in zip(history['scale'], history['scale_after']))} growth(s)",
        )
    backoffs = sum(history["skipped"])
    return CheckResult(
        False,
        f"{answer!r} is not it. Hint: each overflow multiplies the scale by the backoff factor "
        f"and restarts the count of good steps; the scale grows only after growth_interval good "
        f"steps in a row ({backoffs} overflow(s) here)",
    )


# --- lesson 07: fp8 --------------------------------------------------------------------------------

__all__ += ["check_amax_scale", "check_fp8_format_choice"]


def _amax_cases():
    g = torch.Generator().manual_seed(7)
    e4, e5 = formats.FORMATS["fp8_e4m3"].max, formats.FORMATS["fp8_e5m2"].max
    return [
        ("random normal x 3", torch.randn(1000, generator=g) * 3, e4),
        ("small gradients", torch.randn(1000, generator=g) * 1e-6, e5),
        ("an outlier", torch.cat([torch.randn(100, generator=g), torch.tensor([500.0])]), e4),
        ("all negative", -torch.rand(50, generator=g) - 0.5, e4),
        ("a 2-D tensor", torch.randn(8, 16, generator=g) * 1e3, e5),
        ("all zeros", torch.zeros(10), e4),
    ]


def check_amax_scale(fn) -> CheckResult:
    """Exercise: ``fn(x, fmt_max)`` returns the per-tensor scale ``fmt_max / amax`` with
    ``amax = max |x|`` (so the largest magnitude lands on the format's max), and 1.0 for an all-zero
    tensor (no scale can help it, and dividing by zero must not happen). Checked on several tensors
    (to float32 precision)."""
    for what, x, fmax in _amax_cases():
        got, err = _call(fn, x.clone(), fmax)
        if err:
            if float(x.abs().max()) == 0:
                return CheckResult(
                    False, f"{err}. Hint: for an all-zero tensor amax is 0; return 1.0 instead of dividing"
                )
            return CheckResult(False, err)
        try:
            got = float(got)
        except (TypeError, ValueError, RuntimeError):
            return CheckResult(
                False, f"for {what} it returned {got!r}; return a number (a float or a 1-element tensor)"
            )
        amax = float(x.abs().max())
        if amax == 0:
            if got != 1.0:
                return CheckResult(
                    False,
                    f"for {what} it returned {got!r}; the scale of an all-zero tensor should be 1.0 "
                    "(amax is 0: guard against dividing by it)",
                )
            continue
        want = fmax / amax
        if math.isfinite(got) and abs(got - want) <= 1e-6 * want:
            continue
        hint = "the scale is fmt_max / amax, where amax = x.abs().max()"
        if math.isfinite(got) and got > 0 and abs(got - amax / fmax) <= 1e-6 * amax / fmax:
            hint = "you returned amax / fmt_max, the inverse (that is what _scaled_mm's scale_a takes); the scale multiplies x"
        elif (
            float(x.max()) != amax
            and math.isfinite(got)
            and abs(got - fmax / float(x.max())) <= 1e-6 * abs(fmax / float(x.max()))
        ):
            hint = "use the largest MAGNITUDE, x.abs().max(): negative values count too"
        return CheckResult(
            False, f"for {what} (fmt_max {fmax:g}) it returned {got!r}, expected {want:.6g}. Hint: {hint}"
        )
    return CheckResult(
        True, "amax(x * s) lands on the format's max for every tensor, and an all-zero tensor keeps scale 1"
    )


_FP8_NAMES = {
    "e4m3": "e4m3",
    "fp8_e4m3": "e4m3",
    "float8_e4m3fn": "e4m3",
    "e4m3fn": "e4m3",
    "e5m2": "e5m2",
    "fp8_e5m2": "e5m2",
    "float8_e5m2": "e5m2",
}
_FP8_CHOICE = {"weights": "e4m3", "activations": "e4m3", "gradients": "e5m2"}
_FP8_REASON = {
    "e4m3": "forward tensors need precision more than range: e4m3 has 3 mantissa bits (relative step 1/8) and, "
    "with a per-tensor or per-block scale, its range up to 448 is enough",
    "e5m2": "gradients span many more binades and have outliers: e5m2 reaches 57344 with subnormals down to 2^-16 "
    "(about 32 binades against e4m3's 18), at the cost of one mantissa bit",
}


def _fp8_name(v):
    if isinstance(v, torch.dtype):
        v = str(v).removeprefix("torch.")
    return _FP8_NAMES.get(str(v).strip().lower()) if isinstance(v, (str, torch.dtype)) else None


def check_fp8_format_choice(answers: dict) -> CheckResult:
    """Exercise: which fp8 format for ``"weights"``, ``"activations"`` and ``"gradients"`` in the
    usual "hybrid" fp8 training recipe: e4m3 for the forward pass (weights, activations), e5m2 for
    the gradients. Accepts "e4m3"/"fp8_e4m3"/torch.float8_e4m3fn and the e5m2 spellings."""
    if not isinstance(answers, dict):
        return CheckResult(False, f"expected a dict such as {{'weights': 'e4m3', ...}}, got {type(answers).__name__}")
    missing = [k for k in _FP8_CHOICE if k not in answers]
    if missing:
        return CheckResult(False, f"give an answer for {', '.join(map(repr, missing))} ('e4m3' or 'e5m2')")
    for kind, want in _FP8_CHOICE.items():
        got = _fp8_name(answers[kind])
        if got is None:
            return CheckResult(False, f"{kind}: {answers[kind]!r} is not an fp8 format; answer 'e4m3' or 'e5m2'")
        if got != want:
            return CheckResult(False, f"{kind}: not {got}. Hint: {_FP8_REASON[want]}")
    return CheckResult(
        True, f"weights and activations in e4m3, gradients in e5m2: {_FP8_REASON['e4m3']}; {_FP8_REASON['e5m2']}"
    )
