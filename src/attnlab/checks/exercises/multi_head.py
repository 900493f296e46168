r"""Multi-head attention (Vaswani et al., 2017): Concat(head_1..head_h) W^O.

The reference is :class:`attnlab.attention.MultiHeadAttention` holding copies of the student's
four projections; the known mistakes are made by bending that same module (a wrong scale, a
wrong split or concatenation, no output projection) through :mod:`attnlab.guard.parts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab import attention
from attnlab.checks.compare import (
    as_tuple,
    check_close,
    check_finite,
    check_masked_zero,
    check_rows,
    check_shape,
    hidden,
    randn,
    shape_str,
)
from attnlab.checks.exercises.seeded import kept_rng, library_module
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult, Failure
from attnlab.guard import parts

__all__ = ["REFERENCES", "BODIES", "check_multi_head_attention"]


def _mha_with(W_q: nn.Linear, W_k: nn.Linear, W_v: nn.Linear, W_o: nn.Linear, num_heads: int):
    """attention.MultiHeadAttention holding copies of the four given projections."""
    given = {"W_q": W_q, "W_k": W_k, "W_v": W_v, "W_o": W_o}
    weights = {
        f"{name}.{p}": w for name, linear in given.items() for p, w in linear.named_parameters()
    }
    mha = library_module(lambda: attention.MultiHeadAttention(W_q.in_features, num_heads), weights)
    return mha.eval()


def _ref_multi_head_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    W_q: nn.Linear,
    W_k: nn.Linear,
    W_v: nn.Linear,
    W_o: nn.Linear,
    num_heads: int,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """MultiHead(Q, K, V) = Concat(head_1..head_h) W^O through attention.MultiHeadAttention."""
    return _with_weights(_mha_with(W_q, W_k, W_v, W_o, num_heads), query, key, value, mask)


def _with_weights(mha: nn.Module, *args) -> tuple[Tensor, Tensor]:
    """(output, weights): MultiHeadAttention keeps the weights of its last call on ``alpha``."""
    output = mha(*args)  # (B, m, d_model)
    return output, mha.alpha  # (B, h, m, n)


def _mha_examples():
    """(query, key, value, W_q, W_k, W_v, W_o, h, mask, details): self and cross attention."""
    g = torch.Generator().manual_seed(710)
    examples = []
    with kept_rng(711):  # the projections' weights
        for (B, m, n, d, h), mask, details in (
            (
                (2, 4, 4, 8, 2),
                attention.causal_mask(4),
                "self-attention, d_model 8, 2 heads, causal mask",
            ),
            (
                (2, 3, 5, 12, 3),
                attention.padding_mask([5, 2], 5)[:, None, :],
                "cross-attention, d_model 12, 3 heads, (2, 1, 5) padding mask",
            ),
            ((1, 2, 6, 12, 4), None, "cross-attention, d_model 12, 4 heads, no mask"),
        ):
            layers = [nn.Linear(d, d) for _ in range(4)]  # W_q, W_k, W_v, W_o
            q = randn(g, B, m, d)
            kv = q if m == n else randn(g, B, n, d)
            examples.append((q, kv, kv, *layers, h, mask, details))
    return examples


def _mha_alternatives(args: tuple) -> tuple[tuple[Tensor, Tensor, str], ...]:
    """Known mistakes as (output, weights, diagnosis), made by bending MultiHeadAttention."""
    query, key, value, W_q, W_k, W_v, W_o, h, mask = args
    mha = _mha_with(W_q, W_k, W_v, W_o, h)
    d_k, sdpa = mha.d_k, attention.scaled_dot_product_attention

    def over_sqrt_d_model(Q, K, V, mask=None):  # QK^T / sqrt(h d_k)
        return sdpa(Q / math.sqrt(h), K, V, mask)

    def concat_without_transpose(Q, K, V, mask=None):  # heads.reshape(B, m, d) as the concat
        out, w = sdpa(Q, K, V, mask)  # (B, h, m, d_k)
        return out.reshape(*out.shape[:-3], out.shape[-2], h, d_k).transpose(-3, -2), w

    found = []
    for bend, why in (
        (
            over_sqrt_d_model,
            "Each head divides by sqrt(d_k), with d_k = d_model / h, not by sqrt(d_model).",
        ),
        (
            concat_without_transpose,
            "To concatenate, undo the split in reverse order: bring the head axis back next to "
            "d_k, (B, m, h, d_k), before merging the two into d_model.",
        ),
    ):
        with parts.swapped(attention, "scaled_dot_product_attention", bend):
            found.append((*_with_weights(mha, query, key, value, mask), why))

    def split_straight(x):  # (B, T, d_model) reshaped straight to (B, h, T, d_k)
        return x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)

    with parts.swapped(mha, "split_heads", split_straight):
        found.append(
            (
                *_with_weights(mha, query, key, value, mask),
                "Split the last dimension, d_model, into (h, d_k), then move the head axis "
                "forward: reshaping (B, T, d_model) straight to (B, h, T, d_k) mixes positions "
                "into the heads.",
            )
        )
    no_out = _mha_with(W_q, W_k, W_v, W_o, h)  # then W_o = identity: no output projection
    with torch.no_grad():
        no_out.W_o.weight.copy_(torch.eye(W_o.in_features))
        no_out.W_o.bias.zero_()
    found.append(
        (
            *_with_weights(no_out, query, key, value, mask),
            "Project the concatenated heads with W_o: `W_o(concat)`.",
        )
    )
    return tuple(found)


def _call_mha(fn: Callable, args: tuple, where: str) -> object:
    """_call, with a hint when a (B, 1, n) mask did not meet the heads' (B, h, m, n) scores."""
    try:
        return call_student(fn, args, where)
    except Failure as failure:
        mask = args[8]
        if failure.category == "exception" and mask is not None and mask.dim() >= 3:
            failure.message += (
                " A (B, 1, n) mask must become (B, 1, 1, n) to meet every head's (B, h, m, n) "
                "scores: `mask.unsqueeze(1)`."
            )
        raise


def _mha_body(fn: Callable) -> str:
    examples = _mha_examples()
    for i, (*args, details) in enumerate(examples, start=1):
        query, key, h, mask = args[0], args[1], args[7], args[8]
        where = hidden(i, len(examples), f"{shape_str(query=query, key=key)}, {details}")
        output, weights = as_tuple(_call_mha(fn, tuple(args), where), ("output", "weights"))
        B, m, n, d = query.shape[0], query.shape[1], key.shape[1], query.shape[2]
        check_shape(
            weights,
            (B, h, m, n),
            "weights",
            where,
            " One (m, n) matrix per head: (B, h, m, n); return (output, weights) in that order.",
        )
        check_shape(
            output, (B, m, d), "output", where, " Concatenate the heads back to (B, m, d_model)."
        )
        check_finite(weights, "weights", where)
        check_finite(output, "output", where)
        head_mask = None if mask is None else (mask.unsqueeze(1) if mask.dim() >= 3 else mask)
        check_masked_zero(
            weights,
            head_mask,
            where,
            "Pass the mask to every head: a (B, 1, n) mask becomes (B, 1, 1, n) with `mask.unsqueeze(1)`.",
        )
        check_rows(weights, head_mask, where, "Take each head's softmax over the keys (`dim=-1`).")
        ref_output, ref_weights = _ref_multi_head_attention(*args)
        alternatives = _mha_alternatives(tuple(args))
        check_close(
            weights,
            ref_weights,
            "weights",
            where,
            "head_i = softmax(Q_i K_i^T / sqrt(d_k)) with Q_i = the i-th block of d_k columns of W_q(query).",
            tuple((w, why) for _, w, why in alternatives),
        )
        check_close(
            output,
            ref_output,
            "output",
            where,
            "output = W_o(Concat(head_1..head_h)).",
            tuple((o, why) for o, _, why in alternatives),
        )
    return f"Your output and the weights of every head match attnlab.attention.MultiHeadAttention on {len(examples)} hidden examples."


def check_multi_head_attention(fn: Callable) -> CheckResult:
    """Check ``multi_head_attention(query, key, value, W_q, W_k, W_v, W_o, num_heads, mask)``."""
    return run_check("multi_head_attention", fn, _mha_body)


#: The reference: attention.MultiHeadAttention with the given projections.
REFERENCES: dict[str, Callable] = {"multi_head_attention": _ref_multi_head_attention}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"multi_head_attention": _mha_body}
