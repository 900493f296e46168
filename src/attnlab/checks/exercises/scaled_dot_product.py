r"""Scaled dot-product attention (Vaswani et al., 2017): softmax(Q K^T / sqrt(d_k)) V.

``check_scaled_dot_product_attention(fn)`` runs the student's function on hidden (Q, K, V,
mask) and names the usual slips (no 1/sqrt(d_k), a division by d_k).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

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
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.guard.library import as_imported

__all__ = ["REFERENCES", "BODIES", "check_scaled_dot_product_attention"]


def _sdpa_examples():
    g = torch.Generator().manual_seed(709)
    d_k, d_v = 16, 4  # d_k large enough that forgetting sqrt(d_k) changes the weights a lot
    return [
        (randn(g, 2, 3, d_k), randn(g, 2, 5, d_k), randn(g, 2, 5, d_v), None, "no mask"),
        (
            *(randn(g, 2, 4, d) for d in (d_k, d_k, d_v)),
            attention.causal_mask(4),
            "a (4, 4) causal mask",
        ),
        (
            randn(g, 2, 3, d_k),
            randn(g, 2, 6, d_k),
            randn(g, 2, 6, d_v),
            attention.padding_mask([6, 3], 6)[:, None, :],
            "a (2, 1, 6) padding mask",
        ),
    ]


def _sdpa_body(fn: Callable) -> str:
    examples = _sdpa_examples()
    for i, (Q, K, V, mask, details) in enumerate(examples, start=1):
        where = hidden(i, len(examples), f"{shape_str(Q=Q, K=K, V=V)}, {details}")
        output, weights = as_tuple(call_student(fn, (Q, K, V, mask), where), ("output", "weights"))
        B, m, n, d_v = Q.shape[0], Q.shape[1], K.shape[1], V.shape[-1]
        check_shape(
            weights,
            (B, m, n),
            "weights",
            where,
            " One weight per query and key; return (output, weights) in that order.",
        )
        check_shape(output, (B, m, d_v), "output", where, " output = weights @ V.")
        check_finite(weights, "weights", where)
        check_finite(output, "output", where)
        check_masked_zero(weights, mask, where, "Pass the mask on to your masked_softmax.")
        check_rows(weights, mask, where, "Take the softmax over the keys (`dim=-1`).")
        ref_output, ref_weights = attention.scaled_dot_product_attention(Q, K, V, mask)
        d_k = K.shape[-1]
        unscaled = attention.masked_softmax(Q @ K.transpose(-2, -1), mask)  # no 1/sqrt(d_k)
        over_d_k = attention.masked_softmax(Q @ K.transpose(-2, -1) / d_k, mask)
        check_close(
            weights,
            ref_weights,
            "weights",
            where,
            "weights = softmax(Q K^T / sqrt(d_k)) over the keys.",
            (
                (unscaled, "It looks like you forgot to divide the scores by sqrt(d_k)."),
                (over_d_k, "You divided by d_k; divide by sqrt(d_k) (`math.sqrt(d_k)`)."),
            ),
        )
        check_close(output, ref_output, "output", where, "output = weights @ V.")
    return f"Your output and weights match the reference on {len(examples)} hidden examples."


def check_scaled_dot_product_attention(fn: Callable) -> CheckResult:
    """Check ``scaled_dot_product_attention(Q, K, V, mask=None) -> (output, weights)``."""
    return run_check("scaled_dot_product_attention", fn, _sdpa_body)


#: The reference: the library's own function, as imported.
REFERENCES: dict[str, Callable] = {
    "scaled_dot_product_attention": as_imported(attention, "scaled_dot_product_attention")
}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"scaled_dot_product_attention": _sdpa_body}
