r"""The comparisons a check makes, each turning a difference into a sentence: the kind of the
output (:func:`as_tensor`, :func:`as_tuple`), its shape, NaN and inf, masked weights, rows that
sum to 1, and closeness to the reference with the known mistakes named (:func:`check_close`).
Each raises a :class:`~attnlab.checks.results.Failure` of its category."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.checks.results import Failure
from attnlab.guard.errors import kind_problem

__all__ = [
    "ATOL",
    "RTOL",
    "ROW_SUM_TOL",
    "DTYPE",
    "DEVICE",
    "as_tensor",
    "as_tuple",
    "check_shape",
    "check_finite",
    "check_masked_zero",
    "check_rows",
    "close",
    "check_close",
    "hidden",
    "randn",
    "shape_str",
]

ATOL, RTOL = 1e-5, 1e-4  # how close to the reference counts as equal (float32)
ROW_SUM_TOL = 1e-4  # |sum_i alpha_{t,i} - 1| allowed
DTYPE, DEVICE = torch.float32, torch.device("cpu")  # what the models work in


def as_tensor(x: object, what: str) -> Tensor:
    if isinstance(x, Tensor):
        problem = kind_problem(x, DTYPE, DEVICE, f"your {what}: your function")
        if problem is not None:
            raise Failure("wrong_dtype", problem[0].upper() + problem[1:] + ".")
        return x.detach()
    hint = " (convert with `torch.as_tensor`)" if hasattr(x, "__array__") else ""
    raise Failure(
        "wrong_type", f"Your {what} should be a torch.Tensor, got {type(x).__name__}{hint}."
    )


def as_tuple(x: object, names: tuple[str, ...]) -> tuple:
    want = "(" + ", ".join(names) + ")"
    if not isinstance(x, tuple | list) or len(x) != len(names):
        got = f"a {len(x)}-tuple" if isinstance(x, tuple | list) else type(x).__name__
        raise Failure("wrong_type", f"Return the tuple {want}; got {got}.")
    return tuple(as_tensor(v, n) for v, n in zip(x, names, strict=True))


def check_shape(
    got: Tensor, expected: tuple[int, ...], what: str, where_: str, hint: str = ""
) -> None:
    if tuple(got.shape) != tuple(expected):
        raise Failure(
            "wrong_shape",
            f"Your {what} has the wrong shape: expected {tuple(expected)}, got "
            f"{tuple(got.shape)} {where_}." + hint,
        )


def check_finite(got: Tensor, what: str, where_: str, hint: str = "") -> None:
    bad = ~torch.isfinite(got)
    if bad.any():
        kinds = " and ".join(k for k, m in (("NaN", got.isnan()), ("inf", got.isinf())) if m.any())
        raise Failure(
            "nan", f"Your {what} holds {int(bad.sum())} {kinds} value(s) {where_}." + (hint or "")
        )


def check_masked_zero(weights: Tensor, mask: Tensor | None, where_: str, hint: str) -> None:
    if mask is None:
        return
    forbidden = ~mask.expand_as(weights)
    leaked = weights[forbidden]
    if (leaked != 0).any():
        raise Failure(
            "mask",
            f"{int((leaked != 0).sum())} weight(s) where the mask is False are not exactly 0 "
            f"(the largest is {leaked.abs().max().item():.3g}) {where_}. " + hint,
        )


def check_rows(weights: Tensor, mask: Tensor | None, where_: str, hint: str) -> None:
    sums = weights.sum(dim=-1)  # (..., m): sum_i alpha_{t,i}
    live = torch.ones_like(sums, dtype=torch.bool)
    if mask is not None:
        live = mask.expand_as(weights).any(dim=-1)  # rows with at least one allowed key
    off = (sums - 1).abs()[live]
    if off.numel() and off.max() > ROW_SUM_TOL:
        worst = sums[live][off.argmax()].item()
        raise Failure(
            "not_normalised",
            f"The weights of each row (over the n keys, the last dimension) should sum to 1; "
            f"one row sums to {worst:.4g} {where_}. " + hint,
        )


def close(got: Tensor, ref: Tensor) -> bool:
    return got.shape == ref.shape and torch.allclose(got, ref, rtol=RTOL, atol=ATOL)


def check_close(
    got: Tensor,
    ref: Tensor,
    what: str,
    where_: str,
    hint: str = "",
    alternatives: tuple[tuple[Tensor, str], ...] = (),
) -> None:
    if close(got, ref):
        return
    diff = (got - ref).abs().max().item()
    diagnosis = next((why for alt, why in alternatives if close(got, alt)), hint)
    raise Failure(
        "mismatch",
        f"The values of your {what} differ from the reference {where_}: "
        f"max abs difference |yours - reference| = {diff:.3g} (tolerance about {ATOL:g}). "
        + diagnosis,
    )


def hidden(i: int, total: int, details: str) -> str:
    return f"on hidden example {i} of {total} ({details})"


def randn(g: torch.Generator, *shape: int, scale: float = 1.0) -> Tensor:
    return torch.randn(*shape, generator=g) * scale


def shape_str(**tensors: Tensor | None) -> str:
    return ", ".join(f"{k} {tuple(v.shape)}" for k, v in tensors.items() if v is not None)
