"""tests/conftest.py's guard: a test that leaves a process-wide numerics setting changed fails, naming it, and the
setting is put back before the next test.

The inner pytest runs in this process (pytester), where torch is already imported: the settings it leaks are this
process's, so this test's own guard also checks that the inner guard put every one of them back."""

import shutil
from pathlib import Path

# The inner tests' matmul precision setting imports torch._dynamo. Imported here first, it stays when pytester takes
# back the modules the inner run imported; dropped, a later import in this worker would register torch's operator
# libraries a second time (RuntimeError: "Only a single TORCH_LIBRARY can be used to register the namespace").
import torch._dynamo  # noqa: F401

LEAKY = """import torch


def test_leaks():
    torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    torch.set_float32_matmul_precision("medium")
    torch.set_flush_denormal(True)


def test_next_one_sees_the_defaults():
    assert torch.get_float32_matmul_precision() == "highest"
    assert torch.backends.mkldnn.matmul.fp32_precision == "none"
    assert (torch.tensor([1e-40]) * 1.0).item() != 0.0


def test_restoring_its_own_change_passes():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_num_threads(before)
"""


def test_a_leaking_test_fails_and_the_next_one_runs_under_the_defaults(pytester):
    shutil.copy(Path(__file__).with_name("conftest.py"), pytester.path / "conftest.py")
    (pytester.path / "test_leaky.py").write_text(LEAKY)
    out = pytester.runpytest_inprocess(
        "-q", "-p", "no:cacheprovider", "-p", "no:benchmark", "-n", "0", "-c", "/dev/null",
        "--rootdir", str(pytester.path), str(pytester.path),
    )  # fmt: skip
    text = out.stdout.str() + out.stderr.str()
    assert "3 passed, 1 error" in text, text[-3000:]
    assert "test_leaks left process-wide numerics changed" in text
    assert "'float32_matmul_precision': ('highest', 'medium')" in text and "'denormals flushed': (False, True)" in text
