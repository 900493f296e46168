r"""The attention core: scores, masked softmax, attention, multi-head attention.

Everything in the lecture is built from the functions in this file, written with the
lecture's symbols.

Conventions
-----------
* Batch dimensions come first and may be any number (including none): ``...``.
* Queries have shape ``(..., m, d_q)``: ``m`` query vectors (the decoder states
  :math:`s_{t-1}` in Bahdanau attention, the rows of :math:`Q` in the Transformer).
* Keys have shape ``(..., n, d_k)``: ``n`` key vectors (the encoder states :math:`h_i`,
  the rows of :math:`K`).
* Values have shape ``(..., n, d_v)``: one value per key (:math:`h_i` again in Bahdanau
  attention, the rows of :math:`V` in the Transformer).
* Scores and attention weights :math:`\alpha` have shape ``(..., m, n)``: row ``t`` holds
  :math:`\alpha_{t,1..n}`, the weights query ``t`` gives to the ``n`` keys.
* A mask is a **boolean** tensor broadcastable to ``(..., m, n)`` that is ``True`` where
  attention is allowed and ``False`` where it is forbidden (the convention of
  :func:`torch.nn.functional.scaled_dot_product_attention`).

A call with incompatible shapes raises :class:`ValueError` naming the shapes it got.
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
    "attention",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "MultiHeadAttention",
    "positional_encoding",
]

ScoreFn = Callable[[Tensor, Tensor], Tensor]


# --------------------------------------------------------------------------- shape checks
def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def _require_tensor(name: str, x: object) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def _check_query_keys(query: Tensor, keys: Tensor, same_dim: bool = True) -> None:
    """Queries (..., m, d_q) and keys (..., n, d_k) with broadcastable batch dimensions."""
    _require_tensor("query", query)
    _require_tensor("keys", keys)
    if query.dim() < 2 or keys.dim() < 2:
        raise ValueError(
            f"query must be (..., m, d_q) and keys (..., n, d_k), at least 2-D each; "
            f"got query {_shape(query)} and keys {_shape(keys)}"
        )
    if same_dim and query.shape[-1] != keys.shape[-1]:
        raise ValueError(
            f"query and keys must have the same last dimension (d_q == d_k); "
            f"got query {_shape(query)} and keys {_shape(keys)}"
        )
    try:
        torch.broadcast_shapes(query.shape[:-2], keys.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions of query {_shape(query)} and keys {_shape(keys)} do not broadcast"
        ) from None


# --------------------------------------------------------------------------- score functions
def dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(s, h) = s^T h for every query/key pair.

    query (..., m, d), keys (..., n, d) -> scores (..., m, n).
    """
    _check_query_keys(query, keys)
    return query @ keys.transpose(-2, -1)  # (..., m, d) @ (..., d, n) = (..., m, n)


def scaled_dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(q, k) = q^T k / sqrt(d_k): the Transformer's score.

    Dividing by sqrt(d_k) keeps the variance of the scores near 1 whatever d_k is, so the
    softmax does not saturate (see the ScaledDotExplorer widget).
    query (..., m, d_k), keys (..., n, d_k) -> scores (..., m, n).
    """
    _check_query_keys(query, keys)
    d_k = keys.shape[-1]
    # QK^T / sqrt(d_k) = (Q / sqrt(d_k)) K^T: scaling Q costs m*d_k operations, not m*n.
    return (query / math.sqrt(d_k)) @ keys.transpose(-2, -1)  # (..., m, n)


class DotScore(nn.Module):
    """Module form of :func:`dot_score` (no parameters)."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        return dot_score(query, keys)


class ScaledDotScore(nn.Module):
    """Module form of :func:`scaled_dot_score` (no parameters)."""

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        return scaled_dot_score(query, keys)


class GeneralScore(nn.Module):
    r"""Luong's "general" score: score(s_t, h_i) = s_t^T W_a h_i (the seed's formula).

    W_a has shape (d_q, d_k), so queries and keys may have different sizes.
    """

    def __init__(self, d_q: int, d_k: int):
        super().__init__()
        self.d_q, self.d_k = d_q, d_k
        self.W_a = nn.Parameter(torch.empty(d_q, d_k))
        nn.init.xavier_uniform_(self.W_a)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        _check_query_keys(query, keys, same_dim=False)
        if query.shape[-1] != self.d_q or keys.shape[-1] != self.d_k:
            raise ValueError(
                f"GeneralScore expects query (..., m, {self.d_q}) and keys (..., n, {self.d_k}); "
                f"got query {_shape(query)} and keys {_shape(keys)}"
            )
        # s^T W_a h  =  (s^T W_a) h:  (..., m, d_q) @ (d_q, d_k) @ (..., d_k, n) = (..., m, n)
        return (query @ self.W_a) @ keys.transpose(-2, -1)

    def extra_repr(self) -> str:
        return f"d_q={self.d_q}, d_k={self.d_k}"


class AdditiveScore(nn.Module):
    r"""Bahdanau's additive score: score(s, h_i) = v^T tanh(W s + U h_i).

    A one-hidden-layer network of width d_attn applied to every (query, key) pair.
    """

    def __init__(self, d_q: int, d_k: int, d_attn: int):
        super().__init__()
        self.d_q, self.d_k, self.d_attn = d_q, d_k, d_attn
        self.W = nn.Linear(d_q, d_attn, bias=False)
        self.U = nn.Linear(d_k, d_attn, bias=True)
        self.v = nn.Linear(d_attn, 1, bias=False)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
        _check_query_keys(query, keys, same_dim=False)
        if query.shape[-1] != self.d_q or keys.shape[-1] != self.d_k:
            raise ValueError(
                f"AdditiveScore expects query (..., m, {self.d_q}) and keys "
                f"(..., n, {self.d_k}); got query {_shape(query)} and keys {_shape(keys)}"
            )
        Ws = self.W(query).unsqueeze(-2)  # (..., m, 1, d_attn)
        Uh = self.U(keys).unsqueeze(-3)  # (..., 1, n, d_attn)
        return self.v(torch.tanh(Ws + Uh)).squeeze(-1)  # v^T tanh(W s + U h): (..., m, n)

    def extra_repr(self) -> str:
        return f"d_q={self.d_q}, d_k={self.d_k}, d_attn={self.d_attn}"


#: The four interchangeable scores by name (used by the models, the widgets and the deck).
SCORES = ("dot", "scaled_dot", "general", "additive")


def make_score(name: str, d_q: int, d_k: int, d_attn: int | None = None) -> nn.Module:
    """Build one of the four scores by name: "dot", "scaled_dot", "general", "additive"."""
    if name in ("dot", "scaled_dot") and d_q != d_k:
        raise ValueError(f"the {name!r} score needs d_q == d_k; got d_q={d_q}, d_k={d_k}")
    if name == "dot":
        return DotScore()
    if name == "scaled_dot":
        return ScaledDotScore()
    if name == "general":
        return GeneralScore(d_q, d_k)
    if name == "additive":
        return AdditiveScore(d_q, d_k, d_attn or d_k)
    raise ValueError(f"unknown score {name!r}; choose one of {', '.join(SCORES)}")


# --------------------------------------------------------------------------- softmax and masks
def _check_mask(mask: Tensor, target_shape: torch.Size, what: str = "scores") -> None:
    _require_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a boolean tensor (True = attention allowed); got dtype {mask.dtype}"
        )
    try:
        ok = torch.broadcast_shapes(mask.shape, target_shape) == target_shape
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask of shape {_shape(mask)} does not broadcast to {what} of shape "
            f"{tuple(target_shape)}"
        )


def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    r"""alpha_{t,i} = exp(score_{t,i}) / sum_{i' allowed} exp(score_{t,i'}) over the last dim.

    scores (..., m, n); mask bool, broadcastable to (..., m, n), True where allowed.
    Masked positions get exactly 0.  A row where nothing is allowed is all zeros (never NaN).
    Numerically stable: the row maximum is subtracted first, so scores of 1e4 are fine.
    """
    _require_tensor("scores", scores)
    if scores.dim() < 1:
        raise ValueError(f"scores must have at least one dimension; got shape {_shape(scores)}")
    if mask is None:
        return torch.softmax(scores, dim=-1)
    _check_mask(mask, scores.shape)
    # Forbidden scores -> the most negative float, so exp(score - row max) underflows to 0.
    # (Not -inf: a row with nothing allowed would give exp(-inf - -inf) = NaN.)
    lowest = torch.finfo(scores.dtype).min
    alpha = torch.softmax(torch.where(mask, scores, lowest), dim=-1)  # stable: max subtracted
    # Exactly 0 where forbidden; a row with nothing allowed (uniform above) becomes all 0.
    return torch.where(mask, alpha, 0.0)


def causal_mask(n: int, device: torch.device | str | None = None) -> Tensor:
    """(n, n) boolean mask, True on and below the diagonal: position t sees 1..t, never the future."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"causal_mask needs a non-negative int n; got {n!r}")
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def padding_mask(lengths: Tensor | list[int], n: int) -> Tensor:
    """(B, n) boolean mask, True at the real tokens of each sequence, False at padding.

    ``lengths`` holds B sequence lengths (each 0..n).  To mask keys for scores of shape
    (B, m, n) use ``padding_mask(lengths, n)[:, None, :]`` (shape (B, 1, n)).
    """
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise ValueError(f"padding_mask needs a non-negative int n; got {n!r}")
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {_shape(lengths)}")
    if lengths.numel() and (lengths.is_floating_point() or lengths.is_complex()):
        raise ValueError(f"lengths must be integers; got {lengths.tolist()}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > n):
        raise ValueError(f"lengths must lie in 0..{n}; got {lengths.tolist()}")
    positions = torch.arange(n, device=lengths.device)  # (n,)
    return positions[None, :] < lengths[:, None]  # (B, n)


# --------------------------------------------------------------------------- attention
def attention(
    query: Tensor,
    keys: Tensor,
    values: Tensor,
    score: ScoreFn | str = "dot",
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""General attention: c_t = sum_i alpha_{t,i} h_i with alpha = softmax(score(s, h)).

    query (..., m, d_q), keys (..., n, d_k), values (..., n, d_v), ``score`` any of the four
    scores (a module, a function ``score(query, keys) -> (..., m, n)``, or its name for the
    parameter-free "dot" and "scaled_dot"), mask broadcastable to (..., m, n).
    Returns ``(context, alpha)``: context (..., m, d_v), alpha (..., m, n).
    """
    _require_tensor("values", values)
    _check_query_keys(query, keys, same_dim=False)
    if values.dim() < 2 or values.shape[-2] != keys.shape[-2]:
        raise ValueError(
            f"values must be (..., n, d_v) with the same n as keys; "
            f"got keys {_shape(keys)} and values {_shape(values)}"
        )
    try:
        torch.broadcast_shapes(query.shape[:-2], keys.shape[:-2], values.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions do not broadcast: query {_shape(query)}, keys {_shape(keys)}, "
            f"values {_shape(values)}"
        ) from None
    if isinstance(score, str):
        if score not in ("dot", "scaled_dot"):
            raise ValueError(
                f"score by name must be 'dot' or 'scaled_dot' (the others have weights: "
                f"pass GeneralScore(...) or AdditiveScore(...)); got {score!r}"
            )
        score = dot_score if score == "dot" else scaled_dot_score
    scores = score(query, keys)  # (..., m, n)
    alpha = masked_softmax(scores, mask)  # alpha_{t,i}, rows sum to 1 over allowed keys
    context = alpha @ values  # c_t = sum_i alpha_{t,i} h_i: (..., m, d_v)
    return context, alpha


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    r"""Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al., 2017).

    Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v), mask broadcastable to (..., m, n).
    Returns ``(output, weights)``: output (..., m, d_v), weights (..., m, n).
    """
    for name, x in (("Q", Q), ("K", K), ("V", V)):
        _require_tensor(name, x)
    if Q.dim() < 2 or K.dim() < 2 or V.dim() < 2:
        raise ValueError(
            f"Q, K, V must be at least 2-D; got Q {_shape(Q)}, K {_shape(K)}, V {_shape(V)}"
        )
    if Q.shape[-1] != K.shape[-1] or K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"need Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v); "
            f"got Q {_shape(Q)}, K {_shape(K)}, V {_shape(V)}"
        )
    try:
        torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"batch dimensions do not broadcast: Q {_shape(Q)}, K {_shape(K)}, V {_shape(V)}"
        ) from None
    d_k = Q.shape[-1]
    # QK^T / sqrt(d_k) = (Q / sqrt(d_k)) K^T: scaling Q costs m*d_k operations, not m*n.
    scores = (Q / math.sqrt(d_k)) @ K.transpose(-2, -1)  # (..., m, n)
    weights = masked_softmax(scores, mask)  # softmax over the keys
    return weights @ V, weights  # (..., m, d_v), (..., m, n)


class MultiHeadAttention(nn.Module):
    r"""MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The same parameters as :class:`torch.nn.MultiheadAttention` (projections with biases),
    batch first.  ``forward(query, key, value, mask=None) -> (output, weights)`` with
    query (..., m, d_model), key and value (..., n, d_model); output (..., m, d_model) and
    the weights of every head (..., num_heads, m, n).  ``mask`` is boolean, True where
    allowed, broadcastable to (..., m, n) and shared by all heads: an (m, n) causal mask,
    or a (B, 1, n) / (B, m, n) padding mask.  ``dropout`` (default 0) applies to the
    attention weights in training mode, like torch's.
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0):
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
        self.dropout = nn.Dropout(dropout)

    def _split_heads(self, x: Tensor) -> Tensor:
        # (..., T, d_model) -> (..., h, T, d_k)
        return x.unflatten(-1, (self.num_heads, self.d_k)).transpose(-3, -2)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        for name, x in (("query", query), ("key", key), ("value", value)):
            _require_tensor(name, x)
            if x.dim() < 2 or x.shape[-1] != self.d_model:
                raise ValueError(
                    f"MultiHeadAttention(d_model={self.d_model}) needs query (..., m, "
                    f"{self.d_model}), key and value (..., n, {self.d_model}); got query "
                    f"{_shape(query)}, key {_shape(key)}, value {_shape(value)}"
                )
        if key.shape[-2] != value.shape[-2]:
            raise ValueError(
                f"key and value must have the same length n; got query {_shape(query)}, "
                f"key {_shape(key)}, value {_shape(value)}"
            )
        try:
            batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])
        except RuntimeError:
            raise ValueError(
                f"batch dimensions do not broadcast: query {_shape(query)}, key {_shape(key)}, "
                f"value {_shape(value)}"
            ) from None
        m, n = query.shape[-2], key.shape[-2]
        if mask is not None:
            _check_mask(mask, torch.Size((*batch, m, n)), what="(..., m, n)")
            if mask.dim() >= 3:
                mask = mask.unsqueeze(-3)  # the same mask for every head: (..., 1, m, n)
        Q = self._split_heads(self.W_q(query))  # (..., h, m, d_k)
        K = self._split_heads(self.W_k(key))  # (..., h, n, d_k)
        V = self._split_heads(self.W_v(value))  # (..., h, n, d_k)
        # head_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i, all heads at once.  Dropout (training
        # only) drops attention weights, as torch.nn.MultiheadAttention does; the returned
        # weights are the softmax itself.
        scores = scaled_dot_score(Q, K)  # (..., h, m, n)
        weights = masked_softmax(scores, mask)  # alpha of every head: (..., h, m, n)
        heads = self.dropout(weights) @ V  # (..., h, m, d_k)
        concat = heads.transpose(-3, -2).flatten(-2)  # Concat(head_1..head_h): (..., m, d_model)
        return self.W_o(concat), weights  # (..., m, d_model), (..., h, m, n)

    @classmethod
    def from_torch(cls, twin: nn.MultiheadAttention) -> MultiHeadAttention:
        """The same layer as a ``torch.nn.MultiheadAttention`` (with biases), weights copied.

        torch stacks W_q, W_k, W_v into ``in_proj_weight`` (3 d_model, d_model); both compute
        y = x W^T + b, so the copies give the same outputs and the same per-head weights.
        """
        if twin.in_proj_weight is None or twin.in_proj_bias is None:
            raise ValueError("from_torch needs a MultiheadAttention with in_proj_weight and bias")
        mha = cls(twin.embed_dim, twin.num_heads, dropout=twin.dropout)
        w_q, w_k, w_v = twin.in_proj_weight.detach().chunk(3)  # each (d_model, d_model)
        b_q, b_k, b_v = twin.in_proj_bias.detach().chunk(3)
        with torch.no_grad():
            for layer, w, b in ((mha.W_q, w_q, b_q), (mha.W_k, w_k, b_k), (mha.W_v, w_v, b_v)):
                layer.weight.copy_(w)
                layer.bias.copy_(b)
            mha.W_o.weight.copy_(twin.out_proj.weight)
            mha.W_o.bias.copy_(twin.out_proj.bias)
        return mha

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}"


# --------------------------------------------------------------------------- positions
def positional_encoding(n: int, d: int) -> Tensor:
    r"""The sinusoidal encoding of Vaswani et al. (2017), shape (n, d).

    PE[pos, 2i] = sin(pos / 10000^{2i/d}),  PE[pos, 2i+1] = cos(pos / 10000^{2i/d}).
    """
    if not isinstance(n, int) or not isinstance(d, int) or n < 0 or d <= 0:
        raise ValueError(f"positional_encoding needs ints n >= 0 and d > 0; got n={n!r}, d={d!r}")
    pos = torch.arange(n, dtype=torch.float32)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float32)  # (ceil(d/2),)
    angle = pos / torch.pow(10000.0, two_i / d)  # (n, ceil(d/2))
    pe = torch.zeros(n, d)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe
