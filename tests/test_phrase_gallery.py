"""The live demo's prepared phrases: held out, and pre-rendered so an export offers them."""

from __future__ import annotations

import pytest

from attnlab.decode import decode
from attnlab.lecture import PREPARED_PHRASES
from attnlab.text import seen
from attnlab.text.corpus import load_corpus
from attnlab.widgets import PhraseGallery


@pytest.fixture(scope="module")
def gallery():
    return PhraseGallery("transformer-en-fr", PREPARED_PHRASES)


def test_every_prepared_phrase_comes_from_the_held_out_packages():
    unseen = {en for en, _ in load_corpus("fr")["unseen"]}
    missing = [text for text, _ in PREPARED_PHRASES if text not in unseen]
    assert not missing, f"not strings of the held-out packages: {missing}"


def test_no_prepared_phrase_was_seen_in_training_nor_is_a_near_twin():
    index = seen.seen_index("fr")
    told = {text: seen.verdict(index, text) for text, _ in PREPARED_PHRASES}
    assert all(v.kind == "new" for v in told.values()), {t: v.line for t, v in told.items()}


def test_one_prepared_phrase_is_an_honest_failure():
    assert sum("failure" in note for _, note in PREPARED_PHRASES) == 1


def test_the_dropdown_picks_each_phrases_own_picture_in_the_browser(gallery):
    assert gallery.links, "the Dropdown is linked to the Stack in the browser (jslink)"
    pictures = []
    for i, (text, _) in enumerate(PREPARED_PHRASES):
        gallery.phrase.index = i
        gallery.grid.select()  # what the jslink does in the browser
        assert gallery.grid.shown() == (i,)
        assert gallery.frame.data["text"] == text
        assert gallery.frame.data["translation"], f"no translation for {text!r}"
        pictures.append(gallery.png())
    assert len(set(pictures)) == len(PREPARED_PHRASES), "two phrases share one picture"


def test_each_frame_holds_the_decoding_it_draws(gallery):
    gallery.phrase.index = 0
    alpha = gallery.frame.data["alpha"]  # (T, n): rows sum to 1 (mean of softmax rows)
    assert alpha.ndim == 2 and abs(alpha.sum(axis=1) - 1).max() < 1e-4
    assert gallery.translation == "Afficher la version précédente dans le navigateur"
    assert "New" in gallery.frame.data["seen"]


@pytest.mark.parametrize("phrases", [[], [("only the English",)], "Close all tabs"])
def test_bad_phrase_lists_are_refused_in_one_line(phrases):
    with pytest.raises(ValueError, match="phrases must be"):
        PhraseGallery("transformer-en-fr", phrases)


def test_the_subword_slide_shows_held_out_strings_in_the_models_pieces():
    from attnlab.lecture import SUBWORD_PHRASES, subword_table
    from attnlab.training.checkpoints import load

    unseen = {en for en, _ in load_corpus("fr")["unseen"]}
    assert all(text in unseen for text in SUBWORD_PHRASES)
    table = subword_table(load("transformer-en-fr"))
    assert [row[0] for row in table.rows] == SUBWORD_PHRASES
    assert any("##" in row[1] for row in table.rows), "no word cut into pieces"
    assert all(row[2] and row[3] for row in table.rows), "an empty translation"
    model = load("transformer-en-fr")
    for text, _, greedy, beam in table.rows:
        assert greedy == decode(model, text).text and beam == decode(model, text, beam=4).text
    # the slide's notes: beam search rights a rare word's pieces that greedy decoding garbles
    assert any(greedy != beam for _, _, greedy, beam in table.rows)
