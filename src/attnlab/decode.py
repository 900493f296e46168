r"""Decoding: greedy, beam search, and ``steps()``, which exposes alpha at every output step.

Every model (``RNNEncDec``, ``RNNSearch``, ``Transformer``) is a :class:`Seq2SeqModel` and
decodes through the same two batched calls:

* ``state = model.start(src, src_len)``: encode the source ids ``src`` (B, n);
* ``out = model.step(state, y_prev)``: one decoder step from the previous output tokens
  y_{t-1} (B,), returning a :class:`StepOutput` with the logits (B, V) of y_t, the attention
  weights alpha_t over the source, the context c_t (or None) and the new state.

A state is a dict of tensors whose first dimension is the batch, so beam search can reorder
it (``state[key][idx]``).

``steps(model, text)`` yields one :class:`Step` per output character, **not** counting the
final ``<eos>``: joining the tokens gives exactly ``model.translate(text)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor, nn

from attnlab.data import EOS, InvalidInput, Vocab, normalise, unknown_message

__all__ = ["Step", "StepOutput", "Seq2SeqModel", "steps", "greedy", "beam_search"]

State = dict[str, Tensor]


@dataclass
class StepOutput:
    """What one decoder step returns (batched)."""

    logits: Tensor  # (B, V): scores of y_t before the softmax
    alpha: Tensor  # (B, n) or (B, layers, heads, n): attention over the source
    context: Tensor | None  # (B, d): c_t for RNNSearch, else None
    state: State  # the decoder state after this step


@dataclass
class Step:
    """One output step, as the widgets show it.

    t: 0-based position of the output token; token: the character written; prob: its
    probability p(y_t | y_<t, x); alpha: attention over the source tokens (sums to 1 over the
    last axis): (n_src,) for RNNSearch, (layers, heads, n_src) cross-attention for the
    Transformer, a one-hot on the last source position for RNNEncDec; context: c_t (numpy)
    for RNNSearch, else None.
    """

    t: int
    token: str
    prob: float
    alpha: np.ndarray
    context: np.ndarray | None


class Seq2SeqModel(nn.Module):
    """What every model shares: vocabularies, input checks, ``translate``, ``source_tokens``.

    Subclasses set ``kind`` and implement ``forward(src, src_len, tgt_in) -> logits``
    (teacher forcing, for training), ``start`` and ``step`` (for decoding).
    """

    kind: str = ""

    def __init__(self, src_vocab: Vocab, tgt_vocab: Vocab, max_src_len: int, max_tgt_len: int):
        super().__init__()
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.max_src_len, self.max_tgt_len = max_src_len, max_tgt_len
        self.card: dict | None = None  # the JSON card, set by attnlab.checkpoints on load

    # ---------------------------------------------------------------- input
    def prepare(self, raw: object) -> str:
        """The text exactly as the model reads it, or :class:`InvalidInput` saying why not.

        Strips surrounding whitespace, collapses runs of spaces, lower-cases when the source
        vocabulary is lower-case only; refuses empty text, text longer than
        ``max_src_len`` characters, and characters outside the vocabulary.
        """
        text = normalise(raw, self.src_vocab)
        if len(text) > self.max_src_len:
            raise InvalidInput(
                f"Too long: {len(text)} characters; this model reads at most {self.max_src_len}."
            )
        bad = self.src_vocab.unknown(text)
        if bad:  # name the characters as they were typed, before lower-casing
            typed = " ".join(raw.split()) if isinstance(raw, str) else ""
            low = self.src_vocab.lower_only
            shown = [
                c for c in dict.fromkeys(typed) if self.src_vocab.unknown(c.lower() if low else c)
            ]
            raise InvalidInput(unknown_message(shown or bad))
        return text

    def encode_source(self, text: object) -> Tensor:
        """Source ids (1, n) of the prepared text, with the <eos> the encoder reads last."""
        ids = self.src_vocab.encode(self.prepare(text)) + [self.src_vocab.eos]
        return torch.tensor([ids], dtype=torch.long)

    def source_tokens(self, text: object) -> list[str]:
        """The tokens the encoder sees, in order (the x axis of the heatmap), ending in <eos>."""
        return [*self.prepare(text), EOS]

    # ---------------------------------------------------------------- output
    @torch.no_grad()
    def translate(self, text: object, beam: int | None = None) -> str:
        """The model's translation of ``text``: greedy, or beam search of width ``beam``."""
        src = self.encode_source(text)
        if beam is None:
            ids = greedy(self, src)[0]
        else:
            ids = beam_search(self, src, beam)
        return self.tgt_vocab.decode(ids)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ---------------------------------------------------------------- to implement
    def start(self, src: Tensor, src_len: Tensor) -> State:  # pragma: no cover
        raise NotImplementedError

    def step(self, state: State, y_prev: Tensor) -> StepOutput:  # pragma: no cover
        raise NotImplementedError


def _lengths(src: Tensor, pad: int = 0) -> Tensor:
    return (src != pad).sum(dim=1)  # (B,)


# --------------------------------------------------------------------------- greedy
@torch.no_grad()
def greedy(model: Seq2SeqModel, src: Tensor, src_len: Tensor | None = None) -> list[list[int]]:
    """Greedy decoding of a batch: y_t = argmax p(y | y_<t, x) until <eos> or max_tgt_len.

    src (B, n) padded source ids -> one list of output ids per example (without <eos>).
    """
    was_training = model.training
    model.eval()
    src_len = _lengths(src) if src_len is None else src_len
    B, eos = src.shape[0], model.tgt_vocab.eos
    state = model.start(src, src_len)
    y = torch.full((B,), model.tgt_vocab.sos, dtype=torch.long)  # y_0 = <sos>
    out = torch.zeros(B, 0, dtype=torch.long)
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(model.max_tgt_len + 1):
        so = model.step(state, y)
        state = so.state
        y = so.logits.argmax(dim=-1)  # (B,)
        out = torch.cat([out, y[:, None]], dim=1)
        done |= y == eos
        if bool(done.all()):
            break
    model.train(was_training)
    result = []
    for row in out.tolist():
        result.append(row[: row.index(eos)] if eos in row else row)
    return result


# --------------------------------------------------------------------------- steps
@torch.no_grad()
def steps(model: Seq2SeqModel, text: object, beam: int | None = None) -> Iterator[Step]:
    """Yield one :class:`Step` per output character of ``model.translate(text, beam)``.

    The final <eos> is not yielded, so ``"".join(s.token for s in steps(m, x))`` equals
    ``m.translate(x)``.  With ``beam=k`` the steps follow the best beam (the model is fed
    the beam's tokens, and prob is the model's probability of each of them).
    Raises :class:`InvalidInput` for text the model cannot read (before yielding anything).
    """
    src = model.encode_source(text)  # (1, n); raises InvalidInput
    forced = None if beam is None else beam_search(model, src, beam)
    return _steps(model, src, forced)


def _steps(model: Seq2SeqModel, src: Tensor, forced: list[int] | None) -> Iterator[Step]:
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            state = model.start(src, _lengths(src))
            y = torch.tensor([model.tgt_vocab.sos])
            eos = model.tgt_vocab.eos
            for t in range(model.max_tgt_len + 1):
                so = model.step(state, y)
                state = so.state
                p = torch.softmax(so.logits[0], dim=-1)  # p(y_t | y_<t, x): (V,)
                if forced is None:
                    token_id = int(so.logits[0].argmax())  # exactly what greedy() picks
                else:
                    token_id = forced[t] if t < len(forced) else eos
                if token_id == eos:
                    return
                context = None if so.context is None else so.context[0].numpy().copy()
                yield Step(
                    t=t,
                    token=model.tgt_vocab.itos[token_id],
                    prob=float(p[token_id]),
                    alpha=so.alpha[0].numpy().copy(),
                    context=context,
                )
                y = torch.tensor([token_id])
    finally:
        model.train(was_training)


# --------------------------------------------------------------------------- beam search
@torch.no_grad()
def beam_search(model: Seq2SeqModel, src: Tensor, k: int) -> list[int]:
    """The most probable output found by beam search of width ``k`` (ids, without <eos>).

    src (1, n).  Keeps the k best partial outputs by total log-probability
    sum_t log p(y_t | y_<t, x); a hypothesis ends when it writes <eos>.  With k = 1 this is
    exactly greedy decoding.  The best finished hypothesis wins (highest log-probability).
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"beam width must be an int >= 1; got {k!r}")
    if src.dim() != 2 or src.shape[0] != 1:
        raise ValueError(f"beam_search decodes one source (1, n); got {tuple(src.shape)}")
    was_training = model.training
    model.eval()
    eos, V = model.tgt_vocab.eos, len(model.tgt_vocab)
    state = model.start(src, _lengths(src))
    y = torch.tensor([model.tgt_vocab.sos])  # the live beams' last tokens: (b,)
    scores = torch.zeros(1)  # log-probability of each live beam: (b,)
    seqs: list[list[int]] = [[]]
    finished: list[tuple[float, list[int]]] = []
    for _ in range(model.max_tgt_len + 1):
        so = model.step(state, y)
        logp = torch.log_softmax(so.logits, dim=-1)  # (b, V)
        total = (scores[:, None] + logp).flatten()  # (b * V,)
        # The best k continuations, best first; a stable sort breaks ties like argmax does.
        values, indices = torch.sort(total, descending=True, stable=True)
        values, indices = values[:k], indices[:k]
        beam_idx = torch.div(indices, V, rounding_mode="floor")
        tok_idx = indices % V
        keep, new_seqs = [], []
        for score, b, tok in zip(
            values.tolist(), beam_idx.tolist(), tok_idx.tolist(), strict=False
        ):
            if tok == eos:
                finished.append((score, seqs[b]))
            else:
                keep.append((score, b, tok))
                new_seqs.append([*seqs[b], tok])
        # Stop once the best finished output beats every live beam (scores only drop).
        if not keep or (finished and max(f[0] for f in finished) >= keep[0][0]):
            break
        idx = torch.tensor([b for _, b, _ in keep])
        state = {key: value[idx] for key, value in so.state.items()}
        y = torch.tensor([tok for _, _, tok in keep])
        scores = torch.tensor([s for s, _, _ in keep])
        seqs = new_seqs
    else:
        finished.extend(
            zip(scores.tolist(), seqs, strict=False)
        )  # ran out of length: keep the live ones
    model.train(was_training)
    return max(finished, key=lambda f: f[0])[1]
