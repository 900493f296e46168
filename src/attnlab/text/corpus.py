r"""A real parallel corpus: English -> French and English -> German interface strings.

The pairs are read from the translation catalogs of pinned wheels (:mod:`attnlab.text.catalogs`:
which wheels, how a catalog is read), then cleaned, deduplicated and split here; the data card
is :mod:`attnlab.text.data_card`.

    python -m attnlab corpus --card docs/data-card.md --force  # build, count, (re)write the card
    >>> from attnlab.text.corpus import load_corpus
    >>> pairs = load_corpus("fr")            # {"train": [(en, fr), ...], "dev": ..., "test": ...}

Cleaning (:func:`clean_pair`), in order, once reading has dropped the untranslated, fuzzy,
obsolete and plural entries: drop strings holding markup (``<b>``, ``**``, backquotes), URLs, paths or e-mail
addresses; unescape HTML entities, remove accelerators (``&File``, ``_File``) and keyboard
hints; write every placeholder (``%s``, ``%d``, ``%1``, ``{name}``, ``{0}``, ``%(name)s``) one
way, ``{1}``, ``{2}``, ... numbered by first appearance in the English (the translation's are
renumbered to match, and a pair whose placeholders differ is dropped); drop pairs with no
word left beside the placeholders; cap the length (:data:`MAX_WORDS` English tokens,
:data:`MAX_TGT_WORDS` target tokens).  Deduplicate by the normalised English source
(:func:`source_key`: lower-cased tokens without final punctuation), keeping the translation
the sources give most often (ties: the first in :data:`~attnlab.text.catalogs.SOURCES` order).

Splitting (:func:`split`), so that the test splits measure generalisation, not recall:

- ``unseen``: the pairs of the held-out packages (:data:`HELD_OUT`), whole applications
  none of whose English strings (nor a near-twin of one) is in any other package: the
  out-of-domain test split.  A string a held-out package shares with another goes with the
  other's.
- ``train``, ``dev``, ``test`` (90/5/5, in domain): near-twins (:mod:`attnlab.text.twins`:
  the same normalised tokens, or one token edit apart) are kept in one split: each group of
  near-twins goes where the SHA-256 of its first string (in the order of their normalised
  English) sends it
  (:func:`split_of`); a family of more than :data:`MAX_TWIN_GROUP` near-twins (an
  application's templates, "Unable to delete {1}.") is training text.
"""

from __future__ import annotations

import hashlib
import html
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from attnlab.text.catalogs import SOURCES, catalog_dir, read_catalogs
from attnlab.text.twins import groups, normalised
from attnlab.text.vocab import tokenize

__all__ = [
    "LANGS",
    "MAX_TGT_WORDS",
    "MAX_WORDS",
    "SPLITS",
    "HELD_OUT",
    "MAX_TWIN_GROUP",
    "Built",
    "build",
    "clean_pair",
    "load_corpus",
    "source_key",
    "split",
    "split_of",
]

LANGS = ("fr", "de")  # English -> these
SPLITS = ("train", "dev", "test", "unseen")  # "unseen": the held-out packages
#: The packages held out whole as the out-of-domain test split "unseen" (PyPI names).
HELD_OUT: tuple[str, ...] = ("Trac", "openslides")  # an issue tracker and wiki, a meeting system
MAX_TWIN_GROUP = 20  # a larger family of near-twins goes to training
MAX_WORDS = 15  # tokens of the English (words, punctuation, placeholders)
MAX_TGT_WORDS = 22  # tokens of the translation


# --------------------------------------------------------------------------- cleaning
#: Placeholders: %(name)s, {name}, {0}, %1 (JupyterLab), %s / %d / %i / %r.
PLACEHOLDER = re.compile(r"%\([A-Za-z_]\w*\)[sdirf]|\{[A-Za-z_0-9]\w*\}|%\d|%[sdirf]")
_MARKUP = re.compile(r"<[^>]*>|\*\*|``?|\[\[|\]\]|\\[a-z]|https?:|www\.|@\w+\.\w|[\\/]\w+[\\/]")
#: Accelerators: "&File", "_File", and Qt's inside a word ("C&lose", Spyder).
_ACCEL = re.compile(r"(?<![\w&])&(?=\w)|(?<=[^\W\d_])&(?=[^\W\d_])|(?<![\w_])_(?=[A-Za-z])")


def _placeholders(en: str, tgt: str) -> tuple[str, str] | None:
    """Both strings with every placeholder written ``{k}`` (k numbered by first appearance
    in the English), or None when the two do not hold the same placeholders."""
    found = PLACEHOLDER.findall(en)
    if Counter(found) != Counter(PLACEHOLDER.findall(tgt)):
        return None
    numbers: dict[str, int] = {}
    positional = [p for p in found if p in ("%s", "%d", "%i", "%r", "%f")]
    if positional and len(positional) > 1 and len(set(found)) != len(found):
        return None  # repeated positional %s: cannot tell which is which after reordering
    for p in found:
        numbers.setdefault(p, len(numbers) + 1)
    sub = lambda text: PLACEHOLDER.sub(lambda m: f"{{{numbers[m[0]]}}}", text)  # noqa: E731
    en, tgt = sub(en), sub(tgt)
    if "%(" in en + tgt:  # one we do not read ("%(order.number)s", "%(amount).2f"): dropped
        return None
    return en, tgt


def _tidy(text: str) -> str:
    """Entities unescaped, accelerators and keyboard hints removed, typography and spaces
    made plain."""
    text = html.unescape(text)
    text = _ACCEL.sub("", text)
    text = re.sub(r"\s*\((?:[A-Za-z])\)|\t.*$", "", text)  # "Save (S)", "Copy\tCtrl+C"
    text = text.replace("\u2019", "'").replace("\u2026", "...").replace("\u00a0", " ")
    text = text.replace("\u202f", " ").replace("\u200b", "")
    text = re.sub("[\u201c\u201d\u201e\u00ab\u00bb]", '"', text)  # “ ” „ « » -> "
    text = re.sub("[\u2018\u201a\u2039\u203a]", "'", text)  # ‘ ‚ ‹ › -> '
    return " ".join(text.split())


def clean_pair(en: str, tgt: str) -> tuple[str, str] | None:
    """The cleaned (English, translation), or None when the pair is dropped (module doc)."""
    if _MARKUP.search(en) or _MARKUP.search(tgt) or "\n" in en.strip():
        return None
    en, tgt = _tidy(en), _tidy(tgt)
    if _MARKUP.search(en) or _MARKUP.search(tgt):
        return None  # markup written as entities ("&lt;b&gt;")
    if not en or not tgt or en == tgt and not re.search(r"[A-Za-z]{4}", en):
        return None
    if en.casefold() == tgt.casefold():
        return None  # untranslated (a copy of the English)
    swapped = _placeholders(en, tgt)
    if swapped is None:
        return None
    en, tgt = swapped
    en_tokens, tgt_tokens = tokenize(en), tokenize(tgt)
    if not any(t[0].isalpha() for t in en_tokens) or not any(t[0].isalpha() for t in tgt_tokens):
        return None  # placeholder- or punctuation-only
    if len(en_tokens) > MAX_WORDS or len(tgt_tokens) > MAX_TGT_WORDS:
        return None
    return en, tgt


def source_key(en: str) -> str:
    """The normalised English (:func:`attnlab.text.twins.normalised`), one space between."""
    return " ".join(normalised(en))


def split_of(en: str) -> str:
    """The in-domain split a group of near-twins whose first string is ``en`` goes to,
    from the SHA-256 of its :func:`source_key`: 90/5/5."""
    bucket = int(hashlib.sha256(source_key(en).encode()).hexdigest()[:8], 16) % 100
    return "train" if bucket < 90 else "dev" if bucket < 95 else "test"


# --------------------------------------------------------------------------- building
@dataclass
class Built:
    """What :func:`build` returns for one language."""

    lang: str
    splits: dict[str, list[tuple[str, str]]]
    per_source: dict[str, int]  # package -> clean pairs it gave (before deduplication)
    raw: int  # catalog entries read


def _dedupe(candidates: list[tuple[str, str, int, str]]) -> list[tuple[str, str, set[str]]]:
    """One pair per normalised English: its most frequent translation (ties: first seen),
    with the packages that hold the English."""
    by_key: dict[str, Counter] = {}
    first_en: dict[str, str] = {}
    order: dict[tuple[str, str], int] = {}
    packages: dict[str, set[str]] = {}
    for en, tgt, rank, package in candidates:
        key = source_key(en)
        by_key.setdefault(key, Counter())[tgt] += 1
        first_en.setdefault(key, en)
        order.setdefault((key, tgt), rank)
        packages.setdefault(key, set()).add(package)
    pairs = []
    for key, counts in by_key.items():
        tgt = min(counts, key=lambda t: (-counts[t], order[(key, t)]))
        pairs.append((first_en[key], tgt, packages[key]))
    return sorted(pairs, key=lambda p: (source_key(p[0]), p[0]))


def split(
    pairs: list[tuple[str, str, set[str]]], held_out: tuple[str, ...] | None = None
) -> dict[str, list[tuple[str, str]]]:
    """(English, translation, its packages) -> the four splits (module doc): near-twins in
    one split; a group none of whose strings is outside the ``held_out`` packages (default
    :data:`HELD_OUT`) is "unseen"."""
    held_out = HELD_OUT if held_out is None else held_out
    group_of = groups([normalised(en) for en, _, _ in pairs])
    members: dict[int, list[int]] = {}
    for i, g in enumerate(group_of):
        members.setdefault(g, []).append(i)
    out: dict[str, list[tuple[str, str]]] = {s: [] for s in SPLITS}
    for g, idx in sorted(members.items()):
        if all(pairs[i][2] <= set(held_out) for i in idx):
            name = "unseen"
        elif len(idx) > MAX_TWIN_GROUP:
            name = "train"
        else:
            name = split_of(pairs[g][0])  # g: the group's first string
        out[name] += [pairs[i][:2] for i in idx]
    return {
        name: sorted(rows, key=lambda p: (source_key(p[0]), p[0])) for name, rows in out.items()
    }


def build(lang: str, folder: Path | str | None = None) -> Built:
    """Read, clean, deduplicate and split every catalog for English -> ``lang``.

    Raises :class:`CatalogError` (one line naming the file) for a missing or damaged wheel.
    """
    if lang not in LANGS:
        raise ValueError(f"unknown language {lang!r}; choose one of {', '.join(LANGS)}")
    folder = Path(folder) if folder is not None else catalog_dir()
    candidates, per_source, raw = [], {}, 0
    for source in SOURCES:
        if lang not in source.paths:
            continue
        pairs = read_catalogs(source, folder, lang)
        raw += len(pairs)
        clean = [p for p in (clean_pair(en, tgt) for en, tgt in pairs) if p is not None]
        per_source[f"{source.package} {source.version}"] = len(clean)
        candidates += [
            (en, tgt, len(candidates) + i, source.package) for i, (en, tgt) in enumerate(clean)
        ]
    return Built(lang, split(_dedupe(candidates)), per_source, raw)


@lru_cache(maxsize=4)
def _cached(lang: str, folder: str) -> Built:
    return build(lang, folder)


def load_corpus(lang: str, folder: Path | str | None = None) -> dict[str, list[tuple[str, str]]]:
    """{"train", "dev", "test", "unseen"} -> [(English, translation), ...] for English ->
    ``lang``
    (built once per process from the catalogs; see :func:`build`)."""
    folder = Path(folder) if folder is not None else catalog_dir()
    return _cached(lang, str(folder)).splits
