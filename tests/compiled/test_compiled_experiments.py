"""Tests of amp_lessons.compiled._experiments; the three compiled graphs are made once per module."""

import dataclasses
import math

import pytest
import torch

from amp_lessons import timing
from tests.faces import internals

compiled = internals("compiled")

pytestmark = pytest.mark.skipif(not compiled.inductor_status()[0], reason="no C++ compiler for Inductor")


@pytest.fixture(scope="module")
def mlp():
    return {
        "autocast": compiled.compile_workload("mlp"),
        "emulated": compiled.compile_workload("mlp", emulate_precision_casts=True),
        "fp32": compiled.compile_workload("mlp", autocast=False),
    }


def test_eager_casts_count_what_autocast_runs():
    e = compiled.eager_casts("mlp")
    # x is cast once per matmul (it is no leaf that requires grad, so autocast does not cache its cast), each
    # weight once, mul's bf16 result up to fp32 inside rms_norm and its result back down: 6 casts
    assert e.casts == 6 and e.ops.count("mm") == 2
    # bf16 writes: 4 casts down, 2 matmul outputs, silu, mul, the final cast
    assert e.bf16_outputs == 9
    chain = compiled.eager_casts("chain")
    assert chain.casts == 2 and chain.bf16_outputs == 3


def test_captured_graph_holds_the_autocast_region_and_its_casts():
    g = compiled.captured_graph("mlp")
    assert g.graphs == 1  # no graph break at the autocast boundary
    assert [line.split(" = ")[1].split("(")[0] for line in g.autocast_nodes] == ["enter_autocast", "exit_autocast"]
    assert "bfloat16" in g.autocast_nodes[0]
    assert len(g.casts) == compiled.eager_casts("mlp").casts == 6
    assert "enter_autocast" in repr(g)


def test_summarize_code_counts_kernels_calls_and_writes():
    code = (
        "cpp_fused_a_0 = async_compile.cpp_pybinding(['const float*', 'at::BFloat16*', 'float*'], r'''\n"
        "auto t = at::vec::convert<at::BFloat16,1,float,2>(x);'''\n"
        "def call(self, args):\n    extern_kernels.mm(buf0, buf1, out=buf2)\n"
    )
    s = compiled.summarize_code(code)
    assert s.kernels == ("cpp_fused_a_0",) and s.library_calls == ("extern_kernels.mm",)
    assert (s.bf16_writes, s.fp32_writes, s.conversions) == (1, 1, 1)


def test_inductor_fuses_the_casts(mlp):
    s = mlp["autocast"].summary
    eager = compiled.eager_casts("mlp")
    assert s.library_calls.count("extern_kernels.mm") == 2
    # the chain silu * mul -> upcast -> rms_norm -> downcast is one kernel
    assert any("silu" in k and "rsqrt" in k for k in s.kernels)
    assert len(s.kernels) < eager.casts
    assert s.bf16_writes + 2 < eager.bf16_outputs  # + 2: the matmuls write bf16 too
    assert mlp["fp32"].summary.bf16_writes == 0
    assert mlp["autocast"].output.dtype == torch.bfloat16 and mlp["autocast"].compile_seconds > 0


def test_compiled_bf16_differs_from_eager_and_emulation_restores_it(mlp):
    e = compiled.precision_errors(mlp["autocast"], mlp["emulated"])
    # emulation reproduces eager's roundings; ATen's and Inductor's fp32 math may differ in a last bit. Measured with
    # torch 2.13 and 2.15; torch 2.11's CPU Inductor does not emulate the casts of this graph (0.36 differ)
    release = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if release >= (2, 13):
        assert e.emulated.fraction_differing < 0.01 and e.emulated.ulps_from_eager <= 1
    elif release <= (2, 11):
        assert e.emulated.fraction_differing > 0.1
    assert e.compiled.fraction_differing > 0.1
    assert not e.compiled.equals_eager and 0 < e.compiled.ulps_from_eager <= 4
    assert e.compiled.mean_error < e.eager.mean_error  # one rounding instead of three: closer to fp64 on average
    assert (
        e.eager.equals_eager and e.eager.fraction_differing == 0 and list(e.runs) == ["eager", "compiled", "emulated"]
    )
    assert list(compiled.precision_errors(mlp["autocast"]).runs) == ["eager", "compiled"]
    with pytest.raises(TypeError):
        compiled.precision_errors(mlp["emulated"])
    with pytest.raises(TypeError):
        compiled.precision_errors(mlp["autocast"], mlp["fp32"])
    # lesson 11 compiles the emulated block in a cell and passes its output: the same figures as the workload's
    assert compiled.precision_errors(mlp["autocast"], mlp["emulated"].output) == e
    with pytest.raises(ValueError, match="shape"):
        compiled.precision_errors(mlp["autocast"], mlp["emulated"].output[:3])
    with pytest.raises(ValueError, match="dtype"):
        compiled.precision_errors(mlp["autocast"], mlp["emulated"].output.float())


def test_step_times_times_four_settings(mlp):
    t = compiled.step_times(mlp["autocast"], mlp["fp32"], repeats=2)
    assert list(t) == ["eager fp32", "eager autocast", "compiled fp32", "compiled autocast"]
    assert all(isinstance(v, timing.Timing) and v.median_s > 0 for v in t.values())
    with pytest.raises(TypeError):
        compiled.step_times(mlp["fp32"], mlp["autocast"])


def test_fp8_saturation_eager_and_compiled_agree_on_this_torch():
    r = compiled.fp8_saturation((448.0, 500.0, float("inf")))
    assert r.values == (448.0, 500.0, math.inf) and r.compile_seconds > 0
    assert r.eager[0] == r.compiled[0] == 448.0
    assert all(v == 448.0 or math.isnan(v) for v in r.eager + r.compiled)
    assert r.agree  # eager and generated code agree in every release measured
    assert not dataclasses.replace(r, compiled=(448.0, 448.0, 448.0), eager=(448.0, math.nan, 448.0)).agree


def test_torch_logs_keeps_torch_log_lines_without_the_prefix_and_restores_stderr(capfd):
    import logging

    h, g = compiled.make_inputs("chain", rows=2, width=4)
    with compiled.torch_logs() as logs:
        torch._logging.set_logs(graph_code=True)
        torch.compile(compiled.workload("chain"), backend="eager")(h, g)
        logging.getLogger("torch._dynamo").warning("kept in the list")
    assert "kept in the list" in logs  # the whole line: no level, time, process or file before it
    assert any("silu" in line for line in logs) and not any("[__graph_code]" in line for line in logs)
    assert capfd.readouterr().err == ""  # nothing went to stderr
    logging.getLogger("torch._dynamo").warning("after the block")
    assert "after the block" in capfd.readouterr().err  # torch's default logging, on stderr again
