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
=================================  ==========================================================
"""

from __future__ import annotations

import copy
import html
import os
import re
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
        elif self.category == "not_implemented":
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
        score.U.bias.zero_()  # the exercise's formula has no bias
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


_REFERENCES: dict[str, Callable] = {
    "dot_score": attention.dot_score,
    "general_score": _ref_general_score,
    "additive_score": _ref_additive_score,
    "masked_softmax": attention.masked_softmax,
    "decode_step": _ref_decode_step,
    "scaled_dot_product_attention": attention.scaled_dot_product_attention,
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
def _run(name: str, fn: object, body: Callable[[Callable], str]) -> CheckResult:
    """Run ``body(fn)``; turn the first failure into a CheckResult; raise only in solutions mode."""
    try:
        if not callable(fn):
            raise _Failure(
                "wrong_type",
                f"`check_{name}` needs your function, e.g. `check_{name}({name})`; "
                f"got {type(fn).__name__}.",
            )
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
        known_mistakes = alternatives(*args) if alternatives else ()
        _check_close(got, ref, "scores", where, hint, known_mistakes)
    return f"Your scores match the reference on {len(examples)} hidden examples."


def check_dot_score(fn: Callable) -> CheckResult:
    """Check ``dot_score(s, h)``: score(s, h_i) = s^T h_i, (B, m, d), (B, n, d) -> (B, m, n)."""
    examples = _score_examples(701, ((2, 3, 5, 4, 4), (3, 1, 7, 6, 6)))

    def alternatives(s, h):
        return (
            (
                attention.scaled_dot_score(s, h),
                "You divided by sqrt(d): that is the scaled dot score of the Transformer; "
                "here the score is the plain s^T h.",
            ),
        )

    return _run(
        "dot_score",
        fn,
        lambda f: _check_scores(
            f,
            examples,
            "dot_score",
            "score[b, t, i] should be the dot product of s[b, t] and h[b, i]: `s @ h^T`.",
            alternatives,
        ),
    )


def check_general_score(fn: Callable) -> CheckResult:
    """Check ``general_score(s, h, W_a)``: s^T W_a h, W_a (d_s, d_h) -> scores (B, m, n)."""
    g = torch.Generator().manual_seed(702)
    examples = [
        (s, h, _randn(g, s.shape[-1], h.shape[-1], scale=0.5))
        for s, h in _score_examples(703, ((2, 3, 5, 4, 6), (1, 1, 7, 8, 3)))
    ]

    return _run(
        "general_score",
        fn,
        lambda f: _check_scores(
            f,
            examples,
            "general_score",
            "score = s^T W_a h for every pair: `(s @ W_a) @ h^T`, with W_a of shape (d_s, d_h).",
        ),
    )


def check_additive_score(fn: Callable) -> CheckResult:
    """Check ``additive_score(s, h, W, U, v)``: v^T tanh(W s + U h) -> scores (B, m, n)."""
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
        return ((no_tanh, "You left out the tanh: v^T tanh(W s + U h)."),)

    return _run(
        "additive_score",
        fn,
        lambda f: _check_scores(
            f,
            examples,
            "additive_score",
            "score[b, t, i] = v^T tanh(W s_t + U h_i): W s has shape (B, m, d_a), U h has "
            "(B, n, d_a); add them as (B, m, 1, d_a) + (B, 1, n, d_a), apply tanh, then "
            "multiply by v.",
            alternatives,
        ),
    )


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
