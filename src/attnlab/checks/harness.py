r"""The harness every check runs in: the result, the categories, running a student's function
safely, and the comparisons that turn a difference into a sentence.

:func:`run_check` runs a check's body in a :class:`attnlab.guard.sandbox.Session` with the library's
own functions in place (:func:`attnlab.guard.sandbox.library_in_place`), under ``torch.no_grad`` and
a forked random state; whatever happens (a wrong answer, an exception of any kind, the time
budget, the user's stop button) it answers a :class:`CheckResult`, and raises only in
solutions mode.  :func:`call_student` is the one way a check calls the student's function.
"""

from __future__ import annotations

import copy
import html
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.guard.sandbox import (
    OutOfTime,
    Session,
    StudentRaised,
    describe,
    kind_problem,
    library_in_place,
    where,
)

__all__ = [
    "ENV_VAR",
    "CATEGORIES",
    "CheckResult",
    "Failure",
    "solutions_mode",
    "run_check",
    "session",
    "call_student",
    "LAST",
    "Summary",
]

#: Set this environment variable to 1 to fill in the reference answers (CI does).
ENV_VAR = "ATTNLAB_SOLUTIONS"

#: What a check can answer: ``CheckResult.category`` -> the words it is shown with.
CATEGORIES = {
    "ok": "correct",
    "not_implemented": "not implemented yet",
    "exception": "raised an exception",
    "wrong_type": "wrong return type",
    "wrong_dtype": "wrong dtype or device",
    "wrong_shape": "wrong shape",
    "nan": "NaN in the output",
    "mask": "masked weights not zero",
    "not_normalised": "rows not summing to 1",
    "mismatch": "mismatch against the reference",
    "translation": "the translations change",
    "alpha": "alpha differs inside the model",
    "unavailable": "model not available",
    "timeout": "took too long",
    "interrupted": "interrupted",
    "side_effect": "changed something outside the function",
    "not_answered": "not answered yet",
    "wrong_answer": "not right yet",
    "answer_type": "not an answer of the right kind",
}

ATOL, RTOL = 1e-5, 1e-4  # how close to the reference counts as equal (float32)
ROW_SUM_TOL = 1e-4  # |sum_i alpha_{t,i} - 1| allowed
DTYPE, DEVICE = torch.float32, torch.device("cpu")  # what the models work in


def solutions_mode() -> bool:
    """True when ``ATTNLAB_SOLUTIONS`` is set to 1 (or true/yes): CI's mode."""
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes")


# --------------------------------------------------------------------------- the result
@dataclass(frozen=True, repr=False)
class CheckResult:
    """What a check found.

    ``ok``; ``category``, a key of :data:`CATEGORIES`; ``details``, the explanation;
    ``message``, the whole answer in one line: ``"✗ dot_score: wrong shape. <details>"``;
    ``printed``: what the student's function printed, cut to a few lines ('' if nothing).
    """

    name: str
    ok: bool
    category: str
    details: str
    printed: str = ""

    @property
    def title(self) -> str:
        mark = "✓" if self.ok else "✗"
        return f"{mark} {self.name}: {CATEGORIES[self.category]}"

    @property
    def message(self) -> str:
        return f"{self.title}. {self.details}"

    def __str__(self) -> str:
        return self.message + (f"\n{self.printed}" if self.printed else "")

    __repr__ = __str__

    def _repr_html_(self) -> str:
        if self.ok:
            fg, bg = "#1b5e20", "#e8f5e9"
        elif self.category in ("not_implemented", "not_answered"):
            fg, bg = "#7a5200", "#fff8e1"
        else:
            fg, bg = "#b71c1c", "#ffebee"
        body = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(self.details))
        printed = (
            f'<pre style="margin:4px 0 0;font-size:0.9em">{html.escape(self.printed)}</pre>'
            if self.printed
            else ""
        )
        return (
            f'<div style="border-left:6px solid {fg};background:{bg};color:#222;'
            f'padding:6px 12px;margin:4px 0;font-size:1.05em">'
            f'<b style="color:{fg}">{html.escape(self.title)}</b><br>{body}{printed}</div>'
        )


class Failure(Exception):
    """Raised inside a check to stop at the first thing that is wrong."""

    def __init__(self, category: str, message: str):
        super().__init__(message)
        self.category, self.message = category, message


LAST: dict[str, CheckResult] = {}  # the latest result of each exercise, for summary()
_SESSIONS: list[Session] = []  # the session of the check now running (innermost last)


# --------------------------------------------------------------------------- running a check
def session() -> Session:
    """The session of the check now running."""
    return _SESSIONS[-1]


def run_check(
    name: str, fn: object, body: Callable[[Callable], str], usage: str | None = None
) -> CheckResult:
    """Run ``body(fn)`` safely; turn what happens into a CheckResult; raise only in solutions
    mode (AssertionError, when the result is not ok)."""
    guard = Session()
    _SESSIONS.append(guard)
    try:
        result = _result(name, fn, body, usage, guard)
    finally:
        _SESSIONS.pop()
    LAST[name] = result
    if not result.ok and solutions_mode():
        raise AssertionError(str(result))
    return result


def _result(
    name: str, fn: object, body: Callable[[Callable], str], usage: str | None, guard: Session
) -> CheckResult:
    replaced: list[str] = []
    try:
        if not callable(fn):
            usage = usage or f"`check_{name}` needs your function, e.g. `check_{name}({name})`"
            raise Failure("wrong_type", f"{usage}; got {type(fn).__name__}.")
        with library_in_place() as replaced, torch.random.fork_rng(devices=[]), torch.no_grad():
            category, details = "ok", body(fn)
    except Failure as failure:
        category, details = failure.category, failure.message
    except OutOfTime as error:
        category, details = "timeout", guard.time_message(error)
    except KeyboardInterrupt:
        category, details = (
            "interrupted",
            (
                "The check was interrupted (the kernel's stop button, or a KeyboardInterrupt) "
                "before it finished, so it says nothing about your function yet: run it again."
            ),
        )
    except StudentRaised as raised:  # raised where no check expected it
        category = "exception"
        details = f"Your function raised {describe(raised.error)}{where(raised.error)}."
    except BaseException as error:  # noqa: BLE001 - a strange output must never crash the check
        category, details = "exception", f"Checking your output failed: {describe(error)}."
    return CheckResult(name, *_verdict(category, details, guard, replaced))


def _verdict(
    category: str, details: str, guard: Session, replaced: list[str]
) -> tuple[bool, str, str, str]:
    """(ok, category, details, printed), with what the function changed and put back said."""
    changed = guard.changed_message()
    if changed and category == "ok":
        category = "side_effect"
        details = (
            f"Careful: {changed} A function must not change the library or the model: "
            f"return your result instead. Apart from that: {details}"
        )
    elif changed:
        details = f"{details} Also, {changed}"
    elif category == "ok" and replaced:
        details += (
            f" (Your session has replaced {', '.join(replaced)}; the check used the library's own.)"
        )
    return category == "ok", category, details, guard.printed.shown()


def _clone(x: object) -> object:
    if isinstance(x, Tensor):
        return x.clone()
    if isinstance(x, nn.Module):
        return copy.deepcopy(x)
    return x


def call_student(fn: Callable, args: tuple, where_: str) -> object:
    """fn(*copies of args) in the check's session; what goes wrong becomes a Failure."""
    guard = session()
    try:
        return guard.call(fn, *(_clone(a) for a in args))
    except StudentRaised as raised:
        error = raised.error
        if isinstance(error, NotImplementedError):
            raise Failure(
                "not_implemented",
                "Replace `raise NotImplementedError` under `# YOUR CODE HERE` with your code, "
                "run that cell, then run this one again.",
            ) from None
        raise Failure(
            "exception", f"Your function raised {describe(error)}{where(error)} {where_}."
        ) from None
    except OutOfTime as error:
        raise Failure("timeout", f"{guard.time_message(error)} ({where_})") from None


# --------------------------------------------------------------------------- comparisons
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
