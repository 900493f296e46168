r"""The attention core: scores, masked softmax, attention, multi-head attention.

Everything in the lecture is built from the functions in this file, written with the
lecture's symbols: each body is its equation, and what ``attention??`` shows is what runs.

Conventions
-----------
* Batch dimensions come first and may be any number (including none): ``...``.
* ``query`` has shape ``(..., m, d_q)``: ``m`` query vectors (the decoder states
  :math:`s_{t-1}` in Bahdanau attention, the rows of :math:`Q` in the Transformer).
* ``key`` has shape ``(..., n, d_k)``: ``n`` key vectors (the encoder states :math:`h_i`,
  the rows of :math:`K`).
* ``value`` has shape ``(..., n, d_v)``: one value per key (:math:`h_i` again in Bahdanau
  attention, the rows of :math:`V` in the Transformer).
* Scores and the attention weights ``alpha`` (:math:`\alpha`) have shape ``(..., m, n)``:
  row ``t`` holds :math:`\alpha_{t,1..n}`, the weights query ``t`` gives to the ``n`` keys.
* A mask is a **boolean** tensor broadcastable to ``(..., m, n)`` that is ``True`` where
  attention is allowed and ``False`` where it is forbidden (the convention of
  :func:`torch.nn.functional.scaled_dot_product_attention`).  :func:`mask_scores` is the
  one way a key is hidden: :func:`masked_softmax` applies it (every attention of the
  Transformer), and RNNSearch's score applies it to the padding before Bahdanau's step.

These functions do not validate their inputs: the validators (shapes, dtypes, boolean masks,
the scores a function from outside returns) live in :mod:`attnlab.guard.inputs`, e.g.
``inputs.validated(attention)(query, key, value)`` raises a one-line :class:`ValueError`
naming the shapes or dtypes it got.

Late binding: :func:`attention` and :func:`scaled_dot_product_attention` call
:func:`masked_softmax`, and :class:`MultiHeadAttention` calls
:func:`scaled_dot_product_attention`, through this module's globals, so
:func:`attnlab.guard.parts.swap` can put a student's function into every model.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor, nn

__all__ = [
    "dot_score",
    "scaled_dot_score",
    "DotScore",
    "ScaledDotScore",
    "GeneralScore",
    "AdditiveScore",
    "SCORES",
    "make_score",
    "masked_softmax",
    "mask_scores",
    "attention",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "KVCache",
    "MultiHeadAttention",
    "positional_encoding",
]

ScoreFn = Callable[[Tensor, Tensor], Tensor]


# --------------------------------------------------------------------------- score functions
def dot_score(query: Tensor, key: Tensor) -> Tensor:
    r"""score(s, h) = s^T h for every query/key pair.

    query (..., m, d), key (..., n, d) -> scores (..., m, n).
    """
    return query @ key.transpose(-2, -1)  # (..., m, d) @ (..., d, n) = (..., m, n)


def scaled_dot_score(query: Tensor, key: Tensor) -> Tensor:
    r"""score(q, k) = q^T k / sqrt(d_k): the Transformer's score (the only copy of it).

    Dividing by sqrt(d_k) keeps the variance of the scores near 1 whatever d_k is, so the
    softmax does not saturate (see the ScaledDotExplorer widget).
    query (..., m, d_k), key (..., n, d_k) -> scores (..., m, n).
    """
    d_k = key.shape[-1]
    # QK^T / sqrt(d_k) = (Q / sqrt(d_k)) K^T: scaling Q costs m*d_k operations, not m*n.
    return (query / math.sqrt(d_k)) @ key.transpose(-2, -1)  # (..., m, n)


class DotScore(nn.Module):
    """Module form of :func:`dot_score` (no parameters)."""

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        return dot_score(query, key)


class ScaledDotScore(nn.Module):
    """Module form of :func:`scaled_dot_score` (no parameters)."""

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        return scaled_dot_score(query, key)


class GeneralScore(nn.Module):
    r"""Luong et al.'s bilinear "general" form on Bahdanau et al.'s query s_{t-1}:
    score(s_{t-1}, h_i) = s_{t-1}^T W_a h_i (Luong et al. score the state h_t after the RNN
    step instead).

    W_a has shape (d_q, d_k), so queries and keys may have different sizes.
    """

    def __init__(self, d_q: int, d_k: int):
        super().__init__()
        self.d_q, self.d_k = d_q, d_k
        self.W_a = nn.Parameter(torch.empty(d_q, d_k))
        nn.init.xavier_uniform_(self.W_a)

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        # s^T W_a h  =  (s^T W_a) h:  (..., m, d_q) @ (d_q, d_k) @ (..., d_k, n) = (..., m, n)
        return (query @ self.W_a) @ key.transpose(-2, -1)

    def extra_repr(self) -> str:
        return f"d_q={self.d_q}, d_k={self.d_k}"


class AdditiveScore(nn.Module):
    r"""Bahdanau's additive score: score(s, h_i) = v^T tanh(W s + U h_i), with **no bias**.

    Exactly the paper's formula (and the exercise's): W (d_attn, d_q), U (d_attn, d_k) and
    v (d_attn,) are the only parameters.  A one-hidden-layer network of width d_attn applied
    to every (query, key) pair.  U h_i does not depend on the query, so a decoder computes
    it once per source with :meth:`precompute` and passes it back as ``Uh``.
    """

    def __init__(self, d_q: int, d_k: int, d_attn: int):
        super().__init__()
        self.d_q, self.d_k, self.d_attn = d_q, d_k, d_attn
        self.W = nn.Linear(d_q, d_attn, bias=False)
        self.U = nn.Linear(d_k, d_attn, bias=False)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def precompute(self, key: Tensor) -> Tensor:
        """U h_i for every key: key (..., n, d_k) -> (..., n, d_attn)."""
        return self.U(key)

    def forward(self, query: Tensor, key: Tensor, Uh: Tensor | None = None) -> Tensor:
        """query (..., m, d_q), key (..., n, d_k) -> scores (..., m, n); ``Uh`` from
        :meth:`precompute` (these keys) saves recomputing U h_i."""
        Ws = self.W(query).unsqueeze(-2)  # W s: (..., m, 1, d_attn)
        Uh = (self.U(key) if Uh is None else Uh).unsqueeze(-3)  # U h_i: (..., 1, n, d_attn)
        return self.v(torch.tanh(Ws + Uh)).squeeze(-1)  # v^T tanh(W s + U h_i): (..., m, n)

    def extra_repr(self) -> str:
        return f"d_q={self.d_q}, d_k={self.d_k}, d_attn={self.d_attn}"


#: The one table from score names to scores: name -> build(d_q, d_k, d_attn) -> the module.
SCORES: dict[str, Callable[[int, int, int], nn.Module]] = {
    "dot": lambda d_q, d_k, d_attn: DotScore(),
    "scaled_dot": lambda d_q, d_k, d_attn: ScaledDotScore(),
    "general": lambda d_q, d_k, d_attn: GeneralScore(d_q, d_k),
    "additive": lambda d_q, d_k, d_attn: AdditiveScore(d_q, d_k, d_attn),
}


def make_score(name: str, d_q: int, d_k: int, d_attn: int | None = None) -> nn.Module:
    """Build one of the four scores of :data:`SCORES` by name ("additive": d_attn = d_k unless given).

    A builder, like ``MultiHeadAttention(d_model, num_heads)``: it refuses what it cannot build
    (a model's config names its score), a one-line ValueError.
    """
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {', '.join(SCORES)}")
    if name in ("dot", "scaled_dot") and d_q != d_k:
        raise ValueError(f"the {name!r} score needs d_q == d_k; got d_q={d_q}, d_k={d_k}")
    return SCORES[name](d_q, d_k, d_attn or d_k)


# --------------------------------------------------------------------------- softmax and masks
def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    r"""alpha_{t,i} = exp(score_{t,i}) / sum_{i' allowed} exp(score_{t,i'}) over the last dim.

    scores (..., m, n); mask bool, broadcastable to (..., m, n), True where allowed.
    Masked positions get exactly 0.  A row where nothing is allowed is all zeros (never NaN).
    Numerically stable: the row maximum is subtracted first, so scores of 1e4 are fine.
    """
    if mask is None:
        return torch.softmax(scores, dim=-1)
    alpha = torch.softmax(mask_scores(scores, mask), dim=-1)  # stable: max subtracted
    # Exactly 0 where forbidden; a row with nothing allowed (uniform above) becomes all 0.
    return torch.where(mask, alpha, 0.0)


def mask_scores(scores: Tensor, mask: Tensor) -> Tensor:
    """scores (..., m, n) with the forbidden ones (mask False) at the most negative float, so
    that exp(score - row max) underflows to exactly 0 there: the one way attention masks."""
    # The lowest float, not -inf: a row with nothing allowed would give exp(-inf - -inf) = NaN.
    return torch.where(mask, scores, torch.finfo(scores.dtype).min)


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """(n, n) boolean mask, True on and below the diagonal: position t sees 1..t, never the future."""
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: Tensor | list[int], n: int) -> Tensor:
    """(B, n) boolean mask, True at the real tokens of each sequence, False at padding.

    ``lengths`` holds B sequence lengths (each 0..n).  To mask keys for scores of shape
    (B, m, n) use ``padding_mask(lengths, n)[:, None, :]`` (shape (B, 1, n)).
    """
    lengths = torch.as_tensor(lengths)  # (B,)
    positions = torch.arange(n, device=lengths.device)  # (n,)
    return positions[None, :] < lengths[:, None]  # (B, n)


# --------------------------------------------------------------------------- attention
def attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score: ScoreFn = dot_score,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""General attention: c_t = sum_i alpha_{t,i} h_i with alpha = softmax(score(s, h)).

    query (..., m, d_q), key (..., n, d_k), value (..., n, d_v), ``score`` any of the four
    scores (a module, or a function ``score(query, key) -> (..., m, n)``), mask
    broadcastable to (..., m, n).  Returns ``(context, alpha)``: context (..., m, d_v),
    alpha (..., m, n).
    """
    scores = score(query, key)  # e_{t,i} = score(s_{t-1}, h_i): (..., m, n)
    alpha = masked_softmax(scores, mask)  # alpha_{t,i} = softmax_i(e_{t,i})
    context = alpha @ value  # c_t = sum_i alpha_{t,i} h_i: (..., m, d_v)
    return context, alpha


def scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    r"""Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al., 2017).

    query Q (..., m, d_k), key K (..., n, d_k), value V (..., n, d_v), mask broadcastable
    to (..., m, n).  Returns ``(output, alpha)``: output (..., m, d_v), alpha (..., m, n).
    """
    scores = scaled_dot_score(query, key)  # Q K^T / sqrt(d_k): (..., m, n)
    alpha = masked_softmax(scores, mask)  # softmax over the keys
    return alpha @ value, alpha  # (..., m, d_v), (..., m, n)


class KVCache:
    r"""The keys and values one attention has already projected, every head: K W_i^K, V W_i^V.

    Incremental decoding keeps one per attention of each decoder layer.  Self-attention:
    K_1..K_t and V_1..V_t of the positions read so far; each step appends its own K_t, V_t
    (:meth:`append`) and never recomputes the earlier ones (they do not depend on later
    positions: the causal mask).  Cross-attention: K, V of the encoder memory, made once per
    source.  Both tensors have the batch first, so beam search can reorder them with the rest
    of a decoder state.
    """

    def __init__(self, K: Tensor, V: Tensor):
        self.K = K  # (..., h, t, d_k): K_1..K_t
        self.V = V  # (..., h, t, d_k): V_1..V_t

    def append(self, K: Tensor, V: Tensor) -> KVCache:
        """This step's K_t, V_t (..., h, 1, d_k) after the cached ones: K_1..K_t, V_1..V_t."""
        return KVCache(torch.cat([self.K, K], dim=-2), torch.cat([self.V, V], dim=-2))


class MultiHeadAttention(nn.Module):
    r"""MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The same parameters as :class:`torch.nn.MultiheadAttention` (projections with biases),
    batch first, no dropout.  ``forward(query, key, value, mask=None) -> output`` with
    query (..., m, d_model), key and value (..., n, d_model) and output (..., m, d_model);
    the weights of every head of the last call stay on the module: ``alpha`` (..., h, m, n).
    ``mask`` is boolean, True where allowed, broadcastable to (..., m, n) and shared by all
    heads: an (m, n) causal mask, or a (B, 1, n) / (B, m, n) padding mask.

    Decoding one position at a time splits ``forward`` in two: :meth:`keys_values` projects
    keys and values into a :class:`KVCache`, :meth:`attend` lets the queries attend to a
    cache; ``attend(q, keys_values(k, v), mask)`` is ``forward(q, k, v, mask)``.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        if d_model <= 0 or num_heads <= 0 or d_model % num_heads != 0:
            raise ValueError(
                f"d_model must be a positive multiple of num_heads; "
                f"got d_model={d_model}, num_heads={num_heads}"
            )
        self.d_model, self.num_heads = d_model, num_heads
        self.d_k = d_model // num_heads  # each head works in d_k = d_model / h dimensions
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.alpha: Tensor | None = None  # every head's weights of the last call: (..., h, m, n)

    def split_heads(self, x: Tensor) -> Tensor:
        """(..., T, d_model) -> (..., h, T, d_k): head i gets columns i d_k .. (i + 1) d_k."""
        return x.unflatten(-1, (self.num_heads, self.d_k)).transpose(-3, -2)

    # Written out rather than as attend(query, keys_values(key, value), mask): the lecture
    # shows this method as the four steps of multi-head attention in one place.
    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        if mask is not None and mask.dim() >= 3:
            mask = mask.unsqueeze(-3)  # the same mask for every head: (..., 1, m, n)
        query = self.split_heads(self.W_q(query))  # Q W_i^Q for every head: (..., h, m, d_k)
        key = self.split_heads(self.W_k(key))  # K W_i^K: (..., h, n, d_k)
        value = self.split_heads(self.W_v(value))  # V W_i^V: (..., h, n, d_k)
        heads, alpha = scaled_dot_product_attention(query, key, value, mask)  # (..., h, m, d_k)
        self.alpha = alpha.detach()  # kept to be read (heatmaps), not to carry gradients
        concat = heads.transpose(-3, -2).flatten(-2)  # Concat(head_1..head_h): (..., m, d_model)
        return self.W_o(concat)  # (..., m, d_model)

    def keys_values(self, key: Tensor, value: Tensor) -> KVCache:
        """K W_i^K and V W_i^V for every head: key, value (..., n, d_model) -> (..., h, n, d_k)."""
        return KVCache(self.split_heads(self.W_k(key)), self.split_heads(self.W_v(value)))

    def attend(self, query: Tensor, cache: KVCache, mask: Tensor | None = None) -> Tensor:
        """``forward`` over keys and values already projected: query (..., m, d_model) attends
        to every cached K, V (..., h, n, d_k); mask as for ``forward``; -> (..., m, d_model)."""
        if mask is not None and mask.dim() >= 3:
            mask = mask.unsqueeze(-3)  # the same mask for every head: (..., 1, m, n)
        query = self.split_heads(self.W_q(query))  # Q W_i^Q for every head: (..., h, m, d_k)
        # every head over the cached K W_i^K, V W_i^V: (..., h, m, d_k)
        heads, alpha = scaled_dot_product_attention(query, cache.K, cache.V, mask)
        self.alpha = alpha.detach()  # kept to be read (heatmaps), not to carry gradients
        concat = heads.transpose(-3, -2).flatten(-2)  # Concat(head_1..head_h): (..., m, d_model)
        return self.W_o(concat)  # (..., m, d_model)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}"


# --------------------------------------------------------------------------- positions
def positional_encoding(n: int, d: int) -> Tensor:
    r"""The sinusoidal encoding of Vaswani et al. (2017), shape (n, d).

    PE[pos, 2i] = sin(pos / 10000^{2i/d}),  PE[pos, 2i+1] = cos(pos / 10000^{2i/d}).
    """
    pos = torch.arange(n, dtype=torch.float32)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float32)  # (ceil(d/2),)
    angle = pos / torch.pow(10000.0, two_i / d)  # (n, ceil(d/2))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe
