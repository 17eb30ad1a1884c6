"""Results at the public boundary are records, not dicts keyed by prose: a public function of a topic (other than
``plot_*`` and ``check_*``) whose return annotation is a bare ``dict`` or ``dict[...]`` must be in one of the two
lists below, each entry with its reason. A genuine mapping is keyed by data (dtype, format, op, tensor, method
names); the second list names the prose-keyed results not converted yet, and can only shrink: an entry that no
longer returns a dict, or no longer exists, fails here until it is removed."""

import dataclasses
import inspect
import re
import typing

import pytest

from amp_lessons.lessons import TOPICS
from tests.faces import internals

GENUINE_MAPPINGS = {
    "tf32.mkldnn_precision_effect": "mkldnn fp32_precision setting -> relative error",
    "fp16.census_fractions": "census category -> fraction of the values",
    "fp16.running_sums_of_copies": "summation method -> its running sums (one curve per method for the plot)",
    "autocast.policy_table": "op name -> autocast policy",
    "autocast.policy_sources": "op name -> where its policy is stated",
    "autocast.policy_groups": "policy -> op names",
    "autocast.output_dtypes": "the caller's expression labels -> device type -> dtype name",
    "scaling.scaled_fractions": "tensor kind -> census category -> fraction",
    "e2e.matmul_rate_runs": "dtype name -> timed runs",
    "e2e.matmul_rates": "dtype name -> FLOP/s",
    "e2e.first_rates": "dtype name -> FLOP/s (matmul_rates on a CPU, none on a GPU)",
    "fp8.model_tensors": "tensor name -> tensor",
    "fp8.torch_fp8_overflow": "fp8 dtype name -> probed value -> what the cast gave",
    "compiled.step_times": "setting name -> Timing",
    "distributed.fsdp_inf_sync": "per rank: loss scaler class name -> ScalerOutcome",
    "tf32.time_matmuls": "setting name (fp32, and tf32 where it is real) -> Timing",
    "micro.scale_rule_clipping": "scale rule -> RuleClipping",
    "micro.train_low_precision": "update method -> LowPrecisionRun",
    "distributed.gloo_allreduce_check": "format name -> AllreduceCheck",
}

# Rows of dicts keyed by prose that a text annotation ("list[dict]") hid from this test until it read annotations
# kept as text: each still to become a record (a frozen dataclass with its table).
NOT_YET_RECORDS = {
    "distributed.observe_fp16_fsdp_step": "rows of one FSDP2 fp16 step's stages (rank, stage, dtypes)",
    "e2e.inference_compare": "rows by inference setting (time, memory, error)",
    "e2e.matmul_throughput": "rows by dtype and size (time, TFLOP/s, share of peak, skipped)",
    "e2e.odd_size_effect": "rows by size (time, TFLOP/s)",
    "fp8.scaling_errors": "rows by scaling method ('relative error', saturated, flushed)",
    "scaling.compare_with_gradscaler": "rows by step (scale, skipped, ours against GradScaler's)",
}


def _returns_dict(fn) -> bool:
    """Whether ``fn``'s return annotation is a dict, or a list or tuple of dicts (rows keyed by prose)."""
    ret = inspect.signature(fn).return_annotation
    if ret is inspect.Signature.empty:
        return False
    if isinstance(ret, str):  # an annotation kept as text (modules with ``from __future__ import annotations``)
        ret = ret.replace(" ", "")
        return bool(re.fullmatch(r"(dict(\[.*\])?)|((list|tuple)\[dict(\[.*\])?(,\.\.\.)?\])", ret))
    if ret is dict or typing.get_origin(ret) is dict:
        return True
    return typing.get_origin(ret) in (list, tuple) and any(
        a is dict or typing.get_origin(a) is dict for a in typing.get_args(ret)
    )


def test_a_list_of_dicts_counts_as_a_dict():
    def returning(ann):  # a text annotation is what PEP 563 keeps for every annotation of a module
        def fn(): ...

        fn.__annotations__["return"] = ann
        return fn

    dicts = (list[dict], "tuple[dict[str, float], ...]", "list[dict]", "dict", dict[str, int])
    assert all(_returns_dict(returning(a)) for a in dicts)
    assert not any(_returns_dict(returning(a)) for a in (list[int], "list[str]", int))


def _public_functions():
    # every function of a topic, the face's and its private modules' alike: what lessons call and what they build on
    for t in TOPICS:
        module = internals(t)
        for name, fn in vars(module).items():
            if inspect.isfunction(fn) and not name.startswith(("plot_", "check_")):
                yield f"{t}.{name}", fn


def test_public_functions_return_records_not_prose_keyed_dicts():
    returning_dicts = {q for q, fn in _public_functions() if _returns_dict(fn)}
    unlisted = returning_dicts - set(GENUINE_MAPPINGS) - set(NOT_YET_RECORDS)
    assert not unlisted, f"return a record (a frozen dataclass), not a dict: {sorted(unlisted)}"
    stale = (set(GENUINE_MAPPINGS) | set(NOT_YET_RECORDS)) - returning_dicts
    assert not stale, f"no longer public functions returning a dict: remove them from the lists: {sorted(stale)}"
    assert not set(GENUINE_MAPPINGS) & set(NOT_YET_RECORDS)
    assert all(reason.strip() for reason in {**GENUINE_MAPPINGS, **NOT_YET_RECORDS}.values())


# fmt: off
RECORDS = {
    "autocast.cast_cost": "CastCost", "e2e.launch_bound_demo": "LaunchBoundDemo", "e2e.overflow_demo": "OverflowDemo",
    "e2e.train": "TrainRun", "e2e.training_plan": "TrainingPlan", "fp16.gradient_census": "GradientCensus",
    "fp16.gradient_census_of": "GradientCensus", "fp16.sum_copies": "SumCopies",
    "fp16.train_master_weights": "MasterWeightRuns", "fp8.cast_stats": "CastStats",
    "fp8.fp8_linear_check": "Fp8LinearErrors", "micro.recipe_stats": "RecipeStats", "micro.tiny_updates": "TinyUpdates",
    "compiled.precision_errors": "PrecisionErrors", "compiled.fp8_saturation": "Fp8Saturation",
    "scaling.scale_sweep": "ScaleSweep", "scaling.small_loss_census": "GradientCensus",
    "scaling.simulate_scaler": "ScalerHistory", "scaling.train_comparison": "TrainComparison",
    "tf32.error_vs_k": "ErrorVsK", "tf32.switches_tour": "SwitchesTour",
}
# fmt: on


@pytest.mark.parametrize("qualname", list(RECORDS))
def test_converted_results_are_frozen_records(qualname):
    topic, name = qualname.split(".")
    record = RECORDS[qualname]
    module = internals(topic)
    cls = getattr(module, record)
    assert inspect.signature(getattr(module, name)).return_annotation in (cls, record)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    assert cls.__repr__ is not object.__repr__ and "_table" in vars(cls)  # shown as a table, not a field dump
