r"""What a check answers: a :class:`CheckResult` in one of the :data:`CATEGORIES`, shown as a
green ✓ or a red ✗ box; :class:`Failure` stops a check at the first thing that is wrong;
:class:`Summary` shows the latest result of every exercise (kept in :data:`LAST`)."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

__all__ = ["CATEGORIES", "CheckResult", "Failure", "LAST", "Summary"]

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
    "not_allowed": "uses what a graded cell may not",
    "not_answered": "not answered yet",
    "wrong_answer": "not right yet",
    "answer_type": "not an answer of the right kind",
}


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
