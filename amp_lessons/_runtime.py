"""Small run-time helpers every topic needs: a device parser, exact fp32 matmuls, one thread for tiny ops, a quiet
C++ stderr, a progress bar, and sizing work to a time budget."""

from __future__ import annotations

import contextlib
import html
import os
import time
import warnings

import torch

from ._validate import is_int, is_real

__all__ = ["Progress", "exact_fp32", "fp32_precision", "one_thread", "parse_device", "quiet_fd2"]


def parse_device(device, *, require_available: bool = True) -> torch.device:
    """``device`` ('cpu', 'cuda', 'cuda:N' or such a ``torch.device``) as a ``torch.device``; ValueError for
    anything else, RuntimeError for CUDA where torch sees none (unless ``require_available`` is False)."""
    bad = ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or a torch.device of type cpu or cuda, got {device!r}")
    if isinstance(device, torch.device):
        d = device
    elif isinstance(device, str):
        try:
            d = torch.device(device)
        except (RuntimeError, TypeError):
            raise bad from None
    else:
        raise bad
    if d.type not in ("cpu", "cuda"):
        raise bad
    if require_available and d.type == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(
            f"device={device!r} was asked for, but torch sees no CUDA GPU on this machine; use device='cpu'"
        )
    return d


@contextlib.contextmanager
def fp32_precision(matmul: str | None = None, conv: str | None = None, cpu_matmul: str | None = None):
    """Set the fp32 math of CUDA matmuls / cuDNN convolutions / CPU (oneDNN) matmuls with the
    current API (``"ieee"`` or ``"tf32"``; ``"bf16"`` too for the CPU) and restore it on exit."""
    knobs = [
        (torch.backends.cuda.matmul, matmul, ("ieee", "tf32")),
        (torch.backends.cudnn.conv, conv, ("ieee", "tf32")),
        (torch.backends.mkldnn.matmul, cpu_matmul, ("ieee", "tf32", "bf16")),
    ]
    saved = []
    try:
        for obj, value, allowed in knobs:
            if value is None:
                continue
            if value not in allowed:
                raise ValueError(f"precision {value!r} is not allowed here: use one of {', '.join(allowed)}")
            saved.append((obj, obj.fp32_precision))
            obj.fp32_precision = value
        yield
    finally:
        for obj, old in reversed(saved):
            obj.fp32_precision = old


def exact_fp32(d: torch.device):
    """IEEE fp32 matmuls on ``d``'s kind of device, touching only that device's switch."""
    return fp32_precision(matmul="ieee") if d.type == "cuda" else fp32_precision(cpu_matmul="ieee")


@contextlib.contextmanager
def one_thread():
    """Run tiny tensor ops on one thread (restored afterwards): on a busy machine threads cost more than they gain."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# torch 2.11's profiler warns this on every start; the course's profilers run one cycle each
_PROFILER_CYCLE_WARNING = r"Warning: Profiler clears events at the end of each cycle"


@contextlib.contextmanager
def quiet_fd2():
    """Silence the profiler's start/stop: its C++ stderr and torch 2.11's "Profiler clears events" warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_PROFILER_CYCLE_WARNING, category=UserWarning)
        try:
            saved = os.dup(2)
        except OSError:
            yield
            return
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 2)
                yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _in_kernel() -> bool:
    """Whether this runs in a Jupyter kernel, where display() reaches a page."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency of the course
        return False
    ip = get_ipython()
    return ip is not None and hasattr(ip, "kernel")


class _BarView:
    """One state of a :class:`Progress` bar as a notebook output: HTML and the same line as text/plain."""

    def __init__(self, text: str, done: int, total: int | None):
        self.text, self.done, self.total = text, done, total

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        bar = f"<progress value='{self.done}' max='{self.total}' style='width: 14em'></progress> " if self.total else ""
        return f"<div style='font-family: var(--jp-code-font-family, monospace)'>{bar}{html.escape(self.text)}</div>"


class Progress:
    """A progress bar for the course's long cells, used like tqdm's (an iterable, or ``total=`` with
    :meth:`update`; :meth:`set_postfix_str`; :meth:`close` or a ``with`` block). In a notebook an HTML output
    updated in place that ends as a line saying what ran and how long it took; elsewhere tqdm's text bar."""

    def __init__(self, iterable=None, *, total: int | None = None, desc: str = "", disable: bool = False,
                 min_interval_s: float = 0.2):  # fmt: skip
        if not isinstance(desc, str):
            raise TypeError(f"desc must be a string, got {type(desc).__name__}: {desc!r}")
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        if total is not None and not is_int(total, 0):
            raise ValueError(f"total must be None or a whole number >= 0, got {total!r}")
        self.iterable, self.total, self.desc, self.disable = iterable, total, desc, bool(disable)
        self.n, self.postfix, self.min_interval_s = 0, "", float(min_interval_s)
        self._started = self._shown = time.perf_counter()
        self._handle = self._tqdm = None
        self._closed = False
        if self.disable:
            return
        if _in_kernel():
            from IPython.display import display

            self._handle = display(self._view(), display_id=True)
        else:
            from tqdm import tqdm

            self._tqdm = tqdm(total=total, desc=desc, leave=False)

    def _view(self, final: bool = False) -> _BarView:
        spent = time.perf_counter() - self._started
        of = f" of {self.total}" if self.total is not None else ""
        extra = f" ({self.postfix})" if self.postfix and not final else ""
        if not final:
            text = f"{self.desc}: {self.n}{of}{extra}, {spent:.1f} s"
        elif self.total is not None and self.n < self.total:
            text = f"{self.desc}: stopped at {self.n}{of}, after {spent:.1f} s"
        else:
            text = f"{self.desc}: {self.n}{of} in {spent:.1f} s"
        return _BarView(text, self.n, self.total)

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._tqdm is not None:
            self._tqdm.update(n)
        elif self._handle is not None and time.perf_counter() - self._shown >= self.min_interval_s:
            self._handle.update(self._view())
            self._shown = time.perf_counter()

    def set_postfix_str(self, s: str = "") -> None:
        self.postfix = str(s)
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(s)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._tqdm is not None:
            self._tqdm.close()
        elif self._handle is not None:
            self._handle.update(self._view(final=True))

    def __iter__(self):
        if self.iterable is None:
            raise TypeError("this Progress was made with total=, not an iterable: call update() instead")
        try:
            for item in self.iterable:
                yield item
                self.update()
        finally:
            self.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def budget_seconds(value, what: str) -> float:
    """A time budget: a positive number of seconds (``math.inf``: no limit) as a float, else a ValueError."""
    if not is_real(value, 0, open_low=True):
        raise ValueError(f"{what} must be a positive number of seconds (math.inf: no limit), got {value!r}")
    return float(value)


FEWEST_RUNS = 3
"""The fewest timed runs a budget leaves a measurement (a spread needs a few)."""


def time_until(
    fn, d: torch.device, warmup: int, repeats: int, deadline: float, *, time_fn
) -> tuple[tuple[float, ...], bool]:
    """``(seconds of each timed call, cut)``: ``time_fn`` one call at a time, after ``warmup`` untimed calls, until
    ``repeats`` are timed or ``deadline`` passes (after at least :data:`FEWEST_RUNS`); ``cut``: the deadline stopped it."""
    times: list[float] = []
    least = min(FEWEST_RUNS, repeats)
    while len(times) < repeats:
        if len(times) >= least and time.perf_counter() >= deadline:
            return tuple(times), True
        times += time_fn(fn, device=d.type, warmup=warmup if not times else 0, repeats=1).times_s
    return tuple(times), False


def halve_to_budget(label: str, start: int, predicted, budget_s: float, why) -> tuple[int, str]:
    """``(size, sentence)``: ``start`` halved (down to 64) until ``predicted(size)`` seconds fit ``budget_s``; the
    sentence names the size and, if it is not ``start``, why (``why()``, asked for only then)."""
    size = start
    while size > 64 and predicted(size) > budget_s:
        size //= 2
    if size == start:
        return size, f"{label} {size}"
    return size, (
        f"{label} {size}, not {start}: {why()}, and {start} would take "
        f"about {predicted(start):.2g} s (budget_s={budget_s:g})"
    )
