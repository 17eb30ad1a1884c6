"""The master-weights step lesson 03 defines in a cell (amp_lessons/fp16/key_code.py), against torch's own fp16
rounding (``.half()``) as an independent reference."""

import torch

from tests.faces import internals

fp16 = internals("fp16")


def _data():
    g = torch.Generator().manual_seed(0)
    return torch.randn(32, 8, generator=g), torch.randn(32, generator=g), torch.rand(8, generator=g) + 1


def test_fp32_step_is_plain_sgd():
    x, y, w = _data()
    new, update, loss = fp16.sgd_step(w, x, y, 0.1)
    err = x @ w - y
    assert torch.equal(update, 0.1 * (x.T @ err) / 32) and torch.equal(new, w - update)
    assert loss == 0.5 * float(err.dot(err)) / 32


def test_fp16_copy_in_forward_and_where_the_update_goes():
    x, y, w = _data()
    xq = x.half().float()
    master, update, _ = fp16.sgd_step(w, xq, y, 0.1, fmt="fp16", master=True)
    used = w.half().float()  # the forward pass's copy: torch's round-to-nearest-even to fp16
    assert torch.equal(update, 0.1 * (xq.T @ (xq @ used - y)) / 32)
    assert master.dtype == torch.float32 and torch.equal(master, w - update)  # fp32 master: not rounded
    stored, _, _ = fp16.sgd_step(w, xq, y, 0.1, fmt="fp16", master=False)
    assert torch.equal(stored, (w - update).half().float())  # fp16 weights: rounded back


def test_a_small_update_is_lost_in_fp16_weights_and_kept_by_the_master():
    x, y, w = torch.ones(1, 2), torch.zeros(1), torch.tensor([1.0, 1.0])
    stored, update, _ = fp16.sgd_step(w, x, y, 1e-4, fmt="fp16", master=False)
    master, _, _ = fp16.sgd_step(w, x, y, 1e-4, fmt="fp16", master=True)
    assert torch.all(update < 2.0**-12)  # below half of fp16's gap at 1
    assert torch.equal(stored, w) and torch.all(master < w)


def test_train_master_weights_runs_the_key_code_step():
    runs = fp16.train_master_weights(steps=3, progress=False)
    from amp_lessons.fp16._experiments import _regression

    x, y = _regression(0)
    w = torch.zeros(x.shape[1])
    losses = []
    for _ in range(3):
        w, _, loss = fp16.sgd_step(w, x.half().float(), y, 0.1, fmt="fp16", master=True)
        losses.append(loss)
    assert runs.loss["fp32 master weights"] == tuple(losses)
