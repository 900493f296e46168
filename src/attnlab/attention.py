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

A call with incompatible shapes or dtypes (integer tensors, two floating dtypes mixed, a
non-boolean mask) raises :class:`ValueError` naming the shapes or dtypes it got; every
function checks its inputs through one helper, :func:`check_inputs`, so each body below is
just its equation.

Late binding: :func:`attention` calls :func:`masked_softmax`, and
:class:`MultiHeadAttention` calls :func:`scaled_dot_product_attention`, through this
module's globals, so ``unittest.mock.patch.object(attnlab.attention, "masked_softmax", fn)``
swaps a student's function into every model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

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
    "check_inputs",
]

ScoreFn = Callable[[Tensor, Tensor], Tensor]


# --------------------------------------------------------------------------- input checks
def _shape(x: Tensor) -> tuple[int, ...]:
    return tuple(x.shape)


def _shapes(tensors: dict[str, Tensor]) -> str:
    return ", ".join(f"{name} {_shape(x)}" for name, x in tensors.items())


def _check_dtypes(tensors: dict[str, Tensor], weights: torch.dtype | None) -> None:
    """Tensors, floating point, all of one dtype (that of the weights, if any)."""
    for name, x in tensors.items():
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    dtypes = ", ".join(f"{name} {x.dtype}" for name, x in tensors.items())
    if not all(x.is_floating_point() for x in tensors.values()):
        raise ValueError(f"attention needs floating-point tensors; got {dtypes}")
    if len({x.dtype for x in tensors.values()}) > 1:
        raise ValueError(f"attention needs one floating dtype for all inputs; got {dtypes}")
    if weights is not None and next(iter(tensors.values())).dtype != weights:
        raise ValueError(f"inputs must have the dtype of the weights, {weights}; got {dtypes}")


def _check_mask(mask: Tensor, target: tuple[int, ...]) -> None:
    """A boolean mask that broadcasts to ``target`` (..., m, n)."""
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a boolean tensor (True = attention allowed); got dtype {mask.dtype}"
        )
    try:
        ok = torch.broadcast_shapes(mask.shape, target) == torch.Size(target)
    except RuntimeError:
        ok = False
    if not ok:
        raise ValueError(
            f"mask of shape {_shape(mask)} does not broadcast to (..., m, n) = {target}"
        )


def _check_sizes(
    tensors: dict[str, Tensor], dims: tuple[int | None, ...], same_dim: bool
) -> torch.Size:
    """(query, keys[, values]): at least 2-D, the expected last dims, one n, batches broadcast.

    Returns the broadcast batch shape."""
    xs = list(tensors.values())
    if any(x.dim() < 2 for x in xs):
        raise ValueError(
            f"need (..., m, d_q), (..., n, d_k)[, (..., n, d_v)]; got {_shapes(tensors)}"
        )
    if any(d is not None and x.shape[-1] != d for x, d in zip(xs, dims, strict=False)):
        want = ", ".join(f"(..., {'d' if d is None else d})" for d in dims)
        raise ValueError(f"expected last dimensions {want}; got {_shapes(tensors)}")
    if same_dim and xs[0].shape[-1] != xs[1].shape[-1]:
        raise ValueError(
            f"queries and keys need the same last dimension (d_q == d_k); got {_shapes(tensors)}"
        )
    if len(xs) == 3 and xs[1].shape[-2] != xs[2].shape[-2]:
        raise ValueError(f"keys and values need the same length n; got {_shapes(tensors)}")
    try:
        return torch.broadcast_shapes(*(x.shape[:-2] for x in xs))
    except RuntimeError:
        raise ValueError(f"batch dimensions do not broadcast: {_shapes(tensors)}") from None


def check_inputs(
    mask: Tensor | None = None,
    dims: tuple[int | None, ...] = (),
    same_dim: bool = False,
    weights: torch.dtype | None = None,
    **tensors: Tensor,
) -> None:
    """The one input check of this module; a clear ValueError (TypeError for non-tensors).

    ``tensors`` by name: one tensor (scores, ``(..., m, n)``), or queries, keys and
    optionally values (``(..., m, d_q)``, ``(..., n, d_k)``, ``(..., n, d_v)``).  All must be
    floating point of one dtype; ``dims`` gives expected last dimensions (None: any);
    ``same_dim`` requires d_q == d_k; ``mask`` must be boolean and broadcast to (..., m, n);
    ``weights``: the dtype of a module's parameters, which the inputs must share.
    """
    _check_dtypes(tensors, weights)
    xs = list(tensors.values())
    if len(xs) == 1:  # scores (..., m, n)
        if xs[0].dim() < 1:
            raise ValueError(f"scores must have at least one dimension; got {_shapes(tensors)}")
        target = _shape(xs[0])
    else:
        batch = _check_sizes(tensors, dims, same_dim)
        target = (*batch, xs[0].shape[-2], xs[1].shape[-2])
    if mask is not None:
        _check_mask(mask, target)


# --------------------------------------------------------------------------- score functions
def dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(s, h) = s^T h for every query/key pair.

    query (..., m, d), keys (..., n, d) -> scores (..., m, n).
    """
    check_inputs(same_dim=True, query=query, keys=keys)
    return query @ keys.transpose(-2, -1)  # (..., m, d) @ (..., d, n) = (..., m, n)


def scaled_dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(q, k) = q^T k / sqrt(d_k): the Transformer's score (the only copy of it).

    Dividing by sqrt(d_k) keeps the variance of the scores near 1 whatever d_k is, so the
    softmax does not saturate (see the ScaledDotExplorer widget).
    query (..., m, d_k), keys (..., n, d_k) -> scores (..., m, n).
    """
    check_inputs(same_dim=True, query=query, keys=keys)
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
        check_inputs(dims=(self.d_q, self.d_k), weights=self.W_a.dtype, query=query, keys=keys)
        # s^T W_a h  =  (s^T W_a) h:  (..., m, d_q) @ (d_q, d_k) @ (..., d_k, n) = (..., m, n)
        return (query @ self.W_a) @ keys.transpose(-2, -1)

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

    def precompute(self, keys: Tensor) -> Tensor:
        """U h_i for every key: keys (..., n, d_k) -> (..., n, d_attn)."""
        return self.U(keys)

    def forward(self, query: Tensor, keys: Tensor, Uh: Tensor | None = None) -> Tensor:
        """query (..., m, d_q), keys (..., n, d_k) -> scores (..., m, n); ``Uh`` from
        :meth:`precompute` (these keys) saves recomputing U h_i."""
        check_inputs(dims=(self.d_q, self.d_k), weights=self.W.weight.dtype, query=query, keys=keys)
        Ws = self.W(query).unsqueeze(-2)  # W s: (..., m, 1, d_attn)
        Uh = (self.U(keys) if Uh is None else Uh).unsqueeze(-3)  # U h_i: (..., 1, n, d_attn)
        return self.v(torch.tanh(Ws + Uh)).squeeze(-1)  # v^T tanh(W s + U h_i): (..., m, n)

    def extra_repr(self) -> str:
        return f"d_q={self.d_q}, d_k={self.d_k}, d_attn={self.d_attn}"


#: The four interchangeable scores by name (used by the models, the widgets and the deck).
SCORES = ("dot", "scaled_dot", "general", "additive")


def make_score(name: str, d_q: int, d_k: int, d_attn: int | None = None) -> nn.Module:
    """Build one of the four scores by name: "dot", "scaled_dot", "general", "additive"."""
    if name in ("dot", "scaled_dot") and d_q != d_k:
        raise ValueError(f"the {name!r} score needs d_q == d_k; got d_q={d_q}, d_k={d_k}")
    builders = {
        "dot": DotScore,
        "scaled_dot": ScaledDotScore,
        "general": partial(GeneralScore, d_q, d_k),
        "additive": partial(AdditiveScore, d_q, d_k, d_attn or d_k),
    }
    if name not in builders:
        raise ValueError(f"unknown score {name!r}; choose one of {', '.join(SCORES)}")
    return builders[name]()


# --------------------------------------------------------------------------- softmax and masks
def masked_softmax(scores: Tensor, mask: Tensor | None = None) -> Tensor:
    r"""alpha_{t,i} = exp(score_{t,i}) / sum_{i' allowed} exp(score_{t,i'}) over the last dim.

    scores (..., m, n); mask bool, broadcastable to (..., m, n), True where allowed.
    Masked positions get exactly 0.  A row where nothing is allowed is all zeros (never NaN).
    Numerically stable: the row maximum is subtracted first, so scores of 1e4 are fine.
    """
    check_inputs(mask=mask, scores=scores)
    if mask is None:
        return torch.softmax(scores, dim=-1)
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
def _score_fn(score: ScoreFn | str) -> ScoreFn:
    """A score given by name ("dot", "scaled_dot") as its function; callables unchanged."""
    if not isinstance(score, str):
        return score
    if score not in ("dot", "scaled_dot"):
        raise ValueError(
            f"score by name must be 'dot' or 'scaled_dot' (the others have weights: "
            f"pass GeneralScore(...) or AdditiveScore(...)); got {score!r}"
        )
    return dot_score if score == "dot" else scaled_dot_score


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
    check_inputs(mask=mask, query=query, keys=keys, values=values)
    scores = _score_fn(score)(query, keys)  # e_{t,i} = score(s_t, h_i): (..., m, n)
    alpha = masked_softmax(scores, mask)  # alpha_{t,i} = softmax_i(e_{t,i})
    context = alpha @ values  # c_t = sum_i alpha_{t,i} h_i: (..., m, d_v)
    return context, alpha


def scaled_dot_product_attention(
    Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    r"""Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k)) V  (Vaswani et al., 2017).

    Q (..., m, d_k), K (..., n, d_k), V (..., n, d_v), mask broadcastable to (..., m, n).
    Returns ``(output, weights)``: output (..., m, d_v), weights (..., m, n).
    """
    check_inputs(mask=mask, same_dim=True, Q=Q, K=K, V=V)
    scores = scaled_dot_score(Q, K)  # Q K^T / sqrt(d_k): (..., m, n)
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
        d = self.d_model
        dtype = self.W_q.weight.dtype
        check_inputs(mask=mask, dims=(d, d, d), weights=dtype, query=query, key=key, value=value)
        if mask is not None and mask.dim() >= 3:
            mask = mask.unsqueeze(-3)  # the same mask for every head: (..., 1, m, n)
        Q = self._split_heads(self.W_q(query))  # Q W_i^Q for every head: (..., h, m, d_k)
        K = self._split_heads(self.W_k(key))  # K W_i^K: (..., h, n, d_k)
        V = self._split_heads(self.W_v(value))  # V W_i^V: (..., h, n, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # head_i: (..., h, m, d_k)
        if self.training and self.dropout.p > 0:  # like torch: drop weights, not the output
            heads = self.dropout(weights) @ V
        concat = heads.transpose(-3, -2).flatten(-2)  # Concat(head_1..head_h): (..., m, d_model)
        return self.W_o(concat), weights  # (..., m, d_model), (..., h, m, n)

    @classmethod
    def from_torch(cls, twin: nn.MultiheadAttention) -> MultiHeadAttention:
        """The same layer as a ``torch.nn.MultiheadAttention``, weights copied, same mode.

        torch stacks W_q, W_k, W_v into ``in_proj_weight`` (3 d_model, d_model); both compute
        y = x W^T + b, so the copies give the same outputs and the same per-head weights.
        Refuses (ValueError) what this layer cannot hold: ``add_bias_kv``,
        ``add_zero_attn``, ``kdim``/``vdim`` other than ``embed_dim``, missing biases.
        """
        _check_copyable(twin)
        mha = cls(twin.embed_dim, twin.num_heads, dropout=twin.dropout)
        w_q, w_k, w_v = twin.in_proj_weight.detach().chunk(3)  # each (d_model, d_model)
        b_q, b_k, b_v = twin.in_proj_bias.detach().chunk(3)
        with torch.no_grad():
            for layer, w, b in ((mha.W_q, w_q, b_q), (mha.W_k, w_k, b_k), (mha.W_v, w_v, b_v)):
                layer.weight.copy_(w)
                layer.bias.copy_(b)
            mha.W_o.weight.copy_(twin.out_proj.weight)
            mha.W_o.bias.copy_(twin.out_proj.bias)
        return mha.train(twin.training)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}"


def _check_copyable(twin: object) -> None:
    """ValueError naming what a torch.nn.MultiheadAttention has that MultiHeadAttention lacks."""
    if not isinstance(twin, nn.MultiheadAttention):
        raise TypeError(
            f"from_torch needs a torch.nn.MultiheadAttention, got {type(twin).__name__}"
        )
    problems = [
        ("add_bias_kv=True (bias_k, bias_v)", twin.bias_k is not None),
        ("add_zero_attn=True", twin.add_zero_attn),
        (
            f"kdim={twin.kdim}, vdim={twin.vdim} != embed_dim={twin.embed_dim}",
            not twin._qkv_same_embed_dim,
        ),
        ("bias=False", twin.in_proj_bias is None or twin.out_proj.bias is None),
    ]
    found = [what for what, bad in problems if bad]
    if found:
        raise ValueError(f"from_torch cannot copy a MultiheadAttention with {'; '.join(found)}")


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
