"""One row of self-attention worked on real words: the recomputed row is the model's own, the
weights sum to 1, the written sum is sum_i alpha_i v_i, bad input is refused in one line, and
the picture's type is 22 px or more on the slide (subscripts included) with no text overlapping.
"""

import io
import json
import math
import re

import numpy as np
import pytest
from matplotlib.text import Text
from PIL import Image

import attnlab
from attnlab.lecture.display import OUTPUT_AREA_PX
from attnlab.lecture.qkv_pictures import (
    MATH_PX,
    SCRIPT_SHRINK,
    instructive_row,
    query_row,
    query_row_picture,
)
from attnlab.pictures import canvas, heatmaps, typography

#: The slide's example, picked by :func:`instructive_row` over the test split of
#: transformer-en-fr: encoder layer 1, head 1, "Select" -> "type".
TEXT, QUERY, HEAD = "Select the type of your Data Source.", "Select", 0
#: The deck's per-head string, and one read in subword pieces with a placeholder.
DECK = "Create new cell at the current line"
PIECES = "l'élément {1} configuration"


@pytest.fixture(scope="module")
def model():
    return attnlab.load("transformer-en-fr")


@pytest.fixture(scope="module")
def picture(model):
    return query_row_picture(model, TEXT, QUERY, layer=0, head=HEAD)


def _head_output(model, text: str, layer: int) -> np.ndarray:
    """Concat(head_1..head_h) (n, d_model) of encoder ``layer`` as the model computes it: the
    input of its W^O, caught while the model decodes ``text``."""
    attn = model.encoder_layers[layer].self_attn
    caught = []
    hook = attn.W_o.register_forward_pre_hook(lambda _, args: caught.append(args[0]))
    try:
        model.attention_weights(text)
    finally:
        hook.remove()
    return caught[0][0].detach().numpy()  # the first encoder pass: (n, d_model)


# --------------------------------------------------------------------------- the numbers
@pytest.mark.parametrize(
    "text, query, layer, head",
    [
        (TEXT, QUERY, 0, HEAD),
        (DECK, "new", 0, 0),
        (DECK, "cell", 1, 2),
        (PIECES, "##élément", 1, 3),
    ],
)
def test_the_recomputed_row_is_the_models_own(model, text, query, layer, head):
    row = query_row(model, text, query, layer, head)
    own = model.attention_weights(text)["encoder_self"][layer, head, row["query"]]
    np.testing.assert_allclose(row["alpha"], own, rtol=0, atol=1e-5)
    Q, K = model.encoder_qk(text, layer, head)  # the existing helper, by a forward hook
    np.testing.assert_allclose(row["Q"], Q, rtol=0, atol=1e-4)
    np.testing.assert_allclose(row["K"], K, rtol=0, atol=1e-4)
    scores = row["Q"][row["query"]] @ row["K"].T / math.sqrt(row["d_k"])
    np.testing.assert_allclose(row["scores"], scores, rtol=0, atol=1e-9)


def test_every_head_and_query_of_the_deck_string_is_the_models_own(model):
    own = model.attention_weights(DECK)["encoder_self"]  # (L, h, n, n)
    L, h, n, _ = own.shape
    for layer in range(L):
        for head in range(h):
            for q in range(n):
                row = query_row(model, DECK, q, layer, head)
                np.testing.assert_allclose(row["alpha"], own[layer, head, q], atol=1e-5)


def test_the_weights_sum_to_one(model, picture):
    assert picture.data["alpha"].sum() == pytest.approx(1, abs=1e-12)
    assert np.all(picture.data["alpha"] > 0)
    for text in (TEXT, PIECES):
        n = len(model.source_tokens(text))
        sums = [query_row(model, text, q, 1, 3)["alpha"].sum() for q in range(n)]
        np.testing.assert_allclose(sums, 1, rtol=0, atol=1e-12)


def test_the_written_output_is_the_weighted_sum_of_the_values(model, picture):
    data = picture.data
    alpha, V, out = data["alpha"], data["V"], data["output"]
    np.testing.assert_allclose(out, sum(a * v for a, v in zip(alpha, V, strict=True)), atol=1e-12)
    # ... and what the head hands over in the model itself
    d_k, q = data["d_k"], data["query"]
    concat = _head_output(model, TEXT, data["layer"])
    np.testing.assert_allclose(out, concat[q, HEAD * d_k : (HEAD + 1) * d_k], atol=1e-5)
    # the written terms: the largest weights, largest first, each with its key's value v_i
    shown = data["shown"]
    assert shown == sorted(range(len(alpha)), key=lambda j: -alpha[j])[: len(shown)]
    written = re.findall(r"(\d\.\d\d)\\,v_\{\\text\{([^}]*)\}\}", data["formula"])
    assert written == [(f"{alpha[j]:.2f}", data["labels"][j]) for j in shown]
    left = re.fullmatch(r"\((\d+) more, together (\d\.\d\d)\)", data["rest"])
    assert int(left[1]) == len(alpha) - len(shown)
    assert float(left[2]) == pytest.approx(1 - alpha[shown].sum(), abs=0.005)
    assert "out = 0.93 v_type + " in repr(picture)


def test_the_chosen_row_goes_mostly_to_one_other_word(picture):
    alpha, labels = picture.data["alpha"], picture.data["labels"]
    assert labels[picture.data["query"]] == "Select"
    assert labels[int(np.argmax(alpha))] == "type"
    assert alpha.max() > 0.9


def test_the_rule_picks_the_slides_example_from_the_test_split(model):
    best = instructive_row(model)
    picked = (best["text"], best["query"], best["head"], best["key"])
    assert picked == (TEXT, QUERY, HEAD, "type")
    assert best["weight"] == pytest.approx(0.9308, abs=1e-3)


def test_no_head_given_takes_the_one_whose_weight_goes_most_to_another_word(model):
    row = query_row(model, DECK, "new", 0, None)
    own = model.attention_weights(DECK)["encoder_self"][0][:, 1]  # every head's row of "new"
    others = [2, 5, 6]  # cell, current, line: the content words besides "new"
    assert row["head"] == int(np.argmax(own[:, others].max(axis=1)))


def test_a_query_is_found_by_its_label_its_piece_or_its_position(model):
    assert query_row(model, TEXT, "select", 0, 0)["query"] == 0
    assert query_row(model, TEXT, "▁type", 0, 0)["query"] == 2
    assert query_row(model, TEXT, 8, 0, 0)["labels"][8] == "<eos>"


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "text, query, layer, head, says",
    [
        (TEXT, "cat", 0, 0, "query 'cat' is not a token of"),
        (TEXT, 9, 0, 0, "query must be an int in 0..8"),
        (TEXT, QUERY, 0, 4, "head must be an int in 0..3 (4 heads); got 4"),
        (TEXT, QUERY, 0, -1, "head must be an int in 0..3"),
        (TEXT, QUERY, 0, True, "head must be an int in 0..3"),
        (TEXT, QUERY, 2, 0, "layer must be an int in 0..1"),
        (None, QUERY, 0, 0, "text must be a string"),
        ("Unable to retrieve floating IP addresses from the selected project list", "IP", 0, 0,
         "pick a shorter string"),
    ],
)  # fmt: skip
def test_bad_input_gives_a_one_line_message(model, text, query, layer, head, says):
    with pytest.raises(ValueError, match=re.escape(says)) as err:
        query_row_picture(model, text, query, layer, head)
    assert "\n" not in str(err.value)


def test_a_word_read_in_pieces_names_the_pieces(model):
    with pytest.raises(ValueError, match=r"its tokens are: l, ', ##élément, ␣, \{1\}"):
        query_row_picture(model, PIECES, "l'élément")


def test_a_model_without_an_encoder_is_refused_in_one_line():
    with pytest.raises(ValueError, match="query_row needs a Transformer; got a RNNSearch"):
        query_row_picture(attnlab.load("rnnsearch-en-fr"), TEXT, QUERY)


# --------------------------------------------------------------------------- the picture
def _texts(fig):
    """Every text the figure draws (drawn already): the tick labels in view and the rest."""
    every, shown = typography._shown_tick_labels(fig)
    return [
        t
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip() and (id(t) not in every or id(t) in shown)
    ]


def _smallest_glyph_px(text: Text, width: float, shown: float) -> float:
    """px tall on the slide of the smallest glyph: a mathtext sub- or superscript is set
    at SCRIPT_SHRINK of the text's size."""
    px = typography.shown_px(text.get_fontsize(), width, shown)
    math_ = "".join(re.findall(r"\$(.*?)\$", text.get_text()))
    return px * SCRIPT_SHRINK if re.search(r"[_^]", math_) else px


@pytest.mark.parametrize("text, query, layer", [(TEXT, QUERY, 0), (PIECES, "{1}", 1)])
def test_all_type_is_22_px_or_more_subscripts_included(model, text, query, layer):
    fig = query_row_picture(model, text, query, layer).fig
    fig.canvas.draw()
    shown = fig.get_figwidth() * fig.dpi  # shown at the px it is drawn
    texts = _texts(fig)
    smallest = min(_smallest_glyph_px(t, fig.get_figwidth(), shown) for t in texts)
    assert smallest >= typography.MIN_LABEL_PX
    assert typography.smallest_text(fig, shown)[0] >= typography.MIN_LABEL_PX
    math_ = [t for t in texts if "$" in t.get_text()]
    assert len(math_) >= 4  # the formula, d_k and two row labels are typeset
    assert all(typography.shown_px(t.get_fontsize(), fig.get_figwidth(), shown) >= MATH_PX - 1e-6
               for t in math_)  # fmt: skip
    assert not any("_" in t.get_text() for t in texts if "$" not in t.get_text())


def test_the_picture_fits_the_slide_and_its_png_records_its_smallest_text(picture):
    png = picture._repr_png_()
    image = Image.open(io.BytesIO(png))
    assert image.width <= OUTPUT_AREA_PX and image.height <= 480
    record = json.loads(image.text[typography.RECORD_KEY])
    assert record["min_text_px"] >= typography.MIN_LABEL_PX
    assert record["min_label_px"] >= typography.MIN_LABEL_PX


@pytest.mark.parametrize(
    "text, query",
    [(TEXT, QUERY), (PIECES, "configuration"), ("Close", "Close"),
     ("Unable to retrieve floating IP addresses from the selected project", "floating")],
)  # fmt: skip
def test_no_two_texts_overlap(model, text, query):
    fig = query_row_picture(model, text, query).fig
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in _texts(fig)]
    for k, (a, box) in enumerate(boxes):
        assert box.x0 >= 0 and box.y0 >= 0, a  # inside the picture
        assert box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, a
        for b, other in boxes[k + 1 :]:
            assert not box.overlaps(other), (a, b)


def test_the_keys_are_labelled_as_the_deck_labels_them(model):
    fig = query_row_picture(model, PIECES, "configuration", 1).fig
    fig.canvas.draw()
    (ax,) = fig.axes
    labels = [t.get_text() for t in ax.get_xticklabels()]
    tokens = model.source_tokens(PIECES)
    assert labels == [typography.literal(s) for s in heatmaps.tick_labels(tokens)]
    assert labels[2] == "##élément"


def test_the_picture_is_deterministic(model):
    first = query_row_picture(model, TEXT, QUERY, head=HEAD).fig
    again = query_row_picture(model, TEXT, QUERY, head=HEAD).fig
    assert canvas.png_bytes(first, draw=True) == canvas.png_bytes(again, draw=True)
