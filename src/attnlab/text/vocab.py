"""Vocabularies and tokens: what a model reads and writes.

Vocabularies are per character, with four special tokens ``<pad> <sos> <eos> <unk>``; the
language models (:mod:`attnlab.text.corpus`) use word vocabularies (``Vocab(words,
level="word")``): lower-cased words, punctuation and placeholders as tokens
(:func:`tokenize`), an unknown word read as ``<unk>``, and the output joined back into text
by :func:`detokenize`.
Encoding text that holds characters outside the vocabulary never fails silently: it raises
:class:`InvalidInput` naming them (or, with ``unknown="unk"``, maps them to ``<unk>``; the
caller can ask :meth:`Vocab.unknown` which ones they were).

Normalisation (what the models do to a typed text before encoding it, see
:func:`normalise`): surrounding whitespace is stripped, runs of whitespace become one space,
and the text is lower-cased when the vocabulary has no upper-case letters.  The dates
vocabulary is lower-case only, so "3 MAY 1979", "3 May 1979" and "3 may 1979" all work.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from attnlab.text.subwords import processor, spell

__all__ = [
    "PAD",
    "SOS",
    "EOS",
    "UNK",
    "LEVELS",
    "SPECIALS",
    "InvalidInput",
    "Vocab",
    "normalise",
    "tokenize",
    "detokenize",
]

PAD, SOS, EOS, UNK = "<pad>", "<sos>", "<eos>", "<unk>"
LEVELS = ("char", "word", "subword")  # what a Vocab's tokens are
SPECIALS = (PAD, SOS, EOS, UNK)  # ids 0, 1, 2, 3 in every vocabulary


class InvalidInput(ValueError):
    """Text a model cannot read; ``str(err)`` is one short line fit to show a student."""


# --------------------------------------------------------------------------- words
#: A token: a placeholder ``{1}``, a word with an elided apostrophe ("l'", "d'"), a word
#: (hyphenated words are one: "sous-page", "êtes-vous"), or any other single character
#: (punctuation, a symbol, an emoji).
_TOKEN = re.compile(r"\{\d+\}|\w+'(?=\w)|\w+(?:-\w+)*|[^\w\s]")
_NO_SPACE_BEFORE = set(".,;:!?)]}%/")
_NO_SPACE_AFTER = set("([{/")


def tokenize(text: str, lower: bool = True) -> list[str]:
    """Lower-cased (``lower=False``: as written) words, punctuation and placeholders of
    ``text``, in order.

    >>> tokenize("Close all tabs")
    ['close', 'all', 'tabs']
    >>> tokenize("Type de cellule par défaut : l'élément {1}.")
    ['type', 'de', 'cellule', 'par', 'défaut', ':', "l'", 'élément', '{1}', '.']
    """
    text = text.replace("\u2019", "'")
    return _TOKEN.findall(text.lower() if lower else text)


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined by spaces, without a space before closing punctuation or after an
    opening bracket or an elided word ("l'")."""
    out, quotes = "", 0
    for tok in tokens:
        glue = not out or out.endswith("'") or out[-1] in _NO_SPACE_AFTER
        if tok == '"':  # an opening quote sticks to the next token, a closing one to the last
            quotes += 1
            glue = glue or quotes % 2 == 0
        elif out.endswith('"') and quotes % 2 == 1:
            glue = True
        out += tok if glue or tok in _NO_SPACE_BEFORE else " " + tok
    return out


# --------------------------------------------------------------------------- vocabulary
class Vocab:
    """A vocabulary: ``<pad>``=0, ``<sos>``=1, ``<eos>``=2, ``<unk>``=3, then its symbols
    (:attr:`symbols`: characters, or words for a word vocabulary).

    >>> v = Vocab("0123456789-")
    >>> v.encode("19-7")
    [5, 13, 14, 11]
    >>> v.decode([5, 13, 14, 11, 2, 0])   # stops at <eos>
    '19-7'

    ``level="word"``: the tokens are words (:func:`tokenize`); an unknown word is ``<unk>``.
    ``Vocab.subwords(model)``: the pieces of a SentencePiece model
    (:mod:`attnlab.text.subwords`), cased, never ``<unk>``.
    """

    def __init__(self, symbols: Iterable[str], level: str = "char", model: bytes | None = None):
        if level not in LEVELS:
            raise ValueError(f"level must be one of {', '.join(LEVELS)}; got {level!r}")
        if (level == "subword") != (model is not None):
            raise ValueError("a subword Vocab (and only one) needs its subword model")
        self.level = level
        self.model = model  # the serialised SentencePiece model of a subword Vocab
        self._pieces = None
        if model is not None:
            self._pieces = processor(model)
            held = [self._pieces.id_to_piece(i) for i in range(self._pieces.get_piece_size())]
            if tuple(held[: len(SPECIALS)]) != SPECIALS:
                raise ValueError("a subword model must number <pad> <sos> <eos> <unk> 0-3")
            symbols = held[len(SPECIALS) :]
        symbols = list(dict.fromkeys(symbols))  # unique, first occurrence order
        for c in symbols:
            if level in ("word", "subword"):
                if not isinstance(c, str) or not c or c.split() != [c] or c in SPECIALS:
                    raise ValueError(f"a {level} Vocab holds tokens without spaces; got {c!r}")
            elif not isinstance(c, str) or len(c) != 1:
                raise ValueError(f"a Vocab holds single characters; got {c!r}")
        # The characters, words or subword pieces the vocabulary holds besides the specials.
        self.symbols: tuple[str, ...] = tuple(symbols)
        self.itos: list[str] = [*SPECIALS, *self.symbols]  # id -> token
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}  # token -> id
        self.pad, self.sos, self.eos, self.unk = 0, 1, 2, 3

    @classmethod
    def subwords(cls, model: bytes) -> Vocab:
        """The subword vocabulary of a SentencePiece model
        (:func:`attnlab.text.subwords.train_subwords`)."""
        return cls((), level="subword", model=model)

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Vocab):
            return False
        return (self.symbols, self.level, self.model) == (other.symbols, other.level, other.model)

    def __hash__(self) -> int:
        return hash((self.symbols, self.level, self.model))

    def __repr__(self) -> str:
        if self.level == "subword":
            return f"Vocab({len(self.symbols)} subwords)"
        if self.level == "word":
            return f"Vocab({len(self.symbols)} words)"
        return f"Vocab({''.join(self.symbols)!r})"

    @property
    def lower_only(self) -> bool:
        """True when the vocabulary reads lower-case text only: no character of it is an
        upper-case letter (words: always; subwords keep case: never)."""
        if self.level == "subword":
            return False
        return self.level == "word" or not any(c.isupper() for c in self.symbols)

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``: its characters, its words (:func:`tokenize`), or its
        subword pieces (never <unk>: byte fallback)."""
        if self.level == "subword":
            return self._pieces.encode(text, out_type=str)
        return tokenize(text) if self.level == "word" else list(text)

    def join(self, tokens: Sequence[str]) -> str:
        """Tokens back into text: characters joined, words by :func:`detokenize`, pieces
        by SentencePiece (``▁`` a space, byte pieces their characters)."""
        if self.level == "subword":
            return spell(tokens)  # as attnlab.decode.Decoding.text spells them
        return detokenize(tokens) if self.level == "word" else "".join(tokens)

    def tokens_as_read(self, text: str) -> list[str]:
        """The tokens of ``text`` as the model reads them: unknown ones as ``<unk>``."""
        return [t if t in self.stoi else UNK for t in self.tokens(text)]

    def unknown(self, text: str) -> list[str]:
        """The tokens of ``text`` outside the vocabulary (each once, in order)."""
        return list(dict.fromkeys(c for c in self.tokens(text) if c not in self.stoi))

    def encode(self, text: str, unknown: str = "raise") -> list[int]:
        """Token ids of ``text`` (no <sos>/<eos> added).

        ``unknown="raise"`` (default): raise :class:`InvalidInput` naming the unknown
        tokens.  ``unknown="unk"``: map them to ``<unk>`` (ask :meth:`unknown` which).
        """
        if unknown not in ("raise", "unk"):
            raise ValueError(f"unknown must be 'raise' or 'unk'; got {unknown!r}")
        bad = self.unknown(text)
        if bad and unknown == "raise":
            raise InvalidInput(unknown_message(bad))
        return [self.stoi.get(c, self.unk) for c in self.tokens(text)]

    def decode(self, ids: Iterable[int], stop_at_eos: bool = True) -> str:
        """Text of ``ids``: special tokens are dropped, and reading stops at ``<eos>``."""
        out = []
        for i in ids:
            i = int(i)
            if stop_at_eos and i == self.eos:
                break
            if i >= len(SPECIALS):
                out.append(self.itos[i])
        return self.join(out)

    def to_list(self) -> list[str]:
        """The symbols (characters, words or pieces, not the specials), for a JSON card: the
        card's ``src_vocab`` / ``tgt_vocab`` (a subword card also holds the model)."""
        return list(self.symbols)


def unknown_message(bad: Sequence[str], limit: int = 8) -> str:
    """One line naming the unknown characters, e.g. ``never seen: 'x', 'é'``."""
    shown = ", ".join(repr(c) for c in bad[:limit])
    more = f" and {len(bad) - limit} more" if len(bad) > limit else ""
    return f"The model has never seen these characters: {shown}{more}."


def normalise(text: object, vocab: Vocab) -> str:
    """Strip, collapse whitespace, and lower-case when ``vocab`` is lower-case only.

    Raises :class:`InvalidInput` when ``text`` is not a string or is empty after stripping.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"Please type some text (got {type(text).__name__}).")
    text = " ".join(text.split())  # strip + one space between words
    if not text:
        raise InvalidInput("The text is empty: type something first.")
    if vocab.lower_only:
        text = text.lower()
    return text
