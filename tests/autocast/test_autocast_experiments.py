"""Tests of amp_lessons.autocast: the policy tables against the installed torch and the facts
checked by hand in PyTorch's autocast_mode.h/.cpp, the tracer (real CPU autocast and the fake CUDA preview), the profiler tree and
the upcast timing."""

import json
import logging
import os

import pytest
import torch
import torch.nn.functional as F

from amp_lessons.autocast import _experiments as A, _policy, _records as records

HAS_CUDA = torch.cuda.is_available()


CUDA_SAMPLE = {
    "lower_precision": ["mm", "matmul", "linear", "conv2d", "bmm", "baddbmm", "scaled_dot_product_attention"],
    "fp32": ["exp", "log", "pow", "layer_norm", "group_norm", "mse_loss", "nll_loss"],  # rms_norm: below, per release
    "fp32_set_opt_dtype": ["softmax", "log_softmax", "sum", "prod", "cumsum", "linalg_vector_norm"],
    "fp32_append_dtype": ["norm"],
    "promote": ["addcmul", "addcdiv", "atan2", "cross", "dot", "index_put", "scatter_add", "tensordot"],
    "banned": ["binary_cross_entropy"],
    # cat and stack have no CUDA autocast kernel in torch 2.13 (they are on the CPU promote list only);
    # cat(fp16, fp32) still gives fp32 on CUDA, by ordinary type promotion (see the tracer test below)
    # cross_entropy_loss has no CUDA autocast kernel: its log_softmax runs in the logits' dtype
    None: ["add", "relu", "embedding", "cat", "stack", "cross_entropy_loss"],
}

CPU_SAMPLE = {
    "lower_precision": "conv1d conv2d conv3d conv_transpose2d mm bmm matmul linear addmm baddbmm "
    "scaled_dot_product_attention".split(),
    "fp32": ["mse_loss", "binary_cross_entropy", "cross_entropy_loss", "nll_loss", "prod"],
    "promote": ["cat", "stack", "index_copy"],
    "banned": [],
    None: ["layer_norm", "softmax", "exp", "log", "sum", "add", "relu"],
}


RELEASE = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])


def test_what_changed_between_releases():
    """Measured with torch 2.11 and 2.15 (PyPI's CUDA builds) and 2.13 (the CPU wheel): rms_norm joined CUDA's fp32
    list in 2.13; a CUDA build registers _cudnn_rnn (lower precision) outside the header."""
    cuda = A.policy_table("cuda")
    if RELEASE >= (2, 13):
        assert cuda.get("rms_norm") == "fp32"
    elif RELEASE <= (2, 11):
        assert "rms_norm" not in cuda
    if getattr(torch.version, "hip", None) is None:
        assert (cuda.get("_cudnn_rnn") == "lower_precision") == (torch.version.cuda is not None)
        assert ("_cudnn_rnn" in cuda) == (torch.version.cuda is not None)


@pytest.mark.parametrize("device_type, sample", [("cuda", CUDA_SAMPLE), ("cpu", CPU_SAMPLE)])
def test_policy_table_matches_the_hand_checked_sample(device_type, sample):
    table = A.policy_table(device_type)
    for policy, names in sample.items():
        for name in names:
            assert table.get(name) == policy, (device_type, name, table.get(name), policy)
            assert A.policy_of(name, device_type) == policy
    for name in ("aten::mm", "aten.mm.default", torch.ops.aten.mm, torch.ops.aten.mm.default, "mm.out"):
        assert A.policy_of(name, device_type) == "lower_precision"  # every spelling of an op


@pytest.mark.parametrize("device_type", A.DEVICE_TYPES)
def test_tables_list_exactly_the_ops_with_an_autocast_kernel(device_type):
    key = {"cpu": "AutocastCPU", "cuda": "AutocastCUDA"}[device_type]
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    assert not has("aten::add.Tensor", key) and has("aten::mm", key)
    expected = {
        n.split("::")[1].split(".")[0]
        for n in torch._C._dispatch_get_all_op_names()
        if n.startswith("aten::") and has(n, key)
    }
    table, sources = A.policy_table(device_type), A.policy_sources(device_type)
    assert set(table) == expected == set(sources)
    assert set(table.values()) <= set(A.POLICIES) and set(sources.values()) <= set(A.SOURCES)
    groups = A.policy_groups(device_type)
    assert list(groups) == list(A.POLICIES)
    assert all(names == sorted(names) for names in groups.values())
    assert sorted(n for names in groups.values() for n in names) == sorted(table)
    assert all(table[n] == p for p, names in groups.items() for n in names)
    A.policy_table(device_type)["mm"] = "nonsense"  # the returned dicts are copies
    assert A.policy_table(device_type)["mm"] == "lower_precision"


def test_sources():
    cuda, cpu = A.policy_sources("cuda"), A.policy_sources("cpu")
    assert cuda["mm"] == cuda["layer_norm"] == cuda["addcmul"] == "header"
    assert cuda["binary_cross_entropy"] == "measured"  # banned ops are not in the header's lists
    assert "header" not in cpu.values()  # the CPU lists are in a .cpp the wheel does not ship
    assert cpu["mm"] == cpu["cat"] == cpu["mse_loss"] == "measured"
    assert list(cpu.values()).count("measured") >= 0.9 * len(cpu)
    # mkldnn_rnn_layer runs under bf16 autocast only where oneDNN has a bf16 RNN for the CPU (AVX512): its class is
    # the same on every CPU, and its source says how it was found here
    assert A.policy_table("cpu")["mkldnn_rnn_layer"] == "lower_precision" and cpu["mkldnn_rnn_layer"] != "header"
    assert len(A.policy_groups("cpu")["lower_precision"]) == 21


def test_header_parser():
    text = r"""#define AT_FORALL_LOWER_PRECISION_FP(_) \
  _(_convolution, deprecated) \
  _(mm)
#define AT_FORALL_FP32(_) \
  _(pow, Tensor_Scalar) \
  _(layer_norm)
#define AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(_) \
  _(ADD_NS(norm), \
    "norm.Scalar", \
    Tensor(const Tensor&, const Scalar&), \
    Tensor(const Tensor&, const std::optional<Scalar>&, ScalarType), \
    fp32_append_dtype)
#define AT_FORALL_PROMOTE(_) \
  _(addcmul)
#define AT_FORALL_DEPRECATED_AUTOCAST_BACKENDS(_) \
  _(cpu, at::kCPU)"""
    assert _policy.parse_header(text) == {
        "aten::_convolution.deprecated": "lower_precision",
        "aten::mm": "lower_precision",
        "aten::pow.Tensor_Scalar": "fp32",
        "aten::layer_norm": "fp32",
        "aten::norm.Scalar": "fp32_append_dtype",
        "aten::addcmul": "promote",
    }
    installed = _policy.header_policies()
    assert installed["aten::linear"] == "lower_precision" and installed["aten::softmax.int"] == "fp32_set_opt_dtype"
    assert installed["aten::norm.ScalarOpt_dim"] == "fp32_append_dtype" and installed["aten::scatter_add"] == "promote"


def test_measurement_agrees_with_the_header():
    """The header's CUDA classes, measured on fake CUDA tensors for a sample of ops."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    header = _policy.header_policies()
    ops = [
        f"aten::{n}"
        for n in "mm linear baddbmm exp sum softmax.int mse_loss addcmul atan2 index_put scatter_add".split()
    ]

    logging.disable(logging.CRITICAL)  # fake tensors log the samples that do not fit
    try:
        with torch.no_grad(), FakeTensorMode(), _policy.cuda_autocast_on_fake(torch.float16, cache=False):
            measured = {op: _policy.measure(op, "cuda", torch.float16) for op in ops}
    finally:
        logging.disable(logging.NOTSET)
    # a measurement sees the output dtype: the three policies that give fp32 outputs look alike
    fp32_output = {"fp32", "fp32_set_opt_dtype", "fp32_append_dtype"}
    assert measured == {op: "fp32" if header[op] in fp32_output else header[op] for op in ops}


def _last(trace, name):
    return trace.named(name)[-1]


def test_fake_cuda_trace_records_the_inserted_casts():
    x = torch.randn(4, 8)
    t = A.trace(lambda m, x: F.layer_norm(m(x), (4,)), torch.nn.Linear(8, 4), x, device_type="cuda")
    assert t.fake and t.device_type == "cuda" and t.dtype == torch.float16 and t.output.device.type == "cuda"
    assert "CUDA autocast policy previewed with fake CUDA tensors" in repr(t)
    casts = [(c.in_dtypes[0], c.out_dtypes[0]) for c in t.casts]
    assert casts == [(torch.float32, torch.float16)] * 3 + [(torch.float16, torch.float32)]
    assert t.weight_casts == 2  # weight and bias; the input's cast is not a weight cast
    names = [op.name for op in t.ops]
    assert names.index("addmm") < names.index("native_layer_norm")
    assert _last(t, "addmm").in_dtypes == (torch.float16,) * 3
    assert _last(t, "native_layer_norm").in_dtypes[0] == torch.float32
    # cat(fp16, fp32) is on no CUDA list: fp32 by type promotion
    assert A.trace(lambda a, b: torch.cat([a, b]), x.half(), x, device_type="cuda").output.dtype == torch.float32
    with pytest.raises(RuntimeError, match="unsafe to autocast"):
        A.trace(lambda p, y: F.binary_cross_entropy(p, y), x.sigmoid(), x.sigmoid(), device_type="cuda")
    # the global CUDA autocast switches are back where they were, even after the error
    assert not torch.is_autocast_enabled("cuda") and torch.is_autocast_cache_enabled()


def test_cpu_trace_reproduces_the_cpu_facts():
    a, b = torch.randn(4, 8), torch.randn(8, 3)
    t = A.trace(torch.mm, a, b)
    assert not t.fake and t.output.dtype == torch.bfloat16 and "CPU autocast, measured on this machine" in repr(t)
    assert len(t.casts) == 2 and _last(t, "mm").in_dtypes == (torch.bfloat16, torch.bfloat16)
    t = A.trace(lambda x: F.layer_norm(x, (8,)), a.bfloat16())
    assert t.output.dtype == torch.bfloat16 and t.casts == []  # layer_norm is on no CPU list


def test_weight_casts_are_cached_per_autocast_region():
    lin, x = torch.nn.Linear(4, 3), torch.randn(2, 4)

    def three_calls(m, x):
        for _ in range(3):
            m(x)

    one_region = A.trace(three_calls, lin, x)
    assert len(one_region.casts) == 5 and one_region.weight_casts == 2  # weight + bias once, input 3 times
    regions = [A.trace(lambda m, x: m(x), lin, x) for _ in range(3)]
    assert sum(len(r.casts) for r in regions) == 9 and sum(r.weight_casts for r in regions) == 6
    # the fake CUDA preview has no cast cache (no autograd on fake CUDA tensors): 9 casts, and it says so
    fake = A.trace(three_calls, lin, x, device_type="cuda")
    assert len(fake.casts) == 9 and "no weight-cast cache" in fake.header


def test_backward_ops_are_recorded():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.LayerNorm(4))
    x, y = torch.randn(2, 8), torch.tensor([1, 3])
    t = A.trace(lambda m, x, y: F.cross_entropy(m(x), y), model, x, y, backward=True)
    phases = [op.phase for op in t.ops]
    assert phases == sorted(phases, key=["forward", "backward"].index) and "backward" in phases
    backward = [op for op in t.ops if op.phase == "backward"]
    assert any(op.name == "mm" and op.in_dtypes == (torch.bfloat16, torch.bfloat16) for op in backward)
    # the bf16 gradients of the fp32 weight and bias are cast back to fp32
    assert any(op.is_cast and op.out_dtypes[0] == torch.float32 and op.out_shapes[0] == (4, 8) for op in backward)
    assert model[0].weight.grad.dtype == torch.float32
    # a non-scalar output gets a gradient of ones
    lin = torch.nn.Linear(4, 3)
    t = A.trace(lambda m, x: m(x), lin, torch.randn(2, 4), backward=True)
    assert any(op.phase == "backward" for op in t.ops) and lin.weight.grad is not None


def test_fake_cuda_helper_and_prebuilt_fake_inputs():
    lin, x = torch.nn.Linear(4, 3), torch.randn(2, 4)
    fake_lin, fake_x = A.fake_cuda([lin, x])
    assert fake_x.device.type == "cuda" and fake_x.shape == x.shape
    assert fake_lin.weight.device.type == "cuda" and not fake_lin.weight.requires_grad
    assert lin.weight.device.type == "cpu" and lin.weight.requires_grad  # the original is untouched
    t = A.trace(lambda m, x: m(x), fake_lin, fake_x, device_type="cuda")
    assert t.output.dtype == torch.float16


def test_trace_refuses_what_the_preview_cannot_do():
    x = torch.randn(2, 4)
    lin = torch.nn.Linear(4, 3)
    with pytest.raises(ValueError, match="fake=True previews the CUDA policy"):
        A.trace(torch.exp, x, fake=True)
    with pytest.raises(ValueError, match="backward=True cannot run on fake CUDA"):
        A.trace(lambda m, x: m(x), lin, x, device_type="cuda", backward=True)
    with pytest.raises(ValueError, match="requires grad"):
        A.trace(torch.exp, x, backward=True)
    with pytest.raises(ValueError, match="real tensor inside the fake CUDA preview"):
        A.trace(lambda x: lin(x), x, device_type="cuda")  # lin reaches fn through a closure
    if HAS_CUDA:
        with pytest.raises(ValueError, match=r"is on cpu.*\.cuda\(\)"):
            A.trace(lambda m, x: m(x), lin, x, device_type="cuda", fake=False)
    else:
        with pytest.raises(RuntimeError, match="needs a CUDA GPU"):
            A.trace(lambda m, x: m(x), lin, x, device_type="cuda", fake=False)


@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_real_cuda_trace_agrees_with_the_fake_preview():
    lin, x = torch.nn.Linear(8, 4).cuda(), torch.randn(4, 8, device="cuda")

    def three_calls(m, x):
        for _ in range(3):
            y = m(x)
        return F.layer_norm(y, (4,))

    real = A.trace(three_calls, lin, x, device_type="cuda")
    fake = A.trace(three_calls, lin.cpu(), x.cpu(), device_type="cuda", fake=True)
    assert not real.fake and real.header.startswith(f"CUDA autocast on {torch.cuda.get_device_name()}")
    assert len(real.casts) == 6 and len(fake.casts) == 10  # the real one caches weight and bias
    assert real.output.dtype == fake.output.dtype == torch.float32


def _lesson_model():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    return model, torch.randn(8, 16), torch.randint(0, 4, (8,))


def _lesson_step(m, x, y):
    return F.cross_entropy(m(x), y)


def _no_grad_step(m, x, y):
    with torch.no_grad():
        return _lesson_step(m, x, y)


def test_autograd_adds_only_detach_to_a_forward_pass():
    """What AUTOGRAD_BOOKKEEPING claims, measured: a forward pass of embedding, linear, attention, dropout, layer and
    RMS norm, activations, softmax and cross-entropy traced with autograd (and its backward) and under no_grad differs
    by detach ops alone, one per op that saves its own output."""
    torch.manual_seed(0)
    emb, lin, ln = torch.nn.Embedding(10, 16), torch.nn.Linear(16, 16), torch.nn.LayerNorm(16)
    idx = torch.randint(0, 10, (2, 5))

    def f(e, li, n, i):
        h = e(i)
        q = li(h).view(2, 5, 2, 8).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(2, 5, 16)
        h = n(h + F.dropout(a, 0.1, training=True))
        h = torch.sigmoid(h) * torch.tanh(h) + torch.exp(h).sqrt() + F.silu(h) + F.relu(h) + torch.pow(h, 2)
        h = F.rms_norm(h, (16,)).masked_fill(i[..., None] == 0, 0.0)
        logits = li(h).float()
        return F.cross_entropy(logits.view(-1, 16), i.view(-1)) + torch.softmax(logits, -1).sum()

    def no_grad(*a):
        with torch.no_grad():
            return f(*a)

    torch.manual_seed(1)
    with_grad = A.trace(f, emb, lin, ln, idx, backward=True)
    torch.manual_seed(1)
    without = A.trace(no_grad, emb, lin, ln, idx)
    names = [op.name for op in with_grad.ops if op.phase == "forward"]
    assert names != [op.name for op in without.ops if op.phase == "forward"]
    assert {n for n in names if n not in [op.name for op in without.ops]} == {"detach"}
    assert records.AUTOGRAD_BOOKKEEPING == ("detach",)
    assert with_grad.forward_differences(without) == [] and without.forward_differences(with_grad) == []


def test_forward_differences_ignore_bookkeeping_and_report_real_differences():
    """The comparison lesson 04 asserts on a GPU (a real CUDA trace with autograd against the fake preview without),
    run here on the CPU: with detach ops inserted a trace still agrees; a changed dtype, a missing op or a cast are
    reported."""
    model, x, y = _lesson_model()
    real = A.trace(_lesson_step, model, x, y, backward=True)
    plain = A.trace(_no_grad_step, model, x, y)
    detach = records.OpRecord("forward", "detach", (torch.float32,), ((8, 4),), (torch.float32,), ((8, 4),), False)
    padded = records.Trace([detach, *plain.ops, detach], "cpu", torch.bfloat16, False)
    assert padded.forward_differences(plain) == [] and len(padded.forward_ops()) == len(plain.ops)
    # the CUDA preview of the same model differs from the CPU trace where the policies do: layer_norm's upcast first
    preview = A.trace(_lesson_step, model, x, y, device_type="cuda", dtype=torch.bfloat16)
    diffs = real.forward_differences(preview)
    assert diffs and diffs[0].startswith("forward op 5: native_layer_norm(bfloat16, float32, float32)"), diffs
    assert "_to_copy(bfloat16) -> float32 in the other trace" in diffs[0]
    shorter = records.Trace(plain.ops[:-1], "cpu", torch.bfloat16, False)
    assert plain.forward_differences(shorter) == [
        f"forward op {len(plain.ops) - 1}: nll_loss_forward(float32, int64) -> float32, float32 here, (no op) in the "
        "other trace"
    ]


def test_profile_tree_of_an_autocast_matmul(tmp_path):
    a, b = torch.randn(8, 16), torch.randn(16, 32)
    tree = A.profile_tree(torch.matmul, a, b, trace_dir=tmp_path / "traces")
    top = tree.roots[0]
    names = [c.name for c in top.children]
    assert names.count("aten::to") == 2 and names[-1] == "aten::matmul"
    to_copy = top.children[0].children[0]
    assert to_copy.name == "aten::_to_copy" and "aten::copy_" in [c.name for c in to_copy.children]
    # times: the total includes the children, self does not
    assert top.total_us >= sum(c.total_us for c in top.children) - 1e-6
    assert abs(top.self_us - (top.total_us - sum(c.total_us for c in top.children))) < 1e-6
    text = repr(tree)  # the root, and the matmul's mm two levels down
    assert text.splitlines()[1].startswith("aten::matmul  [[8, 16], [16, 32]]  [float, float]  (self ")
    assert "\n    aten::mm  [[8, 16], [16, 32]]  [BFloat16, BFloat16]  (self " in text
    # the Chrome trace was written where asked, and is JSON
    assert os.path.dirname(tree.chrome_trace) == str(tmp_path / "traces")
    with open(tree.chrome_trace) as f:
        assert "traceEvents" in json.load(f)


def test_profile_tree_layer_norm_and_default_folder():
    tree = A.profile_tree(torch.nn.LayerNorm(32), torch.randn(8, 32).bfloat16())
    assert tree.roots[0].input_dtypes == ["BFloat16", "float", "float"]  # CPU autocast: no upcast
    assert "_to_copy" not in repr(tree) and os.path.isfile(tree.chrome_trace)


def test_cast_cost():
    r = A.cast_cost((64, 128), repeats=3)
    assert all(getattr(r, f) > 0 for f in records.CastCost.LABELS)
    assert r.cast_over_layer_norm == pytest.approx(r.cast_s / r.layer_norm_fp32_s)
    assert r.autocast_inserts_upcast is False  # layer_norm is on no CPU autocast list
    assert r.size == (64, 128) and r.repeats == 3 and r.device == "cpu"
    assert A.cast_cost(32, repeats=1).size == (32, 32)
