r"""The masked softmax: alpha = softmax(scores) over the allowed keys, masked weights exactly 0.

``check_masked_softmax(fn)`` runs the student's ``masked_softmax(scores, mask)`` on hidden
scores (no mask, a mask with a fully masked row, a padding mask, huge scores) and guesses from
the output what went wrong (NaN from 0/0 or overflow, columns summing to 1, ...).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlab import attention
from attnlab.checks.compare import (
    ROW_SUM_TOL,
    as_tensor,
    check_close,
    check_finite,
    check_masked_zero,
    check_rows,
    check_shape,
    hidden,
    randn,
)
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.guard.library import as_imported

__all__ = ["REFERENCES", "BODIES", "check_masked_softmax"]

_MASK_HINT = (  # the recipe of attnlab.attention.masked_softmax, the library's one way to mask
    "Give the forbidden scores the lowest float, `torch.finfo(scores.dtype).min`, before the "
    "softmax (look up `torch.where`): its exp is exactly 0, and a row with nothing allowed "
    "stays a number, not NaN."
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
                "softmax is 0/0 = NaN; give the forbidden scores the lowest float instead, "
                "then set the forbidden weights to exactly 0."
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


#: The reference: the library's own masked_softmax, as imported.
REFERENCES: dict[str, Callable] = {"masked_softmax": as_imported(attention, "masked_softmax")}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"masked_softmax": _softmax_body}
