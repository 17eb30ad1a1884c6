"""The shared argument checks: each error names the bad value and what is allowed."""

import math

import pytest
import torch

from amp_lessons._validate import int_at_least, positive, real


def test_real():
    assert real(2, "x") == 2.0 and real(torch.tensor(1.5), "x") == 1.5
    with pytest.raises(TypeError, match=r"x must be a real number, got True \(bool\)"):
        real(True, "x")
    with pytest.raises(TypeError, match="'a' \\(str\\)"):
        real("a", "x")


def test_positive():
    assert positive(0.5, "scale") == 0.5
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="scale=.* positive finite"):
            positive(bad, "scale")


def test_int_at_least():
    assert int_at_least(3, "n", 1) == 3
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="n=.*int >= 1"):
            int_at_least(bad, "n", 1)


def test_flag_seed_count_and_allocation():
    from amp_lessons import _validate as v

    assert v.flag(True, "progress") is True
    for bad in ("no", 1, None):
        with pytest.raises(TypeError, match=r"progress must be True or False, got"):
            v.flag(bad, "progress")
    assert v.seed(0) == 0 and v.seed(2**63 - 1) == 2**63 - 1
    for bad in ("x", 1.5, True):
        with pytest.raises(TypeError, match="seed must be an int"):
            v.seed(bad)
    with pytest.raises(ValueError, match=r"seed=-1 is not allowed"):
        v.seed(-1)
    assert v.count(3, "steps") == 3
    with pytest.raises(TypeError, match="steps must be an int >= 1, got True"):
        v.count(True, "steps")
    with pytest.raises(ValueError, match=r"steps must be an int >= 1, got 0"):
        v.count(0, "steps")
    with pytest.raises(ValueError, match=r"steps=1000000000000 is more than this course runs: at most 100,000 \(x\)"):
        v.count(10**12, "steps", high=100_000, unit="x")
    v.allocation(1000, "a 10x100 matrix")
    with pytest.raises(ValueError, match=r"m=10\*\*6 would allocate 3.64 TiB"):
        v.allocation(1e12, "m=10**6")


def test_limits_on_work_are_derived_from_this_machine(monkeypatch):
    from amp_lessons import _validate as v, device

    # memory: an eighth of this machine's memory, never more than 2 GiB (the budget is device's)
    assert device.MAX_TENSOR_BYTES == min(2 * 1024**3, device.machine_memory_bytes() // 8) > 0
    with pytest.raises(ValueError, match=r"an eighth of this machine's .* of memory"):
        v.allocation(device.MAX_TENSOR_BYTES // 4 + 1, "x")
    v.allocation(device.MAX_TENSOR_BYTES // 4, "x")  # exactly the limit: allowed
    # time: the measured rate turns FLOPs into seconds; a call estimated over the budget is refused with its estimate
    assert device.machine_flops() > 1e6
    monkeypatch.setattr(v, "machine_flops", lambda: 1e9)  # a machine of 1 GFLOP/s (the name count reads)
    assert v.count(1000, "steps", 1, 10**6, flops_each=1e9) == 1000  # 1000 s: under the 30-minute budget
    with pytest.raises(ValueError, match=r"steps=2000 .*nothing over about 30 minutes here; .*about 33 minutes here"):
        v.count(2000, "steps", 1, 10**6, flops_each=1e9)
    with pytest.raises(ValueError, match=r"at most 100,000 \(training steps\).*about 32 years here"):
        v.count(10**12, "steps", 1, 100_000, "training steps", flops_each=1e6)


def test_finite_float_tensor_sequence_and_path():
    from amp_lessons import _validate as v

    assert v.finite(-2, "update") == -2.0
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match=r"update=.* must be a finite number"):
            v.finite(bad, "update")
    t = torch.ones(2)
    assert v.float_tensor(t, "w") is t
    with pytest.raises(TypeError, match="w must be a torch.Tensor of floats, got int"):
        v.float_tensor(3, "w")
    with pytest.raises(TypeError, match="w must be a floating-point tensor, got complex64"):
        v.float_tensor(torch.ones(2, dtype=torch.complex64), "w")
    assert v.sequence([1, 2], "ks") == (1, 2) and v.sequence(range(2), "ks") == (0, 1)
    for bad in ("fp16", 3, {"a": 1}, None):
        with pytest.raises(TypeError, match="ks must be a list or tuple of ints"):
            v.sequence(bad, "ks", "ints")
    assert v.path_or_none(None, "path") is None and v.path_or_none("a.json", "path") == "a.json"
    with pytest.raises(TypeError, match=r"path must be None or a path \(str or pathlib.Path\), got 3"):
        v.path_or_none(3, "path")


def test_model_call_names_inputs_that_do_not_fit_and_keeps_the_models_own_errors():
    from amp_lessons._validate import model_call

    model = torch.nn.Linear(8, 2)
    assert model_call(model, (torch.ones(3, 8),)).shape == (3, 2)
    with pytest.raises(ValueError, match=r"inputs do not fit the model: .*\(3, 7\) float32") as e:
        model_call(model, (torch.ones(3, 7),))
    assert isinstance(e.value.__cause__, RuntimeError)  # torch's own message is kept as the cause

    class Boom(torch.nn.Module):
        def forward(self, x):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="^boom$"):  # the model's own error, as it is
        model_call(Boom(), (torch.ones(1),))


def test_is_int_and_is_real():
    from amp_lessons import _validate as v

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


def test_integer_and_number():
    from amp_lessons import _validate as v

    assert v.integer(7, "code") == 7 and type(v.integer(7, "code")) is int
    for bad in (True, 7.0, "7", None):
        with pytest.raises(TypeError, match=r"code must be an int, got .* \(\w+\)"):
            v.integer(bad, "code")
    with pytest.raises(TypeError, match=r"exponent must be an int \(a power\), got 1.5 \(float\)"):
        v.integer(1.5, "exponent", "an int (a power)")
    assert v.number(2, "s") == 2.0 and math.isnan(v.number(math.nan, "s"))
    for bad in (False, "1", torch.tensor(1.0)):
        with pytest.raises(TypeError, match=r"s must be a real number, got"):
            v.number(bad, "s")
    with pytest.raises(TypeError, match=r"value must be a real number or a string, got None \(NoneType\)"):
        v.number(None, "value", "a real number or a string")


def test_int_in():
    from amp_lessons import _validate as v

    assert v.int_in(1, "bits", 1, 8) == 1 and v.int_in(8, "bits", 1, 8) == 8 and v.int_in(10**6, "n", 1) == 10**6
    for bad in (0, 9, 2.0, True, "3", None):
        with pytest.raises(ValueError, match=r"bits=.* is not allowed: it must be an int from 1 to 8$"):
            v.int_in(bad, "bits", 1, 8)
    with pytest.raises(ValueError, match=r"^total=-1 is not allowed: it must be an int >= 0$"):
        v.int_in(-1, "total", 0)
    with pytest.raises(ValueError, match=r"kmax=16 is not allowed: it must be an int from 32 to 64 \(the largest k\)"):
        v.int_in(16, "kmax", 32, 64, "an int from 32 to 64 (the largest k)")


def test_real_in():
    from amp_lessons import _validate as v

    assert v.real_in(-45, "x", -45, 38) == -45.0 and v.real_in(math.inf, "t", 0, open_low=True) == math.inf
    for bad in (-46, 38.5, math.nan, True, "1", torch.tensor(0.0)):
        with pytest.raises(ValueError, match=r"x=.* is not allowed: it must be a number in \[-45, 38\]$"):
            v.real_in(bad, "x", -45, 38)
    with pytest.raises(ValueError, match=r"size=0 is not allowed: it must be a number in \(0, inf\)$"):
        v.real_in(0, "size", 0, math.inf, open_low=True, open_high=True)
    with pytest.raises(ValueError, match=r"size=inf is not allowed: it must be a number in \(0, inf\)$"):
        v.real_in(math.inf, "size", 0, math.inf, open_low=True, open_high=True)
    with pytest.raises(ValueError, match=r"p=1.5 is not allowed: it must be a number in \(-inf, 1\]$"):
        v.real_in(1.5, "p", None, 1)
    with pytest.raises(ValueError, match=r"lr=-1 is not allowed: it must be a positive rate$"):
        v.real_in(-1, "lr", 0, open_low=True, allowed="a positive rate")


def test_block_shape_is_a_pair_of_counts():
    from amp_lessons._validate import block_shape

    assert block_shape((1, 128), "block", 4096) == (1, 128)
    with pytest.raises(TypeError, match=r"block must be a \(rows, columns\) tuple, got \[1, 128\]"):
        block_shape([1, 128], "block", 4096)
    with pytest.raises(TypeError, match="block must be a"):
        block_shape((1, 2, 3), "block", 4096)
    with pytest.raises((TypeError, ValueError), match=r"block\[1\]"):
        block_shape((1, 0), "block", 4096)
    with pytest.raises((TypeError, ValueError), match=r"block\[0\]"):
        block_shape((8192, 1), "block", 4096)
