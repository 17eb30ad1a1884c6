"""The instructors' solutions pass the learners' checkers (so both stay correct)."""

from pathlib import Path

from amp_lessons import autocast, bits, debug, e2e, fp16, scaling, tf32
from amp_lessons.lessons import LESSONS
from tests.faces import internals
from tests.test_checks import solution

fp8 = internals("fp8")

ROOT = Path(__file__).resolve().parent.parent


def load(name):
    return solution(name.removeprefix("solutions_"))


def test_lesson_01_solutions():
    s = load("solutions_01")
    assert bits.check_max_finite(s.max_finite)
    assert bits.check_ulp(s.ulp_bf16, "bf16")
    assert bits.check_decode_bits(s.DECODED_E4M3, 0b0_1000_011, "fp8_e4m3")
    assert bits.check_format_choice(s.FORMAT_CHOICE_A, 1e-6, 1e6, 0.01)
    assert bits.check_format_choice(s.FORMAT_CHOICE_B, 1e-2, 1e2, 0.001)
    # and each is the only right answer of the course's formats
    from amp_lessons.formats import FORMATS

    assert [n for n in FORMATS if bits.check_format_choice(n, 1e-6, 1e6, 0.01)] == ["bf16"]
    assert [n for n in FORMATS if bits.check_format_choice(n, 1e-2, 1e2, 0.001)] == ["fp16"]


def test_lesson_02_solutions():
    s = load("solutions_02")
    assert tf32.check_tf32_matmul(s.tf32_matmul, s.round_to_tf32)
    assert tf32.check_error_ratio(s.predicted_ratio)


def test_lesson_03_solutions():
    s = load("solutions_03")
    assert fp16.check_kahan16(s.kahan16)
    assert fp16.check_stall_value(s.STALL_VALUE, 1.0, "fp16")


def test_lesson_04_solution():
    s = load("solutions_04")
    assert autocast.check_dtype_predictions(s.DTYPE_PREDICTIONS)
    wrong = dict(s.DTYPE_PREDICTIONS, **{"cuda: cumsum(a @ b, 0)": "torch.float16"})
    r = autocast.check_dtype_predictions(wrong)
    assert not r and "cuda: cumsum(a @ b, 0): not torch.float16" in r.message and "float32" not in r.message
    assert "still to predict" in autocast.check_dtype_predictions({}).message


def test_lesson_04_bce_solution():
    import torch
    import torch.nn.functional as F

    s = load("solutions_04")
    assert autocast.check_bce_fix(s.bce_fix)
    r = autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy(torch.sigmoid(z), y))
    assert not r and "refuses" in r.message
    assert (
        "your loss is"
        in autocast.check_bce_fix(lambda z, y: F.binary_cross_entropy_with_logits(z, y, reduction="sum")).message
    )


def test_lesson_04_cast_counter_solution():
    s = load("solutions_04")
    assert autocast.check_cast_counter(s.count_casts)
    assert not autocast.check_cast_counter(lambda work, *args: 5)


def test_lesson_05_solutions():
    from amp_lessons.scaling import small_loss_census

    s = load("solutions_05")
    assert scaling.check_smallest_scale(s.SMALLEST_SCALE_DEFAULT)
    census = small_loss_census()
    assert scaling.check_smallest_scale(s.SMALLEST_SCALE_SMALL_LOSS, census)
    r = scaling.check_smallest_scale(s.SMALLEST_SCALE_SMALL_LOSS // 2, census)
    assert not r and "larger scale" in r.message
    r = scaling.check_smallest_scale(s.SMALLEST_SCALE_SMALL_LOSS * 2, census)
    assert not r and "not the smallest" in r.message
    assert "not a power of two" in scaling.check_smallest_scale(3000, census).message
    assert "overflow" in scaling.check_smallest_scale(2**40, census).message
    assert not scaling.check_smallest_scale(..., census)


def test_lesson_05_update_rule_solution():
    s = load("solutions_05")
    assert scaling.check_scaler_update(s.scaler_update)
    r = scaling.check_scaler_update(lambda sc, t, f, g, b, i: (sc * b, 0) if f else (sc * g, 0))
    assert not r and "IN A ROW" in r.message
    assert not scaling.check_scaler_update(lambda *a: None)
    assert not scaling.check_scaler_update(None)


def test_lesson_06_solution():
    s = load("solutions_06")
    assert e2e.check_clipped_amp_step(s.clipped_amp_step)
    r = e2e.check_clipped_amp_step(lambda *a: None)
    assert not r and "scale went" in r.message
    assert not e2e.check_clipped_amp_step("x")
    assert e2e.check_accumulated_amp_step(s.accumulated_amp_step)
    assert not e2e.check_accumulated_amp_step(s.clipped_amp_step)  # exercise 1's answer is not exercise 2's


def test_lesson_06_solution_calls_the_scaler_in_the_order_of_the_lessons_step():
    """The instructors' answer and the step lesson 06 shows after the exercise (make_step) agree on the order."""
    import inspect
    import re

    from amp_lessons.e2e import key_code

    calls = re.compile(r"scaler\.(?:scale|unscale_|step|update)\(|clip_grad_norm_\(")
    mine = calls.findall(inspect.getsource(load("solutions_06").clipped_amp_step))
    assert mine == calls.findall(inspect.getsource(key_code.make_step)) and len(mine) == 5


def test_lesson_07_solutions():
    import torch

    s = load("solutions_07")
    assert fp8.check_amax_scale(s.amax_scale)
    r = fp8.check_amax_scale(lambda x, m: float(x.abs().max()) / m if x.abs().max() > 0 else 1.0)
    assert not r and "inverse" in r.message
    r = fp8.check_amax_scale(lambda x, m: m / float(x.max()) if x.abs().max() > 0 else 1.0)
    assert not r and "MAGNITUDE" in r.message
    r = fp8.check_amax_scale(lambda x, m: m / float(x.abs().max()))
    assert not r and "all-zero" in r.message  # ZeroDivisionError becomes feedback
    r = fp8.check_amax_scale(lambda x, m: m / x.abs().max())  # a tensor: inf for zeros
    assert not r and "1.0" in r.message
    assert not fp8.check_amax_scale(None)
    assert fp8.check_fp8_format_choice(s.FP8_FORMAT_CHOICE)
    assert fp8.check_fp8_format_choice({"weights": torch.float8_e4m3fn, "activations": "fp8_e4m3", "gradients": "E5M2"})
    r = fp8.check_fp8_format_choice({"weights": "e4m3", "activations": "e4m3", "gradients": "e4m3"})
    assert not r and "57344" in r.message
    r = fp8.check_fp8_format_choice({"weights": "e5m2", "activations": "e4m3", "gradients": "e5m2"})
    assert not r and "weights" in r.message and "mantissa" in r.message
    assert "gradients" in fp8.check_fp8_format_choice({"weights": "e4m3", "activations": "e4m3"}).message
    assert (
        "not an fp8 format"
        in fp8.check_fp8_format_choice({"weights": "fp16", "activations": "e4m3", "gradients": "e5m2"}).message
    )
    assert not fp8.check_fp8_format_choice(["e4m3"])
    assert fp8.check_fp8_linear_backward(s.MyFp8LinearFn)
    assert not fp8.check_fp8_linear_backward(fp8.Fp8LinearFn)  # the lesson's own layer does not count
    assert not fp8.check_fp8_linear_backward(None)


def test_lesson_08_solutions():
    s = load("solutions_08")
    assert debug.check_first_bad_layer(s.FIRST_BAD_LAYER)
    assert not debug.check_first_bad_layer("norm4") and not debug.check_first_bad_layer("block4")
    assert debug.check_fp16_fix(s.fix)
    assert not debug.check_fp16_fix(lambda model: model)
    assert debug.check_nonfinite_hook(s.first_nonfinite_module)
    assert not debug.check_nonfinite_hook(lambda model, x: "head")


def test_every_lesson_with_an_exercise_has_a_solution_file():
    import json
    import re

    placeholder = re.compile(r"#\s*YOUR\b")
    with_exercises = set()
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        if any(c["cell_type"] == "code" and placeholder.search("".join(c["source"])) for c in cells):
            with_exercises.add(path.name[:2])
    solutions = {p.stem.removeprefix("solutions_") for p in (ROOT / "instructors").glob("solutions_*.py")}
    assert with_exercises == {lesson.number for lesson in LESSONS if lesson.exercises}, "the registry's exercises"
    assert with_exercises == solutions, f"exercises without solutions: {with_exercises - solutions}"


def test_lesson_09_solutions():
    from amp_lessons import distributed

    s = load("solutions_09")
    assert distributed.check_fsdp_fp16_step(s.fsdp_fp16_step)
    assert "ShardedGradScaler" not in distributed.check_fsdp_fp16_step(s.fsdp_fp16_step).message  # no note needed
    assert distributed.check_ring_sum_bf16(s.ring_sum_bf16)
    # the notebook's starting points are not accepted
    assert not distributed.check_fsdp_fp16_step(lambda rank, world_size, batches: ...)
    assert not distributed.check_ring_sum_bf16(lambda g: g.sum(0))


def test_lesson_10_solutions():
    from amp_lessons import micro

    s = load("solutions_10")
    assert micro.check_rceil_shared_exponent(s.rceil_shared_exponent)
    assert micro.check_stochastic_round(s.my_stochastic_round)
    assert not micro.check_rceil_shared_exponent(lambda a, f="fp8_e4m3": s.rceil_shared_exponent(a, f) + 1)
    assert not micro.check_stochastic_round(lambda x, noise: x.bfloat16().float())
    assert not micro.check_stochastic_round(None)
    assert s.SR_PROBABILITY == 839 / 2**16  # the probability the notebook shows after Exercise 2


def test_lesson_11_solutions():
    from tests.faces import internals

    compiled = internals("compiled")

    s = load("solutions_11")
    # the notebook's starting points are not accepted, nor each exercise's answer in the other's place
    assert not compiled.check_fused_chain(lambda h, g, emulate: compiled.workload("chain")(h, g))
    assert not compiled.check_fused_chain(s.compile_matching_eager)
    if compiled.inductor_status()[0]:  # both checkers compile (Inductor needs a C++ compiler)
        import torch

        assert compiled.check_fused_chain(s.fused_chain)
        assert compiled.check_compile_matching_eager(s.compile_matching_eager)
        assert compiled.check_compile_matching_eager(s.compile_matching_eager_patched)
        assert not compiled.check_compile_matching_eager(torch.compile)
        assert not compiled.check_compile_matching_eager(s.fused_chain)
