"""Claims in the lessons' text and layout that no cell can assert: each is held here, so that an edit that brings a
corrected mistake back fails a test. (What a cell can show, a cell asserts; these are about where code sits and
what the prose says.)"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent


def cells(notebook: str):
    return nbformat.read(ROOT / "notebooks" / notebook, as_version=4).cells


def markdown(notebook: str) -> str:
    """The notebook's markdown, with runs of whitespace made one space (a phrase may break across lines)."""
    return re.sub(r"\s+", " ", " ".join(c.source for c in cells(notebook) if c.cell_type == "markdown"))


# (notebook, the call in the exercise's cell, text that no code cell above it may hold: the answer or its parts)
NO_ANSWER_ABOVE = [
    (
        "04_autocast_policies.ipynb",
        "autocast.check_dtype_predictions(",
        ("cumsum(", "gelu(", "addcmul(", "embedding_bag("),
    ),
    ("02_tf32.ipynb", "tf32.check_error_ratio(", ("def predicted_ratio(",)),
    ("03_fp16_overflow_underflow.ipynb", "fp16.check_kahan16(", ("(t - total) - y", "def kahan16_reference(")),
    ("04_autocast_policies.ipynb", "autocast.check_bce_fix(", ("with_logits", "softplus")),
    ("04_autocast_policies.ipynb", "autocast.check_cast_counter(", ("__torch_dispatch__", "self.casts +=")),
    ("05_loss_scaling.ipynb", "scaling.check_scaler_update(", ("def update_scale(", "growth_tracker +=")),
    ("06_amp_end_to_end.ipynb", "e2e.check_clipped_amp_step(", ("def make_step(", "unscale_(", "clip_grad_norm_(")),
    ("06_amp_end_to_end.ipynb", "e2e.check_accumulated_amp_step(", ("len(micro_batches)", "micro_batches")),
    ("07_fp8.ipynb", "fp8.check_amax_scale(", ("def amax_scale(", "def scale_from_amax(")),
    ("07_fp8.ipynb", "fp8.check_fp8_linear_backward(", ("class Fp8LinearFn(", "dy8 @ w8", "dy8.t() @ x8")),
]


@pytest.mark.parametrize(
    ("notebook", "call", "answers"), NO_ANSWER_ABOVE, ids=[f"{n[:2]}-{c}" for n, c, _ in NO_ANSWER_ABOVE]
)
def test_no_exercise_has_its_answer_above_it(notebook, call, answers):
    """The code a lesson shows after an exercise (its answer, or the key code the learner is asked to write) is not
    in any code cell above the exercise."""
    cs = cells(notebook)
    at = [i for i, c in enumerate(cs) if c.cell_type == "code" and call in c.source]
    assert at, f"{notebook}: no cell calls {call}"  # the first call is the exercise's own cell
    above = [c.source for c in cs[: at[0]] if c.cell_type == "code"]
    leaked = [a for a in answers if any(a in src for src in above)]
    assert not leaked, f"{notebook}: {leaked} above the exercise that calls {call}"


def test_07_never_calls_the_slow_fp8_accumulation_full_precision():
    """use_fast_accum=False promotes the partial sums to fp32 periodically (measured on the H100: 6.8e-4 relative
    error at K = 65536); that is not full fp32 precision, and the lesson may say so only with a 'not'."""
    text = markdown("07_fp8.ipynb")
    for m in re.finditer(r"full (?:fp32 |float32 )?precision", text):
        assert text[max(0, m.start() - 4) : m.start()] == "not ", text[max(0, m.start() - 120) : m.end()]


# where a machine's paths show: a compared output holding one differs on every learner's machine
MACHINE_PATH = re.compile(r"/usr/|/opt/|/home/|/root/|site-packages|\.venv|/tmp/|C:\\\\")


@pytest.mark.parametrize(
    "path", sorted([*ROOT.glob("notebooks/*.ipynb"), *ROOT.glob("delivery/presenter/*.ipynb")]), ids=lambda p: p.name
)
def test_no_compared_output_holds_a_path_of_this_machine(path):
    for i, c in enumerate(nbformat.read(path, as_version=4).cells):
        if c.cell_type != "code" or c.source.lstrip().startswith("# NBVAL_IGNORE_OUTPUT"):
            continue
        for out in c.get("outputs", []):
            text = out.get("text", "") + "".join(str(v) for k, v in out.get("data", {}).items() if k[:5] == "text/")
            m = MACHINE_PATH.search(text)
            assert not m, f"{path.name} cell {i}: {text[max(0, m.start() - 60) : m.end() + 60]!r}"


def test_10_hardware_table_names_every_generation_it_covers():
    """The published hardware table: fp8 from Ada (sm_89), the block formats on data-centre Blackwell, the
    workstation Blackwell (sm_120) and AMD's MI350, each with a source."""
    table = next(c.source for c in cells("10_microscaling.ipynb") if c.source.startswith("## 5. What hardware"))
    for name in ("sm_89", "sm_90", "sm_100", "sm_120", "MI350"):
        assert name in table, name
    rows = [line for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows and all("](http" in r or "amp_lessons" in r for r in rows), rows


def test_10_names_the_scale_modes_it_does_not_emulate():
    text = markdown("10_microscaling.ipynb")
    assert "CEIL and EVEN, not emulated here" in text


def test_04_does_not_say_its_cells_run_for_real_on_a_gpu():
    """Lesson 04's tensors are on the CPU, so its CUDA cells preview on fake CUDA tensors on every machine."""
    text = markdown("04_autocast_policies.ipynb")
    assert "the same cells run for real" not in text
    assert "preview on a machine with an NVIDIA GPU too" in text


@pytest.mark.parametrize("notebook", ["06_amp_end_to_end.ipynb", "08_debugging.ipynb", "09_distributed.ipynb"])
def test_autocast_weight_copies_are_not_said_to_die_with_the_forward_pass(notebook):
    """Autograd saves autocast's low-precision casts for backward (ATen's autocast_mode.h: casts precede autograd
    'so that ... input tensors are saved for backward in lower_precision_fp'): a weight copy lives until backward
    frees the graph, not for the forward pass only."""
    text = markdown(notebook)
    for wrong in ("live only during the forward", "duration of a forward pass", "for one autocast region"):
        assert wrong not in text, (notebook, wrong)
