r"""Subword units: what the real-language models read and write.

A language pair has one subword vocabulary for both sides, learned from the training split
only (:func:`train_subwords`; joint, :func:`attnlab.training.translation.subword_vocab`) by SentencePiece (Kudo and Richardson 2018) with byte-pair
encoding (Sennrich et al. 2016): frequent words are one piece, rarer ones are split into
frequent pieces ("Datenträger" -> ``▁Daten`` ``träger``), and any character the pieces do
not cover is written as its UTF-8 bytes (byte fallback), so typed Latin, accented and
other-script text is never ``<unk>``.  Text keeps its case; the placeholders ``{1}`` ...
``{9}`` of the corpus are single pieces that are never split.

A piece that starts a word carries SentencePiece's ``▁``; the pictures show it without
(:func:`readable`: ``▁Daten`` -> "Daten") and mark a continuation piece with a leading
``##`` ("##träger"), and a run of byte pieces as the characters they spell.
:func:`word_spans` groups pieces into words, for alpha read per word (:func:`per_word`:
summed over a source word's pieces, averaged over a target word's).

    >>> from attnlab.text.vocab import Vocab
    >>> model = train_subwords(["Close all tabs", "Close the file", "Open all files"] * 50, 300)
    >>> vocab = Vocab.subwords(model)          # 256 byte pieces, the specials, the rest
    >>> vocab.tokens("Close all files")
    ['▁Close', '▁all', '▁file', 's']
    >>> vocab.decode(vocab.encode("Close all files é"))
    'Close all files é'
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence

import numpy as np
import sentencepiece as spm

__all__ = [
    "BYTE_PIECE",
    "CONTINUED",
    "PLACEHOLDERS",
    "WORD_START",
    "per_word",
    "processor",
    "readable",
    "spell",
    "train_subwords",
    "word_spans",
]

WORD_START = "\u2581"  # "▁", SentencePiece's mark of a piece that starts a word
CONTINUED = "##"  # how the pictures mark a piece that continues a word
PLACEHOLDERS = tuple(f"{{{k}}}" for k in range(1, 10))  # the corpus's {1}..{9}, one piece each
BYTE_PIECE = re.compile(r"<0x([0-9A-F]{2})>")


def train_subwords(texts: Iterable[str], vocab_size: int) -> bytes:
    """A SentencePiece BPE model (its serialised bytes) learned from ``texts``.

    The ids 0-3 are ``<pad> <sos> <eos> <unk>`` like every vocabulary of the package;
    text is read as it is (no normalisation: cased, the corpus already cleaned it); byte
    fallback; the placeholders are user-defined pieces.  Deterministic for the same texts.
    """
    texts = [t for t in texts if t.strip()]
    if not texts:
        raise ValueError("no text to learn subwords from")
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=out,
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=0.9995,  # the rarest characters are left to byte fallback
        byte_fallback=True,
        normalization_rule_name="identity",
        remove_extra_whitespaces=True,
        split_digits=True,  # numbers are copied digit by digit
        user_defined_symbols=list(PLACEHOLDERS),
        pad_id=0,
        bos_id=1,
        eos_id=2,
        unk_id=3,
        pad_piece="<pad>",
        bos_piece="<sos>",
        eos_piece="<eos>",
        unk_piece="<unk>",
        num_threads=1,  # one thread: the same pieces on every machine
        minloglevel=2,
    )
    return out.getvalue()


def processor(model: bytes) -> spm.SentencePieceProcessor:
    """The SentencePiece processor of a serialised model; ValueError (one line) if damaged."""
    try:
        return spm.SentencePieceProcessor(model_proto=model)
    except (RuntimeError, OSError, TypeError) as err:
        raise ValueError(f"not a subword model: {str(err).splitlines()[0][:120]}") from None


def _bytes_of(piece: str) -> int | None:
    m = BYTE_PIECE.fullmatch(piece)
    return int(m[1], 16) if m else None


def readable(pieces: Sequence[str]) -> list[str]:
    """Each piece as a picture labels it: a word start without its ``▁``, a continuation
    with a leading ``##``, a lone ``▁`` (a space before a piece that has none) as ``␣``; byte
    pieces as the character they spell, shown on its first byte (the others ``·``).

    >>> readable(["▁Daten", "träger", "▁", "<0xC3>", "<0xA9>", "▁", "ok"])
    ['Daten', '##träger', '␣', 'é', '·', '␣', 'ok']
    """
    out: list[str] = []
    k = 0
    while k < len(pieces):
        piece = pieces[k]
        after_space = k > 0 and pieces[k - 1] == WORD_START
        starts = piece.startswith(WORD_START) or after_space or _special(piece)
        starts = starts or _punctuation(piece)  # "." after a word: plain, like tokenize's
        mark = "" if starts else CONTINUED
        if _bytes_of(piece.lstrip(WORD_START)) is not None:
            run = [piece]
            while k + len(run) < len(pieces) and _bytes_of(pieces[k + len(run)]) is not None:
                run.append(pieces[k + len(run)])
            raw = bytes(_bytes_of(p.lstrip(WORD_START)) for p in run)
            for n, char in enumerate(raw.decode("utf-8", errors="replace")):
                width = len(char.encode()) if char != "\ufffd" else 1
                out += [(mark if n == 0 else CONTINUED) + char] + ["·"] * (width - 1)
            out = out[: k + len(run)] + ["·"] * (k + len(run) - len(out))  # a broken run
            k += len(run)
            continue
        if piece == WORD_START:
            out.append("␣")
        else:
            out.append(mark + piece.removeprefix(WORD_START))
        k += 1
    return out


def word_spans(pieces: Sequence[str]) -> list[tuple[str, list[int]]]:
    """(word, the positions of its pieces) for each word of ``pieces``: a word starts at a
    piece with ``▁``; a special token (``<eos>``) and a piece of punctuation are words of
    their own, like the words and punctuation of :func:`attnlab.text.vocab.tokenize`.

    >>> word_spans(["▁Daten", "träger", "▁löschen", ".", "<eos>"])
    [('Datenträger', [0, 1]), ('löschen', [2]), ('.', [3]), ('<eos>', [4])]
    """
    groups: list[list[int]] = []
    for k, piece in enumerate(pieces):
        alone = _special(piece) or _punctuation(piece)
        after = k > 0 and (_special(pieces[k - 1]) or _punctuation(pieces[k - 1]))
        if not groups or piece.startswith(WORD_START) or alone or after:
            groups.append([k])
        else:
            groups[-1].append(k)
    return [(_spelled([pieces[k] for k in g]), g) for g in groups]


def spell(pieces: Sequence[str]) -> str:
    """The text ``pieces`` spell, as SentencePiece decodes them: ``▁`` a space (none at the
    start), byte pieces their characters (bytes that spell no character: U+FFFD); special
    tokens dropped.  The one spelling of a subword output (``Vocab.join``, ``Decoding.text``).

    >>> spell(["▁Daten", "träger", "▁<0xC3>", "<0xA9>", "t", "é"])
    'Datenträger été'
    """
    raw = b""
    for piece in pieces:
        if _special(piece):
            continue
        b = _bytes_of(piece.lstrip(WORD_START))
        if b is not None:
            raw += (b" " if piece.startswith(WORD_START) else b"") + bytes([b])
        else:
            raw += piece.replace(WORD_START, " ").encode()
    return raw.decode("utf-8", errors="replace").strip()


def _punctuation(piece: str) -> bool:
    """A piece of punctuation or symbols only (no letter, digit or byte)."""
    text = piece.removeprefix(WORD_START)
    return bool(text) and _bytes_of(text) is None and not any(c.isalnum() for c in text)


def _special(piece: str) -> bool:
    return piece.startswith("<") and piece.endswith(">") and _bytes_of(piece) is None


def _spelled(pieces: Sequence[str]) -> str:
    """The text a word's pieces spell (byte pieces decoded)."""
    raw = b""
    for piece in pieces:
        b = _bytes_of(piece.lstrip(WORD_START))
        raw += bytes([b]) if b is not None else piece.replace(WORD_START, "").encode()
    return raw.decode("utf-8", errors="replace") or WORD_START


def per_word(alpha, target: Sequence[str], source: Sequence[str]):
    """alpha (T, n) over pieces (an array or tensor) -> (words of target, words of source, alpha over words):
    a source word's weight is the sum over its pieces (rows still sum to 1), a target word's
    row the mean of its pieces' rows."""
    alpha = np.asarray(alpha, dtype=np.float32)
    if alpha.shape != (len(target), len(source)):
        raise ValueError(
            f"alpha has shape {tuple(alpha.shape)}; expected ({len(target)}, {len(source)})"
        )
    src, tgt = word_spans(source), word_spans(target)
    cols = np.stack([alpha[:, idx].sum(1) for _, idx in src], 1)  # (T, words of source)
    rows = np.stack([cols[idx].mean(0) for _, idx in tgt], 0)  # (words of target, ...)
    return [w for w, _ in tgt], [w for w, _ in src], rows
