"""Fixtures for every test under tests/: figures never pile up between tests."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

# Property-based tests draw the same examples on every run and machine (derandomize), keep no example database in
# the checkout, and have no per-example deadline (a machine busy with parallel tests is not a failure: the tests
# bound their own time).
settings.register_profile(
    "course", derandomize=True, database=None, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("course")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _numerics_settings() -> dict:
    """The process-wide settings that change what a float computation gives, each as (read, restore): a test that
    changes one must restore it, or every later test in its worker computes differently, silently (a difference
    only some machines show: the TF32 and bf16 paths of oneDNN and cuBLAS, denormal flushing)."""
    import torch

    def attr(obj, name):
        return (lambda: getattr(obj, name)), (lambda v: setattr(obj, name, v))

    settings = {
        "float32_matmul_precision": (torch.get_float32_matmul_precision, torch.set_float32_matmul_precision),
        "default_dtype": (torch.get_default_dtype, torch.set_default_dtype),
        "grad_enabled": (torch.is_grad_enabled, torch.set_grad_enabled),
        "deterministic": (torch.are_deterministic_algorithms_enabled, torch.use_deterministic_algorithms),
        "num_threads": (torch.get_num_threads, torch.set_num_threads),
        "autocast cpu": (lambda: torch.is_autocast_enabled("cpu"), lambda v: torch.set_autocast_enabled("cpu", v)),
        # no getter for torch.set_flush_denormal: a subnormal survives a multiplication by one unless flushed
        "denormals flushed": (lambda: bool((torch.tensor([1e-40]) * 1.0).item() == 0.0), torch.set_flush_denormal),
        "cuda matmul allow_tf32": attr(torch.backends.cuda.matmul, "allow_tf32"),
        "cuda fp16 reduced-precision reduction": attr(
            torch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction"
        ),
        "cuda bf16 reduced-precision reduction": attr(
            torch.backends.cuda.matmul, "allow_bf16_reduced_precision_reduction"
        ),
        "cudnn allow_tf32": attr(torch.backends.cudnn, "allow_tf32"),
    }
    for backend in ("mkldnn", "cuda", "cudnn"):  # the per-backend settings of torch 2.9 and later
        b = getattr(torch.backends, backend, None)
        for part in ("", "matmul", "conv", "rnn"):
            obj = getattr(b, part, None) if part else b
            if obj is not None and hasattr(obj, "fp32_precision"):
                settings[f"{backend}{'.' + part if part else ''}.fp32_precision"] = attr(obj, "fp32_precision")
    return settings


@pytest.fixture(autouse=True)
def _numerics_restored(request):
    settings = _numerics_settings()
    before = {k: read() for k, (read, _) in settings.items()}
    yield
    changed = {k: (before[k], read()) for k, (read, _) in settings.items() if read() != before[k]}
    if changed:
        # put every setting back (the coarse ones first: matmul precision also moves the fp32_precision settings),
        # so that one leak fails the test that leaked, and no later test computes under it unnoticed
        for k, (_, restore) in settings.items():
            restore(before[k])
        pytest.fail(f"{request.node.nodeid} left process-wide numerics changed (before, after): {changed}")
