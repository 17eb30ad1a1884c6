"""What one learner action costs on each of the course's explorers, timed in-process: the scripted moves
(slider, dropdown, text box, button) that ``measure_update_ms`` times. Test and benchmark tooling, kept out of the
teaching package: the explorers' tests under tests/<topic>/ use it, benchmarks/bench_widgets.py reports the figures."""

from __future__ import annotations

import statistics
import time

from amp_lessons.bits._explorers import BitExplorer, FormatDesigner
from amp_lessons.distributed._experiments import REDUCTION_FORMATS, REDUCTION_ORDERS
from amp_lessons.distributed._explorers import ReductionExplorer
from amp_lessons.formats import ENCODINGS, FORMATS, ROUNDING_MODES
from amp_lessons.fp8._explorers import Fp8ScalingExplorer
from amp_lessons.fp16._explorers import MagnitudeExplorer, SumExplorer
from amp_lessons.micro import TENSOR_KINDS
from amp_lessons.micro._experiments import RECIPES, STEPS
from amp_lessons.micro._explorers import RecipeExplorer
from amp_lessons.scaling._explorers import ScaleExplorer, ScalerStateExplorer
from amp_lessons.tf32._explorers import MatmulPrecisionExplorer

_VALUES = ["0.1", "-0.0", "1e39", "nan", "inf", "1e-50", "65504", "3.14159", "-2.5e-6", "448", "1e-7"]


def _bit_explorer_steps(ex: BitExplorer) -> dict:
    """kind -> (untimed preparation, timed action), both called with the step number."""
    names = list(FORMATS)

    def fp32_number(i):  # flips start from a number in the widest format (the slowest picture)
        if ex.fmt.name != "fp32" or ex.info is None or ex.info.code is None:
            ex.set_format("fp32")
            ex.set_value("0.1")

    return {
        "value": (lambda i: ex.set_format("fp16"), lambda i: ex.set_value(_VALUES[i % len(_VALUES)])),
        "format": (lambda i: None, lambda i: ex.set_format(names[(names.index(ex.fmt.name) + 1) % len(names)])),
        "flip bit": (fp32_number, lambda i: ex.flip_bit((7 * i) % ex.fmt.bits)),
    }


def _designer_steps(d: FormatDesigner) -> dict:
    def sweep(lo, hi, i):  # lo..hi..lo..., so both extremes are visited
        period = 2 * (hi - lo)
        k = i % period
        return lo + (k if k <= hi - lo else period - k)

    def nothing(i):
        return None

    return {
        "exponent bits": (nothing, lambda i: d.set(exponent_bits=sweep(1, 8, i + 1))),
        "mantissa bits": (nothing, lambda i: d.set(mantissa_bits=sweep(0, 23, i + 1))),
        "encoding": (nothing, lambda i: d.set(encoding=ENCODINGS[(i + 1) % len(ENCODINGS)])),
    }


def _matmul_steps(ex: MatmulPrecisionExplorer) -> dict:
    def nothing(i):
        return None

    return {
        "mantissa bits": (nothing, lambda i: ex.set(mantissa_bits=(i * 7) % 24)),  # visits 0 and 23
        "rounding": (nothing, lambda i: ex.set(rounding=ROUNDING_MODES[(i + 1) % len(ROUNDING_MODES)])),
    }


def _magnitude_steps(ex: MagnitudeExplorer) -> dict:
    def nothing(i):
        return None

    def sweep(i):  # -50, -40.9, ... up to 40 and back: both extremes are visited
        k = (i * 9.1) % 180.0
        return round(ex.LO + (k if k <= 90 else 180 - k), 1)

    return {
        "log10 |x|": (nothing, lambda i: ex.set(log10_value=sweep(i + 1))),
        "sign": (nothing, lambda i: ex.set(sign="-" if ex.sign_buttons.value == "+" else "+")),
    }


_SUM_VALUES = ["0.01", "16", "-16", "1", "3e-8", "1e5", "0", "65504", "0.1", "1e-30", "2049", "1e38", "0.3333"]


def _sum_steps(ex: SumExplorer) -> dict:
    def nothing(i):
        return None

    def reset_v(i):
        if ex.v_box.value != "16.0":
            ex.set(v="16.0")

    return {
        "v": (nothing, lambda i: ex.set(v=_SUM_VALUES[i % len(_SUM_VALUES)])),
        "n": (reset_v, lambda i: ex.set(n=[1, ex.N_MAX, 4096, 2, 1000, 8191, 37][i % 7])),
    }


def _scale_steps(ex: ScaleExplorer) -> dict:
    def nothing(i):
        return None

    return {"log2 scale": (nothing, lambda i: ex.set(exponent=[0, 32, 16, 1, 31, 8, 24][i % 7]))}


def _scaler_state_steps(ex: ScalerStateExplorer) -> dict:
    def nothing(i):
        return None

    def few_infs(i):  # keep the set of injected steps small and varied
        if len(ex.inf_steps) > 6:
            ex.clear()

    return {
        "init_scale": (nothing, lambda i: ex.set(log2_init_scale=[0, 24, 16, 1][i % 4])),
        "growth_factor": (nothing, lambda i: ex.set(growth_factor=[1.1, 4.0, 2.0][i % 3])),
        "backoff_factor": (nothing, lambda i: ex.set(backoff_factor=[0.05, 0.95, 0.5][i % 3])),
        "growth_interval": (nothing, lambda i: ex.set(growth_interval=[1, 50, 20][i % 3])),
        # the top of the gradient slider makes scale x gradient overflow fp16: skipped steps by themselves
        "log2 max |gradient|": (nothing, lambda i: ex.set(log2_max_gradient=[-40, 8, -20, 0][i % 4])),
        "inject inf": (few_infs, lambda i: ex.inject((37 * i) % ex.N_STEPS)),
        "clear": (lambda i: ex.inject((11 * i) % ex.N_STEPS), lambda i: ex.clear()),
    }


def measure_update_ms(widget_box, n: int = 20) -> dict[str, dict[str, float]]:
    """Time ``n`` updates of each kind on an explorer (its VBox or the controller), in-process:
    each update is what one learner action costs (readout, plot and PNG). Returns
    ``{kind: {"median": ms, "max": ms}}``. Leaves the explorer in some other state."""
    ex = getattr(widget_box, "explorer", widget_box)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    steps_of = {
        BitExplorer: _bit_explorer_steps,
        FormatDesigner: _designer_steps,
        MatmulPrecisionExplorer: _matmul_steps,
        MagnitudeExplorer: _magnitude_steps,
        SumExplorer: _sum_steps,
        ScaleExplorer: _scale_steps,
        ScalerStateExplorer: _scaler_state_steps,
        Fp8ScalingExplorer: _fp8_scaling_steps,
        RecipeExplorer: _recipe_steps,
        ReductionExplorer: _reduction_steps,
    }
    if type(ex) not in steps_of:
        raise TypeError(
            f"expected an explorer widget of amp_lessons (e.g. amp_lessons.bits.bit_explorer()), got {type(widget_box).__name__}"
        )
    steps = steps_of[type(ex)](ex)
    result = {}
    for kind, (prepare, act) in steps.items():
        times = []
        for i in range(n):
            prepare(i)
            t0 = time.perf_counter()
            act(i)
            times.append(1e3 * (time.perf_counter() - t0))
        result[kind] = {"median": statistics.median(times), "max": max(times)}
    return result


def _fp8_scaling_steps(ex: Fp8ScalingExplorer) -> dict:
    def per_tensor(i):
        ex.set(block="none")

    return {
        "log2 scale": (per_tensor, lambda i: ex.set(exponent=[0, 20, -20, 12, 1, -7, 19][i % 7])),
        "block": (lambda i: None, lambda i: ex.set(block=ex.BLOCKS[(i + 1) % 4])),
        "format": (lambda i: None, lambda i: ex.set(fmt=["e5m2", "e4m3"][i % 2])),
    }


def _recipe_steps(ex: RecipeExplorer) -> dict:
    def nothing(i):
        return None

    return {
        "recipe": (nothing, lambda i: ex.set(recipe=RECIPES[(i + 1) % len(RECIPES)])),
        "tensor": (nothing, lambda i: ex.set(kind=TENSOR_KINDS[(i + 1) % len(TENSOR_KINDS)])),
        "step": (nothing, lambda i: ex.set(step=[0, STEPS - 1, 20, 19][i % 4])),
    }


def _reduction_steps(ex: ReductionExplorer) -> dict:
    def nothing(i):
        return None

    def forget(i):  # a setting not seen before: the sweep is computed, not taken from the explorer's cache
        ex._sweeps.clear()

    return {
        "ranks": (nothing, lambda i: ex.set(world_size=ex.WORLD_SIZES[(5 * i + 11) % len(ex.WORLD_SIZES)])),
        "sum in": (forget, lambda i: ex.set(fmt=REDUCTION_FORMATS[(i + 1) % len(REDUCTION_FORMATS)])),
        "order": (forget, lambda i: ex.set(order=REDUCTION_ORDERS[(i + 1) % len(REDUCTION_ORDERS)])),
        "log10 gradient scale": (forget, lambda i: ex.set(log10_scale=[6, -12, 0, 4, -8][i % 5])),
    }
