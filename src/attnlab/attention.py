r"""The attention core: scores, masked softmax, attention, multi-head attention.

Everything in the lecture is built from the functions in this file, written with the
lecture's symbols: each body is its equation.

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

Input checks live below the equations (section "entry points"): every public function and
``forward`` is wrapped there by :func:`entry_point`, which checks a call from outside once (a
call from one of these functions to another is not checked again).  Incompatible shapes or
dtypes (integer tensors, two floating dtypes mixed, a non-boolean mask) raise a one-line
:class:`ValueError` naming the shapes or dtypes it got; a non-tensor a :class:`TypeError`.

Late binding: :func:`attention` and :func:`scaled_dot_product_attention` call
:func:`masked_softmax`, and :class:`MultiHeadAttention` calls
:func:`scaled_dot_product_attention`, through this module's globals, so
``unittest.mock.patch.object(attnlab.attention, "masked_softmax", fn)`` swaps a student's
function into every model.
"""

from __future__ import annotations

import functools
import math
import threading
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
    "entry_point",
]

ScoreFn = Callable[[Tensor, Tensor], Tensor]


# --------------------------------------------------------------------------- score functions
def dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(s, h) = s^T h for every query/key pair.

    query (..., m, d), keys (..., n, d) -> scores (..., m, n).
    """
    return query @ keys.transpose(-2, -1)  # (..., m, d) @ (..., d, n) = (..., m, n)


def scaled_dot_score(query: Tensor, keys: Tensor) -> Tensor:
    r"""score(q, k) = q^T k / sqrt(d_k): the Transformer's score (the only copy of it).

    Dividing by sqrt(d_k) keeps the variance of the scores near 1 whatever d_k is, so the
    softmax does not saturate (see the ScaledDotExplorer widget).
    query (..., m, d_k), keys (..., n, d_k) -> scores (..., m, n).
    """
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
    r"""Luong's "general" score: score(s_{t-1}, h_i) = s_{t-1}^T W_a h_i (the seed's formula).

    W_a has shape (d_q, d_k), so queries and keys may have different sizes.
    """

    def __init__(self, d_q: int, d_k: int):
        super().__init__()
        self.d_q, self.d_k = d_q, d_k
        self.W_a = nn.Parameter(torch.empty(d_q, d_k))
        nn.init.xavier_uniform_(self.W_a)

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:
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
        Ws = self.W(query).unsqueeze(-2)  # W s: (..., m, 1, d_attn)
        Uh = (self.U(keys) if Uh is None else Uh).unsqueeze(-3)  # U h_i: (..., 1, n, d_attn)
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
    """Build one of the four scores of :data:`SCORES` by name ("additive": d_attn = d_k unless given)."""
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
    # Forbidden scores -> the most negative float, so exp(score - row max) underflows to 0.
    # (Not -inf: a row with nothing allowed would give exp(-inf - -inf) = NaN.)
    lowest = torch.finfo(scores.dtype).min
    alpha = torch.softmax(torch.where(mask, scores, lowest), dim=-1)  # stable: max subtracted
    # Exactly 0 where forbidden; a row with nothing allowed (uniform above) becomes all 0.
    return torch.where(mask, alpha, 0.0)


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
    keys: Tensor,
    values: Tensor,
    score: ScoreFn | str = dot_score,
    mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""General attention: c_t = sum_i alpha_{t,i} h_i with alpha = softmax(score(s, h)).

    query (..., m, d_q), keys (..., n, d_k), values (..., n, d_v), ``score`` any of the four
    scores (a module, a function ``score(query, keys) -> (..., m, n)``, or the name of a
    parameter-free one: "dot", "scaled_dot"), mask broadcastable to (..., m, n).
    Returns ``(context, alpha)``: context (..., m, d_v), alpha (..., m, n).
    """
    scores = score(query, keys)  # e_{t,i} = score(s_{t-1}, h_i): (..., m, n)
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
    scores = scaled_dot_score(Q, K)  # Q K^T / sqrt(d_k): (..., m, n)
    weights = masked_softmax(scores, mask)  # softmax over the keys
    return weights @ V, weights  # (..., m, d_v), (..., m, n)


class MultiHeadAttention(nn.Module):
    r"""MultiHead(Q, K, V) = Concat(head_1..head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    The same parameters as :class:`torch.nn.MultiheadAttention` (projections with biases),
    batch first, no dropout.  ``forward(query, key, value, mask=None) -> output`` with
    query (..., m, d_model), key and value (..., n, d_model) and output (..., m, d_model);
    the weights of every head of the last call stay on the module: ``attn`` (..., h, m, n).
    ``mask`` is boolean, True where allowed, broadcastable to (..., m, n) and shared by all
    heads: an (m, n) causal mask, or a (B, 1, n) / (B, m, n) padding mask.
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
        self.attn: Tensor | None = None  # the weights of the last call: (..., h, m, n)

    def split_heads(self, x: Tensor) -> Tensor:
        """(..., T, d_model) -> (..., h, T, d_k): head i gets columns i d_k .. (i + 1) d_k."""
        return x.unflatten(-1, (self.num_heads, self.d_k)).transpose(-3, -2)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> Tensor:
        if mask is not None and mask.dim() >= 3:
            mask = mask.unsqueeze(-3)  # the same mask for every head: (..., 1, m, n)
        Q = self.split_heads(self.W_q(query))  # Q W_i^Q for every head: (..., h, m, d_k)
        K = self.split_heads(self.W_k(key))  # K W_i^K: (..., h, n, d_k)
        V = self.split_heads(self.W_v(value))  # V W_i^V: (..., h, n, d_k)
        heads, weights = scaled_dot_product_attention(Q, K, V, mask)  # head_i: (..., h, m, d_k)
        self.attn = weights.detach()  # kept to be read (heatmaps), not to carry gradients
        concat = heads.transpose(-3, -2).flatten(-2)  # Concat(head_1..head_h): (..., m, d_model)
        return self.W_o(concat)  # (..., m, d_model)

    @property
    def weights(self) -> Tensor | None:
        """The same as :attr:`attn`: every head's weights of the last call (..., h, m, n)."""
        return self.attn

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


# =========================================================================== entry points
# Below the equations: the input checks.  Each public function (and each ``forward``) is
# replaced at the end of this file by ``entry_point(fn, args)``: ``args`` takes fn's arguments,
# raises a one-line ValueError (TypeError for a non-tensor) for bad ones, and returns them
# ready for fn.  A call from inside another checked call is not checked again (MultiHead ->
# scaled_dot_product_attention -> scaled_dot_score -> masked_softmax: one check, not four).
class _State(threading.local):
    inside = False  # True while a checked call runs in this thread


_state = _State()


def entry_point(fn: Callable, args: Callable[..., tuple]) -> Callable:
    """``fn`` whose calls from outside first go through ``args(*a, **kw) -> a'`` (its check).

    ``inspect.unwrap`` (and so the deck's ``show_source``) gives back the plain ``fn``.
    """

    @functools.wraps(fn)
    def entry(*a, **kw):
        if _state.inside:  # called by a checked function: checked already
            return fn(*a, **kw)
        a = args(*a, **kw)
        _state.inside = True
        try:
            return fn(*a)
        finally:
            _state.inside = False

    return entry


def _shapes(tensors: dict[str, Tensor]) -> str:
    return ", ".join(f"{name} {tuple(x.shape)}" for name, x in tensors.items())


def _check_dtypes(tensors: dict[str, Tensor], weights: torch.dtype | None = None) -> None:
    """Tensors, floating point, all of one dtype (that of the weights, if any)."""
    for name, x in tensors.items():
        if not isinstance(x, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    dtype = next(iter(tensors.values())).dtype
    same = all(x.dtype == dtype for x in tensors.values())
    if same and dtype.is_floating_point and weights in (None, dtype):
        return
    dtypes = ", ".join(f"{name} {x.dtype}" for name, x in tensors.items())
    if not all(x.is_floating_point() for x in tensors.values()):
        raise ValueError(f"attention needs floating-point tensors; got {dtypes}")
    if not same:
        raise ValueError(f"attention needs one floating dtype for all inputs; got {dtypes}")
    raise ValueError(f"inputs must have the dtype of the weights, {weights}; got {dtypes}")


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """The broadcast shape of ``a`` and ``b`` (numpy's rule), or None where they clash."""
    if a == b:
        return a
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _check_mask(mask: Tensor | None, target: tuple[int, ...]) -> None:
    """None, or a boolean mask that broadcasts to ``target`` (..., m, n)."""
    if mask is None:
        return
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a boolean tensor (True = attention allowed); got dtype {mask.dtype}"
        )
    shape = tuple(mask.shape)
    if shape != target[len(target) - len(shape) :] and _broadcast(shape, target) != target:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to (..., m, n) = {target}"
        )


def _check_sizes(
    tensors: dict[str, Tensor], dims: tuple[int | None, ...] = (), same_dim: bool = False
) -> tuple[int, ...]:
    """(query, keys[, values]): at least 2-D, the expected last dims, one n, batches broadcast.

    Returns the shape of the scores, (..., m, n)."""
    shapes = [x.shape for x in tensors.values()]  # torch.Size: a tuple
    q, k, v = shapes[0], shapes[1], shapes[-1]
    usual = len(q) >= 2 and len(k) >= 2 and len(v) >= 2 and k[-2] == v[-2]  # one n
    usual = usual and q[:-2] == k[:-2] == v[:-2] and (not same_dim or q[-1] == k[-1])
    if usual and (
        not dims or all(d is None or s[-1] == d for s, d in zip(shapes, dims, strict=False))
    ):
        return (*q[:-2], q[-2], k[-2])  # the usual call: one batch shape, sizes right
    if any(len(s) < 2 for s in shapes):
        raise ValueError(
            f"need (..., m, d_q), (..., n, d_k)[, (..., n, d_v)]; got {_shapes(tensors)}"
        )
    if any(d is not None and s[-1] != d for s, d in zip(shapes, dims, strict=False)):
        want = ", ".join(f"(..., {'d' if d is None else d})" for d in dims)
        raise ValueError(f"expected last dimensions {want}; got {_shapes(tensors)}")
    if same_dim and q[-1] != k[-1]:
        raise ValueError(
            f"queries and keys need the same last dimension (d_q == d_k); got {_shapes(tensors)}"
        )
    if k[-2] != v[-2]:
        raise ValueError(f"keys and values need the same length n; got {_shapes(tensors)}")
    batch: tuple[int, ...] | None = q[:-2]
    for s in shapes[1:]:
        batch = None if batch is None else _broadcast(batch, s[:-2])
    if batch is None:
        raise ValueError(f"batch dimensions do not broadcast: {_shapes(tensors)}")
    return (*batch, q[-2], k[-2])


def _check_score(score: object, query: Tensor, keys: Tensor) -> None:
    """The checks of a score of this module on (query, keys); other callables: none here."""
    score = score.func if isinstance(score, functools.partial) else score  # Uh=... bound
    if score in _SCORE_FNS or isinstance(score, (DotScore, ScaledDotScore)):
        _check_sizes({"query": query, "keys": keys}, same_dim=True)
    elif isinstance(score, GeneralScore):
        _general_args(score, query, keys)
    elif isinstance(score, AdditiveScore):
        _additive_args(score, query, keys)


def _as_score(score: object, query: Tensor, keys: Tensor) -> ScoreFn:
    """``score`` as given if callable; by name through :data:`SCORES` (weightless ones only)."""
    if not isinstance(score, str):
        if not callable(score):
            raise TypeError(f"score must be a function or a module, got {type(score).__name__}")
        return score
    if score not in SCORES:
        raise ValueError(f"unknown score {score!r}; choose one of {', '.join(SCORES)}")
    module = SCORES[score](query.shape[-1], keys.shape[-1], keys.shape[-1])
    if any(True for _ in module.parameters()):  # fresh random weights would mean nothing
        raise ValueError(
            f"a score by name must have no weights; {score!r} has: "
            f"pass GeneralScore(...) or AdditiveScore(...) instead"
        )
    return module


def _returns_scores(score: ScoreFn, target: tuple[int, ...]) -> ScoreFn:
    """A score from outside this module, whose result is checked: (..., m, n) floats."""

    def outside_score(query: Tensor, keys: Tensor) -> Tensor:
        e = score(query, keys)
        ok = isinstance(e, Tensor) and e.is_floating_point() and e.dim() >= 2
        if not (ok and _broadcast(tuple(e.shape), target) == target):
            got = f"shape {tuple(e.shape)}" if isinstance(e, Tensor) else type(e).__name__
            raise ValueError(
                f"the score must return scores of shape (..., m, n) = {target}; got {got}"
            )
        return e

    return outside_score


def _query_keys_args(query: Tensor, keys: Tensor) -> tuple:
    _check_dtypes({"query": query, "keys": keys})
    _check_sizes({"query": query, "keys": keys}, same_dim=True)
    return query, keys


def _module_args(module: nn.Module, query: Tensor, keys: Tensor) -> tuple:
    return (module, *_query_keys_args(query, keys))


def _general_args(module: GeneralScore, query: Tensor, keys: Tensor) -> tuple:
    _check_dtypes({"query": query, "keys": keys}, module.W_a.dtype)
    _check_sizes({"query": query, "keys": keys}, dims=(module.d_q, module.d_k))
    return module, query, keys


def _additive_args(
    module: AdditiveScore, query: Tensor, keys: Tensor, Uh: Tensor | None = None
) -> tuple:
    _check_dtypes({"query": query, "keys": keys}, module.W.weight.dtype)
    _check_sizes({"query": query, "keys": keys}, dims=(module.d_q, module.d_k))
    return module, query, keys, Uh


def _make_score_args(name: str, d_q: int, d_k: int, d_attn: int | None = None) -> tuple:
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {', '.join(SCORES)}")
    if name in ("dot", "scaled_dot") and d_q != d_k:
        raise ValueError(f"the {name!r} score needs d_q == d_k; got d_q={d_q}, d_k={d_k}")
    return name, d_q, d_k, d_attn


def _masked_softmax_args(scores: Tensor, mask: Tensor | None = None) -> tuple:
    _check_dtypes({"scores": scores})
    if scores.dim() < 1:
        raise ValueError(
            f"scores must have at least one dimension; got scores {tuple(scores.shape)}"
        )
    _check_mask(mask, tuple(scores.shape))
    return scores, mask


def _nonnegative_int(name: str, n: object, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} needs a non-negative int {n}; got {value!r}")


def _causal_mask_args(n: int, device: torch.device | str | None = None) -> tuple:
    _nonnegative_int("causal_mask", "n", n)
    return n, device


def _padding_mask_args(lengths: Tensor | list[int], n: int) -> tuple:
    _nonnegative_int("padding_mask", "n", n)
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {tuple(lengths.shape)}")
    if lengths.numel() and (lengths.is_floating_point() or lengths.is_complex()):
        raise ValueError(f"lengths must be integers; got {lengths.tolist()}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > n):
        raise ValueError(f"lengths must lie in 0..{n}; got {lengths.tolist()}")
    return lengths, n


def _attention_args(
    query: Tensor,
    keys: Tensor,
    values: Tensor,
    score: ScoreFn | str = dot_score,
    mask: Tensor | None = None,
) -> tuple:
    tensors = {"query": query, "keys": keys, "values": values}
    _check_dtypes(tensors)
    target = _check_sizes(tensors)
    _check_mask(mask, target)
    score = _as_score(score, query, keys)
    _check_score(score, query, keys)
    plain = score.func if isinstance(score, functools.partial) else score  # Uh=... bound
    known = isinstance(plain, _SCORE_MODULES) or plain in _SCORE_FNS  # ours: (..., m, n)
    return query, keys, values, score if known else _returns_scores(score, target), mask


def _sdpa_args(Q: Tensor, K: Tensor, V: Tensor, mask: Tensor | None = None) -> tuple:
    _check_dtypes({"Q": Q, "K": K, "V": V})
    _check_mask(mask, _check_sizes({"Q": Q, "K": K, "V": V}, same_dim=True))
    return Q, K, V, mask


def _multi_head_args(
    module: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
) -> tuple:
    tensors, d = {"query": query, "key": key, "value": value}, module.d_model
    _check_dtypes(tensors, module.W_q.weight.dtype)
    _check_mask(mask, _check_sizes(tensors, dims=(d, d, d)))
    return module, query, key, value, mask


def _positional_encoding_args(n: int, d: int) -> tuple:
    if not isinstance(n, int) or not isinstance(d, int) or n < 0 or d <= 0:
        raise ValueError(f"positional_encoding needs ints n >= 0 and d > 0; got n={n!r}, d={d!r}")
    return n, d


_SCORE_FNS = (dot_score, scaled_dot_score)  # the plain functions, before entry_point() below
_SCORE_MODULES = (DotScore, ScaledDotScore, GeneralScore, AdditiveScore)

dot_score = entry_point(dot_score, _query_keys_args)
scaled_dot_score = entry_point(scaled_dot_score, _query_keys_args)
_SCORE_FNS += (dot_score, scaled_dot_score)
DotScore.forward = entry_point(DotScore.forward, _module_args)
ScaledDotScore.forward = entry_point(ScaledDotScore.forward, _module_args)
GeneralScore.forward = entry_point(GeneralScore.forward, _general_args)
AdditiveScore.forward = entry_point(AdditiveScore.forward, _additive_args)
make_score = entry_point(make_score, _make_score_args)
masked_softmax = entry_point(masked_softmax, _masked_softmax_args)
causal_mask = entry_point(causal_mask, _causal_mask_args)
padding_mask = entry_point(padding_mask, _padding_mask_args)
attention = entry_point(attention, _attention_args)
scaled_dot_product_attention = entry_point(scaled_dot_product_attention, _sdpa_args)
MultiHeadAttention.forward = entry_point(MultiHeadAttention.forward, _multi_head_args)
positional_encoding = entry_point(positional_encoding, _positional_encoding_args)

#: This module's public names as defined here: attnlab.guard.sandbox and the checks' references use
#: these, not whatever ``attnlab.attention.*`` holds when they are imported (a user may have
#: replaced ``masked_softmax`` before that).
AS_DEFINED: dict[str, object] = {name: globals()[name] for name in __all__}
