"""The widgets on a subword model: seen in training beside the output, pieces shown readably,
alpha per word.

A tiny subword Transformer is built here, untrained (what it writes is noise, which is all
these tests need), and the training strings the widgets look the text
up in are a hand-made file (:mod:`attnlab.text.seen`, its folder swapped for the test's).
For the DecodeStepper and the HeadView: the line says seen / near-twin (which string) / new
and follows the text, says "unavailable" without the file, and is absent for a date model;
no label, caption or c_t line shows SentencePiece's ``▁`` or a byte piece; the HeadView's
words toggle shows alpha summed over each source word's pieces.
"""

from __future__ import annotations

import doctest
import io
import json
from dataclasses import replace

import numpy as np
import pytest
import torch
from PIL import Image

from attnlab.models.registry import build_model
from attnlab.pictures import heatmaps, typography
from attnlab.pictures.canvas import slide_figure
from attnlab.pictures.heatmaps import still_heatmap
from attnlab.text import seen
from attnlab.text.subwords import WORD_START, train_subwords
from attnlab.text.vocab import Vocab
from attnlab.training.config import default_configs
from attnlab.widgets import DecodeStepper, HeadView

PAIRS = [
    ("Close all tabs", "Fermer tous les onglets"),
    ("Close the file", "Fermer le fichier"),
    ("Open all files", "Ouvrir tous les fichiers"),
    ("Unable to delete the file", "Impossible de supprimer le fichier"),
    ("Default cell type", "Type de cellule par défaut"),
    ("Save the changes", "Enregistrer les modifications"),
]
#: The training strings the widgets are told of (seen-fr.txt.gz of the test's folder).
TRAINING = ["Close all tabs", "Unable to delete the file"]
#: Typed text -> what the line must say, and the training string it names.
CASES = {
    "Close all tabs!": ("seen", "Close all tabs"),
    "Unable to delete the folder": ("near-twin", "Unable to delete the file"),
    "Open a new window": ("new", None),
}
#: "ø" is in no training string: its UTF-8 bytes are byte pieces ("<0xC3>" "<0xB8>").
BYTES_TEXT = "Close all søfiles"


def record(png: bytes) -> dict:
    return json.loads(Image.open(io.BytesIO(bytes(png))).text[typography.RECORD_KEY])


def raw_piece(label: str) -> bool:
    """A SentencePiece piece as the model writes it: a ``▁`` or a byte piece ``<0xC3>``."""
    return WORD_START in label or "<0x" in label


@pytest.fixture(scope="module")
def subword_model():
    """A tiny untrained subword Transformer: one vocabulary of pieces learned from PAIRS."""
    torch.manual_seed(0)
    vocab = Vocab.subwords(train_subwords([t for pair in PAIRS * 10 for t in pair], 400))
    sizes, _ = default_configs("transformer", "en-fr")
    sizes = replace(sizes, d_model=16, num_heads=2, num_layers=1, d_ff=32, max_tgt_len=10)
    model = build_model("transformer", vocab, vocab, sizes)
    model.card = {"name": "tiny-subwords-en-fr", "task": "en-fr"}
    assert model.translate("Close all tabs")  # it writes something: steps to show
    return model


@pytest.fixture
def training_strings(tmp_path, monkeypatch):
    """The widgets read TRAINING as the training split of English -> French."""
    seen.seen_path("fr", tmp_path).write_bytes(seen.seen_bytes(TRAINING))
    monkeypatch.setattr(seen, "SEEN_DIR", tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- seen in training
@pytest.mark.parametrize("widget", [DecodeStepper, HeadView])
def test_the_line_says_seen_near_twin_or_new_and_follows_the_text(
    subword_model, training_strings, widget
):
    w = widget(subword_model, "Close all tabs!")
    for text, (kind, string) in CASES.items():
        w.text.value = text
        assert w.message == "" and w.seen.kind == kind and w.seen.string == string, text
        assert w.seen_box.layout.display != "none" and w.seen.line.split(":")[0] in w.seen_box.value
        if string is not None:
            assert string in w.seen_box.value  # which training string
    w.text.value = "x" * 300  # refused: the widget keeps showing the last text, and its line
    assert "Too long" in w.message and w.seen.kind == "new"


def test_the_line_is_beside_the_output(subword_model, training_strings):
    stepper = DecodeStepper(subword_model, "Close all tabs")
    beside_picture = stepper.children[-1].children[1]  # the column right of the picture
    assert stepper.seen_box in beside_picture.children
    view = HeadView(subword_model, "Close all tabs")
    assert view.seen_box in view.children[0].children  # beside the text box


def test_a_date_model_has_no_line_and_a_model_switch_clears_it(subword_model, training_strings):
    w = DecodeStepper(subword_model, "Close all tabs")
    assert w.seen.kind == "seen"
    w.model_chooser.value = "rnnsearch-dates"
    assert w.message == "" and w.seen is None and w.seen_box.layout.display == "none"
    assert w.seen_box.value == ""
    assert HeadView("transformer-dates").seen is None


@pytest.mark.parametrize("widget", [DecodeStepper, HeadView])
def test_a_missing_file_says_the_indicator_is_unavailable_and_the_widget_works(
    subword_model, tmp_path, monkeypatch, widget
):
    monkeypatch.setattr(seen, "SEEN_DIR", tmp_path / "nothing here")
    w = widget(subword_model, "Close all tabs")
    assert w.message == "" and w.seen.kind == "unavailable"
    assert "unavailable" in w.seen_box.value and "seen-fr.txt.gz" in w.seen_box.value
    assert "Traceback" not in w.seen_box.value and w.png()


# --------------------------------------------------------------------------- readable pieces
def test_the_stepper_shows_pieces_readably(subword_model, training_strings):
    w = DecodeStepper(subword_model, BYTES_TEXT)
    assert any("<0x" in t for t in w.source_tokens) and w.source_tokens[0].startswith(WORD_START)
    heat = record(w.png())["heatmaps"][0]
    assert heat["keys_labelled"] == heat["keys"] and any("ø" in k for k in heat["keys"])
    assert "Close" in heat["keys"] and not any(map(raw_piece, heat["keys"] + heat["queries"]))
    assert len(heat["queries_labelled"]) == len(w.decoding.output_tokens)
    shown = [w.grid.frame((t,)).data["caption"] for t in range(1, w.grid.sizes[0])]
    shown += w.context_lines + [w.translation, w._renderer.heatmap.ax.get_title()]
    assert not any(map(raw_piece, shown)), shown
    assert w.translation == subword_model.tgt_vocab.join(w.decoding.output_tokens)


def test_the_head_view_shows_pieces_and_words_readably(subword_model, training_strings):
    w = HeadView(subword_model, BYTES_TEXT)
    assert list(w.unit.options) == ["pieces", "words"] and w.unit.layout.display != "none"
    for index in w.grid.indices():
        for heat in record(w.grid.frame(index).view.value)["heatmaps"]:
            assert heat["keys_labelled"] == heat["keys"]
            assert not any(map(raw_piece, heat["keys"] + heat["queries"])), index
    assert HeadView("transformer-dates").unit.layout.display == "none"


def spans(pieces: list[str]) -> list[range]:
    """The pieces of each word: a word starts at a piece with ``▁``, at <eos>, or first."""
    starts = [k for k, p in enumerate(pieces) if k == 0 or p.startswith(WORD_START) or p == "<eos>"]
    return [range(a, b) for a, b in zip(starts, [*starts[1:], len(pieces)], strict=True)]


def test_the_words_toggle_sums_alpha_over_a_source_words_pieces(subword_model):
    w = HeadView(subword_model, BYTES_TEXT)
    w.kind.index, w.unit.index = 0, 0  # cross-attention over the pieces
    keys, queries, alpha = w.key_tokens, w.query_tokens, w.weights  # alpha (h, T, n)
    columns = np.stack([alpha[..., s].sum(-1) for s in spans(keys)], -1)  # a word: its sum
    want = np.stack([columns[:, s].mean(1) for s in spans(queries)], 1)  # rows: their mean
    w.unit.index = 1
    assert w.frame.data["unit"] == "words"
    assert w.key_tokens == ["Close", "all", "søfiles", "<eos>"]  # the words, as typed
    assert len(w.query_tokens) == len(spans(queries))
    np.testing.assert_allclose(w.weights, want, atol=1e-6)
    np.testing.assert_allclose(w.weights.sum(-1), 1, atol=1e-5)  # each row still sums to 1
    assert w.frame.view.value != w.grid.frame((0, 0, 0)).view.value  # another picture
    assert any(len(s) > 1 for s in spans(keys))  # the text has a word of several pieces


def test_a_heatmap_labels_pieces_readably_unless_told_they_are_not(subword_model):
    pieces = subword_model.src_vocab.tokens(BYTES_TEXT) + ["<eos>"]
    fig, sizes = slide_figure(700, 300, layout=None)
    left, right = fig.subplots(1, 2)
    heat = still_heatmap(left, np.full((1, len(pieces)), 0.2), pieces, ["<eos>"], sizes=sizes)
    assert heat.x_labels[0] == "Close" and any("ø" in label for label in heat.x_labels)
    assert not any(map(raw_piece, heat.record()["keys"]))
    words = still_heatmap(right, np.full((1, 2), 0.5), ["close", "tabs"], ["x"], sizes=sizes)
    assert words.x_labels == ["close", "tabs"]  # other tokens are left as they are


def test_the_examples_in_the_heatmaps_docstrings_run():
    result = doctest.testmod(heatmaps, raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0, result
