r"""Checks for the exercises in ``notebooks/07_attention_exercises.ipynb``.

Each exercise is a function the student writes; the cell after it calls
``check_<name>(fn)``, which runs ``fn`` on hidden examples, compares it with the reference from
:mod:`attnlab.attention`, and says precisely what is wrong, or that it is right:

* not implemented yet (the body still raises ``NotImplementedError``);
* raised an exception (its type and message, no traceback);
* wrong return type / wrong shape (expected against got);
* NaN or inf in the output;
* masked weights not zero;
* rows not summing to 1;
* mismatch against the reference on a hidden example (the largest absolute difference).

The answer is a :class:`CheckResult` (``.ok``, ``.category``, ``.message``) that Jupyter shows
as a green ✓ or a red ✗ box.

Solutions mode
--------------
With the environment variable ``ATTNLAB_SOLUTIONS=1`` the decorator ``@exercise("dot_score")``
replaces the student's function by the reference, and a failing check raises
``AssertionError``, so running the notebook in CI checks every exercise for real.  Without it
(the student's mode) the decorator returns the student's function unchanged and a check never
raises.

The exercises (names as given to :func:`exercise`; shapes with batch size B):

=================================  ==========================================================
``dot_score(s, h)``                s (B, m, d), h (B, n, d) -> scores (B, m, n)
``general_score(s, h, W_a)``       s (B, m, d_s), h (B, n, d_h), W_a (d_s, d_h) -> (B, m, n)
``additive_score(s, h, W, U, v)``  W (d_a, d_s), U (d_a, d_h), v (d_a,) -> (B, m, n)
``masked_softmax(scores, mask)``   scores (B, m, n), bool mask broadcastable, or None
``decode_step(s_prev, h, y_prev,   s_prev (B, d_s), h (B, n, d_h), y_prev (B, d_y)
score, cell)``                     -> (s_t (B, d_s), c_t (B, d_h), alpha (B, n))
``scaled_dot_product_attention(    Q (B, m, d_k), K (B, n, d_k), V (B, n, d_v), mask or None
Q, K, V, mask)``                   -> (output (B, m, d_v), weights (B, m, n))
``multi_head_attention(query, key, query (B, m, d), key, value (B, n, d), W_* nn.Linear(d, d),
value, W_q, W_k, W_v, W_o,         -> (output (B, m, d), weights (B, h, m, n)); checked against
num_heads, mask)``                 attention.MultiHeadAttention with copies of the W_*
``positional_encoding(n, d)``      -> (n, d), against attention.positional_encoding
=================================  ==========================================================

Inside the trained models
-------------------------
``in_model(name, fn)`` swaps ``fn`` into the shipped model(s) of :data:`IN_MODEL` (a score
gets the model's trained weights; ``masked_softmax`` and ``scaled_dot_product_attention``
through ``unittest.mock.patch.object(attention, name, fn)``; ``decode_step`` as the model's
step), decodes :data:`IN_MODEL_DATES` held-out dates in one padded batch, and compares with the
library's decoding (computed once per session): exact match of both, the first date that
differs, the largest difference in alpha.  The small hidden examples of ``check_<name>`` run
first: they stop a function that cannot run, name the mistake when the translations change,
and test the cases no date reaches (a fully masked row, huge scores), saying so.

Questions
---------
``check_answer(question, answer, **measured)`` checks a predict-then-run answer of
:data:`QUESTIONS` against an answer computed (``right_answer``), never stored.
"""

from __future__ import annotations

import copy
import functools
import html
import math
import os
import re
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from unittest import mock

import numpy as np
import torch
from torch import Tensor, nn

from attnlab import attention

__all__ = [
    "ENV_VAR",
    "EXERCISES",
    "CATEGORIES",
    "CheckResult",
    "solutions_mode",
    "exercise",
    "reference",
    "check_dot_score",
    "check_general_score",
    "check_additive_score",
    "check_masked_softmax",
    "check_decode_step",
    "check_scaled_dot_product_attention",
    "check_multi_head_attention",
    "check_positional_encoding",
    "IN_MODEL",
    "in_model",
    "QUESTIONS",
    "check_answer",
    "right_answer",
    "Summary",
    "summary",
]

#: Set this environment variable to 1 to fill in the reference answers (CI does).
ENV_VAR = "ATTNLAB_SOLUTIONS"

#: What a check can answer: ``CheckResult.category`` -> the words it is shown with.
CATEGORIES = {
    "ok": "correct",
    "not_implemented": "not implemented yet",
    "exception": "raised an exception",
    "wrong_type": "wrong return type",
    "wrong_shape": "wrong shape",
    "nan": "NaN in the output",
    "mask": "masked weights not zero",
    "not_normalised": "rows not summing to 1",
    "mismatch": "mismatch against the reference",
    "translation": "the translations change",
    "alpha": "alpha differs inside the model",
    "unavailable": "model not available",
    "not_answered": "not answered yet",
    "wrong_answer": "not right yet",
    "answer_type": "not an answer of the right kind",
}

ATOL, RTOL = 1e-5, 1e-4  # how close to the reference counts as equal (float32)
ROW_SUM_TOL = 1e-4  # |sum_i alpha_{t,i} - 1| allowed


def solutions_mode() -> bool:
    """True when ``ATTNLAB_SOLUTIONS`` is set to 1 (or true/yes): CI's mode."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------- the result
@dataclass(frozen=True, repr=False)
class CheckResult:
    """What a check found.

    ``ok``; ``category``, a key of :data:`CATEGORIES`; ``details``, the explanation; and
    ``message``, the whole answer in one line: ``"✗ dot_score: wrong shape. <details>"``.
    """

    name: str
    ok: bool
    category: str
    details: str

    @property
    def title(self) -> str:
        mark = "✓" if self.ok else "✗"
        return f"{mark} {self.name}: {CATEGORIES[self.category]}"

    @property
    def message(self) -> str:
        return f"{self.title}. {self.details}"

    def __str__(self) -> str:
        return self.message

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if self.ok:
            fg, bg = "#1b5e20", "#e8f5e9"
        elif self.category in ("not_implemented", "not_answered"):
            fg, bg = "#7a5200", "#fff8e1"
        else:
            fg, bg = "#b71c1c", "#ffebee"
        body = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(self.details))
        return (
            f'<div style="border-left:6px solid {fg};background:{bg};color:#222;'
            f'padding:6px 12px;margin:4px 0;font-size:1.05em">'
            f'<b style="color:{fg}">{html.escape(self.title)}</b><br>{body}</div>'
        )


class _Failure(Exception):
    """Raised inside a check to stop at the first thing that is wrong."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category, self.message = category, message


_LAST: dict[str, CheckResult] = {}  # the latest result of each exercise, for summary()


# --------------------------------------------------------------------------- references
# Thin wrappers with the exercises' signatures around attnlab.attention (no second copy).
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


def _ref_decode_step(
    s_prev: Tensor, h: Tensor, y_prev: Tensor, score: Callable, cell: nn.GRUCell
) -> tuple[Tensor, Tensor, Tensor]:
    """One Bahdanau decoding step: alpha, c_t = sum_i alpha_{t,i} h_i, s_t = GRU([y; c_t], s)."""
    c_t, alpha = attention.attention(s_prev.unsqueeze(-2), h, h, score)  # (B, 1, d_h), (B, 1, n)
    c_t, alpha = c_t.squeeze(-2), alpha.squeeze(-2)  # (B, d_h), (B, n)
    s_t = cell(torch.cat([y_prev, c_t], dim=-1), s_prev)  # s_t = f(s_{t-1}, y_{t-1}, c_t)
    return s_t, c_t, alpha


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
    return _mha_with(W_q, W_k, W_v, W_o, num_heads)(query, key, value, mask)


_REFERENCES: dict[str, Callable] = {
    "dot_score": attention.dot_score,
    "general_score": _ref_general_score,
    "additive_score": _ref_additive_score,
    "masked_softmax": attention.masked_softmax,
    "decode_step": _ref_decode_step,
    "scaled_dot_product_attention": attention.scaled_dot_product_attention,
    "multi_head_attention": _ref_multi_head_attention,
    "positional_encoding": attention.positional_encoding,
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


# --------------------------------------------------------------------------- running a check
def _run(
    name: str, fn: object, body: Callable[[Callable], str], usage: str | None = None
) -> CheckResult:
    """Run ``body(fn)``; turn the first failure into a CheckResult; raise only in solutions mode."""
    try:
        if not callable(fn):
            usage = usage or f"`check_{name}` needs your function, e.g. `check_{name}({name})`"
            raise _Failure("wrong_type", f"{usage}; got {type(fn).__name__}.")
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            result = CheckResult(name, True, "ok", body(fn))
    except _Failure as failure:
        result = CheckResult(name, False, failure.category, failure.message)
    except Exception as error:  # noqa: BLE001 - a strange output must never crash the check
        result = CheckResult(
            name, False, "exception", f"Checking your output failed: {_describe(error)}."
        )
    _LAST[name] = result
    if not result.ok and solutions_mode():
        raise AssertionError(str(result))
    return result


def _describe(error: BaseException, limit: int = 300) -> str:
    """``TypeName: message`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(error).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


_LIBRARY_DIRS = tuple(str(Path(m.__file__).resolve().parent) for m in (torch, attention, traceback))


def _where(error: BaseException) -> str:
    """' (line N of `f`: `code`)' for the deepest frame in the student's code, not in a library."""
    frames = traceback.extract_tb(error.__traceback__)[1:]  # drop _call's own frame
    for frame in reversed(frames):
        if not str(Path(frame.filename).resolve()).startswith(_LIBRARY_DIRS):
            code = f": `{frame.line.strip()}`" if frame.line else ""
            return f" (line {frame.lineno} of `{frame.name}`{code})"
    return ""


def _clone(x: object) -> object:
    if isinstance(x, Tensor):
        return x.clone()
    if isinstance(x, nn.Module):
        return copy.deepcopy(x)
    return x


def _call(fn: Callable, args: tuple, where: str) -> object:
    """fn(*copies of args); its NotImplementedError or other exception becomes a _Failure."""
    try:
        return fn(*(_clone(a) for a in args))
    except NotImplementedError:
        raise _Failure(
            "not_implemented",
            "Replace `raise NotImplementedError` under `# YOUR CODE HERE` with your code, "
            "run that cell, then run this one again.",
        ) from None
    except Exception as error:
        raise _Failure(
            "exception", f"Your function raised {_describe(error)}{_where(error)} {where}."
        ) from None


def _as_tensor(x: object, what: str) -> Tensor:
    if isinstance(x, Tensor):
        return x.detach().to(torch.float32)
    hint = " (convert with `torch.as_tensor`)" if hasattr(x, "__array__") else ""
    raise _Failure(
        "wrong_type", f"Your {what} should be a torch.Tensor, got {type(x).__name__}{hint}."
    )


def _as_tuple(x: object, names: tuple[str, ...]) -> tuple:
    want = "(" + ", ".join(names) + ")"
    if not isinstance(x, tuple | list) or len(x) != len(names):
        got = f"a {len(x)}-tuple" if isinstance(x, tuple | list) else type(x).__name__
        raise _Failure("wrong_type", f"Return the tuple {want}; got {got}.")
    return tuple(_as_tensor(v, n) for v, n in zip(x, names, strict=True))


def _check_shape(
    got: Tensor, expected: tuple[int, ...], what: str, where: str, hint: str = ""
) -> None:
    if tuple(got.shape) != tuple(expected):
        raise _Failure(
            "wrong_shape",
            f"Your {what} has the wrong shape: expected {tuple(expected)}, got "
            f"{tuple(got.shape)} {where}." + hint,
        )


def _check_finite(got: Tensor, what: str, where: str, hint: str = "") -> None:
    bad = ~torch.isfinite(got)
    if bad.any():
        kinds = " and ".join(k for k, m in (("NaN", got.isnan()), ("inf", got.isinf())) if m.any())
        raise _Failure(
            "nan", f"Your {what} holds {int(bad.sum())} {kinds} value(s) {where}." + (hint or "")
        )


def _check_masked_zero(weights: Tensor, mask: Tensor | None, where: str, hint: str) -> None:
    if mask is None:
        return
    forbidden = ~mask.expand_as(weights)
    leaked = weights[forbidden]
    if (leaked != 0).any():
        raise _Failure(
            "mask",
            f"{int((leaked != 0).sum())} weight(s) where the mask is False are not exactly 0 "
            f"(the largest is {leaked.abs().max().item():.3g}) {where}. " + hint,
        )


def _check_rows(weights: Tensor, mask: Tensor | None, where: str, hint: str) -> None:
    sums = weights.sum(dim=-1)  # (..., m): sum_i alpha_{t,i}
    live = torch.ones_like(sums, dtype=torch.bool)
    if mask is not None:
        live = mask.expand_as(weights).any(dim=-1)  # rows with at least one allowed key
    off = (sums - 1).abs()[live]
    if off.numel() and off.max() > ROW_SUM_TOL:
        worst = sums[live][off.argmax()].item()
        raise _Failure(
            "not_normalised",
            f"The weights of each row (over the n keys, the last dimension) should sum to 1; "
            f"one row sums to {worst:.4g} {where}. " + hint,
        )


def _close(got: Tensor, ref: Tensor) -> bool:
    return got.shape == ref.shape and torch.allclose(got, ref, rtol=RTOL, atol=ATOL)


def _check_close(
    got: Tensor,
    ref: Tensor,
    what: str,
    where: str,
    hint: str = "",
    alternatives: tuple[tuple[Tensor, str], ...] = (),
) -> None:
    if _close(got, ref):
        return
    diff = (got - ref).abs().max().item()
    diagnosis = next((why for alt, why in alternatives if _close(got, alt)), hint)
    raise _Failure(
        "mismatch",
        f"The values of your {what} differ from the reference {where}: "
        f"max abs difference |yours - reference| = {diff:.3g} (tolerance about {ATOL:g}). "
        + diagnosis,
    )


def _hidden(i: int, total: int, details: str) -> str:
    return f"on hidden example {i} of {total} ({details})"


def _randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return torch.randn(*shape, generator=g) * scale


def _shape_str(**tensors: Tensor | None) -> str:
    return ", ".join(f"{k} {tuple(v.shape)}" for k, v in tensors.items() if v is not None)


# --------------------------------------------------------------------------- the scores
def _score_examples(seed: int, sizes: tuple[tuple[int, int, int, int, int], ...]):
    """(s, h) pairs: s (B, m, d_s), h (B, n, d_h) for each (B, m, n, d_s, d_h)."""
    g = torch.Generator().manual_seed(seed)
    return [(_randn(g, B, m, d_s), _randn(g, B, n, d_h)) for B, m, n, d_s, d_h in sizes]


def _check_scores(
    fn: Callable, examples: list[tuple], name: str, hint: str, alternatives: Callable | None = None
) -> str:
    """Shared body of the three score checks: shape, finiteness, values."""
    for i, args in enumerate(examples, start=1):
        s, h = args[0], args[1]
        where = _hidden(i, len(examples), _shape_str(s=s, h=h))
        got = _as_tensor(_call(fn, args, where), "scores")
        expected = (s.shape[0], s.shape[1], h.shape[1])  # (B, m, n)
        _check_shape(
            got,
            expected,
            "scores",
            where,
            " One score per query (m) and key (n): (B, m, n). "
            "Transpose h with `h.transpose(-2, -1)` (not `h.T`, which flips every dimension).",
        )
        _check_finite(got, "scores", where)
        ref = _REFERENCES[name](*args)
        known_mistakes = (alternatives(*args) if alternatives else ()) + (
            (
                torch.softmax(ref, dim=-1),
                "Your function returns weights (the softmax of the scores); return the raw "
                "scores: the softmax comes later, in masked_softmax.",
            ),
        )
        _check_close(got, ref, "scores", where, hint, known_mistakes)
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
    return _run("dot_score", fn, _dot_body)


def _general_body(fn: Callable) -> str:
    g = torch.Generator().manual_seed(702)
    examples = [
        (s, h, _randn(g, s.shape[-1], h.shape[-1], scale=0.5))
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
    return _run("general_score", fn, _general_body)


def _additive_body(fn: Callable) -> str:
    g = torch.Generator().manual_seed(704)
    examples = []
    for (s, h), d_a in zip(
        _score_examples(705, ((2, 3, 5, 4, 6), (1, 1, 7, 8, 3))), (5, 9), strict=True
    ):
        W = _randn(g, d_a, s.shape[-1], scale=0.5)  # (d_a, d_s)
        U = _randn(g, d_a, h.shape[-1], scale=0.5)  # (d_a, d_h)
        v = _randn(g, d_a)  # (d_a,)
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
    return _run("additive_score", fn, _additive_body)


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
    large = _randn(g, 2, 3, 5, scale=100.0)
    return [
        (_randn(g, 2, 3, 5, scale=2.0), None, "no mask"),
        (_randn(g, 2, 4, 6, scale=2.0), full, "a (2, 4, 6) mask with one row fully masked"),
        (_randn(g, 2, 3, 5, scale=2.0), padding, "a (2, 1, 5) padding mask"),
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
        where = _hidden(i, len(examples), f"scores {tuple(scores.shape)}, {details}")
        alpha = _as_tensor(_call(fn, (scores, mask), where), "alpha")
        _check_shape(alpha, scores.shape, "alpha", where, " alpha has the shape of the scores.")
        _check_finite(alpha, "alpha", where, _softmax_nan_hint(alpha, scores, mask))
        _check_masked_zero(alpha, mask, where, _MASK_HINT)
        _check_rows(alpha, mask, where, _softmax_rows_hint(alpha, scores, mask))
        _check_close(alpha, attention.masked_softmax(scores, mask), "alpha", where)
    return (
        f"Your alpha matches the reference on {len(examples)} hidden examples, masked weights are "
        "exactly 0 and a fully masked row is all zeros."
    )


def check_masked_softmax(fn: Callable) -> CheckResult:
    """Check ``masked_softmax(scores, mask=None)`` (mask True = allowed; masked weights 0)."""
    return _run("masked_softmax", fn, _softmax_body)


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
            examples.append(
                (_randn(g, B, d_s), _randn(g, B, n, d_h), _randn(g, B, d_y), module, cell)
            )
    return examples


def _decode_body(fn: Callable) -> str:
    examples = _decode_examples()
    for i, args in enumerate(examples, start=1):
        s_prev, h, y_prev, score, cell = args
        B, n, d_h = h.shape
        where = _hidden(
            i,
            len(examples),
            f"{_shape_str(s_prev=s_prev, h=h, y_prev=y_prev)}, a {type(score).__name__}",
        )
        out = _call(fn, args, where)
        s_t, c_t, alpha = _as_tuple(out, ("s_t", "c_t", "alpha"))
        squeeze = " Squeeze the query dimension m = 1 away: `.squeeze(1)`."
        _check_shape(alpha, (B, n), "alpha", where, squeeze)
        order = " Return (s_t, c_t, alpha) in that order."
        _check_shape(c_t, (B, d_h), "c_t", where, squeeze + order)
        _check_shape(s_t, tuple(s_prev.shape), "s_t", where, order)
        for value, what in ((alpha, "alpha"), (c_t, "c_t"), (s_t, "s_t")):
            _check_finite(value, what, where)
        _check_rows(alpha, None, where, "alpha is the softmax of the scores over the n keys.")
        ref_s, ref_c, ref_alpha = _ref_decode_step(*args)
        _check_close(
            alpha,
            ref_alpha,
            "alpha",
            where,
            "alpha_{t,i} = softmax_i(score(s_{t-1}, h_i)): call `score(s_prev.unsqueeze(1), h)` "
            "(queries (B, 1, d_s), keys (B, n, d_h)).",
        )
        _check_close(c_t, ref_c, "c_t", where, "c_t = sum_i alpha_{t,i} h_i.")
        swapped = cell(torch.cat([ref_c, y_prev], dim=-1), s_prev)
        from_zero = cell(torch.cat([y_prev, ref_c], dim=-1))
        _check_close(
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
    return _run("decode_step", fn, _decode_body)


# --------------------------------------------------------------------------- scaled dot-product
def _sdpa_examples():
    g = torch.Generator().manual_seed(709)
    d_k, d_v = 16, 4  # d_k large enough that forgetting sqrt(d_k) changes the weights a lot
    return [
        (_randn(g, 2, 3, d_k), _randn(g, 2, 5, d_k), _randn(g, 2, 5, d_v), None, "no mask"),
        (
            *(_randn(g, 2, 4, d) for d in (d_k, d_k, d_v)),
            attention.causal_mask(4),
            "a (4, 4) causal mask",
        ),
        (
            _randn(g, 2, 3, d_k),
            _randn(g, 2, 6, d_k),
            _randn(g, 2, 6, d_v),
            attention.padding_mask([6, 3], 6)[:, None, :],
            "a (2, 1, 6) padding mask",
        ),
    ]


def _sdpa_body(fn: Callable) -> str:
    examples = _sdpa_examples()
    for i, (Q, K, V, mask, details) in enumerate(examples, start=1):
        where = _hidden(i, len(examples), f"{_shape_str(Q=Q, K=K, V=V)}, {details}")
        output, weights = _as_tuple(_call(fn, (Q, K, V, mask), where), ("output", "weights"))
        B, m, n, d_v = Q.shape[0], Q.shape[1], K.shape[1], V.shape[-1]
        _check_shape(
            weights,
            (B, m, n),
            "weights",
            where,
            " One weight per query and key; return (output, weights) in that order.",
        )
        _check_shape(output, (B, m, d_v), "output", where, " output = weights @ V.")
        _check_finite(weights, "weights", where)
        _check_finite(output, "output", where)
        _check_masked_zero(weights, mask, where, "Pass the mask on to your masked_softmax.")
        _check_rows(weights, mask, where, "Take the softmax over the keys (`dim=-1`).")
        ref_output, ref_weights = attention.scaled_dot_product_attention(Q, K, V, mask)
        d_k = K.shape[-1]
        unscaled = attention.masked_softmax(Q @ K.transpose(-2, -1), mask)  # no 1/sqrt(d_k)
        over_d_k = attention.masked_softmax(Q @ K.transpose(-2, -1) / d_k, mask)
        _check_close(
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
        _check_close(output, ref_output, "output", where, "output = weights @ V.")
    return f"Your output and weights match the reference on {len(examples)} hidden examples."


def check_scaled_dot_product_attention(fn: Callable) -> CheckResult:
    """Check ``scaled_dot_product_attention(Q, K, V, mask=None) -> (output, weights)``."""
    return _run("scaled_dot_product_attention", fn, _sdpa_body)


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
            q = _randn(g, B, m, d)
            kv = q if m == n else _randn(g, B, n, d)
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
        with mock.patch.object(attention, "scaled_dot_product_attention", bend):
            found.append((*mha(query, key, value, mask), why))
    split = _mha_with(W_q, W_k, W_v, W_o, h)
    split._split_heads = lambda x: x.reshape(*x.shape[:-2], h, x.shape[-2], d_k)
    found.append(
        (
            *split(query, key, value, mask),
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
            *no_out(query, key, value, mask),
            "Project the concatenated heads with W_o: `W_o(concat)`.",
        )
    )
    return tuple(found)


def _call_mha(fn: Callable, args: tuple, where: str) -> object:
    """_call, with a hint when a (B, 1, n) mask did not meet the heads' (B, h, m, n) scores."""
    try:
        return _call(fn, args, where)
    except _Failure as failure:
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
        where = _hidden(i, len(examples), f"{_shape_str(query=query, key=key)}, {details}")
        output, weights = _as_tuple(_call_mha(fn, tuple(args), where), ("output", "weights"))
        B, m, n, d = query.shape[0], query.shape[1], key.shape[1], query.shape[2]
        _check_shape(
            weights,
            (B, h, m, n),
            "weights",
            where,
            " One (m, n) matrix per head: (B, h, m, n); return (output, weights) in that order.",
        )
        _check_shape(
            output, (B, m, d), "output", where, " Concatenate the heads back to (B, m, d_model)."
        )
        _check_finite(weights, "weights", where)
        _check_finite(output, "output", where)
        head_mask = None if mask is None else (mask.unsqueeze(1) if mask.dim() >= 3 else mask)
        _check_masked_zero(
            weights,
            head_mask,
            where,
            "Pass the mask to every head: a (B, 1, n) mask becomes (B, 1, 1, n) with `mask.unsqueeze(1)`.",
        )
        _check_rows(weights, head_mask, where, "Take each head's softmax over the keys (`dim=-1`).")
        ref_output, ref_weights = _ref_multi_head_attention(*args)
        alternatives = _mha_alternatives(tuple(args))
        _check_close(
            weights,
            ref_weights,
            "weights",
            where,
            "head_i = softmax(Q_i K_i^T / sqrt(d_k)) with Q_i = the i-th block of d_k columns of W_q(query).",
            tuple((w, why) for _, w, why in alternatives),
        )
        _check_close(
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
    return _run("multi_head_attention", fn, _mha_body)


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
        where = _hidden(i, len(sizes), f"n = {n}, d = {d}")
        pe = _as_tensor(_call(fn, (n, d), where), "encoding")
        _check_shape(
            pe,
            (n, d),
            "encoding",
            where,
            " One row per position, one column per dimension: (n, d).",
        )
        _check_finite(pe, "encoding", where)
        _check_close(
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
    return _run("positional_encoding", fn, _pe_body)


# --------------------------------------------------------------------------- inside the models
#: exercise -> the shipped models ``in_model`` runs it in (all of them unless one is named).
IN_MODEL = {
    "dot_score": ("rnnsearch-dates-dot",),
    "general_score": ("rnnsearch-dates-general",),
    "additive_score": ("rnnsearch-dates",),
    "masked_softmax": ("rnnsearch-dates", "transformer-dates"),
    "decode_step": ("rnnsearch-dates",),
    "scaled_dot_product_attention": ("transformer-dates",),
}
IN_MODEL_DATES = 300  # held-out dates decoded in one padded batch (lengths 6 to 28 together)
IN_MODEL_SEED = 2_000_000  # the cards' held-out seed: dates no model was trained on
ALPHA_TOL = 1e-4  # |alpha yours - alpha library| allowed inside a model (float32 rounding)

# Failures that stop a function from running at all: reported before decoding anything.
_STRUCTURAL = ("not_implemented", "wrong_type", "wrong_shape", "exception")

# Why the translations alone cannot show a mistake the small examples find.
_UNSEEN = {
    "masked_softmax": "no query in these models has every key masked, and their scores stay "
    "far below exp's overflow at 88, so the translations cannot show this: the check tests "
    "it on its own.",
    "scaled_dot_product_attention": "no query in this model has every key masked, so the "
    "translations cannot show this: the check tests it on its own.",
}


@dataclass
class _Reference:
    """A shipped model, its held-out dates as one padded batch, and the library's decoding."""

    model: nn.Module
    sources: list[str]  # the dates as written
    targets: list[str]  # their ISO forms
    src: Tensor  # (N, n) padded source ids
    src_len: Tensor  # (N,)
    tgt_in: Tensor  # (N, T) <sos> + the library's output, for teacher forcing
    valid: Tensor  # (N, T) bool: the steps up to and including each output's <eos>
    outputs: list[str]  # the library's translations
    alpha: Tensor  # (N, L, h, T, n) the library's cross-attention under teacher forcing


@functools.lru_cache(maxsize=8)
def _reference(model_name: str) -> _Reference:
    """Load ``model_name`` and decode the held-out dates with the library (once per session)."""
    import attnlab
    from attnlab.data import dates
    from attnlab.decode import greedy

    model = attnlab.load(model_name).eval()
    pairs = dates(IN_MODEL_DATES, seed=IN_MODEL_SEED)
    ids = [model.encode_source(text)[0] for text, _ in pairs]  # each (n_b,), ends <eos>
    src = nn.utils.rnn.pad_sequence(ids, batch_first=True)  # (N, n), <pad> = 0
    src_len = torch.tensor([len(i) for i in ids])
    with torch.no_grad():
        out = greedy(model, src, src_len)
        tgt_in, valid = _forced_inputs(out, model.tgt_vocab)
        alpha = model.alignments(src, src_len, tgt_in)[1]  # (N, L, h, T, n)
    return _Reference(
        model,
        [text for text, _ in pairs],
        [iso for _, iso in pairs],
        src,
        src_len,
        tgt_in,
        valid,
        [model.tgt_vocab.decode(o) for o in out],
        alpha,
    )


def _forced_inputs(outputs: list[list[int]], vocab) -> tuple[Tensor, Tensor]:
    """tgt_in (N, T) = <sos> y_1..y_k <eos>... and valid (N, T): t <= k, for teacher forcing."""
    T = max(len(o) for o in outputs) + 1  # every output step and its final <eos>
    rows = [[vocab.sos, *o] + [vocab.eos] * (T - 1 - len(o)) for o in outputs]
    steps = torch.arange(T)[None, :]  # (1, T)
    return torch.tensor(rows), steps <= torch.tensor([len(o) for o in outputs])[:, None]


class _Counted:
    """The student's function, counting its calls (a swap that is never used must not pass)."""

    def __init__(self, fn: Callable):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        args = tuple(a.clone() if isinstance(a, Tensor) else a for a in args)  # scribbling is
        return self.fn(*args, **kwargs)  # harmless: the model's own tensors stay untouched


class _StudentScore(nn.Module):
    """score(query, keys) = fn(query, keys, *trained weights): the student's score in a model."""

    def __init__(self, fn: Callable, weights: tuple[Tensor, ...]):
        super().__init__()
        self.fn, self.weights = fn, weights

    def forward(self, query: Tensor, keys: Tensor) -> Tensor:  # (B, m, d_s), (B, n, d_h)
        return self.fn(query, keys, *(w.clone() for w in self.weights))  # (B, m, n)


def _score_weights(exercise: str, score: nn.Module) -> tuple[Tensor, ...]:
    """The trained weights of the model's score, in the exercise's argument order."""
    if exercise == "additive_score":  # v^T tanh(W s + U h_i)
        return (score.W.weight.detach(), score.U.weight.detach(), score.v.weight.detach()[0])
    if exercise == "general_score":  # s^T W_a h
        return (score.W_a.detach(),)
    return ()  # s^T h


def _student_step(model: nn.Module, decode_step: Callable) -> Callable:
    """RNNSearch.step with the student's ``decode_step`` doing the attention and the GRU."""
    from attnlab.models import StepOutput

    cell = copy.deepcopy(model.decoder)  # the trained GRUCell (a copy the student may touch)

    def step(state: dict, y_prev: Tensor) -> StepOutput:
        mask = state["mask"]  # (B, 1, n): True at real source tokens

        def score(query: Tensor, keys: Tensor) -> Tensor:  # the trained score, padding hidden
            e = model.score(query, keys)  # (B, m, n)
            return e.masked_fill(~mask, torch.finfo(e.dtype).min)

        y = model.tgt_emb(y_prev)  # y_{t-1}: (B, E)
        s, c, alpha = decode_step(state["s"], state["h"], y, score, cell)
        logits = model.out(torch.cat([s, c, y], dim=-1))  # W_o [s_t; c_t; y_{t-1}]: (B, V)
        return StepOutput(logits, alpha[:, None, None, :], c, {**state, "s": s})

    return step


@contextmanager
def _swapped(exercise: str, fn: Callable, model: nn.Module) -> Iterator[_Counted]:
    """Run ``model`` with the student's ``fn`` in place of the library's, then restore it."""
    counted = _Counted(fn)
    if exercise.endswith("_score"):
        original = model.score
        model.score = _StudentScore(counted, _score_weights(exercise, original))
        try:
            yield counted
        finally:
            model.score = original
    elif exercise == "decode_step":
        model.step = _student_step(model, counted)  # the instance's step shadows the class's
        try:
            yield counted
        finally:
            del model.step
    else:  # masked_softmax, scaled_dot_product_attention: attention calls them by module name
        with mock.patch.object(attention, exercise, counted):
            yield counted


@dataclass
class _InModel:
    """What the student's function did inside one model."""

    model_name: str
    ref: _Reference
    outputs: list[str]
    alpha_diff: float

    @property
    def same(self) -> int:
        return sum(a == b for a, b in zip(self.outputs, self.ref.outputs, strict=True))

    @property
    def ok(self) -> bool:
        return self.same == len(self.outputs) and self.alpha_diff <= ALPHA_TOL

    def accuracy(self, outputs: list[str]) -> float:
        return sum(a == b for a, b in zip(outputs, self.ref.targets, strict=True)) / len(outputs)

    def report(self) -> str:
        n, ref = len(self.outputs), self.ref
        text = (
            f"In `{self.model_name}` on {n} held-out dates: exact match "
            f"{self.accuracy(self.outputs):.1%} with your function, "
            f"{self.accuracy(ref.outputs):.1%} with the library's; {self.same} of {n} "
            f"translations identical; largest |alpha yours - library's| = {self.alpha_diff:.2g}"
            + (" (your alpha holds NaN)." if math.isnan(self.alpha_diff) else ".")
        )
        first = next((i for i in range(n) if self.outputs[i] != ref.outputs[i]), None)
        if first is not None:
            text += (
                f" First date that differs: '{ref.sources[first]}' -> yours "
                f"'{self.outputs[first]}', the library's '{ref.outputs[first]}'."
            )
        return text


def _decode_with(exercise: str, fn: Callable, model_name: str) -> _InModel:
    """Decode the held-out dates with ``fn`` swapped into ``model_name``; compare to the library."""
    from attnlab.decode import greedy

    try:
        ref = _reference(model_name)
    except Exception as error:  # noqa: BLE001 - a missing or damaged checkpoint
        raise _Failure(
            "unavailable", f"`{model_name}` could not be loaded: {_describe(error)}."
        ) from None
    model = ref.model
    try:
        with _swapped(exercise, fn, model) as counted:
            alpha = model.alignments(ref.src, ref.src_len, ref.tgt_in)[1]  # (N, L, h, T, n)
            out = greedy(model, ref.src, ref.src_len)
    except Exception as error:
        raise _Failure(
            "exception",
            f"Inside `{model_name}` your function raised {_describe(error)}{_where(error)}.",
        ) from None
    if counted.calls == 0:  # the model did not call it: say so rather than pass
        raise _Failure("exception", f"`{model_name}` never called your function: please report.")
    valid = ref.valid[:, None, None, :, None].expand_as(ref.alpha)  # (N, L, h, T, n)
    diff = (alpha.float() - ref.alpha).abs()[valid]
    alpha_diff = float(diff.max()) if diff.numel() else 0.0  # NaN if alpha holds NaN
    return _InModel(model_name, ref, [model.tgt_vocab.decode(o) for o in out], alpha_diff)


_BODIES: dict[str, Callable[[Callable], str]] = {
    "dot_score": _dot_body,
    "general_score": _general_body,
    "additive_score": _additive_body,
    "masked_softmax": _softmax_body,
    "decode_step": _decode_body,
    "scaled_dot_product_attention": _sdpa_body,
}


def _unit_failure(exercise: str, fn: Callable) -> _Failure | None:
    """The first thing the small hidden examples find wrong with ``fn``, or None."""
    try:
        _BODIES[exercise](fn)
    except _Failure as failure:
        return failure
    return None


def _in_model_body(exercise: str, model_names: tuple[str, ...], fn: Callable) -> str:
    unit = _unit_failure(exercise, fn)
    if unit is not None and unit.category in _STRUCTURAL:
        raise _Failure(unit.category, f"Before it can run inside a model: {unit.message}")
    runs = [_decode_with(exercise, fn, name) for name in model_names]
    reports = " ".join(run.report() for run in runs)
    bad = [run for run in runs if not run.ok]
    if bad:
        category = "translation" if any(r.same < len(r.outputs) for r in bad) else "alpha"
        why = unit.message if unit is not None else _ONLY_IN_MODEL
        raise _Failure(category, f"{reports} What is wrong: {why}")
    if unit is not None:
        unseen = _UNSEEN.get(exercise) if unit.category in ("nan", "mask") else None
        unseen = unseen or "the difference is too small to change these translations: fix it too."
        raise _Failure(
            unit.category,
            f"{reports} But on its own your function fails: {unit.message} In the model, {unseen}",
        )
    return f"{reports} {_IN_MODEL_OK.get(exercise, '')}".rstrip()


_ONLY_IN_MODEL = (
    "on the small hidden examples your function matches the reference, so look at what only the "
    "model gives it: more batch dimensions (the Transformer's (B, h, m, n)), the model's masks, "
    "or the sizes of its trained weights."
)

_IN_MODEL_OK = {
    "masked_softmax": "The batch pads the shorter dates, so your mask was used; on its own your "
    "function also gives zeros for a fully masked row and stays finite for large scores "
    "(cases no date reaches).",
    "scaled_dot_product_attention": "The batch pads the shorter dates and the decoder's causal "
    "mask hides the future, so your mask was used; on its own your function also handles a "
    "fully masked row (a case no date reaches).",
    "decode_step": "The score handed to your function hides the padding of the shorter dates.",
}


def in_model(exercise_name: str, fn: Callable, model: str | None = None) -> CheckResult:
    """Run the student's ``fn`` inside a trained model in place of the library's function.

    Decodes :data:`IN_MODEL_DATES` held-out dates (one padded batch) with ``fn`` swapped into
    the shipped model (:data:`IN_MODEL`; a score gets the model's trained weights) and with the
    library's own function, and reports the exact match of both, the first date whose
    translations differ and the largest difference in alpha.  It is correct when every
    translation is the library's and alpha agrees to :data:`ALPHA_TOL`, and the function also
    passes the small hidden examples of ``check_<exercise>`` (which test cases no date reaches,
    such as a fully masked row, and name the mistake when something differs).
    """
    if exercise_name not in IN_MODEL:
        raise ValueError(f"unknown exercise {exercise_name!r}; in_model runs {', '.join(IN_MODEL)}")
    names = IN_MODEL[exercise_name]
    if model is not None:
        if model not in names:
            raise ValueError(f"{exercise_name} runs in {', '.join(names)}; got model {model!r}")
        names = (model,)
    label = f"{exercise_name} in {' and '.join(names)}"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # small, latency-bound work: one thread is fastest on shared cores
    try:
        return _run(
            label, fn, lambda f: _in_model_body(exercise_name, names, f), _usage(exercise_name)
        )
    finally:
        torch.set_num_threads(threads)


def _usage(exercise_name: str) -> str:
    return f"`in_model` needs your function, e.g. `in_model({exercise_name!r}, {exercise_name})`"


# --------------------------------------------------------------------------- predict, then run
MONTH_DATE = "3 May 1979"  # the date of the "month_attention" question
D_K = 64  # the dimension of the "variance_qk" question


def _number(answer: object) -> float:
    if isinstance(answer, bool) or not isinstance(answer, int | float):
        raise _Failure("answer_type", f"Answer with a number; got {type(answer).__name__}.")
    return float(answer)


def _right_variance_qk() -> float:
    # q.k = sum_j q_j k_j: d_k independent products, each of variance Var(q_j) Var(k_j).
    var_q = var_k = 1.0  # entries of mean 0 and variance 1
    return sum(var_q * var_k for _ in range(D_K))


def _judge_variance_qk(answer: object, right: float) -> str | None:
    value = _number(answer)
    if abs(value - right) <= 0.03 * right:  # a measured variance is accepted too
        return None
    if abs(value - math.sqrt(right)) < 0.5:
        return f"{value:g} is the standard deviation of q.k; the question asks for its variance."
    if abs(value - 1) < 0.1:
        return "1 is the variance after dividing by sqrt(d_k); before it, add up the variances."
    return "q.k is a sum of d_k products q_j k_j: what is the variance of one, and of their sum?"


def _right_dilated_path() -> int:
    from attnlab.paths import longest_path

    return longest_path("dilated_cnn", 27, 3)


def _judge_dilated_path(answer: object, right: int) -> str | None:
    from attnlab.paths import longest_path

    value = _number(answer)
    if value == right:
        return None
    if value == longest_path("cnn", 27, 3):
        return "That is the path of plain convolutions (dilation 1 in every layer)."
    if value == longest_path("rnn", 27, 3):
        return "That is the recurrent layer's path, one step per position."
    return "Layer l of a dilated stack reaches k^l positions back: how many layers reach 27?"


def _month_alpha() -> tuple[list[str], np.ndarray]:
    """The source tokens and alpha (n,) of rnnsearch-dates writing MONTH_DATE's month digit."""
    from attnlab.decode import decode

    decoding = decode(_reference("rnnsearch-dates").model, MONTH_DATE)
    t = decoding.text.index("-") + 1  # the first digit of the month in YYYY-MM-DD
    return decoding.source_tokens, decoding.alpha[0, 0, t]  # (n,)


def _right_month_attention() -> str:
    tokens, alpha = _month_alpha()
    return tokens[int(alpha.argmax())]


def _judge_month_attention(answer: object, right: str) -> str | None:
    if not isinstance(answer, str) or len(answer) != 1:
        raise _Failure("answer_type", f'Answer with one character, e.g. "m"; got {answer!r}.')
    if answer.lower() == right:
        return None
    return (
        f"Not {answer!r}: run the next cell, which shows alpha when the model writes the month, "
        "and find the largest weight."
    )


def _mean_accuracy(history: dict) -> float:
    """The mean held-out exact match over a run's measurements (how fast it learned)."""
    accuracy = history["accuracy"] if isinstance(history, dict) else None
    if not accuracy:
        raise _Failure(
            "answer_type", "Pass the histories that `fit` returned: dot=..., additive=..."
        )
    return sum(accuracy) / len(accuracy)


def _right_faster_score(dot: dict, additive: dict) -> str:
    a_dot, a_add = _mean_accuracy(dot), _mean_accuracy(additive)
    if abs(a_dot - a_add) < 0.03:  # within the noise of one seed: either answer is fair
        return "either"
    return "dot" if a_dot > a_add else "additive"


def _judge_faster_score(answer: object, right: str) -> str | None:
    if answer not in ("dot", "additive"):
        raise _Failure("answer_type", f'Answer "dot" or "additive"; got {answer!r}.')
    if right in ("either", answer):
        return None
    return "Look again at your two curves: which one is higher over the first steps?"


@dataclass(frozen=True)
class _Question:
    right: Callable[..., object]  # (**measured) -> the right answer, computed
    judge: Callable[[object, object], str | None]  # (answer, right) -> None, or a hint
    measured: tuple[str, ...] = ()  # keyword arguments check_answer needs


QUESTIONS: dict[str, _Question] = {
    "variance_qk": _Question(_right_variance_qk, _judge_variance_qk),
    "dilated_path": _Question(_right_dilated_path, _judge_dilated_path),
    "month_attention": _Question(_right_month_attention, _judge_month_attention),
    "faster_score": _Question(_right_faster_score, _judge_faster_score, ("dot", "additive")),
}


def _answer_body(question: _Question, answer: object, measured: dict) -> str:
    missing = [key for key in question.measured if key not in measured]
    if missing:
        raise _Failure(
            "answer_type", "Also pass your measurement: " + ", ".join(f"{k}=..." for k in missing)
        )
    right = question.right(**measured)
    if solutions_mode():  # CI: the computed answer must pass its own judge
        answer = next(a for a in (right, "dot") if a != "either")
    if answer is Ellipsis or answer is None:
        raise _Failure("not_answered", "Replace `...` with your answer and run the cell again.")
    hint = question.judge(answer, right)
    if hint is not None:
        raise _Failure("wrong_answer", hint)
    return f"{answer!r} is right."


def _question(question: str) -> _Question:
    if question not in QUESTIONS:
        raise ValueError(f"unknown question {question!r}; the questions are {', '.join(QUESTIONS)}")
    return QUESTIONS[question]


def right_answer(question: str, **measured: object) -> object:
    """The computed right answer of ``question`` (``measured``: as for :func:`check_answer`);
    "either" where the measurement cannot tell two answers apart."""
    return _question(question).right(**measured)


def check_answer(question: str, answer: object, **measured: object) -> CheckResult:
    """Check the answer to a predict-then-run question of :data:`QUESTIONS`.

    ``measured``: what the question's answer is computed from (the experiment's histories).
    In solutions mode the computed answer is checked instead of ``answer``.
    """
    asked = _question(question)
    return _run(question, lambda: None, lambda _: _answer_body(asked, answer, measured))


# --------------------------------------------------------------------------- summary
@dataclass(frozen=True, repr=False)
class Summary:
    """The latest result of every exercise (shown as a table)."""

    results: tuple[tuple[str, CheckResult | None], ...]

    @property
    def done(self) -> int:
        return sum(1 for _, r in self.results if r is not None and r.ok)

    def __str__(self) -> str:
        lines = [f"{self.done} of {len(self.results)} exercises correct"]
        for name, r in self.results:
            lines.append(f"  {r.title if r else '· ' + name + ': not checked yet'}")
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        rows = []
        for name, r in self.results:
            if r is None:
                cell = f"· {name}: not checked yet"
            else:
                colour = "#1b5e20" if r.ok else "#b71c1c"
                cell = f'<span style="color:{colour}">{html.escape(r.title)}</span>'
            rows.append(f"<tr><td>{cell}</td></tr>")
        return (
            f"<b>{self.done} of {len(self.results)} exercises correct</b>"
            f'<table style="margin:4px 0">{"".join(rows)}</table>'
        )


def summary() -> Summary:
    """The latest check of each exercise in this session."""
    return Summary(tuple((name, _LAST.get(name)) for name in EXERCISES))
