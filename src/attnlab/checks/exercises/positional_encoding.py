r"""The sinusoidal positional encoding (Vaswani et al., 2017): PE[pos, 2i] = sin, PE[pos, 2i+1] = cos.

``check_positional_encoding(fn)`` compares the student's ``positional_encoding(n, d)`` with the
library's for a few sizes and names the usual slips (sine and cosine swapped, not interleaved,
a frequency per column, positions from 1).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from attnlab import attention
from attnlab.checks.compare import as_tensor, check_close, check_finite, check_shape, hidden
from attnlab.checks.harness import call_student, run_check
from attnlab.checks.results import CheckResult
from attnlab.guard.library import as_imported

__all__ = ["REFERENCES", "BODIES", "check_positional_encoding"]


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
        where = hidden(i, len(sizes), f"n = {n}, d = {d}")
        pe = as_tensor(call_student(fn, (n, d), where), "encoding")
        check_shape(
            pe,
            (n, d),
            "encoding",
            where,
            " One row per position, one column per dimension: (n, d).",
        )
        check_finite(pe, "encoding", where)
        check_close(
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
    return run_check("positional_encoding", fn, _pe_body)


#: The reference: the library's own function, as imported.
REFERENCES: dict[str, Callable] = {
    "positional_encoding": as_imported(attention, "positional_encoding")
}

#: The check without its harness (in_model runs it first).
BODIES: dict[str, Callable[[Callable], str]] = {"positional_encoding": _pe_body}
