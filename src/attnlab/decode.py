r"""Decoding: :func:`decode` (greedy or beam search) returns one :class:`Decoding` per text::

    d = decode(attnlab.load("rnnsearch-dates"), "3 May 1979")
    d.text                    # '1979-05-03'
    d.alpha.shape             # (L, h, T, n) = (1, 1, 10, 11)

The text is checked once (:meth:`attnlab.models.base.Seq2SeqModel.prepare`); then the output is
searched step by step (``model.start`` / ``model.step``, see :mod:`attnlab.models.base`) and read
back in one teacher-forced pass (``model.alignments``) that gives every step's attention.
``alpha`` has the same shape for every model: (L, h, T, n) cross-attention weights, the RNN
models as one layer and one head (RNNEncDec: a one-hot on the last source position, all its
decoder sees is the final state).

Special tokens are never written: ``<pad>`` and ``<sos>`` are masked out of every step's
distribution, ``<eos>`` ends the output, and an output is at most ``model.max_tgt_len``
tokens long; ``<unk>`` is masked too (the real-language models read and write subword
pieces with byte fallback: nothing is unknown to them).  ``prob`` is each token's probability under that
distribution (the model's softmax over the real output tokens and ``<eos>``).
``steps(model, text)`` yields one :class:`Step` per output token of a :class:`Decoding`, so
joining the tokens gives exactly ``model.translate(text)``.

Many texts decode as one padded batch through :func:`decode_batch` (the held-out scores, the
checks inside the models, batched translation all use it): :func:`source_batch` reads the
texts as the encoder does (:func:`source_row`: every encoder reads ``<eos>`` last), and
:func:`source_lengths` is the one way a source's length is counted.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch
from torch import Tensor

from attnlab.text.padding import padded, teacher_forced_input
from attnlab.text.subwords import spell
from attnlab.text.vocab import EOS, SPECIALS, InvalidInput, Vocab, detokenize


class Seq2Seq(Protocol):
    """What decoding needs of a model: every :class:`attnlab.models.base.Seq2SeqModel` has it.

    A protocol, not an import of :mod:`attnlab.models.base`: that module imports this one
    (``translate`` decodes), and no module imports one that imports it back.
    """

    src_vocab: Vocab
    tgt_vocab: Vocab
    max_tgt_len: int
    training: bool

    def prepare(self, raw: object) -> str: ...
    def tokens_of(self, prepared: str) -> list[str]: ...
    def start(self, src: Tensor, src_len: Tensor) -> dict[str, Tensor]: ...
    def step(self, state: dict[str, Tensor], y_prev: Tensor) -> Any: ...
    def alignments(
        self, src: Tensor, src_len: Tensor, tgt_in: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]: ...
    def train(self, mode: bool = True) -> Any: ...
    def eval(self) -> Any: ...


__all__ = [
    "MAX_BEAM",
    "MAX_TYPED_CHARS",
    "MAX_TYPED_WORD_CHARS",
    "BatchDecoding",
    "Decoding",
    "Step",
    "allowed_tokens",
    "beam_search",
    "search_steps",
    "check_beam",
    "check_text",
    "decode",
    "decode_batch",
    "greedy",
    "read_back",
    "source_batch",
    "source_lengths",
    "source_row",
    "steps",
    "translate_batch",
]

#: The widest beam search accepts (wider beams cost memory and time, and gain nothing here).
MAX_BEAM = 64


@dataclass
class Step:
    """One output step, as the widgets show it.

    t: 0-based position of the output token; token: the character written; prob: its
    probability; alpha (L, h, n): cross-attention over the source tokens of every layer and
    head (each row sums to 1); context: c_t (d,) for RNNSearch, else None.
    """

    t: int
    token: str
    prob: float
    alpha: np.ndarray
    context: np.ndarray | None


@dataclass
class Decoding:
    """One decoded text: what the model read, what it wrote, and where it looked.

    source_tokens (n, ends "<eos>"); output_tokens (T, without the final <eos>); probs (T,);
    alpha (L, h, T, n) cross-attention (RNN models: L = h = 1); context (T, d) c_t for
    RNNSearch, else None.  ``text`` is the output as one string.
    """

    source_tokens: list[str]
    output_tokens: list[str]
    probs: np.ndarray
    alpha: np.ndarray
    context: np.ndarray | None
    level: str = "char"  # "word": words, ``text`` joins them with spaces; "subword": pieces

    @property
    def text(self) -> str:
        if self.level == "word":
            return detokenize(self.output_tokens)
        if self.level == "subword":
            return spell(self.output_tokens)
        return "".join(self.output_tokens)

    def __len__(self) -> int:
        return len(self.output_tokens)

    def at(self, t: int) -> Step:
        """Output step ``t`` (0-based) as a :class:`Step`."""
        context = None if self.context is None else self.context[t]
        return Step(t, self.output_tokens[t], float(self.probs[t]), self.alpha[:, :, t], context)


# --------------------------------------------------------------------------- helpers
@contextmanager
def _evaluating(model: Seq2Seq) -> Iterator[None]:
    """Eval mode and no gradients inside; the model's own mode restored after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def allowed_tokens(vocab: Vocab) -> Tensor:
    """(V,) bool: True for the tokens a decoder may write: real tokens and <eos>."""
    banned = [vocab.stoi[s] for s in SPECIALS if s != EOS]  # <pad>, <sos>, <unk>
    allowed = torch.ones(len(vocab), dtype=torch.bool)
    allowed[banned] = False
    return allowed


def _masked(logits: Tensor, allowed: Tensor) -> Tensor:
    """logits (..., V) with the special tokens at -inf: they get probability 0."""
    return logits.masked_fill(~allowed, float("-inf"))


#: A subword decoder writes no word more often than this: a small model trained for minutes
#: stutters ("alle alle alle ausgewählten"), which the references almost never do.  Like the
#: no-repeat-n-gram rule of fairseq and Hugging Face, a rule of the search, not of the model.
MAX_WORD_REPEATS = 2


class RepeatRule:
    """Which pieces may not be written next: a word start ("▁alle", case ignored) already
    written ``MAX_WORD_REPEATS`` times.  Only for subword vocabularies (the date and digit
    models write characters, which repeat by nature: "1999-09-09")."""

    def __init__(self, vocab: Vocab):
        words = [p[1:].casefold() if p[:1] == "▁" and p[1:2].isalpha() else "" for p in vocab.itos]
        first: dict[str, int] = {}
        self.word = torch.tensor([first.setdefault(w, i) if w else -1 for i, w in enumerate(words)])
        # the pieces the rule watches (none but in a subword vocabulary), and each one's word
        self.watched = (self.word >= 0) & (vocab.level == "subword")  # (V,)
        self.column = self.word.clamp(min=0)  # (V,) where each piece's count is kept

    def counts(self, rows: int) -> Tensor:
        """(rows, V) how often each word was written so far: none yet."""
        return torch.zeros(rows, len(self.word), dtype=torch.long)

    def written(self, counts: Tensor, y: Tensor) -> Tensor:
        """``counts`` after each row wrote its token ``y`` (rows,)."""
        word = self.word[y]  # (rows,) the word each wrote, -1 for none
        rows = torch.arange(len(y))[word >= 0]
        return counts.index_put((rows, word[word >= 0]), torch.tensor(1), accumulate=True)

    def banned(self, counts: Tensor) -> Tensor:
        """(rows, V) True where a piece would write a word a third time."""
        return self.watched & (counts[:, self.column] >= MAX_WORD_REPEATS)


# --------------------------------------------------------------------------- sources
def source_row(vocab: Vocab, text: str) -> list[int]:
    """The ids an encoder reads for ``text`` (prepared, or normalised by
    :func:`attnlab.text.vocab.normalise`): one per token, ``<unk>`` for a token outside
    ``vocab``, and ``<eos>`` last, the position that tells every encoder the text ended."""
    return [vocab.stoi.get(tok, vocab.unk) for tok in vocab.tokens(text)] + [vocab.eos]


def source_lengths(src: Tensor, pad: int) -> Tensor:
    """src_len (B,): the real positions of each padded source row of ``src`` (B, n), its
    <eos> included (a source holds <pad> only after its end)."""
    return (src != pad).sum(dim=1)


def source_batch(
    vocab: Vocab, texts: list[str], length: int | None = None
) -> tuple[Tensor, Tensor]:
    """``texts`` (each as for :func:`source_row`) as one padded batch: src (B, n) and
    src_len (B,); n is the longest source's length, or ``length``."""
    src = padded([source_row(vocab, text) for text in texts], vocab.pad, length)  # (B, n)
    return src, source_lengths(src, vocab.pad)


#: Typed text: at most MAX_TYPED_CHARS characters in all and, for a model that reads words,
#: MAX_TYPED_WORD_CHARS in one word (no model reads more, and a longer label stretches a picture
#: past drawing it; a character model reads a long run of digits one token at a time).
MAX_TYPED_CHARS = 200
MAX_TYPED_WORD_CHARS = 40


def check_text(text: object, words: bool = True) -> None:
    """InvalidInput, one line of our own, for typed text that no model should be handed:
    longer than MAX_TYPED_CHARS characters, a lone surrogate (half of a character, which no
    font draws and no file holds), or, where ``words`` (a model that reads words), a word
    longer than MAX_TYPED_WORD_CHARS.  Anything else, and anything that is not text, is the
    model's to check (``model.prepare``)."""
    if not isinstance(text, str):
        return
    if len(text) > MAX_TYPED_CHARS:
        raise InvalidInput(f"Too long: {len(text)} characters; type at most {MAX_TYPED_CHARS}.")
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise InvalidInput("The text holds a broken character (a lone surrogate): retype it.")
    longest = max(text.split(), key=len, default="")
    if words and len(longest) > MAX_TYPED_WORD_CHARS:
        raise InvalidInput(
            f"A word of {len(longest)} characters is too long; a word has at most {MAX_TYPED_WORD_CHARS}."
        )


def check_beam(beam: object) -> None:
    """ValueError unless ``beam`` is None (greedy) or an int in 1..MAX_BEAM."""
    if beam is None:
        return
    if not isinstance(beam, int) or isinstance(beam, bool) or not 1 <= beam <= MAX_BEAM:
        raise ValueError(f"beam width must be an int from 1 to {MAX_BEAM}; got {beam!r}")


# --------------------------------------------------------------------------- decode
def decode(model: Seq2Seq, text: object, beam: int | None = None) -> Decoding:
    """Decode ``text`` greedily (``beam=None``) or by beam search of width ``beam``.

    Raises :class:`attnlab.text.vocab.InvalidInput` for text the model cannot read, ValueError for
    a beam width outside 1..MAX_BEAM.
    """
    check_beam(beam)
    check_text(text, model.src_vocab.level != "char")  # the caps, before the model reads it
    prepared = model.prepare(text)  # the one check of the text
    found = None
    if beam is not None:
        src, _ = source_batch(model.src_vocab, [prepared])  # (1, n)
        found = [beam_search(model, src, beam)]
    return decode_batch(model, [prepared], outputs=found).decoding(model, 0)


def read_back(
    model: Seq2Seq, src: Tensor, src_len: Tensor, outputs: list[list[int]]
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One teacher-forced pass over the ``outputs`` (ids, each without <eos>) of the sources
    ``src`` (B, n): logits (B, T + 1, V), alpha (B, L, h, T + 1, n) and context
    (B, T + 1, d) or None, T the longest output; step t of row b is what the model computes
    when it writes outputs[b][t] (the last step of each row, its <eos>).  The one read-back:
    decoding, the checks and the lecture's measurements all use it."""
    tgt_in = teacher_forced_input(outputs, model.tgt_vocab)  # (B, T + 1)
    return model.alignments(src, src_len, tgt_in)


@dataclass
class BatchDecoding:
    """Sources decoded as one padded batch (:func:`decode_batch`).

    texts (B,) as read; src (B, n) padded source ids and src_len (B,); outputs: each
    output's ids (without <eos>); and, once :meth:`read` (one :func:`read_back` over the
    outputs), logits (B, T + 1, V), alpha (B, L, h, T + 1, n) and context (B, T + 1, d) or
    None, T the longest output (step len(outputs[b]) of row b is its <eos>).
    """

    texts: list[str]
    src: Tensor
    src_len: Tensor
    outputs: list[list[int]]
    logits: Tensor | None = None
    alpha: Tensor | None = None
    context: Tensor | None = None

    def read(self, model: Seq2Seq) -> BatchDecoding:
        """Read the outputs back in one teacher-forced pass (eval mode, no gradients)."""
        with _evaluating(model):
            self.logits, self.alpha, self.context = read_back(
                model, self.src, self.src_len, self.outputs
            )
        return self

    def decoding(self, model: Seq2Seq, b: int) -> Decoding:
        """Row ``b`` as a :class:`Decoding` (read back first): its probabilities, its alpha
        (L, h, T, n) over its own n source positions, c_t."""
        if self.logits is None or self.alpha is None:
            raise ValueError("read the batch back first: BatchDecoding.read(model)")
        ids, vocab, text = self.outputs[b], model.tgt_vocab, self.texts[b]
        T, n = len(ids), int(self.src_len[b])
        p = torch.softmax(_masked(self.logits[b, :T], allowed_tokens(vocab)), dim=-1)  # (T, V)
        alpha = self.alpha[b, :, :, :T, :n].numpy()  # (L, h, T, n)
        return Decoding(
            source_tokens=[*model.tokens_of(text), EOS],
            output_tokens=[vocab.itos[i] for i in ids],
            probs=p[torch.arange(T), ids].numpy(),  # p(y_t | y_<t, x): (T,)
            alpha=alpha,
            context=None if self.context is None else self.context[b, :T].numpy(),  # (T, d)
            level=vocab.level,
        )

    def text(self, model: Seq2Seq, b: int) -> str:
        """Row ``b``'s output as text."""
        vocab = model.tgt_vocab
        return vocab.join([vocab.itos[i] for i in self.outputs[b]])


def decode_batch(
    model: Seq2Seq,
    texts: list[str],
    length: int | None = None,
    outputs: list[list[int]] | None = None,
    read: bool = True,
) -> BatchDecoding:
    """Decode ``texts`` (each prepared by ``model.prepare``, or normalised) as one padded
    batch: greedily, or, given ``outputs``, only read those back; then (``read``) one
    teacher-forced :func:`read_back` pass gives every step's probabilities and alpha.

    ``length``: pad the sources to that many positions (default: the longest source's).
    The one batched decoding: :func:`decode`, :func:`translate_batch`, the held-out scores
    (:func:`attnlab.training.evaluate.evaluate`) and the checks inside the models use it.
    """
    src, src_len = source_batch(model.src_vocab, texts, length)  # (B, n), (B,)
    if outputs is None:
        outputs = greedy(model, src, src_len)
    batch = BatchDecoding(list(texts), src, src_len, outputs)
    return batch.read(model) if read else batch


def translate_batch(model: Seq2Seq, prepared: list[str]) -> list[str]:
    """Greedy translations of texts already :meth:`prepare`-d, decoded as one batch: the
    same outputs as ``decode(model, text).text`` for each (no read-back: no alpha needed)."""
    batch = decode_batch(model, prepared, read=False)
    return [batch.text(model, b) for b in range(len(prepared))]


def steps(model: Seq2Seq, text: object, beam: int | None = None) -> Iterator[Step]:
    """One :class:`Step` per output token of ``decode(model, text, beam)``.

    Decodes when called, so bad text raises :class:`InvalidInput` before anything is
    yielded; ``"".join(s.token for s in steps(m, x))`` equals ``m.translate(x)`` (word
    models: ``m.tgt_vocab.join([s.token ...])``).
    """
    decoding = decode(model, text, beam)
    return iter([decoding.at(t) for t in range(len(decoding))])


# --------------------------------------------------------------------------- greedy
def greedy(
    model: Seq2Seq, src: Tensor, src_len: Tensor | None = None, forced: list[int] | None = None
) -> list[list[int]]:
    """Greedy decoding of a batch: y_t = argmax p(y | y_<t, x) until <eos> or max_tgt_len.

    src (B, n) padded source ids -> one list of output ids per example (without <eos>, at
    most ``model.max_tgt_len`` long, never a special token).  ``forced``: the first outputs
    of every example, written whatever the model prefers (a prefix it may never have seen),
    greedy from there on.
    """
    allowed, eos = allowed_tokens(model.tgt_vocab), model.tgt_vocab.eos
    rule = RepeatRule(model.tgt_vocab)
    with _evaluating(model):
        if src_len is None:
            src_len = source_lengths(src, model.src_vocab.pad)
        state = model.start(src, src_len)
        y = torch.full((src.shape[0],), model.tgt_vocab.sos, dtype=torch.long)  # y_0 = <sos>
        done = torch.zeros_like(y, dtype=torch.bool)
        counts, out = rule.counts(len(y)), []
        for _ in range(model.max_tgt_len):
            step = model.step(state, y)
            may = allowed & ~rule.banned(counts)  # (B, V)
            state, y = step.state, _masked(step.logits, may).argmax(dim=-1)  # (B,)
            if forced and len(out) < len(forced):
                y = torch.full_like(y, forced[len(out)])  # the prefix, not the model's choice
            counts = rule.written(counts, y)
            out.append(y)
            done |= y == eos
            if bool(done.all()):
                break
    rows = torch.stack(out, dim=1).tolist() if out else [[] for _ in range(src.shape[0])]
    return [row[: row.index(eos)] if eos in row else row for row in rows]


# --------------------------------------------------------------------------- beam search
@dataclass
class _Beams:
    """The live hypotheses of a beam search: last tokens, total log-probabilities, outputs."""

    y: Tensor  # (b,) the last token of each live beam
    scores: Tensor  # (b,) sum_t log p(y_t | y_<t, x)
    seqs: list[list[int]]


def beam_search(model: Seq2Seq, src: Tensor, k: int) -> list[int]:
    """The most probable output found by beam search of width ``k`` (ids, without <eos>).

    src (1, n).  Keeps the k best partial outputs by total log-probability
    sum_t log p(y_t | y_<t, x); a hypothesis ends when it writes <eos> or reaches
    ``model.max_tgt_len`` tokens.  With k = 1 this is exactly greedy decoding.  The best
    finished hypothesis wins.  (Public through ``model.translate(text, beam=k)``.)
    """
    finished: list[tuple[float, list[int]]] = []
    for _ in search_steps(model, src, k, finished):
        pass
    return max(finished, key=lambda f: f[0])[1]


def search_steps(
    model: Seq2Seq, src: Tensor, k: int, finished: list[tuple[float, list[int]]]
) -> Iterator[tuple[_Beams, Tensor]]:
    """The search of :func:`beam_search`, one step at a time (pictures trace it).

    Yields, before each step chooses its k best continuations, the live beams and the
    log-probabilities of every next piece after each, (b, V); each output that ends, as
    (total log p, ids without <eos>), is appended to ``finished``.
    """
    check_beam(k)
    if src.dim() != 2 or src.shape[0] != 1:
        raise ValueError(f"beam_search decodes one source (1, n); got {tuple(src.shape)}")
    allowed, rule = allowed_tokens(model.tgt_vocab), RepeatRule(model.tgt_vocab)
    with _evaluating(model):
        state = model.start(src, source_lengths(src, model.src_vocab.pad))
        beams = _Beams(torch.tensor([model.tgt_vocab.sos]), torch.zeros(1), [[]])
        counts = rule.counts(1)
        for _ in range(model.max_tgt_len):
            step = model.step(state, beams.y)
            may = allowed & ~rule.banned(counts)  # (b, V)
            logp = torch.log_softmax(_masked(step.logits, may), dim=-1)  # (b, V)
            yield beams, logp
            beams, keep = _extend(beams, logp, k, model.tgt_vocab.eos, finished)
            if beams is None:
                break
            state = {key: value[keep] for key, value in step.state.items()}
            counts = rule.written(counts[keep], beams.y)
        else:  # out of length: the live beams end here
            finished.extend(zip(beams.scores.tolist(), beams.seqs, strict=True))


def _extend(
    beams: _Beams, logp: Tensor, k: int, eos: int, finished: list[tuple[float, list[int]]]
) -> tuple[_Beams | None, Tensor | None]:
    """The k best continuations; those ending in <eos> go to ``finished``.

    Returns the new live beams and the index of the beam each continues (to reorder the
    state), or (None, None) when the search is over: nothing live, or the best finished
    output beats every live beam (scores only drop).
    """
    V = logp.shape[-1]
    total = (beams.scores[:, None] + logp).flatten()  # (b * V,)
    # The best k continuations, best first; a stable sort breaks ties like argmax does.
    values, indices = torch.sort(total, descending=True, stable=True)
    values, indices = values[:k], indices[:k]
    finite = values.isfinite()  # never a masked (special) token
    live = []
    for score, i in zip(values[finite].tolist(), indices[finite].tolist(), strict=True):
        b, tok = divmod(i, V)
        if tok == eos:
            finished.append((score, beams.seqs[b]))
        else:
            live.append((score, b, tok))
    if not live or (finished and max(f[0] for f in finished) >= live[0][0]):
        return None, None
    keep = torch.tensor([b for _, b, _ in live])
    new = _Beams(
        y=torch.tensor([tok for _, _, tok in live]),
        scores=torch.tensor([score for score, _, _ in live]),
        seqs=[[*beams.seqs[b], tok] for _, b, tok in live],
    )
    return new, keep
