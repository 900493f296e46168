r"""The three scores of Luong et al. (2015) and Bahdanau et al. (2015): dot, general, additive.

Each ``check_<name>(fn)`` runs the student's score on hidden (s, h) pairs, s (B, m, d_s) and
h (B, n, d_h), and compares it with the reference: the library's own function, or its score
module holding the given weights (no second copy of an equation).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlab import attention
from attnlab.checks.compare import (
    as_tensor,
    check_close,
    check_finite,
    check_shape,
    hidden,
    randn,
    shape_str,
)
from attnlab.checks.exercises.seeded import library_module
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.guard.library import as_imported

__all__ = ["REFERENCES", "BODIES", "check_dot_score", "check_general_score", "check_additive_score"]


def _ref_general_score(s: Tensor, h: Tensor, W_a: Tensor) -> Tensor:
    """s^T W_a h through attention.GeneralScore with the given W_a (d_s, d_h)."""
    score = library_module(lambda: attention.GeneralScore(*W_a.shape), {"W_a": W_a})
    return score(s, h)  # (B, m, n)


def _ref_additive_score(s: Tensor, h: Tensor, W: Tensor, U: Tensor, v: Tensor) -> Tensor:
    """v^T tanh(W s + U h) through attention.AdditiveScore, W (d_a, d_s), U (d_a, d_h), v (d_a,)."""
    d_a, d_s = W.shape
    score = library_module(
        lambda: attention.AdditiveScore(d_s, U.shape[1], d_a),
        {"W.weight": W, "U.weight": U, "v.weight": v.reshape(1, d_a)},
    )
    return score(s, h)  # (B, m, n)


def _score_examples(seed: int, sizes: tuple[tuple[int, int, int, int, int], ...]):
    """(s, h) pairs: s (B, m, d_s), h (B, n, d_h) for each (B, m, n, d_s, d_h)."""
    g = torch.Generator().manual_seed(seed)
    return [(randn(g, B, m, d_s), randn(g, B, n, d_h)) for B, m, n, d_s, d_h in sizes]


def _check_scores(
    fn: Callable, examples: list[tuple], name: str, hint: str, alternatives: Callable | None = None
) -> str:
    """Shared body of the three score checks: shape, finiteness, values."""
    for i, args in enumerate(examples, start=1):
        s, h = args[0], args[1]
        where = hidden(i, len(examples), shape_str(s=s, h=h))
        got = as_tensor(call_student(fn, args, where), "scores")
        expected = (s.shape[0], s.shape[1], h.shape[1])  # (B, m, n)
        check_shape(
            got,
            expected,
            "scores",
            where,
            " One score per query (m) and key (n): (B, m, n). "
            "Transpose h with `h.transpose(-2, -1)` (not `h.T`, which flips every dimension).",
        )
        check_finite(got, "scores", where)
        ref = REFERENCES[name](*args)
        known_mistakes = (alternatives(*args) if alternatives else ()) + (
            (
                torch.softmax(ref, dim=-1),
                "Your function returns weights (the softmax of the scores); return the raw "
                "scores: the softmax comes later, in masked_softmax.",
            ),
        )
        check_close(got, ref, "scores", where, hint, known_mistakes)
    return f"Your scores match the reference on {len(examples)} hidden examples."


def _dot_body(fn: Callable) -> str:
    examples = _score_examples(701, ((2, 3, 5, 4, 4), (3, 1, 7, 6, 6)))

    def alternatives(s, h):
        return (
            (
                attention.scaled_dot_score(s, h),
                "You divided by sqrt(d): that is the scaled dot score of the Transformer; "
                "here the score is the plain s^T h.",
            ),
        )

    return _check_scores(
        fn,
        examples,
        "dot_score",
        "score[b, t, i] should be the dot product of s[b, t] and h[b, i]: `s @ h^T`.",
        alternatives,
    )


def check_dot_score(fn: Callable) -> CheckResult:
    """Check ``dot_score(s, h)``: score(s, h_i) = s^T h_i, (B, m, d), (B, n, d) -> (B, m, n)."""
    return run_check("dot_score", fn, _dot_body)


def _general_body(fn: Callable) -> str:
    g = torch.Generator().manual_seed(702)
    examples = [
        (s, h, randn(g, s.shape[-1], h.shape[-1], scale=0.5))
        for s, h in _score_examples(703, ((2, 3, 5, 4, 6), (1, 1, 7, 8, 3)))
    ]

    return _check_scores(
        fn,
        examples,
        "general_score",
        "score = s^T W_a h for every pair: `(s @ W_a) @ h^T`, with W_a of shape (d_s, d_h).",
    )


def check_general_score(fn: Callable) -> CheckResult:
    """Check ``general_score(s, h, W_a)``: s^T W_a h, W_a (d_s, d_h) -> scores (B, m, n)."""
    return run_check("general_score", fn, _general_body)


def _additive_body(fn: Callable) -> str:
    g = torch.Generator().manual_seed(704)
    examples = []
    for (s, h), d_a in zip(
        _score_examples(705, ((2, 3, 5, 4, 6), (1, 1, 7, 8, 3))), (5, 9), strict=True
    ):
        W = randn(g, d_a, s.shape[-1], scale=0.5)  # (d_a, d_s)
        U = randn(g, d_a, h.shape[-1], scale=0.5)  # (d_a, d_h)
        v = randn(g, d_a)  # (d_a,)
        examples.append((s, h, W, U, v))

    def alternatives(s, h, W, U, v):
        no_tanh = ((s @ W.T).unsqueeze(-2) + (h @ U.T).unsqueeze(-3)) @ v  # v^T (W s + U h)
        tanh_after = torch.tanh(no_tanh)  # tanh(v^T (W s + U h))
        return (
            (no_tanh, "You left out the tanh: v^T tanh(W s + U h)."),
            (tanh_after, "You applied tanh after v: it goes inside, v^T tanh(W s + U h)."),
        )

    return _check_scores(
        fn,
        examples,
        "additive_score",
        "score[b, t, i] = v^T tanh(W s_t + U h_i): W s has shape (B, m, d_a), U h has "
        "(B, n, d_a); add them as (B, m, 1, d_a) + (B, 1, n, d_a), apply tanh, then "
        "multiply by v.",
        alternatives,
    )


def check_additive_score(fn: Callable) -> CheckResult:
    """Check ``additive_score(s, h, W, U, v)``: v^T tanh(W s + U h) -> scores (B, m, n)."""
    return run_check("additive_score", fn, _additive_body)


#: The references: the library's own functions, captured when attnlab.guard.library was imported
#: (a later `attention.dot_score = mine` does not change them), or its modules with given weights.
REFERENCES: dict[str, Callable] = {
    "dot_score": as_imported(attention, "dot_score"),
    "general_score": _ref_general_score,
    "additive_score": _ref_additive_score,
}

#: Each check without its harness (in_model runs them first).
BODIES: dict[str, Callable[[Callable], str]] = {
    "dot_score": _dot_body,
    "general_score": _general_body,
    "additive_score": _additive_body,
}
