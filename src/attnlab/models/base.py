r"""What every model shares: :class:`Seq2SeqModel` (vocabularies, input checks, ``translate``)
and :class:`StepOutput` (what one decoder step returns).

Every model (``RNNEncDec``, ``RNNSearch``, ``Transformer``) decodes through the same two
batched calls, used by :mod:`attnlab.decode`:

* ``state = model.start(src, src_len)``: encode the source ids ``src`` (B, n);
* ``out = model.step(state, y_prev)``: one decoder step from the previous output tokens
  y_{t-1} (B,), returning a :class:`StepOutput`.

and reads a whole output at once (teacher forcing) with
``model.alignments(src, src_len, tgt_in) -> (logits (B, T, V), alpha (B, L, h, T, n),
context (B, T, d) or None)``.  A state is a dict of tensors whose first dimension is the
batch, so beam search can reorder it (``state[key][idx]``): everything a step carries over
is in it, the Transformer's KV cache too, so each beam keeps its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlab.decode import decode, source_row
from attnlab.text.vocab import EOS, InvalidInput, Vocab, normalise, unknown_message

__all__ = ["State", "StepOutput", "Seq2SeqModel"]

State = dict[str, Tensor]


@dataclass
class StepOutput:
    """What one decoder step returns (batched)."""

    logits: Tensor  # (B, V): scores of y_t before the softmax
    alpha: Tensor  # (B, L, h, n): attention over the source (RNN models: L = h = 1)
    context: Tensor | None  # (B, d): c_t for RNNSearch, else None
    state: State  # the decoder state after this step


class Seq2SeqModel(nn.Module):
    """What every model shares: vocabularies, input checks, ``translate``, ``source_tokens``.

    Subclasses set ``kind`` and implement ``forward(src, src_len, tgt_in) -> logits``
    (teacher forcing, for training), ``start`` and ``step`` (for decoding) and
    ``alignments`` (every step's attention at once, for :func:`attnlab.decode.decode`).
    """

    kind: str = ""

    def __init__(self, src_vocab: Vocab, tgt_vocab: Vocab, max_src_len: int, max_tgt_len: int):
        super().__init__()
        self.src_vocab, self.tgt_vocab = src_vocab, tgt_vocab
        self.max_src_len, self.max_tgt_len = max_src_len, max_tgt_len
        self.card: dict | None = None  # the JSON card, set by attnlab.training.checkpoints on load

    # ---------------------------------------------------------------- input
    def prepare(self, raw: object) -> str:
        """The text exactly as the model reads it, or :class:`InvalidInput` saying why not.

        Strips surrounding whitespace, collapses runs of spaces, lower-cases when the source
        vocabulary is lower-case only; refuses empty text, text longer than
        ``max_src_len`` characters, and characters outside the vocabulary.  The one place
        where a text is checked: everything after it takes the prepared text.

        A word or subword model (``src_vocab.level``) counts its tokens, not characters; a
        word model reads an unknown word as ``<unk>``, a subword model knows every character
        (byte fallback).
        """
        text = normalise(raw, self.src_vocab)
        if self.src_vocab.level != "char":
            return self._prepare_words(text)
        if len(text) > self.max_src_len:
            raise InvalidInput(
                f"Too long: {len(text)} characters; this model reads at most {self.max_src_len}."
            )
        if self.src_vocab.unknown(text):
            raise InvalidInput(unknown_message(self._unknown_as_typed(raw, text)))
        return text

    def _prepare_words(self, text: str) -> str:
        n = len(self.src_vocab.tokens(text))
        if n == 0:
            raise InvalidInput("The text has no words: type a short English phrase.")
        if n > self.max_src_len:
            what = "words" if self.src_vocab.level == "word" else "subword pieces"
            raise InvalidInput(
                f"Too long: {n} {what}; this model reads at most {self.max_src_len}."
            )
        return text

    def _unknown_as_typed(self, raw: object, text: str) -> list[str]:
        """The unknown characters as they were typed (before lower-casing)."""
        typed = " ".join(raw.split()) if isinstance(raw, str) else ""
        low = self.src_vocab.lower_only
        shown = [c for c in dict.fromkeys(typed) if self.src_vocab.unknown(c.lower() if low else c)]
        return shown or self.src_vocab.unknown(text)

    def source_ids(self, prepared: str) -> Tensor:
        """Source ids (1, n) of a text already :meth:`prepare`-d, with the <eos> read last."""
        return torch.tensor([source_row(self.src_vocab, prepared)], dtype=torch.long)

    def tokens_of(self, prepared: str) -> list[str]:
        """The source tokens of a text already :meth:`prepare`-d (unknown words: <unk>)."""
        return self.src_vocab.tokens_as_read(prepared)

    def encode_source(self, text: object) -> Tensor:
        """Source ids (1, n) of ``text`` (checked by :meth:`prepare`), ending in <eos>."""
        return self.source_ids(self.prepare(text))

    def source_tokens(self, text: object) -> list[str]:
        """The tokens the encoder sees, in order (the x axis of the heatmap), ending in <eos>."""
        return [*self.tokens_of(self.prepare(text)), EOS]

    # ---------------------------------------------------------------- output
    def translate(self, text: object, beam: int | None = None) -> str:
        """The model's translation of ``text``: greedy, or beam search of width ``beam``."""
        return decode(self, text, beam).text

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # ---------------------------------------------------------------- to implement
    def start(self, src: Tensor, src_len: Tensor) -> State:  # pragma: no cover
        raise NotImplementedError

    def step(self, state: State, y_prev: Tensor) -> StepOutput:  # pragma: no cover
        raise NotImplementedError

    def alignments(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Teacher forcing with every attention weight: logits (B, T, V), alpha (B, L, h, T, n),
        context (B, T, d) or None.  This default runs :meth:`step` T times."""
        state = self.start(src, src_len)
        logits, alpha, context = [], [], []
        for t in range(tgt_in.shape[1]):
            out = self.step(state, tgt_in[:, t])
            state = out.state
            logits.append(out.logits)  # (B, V)
            alpha.append(out.alpha)  # (B, L, h, n)
            context.append(out.context)
        ctx = None if context[0] is None else torch.stack(context, dim=1)  # (B, T, d)
        return torch.stack(logits, dim=1), torch.stack(alpha, dim=3), ctx
