"""How many threads torch runs the models on: set for a block, then put back.

    >>> with torch_threads(1):
    ...     torch.get_num_threads()
    1

Every place that sets torch's thread count for a piece of work uses :func:`torch_threads`:
training (a recipe's ``threads``: the last digits of the results depend on it), the widgets
and the in-model checks (one thread: they run one short input, or a few hundred, where a
second thread brings nothing, and on a busy two-core laptop waiting for it made them several
times slower, measured).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

__all__ = ["torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run torch on ``n`` threads inside the block, then restore the setting (on error too)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
