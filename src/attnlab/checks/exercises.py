r"""The exercises: their references (the library's own functions) and their checks.

Each ``check_<name>(fn)`` runs the student's ``fn`` on small hidden examples, compares it with
the reference, and names the first thing that is wrong (see :mod:`attnlab.checks`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab import attention
from attnlab.checks.harness import (
    LAST,
    ROW_SUM_TOL,
    CheckResult,
    Failure,
    Summary,
    as_tensor,
    as_tuple,
    call_student,
    check_close,
    check_finite,
    check_masked_zero,
    check_rows,
    check_shape,
    hidden,
    randn,
    run_check,
    shape_str,
    solutions_mode,
)
from attnlab.guard import parts
from attnlab.models import rnn as seq2seq
from attnlab.models import transformer

__all__ = [
    "EXERCISES",
    "reference",
    "exercise",
    "check_dot_score",
    "check_general_score",
    "check_additive_score",
    "check_masked_softmax",
    "check_decode_step",
    "check_scaled_dot_product_attention",
    "check_multi_head_attention",
    "check_positional_encoding",
    "check_encoder_block",
    "BODIES",
    "Summary",
    "summary",
]


# --------------------------------------------------------------------------- references
# The library's own functions, captured when this module is imported (a later
# `attention.masked_softmax = mine` does not change them), or thin wrappers with the
# exercises' signatures around the library's modules (no second copy of an equation).
def _ref_general_score(s: Tensor, h: Tensor, W_a: Tensor) -> Tensor:
    """s^T W_a h through attention.GeneralScore with the given W_a (d_s, d_h)."""
    with torch.random.fork_rng(devices=[]):  # the module's init must not move the seed
        score = attention.GeneralScore(W_a.shape[0], W_a.shape[1])
    with torch.no_grad():
        score.W_a.copy_(W_a)
    return score(s, h)  # (B, m, n)


def _ref_additive_score(s: Tensor, h: Tensor, W: Tensor, U: Tensor, v: Tensor) -> Tensor:
    """v^T tanh(W s + U h) through attention.AdditiveScore, W (d_a, d_s), U (d_a, d_h), v (d_a,)."""
    d_a, d_s = W.shape
    with torch.random.fork_rng(devices=[]):
        score = attention.AdditiveScore(d_s, U.shape[1], d_a)
    with torch.no_grad():
        score.W.weight.copy_(W)
        score.U.weight.copy_(U)
        score.v.weight.copy_(v.reshape(1, d_a))
    return score(s, h)  # (B, m, n)


def _mha_with(W_q: nn.Linear, W_k: nn.Linear, W_v: nn.Linear, W_o: nn.Linear, num_heads: int):
    """attention.MultiHeadAttention holding copies of the four given projections."""
    with torch.random.fork_rng(devices=[]):
        mha = attention.MultiHeadAttention(W_q.in_features, num_heads)
    for mine, given in ((mha.W_q, W_q), (mha.W_k, W_k), (mha.W_v, W_v), (mha.W_o, W_o)):
        mine.load_state_dict(given.state_dict())
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
    """(output, weights): MultiHeadAttention keeps the weights of its last call on ``attn``."""
    output = mha(*args)  # (B, m, d_model)
    return output, mha.attn  # (B, h, m, n)


def self_attention(mha: nn.Module, mask: Tensor | None) -> Callable[[Tensor], Tensor]:
    """The student's ``self_attn``: z (B, n, d) -> MultiHead(z, z, z) over the allowed keys."""

    def self_attn(z: Tensor) -> Tensor:
        return mha(z, z, z, mask)  # (B, n, d)

    return self_attn


class _GivenAttention(nn.Module):
    """A ``self_attn`` function standing where an EncoderLayer holds MultiHeadAttention."""

    def __init__(self, self_attn: Callable[[Tensor], Tensor]):
        super().__init__()
        self.self_attn = self_attn

    def forward(self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None):
        return self.self_attn(query)  # (B, n, d): the function already holds its mask


def _ref_encoder_block(
    x: Tensor,
    self_attn: Callable[[Tensor], Tensor],
    ln_1: nn.LayerNorm,
    ln_2: nn.LayerNorm,
    W_1: nn.Linear,
    W_2: nn.Linear,
) -> Tensor:
    """transformer.EncoderLayer with the given sub-layers (pre-LN):
    x <- x + SelfAttn(LN_1(x)), then x <- x + W_2 ReLU(W_1 LN_2(x))."""
    with torch.random.fork_rng(devices=[]):
        layer = transformer.EncoderLayer(W_1.in_features, 1, W_1.out_features)
    layer.ln1, layer.ln2, layer.self_attn = ln_1, ln_2, _GivenAttention(self_attn)
    layer.ffn[0], layer.ffn[2] = W_1, W_2  # FFN(z) = W_2 ReLU(W_1 z)
    return layer(x, None)  # (B, n, d)


# The library's own functions as defined, even if replaced before this module was imported.
_REFERENCES: dict[str, Callable] = {
    "dot_score": attention.AS_DEFINED["dot_score"],
    "general_score": _ref_general_score,
    "additive_score": _ref_additive_score,
    "masked_softmax": attention.AS_DEFINED["masked_softmax"],
    "decode_step": seq2seq.decode_step,
    "scaled_dot_product_attention": attention.AS_DEFINED["scaled_dot_product_attention"],
    "multi_head_attention": _ref_multi_head_attention,
    "positional_encoding": attention.AS_DEFINED["positional_encoding"],
    "encoder_block": _ref_encoder_block,
}

#: The exercises, in the notebook's order.
EXERCISES = tuple(_REFERENCES)


def reference(name: str) -> Callable:
    """The reference answer of exercise ``name`` (same signature as the student's function)."""
    if name not in _REFERENCES:
        raise ValueError(f"unknown exercise {name!r}; the exercises are {', '.join(EXERCISES)}")
    return _REFERENCES[name]


def exercise(name: str) -> Callable[[Callable], Callable]:
    """Decorator on the student's function: the reference in solutions mode, else unchanged."""
    ref = reference(name)

    def decorate(fn: Callable) -> Callable:
        return ref if solutions_mode() else fn

    return decorate


# --------------------------------------------------------------------------- the scores
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
        ref = _REFERENCES[name](*args)
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


# --------------------------------------------------------------------------- masked softmax
_MASK_HINT = (
    "Fill the forbidden scores with -inf before the softmax, e.g. "
    "`scores.masked_fill(~mask, float('-inf'))`: exp(-inf) is exactly 0."
)


def _softmax_examples() -> list[tuple[Tensor, Tensor | None, str]]:
    g = torch.Generator().manual_seed(706)
    full = torch.rand(2, 4, 6, generator=g) < 0.6  # (B, m, n)
    full[:, :, 0] = True  # every row has an allowed key...
    full[1, 2] = False  # ...except this one: every key masked
    padding = attention.padding_mask([5, 2], 5)[:, None, :]  # (B, 1, n)
    large = randn(g, 2, 3, 5, scale=100.0)
    return [
        (randn(g, 2, 3, 5, scale=2.0), None, "no mask"),
        (randn(g, 2, 4, 6, scale=2.0), full, "a (2, 4, 6) mask with one row fully masked"),
        (randn(g, 2, 3, 5, scale=2.0), padding, "a (2, 1, 5) padding mask"),
        (large, padding, f"large scores, up to {large.abs().max():.0f}, a (2, 1, 5) mask"),
    ]


def _softmax_nan_hint(alpha: Tensor, scores: Tensor, mask: Tensor | None) -> str:
    """Why alpha has NaNs: a fully masked row (0/0), or exp overflowing on large scores."""
    bad_rows = ~torch.isfinite(alpha).all(dim=-1)  # (B, m)
    if mask is not None:
        empty_rows = ~mask.expand_as(scores).any(dim=-1)  # rows where every key is masked
        if (bad_rows & empty_rows).any():
            return (
                " A row whose keys are all masked must give zeros: with -inf everywhere the "
                "softmax is 0/0 = NaN; set those rows to 0 (e.g. `torch.nan_to_num(alpha)`)."
            )
    if scores.abs().max() > 50:
        return (
            " Subtract the row maximum before exp (torch.softmax does it for you): in float32 "
            "exp(x) overflows to inf above x = 88, and inf / inf is NaN."
        )
    return ""


def _softmax_rows_hint(alpha: Tensor, scores: Tensor, mask: Tensor | None) -> str:
    """Why the rows of alpha do not sum to 1, guessed from what they do sum to."""
    if alpha.dim() >= 2 and torch.allclose(alpha.sum(dim=-2), torch.ones(()), atol=ROW_SUM_TOL):
        return "Your columns sum to 1: take the softmax over the last dimension (`dim=-1`)."
    if scores.abs().max() > 50:
        return "exp(x) overflows above x = 88: subtract the row maximum before exp."
    if mask is not None:
        return "Mask the scores before the softmax, not the weights after it."
    return "Divide exp(score) by its sum over the keys (the last dimension)."


def _softmax_body(fn: Callable) -> str:
    examples = _softmax_examples()
    for i, (scores, mask, details) in enumerate(examples, start=1):
        where = hidden(i, len(examples), f"scores {tuple(scores.shape)}, {details}")
        alpha = as_tensor(call_student(fn, (scores, mask), where), "alpha")
        check_shape(alpha, scores.shape, "alpha", where, " alpha has the shape of the scores.")
        check_finite(alpha, "alpha", where, _softmax_nan_hint(alpha, scores, mask))
        check_masked_zero(alpha, mask, where, _MASK_HINT)
        check_rows(alpha, mask, where, _softmax_rows_hint(alpha, scores, mask))
        check_close(alpha, attention.masked_softmax(scores, mask), "alpha", where)
    return (
        f"Your alpha matches the reference on {len(examples)} hidden examples, masked weights are "
        "exactly 0 and a fully masked row is all zeros."
    )


def check_masked_softmax(fn: Callable) -> CheckResult:
    """Check ``masked_softmax(scores, mask=None)`` (mask True = allowed; masked weights 0)."""
    return run_check("masked_softmax", fn, _softmax_body)


# --------------------------------------------------------------------------- a decoding step
def _decode_examples():
    """(s_prev, h, y_prev, score, cell) with d_s != d_h != d_y, so mix-ups show as shapes."""
    g = torch.Generator().manual_seed(707)
    examples = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(708)  # the modules' initial weights
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


# --------------------------------------------------------------------------- scaled dot-product
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


# --------------------------------------------------------------------------- multi-head attention
def _mha_examples():
    """(query, key, value, W_q, W_k, W_v, W_o, h, mask, details): self and cross attention."""
    g = torch.Generator().manual_seed(710)
    examples = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(711)  # the projections' weights
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
    split = _mha_with(W_q, W_k, W_v, W_o, h)
    split.split_heads = lambda x: x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)
    found.append(
        (
            *_with_weights(split, query, key, value, mask),
            "Split the last dimension, d_model, into (h, d_k), then move the head axis forward: "
            "reshaping (B, T, d_model) straight to (B, h, T, d_k) mixes positions into the heads.",
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


# --------------------------------------------------------------------------- positions
def _pe_alternatives(n: int, d: int) -> tuple[tuple[Tensor, str], ...]:
    ref = attention.positional_encoding(n, d)  # (n, d)
    swapped = torch.stack([ref[:, 1::2], ref[:, 0::2]], dim=-1).flatten(-2)  # cos, sin, ...
    halves = torch.cat([ref[:, 0::2], ref[:, 1::2]], dim=-1)  # all sines, then all cosines
    pos = torch.arange(n, dtype=torch.float32)[:, None]  # (n, 1)
    angle = pos / torch.pow(10000.0, torch.arange(d, dtype=torch.float32) / d)  # j/d, not 2i/d
    own_frequency = torch.where(torch.arange(d) % 2 == 0, torch.sin(angle), torch.cos(angle))
    return (
        (swapped, "Sine and cosine are swapped: PE[pos, 2i] = sin(...), PE[pos, 2i+1] = cos(...)."),
        (
            halves,
            "Interleave them: even columns 0, 2, 4, ... hold the sines, odd columns the cosines (not all sines first).",
        ),
        (
            own_frequency,
            "Columns 2i and 2i+1 share one frequency, 1 / 10000^(2i/d): for the cosine in column 2i+1, use 2i, not 2i+1.",
        ),
        (
            attention.positional_encoding(n + 1, d)[1:],
            "Positions start at 0: the first row is sin(0), cos(0), ... = 0, 1, 0, 1, ...",
        ),
    )


def _pe_body(fn: Callable) -> str:
    sizes = ((10, 16), (50, 64), (7, 6))
    for i, (n, d) in enumerate(sizes, start=1):
        where = hidden(i, len(sizes), f"n = {n}, d = {d}")
        pe = as_tensor(call_student(fn, (n, d), where), "encoding")
        check_shape(
            pe,
            (n, d),
            "encoding",
            where,
            " One row per position, one column per dimension: (n, d).",
        )
        check_finite(pe, "encoding", where)
        check_close(
            pe,
            attention.positional_encoding(n, d),
            "encoding",
            where,
            "PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).",
            _pe_alternatives(n, d),
        )
    return f"Your encoding matches attnlab.attention.positional_encoding for {len(sizes)} sizes."


def check_positional_encoding(fn: Callable) -> CheckResult:
    """Check ``positional_encoding(n, d) -> (n, d)``, the sinusoidal encoding."""
    return run_check("positional_encoding", fn, _pe_body)


# --------------------------------------------------------------------------- an encoder block


def _block_examples():
    """(x, self_attn, ln_1, ln_2, W_1, W_2, details), LayerNorms with trained-looking weights."""
    g = torch.Generator().manual_seed(712)
    examples = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(713)  # the sub-layers' weights
        for (B, n, d, h, d_ff), lengths, details in (
            ((2, 5, 8, 2, 16), [5, 3], "d_model 8, 2 heads, d_ff 16, a (2, 1, 5) padding mask"),
            ((1, 4, 12, 3, 24), None, "d_model 12, 3 heads, d_ff 24, no mask"),
        ):
            layer = transformer.EncoderLayer(d, h, d_ff)
            for ln in (layer.ln1, layer.ln2):  # not the identity: a swapped LayerNorm shows
                with torch.no_grad():
                    ln.weight.copy_(1 + 0.3 * randn(g, d))
                    ln.bias.copy_(0.2 * randn(g, d))
            mask = None if lengths is None else attention.padding_mask(lengths, n)[:, None, :]
            attn = self_attention(layer.self_attn.eval(), mask)
            x = randn(g, B, n, d)
            examples.append((x, attn, layer.ln1, layer.ln2, layer.ffn[0], layer.ffn[2], details))
    return examples


def _block_alternatives(x, attn, ln_1, ln_2, W_1, W_2) -> tuple[tuple[Tensor, str], ...]:
    """The typical mistakes, each computed from the same sub-layers, with what to say."""
    relu = torch.relu

    def pre(first, second, last=lambda y: y):  # x + first(...), then + second(...)
        y = x + first(x)
        return last(y + second(y))

    ffn = lambda z: W_2(relu(W_1(z)))  # noqa: E731 - FFN(z) = W_2 ReLU(W_1 z)
    attn_ln = lambda y: attn(ln_1(y))  # noqa: E731
    y_post = ln_1(x + attn(x))
    y_no_attn_res = attn(ln_1(x))
    y_pre = x + attn(ln_1(x))
    wrong_relu = (
        "ReLU is in the wrong place: FFN(z) = W_2 ReLU(W_1 z), between the two linear layers."
    )
    return (
        (ln_2(y_post + ffn(y_post)), "This is post-LN, LayerNorm(x + Sublayer(x)) (the 2017 paper's order); this model is pre-LN: x + Sublayer(LayerNorm(x)), the LayerNorm on the sub-layer's input."),
        (ffn(ln_2(y_no_attn_res)), "The residual connections are left out: each sub-layer adds its output to its input, x + Sublayer(LayerNorm(x))."),
        (y_no_attn_res + ffn(ln_2(y_no_attn_res)), "The residual around the self-attention is left out: x + self_attn(ln_1(x))."),
        (ffn(ln_2(y_pre)), "The residual around the feed-forward network is left out: x + FFN(ln_2(x))."),
        (pre(attn_ln, lambda y: relu(W_2(W_1(ln_2(y))))), wrong_relu + " Yours is after W_2."),
        (pre(attn_ln, lambda y: W_2(W_1(relu(ln_2(y))))), wrong_relu + " Yours is before W_1."),
        (pre(attn_ln, lambda y: W_2(W_1(ln_2(y))), relu), wrong_relu + " Yours is on the residual sum."),
        (pre(attn_ln, lambda y: ffn(ln_2(y)), relu), wrong_relu + " Yours is also on the residual sum: the block's output is not passed through ReLU."),
        (pre(attn_ln, lambda y: W_2(W_1(ln_2(y)))), "The ReLU is left out: FFN(z) = W_2 ReLU(W_1 z)."),
        (pre(attn_ln, lambda y: ffn(ln_1(y))), "Each sub-layer has its own LayerNorm: ln_1 before the self-attention, ln_2 before the feed-forward network."),
        (pre(lambda y: ln_1(attn(y)), lambda y: ln_2(ffn(y))), "The LayerNorm goes on the sub-layer's input, not on its output: x + Sublayer(LayerNorm(x))."),
    )  # fmt: skip


def _block_body(fn: Callable) -> str:
    examples = _block_examples()
    for i, (*args, details) in enumerate(examples, start=1):
        x = args[0]
        where = hidden(i, len(examples), f"x {tuple(x.shape)}, {details}")
        out = as_tensor(call_student(fn, tuple(args), where), "output")
        check_shape(out, tuple(x.shape), "output", where, " The block keeps the shape of x.")
        check_finite(out, "output", where)
        check_close(
            out,
            _ref_encoder_block(*args),
            "output",
            where,
            "x <- x + self_attn(ln_1(x)), then x <- x + W_2(ReLU(W_1(ln_2(x)))).",
            _block_alternatives(*args),
        )
    return f"Your block matches transformer.EncoderLayer on {len(examples)} hidden examples."


def check_encoder_block(fn: Callable) -> CheckResult:
    """Check ``encoder_block(x, self_attn, ln_1, ln_2, W_1, W_2) -> x`` (pre-LN)."""
    return run_check("encoder_block", fn, _block_body)


#: Each exercise's body: the check without its harness (in_model runs them first).
BODIES: dict[str, Callable[[Callable], str]] = {
    "dot_score": _dot_body,
    "general_score": _general_body,
    "additive_score": _additive_body,
    "masked_softmax": _softmax_body,
    "decode_step": _decode_body,
    "scaled_dot_product_attention": _sdpa_body,
    "multi_head_attention": _mha_body,
    "positional_encoding": _pe_body,
    "encoder_block": _block_body,
}


def summary() -> Summary:
    """The latest check of each exercise in this session."""
    return Summary(tuple((name, LAST.get(name)) for name in EXERCISES))
