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


def _numerics_state() -> dict:
    """The process-wide settings that change what a float computation gives: a test that changes one must restore
    it, or every later test in its worker computes differently (a difference only some machines show: the TF32 and
    bf16 paths of oneDNN and cuBLAS, denormal flushing)."""
    import torch

    state = {
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "default_dtype": torch.get_default_dtype(),
        "grad_enabled": torch.is_grad_enabled(),
        "deterministic": torch.are_deterministic_algorithms_enabled(),
        "num_threads": torch.get_num_threads(),
        "cuda matmul allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cuda fp16 reduced-precision reduction": torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
        "cuda bf16 reduced-precision reduction": torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction,
        "cudnn allow_tf32": torch.backends.cudnn.allow_tf32,
        "autocast cpu": torch.is_autocast_enabled("cpu"),
        # no getter for torch.set_flush_denormal: a subnormal survives a multiplication by one unless flushed
        "denormals flushed": bool((torch.tensor([1e-40]) * 1.0).item() == 0.0),
    }
    for name in ("fp32_precision",):  # the per-backend settings of torch 2.9 and later
        for backend in ("mkldnn", "cuda", "cudnn"):
            b = getattr(torch.backends, backend, None)
            for part in ("", "matmul", "conv", "rnn"):
                obj = getattr(b, part, None) if part else b
                if obj is not None and hasattr(obj, name):
                    state[f"{backend}{'.' + part if part else ''}.{name}"] = getattr(obj, name)
    return state


@pytest.fixture(autouse=True)
def _numerics_restored(request):
    before = _numerics_state()
    yield
    after = _numerics_state()
    changed = {k: (before[k], after.get(k)) for k in before if after.get(k) != before[k]}
    if changed:
        import torch

        # restore, so that one leak fails one test, not every later one in this worker
        torch.set_float32_matmul_precision(before["float32_matmul_precision"])
        torch.set_default_dtype(before["default_dtype"])
        torch.set_grad_enabled(before["grad_enabled"])
        torch.use_deterministic_algorithms(before["deterministic"])
        torch.set_num_threads(before["num_threads"])
        torch.set_flush_denormal(before["denormals flushed"])
        pytest.fail(f"{request.node.nodeid} left process-wide numerics changed (before, after): {changed}")
