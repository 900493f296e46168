"""Examples as tensors: padded (source, target) ids, batches of them, and the held-out score.

>>> from attnlab.text.vocab import get_task
>>> t = get_task("dates")
>>> encode_pairs([("3 May 1979", "1979-05-03")], t.src_vocab, t.tgt_vocab)["src"].shape
torch.Size([1, 11])
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.decode import greedy
from attnlab.models.base import Seq2SeqModel
from attnlab.text.vocab import Vocab, normalise

__all__ = ["encode_pairs", "evaluate", "padded", "take"]


def encode_pairs(pairs: list[tuple[str, str]], src_vocab: Vocab, tgt_vocab: Vocab) -> dict:
    """Padded id tensors of (source, target) pairs.

    src (N, n) = x_1..x_n <eos> <pad>..., src_len (N,), tgt_in (N, T) = <sos> y_1..y_m <pad>...,
    tgt_out (N, T) = y_1..y_m <eos> <pad>... (the next token at every position).
    """
    srcs = [
        src_vocab.encode(normalise(s, src_vocab), unknown="unk") + [src_vocab.eos] for s, _ in pairs
    ]
    tgts = [tgt_vocab.encode(t) for _, t in pairs]
    return padded(srcs, tgts, tgt_vocab)


def padded(srcs: list[list[int]], tgts: list[list[int]], tgt_vocab: Vocab) -> dict:
    """Source ids (each ending in <eos>) and target ids as the padded tensors of
    :func:`encode_pairs`: src (N, n), src_len (N,), tgt_in (N, T), tgt_out (N, T)."""
    n, T = max(map(len, srcs)), max(map(len, tgts)) + 1
    pad = lambda ids, length: ids + [0] * (length - len(ids))  # noqa: E731  (<pad> = 0)
    src = torch.tensor([pad(s, n) for s in srcs])  # (N, n)
    tgt_in = torch.tensor([pad([tgt_vocab.sos, *y], T) for y in tgts])  # (N, T)
    tgt_out = torch.tensor([pad([*y, tgt_vocab.eos], T) for y in tgts])  # (N, T)
    src_len = torch.tensor([len(s) for s in srcs])  # (N,)
    return {"src": src, "src_len": src_len, "tgt_in": tgt_in, "tgt_out": tgt_out}


def take(data: dict, idx: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The examples ``idx`` (B,) of ``data``, trimmed to their longest source and target:
    src (B, n), src_len (B,), tgt_in (B, T), tgt_out (B, T)."""
    src_len = data["src_len"][idx]
    n = int(src_len.max())
    tgt_out = data["tgt_out"][idx]
    T = int((tgt_out != 0).sum(dim=1).max())
    return data["src"][idx, :n], src_len, data["tgt_in"][idx, :T], tgt_out[:, :T]


@torch.no_grad()
def evaluate(
    model: Seq2SeqModel, pairs: list[tuple[str, str]], batch_size: int = 1000
) -> dict[str, float]:
    """Greedy ``exact_match`` (whole output right) and ``token_accuracy`` (right characters
    at the right positions, over the target's characters) on ``pairs``."""
    data = encode_pairs(pairs, model.src_vocab, model.tgt_vocab)
    exact, correct, total = 0, 0, 0
    for i in range(0, len(pairs), batch_size):
        idx = torch.arange(i, min(i + batch_size, len(pairs)))
        src, src_len, _, tgt_out = take(data, idx)
        outs = greedy(model, src, src_len)
        for out, y in zip(outs, tgt_out.tolist(), strict=False):
            y = y[: y.index(model.tgt_vocab.eos)]
            exact += out == y
            correct += sum(a == b for a, b in zip(out, y, strict=False))
            total += len(y)
    return {"exact_match": exact / len(pairs), "token_accuracy": correct / max(total, 1)}
