"""The live demo's prepared phrases: held out, and pre-rendered so an export offers them."""

from __future__ import annotations

import html
import io

import numpy as np
import pytest
from PIL import Image

from attnlab.decode import decode
from attnlab.lecture import OUTPUT_AREA_PX, PREPARED_PHRASES
from attnlab.text import seen
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import tokenize
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


def test_the_column_beside_the_picture_says_what_the_chosen_phrase_became(gallery):
    """The English, the model's translation and the seen line, at 22 px, beside the picture:
    picked by the Dropdown in the browser like the picture, so they never disagree."""
    assert gallery.children[-1].children == (gallery.grid.root, gallery.column)
    pairs = {(link.source, link.target) for link in gallery.links}
    assert ((gallery.phrase, "index"), (gallery.words.root, "selected_index")) in pairs
    columns = []
    for i, (text, _) in enumerate(PREPARED_PHRASES):
        gallery.phrase.index = i
        gallery.grid.select()  # what the jslinks do in the browser
        gallery.words.select()
        assert gallery.words.shown() == gallery.grid.shown() == (i,)
        said = html.unescape(gallery.words.frame((i,)).view.value)
        data = gallery.frame.data
        assert f"'{text}'" in said and f"'{data['translation']}'" in said
        assert data["seen"] and data["seen"] in said and "font-size:24px" in said
        columns.append(said)
    assert len(set(columns)) == len(PREPARED_PHRASES)


def test_the_picture_and_its_column_fit_the_slide_side_by_side(gallery):
    widths = {Image.open(io.BytesIO(bytes(gallery.grid.frame((i,)).view.value))).width
              for i in range(len(PREPARED_PHRASES))}  # fmt: skip
    column = float(gallery.column.layout.min_width.removesuffix("px"))
    margin = float(gallery.column.layout.margin.split()[3].removesuffix("px"))
    assert max(widths) + margin + column <= OUTPUT_AREA_PX, widths
    assert float(gallery.phrase.layout.width.removesuffix("px")) <= OUTPUT_AREA_PX


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
    references = dict(load_corpus("fr")["unseen"])
    for text, _, greedy, beam in table.rows:
        for shown, decoded in ((greedy, decode(model, text)), (beam, decode(model, text, beam=4))):
            mark, output = shown.split(" ", 1)
            assert output == decoded.text
            right = tokenize(output, lower=False) == tokenize(references[text], lower=False)
            assert mark == ("✓" if right else "✗"), (text, shown)  # a wrong row is marked wrong
    # the slide's notes: beam search rights a rare word's pieces that greedy decoding garbles
    assert any(g.startswith("✗") and b.startswith("✓") for _, _, g, b in table.rows)


def _red_pixels(png: bytes) -> int:
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return int(((rgb[..., 0] > 200) & (rgb[..., 1] < 60) & (rgb[..., 2] < 60)).sum())


def test_a_whole_decoding_boxes_no_row_while_a_step_boxes_its_own(gallery):
    # the gallery shows every row at once: a red box on the last row would say "this step"
    assert _red_pixels(bytes(gallery.image.value)) == 0
    from attnlab.widgets import DecodeStepper

    stepper = DecodeStepper("transformer-en-fr", text=PREPARED_PHRASES[0][0])
    assert _red_pixels(stepper.png()) > 100  # the stepper's present row, boxed


def test_drawn_phrases_are_a_seeded_draw_of_new_held_out_strings_marked_right_or_wrong():
    from attnlab.lecture import drawn_phrases
    from attnlab.training.checkpoints import load

    model = load("transformer-en-fr")
    drawn = drawn_phrases(model, count=8, seed=0)
    assert drawn == drawn_phrases(model, count=8, seed=0)  # the same draw every run
    assert drawn != drawn_phrases(model, count=8, seed=1)
    references = dict(load_corpus("fr")["unseen"])
    index = seen.seen_index("fr")
    for text, note in drawn:
        assert text in references and 2 <= len(text.split()) <= 6
        assert seen.verdict(index, text).kind == "new"
        right = tokenize(decode(model, text).text, lower=False) == tokenize(
            references[text], lower=False
        )
        assert note == (
            "random: ✓ the reference" if right else f"random: ✗ ref. {references[text]}"
        )
    assert any("✗" in note for _, note in drawn), "a random draw of all successes: not ~10%"
    chosen = {text for text, _ in PREPARED_PHRASES}
    assert not chosen & {text for text, _ in drawn}, "a chosen phrase drawn again counts twice"


@pytest.mark.parametrize("count", [0, 21, 2.5, True])
def test_drawn_phrases_refuse_a_bad_count_in_one_line(count):
    from attnlab.lecture import drawn_phrases
    from attnlab.training.checkpoints import load

    with pytest.raises(ValueError, match="count must be an int from 1 to 20"):
        drawn_phrases(load("transformer-en-fr"), count=count)


def test_the_draw_and_the_subword_table_need_no_catalogs(tmp_path):
    """A student's laptop or the course's hub has the package, not the catalog wheels."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json\n"
        "from attnlab.lecture import drawn_phrases, subword_table\n"
        "from attnlab.training.checkpoints import load\n"
        "model = load('transformer-en-fr')\n"
        "print(json.dumps([drawn_phrases(model, count=8, seed=0), subword_table(model).rows]))\n"
    )
    env = {**os.environ, "ATTNLAB_CATALOGS": str(tmp_path)}  # an empty folder: no wheel
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env
    )
    assert run.returncode == 0, run.stderr[-2000:]
    from attnlab.lecture import drawn_phrases, subword_table
    from attnlab.training.checkpoints import load

    model = load("transformer-en-fr")
    drawn, rows = json.loads(run.stdout)
    assert [tuple(d) for d in drawn] == drawn_phrases(model, count=8, seed=0)
    assert rows == subword_table(model).rows
