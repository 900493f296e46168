"""Rows of token ids as one padded tensor, and the decoder's teacher-forced input.

    >>> padded([[5, 6, 2], [7, 2]], pad=0).tolist()
    [[5, 6, 2], [7, 2, 0]]

The one padding of the package: training batches (:mod:`attnlab.training.batches`), decoding
many texts at once and reading an output back (:mod:`attnlab.decode`) all pad with it, and
always with the vocabulary's ``<pad>`` (:attr:`attnlab.text.vocab.Vocab.pad`).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnlab.text.vocab import Vocab

__all__ = ["padded", "teacher_forced_input"]


def padded(rows: Sequence[Sequence[int] | Tensor], pad: int, length: int | None = None) -> Tensor:
    """``rows`` of ids as one (N, length) long tensor, each row filled up with ``pad``
    (``length``: the longest row's, by default)."""
    rows = [r.tolist() if isinstance(r, Tensor) else list(r) for r in rows]
    length = max(map(len, rows)) if length is None else length
    return torch.tensor([r + [pad] * (length - len(r)) for r in rows], dtype=torch.long)


def teacher_forced_input(outputs: Sequence[Sequence[int]], vocab: Vocab) -> Tensor:
    """What the decoder reads when it is given the outputs (each without ``<eos>``) instead
    of its own: <sos> y_1..y_T, padded: (N, longest T + 1), so that the last position of each
    row predicts its <eos>."""
    return padded([[vocab.sos, *y] for y in outputs], vocab.pad)
