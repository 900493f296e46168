"""A score function of the room's own, swapped into a trained model: checked while it runs.

``checked_score(fn, session)`` calls ``fn`` (query (B, m, d_q), keys (B, n, d_k)) -> scores
(B, m, n) inside a :class:`attnlab.guard.sandbox.Session` (a time budget, what it changes put
back, its prints captured); each way it can break is one line, a :class:`ScoreError`.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from attnlab.guard import inputs
from attnlab.guard.sandbox import OutOfTime, Session, StudentRaised, describe, kind_problem

__all__ = ["ScoreError", "checked_score"]


class ScoreError(ValueError):
    """A swapped-in score function that fails, returns the wrong shape or NaN."""


def checked_score(fn: Callable, session: Session | None = None) -> Callable:
    """``fn`` called in ``session`` (a time budget, state put back, prints captured), wrapped
    so that each way it can break says so in one line (a ScoreError): any exception it raises,
    ``SystemExit`` included, the budget, a wrong type, dtype, device or shape, NaN."""
    name = getattr(fn, "__name__", type(fn).__name__)
    who = f"your score {name}"
    session = session or Session()

    def score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        try:
            e = session.call(fn, query, keys)
        except StudentRaised as raised:  # the student's code: any error, in one line
            raise ScoreError(f"{who} raised {describe(raised.error)}") from None
        except OutOfTime as error:
            raise ScoreError(session.time_message(error, who)) from None
        problem = kind_problem(e, query.dtype, query.device, who)
        if problem is not None:
            raise ScoreError(problem)
        return inputs.validate_scores(e, query, keys, who, error=ScoreError)  # (B, m, n), finite

    return score
