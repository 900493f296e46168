"""Reading compiled gettext catalogs (.mo): the wheels that ship no .po (Trac, Django REST
framework) are read from their .mo files.

The .mo files here are written by a small writer of the format's own (GNU gettext manual,
"The Format of MO Files"), and the pinned wheels' real ones are checked against the
standard library's reader, ``gettext.GNUTranslations``.
"""

import gettext
import io
import re
import struct
import zipfile

import pytest

from attnlab.text.catalogs import SOURCES, CatalogError, catalog_dir, parse_mo, read_catalogs


def write_mo(entries: dict[str, str], order: str = "<") -> bytes:
    """A .mo file holding ``entries`` (msgid -> msgstr), keys sorted as msgfmt sorts them."""
    keys = sorted(entries, key=lambda k: k.encode())
    ids = [k.encode() for k in keys]
    strs = [entries[k].encode() for k in keys]
    table_at = 28
    data_at = table_at + 16 * len(keys)
    blob, id_table, str_table = b"", [], []
    for strings, table in ((ids, id_table), (strs, str_table)):
        for text in strings:
            table.append((len(text), data_at + len(blob)))
            blob += text + b"\0"
    header = struct.pack(order + "7I", 0x950412DE, 0, len(keys), table_at,
                         table_at + 8 * len(keys), 0, 0)  # fmt: skip
    tables = b"".join(struct.pack(order + "2I", *e) for e in id_table + str_table)
    return header + tables + blob


ENTRIES = {
    "": "Content-Type: text/plain; charset=UTF-8\n",
    "Close": "Fermer",
    "menu\x04Save all": "Tout enregistrer",  # a context
    "%d file\x00%d files": "%d fichier\x00%d fichiers",  # a plural
    "Untranslated": "",
    "Préférences…": "Einstellungen…",  # not ASCII
}


@pytest.mark.parametrize("order", ["<", ">"])
def test_a_mo_file_gives_its_translated_singular_entries(order):
    data = write_mo(ENTRIES, order)
    # the writer is right: the standard library reads what it wrote
    assert gettext.GNUTranslations(io.BytesIO(data)).gettext("Close") == "Fermer"
    assert sorted(parse_mo(data)) == [
        ("Close", "Fermer"),
        ("Préférences…", "Einstellungen…"),
        ("Save all", "Tout enregistrer"),
    ]


def test_a_mo_file_in_another_charset_is_decoded_with_it():
    header = "Content-Type: text/plain; charset=ISO-8859-1\n"
    data = write_mo({"": header, "Close": "Fermer"})
    data = data.replace(b"Fermer", "Fermé!".encode("latin-1"))
    assert parse_mo(data) == [("Close", "Fermé!")]


@pytest.mark.parametrize(
    "data, why",
    [
        (b"hello, not a catalog at all", "not a .mo catalog"),
        (write_mo(ENTRIES)[:60], "truncated"),
        (write_mo(ENTRIES)[:24], "truncated"),
    ],
)
def test_a_damaged_mo_file_is_one_clear_line(data, why):
    with pytest.raises(ValueError, match=why) as err:
        parse_mo(data)
    assert "\n" not in str(err.value)


def test_a_damaged_mo_inside_a_wheel_names_the_wheel(tmp_path):
    source = next(s for s in SOURCES if s.kind == "mo")
    with zipfile.ZipFile(catalog_dir() / source.wheel) as z:
        name = next(n for n in z.namelist() if re.fullmatch(source.paths["fr"], n))
    with zipfile.ZipFile(tmp_path / source.wheel, "w") as z:
        z.writestr(name, b"broken")
    with pytest.raises(CatalogError, match=f"{source.wheel} is damaged: not a .mo catalog"):
        read_catalogs(source, tmp_path, "fr")


@pytest.mark.parametrize("source", [s for s in SOURCES if s.kind == "mo"], ids=lambda s: s.package)
def test_the_pinned_mo_catalogs_read_as_the_standard_library_reads_them(source):
    with zipfile.ZipFile(catalog_dir() / source.wheel) as z:
        for lang, pattern in source.paths.items():
            names = [n for n in z.namelist() if re.fullmatch(pattern, n)]
            assert names, f"{source.wheel} holds no {lang} catalog"
            expected = []
            for name in sorted(names):
                catalog = gettext.GNUTranslations(io.BytesIO(z.read(name)))._catalog
                expected += [
                    (k.split("\x04", 1)[-1], v)
                    for k, v in catalog.items()
                    if isinstance(k, str) and k and v
                ]
            pairs = read_catalogs(source, catalog_dir(), lang)
            assert sorted(pairs) == sorted(expected)
            assert len(pairs) > 100
