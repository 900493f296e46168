"""The argument validators of the attention core: one ``validate_<name>`` per equation.

:mod:`attnlab.attention` holds the equations only and trusts its arguments (the models call
it with tensors they built).  Two places hand it arguments that a person typed or a
student's function returned, and validate them here first:

* the deck's edit-me mask (:func:`attnlab.lecture.transformer_demos.causal_demo`) calls
  ``inputs.validated(attention.scaled_dot_product_attention)(query, key, value, mask)``,
  which validates the arguments, then calls the equation with them;
* a score swapped into a widget (:func:`attnlab.widgets.score_swap.checked_score`) passes
  what it returned through :func:`validate_scores`.

Each ``validate_<name>`` returns the arguments ready for the equation and raises a one-line
:class:`ValueError` naming the shapes or dtypes it got (a :class:`TypeError` for a
non-tensor).  The exercises grade a student's function with ``attnlab.checks.check_<name>``,
which is a different thing: it compares outputs with the reference.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
from torch import Tensor, nn

from attnlab import attention
from attnlab.attention import AdditiveScore, GeneralScore, MultiHeadAttention

__all__ = [
    "validated",
    "validate_dot_score",
    "validate_general_score",
    "validate_additive_score",
    "validate_score",
    "validate_scores",
    "validate_masked_softmax",
    "validate_causal_mask",
    "validate_padding_mask",
    "validate_attention",
    "validate_scaled_dot_product_attention",
    "validate_multi_head_attention",
    "validate_positional_encoding",
]


# --------------------------------------------------------------------------- the pieces
def _shapes(tensors: dict[str, Tensor]) -> str:
    return ", ".join(f"{name} {tuple(x.shape)}" for name, x in tensors.items())


def _validate_dtypes(tensors: dict[str, Tensor], weights: torch.dtype | None = None) -> None:
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
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _validate_mask(mask: Tensor | None, target: tuple[int, ...]) -> None:
    """None, or a boolean mask that broadcasts to ``target`` (..., m, n)."""
    if mask is None:
        return
    if not isinstance(mask, Tensor):
        raise TypeError(f"mask must be a torch.Tensor, got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(
            f"mask must be a boolean tensor (True = attention allowed); got dtype {mask.dtype}"
        )
    if _broadcast(tuple(mask.shape), target) != target:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to (..., m, n) = {target}"
        )


def _validate_sizes(
    tensors: dict[str, Tensor], dims: tuple[int | None, ...] = (), same_dim: bool = False
) -> tuple[int, ...]:
    """(query, key[, value]): at least 2-D, the expected last dims, one n, batches broadcast.

    Returns the shape of the scores, (..., m, n)."""
    shapes = [tuple(x.shape) for x in tensors.values()]
    if any(len(s) < 2 for s in shapes):
        raise ValueError(
            f"need (..., m, d_q), (..., n, d_k)[, (..., n, d_v)]; got {_shapes(tensors)}"
        )
    if any(d is not None and s[-1] != d for s, d in zip(shapes, dims, strict=False)):
        want = ", ".join(f"(..., {'d' if d is None else d})" for d in dims)
        raise ValueError(f"expected last dimensions {want}; got {_shapes(tensors)}")
    q, k, v = shapes[0], shapes[1], shapes[-1]
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


def _nonnegative_int(name: str, n: object, value: object) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} needs a non-negative int {n}; got {value!r}")


# --------------------------------------------------------------------------- scores
def validate_dot_score(query: Tensor, key: Tensor) -> tuple:
    """dot_score, scaled_dot_score and their modules: floating tensors, d_q == d_k."""
    _validate_dtypes({"query": query, "key": key})
    _validate_sizes({"query": query, "key": key}, same_dim=True)
    return query, key


def validate_general_score(score: GeneralScore, query: Tensor, key: Tensor) -> tuple:
    """GeneralScore(d_q, d_k): query (..., m, d_q), key (..., n, d_k), the weights' dtype."""
    _validate_dtypes({"query": query, "key": key}, score.W_a.dtype)
    _validate_sizes({"query": query, "key": key}, dims=(score.d_q, score.d_k))
    return query, key


def validate_additive_score(
    score: AdditiveScore, query: Tensor, key: Tensor, Uh: Tensor | None = None
) -> tuple:
    """AdditiveScore(d_q, d_k, d_attn): query (..., m, d_q), key (..., n, d_k), the weights' dtype."""
    _validate_dtypes({"query": query, "key": key}, score.W.weight.dtype)
    _validate_sizes({"query": query, "key": key}, dims=(score.d_q, score.d_k))
    return query, key, Uh


def _plain(score: object) -> object:
    return score.func if isinstance(score, functools.partial) else score  # Uh=... bound


def _is_ours(score: object) -> bool:
    """One of the library's scores (whose result is (..., m, n) by construction)."""
    score = _plain(score)
    if isinstance(score, nn.Module):
        return type(score) in _MODULE_VALIDATORS
    return getattr(score, "__module__", None) == attention.__name__ and callable(score)


def validate_score(score: object, query: Tensor, key: Tensor) -> Callable[[Tensor, Tensor], Tensor]:
    """Any score on (query, key): a name of a weightless one ("dot", "scaled_dot"), one of the
    library's (validated here), or a function from outside (its result validated when it runs).

    Returns the score to call: the module a name stands for, or a function from outside
    wrapped so that what it returns goes through :func:`validate_scores`."""
    if isinstance(score, str):
        score = _by_name(score, query, key)
    if not callable(score):
        raise TypeError(f"score must be a function or a module, got {type(score).__name__}")
    plain = _plain(score)
    if isinstance(plain, (GeneralScore, AdditiveScore)):
        _MODULE_VALIDATORS[type(plain)](plain, query, key)
    elif _is_ours(plain):
        validate_dot_score(query, key)
    else:
        return _returning_scores(score)
    return score


def _by_name(name: str, query: Tensor, key: Tensor) -> nn.Module:
    """The weightless score called ``name`` in :data:`attnlab.attention.SCORES`."""
    if name not in attention.SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {', '.join(attention.SCORES)}")
    module = attention.SCORES[name](query.shape[-1], key.shape[-1], key.shape[-1])
    if any(True for _ in module.parameters()):  # fresh random weights would mean nothing
        raise ValueError(
            f"a score by name must have no weights; {name!r} has: "
            f"pass GeneralScore(...) or AdditiveScore(...) instead"
        )
    return module


def _returning_scores(score: Callable) -> Callable[[Tensor, Tensor], Tensor]:
    def outside_score(query: Tensor, key: Tensor) -> Tensor:
        return validate_scores(score(query, key), query, key)

    return outside_score


def validate_scores(
    scores: object,
    query: Tensor,
    key: Tensor,
    who: str = "the score",
    error: type[Exception] = ValueError,
) -> Tensor:
    """What a score returned for (query, key): finite floats of shape (..., m, n), else
    ``error`` with one line that begins with ``who``.  Returns ``scores``."""
    batch = _broadcast(tuple(query.shape[:-2]), tuple(key.shape[:-2])) or ()
    target = (*batch, query.shape[-2], key.shape[-2])  # (..., m, n)
    if not isinstance(scores, Tensor):
        got = f"{type(scores).__name__}, not a tensor"
    elif not scores.is_floating_point() or tuple(scores.shape) != target:
        got = f"shape {tuple(scores.shape)}, dtype {scores.dtype}"
    elif not bool(torch.isfinite(scores).all()):
        got = "NaN or inf"
    else:
        return scores
    raise error(f"{who} must return scores of shape (..., m, n) = {target}; got {got}")


# --------------------------------------------------------------------------- softmax and masks
def validate_masked_softmax(scores: Tensor, mask: Tensor | None = None) -> tuple:
    _validate_dtypes({"scores": scores})
    if scores.dim() < 1:
        raise ValueError(
            f"scores must have at least one dimension; got scores {tuple(scores.shape)}"
        )
    _validate_mask(mask, tuple(scores.shape))
    return scores, mask


def validate_causal_mask(n: int, device: torch.device | str | None = None) -> tuple:
    _nonnegative_int("causal_mask", "n", n)
    return n, device


def validate_padding_mask(lengths: Tensor | list[int], n: int) -> tuple:
    _nonnegative_int("padding_mask", "n", n)
    lengths = torch.as_tensor(lengths)
    if lengths.dim() != 1:
        raise ValueError(f"lengths must be 1-D (B,); got shape {tuple(lengths.shape)}")
    if lengths.numel() and (lengths.is_floating_point() or lengths.is_complex()):
        raise ValueError(f"lengths must be integers; got {lengths.tolist()}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > n):
        raise ValueError(f"lengths must lie in 0..{n}; got {lengths.tolist()}")
    return lengths, n


# --------------------------------------------------------------------------- attention
def validate_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    score: object = attention.dot_score,
    mask: Tensor | None = None,
) -> tuple:
    """attention's arguments; a score by name becomes its module, one from outside is
    wrapped so that its result is validated (:func:`validate_score`)."""
    tensors = {"query": query, "key": key, "value": value}
    _validate_dtypes(tensors)
    _validate_mask(mask, _validate_sizes(tensors))
    return query, key, value, validate_score(score, query, key), mask


def validate_scaled_dot_product_attention(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
) -> tuple:
    tensors = {"query": query, "key": key, "value": value}
    _validate_dtypes(tensors)
    _validate_mask(mask, _validate_sizes(tensors, same_dim=True))
    return query, key, value, mask


def validate_multi_head_attention(
    module: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
) -> tuple:
    tensors, d = {"query": query, "key": key, "value": value}, module.d_model
    _validate_dtypes(tensors, module.W_q.weight.dtype)
    _validate_mask(mask, _validate_sizes(tensors, dims=(d, d, d)))
    return query, key, value, mask


def validate_positional_encoding(n: int, d: int) -> tuple:
    if not isinstance(n, int) or not isinstance(d, int) or n < 0 or d <= 0:
        raise ValueError(f"positional_encoding needs ints n >= 0 and d > 0; got n={n!r}, d={d!r}")
    return n, d


# --------------------------------------------------------------------------- the boundary
#: The validator of each function of attnlab.attention, by name.
_VALIDATORS: dict[str, Callable[..., tuple]] = {
    "dot_score": validate_dot_score,
    "scaled_dot_score": validate_dot_score,
    "masked_softmax": validate_masked_softmax,
    "causal_mask": validate_causal_mask,
    "padding_mask": validate_padding_mask,
    "attention": validate_attention,
    "scaled_dot_product_attention": validate_scaled_dot_product_attention,
    "positional_encoding": validate_positional_encoding,
}

#: The validator of each module of attnlab.attention (it reads the module's sizes and dtype).
_MODULE_VALIDATORS: dict[type, Callable[..., tuple]] = {
    attention.DotScore: lambda module, *args: validate_dot_score(*args),
    attention.ScaledDotScore: lambda module, *args: validate_dot_score(*args),
    GeneralScore: validate_general_score,
    AdditiveScore: validate_additive_score,
    MultiHeadAttention: validate_multi_head_attention,
}


def validated(fn: Callable) -> Callable:
    """``fn`` (a function of :mod:`attnlab.attention`, or one of its modules) whose call
    first validates its arguments: ``validated(attention)(query, key, value, mask=mask)``."""
    if isinstance(fn, nn.Module) and type(fn) in _MODULE_VALIDATORS:
        validate = functools.partial(_MODULE_VALIDATORS[type(fn)], fn)
    elif getattr(fn, "__module__", None) == attention.__name__ and fn.__name__ in _VALIDATORS:
        validate = _VALIDATORS[fn.__name__]
    else:
        raise TypeError(f"no input check for {fn!r}: pass a function of attnlab.attention")

    def call(*args, **kwargs):
        return fn(*validate(*args, **kwargs))

    return call
