"""Argument checks shared by the experiment modules: each error names the bad value and what is allowed."""

from __future__ import annotations

import math
import numbers
import os

import torch

from ._machine import MAX_TENSOR_BYTES, WORK_BUDGET_S, machine_flops, machine_memory_bytes
from ._table import duration_text, nbytes_text

__all__ = [
    "allocation", "block_shape", "count", "finite", "flag", "float_tensor", "int_at_least", "int_in", "integer",
    "is_int", "is_real", "model_call", "number", "path_or_none", "positive", "real", "real_in", "seed", "sequence"
]  # fmt: skip


def real(value, what: str) -> float:
    """A real number (a Python number or a one-element floating-point tensor) as a float."""
    if isinstance(value, torch.Tensor) and value.numel() == 1 and value.is_floating_point():
        return float(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what} must be a real number, got {value!r} ({type(value).__name__})")
    return float(value)


def finite(value, what: str) -> float:
    """A finite real number (not NaN, not an infinity)."""
    value = real(value, what)
    if not math.isfinite(value):
        raise ValueError(f"{what}={value!r} is not allowed: it must be a finite number")
    return value


def float_tensor(x, what: str) -> torch.Tensor:
    """A real floating-point tensor (not a number, a list, an int, bool or complex tensor)."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what} must be a torch.Tensor of floats, got {type(x).__name__}")
    if not x.is_floating_point():
        raise TypeError(f"{what} must be a floating-point tensor, got {str(x.dtype).replace('torch.', '')}")
    return x


def positive(value, what: str) -> float:
    """A positive finite real number."""
    value = real(value, what)
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{what}={value!r} is not allowed: it must be a positive finite number")
    return value


def int_at_least(value, what: str, low: int) -> int:
    """An int (not a bool) that is at least ``low``."""
    if not is_int(value, low):
        raise ValueError(f"{what}={value!r} is not allowed: it must be an int >= {low}")
    return int(value)


def is_int(value, low: int | None = None, high: int | None = None) -> bool:
    """Whether ``value`` is an int (not a bool) in ``[low, high]`` (None: no bound on that side)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return False
    return (low is None or value >= low) and (high is None or value <= high)


def is_real(
    value, low: float | None = None, high: float | None = None, *, open_low: bool = False, open_high: bool = False
) -> bool:
    """Whether ``value`` is a real Python number (not a bool, not a tensor) in the interval from ``low`` to
    ``high`` (closed unless ``open_low`` / ``open_high``; None: no bound). NaN passes only without bounds."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    if low is not None and not (value > low if open_low else value >= low):
        return False
    return high is None or (value < high if open_high else value <= high)


def integer(value, what: str, allowed: str = "an int") -> int:
    """An int (not a bool) as an int, else a TypeError naming ``what``, the value and ``allowed``."""
    if not is_int(value):
        raise TypeError(f"{what} must be {allowed}, got {value!r} ({type(value).__name__})")
    return int(value)


def number(value, what: str, allowed: str = "a real number") -> float:
    """A real Python number (not a bool, not a tensor; NaN and infinities included) as a float, else a
    TypeError naming ``what``, the value and ``allowed``."""
    if not is_real(value):
        raise TypeError(f"{what} must be {allowed}, got {value!r} ({type(value).__name__})")
    return float(value)


def int_in(value, what: str, low: int, high: int | None = None, allowed: str | None = None) -> int:
    """An int (not a bool) in ``[low, high]`` (``high`` None: no upper bound), else a ValueError naming ``what``,
    the value and ``allowed`` (default: the bounds)."""
    if not is_int(value, low, high):
        if allowed is None:
            allowed = f"an int >= {low}" if high is None else f"an int from {low} to {high}"
        raise ValueError(f"{what}={value!r} is not allowed: it must be {allowed}")
    return int(value)


def real_in(
    value,
    what: str,
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
    allowed: str | None = None,
) -> float:
    """A real Python number in the interval of :func:`is_real` as a float, else a ValueError naming ``what``, the
    value and ``allowed`` (default: the interval)."""
    if not is_real(value, low, high, open_low=open_low, open_high=open_high):
        if allowed is None:
            left = "(-inf" if low is None else f"{'(' if open_low else '['}{low:g}"
            right = "inf)" if high is None else f"{high:g}{')' if open_high else ']'}"
            allowed = f"a number in {left}, {right}"
        raise ValueError(f"{what}={value!r} is not allowed: it must be {allowed}")
    return float(value)


def flag(value, what: str) -> bool:
    """A bool (True or False; not 1, "no" or None)."""
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def seed(value, what: str = "seed") -> int:
    """A random seed: an int (not a bool) in [0, 2**63)."""
    if not is_int(value):
        raise TypeError(f"{what} must be an int (a random seed), got {value!r} ({type(value).__name__})")
    if not 0 <= value < 2**63:
        raise ValueError(f"{what}={value!r} is not allowed: a seed is an int in [0, 2**63)")
    return int(value)


def count(
    value, what: str, low: int = 1, high: int | None = None, unit: str = "", flops_each: float | None = None
) -> int:
    """An int (not a bool) in ``[low, high]``: a size, count or number of repeats (``unit`` says what).
    With ``flops_each`` (the arithmetic of one unit), a value whose work would take longer than
    :data:`WORK_BUDGET_S` at :func:`machine_flops` is refused too, with the estimate."""
    if not is_int(value):
        raise TypeError(f"{what} must be an int >= {low}, got {value!r} ({type(value).__name__})")
    if value < low:
        raise ValueError(f"{what} must be an int >= {low}, got {value!r}")
    over_cap = high is not None and value > high
    seconds = value * flops_each / machine_flops() if flops_each is not None else 0.0
    if over_cap or seconds > WORK_BUDGET_S:
        why = f" ({unit})" if unit else ""
        cap = f"at most {high:,}{why}" if high is not None else f"{unit or 'this much work'}"
        estimate = f"; its arithmetic alone would take {duration_text(seconds)} here" if flops_each is not None else ""
        budget = f", and nothing over {duration_text(WORK_BUDGET_S)} here" if flops_each is not None else ""
        raise ValueError(f"{what}={value!r} is more than this course runs: {cap}{budget}{estimate}")
    return int(value)


def allocation(n_elements: float, what: str, bytes_per_element: int = 4) -> None:
    """Refuse at once a request whose tensor would exceed :data:`MAX_TENSOR_BYTES`, with the estimate."""
    need = float(n_elements) * bytes_per_element
    if need > MAX_TENSOR_BYTES:
        raise ValueError(
            f"{what} would allocate {nbytes_text(need)} for one tensor; the course runs at most "
            f"{nbytes_text(MAX_TENSOR_BYTES)} (an eighth of this machine's {nbytes_text(machine_memory_bytes())} "
            "of memory, at most 2 GiB): choose smaller sizes"
        )


def model_call(model, args: tuple, what: str = "inputs"):
    """``model(*args)``, with torch refusing ``args`` (a width, dtype or count the model does not take) reported as
    a ValueError naming ``what`` (torch's error as the cause); the model's own errors and OOM propagate. A dtype
    mismatch inside the model on an activation (not one of ``args``) names the module, the dtypes and the fix."""
    entered = []  # (name, module, positional args) of the modules whose forward has not returned

    def enter(name):
        def hook(module, hook_args):
            entered.append((name, module, hook_args))

        return hook

    def leave(module, hook_args, output):
        for i in range(len(entered) - 1, -1, -1):
            if entered[i][1] is module:
                del entered[i]
                break

    handles = []
    if isinstance(model, torch.nn.Module) and not isinstance(model, torch.jit.ScriptModule):  # scripted: no hooks
        for name, module in model.named_modules():
            handles.append(module.register_forward_pre_hook(enter(name)))
            handles.append(module.register_forward_hook(leave))
    try:
        return model(*args)
    except torch.OutOfMemoryError:
        raise
    except (RuntimeError, TypeError) as e:
        if not _raised_in_torch(e):
            raise
        failed = entered[-1] if entered else None
        text = str(e).lower()
        if failed is not None and any(k in text for k in ("dtype", "scalar type", "type (")):
            name, module, module_args = failed
            ins = [a for a in module_args if isinstance(a, torch.Tensor) and a.is_floating_point()]
            own = [(n, p) for n, p in module.named_parameters(recurse=False) if p.is_floating_point()]
            own = own or [(n, p) for n, p in module.named_parameters() if p.is_floating_point()]
            odd = [a for a in ins if own and a.dtype != own[0][1].dtype and not any(a is b for b in args)]
            if odd:
                weight, want = own[0][0], own[0][1].dtype
                got, want_name = str(odd[0].dtype).removeprefix("torch."), str(want).removeprefix("torch.")
                cast = "x.float()" if want == torch.float32 else f"x.to(torch.{want_name})"
                raise ValueError(
                    f"the model's forward failed inside {repr(name) if name else 'the model itself'} "
                    f"({type(module).__name__}) on a dtype mismatch: its input is {got} but its {weight} is "
                    f"{want_name} ({e}). The {what} are not the cause: an activation of the model reached this layer "
                    f"in {got}, as when a tensor leaves an autocast region, or autocast is switched off around a "
                    f"layer whose input is not cast. Cast the input to {want_name} where that layer's region begins "
                    f"({cast} inside it)"
                ) from e
        shapes = ", ".join(
            f"{tuple(a.shape)} {str(a.dtype).replace('torch.', '')}"
            if isinstance(a, torch.Tensor)
            else type(a).__name__
            for a in args
        )
        raise ValueError(
            f"{what} do not fit the model: model(*{what}) with {what} ({shapes}) failed: {e}. {what} must be the "
            "positional arguments the model's forward takes, with the widths and dtypes of its first layer"
        ) from e
    finally:
        for h in handles:
            h.remove()


def _raised_in_torch(e: BaseException) -> bool:
    """Whether the innermost Python frame of ``e``'s traceback is in torch (a layer refusing its input)."""
    tb, last = e.__traceback__, None
    while tb is not None:
        last = tb.tb_frame.f_code.co_filename
        tb = tb.tb_next
    return last is not None and os.path.abspath(last).startswith(_TORCH_DIR)


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def sequence(value, what: str, of: str = "values") -> tuple:
    """A list or tuple (or range) of ``of``, as a tuple: not a number, a string, a dict or a generator."""
    if not isinstance(value, (list, tuple, range)):
        raise TypeError(f"{what} must be a list or tuple of {of}, got {value!r} ({type(value).__name__})")
    return tuple(value)


def selection(value, what: str, of: str = "values") -> tuple:
    """A non-empty list or tuple (or range) of ``of``."""
    items = sequence(value, what, of)
    if not items:
        raise ValueError(f"{what} is empty: give at least one of the {of}")
    return items


def path_or_none(value, what: str):
    """None, a str or an os.PathLike: a file or folder the caller names."""
    if value is not None and not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{what} must be None or a path (str or pathlib.Path), got {value!r} ({type(value).__name__})")
    return value


def block_shape(value, what: str, high: int) -> tuple[int, int]:
    """A block of a tensor: a ``(rows, columns)`` tuple of ints from 1 to ``high``."""
    if not isinstance(value, tuple) or len(value) != 2:
        raise TypeError(f"{what} must be a (rows, columns) tuple, got {value!r}")
    return tuple(count(n, f"{what}[{i}]", 1, high) for i, n in enumerate(value))
