"""Subword units and near-twins: what the real-language models read, and the rule of "seen"."""

import doctest

import pytest

from attnlab.text import subwords, twins
from attnlab.text.subwords import per_word, readable, train_subwords, word_spans
from attnlab.text.twins import TwinIndex, groups, normalised, one_token_edit, within_one_edit
from attnlab.text.vocab import UNK, Vocab

TEXTS = [
    "Close all tabs",
    "Fermer tous les onglets",
    "Delete the file {1}",
    "Supprimer le fichier {1}",
    "Datenträger löschen",
    "Save the notebook as {1} in {2}",
] * 40


@pytest.fixture(scope="module")
def vocab():
    return Vocab.subwords(train_subwords(TEXTS, 320))


def test_the_specials_are_numbered_like_every_vocabulary(vocab):
    assert vocab.itos[:4] == ["<pad>", "<sos>", "<eos>", "<unk>"]
    assert (vocab.pad, vocab.sos, vocab.eos, vocab.unk) == (0, 1, 2, 3)


@pytest.mark.parametrize(
    "text", ["Ändern Sie die Größe", "日本語のテキスト", "naïve café 😀", "ZZZ qqq xyzzy"]
)
def test_no_typed_text_becomes_unk_and_it_reads_back(vocab, text):
    ids = vocab.encode(text)  # never raises: byte fallback
    assert vocab.unk not in ids and UNK not in vocab.tokens(text)
    assert vocab.decode(ids) == text
    assert vocab.unknown(text) == []


def test_case_is_kept(vocab):
    assert vocab.decode(vocab.encode("Close ALL Tabs")) == "Close ALL Tabs"
    assert not vocab.lower_only


def test_placeholders_are_one_piece(vocab):
    pieces = vocab.tokens("Delete {1} from {2}")
    assert "{1}" in pieces and "{2}" in pieces
    assert not any(p != "{1}" and "{1}" in p for p in pieces)


def test_the_pieces_are_the_same_for_the_same_texts():
    assert train_subwords(TEXTS, 320) == train_subwords(TEXTS, 320)


def test_a_subword_vocab_needs_its_model_and_a_damaged_model_is_one_line():
    with pytest.raises(ValueError, match="needs its subword model"):
        Vocab(["a"], level="subword")
    with pytest.raises(ValueError, match="not a subword model"):
        Vocab.subwords(b"this is not a model")
    with pytest.raises(ValueError, match="no text"):
        train_subwords(["   "], 300)


def test_readable_shows_word_starts_continuations_and_bytes():
    assert readable(["▁Daten", "träger", "▁", "<0xC3>", "<0xA9>", "{1}"]) == [
        "Daten",
        "##träger",
        "␣",
        "é",
        "·",
        "##{1}",
    ]
    shown = readable(["▁Close", "▁al", "l"])
    assert not any("▁" in s for s in shown) and shown[2] == "##l"


def test_alpha_per_word_sums_a_source_word_and_averages_a_target_word():
    source = ["▁Daten", "träger", "▁löschen", "<eos>"]
    target = ["▁Delete", "▁dis", "ks", "<eos>"]
    alpha = [
        [0.1, 0.1, 0.8, 0.0],
        [0.5, 0.4, 0.1, 0.0],
        [0.3, 0.6, 0.1, 0.0],
        [0.0, 0.0, 0.0, 1.0],
    ]
    tgt_words, src_words, rows = per_word(alpha, target, source)
    assert src_words == ["Datenträger", "löschen", "<eos>"]
    assert tgt_words == ["Delete", "disks", "<eos>"]
    assert rows[0].tolist() == pytest.approx([0.2, 0.8, 0.0])
    assert rows[1].tolist() == pytest.approx([0.9, 0.1, 0.0])  # mean of 0.9 and 0.9
    assert rows.sum(1).tolist() == pytest.approx([1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="expected"):
        per_word(alpha, target[:2], source)
    assert word_spans(["▁a", "b", "<eos>"]) == [("ab", [0, 1]), ("<eos>", [2])]


# --------------------------------------------------------------------------- near-twins
@pytest.mark.parametrize(
    "a, b, twins_",
    [
        ("Unable to delete the file", "Unable to delete the folder.", True),  # substitution
        ("Unable to delete the file", "Unable to delete file", True),  # deletion
        ("Unable to delete file", "Unable to delete the file", True),  # insertion
        ("Unable to delete the file", "Unable to remove a file", False),  # two edits
        ("Unable to delete the file", "to Unable delete the file", False),  # a swap
        ("Save", "Open", False),  # short strings: only when the same
        ("Save file", "Save", False),
        ("Close all tabs", "close all tabs!", True),  # normalised: the same
    ],
)
def test_near_twins_are_one_token_edit_apart(a, b, twins_):
    assert within_one_edit(normalised(a), normalised(b)) is twins_
    assert within_one_edit(normalised(b), normalised(a)) is twins_


def test_groups_join_near_twins_of_near_twins():
    strings = ["Unable to delete the file", "Close all tabs", "Unable to delete the folder"]
    strings += ["Unable to delete a folder", "Unable to rename a notebook"]
    g = groups([normalised(s) for s in strings])
    assert g[0] == g[2] == g[3] != g[1]
    assert g[4] not in (g[0], g[1])


def test_the_index_says_seen_near_twin_or_new():
    index = TwinIndex(["Unable to delete the file", "Close all tabs"])
    assert index.find("close all tabs.") == ("seen", "Close all tabs")
    assert index.find("Unable to delete that file") == ("near-twin", "Unable to delete the file")
    assert index.find("Unable to rename that file") is None


def test_one_token_edit_holds_for_short_strings_too():
    assert one_token_edit(normalised("Save file"), normalised("Save"))  # not a near-twin
    assert not within_one_edit(normalised("Save file"), normalised("Save"))
    assert one_token_edit(normalised("Save file"), normalised("Open file"))
    assert not one_token_edit(normalised("Save file"), normalised("Open folder"))
    assert not one_token_edit(normalised("Save"), normalised("Save this file"))


def test_the_index_finds_a_short_strings_neighbour():
    index = TwinIndex(["Delete this file", "Close all tabs", "Show all"])
    assert index.find("Delete this folder") is None  # under the near-twin rule's 4 words
    assert index.neighbour("Delete this folder") == "Delete this file"
    assert index.neighbour("close all") == "Close all tabs"  # one word fewer
    assert index.neighbour("Show all now") == "Show all"  # one word more
    assert index.neighbour("Rename this folder") is None  # two words away


@pytest.mark.parametrize("module", [subwords, twins])
def test_the_docstring_examples_run(module):
    result = doctest.testmod(module, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0
