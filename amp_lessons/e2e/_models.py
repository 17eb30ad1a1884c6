"""Lesson 06's model and its data: :class:`TinyTransformer`, a small decoder-only transformer, and :func:`make_batches`,
token sequences that follow a fixed random rule."""

from __future__ import annotations

import torch
from torch import nn

from .. import _validate
from .._validate import allocation, count
from ._common import MAX_SIZE

__all__ = [
    "TinyTransformer",
    "make_batches",
]

# the sizes of the model lesson 06 trains and runs, on a CPU and on a GPU (keyword arguments of TinyTransformer)
CPU_MODEL = dict(vocab=64, d_model=256, n_heads=4, n_layers=2, seq_len=64)
GPU_MODEL = dict(vocab=512, d_model=768, n_heads=12, n_layers=6, seq_len=256)


class TinyTransformer(nn.Module):
    """A small decoder-only (causal) transformer: token + position embeddings, ``n_layers``
    pre-norm ``nn.TransformerEncoderLayer`` blocks with a causal mask, a final LayerNorm and a
    linear head. ``forward(tokens)`` takes (batch, seq) token ids, returns (batch, seq, vocab) logits."""

    def __init__(self, vocab: int = 64, d_model: int = 128, n_heads: int = 4, n_layers: int = 2, seq_len: int = 32):
        super().__init__()
        for name, v in (
            ("vocab", vocab),
            ("d_model", d_model),
            ("n_heads", n_heads),
            ("n_layers", n_layers),
            ("seq_len", seq_len),
        ):
            count(v, name, 1, MAX_SIZE)
        allocation(
            n_layers * 12 * d_model**2 + 2 * vocab * d_model + seq_len * d_model, "this TinyTransformer's weights"
        )
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.vocab, self.seq_len = int(vocab), int(seq_len)
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(seq_len, d_model) * 0.02)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model, n_heads, dim_feedforward=4 * d_model, dropout=0.0, batch_first=True, norm_first=True
            )
            for _ in range(n_layers)
        )
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        x = self.embed(tokens) + self.pos[:n].to(self.embed.weight.dtype)
        mask = nn.Transformer.generate_square_subsequent_mask(n, device=tokens.device, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x, src_mask=mask, is_causal=True)
        return self.head(self.norm(x))


def make_batches(seed: int, n: int, batch: int, seq_len: int, vocab: int, *, noise: float = 0.1) -> torch.Tensor:
    """``n`` batches of token sequences, shape (n, batch, seq_len + 1), int64, generated from ``seed``: each sequence
    starts at a random token, then the next token is ``perm[token]`` (one fixed random permutation per seed), except
    with probability ``noise`` a random one. Inputs are ``b[:, :-1]``, targets ``b[:, 1:]``."""
    g = torch.Generator().manual_seed(_validate.seed(seed))
    perm = torch.randperm(vocab, generator=g)
    allocation(n * batch * (seq_len + 1), f"{n} batches of {batch} x {seq_len + 1} tokens", 8)
    out = torch.empty(n, batch, seq_len + 1, dtype=torch.long)
    out[:, :, 0] = torch.randint(vocab, (n, batch), generator=g)
    flip = torch.rand(n, batch, seq_len, generator=g) < noise
    rand = torch.randint(vocab, (n, batch, seq_len), generator=g)
    for t in range(seq_len):
        out[:, :, t + 1] = torch.where(flip[:, :, t], rand[:, :, t], perm[out[:, :, t]])
    return out


def step_flops(mk: dict, batch: int) -> float:
    """Matmul FLOPs of one training step of a :class:`TinyTransformer` (forward x 3 for the backward)."""
    d, n, seq, vocab = mk["d_model"], mk["n_layers"], mk["seq_len"], mk["vocab"]
    tokens = batch * seq
    forward = 2 * tokens * (n * 12 * d * d + d * vocab) + n * 2 * 2 * batch * seq * seq * d
    return 3.0 * forward
