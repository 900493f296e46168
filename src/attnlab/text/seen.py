r"""Seen in training: was a typed English string in the training split, or a near-twin of one?

A model that writes a good translation of a string it was trained on shows memory, not
generalisation.  The widgets say which it is (:func:`verdict`): "seen" (the string, after
normalisation, is in the training split), "near-twin" (one token edit from a training
string, :mod:`attnlab.text.twins`; for a string shorter than the split's near-twin rule, one
token from a training string all the same: "Close all" and "Close all tabs"), or "new"; a new
string whose words all stand, in a row, inside a longer training string is named with it
("Close all tabs" inside "Close all tabs to the right": the model has read it word for word).

The training split's English strings ship with the package, one per line, in
``results/seen-<lang>.txt.gz`` (:func:`seen_path`): the widgets need neither the catalogs nor
the corpus builder at run time (a student's laptop has no catalogs).  :func:`seen_bytes` is
what the corpus command (``python -m attnlab corpus``) writes there, the same bytes for the same
strings (sorted, unique, gzip without a time stamp).  :func:`seen_index` reads a file once per
process into a :class:`~attnlab.text.twins.TwinIndex`; a missing or damaged file is
:class:`SeenUnavailable`, one line that says how to make it.

The held-out split ("unseen": the applications the models never saw) ships the same way, as
(English, reference) pairs in ``results/held-out-<lang>.tsv.gz`` (:func:`held_out_path`,
:func:`held_out_bytes`, :func:`held_out_pairs`): the lecture's random draw of held-out phrases
and its ✓/✗ against the reference run where the catalogs are not.

    >>> index = TwinIndex(["Unable to delete the file", "Close all tabs"])
    >>> verdict(index, "Close all tabs.").kind
    'seen'
    >>> verdict(index, "Unable to delete the folder").line
    "Near-twin of a training string (one word apart): 'Unable to delete the file'"
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from attnlab.text.twins import MIN_TOKENS, TwinIndex, normalised

__all__ = [
    "KINDS",
    "SEEN_DIR",
    "Seen",
    "SeenUnavailable",
    "held_out_bytes",
    "held_out_pairs",
    "held_out_path",
    "seen_bytes",
    "seen_index",
    "seen_path",
    "shipped",
    "verdict",
]

#: Where the shipped files live: the package's results folder.
SEEN_DIR = Path(__file__).resolve().parents[1] / "results"
#: What :func:`verdict` can say of a text.
KINDS = ("seen", "near-twin", "new", "unavailable")
SHOWN_CHARS = 60  # a training string longer than this is shortened in the line
_indexes: dict[tuple[str, int, int], TwinIndex] = {}  # (file, mtime, size) -> its index
_pairs: dict[tuple[str, int, int], list[tuple[str, str]]] = {}  # the same for held-out pairs


class SeenUnavailable(Exception):
    """The training strings (or the held-out pairs) of a language cannot be read (the message
    is one line)."""


@dataclass(frozen=True)
class Seen:
    """What the widgets say of a typed text: ``kind`` (one of :data:`KINDS`), the training
    string it matched (``string``: for "new" the longer training string that holds it word for
    word, if one does; else None) and the ``line`` shown."""

    kind: str
    string: str | None
    line: str


def seen_path(lang: str, folder: Path | str | None = None) -> Path:
    """The file of the training split's English strings for English -> ``lang``."""
    if not isinstance(lang, str) or not lang.isalpha():
        raise ValueError(f"a language is a code such as 'fr'; got {str(lang)[:20]!r}")
    return Path(SEEN_DIR if folder is None else folder) / f"seen-{lang}.txt.gz"


def seen_bytes(strings: Iterable[str]) -> bytes:
    """The file's bytes: the strings sorted, each once, one a line, UTF-8, gzip (mtime 0).

    A string that holds a line break is refused (ValueError): it would read back as two.
    """
    unique = sorted(set(strings))
    broken = next((s for s in unique if "\n" in s or "\r" in s), None)
    if broken is not None:
        raise ValueError(f"a training string holds a line break: {broken[:40]!r}")
    text = "".join(f"{s}\n" for s in unique if s)
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def _read(path: Path) -> list[str]:
    try:
        raw = gzip.decompress(path.read_bytes())
        return raw.decode("utf-8").splitlines()
    except FileNotFoundError:
        raise SeenUnavailable(
            f"{path.name} is missing (python -m attnlab corpus writes it)"
        ) from None
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as err:
        why = str(err).splitlines()[0][:80] if str(err) else type(err).__name__
        raise SeenUnavailable(f"{path.name} cannot be read ({why})") from None


def _read_once(cache: dict, path: Path, parse):
    """``parse(path)``, kept in ``cache`` under (file, mtime, size): read once per process and
    again only when the file is replaced (its old entry dropped)."""
    try:
        info = path.stat()
        key = (str(path), info.st_mtime_ns, info.st_size)
    except OSError:
        key = (str(path), -1, -1)
    if key not in cache:
        value = parse(path)  # SeenUnavailable
        for old in [k for k in cache if k[0] == key[0]]:
            del cache[old]
        cache[key] = value
    return cache[key]


def _parse_pairs(path: Path) -> list[tuple[str, str]]:
    lines = _read(path)  # SeenUnavailable
    if any(line.count("\t") != 1 for line in lines):
        raise SeenUnavailable(f"{path.name} cannot be read (a line is not English<TAB>reference)")
    return [tuple(line.split("\t")) for line in lines]


def held_out_path(lang: str, folder: Path | str | None = None) -> Path:
    """The file of the held-out split's (English, reference) pairs for English -> ``lang``."""
    return seen_path(lang, folder).with_name(f"held-out-{lang}.tsv.gz")


def held_out_bytes(pairs: Iterable[tuple[str, str]]) -> bytes:
    """The file's bytes: one pair a line, ``English<TAB>reference``, in the split's order,
    each English once (its first pair), UTF-8, gzip (mtime 0).  The order is kept: a seeded
    draw from the file is the draw from the split.  A tab or a line break in a string is
    refused (ValueError): it would read back as another pair."""
    lines, done = [], set()
    for en, ref in pairs:
        # splitlines() (which reads the file) also breaks at \x0b, \x1c, \u2028 ...
        bad = next((t for t in (en, ref) if "\t" in t or len(f"{t}.".splitlines()) > 1), None)
        if bad is not None:
            raise ValueError(f"a held-out string holds a tab or a line break: {bad[:40]!r}")
        if en and ref and en not in done:
            done.add(en)
            lines.append(f"{en}\t{ref}\n")
    return gzip.compress("".join(lines).encode("utf-8"), compresslevel=9, mtime=0)


def held_out_pairs(lang: str, folder: Path | str | None = None) -> list[tuple[str, str]]:
    """The held-out split's (English, reference) pairs of ``lang``, in the split's order, read
    once per process; :class:`SeenUnavailable` if the file is missing or damaged."""
    return list(_read_once(_pairs, held_out_path(lang, folder), _parse_pairs))


def shipped(lang: str, splits: dict) -> list[tuple[str, Path, bytes]]:
    """What the corpus command ships of ``lang`` from its ``splits``, as (what, path, bytes):
    the training English and the held-out (English, reference) pairs."""
    train = seen_bytes(en for en, _ in splits["train"])
    return [
        ("training strings", seen_path(lang), train),
        ("held-out pairs", held_out_path(lang), held_out_bytes(splits["unseen"])),
    ]


def seen_index(lang: str, folder: Path | str | None = None) -> TwinIndex:
    """The training split's English strings of ``lang`` as a TwinIndex, read once per process
    (again only if the file changed); :class:`SeenUnavailable` if the file is missing or damaged."""
    return _read_once(_indexes, seen_path(lang, folder), lambda path: TwinIndex(_read(path)))


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def verdict(index: TwinIndex | SeenUnavailable, text: str) -> Seen:
    """What to say of ``text`` given the training strings (or why they cannot be read)."""
    if isinstance(index, SeenUnavailable):
        return Seen("unavailable", None, f"Seen in training: unavailable ({index})")
    found = index.find(text)
    n = len(normalised(text))
    # the split's near-twin rule starts at MIN_TOKENS; a typed phrase is checked below it too
    if found is None and n < MIN_TOKENS:
        near = index.neighbour(text)
        found = None if near is None else ("near-twin", near)
    if found is None:
        inside = index.containing(text)
        if inside is not None:  # new as a whole, but the model has read it, word for word
            line = f"New as a whole, but inside a training string: '{_shown(inside)}'"
            return Seen("new", inside, line)
        if n < MIN_TOKENS - 1:  # one-token neighbours found only in part
            short = f"under {MIN_TOKENS - 1} words, its neighbours not all checked"
            return Seen("new", None, f"New: not in the training split ({short})")
        return Seen("new", None, "New: not in the training split, nor one word from a string in it")
    kind, string = found
    if kind == "seen" and " ".join(string.split()) != " ".join(text.split()):
        # the index ignores case and punctuation, the models do not: say what differs
        return Seen(kind, string, f"Seen in training, written differently: '{_shown(string)}'")
    if kind == "seen":
        return Seen(kind, string, f"Seen in training: '{_shown(string)}'")
    return Seen(
        kind, string, f"Near-twin of a training string (one word apart): '{_shown(string)}'"
    )
