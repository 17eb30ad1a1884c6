"""The shared argument checks: each error names the bad value and what is allowed."""

import math

import pytest
import torch

from amp_lessons import _validate as v

# (check, the values it refuses, the error, its message): each refusal names the value and what is allowed
REFUSALS = [
    (lambda b: v.real(b, "x"), [True], TypeError, r"x must be a real number, got True \(bool\)"),
    (lambda b: v.real(b, "x"), ["a"], TypeError, r"'a' \(str\)"),
    (lambda b: v.positive(b, "scale"), [0.0, -1.0, math.inf, math.nan], ValueError, "scale=.* positive finite"),
    (lambda b: v.int_at_least(b, "n", 1), [0, 2.0, True], ValueError, "n=.*int >= 1"),
    (lambda b: v.flag(b, "progress"), ["no", 1, None], TypeError, "progress must be True or False, got"),
    (v.seed, ["x", 1.5, True], TypeError, "seed must be an int"),
    (v.seed, [-1], ValueError, r"seed=-1 is not allowed"),
    (lambda b: v.count(b, "steps"), [True], TypeError, "steps must be an int >= 1, got True"),
    (lambda b: v.count(b, "steps"), [0], ValueError, r"steps must be an int >= 1, got 0"),
    (
        lambda b: v.count(b, "steps", high=100_000, unit="x"),
        [10**12],
        ValueError,
        r"steps=1000000000000 is more than this course runs: at most 100,000 \(x\)",
    ),
    (lambda b: v.allocation(b, "m=10**6"), [1e12], ValueError, r"m=10\*\*6 would allocate 3.64 TiB"),
    (
        lambda b: v.finite(b, "update"),
        [math.nan, math.inf, -math.inf],
        ValueError,
        r"update=.* must be a finite number",
    ),
    (lambda b: v.float_tensor(b, "w"), [3], TypeError, "w must be a torch.Tensor of floats, got int"),
    (
        lambda b: v.float_tensor(b, "w"),
        [torch.ones(2, dtype=torch.complex64)],
        TypeError,
        "w must be a floating-point tensor, got complex64",
    ),
    (
        lambda b: v.sequence(b, "ks", "ints"),
        ["fp16", 3, {"a": 1}, None],
        TypeError,
        "ks must be a list or tuple of ints",
    ),
    (
        lambda b: v.path_or_none(b, "path"),
        [3],
        TypeError,
        r"path must be None or a path \(str or pathlib.Path\), got 3",
    ),
    (lambda b: v.integer(b, "code"), [True, 7.0, "7", None], TypeError, r"code must be an int, got .* \(\w+\)"),
    (
        lambda b: v.integer(b, "exponent", "an int (a power)"),
        [1.5],
        TypeError,
        r"exponent must be an int \(a power\), got 1.5 \(float\)",
    ),
    (lambda b: v.number(b, "s"), [False, "1", torch.tensor(1.0)], TypeError, r"s must be a real number, got"),
    (
        lambda b: v.number(b, "value", "a real number or a string"),
        [None],
        TypeError,
        r"value must be a real number or a string, got None \(NoneType\)",
    ),
    (
        lambda b: v.int_in(b, "bits", 1, 8),
        [0, 9, 2.0, True, "3", None],
        ValueError,
        r"bits=.* is not allowed: it must be an int from 1 to 8$",
    ),
    (lambda b: v.int_in(b, "total", 0), [-1], ValueError, r"^total=-1 is not allowed: it must be an int >= 0$"),
    (
        lambda b: v.int_in(b, "kmax", 32, 64, "an int from 32 to 64 (the largest k)"),
        [16],
        ValueError,
        r"kmax=16 is not allowed: it must be an int from 32 to 64 \(the largest k\)",
    ),
    (
        lambda b: v.real_in(b, "x", -45, 38),
        [-46, 38.5, math.nan, True, "1", torch.tensor(0.0)],
        ValueError,
        r"x=.* is not allowed: it must be a number in \[-45, 38\]$",
    ),
    (
        lambda b: v.real_in(b, "size", 0, math.inf, open_low=True, open_high=True),
        [0, math.inf],
        ValueError,
        r"size=(0|inf) is not allowed: it must be a number in \(0, inf\)$",
    ),
    (
        lambda b: v.real_in(b, "p", None, 1),
        [1.5],
        ValueError,
        r"p=1.5 is not allowed: it must be a number in \(-inf, 1\]$",
    ),
    (
        lambda b: v.real_in(b, "lr", 0, open_low=True, allowed="a positive rate"),
        [-1],
        ValueError,
        r"lr=-1 is not allowed: it must be a positive rate$",
    ),
    (
        lambda b: v.block_shape(b, "block", 4096),
        [[1, 128]],
        TypeError,
        r"block must be a \(rows, columns\) tuple, got \[1, 128\]",
    ),
    (lambda b: v.block_shape(b, "block", 4096), [(1, 2, 3)], TypeError, "block must be a"),
    (lambda b: v.block_shape(b, "block", 4096), [(1, 0)], ValueError, r"block\[1\]"),
    (lambda b: v.block_shape(b, "block", 4096), [(8192, 1)], ValueError, r"block\[0\]"),
]


@pytest.mark.parametrize("check, bad, error, pattern", [(c, b, e, p) for c, bads, e, p in REFUSALS for b in bads])
def test_each_check_refuses_naming_the_value_and_what_is_allowed(check, bad, error, pattern):
    with pytest.raises(error, match=pattern):
        check(bad)


def test_each_check_passes_what_it_allows():
    assert v.real(2, "x") == 2.0 and v.real(torch.tensor(1.5), "x") == 1.5 and v.positive(0.5, "scale") == 0.5
    assert v.int_at_least(3, "n", 1) == 3 and v.flag(True, "progress") is True and v.count(3, "steps") == 3
    assert v.seed(0) == 0 and v.seed(2**63 - 1) == 2**63 - 1 and v.finite(-2, "update") == -2.0
    v.allocation(1000, "a 10x100 matrix")
    t = torch.ones(2)
    assert v.float_tensor(t, "w") is t
    assert v.sequence([1, 2], "ks") == (1, 2) and v.sequence(range(2), "ks") == (0, 1)
    assert v.path_or_none(None, "path") is None and v.path_or_none("a.json", "path") == "a.json"
    assert v.integer(7, "code") == 7 and type(v.integer(7, "code")) is int
    assert v.number(2, "s") == 2.0 and math.isnan(v.number(math.nan, "s"))
    assert v.int_in(1, "bits", 1, 8) == 1 and v.int_in(8, "bits", 1, 8) == 8 and v.int_in(10**6, "n", 1) == 10**6
    assert v.real_in(-45, "x", -45, 38) == -45.0 and v.real_in(math.inf, "t", 0, open_low=True) == math.inf
    assert v.block_shape((1, 128), "block", 4096) == (1, 128)


def test_limits_on_work_are_derived_from_this_machine(monkeypatch):
    from amp_lessons import device

    # memory: an eighth of this machine's memory, never more than 2 GiB (the budget is device's)
    with pytest.raises(ValueError, match=r"an eighth of this machine's .* of memory"):
        v.allocation(device.MAX_TENSOR_BYTES // 4 + 1, "x")
    v.allocation(device.MAX_TENSOR_BYTES // 4, "x")  # exactly the limit: allowed
    # time: the measured rate turns FLOPs into seconds; a call estimated over the budget is refused with its estimate
    monkeypatch.setattr(v, "machine_flops", lambda: 1e9)  # a machine of 1 GFLOP/s (the name count reads)
    assert v.count(1000, "steps", 1, 10**6, flops_each=1e9) == 1000  # 1000 s: under the 30-minute budget
    with pytest.raises(ValueError, match=r"steps=2000 .*nothing over about 30 minutes here; .*about 33 minutes here"):
        v.count(2000, "steps", 1, 10**6, flops_each=1e9)
    with pytest.raises(ValueError, match=r"at most 100,000 \(training steps\).*about 32 years here"):
        v.count(10**12, "steps", 1, 100_000, "training steps", flops_each=1e6)


def test_model_call_names_inputs_that_do_not_fit_and_keeps_the_models_own_errors():
    model = torch.nn.Linear(8, 2)
    assert v.model_call(model, (torch.ones(3, 8),)).shape == (3, 2)
    with pytest.raises(ValueError, match=r"inputs do not fit the model: .*\(3, 7\) float32") as e:
        v.model_call(model, (torch.ones(3, 7),))
    assert isinstance(e.value.__cause__, RuntimeError)  # torch's own message is kept as the cause

    class Boom(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="^boom$"):  # the model's own error, as it is
        v.model_call(Boom(), (torch.ones(1),))


def test_is_int_and_is_real():
    assert v.is_int(3) and v.is_int(3, 1, 3) and v.is_int(-(10**30)) and v.is_int(0, 0)
    for bad in (True, 2.0, "3", None, torch.tensor(3)):
        assert not v.is_int(bad)
    assert not v.is_int(0, 1) and not v.is_int(4, None, 3)
    assert v.is_real(0.5) and v.is_real(2) and v.is_real(math.nan) and v.is_real(math.inf)
    for bad in (True, "1", None, torch.tensor(1.0), 1j):
        assert not v.is_real(bad)
    assert v.is_real(0, 0) and not v.is_real(0, 0, open_low=True)
    assert v.is_real(1, None, 1) and not v.is_real(1, None, 1, open_high=True)
    assert v.is_real(math.inf, 0) and not v.is_real(math.inf, 0, math.inf, open_high=True)
    assert not v.is_real(math.nan, 0) and not v.is_real(math.nan, None, 1)
