"""The two toy translation tasks and their character vocabularies.

* ``dates``: a date as people write it ("3 May 1979", "Thursday, 03 May 1979", "03.05.1979")
  -> the ISO form ``YYYY-MM-DD`` ("1979-05-03").
* ``reverse``: a random digit string of length L -> the same string reversed (the length
  experiment: does a fixed-length vector hold a long sentence?).

Everything is generated from a seed with :class:`random.Random`; nothing is downloaded, and
the same seed always gives the same examples.

Vocabularies are per character, with four special tokens ``<pad> <sos> <eos> <unk>``; the
language models (:mod:`attnlab.corpus`) use word vocabularies (``Vocab(words,
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

import datetime as _dt
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "PAD",
    "SOS",
    "EOS",
    "UNK",
    "JOINER",
    "SPECIALS",
    "InvalidInput",
    "Vocab",
    "normalise",
    "tokenize",
    "detokenize",
    "DATE_FORMATS",
    "BASE_DATE_FORMATS",
    "DATE_STYLES",
    "DATE_RANGE",
    "MONTHS",
    "WEEKDAYS",
    "format_date",
    "dates",
    "reverse",
    "Task",
    "TASKS",
    "get_task",
]

PAD, SOS, EOS, UNK = "<pad>", "<sos>", "<eos>", "<unk>"
SPECIALS = (PAD, SOS, EOS, UNK)  # ids 0, 1, 2, 3 in every vocabulary


class InvalidInput(ValueError):
    """Text a model cannot read; ``str(err)`` is one short line fit to show a student."""


# --------------------------------------------------------------------------- words
#: A token: a placeholder ``{1}``, a word with an elided apostrophe ("l'", "d'"), a word
#: (hyphenated words are one: "sous-page", "êtes-vous"), or any other single character
#: (punctuation, a symbol, an emoji).
#: Ends every part of a split word but the last ("datenträger@@ details": Sennrich et al.'s
#: joiner, see :mod:`attnlab.compounds`); :func:`detokenize` glues such a token to the next.
JOINER = "@@"
_TOKEN = re.compile(r"\{\d+\}|\w+(?:-\w+)*-?@@|\w+'(?=\w)|\w+(?:-\w+)*|[^\w\s]")
_NO_SPACE_BEFORE = set(".,;:!?)]}%/")
_NO_SPACE_AFTER = set("([{/")


def tokenize(text: str) -> list[str]:
    """Lower-cased words, punctuation and placeholders of ``text``, in order.

    >>> tokenize("Close all tabs")
    ['close', 'all', 'tabs']
    >>> tokenize("Type de cellule par défaut : l'élément {1}.")
    ['type', 'de', 'cellule', 'par', 'défaut', ':', "l'", 'élément', '{1}', '.']
    """
    text = text.replace("\u2019", "'").lower()
    return _TOKEN.findall(text)


def detokenize(tokens: Sequence[str]) -> str:
    """Tokens joined by spaces, without a space before closing punctuation or after an
    opening bracket or an elided word ("l'"), and none after a part ending in "@@" (whose
    "@@" is dropped: ``["datenträger@@", "details"]`` -> "datenträgerdetails")."""
    out, quotes, joined = "", 0, False
    for tok in tokens:
        glue = not out or joined or out.endswith("'") or out[-1] in _NO_SPACE_AFTER
        joined = tok.endswith(JOINER) and len(tok) > len(JOINER)  # a part: the next one follows
        tok = tok[: -len(JOINER)] if joined else tok
        if tok == '"':  # an opening quote sticks to the next token, a closing one to the last
            quotes += 1
            glue = glue or quotes % 2 == 0
        elif out.endswith('"') and quotes % 2 == 1:
            glue = True
        out += tok if glue or tok in _NO_SPACE_BEFORE else " " + tok
    return out


# --------------------------------------------------------------------------- vocabulary
class Vocab:
    """A character vocabulary: ``<pad>``=0, ``<sos>``=1, ``<eos>``=2, ``<unk>``=3, then chars.

    >>> v = Vocab("0123456789-")
    >>> v.encode("19-7")
    [5, 13, 14, 11]
    >>> v.decode([5, 13, 14, 11, 2, 0])   # stops at <eos>
    '19-7'

    ``level="word"``: the tokens are words (:func:`tokenize`); an unknown word is ``<unk>``.
    """

    def __init__(self, chars: Iterable[str], level: str = "char"):
        if level not in ("char", "word"):
            raise ValueError(f"level must be 'char' or 'word'; got {level!r}")
        self.level = level
        chars = list(dict.fromkeys(chars))  # unique, first occurrence order
        for c in chars:
            if level == "word":
                if not isinstance(c, str) or not c or c.split() != [c] or c in SPECIALS:
                    raise ValueError(f"a word Vocab holds words without spaces; got {c!r}")
            elif not isinstance(c, str) or len(c) != 1:
                raise ValueError(f"a Vocab holds single characters; got {c!r}")
        self.chars: tuple[str, ...] = tuple(chars)
        self.itos: list[str] = [*SPECIALS, *self.chars]  # id -> token
        self.stoi: dict[str, int] = {s: i for i, s in enumerate(self.itos)}  # token -> id
        self.pad, self.sos, self.eos, self.unk = 0, 1, 2, 3

    def __len__(self) -> int:
        return len(self.itos)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocab) and (self.chars, self.level) == (other.chars, other.level)

    def __hash__(self) -> int:
        return hash((self.chars, self.level))

    def __repr__(self) -> str:
        if self.level == "word":
            return f"Vocab({len(self.chars)} words)"
        return f"Vocab({''.join(self.chars)!r})"

    @property
    def lower_only(self) -> bool:
        """True when no character of the vocabulary is an upper-case letter (words: always)."""
        return self.level == "word" or not any(c.isupper() for c in self.chars)

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``: its characters, or its words (:func:`tokenize`)."""
        return tokenize(text) if self.level == "word" else list(text)

    def join(self, tokens: Sequence[str]) -> str:
        """Tokens back into text: characters joined, words by :func:`detokenize`."""
        return detokenize(tokens) if self.level == "word" else "".join(tokens)

    def shown(self, text: str) -> list[str]:
        """The tokens of ``text`` as the model reads them: unknown ones as ``<unk>``."""
        return [t if t in self.stoi else UNK for t in self.tokens(text)]

    def unknown(self, text: str) -> list[str]:
        """The tokens of ``text`` outside the vocabulary (each once, in order)."""
        return list(dict.fromkeys(c for c in self.tokens(text) if c not in self.stoi))

    def encode(self, text: str, unknown: str = "raise") -> list[int] | tuple[list[int], list[str]]:
        """Character ids of ``text`` (no <sos>/<eos> added).

        ``unknown="raise"`` (default): raise :class:`InvalidInput` naming the unknown
        characters.  ``unknown="unk"``: map them to ``<unk>`` (ask :meth:`unknown` which).
        ``unknown="return"``: map them to ``<unk>`` and return ``(ids, unknown_characters)``.
        """
        if unknown not in ("raise", "unk", "return"):
            raise ValueError(f"unknown must be 'raise', 'unk' or 'return'; got {unknown!r}")
        bad = self.unknown(text)
        if bad and unknown == "raise":
            raise InvalidInput(unknown_message(bad))
        ids = [self.stoi.get(c, self.unk) for c in self.tokens(text)]
        return (ids, bad) if unknown == "return" else ids

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
        """The characters or words (not the specials), for a JSON card."""
        return list(self.chars)


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


# --------------------------------------------------------------------------- dates
MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

#: The forms the issue asks for, written as strftime formats.
BASE_DATE_FORMATS = (
    "%d %B %Y",  # 03 May 1979
    "%B %d, %Y",  # May 03, 1979
    "%A, %d %B %Y",  # Thursday, 03 May 1979
    "%A %B %d %Y",  # Thursday May 03 1979
    "%d %b %Y",  # 03 May 1979 (abbreviated month)
    "%b %d %Y",  # May 03 1979
    "%d/%m/%Y",  # 03/05/1979
    "%d.%m.%Y",  # 03.05.1979
    "%Y/%m/%d",  # 1979/05/03
    "%Y-%m-%d",  # 1979-05-03
)

#: Every form the generator writes: each base form, and, where the day comes before the
#: year, the same with the day not zero-padded (glibc's ``%-d``: "3 May 1979", "3/05/1979").
#: Each form holding a month or weekday name is also generated in lower case ("3 may 1979"),
#: as often as in its capitalised form (see ``DATE_STYLES``).
DATE_FORMATS = tuple(
    f
    for base in BASE_DATE_FORMATS
    for f in ((base,) if base.startswith("%Y") else (base, base.replace("%d", "%-d")))
)

#: Dates are drawn uniformly from this range (both ends included).
DATE_RANGE = (_dt.date(1900, 1, 1), _dt.date(2099, 12, 31))


def format_date(d: _dt.date, fmt: str, lower: bool = False) -> str:
    """``d`` written in ``fmt`` (English names whatever the locale; ``%-d`` = unpadded day)."""
    fields = {
        "%-d": str(d.day),
        "%d": f"{d.day:02d}",
        "%m": f"{d.month:02d}",
        "%Y": f"{d.year:04d}",
        "%B": MONTHS[d.month - 1],
        "%b": MONTHS[d.month - 1][:3],
        "%A": WEEKDAYS[d.weekday()],
    }
    out, i = [], 0
    while i < len(fmt):
        for code in ("%-d", fmt[i : i + 2]):
            if fmt.startswith(code, i) and code in fields:
                out.append(fields[code])
                i += len(code)
                break
        else:
            out.append(fmt[i])
            i += 1
    text = "".join(out)
    return text.lower() if lower else text


def _date_styles() -> list[tuple[str, bool]]:
    """(format, lower-case?) pairs: every form, and its lower-case twin when it has names."""
    styles = []
    for fmt in DATE_FORMATS:
        styles.append((fmt, False))
        if any(code in fmt for code in ("%A", "%B", "%b")):
            styles.append((fmt, True))
    return styles


#: (strftime form, lower-case?) pairs; the generator draws one uniformly for each date.
DATE_STYLES = tuple(_date_styles())


def dates(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """``n`` pairs (date as people write it, ISO date), deterministic in ``seed``.

    >>> dates(2, seed=0)  # doctest: +SKIP
    [('14.07.2015', '2015-07-14'), ('sunday february 4 1906', '1906-02-04')]
    """
    rng = random.Random(f"dates-{seed}")
    first, last = DATE_RANGE
    span = (last - first).days
    pairs = []
    for _ in range(n):
        d = first + _dt.timedelta(days=rng.randint(0, span))
        fmt, lower = DATE_STYLES[rng.randrange(len(DATE_STYLES))]
        pairs.append((format_date(d, fmt, lower), d.isoformat()))
    return pairs


def reverse(
    n: int, seed: int = 0, length: int | tuple[int, int] = (5, 60)
) -> list[tuple[str, str]]:
    """``n`` pairs (random digit string, the same reversed), deterministic in ``seed``.

    ``length`` is L (an int) or a range ``(lo, hi)`` (both included) that L is drawn from
    uniformly for each example.
    """
    lo, hi = (length, length) if isinstance(length, int) else length
    if not 1 <= lo <= hi:
        raise ValueError(f"length must be >= 1 (or a range 1 <= lo <= hi); got {length!r}")
    rng = random.Random(f"reverse-{seed}")
    pairs = []
    for _ in range(n):
        s = "".join(rng.choice("0123456789") for _ in range(rng.randint(lo, hi)))
        pairs.append((s, s[::-1]))
    return pairs


# --------------------------------------------------------------------------- tasks
def _date_chars() -> str:
    """Every character a (lower-cased) date can hold, in a fixed order."""
    letters = sorted({c for name in MONTHS + WEEKDAYS for c in name.lower()})
    return "0123456789" + "".join(letters) + " ,./-"


@dataclass(frozen=True)
class Task:
    """A task: how to make examples, its vocabularies, and the lengths the models allow."""

    name: str
    src_chars: str
    tgt_chars: str
    max_src_len: int  # characters a model reads (before the <eos> it appends)
    max_tgt_len: int  # characters a model may write (before <eos>)

    @property
    def src_vocab(self) -> Vocab:
        return Vocab(self.src_chars)

    @property
    def tgt_vocab(self) -> Vocab:
        return Vocab(self.tgt_chars)

    def make(self, n: int, seed: int = 0, **kw) -> list[tuple[str, str]]:
        """``n`` examples of the task (``kw``: ``length`` for reverse)."""
        if self.name == "dates":
            return dates(n, seed)
        return reverse(n, seed, **kw)


TASKS = {
    # The longest date written is "wednesday, 30 september 2099" (28 characters).
    "dates": Task("dates", _date_chars(), "0123456789-", max_src_len=32, max_tgt_len=12),
    "reverse": Task("reverse", "0123456789", "0123456789", max_src_len=60, max_tgt_len=64),
}


def get_task(name: str) -> Task:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}") from None
