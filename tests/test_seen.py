"""attnlab.text.seen: the training strings the widgets look a typed text up in.

The shipped files hold exactly the training split's English (rebuilt from the corpus here),
as the same bytes every time; a file is read once per process without the corpus builder or
the catalogs; a missing or damaged file is one line that says how to make it; the corpus
command writes the files, and replaces shipped ones only with --force.  What the widgets show
from them is tested in tests/test_widgets_subwords.py.  The held-out split's (English,
reference) pairs ship the same way, in the split's order (the lecture's seeded draw).
"""

from __future__ import annotations

import doctest
import gzip
import subprocess
import sys

import pytest
from conftest import attnlab_command

from attnlab.text import corpus, seen
from attnlab.text.corpus import load_corpus
from attnlab.text.twins import TwinIndex

TRAIN = ["Unable to delete the file", "Close all tabs", "Close all tabs", "Default cell type"]


def written(folder, lang: str, strings) -> None:
    seen.seen_path(lang, folder).write_bytes(seen.seen_bytes(strings))


# --------------------------------------------------------------------------- the file
def test_the_bytes_are_sorted_unique_lines_and_the_same_every_time():
    data = seen.seen_bytes(TRAIN)
    assert data == seen.seen_bytes(list(reversed(TRAIN)))  # the order given does not matter
    assert data[4:8] == b"\0\0\0\0"  # gzip's time stamp: none, so a rebuild is byte-identical
    lines = gzip.decompress(data).decode().splitlines()
    assert lines == sorted(set(TRAIN))


def test_a_string_with_a_line_break_is_refused():
    with pytest.raises(ValueError, match="line break"):
        seen.seen_bytes(["Close all\ntabs"])


def test_a_file_is_read_once_and_again_only_when_it_changes(tmp_path):
    written(tmp_path, "fr", TRAIN)
    index = seen.seen_index("fr", tmp_path)
    assert sorted(index.strings) == sorted(set(TRAIN))
    assert seen.seen_index("fr", tmp_path) is index  # once per process
    written(tmp_path, "fr", ["Open a new window please"])  # the corpus command rewrote it
    again = seen.seen_index("fr", tmp_path)
    assert again is not index and again.strings == ["Open a new window please"]


def test_a_missing_file_is_one_line_that_says_how_to_make_it(tmp_path):
    with pytest.raises(seen.SeenUnavailable) as err:
        seen.seen_index("fr", tmp_path)
    message = str(err.value)
    assert "\n" not in message and "seen-fr.txt.gz" in message and "missing" in message
    assert "python -m attnlab corpus" in message
    said = seen.verdict(err.value, "Close all tabs")
    assert said.kind == "unavailable" and "unavailable" in said.line and said.string is None


@pytest.mark.parametrize("damage", [b"not gzip at all", gzip.compress(b"\xff\xfe bad utf-8")])
def test_a_damaged_file_is_one_line(tmp_path, damage):
    seen.seen_path("de", tmp_path).write_bytes(damage)
    with pytest.raises(seen.SeenUnavailable, match="seen-de.txt.gz cannot be read") as err:
        seen.seen_index("de", tmp_path)
    assert "\n" not in str(err.value)


def test_a_language_code_is_checked():
    with pytest.raises(ValueError, match="language"):
        seen.seen_path("../fr")


# --------------------------------------------------------------------------- held-out pairs
HELD_OUT = [("Show internal items", "Afficher les éléments internes"), ("Hide this", "Masquer")]


def test_held_out_pairs_keep_the_splits_order_and_read_back_as_they_were(tmp_path):
    pairs = [*HELD_OUT, ("Show internal items", "another reference")]  # its first pair kept
    data = seen.held_out_bytes(pairs)
    assert data == seen.held_out_bytes(pairs) and data[4:8] == b"\0\0\0\0"
    seen.held_out_path("fr", tmp_path).write_bytes(data)
    assert seen.held_out_pairs("fr", tmp_path) == HELD_OUT  # not sorted: the draw's order
    seen.held_out_path("fr", tmp_path).write_bytes(seen.held_out_bytes(HELD_OUT[::-1]))
    assert seen.held_out_pairs("fr", tmp_path) == HELD_OUT[::-1]  # a rewritten file: read again


@pytest.mark.parametrize("bad", ["Close\tall", "Close\nall", "Close\u2028all", "Close\x1call"])
def test_a_held_out_string_with_a_tab_or_a_line_break_is_refused(bad):
    with pytest.raises(ValueError, match="tab or a line break"):
        seen.held_out_bytes([("Fine", bad)])
    with pytest.raises(ValueError, match="tab or a line break"):
        seen.held_out_bytes([(bad, "Bien")])


@pytest.mark.parametrize("damage", [None, b"not gzip at all", gzip.compress(b"Only English\n")])
def test_a_missing_or_damaged_held_out_file_is_one_line(tmp_path, damage):
    if damage is not None:
        seen.held_out_path("de", tmp_path).write_bytes(damage)
    with pytest.raises(seen.SeenUnavailable, match="held-out-de.tsv.gz") as err:
        seen.held_out_pairs("de", tmp_path)
    assert "\n" not in str(err.value)


# --------------------------------------------------------------------------- the verdict
def test_the_verdict_seen_near_twin_or_new():
    index = TwinIndex(TRAIN)
    said = seen.verdict(index, "close all tabs.")  # normalised: the same string
    assert (said.kind, said.string) == ("seen", "Close all tabs")
    assert said.line.startswith("Seen in training") and "'Close all tabs'" in said.line
    said = seen.verdict(index, "Unable to delete the folder")  # one token substituted
    assert (said.kind, said.string) == ("near-twin", "Unable to delete the file")
    assert "Near-twin" in said.line and "'Unable to delete the file'" in said.line
    said = seen.verdict(index, "Unable to open the folder")  # two tokens away: new
    assert (said.kind, said.string) == ("new", None) and said.line.startswith("New")
    assert "nor one word from" in said.line  # 4+ tokens: one-word neighbours were looked for
    # under the split's 4 words the room's phrases are still checked for a one-word neighbour
    short = seen.verdict(index, "Close all")  # "Close all tabs" less its last word
    assert (short.kind, short.string) == ("near-twin", "Close all tabs")
    assert "'Close all tabs'" in short.line


def test_a_short_string_one_word_from_a_training_string_is_a_near_twin():
    index = TwinIndex(["Delete this file", "Export as JSON", "Show all"])
    neighbours = [
        ("Delete this folder", "Delete this file"),  # substituted
        ("Export as", "Export as JSON"),  # one word fewer
        ("Show all now", "Show all"),  # one word more
    ]
    for text, string in neighbours:
        said = seen.verdict(index, text)
        assert (said.kind, said.string) == ("near-twin", string), text
    said = seen.verdict(index, "Delete that folder")  # two words away: new, and said so
    assert said.kind == "new" and "nor one word from" in said.line
    # under 3 words only a training string one word longer is found: the line does not claim
    # that no neighbour exists
    said = seen.verdict(index, "Export PDF")
    assert said.kind == "new" and "nor one word" not in said.line
    assert "not all checked" in said.line


def test_a_phrase_inside_a_longer_training_string_is_said_so():
    # two words more than the phrase: not one edit away, yet the model has read it word for word
    index = TwinIndex(["Close all tabs to the right", "Close all tabs", "Export the data as JSON"])
    said = seen.verdict(index, "Export the data")
    assert (said.kind, said.string) == ("new", "Export the data as JSON")
    assert said.line == "New as a whole, but inside a training string: 'Export the data as JSON'"
    # the shortest string that holds it is named
    assert seen.verdict(index, "all tabs to").string == "Close all tabs to the right"
    both = TwinIndex(["Close all tabs to the right", "Close all tabs"])
    assert both.containing("all tabs") == "Close all tabs"
    # whole words only, in order, and in a row
    for text in ("Export the dat", "the Export data", "Export data as"):
        assert seen.verdict(index, text).string is None, text
    # a single word is in many strings: saying so would tell nothing
    assert index.containing("Export") is None
    assert seen.verdict(index, "Export").string is None


def test_a_seen_string_written_differently_is_said_so():
    # the index ignores case and punctuation, the models read them: "close all tabs." is the
    # training string "Close all tabs" for the index, not for a model
    index = TwinIndex(TRAIN)
    said = seen.verdict(index, "close all tabs.")
    assert said.kind == "seen" and "written differently" in said.line
    same = seen.verdict(index, "  Close all   tabs ")  # only spaces differ: the same string
    assert same.kind == "seen" and "written differently" not in same.line


def test_a_long_training_string_is_shortened_in_the_line():
    long = "Unable to delete the file because another program is using it right now"
    said = seen.verdict(TwinIndex([long]), long.replace("program", "process"))
    assert said.kind == "near-twin" and said.string == long
    quoted = said.line.split("'", 1)[1].removesuffix("'")
    assert quoted.endswith("…") and long.startswith(quoted[:-1]) and len(quoted) <= 60


# --------------------------------------------------------------------------- the command
def built_with(train: list[str]) -> dict:
    splits = {s: [(f"{s} only string", "x")] for s in corpus.SPLITS}
    splits["train"] = [(en, "traduction") for en in train]
    return {lang: corpus.Built(lang, splits, {}, 3) for lang in corpus.LANGS}


def test_the_corpus_command_writes_the_training_english_and_replaces_it_only_with_force(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(seen, "SEEN_DIR", tmp_path)
    first = built_with(TRAIN)
    monkeypatch.setattr(corpus, "build", lambda lang, folder: first[lang])
    run = attnlab_command("corpus")
    assert run.returncode == 0, run.stderr
    for lang in corpus.LANGS:
        path = seen.seen_path(lang)
        assert path.read_bytes() == seen.seen_bytes(TRAIN)  # the train split's English only
        assert "only string" not in gzip.decompress(path.read_bytes()).decode()
        assert seen.held_out_pairs(lang) == [("unseen only string", "x")]  # the unseen split
    assert "unchanged" in attnlab_command("corpus").stdout  # the same corpus: nothing to do
    other = built_with(["Open a new window please"])
    monkeypatch.setattr(corpus, "build", lambda lang, folder: other[lang])
    run = attnlab_command("corpus")  # another corpus, no --force: the shipped files are kept
    assert run.returncode == 0 and "--force" in run.stdout
    assert seen.seen_path("fr").read_bytes() == seen.seen_bytes(TRAIN)
    run = attnlab_command("corpus", "--force")
    assert run.returncode == 0, run.stderr
    assert seen.seen_path("de").read_bytes() == seen.seen_bytes(["Open a new window please"])
    assert seen.held_out_pairs("de") == [("unseen only string", "x")]
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_training_string_file_in_the_way_is_one_line_before_the_build(tmp_path, monkeypatch):
    monkeypatch.setattr(seen, "SEEN_DIR", tmp_path)
    monkeypatch.setattr(corpus, "build", lambda *a: pytest.fail("built before checking"))
    seen.seen_path("fr").mkdir()  # a folder where the file goes
    run = attnlab_command("corpus", "--force")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "is a folder" in run.stderr


# --------------------------------------------------------------------------- the shipped files
@pytest.mark.parametrize("lang", corpus.LANGS)
def test_the_shipped_file_holds_the_training_split_of_the_corpus(lang):
    """Stale after a change of the corpus until `python -m attnlab corpus --force` runs."""
    shipped = seen.seen_path(lang).read_bytes()
    assert shipped == seen.seen_bytes(en for en, _ in load_corpus(lang)["train"])


@pytest.mark.parametrize("lang", corpus.LANGS)
def test_the_shipped_held_out_pairs_are_the_unseen_split_in_its_order(lang):
    """Stale after a change of the corpus until `python -m attnlab corpus --force` runs."""
    assert seen.held_out_pairs(lang) == [tuple(p) for p in load_corpus(lang)["unseen"]]


def test_the_widgets_read_it_without_the_corpus_builder_or_the_catalogs():
    code = (
        "import sys\n"
        "from attnlab.text import seen\n"
        "index = seen.seen_index('fr')\n"
        "assert index.find(index.strings[-1]) == ('seen', index.strings[-1])\n"
        "assert len(seen.held_out_pairs('de')) > 1000\n"
        "print(sorted(m for m in sys.modules if m.startswith('attnlab.text.c')))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"  # neither attnlab.text.corpus nor attnlab.text.catalogs


def test_the_examples_in_the_docstring_run():
    result = doctest.testmod(seen, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0, result
