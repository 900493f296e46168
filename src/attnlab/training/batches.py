"""Examples as tensors: padded (source, target) ids and the training batches.

>>> from attnlab.text.tasks import get_task
>>> t = get_task("dates")
>>> encode_pairs([("3 May 1979", "1979-05-03")], t.src_vocab, t.tgt_vocab)["src"].shape
torch.Size([1, 11])

Every model trains on the batches of :func:`batches` (the date and reversal models and the
word models alike), padded by :func:`attnlab.text.padding.padded`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.decode import source_lengths, source_row
from attnlab.models.base import Seq2SeqModel
from attnlab.text.padding import padded, teacher_forced_input
from attnlab.text.vocab import SPECIALS, Vocab, normalise
from attnlab.training.config import TrainConfig

__all__ = [
    "Examples",
    "batches",
    "drop_words",
    "encode_pairs",
    "padded_pairs",
    "take",
]

Batch = tuple[Tensor, Tensor, Tensor, Tensor]  # src, src_len, tgt_in, tgt_out


def encode_pairs(pairs: list[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> dict:
    """Padded id tensors of (source, target) pairs.

    src (N, n) = x_1..x_n <eos> <pad>..., src_len (N,), tgt_in (N, T) = <sos> y_1..y_m <pad>...,
    tgt_out (N, T) = y_1..y_m <eos> <pad>... (the next token at every position).
    """
    srcs = [source_row(src_vocab, normalise(s, src_vocab)) for s, _ in pairs]
    tgts = [tgt_vocab.encode(t) for _, t in pairs]
    return padded_pairs(srcs, tgts, src_vocab, tgt_vocab)


def padded_pairs(
    srcs: list[list[int]], tgts: list[list[int]], src_vocab: Vocab, tgt_vocab: Vocab
) -> dict:
    """Source ids (each ending in <eos>) and target ids as the padded tensors of
    :func:`encode_pairs`: src (N, n), src_len (N,), tgt_in (N, T), tgt_out (N, T)."""
    src = padded(srcs, src_vocab.pad)  # (N, n)
    return {
        "src": src,
        "src_len": source_lengths(src, src_vocab.pad),  # (N,)
        "tgt_in": teacher_forced_input(tgts, tgt_vocab),  # (N, T)
        "tgt_out": padded([[*y, tgt_vocab.eos] for y in tgts], tgt_vocab.pad),  # (N, T)
    }


def take(data: dict, idx: Tensor, pad: int) -> dict[str, Tensor]:
    """The examples ``idx`` (B,) of ``data``, trimmed to their longest source and target:
    src (B, n), src_len (B,), tgt_in (B, T), tgt_out (B, T)."""
    src_len = data["src_len"][idx]
    tgt_out = data["tgt_out"][idx]
    n, T = int(src_len.max()), int((tgt_out != pad).sum(dim=1).max())
    batch = {"src": data["src"][idx, :n], "src_len": src_len}
    for key in ("tgt_in", "tgt_out"):
        batch[key] = data[key][idx, :T]
    return batch


def batches(data: dict, cfg: TrainConfig, src_vocab: Vocab, tgt_vocab: Vocab) -> Iterator[Batch]:
    """Endless training batches (src, src_len, tgt_in, tgt_out) of ``data``, drawn from
    ``cfg.seed``: ``cfg.batch_size`` examples uniformly, or (``cfg.bucket``) among neighbours
    in length; each input word dropped to <unk> with probability ``cfg.word_dropout``."""
    gen = torch.Generator().manual_seed(cfg.seed)  # the order of the batches, the dropped words
    N, B = len(data["src"]), cfg.batch_size
    by_length = torch.argsort(data["src_len"], stable=True)
    window = min(N, 8 * B)  # bucket: B examples among 8B neighbours in length order
    while True:
        if not cfg.bucket:
            idx = torch.randint(N, (B,), generator=gen)
        else:
            first = int(torch.randint(N - window + 1, (1,), generator=gen))
            idx = by_length[first + torch.randint(window, (B,), generator=gen)]
        batch = take(data, idx, tgt_vocab.pad)
        yield _with_dropout(batch, cfg.word_dropout, gen, src_vocab.unk, tgt_vocab.unk)


def _with_dropout(batch: dict, p: float, gen: torch.Generator, src_unk: int, tgt_unk: int) -> Batch:
    """The batch, tokens dropped to <unk> (source and decoder input) with probability ``p``."""
    src, tgt_in, tgt_out = batch["src"], batch["tgt_in"], batch["tgt_out"]
    if p <= 0:
        return src, batch["src_len"], tgt_in, tgt_out
    read = drop_words(src, p, gen, src_unk)
    return read, batch["src_len"], drop_words(tgt_in, p, gen, tgt_unk), tgt_out


def drop_words(ids: Tensor, p: float, gen: torch.Generator, unk: int) -> Tensor:
    """ids with each real word (not a special token) made ``unk`` with probability p."""
    drop = (torch.rand(ids.shape, generator=gen) < p) & (ids >= len(SPECIALS))
    return ids.masked_fill(drop, unk)


@dataclass
class Examples:
    """What a model trains on: the model (untrained, or given), its training examples as
    the padded tensors of :func:`encode_pairs`, and the held-out score measured during
    training (``measure(model)``, the higher the better), named ``metric`` in the history."""

    model: Seq2SeqModel
    data: dict
    measure: Callable[[Seq2SeqModel], float]
    metric: str
