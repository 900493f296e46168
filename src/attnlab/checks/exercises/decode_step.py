r"""One decoding step of RNNSearch (Bahdanau et al., 2015): score, softmax, context, GRU cell.

``check_decode_step(fn)`` runs the student's ``decode_step(s_prev, h, y_prev, score, cell)`` on
hidden examples with d_s != d_h != d_y (so that a mix-up shows as a shape) and compares it with
:func:`attnlab.models.rnn.decode_step`, the one the model runs.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

from attnlab import attention
from attnlab.checks.compare import (
    as_tuple,
    check_close,
    check_finite,
    check_rows,
    check_shape,
    hidden,
    randn,
    shape_str,
)
from attnlab.checks.exercises.seeded import kept_rng
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.models import rnn as seq2seq

__all__ = ["REFERENCES", "BODIES", "check_decode_step"]


def _decode_examples():
    """(s_prev, h, y_prev, score, cell) with d_s != d_h != d_y, so mix-ups show as shapes."""
    g = torch.Generator().manual_seed(707)
    examples = []
    with kept_rng(708):  # the modules' initial weights
        for B, n, d_s, d_h, d_y, score in (
            (2, 5, 6, 8, 4, "general"),
            (3, 7, 6, 8, 4, "additive"),
        ):
            cell = nn.GRUCell(d_y + d_h, d_s)  # input [y_{t-1}; c_t], hidden s_{t-1}
            module = attention.make_score(score, d_s, d_h, d_attn=5)
            examples.append((randn(g, B, d_s), randn(g, B, n, d_h), randn(g, B, d_y), module, cell))
    return examples


def _decode_body(fn: Callable) -> str:
    examples = _decode_examples()
    for i, args in enumerate(examples, start=1):
        s_prev, h, y_prev, score, cell = args
        B, n, d_h = h.shape
        where = hidden(
            i,
            len(examples),
            f"{shape_str(s_prev=s_prev, h=h, y_prev=y_prev)}, a {type(score).__name__}",
        )
        out = call_student(fn, args, where)
        s_t, c_t, alpha = as_tuple(out, ("s_t", "c_t", "alpha"))
        squeeze = " Squeeze the query dimension m = 1 away: `.squeeze(1)`."
        check_shape(alpha, (B, n), "alpha", where, squeeze)
        order = " Return (s_t, c_t, alpha) in that order."
        check_shape(c_t, (B, d_h), "c_t", where, squeeze + order)
        check_shape(s_t, tuple(s_prev.shape), "s_t", where, order)
        for value, what in ((alpha, "alpha"), (c_t, "c_t"), (s_t, "s_t")):
            check_finite(value, what, where)
        check_rows(alpha, None, where, "alpha is the softmax of the scores over the n keys.")
        ref_s, ref_c, ref_alpha = seq2seq.decode_step(*args)
        check_close(
            alpha,
            ref_alpha,
            "alpha",
            where,
            "alpha_{t,i} = softmax_i(score(s_{t-1}, h_i)): call `score(s_prev.unsqueeze(1), h)` "
            "(queries (B, 1, d_s), keys (B, n, d_h)).",
        )
        check_close(c_t, ref_c, "c_t", where, "c_t = sum_i alpha_{t,i} h_i.")
        swapped = cell(torch.cat([ref_c, y_prev], dim=-1), s_prev)
        from_zero = cell(torch.cat([y_prev, ref_c], dim=-1))
        check_close(
            s_t,
            ref_s,
            "s_t",
            where,
            "s_t = GRUCell([y_{t-1}; c_t], s_{t-1}).",
            (
                (
                    swapped,
                    "The GRUCell's input is [y_{t-1}; c_t] in that order, not [c_t; y_{t-1}].",
                ),
                (from_zero, "Pass s_{t-1} as the GRUCell's hidden state: `cell(x, s_prev)`."),
            ),
        )
    return f"Your s_t, c_t and alpha match the reference on {len(examples)} hidden examples."


def check_decode_step(fn: Callable) -> CheckResult:
    """Check ``decode_step(s_prev, h, y_prev, score, cell) -> (s_t, c_t, alpha)``."""
    return run_check("decode_step", fn, _decode_body)


#: The reference: the decoding step RNNSearch runs.
REFERENCES: dict[str, Callable] = {"decode_step": seq2seq.decode_step}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"decode_step": _decode_body}
