"""attnlab.widgets, driven from Python as the browser drives them: set a control, let the
browser-side links run, and check the frame the browser then shows.

The widgets use the shipped checkpoints (``rnnsearch-dates``, ``transformer-dates``, the four
``rnnsearch-dates-<score>`` models) and a small word-level model built here (the language
models' tokens), and are compared with ``attnlab.decode.decode``, ``attnlab.attention`` and
counts made here.  For every widget: its readouts are the data of the frame the browser
shows (:func:`browser_frame` follows the jslinks, as the browser does), the pictures read
from the back (every text >= 18 px and every heatmap label present, read from the PNG's own
record), every control changes the picture through a browser-side link (so it works in an
exported page), and bad input gives a message inside the widget.  Speed targets live in
benchmarks/widgets.py, not here.
"""

from __future__ import annotations

import base64
import html
import io
import json
import re
from collections import deque

import ipywidgets as widgets
import numpy as np
import pytest
import torch
from matplotlib.text import Text
from PIL import Image

import attnlab
from attnlab.attention import causal_mask, dot_score, masked_softmax, scaled_dot_score
from attnlab.decode import decode
from attnlab.experiments import path_lengths as paths
from attnlab.lecture import OUTPUT_AREA_PX
from attnlab.models import catalogue
from attnlab.models.rnn import RNNConfig, RNNSearch
from attnlab.models.threads import torch_threads
from attnlab.models.transformer import Transformer, TransformerConfig
from attnlab.pictures import typography
from attnlab.text.subwords import readable as readable_pieces
from attnlab.text.vocab import UNK, Vocab
from attnlab.training import checkpoints
from attnlab.widgets import (
    DecodeStepper,
    HeadView,
    PathLengthExplorer,
    ScaledDotExplorer,
    ScoreLab,
    decode_frames,
    decode_stepper,
    head_view,
    path_length,
    scaled_dot,
    score_lab,
)
from attnlab.widgets._base import TEXT_PX
from attnlab.widgets.scaled_dot import (
    CAUSAL,
    D_K_CHOICES,
    NO_MASK,
    RANDOM,
    SCALED,
    TRAINED,
    UNSCALED,
)

#: Bad inputs a user may type, each of which must give a message and no exception.
BAD_INPUTS = {
    "empty": "",
    "only spaces": "     ",
    "unknown characters": "3 Mai 1979 ½ §",
    "too long a date": "Thursday, 3 May 1979, in the late afternoon",
    "10 000 characters": "7" * 10_000,
    "emoji": "3 May 1979 🎉",
    "another script": "３ 五月 １９７９",
    "html": "<script>alert(1)</script>",
}
#: The same for a word-level (language) model: unknown words are read as <unk>, no error.
BAD_PHRASES = {
    "empty": ("", "empty"),
    "10 000 words": (" ".join(["cell"] * 10_000), "Too long"),
    "emoji": ("🎉 cell", UNK),
    "another script": ("Закрыть все вкладки", UNK),
    "html": ("<b>cell</b> <script>", UNK),
}


def is_png(data: bytes) -> bool:
    return Image.open(io.BytesIO(bytes(data))).format == "PNG"


def record(png: bytes) -> dict:
    """What the picture draws, from its own PNG (typography.picture_record)."""
    return json.loads(Image.open(io.BytesIO(bytes(png))).text[typography.RECORD_KEY])


def check_readable(png: bytes, shown_width_px: float | None = None, max_tokens: int = 40) -> None:
    """Every text >= 18 px at the width shown; every key and query of a heatmap labelled."""
    image = Image.open(io.BytesIO(bytes(png)))
    rec = record(png)
    scale = (shown_width_px or image.width) / image.width
    assert rec["min_text_px"] * scale >= typography.MIN_TEXT_PX, rec["min_text"]
    for heat in rec["heatmaps"]:
        if max(len(heat["keys"]), len(heat["queries"])) <= max_tokens:
            assert heat["keys_labelled"] == heat["keys"]
            assert heat["queries_labelled"] == heat["queries"]
            assert not heat["crowded"], heat["keys"]


def shown_width(image) -> float | None:
    """The width an Image is shown at (its layout's px), or None: its own width."""
    width = image.layout.width
    return float(width.removesuffix("px")) if width else None


def check_display(widget, expected_text: str) -> None:
    """The mimebundle: widget view, a fixed text/plain, and a PNG for viewers without JS."""
    bundle = widget._repr_mimebundle_()
    assert bundle["text/plain"] == expected_text == repr(widget)
    assert "0x" not in bundle["text/plain"]
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert is_png(base64.b64decode(bundle["image/png"]))
    assert isinstance(widget, widgets.Box)


def shown_literally(text: str, raw: str) -> bool:
    """matplotlib draws ``text`` as the characters of ``raw`` (no mathtext)."""
    return Text(0, 0, "")._preprocess_math(text) == (raw, False)


def follow_links(links) -> None:
    """What the browser does with the jslinks: each target takes its source's value."""
    for link in links:
        (source, name), (target, trait) = link.source, link.target
        setattr(target, trait, getattr(source, name))


def browser_frame(widget, grid):
    """The frame the browser shows once the links ran; the widget must report that one."""
    follow_links(widget.links)
    shown = grid.frame(grid.shown())
    assert shown is grid.frame(), "the readouts come from another frame than the one shown"
    return shown


def frames_of(widget) -> tuple:
    """Every picture (or HTML) inside a frame or a Stack of frames."""
    if isinstance(widget, widgets.Stack):
        return tuple(f for child in widget.children for f in frames_of(child))
    return (widget.value if isinstance(widget.value, str) else bytes(widget.value),)


def check_links_change_the_picture(links, shared=lambda stack: False) -> None:
    """Every control -> Stack link: one frame per value of the control, all different
    (except the Stacks ``shared`` says show one picture on purpose)."""
    assert links
    for link in links:
        (control, trait), (stack, target) = link.source, link.target
        if not isinstance(stack, widgets.Stack):
            continue  # Play -> slider
        assert target == "selected_index"
        # an index 0..k-1 picks child 0..k-1; a value (from min >= 0) picks child value
        values = len(control.options) if trait == "index" else control.max + 1
        assert len(stack.children) == values, (control.description, trait)
        if shared(stack):
            continue
        frames = [frames_of(child) for child in stack.children]
        assert len(set(frames)) == len(frames), f"{control.description}: frames repeat"


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def rnnsearch():
    return attnlab.load("rnnsearch-dates")


@pytest.fixture(scope="module")
def transformer():
    return attnlab.load("transformer-dates")


@pytest.fixture(scope="module")
def score_models():
    return {name: attnlab.load(ref) for name, ref in score_lab.SCORE_MODELS.items()}


@pytest.fixture(scope="module")
def stepper(rnnsearch):
    return DecodeStepper(rnnsearch)


@pytest.fixture(scope="module")
def word_model():
    """A small word-level RNNSearch (untrained): the tokens of the language models."""
    torch.manual_seed(0)
    src = Vocab("default cell type close all tabs".split(), level="word")
    tgt = Vocab("type de cellule par défaut fermer tous les onglets".split(), level="word")
    model = RNNSearch(src, tgt, RNNConfig(max_src_len=12, max_tgt_len=8))
    model.card = {"name": "tiny-en-fr"}
    return model


# --------------------------------------------------------------------------- DecodeStepper
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def test_stepper_default_model_and_display():
    w = DecodeStepper()
    assert w.model_chooser.value == "rnnsearch-dates" and w.message == ""
    assert w.translation == w.model.translate("3 May 1979")
    assert w.text.description == "date"
    check_display(w, "DecodeStepper: rnnsearch-dates on '3 May 1979'")


def test_stepper_steps_are_1_based_and_each_shown_frame_is_the_models_alpha(stepper, rnnsearch):
    stepper.text.value = "14 July 1989"
    expected = decode(rnnsearch, "14 July 1989")
    assert stepper.message == ""
    assert stepper.decoding.output_tokens == expected.output_tokens
    assert stepper.source_tokens == expected.source_tokens
    T = len(expected)
    assert (stepper.slider.min, stepper.slider.max) == (1, T)  # t = 1..T
    stepper.reset_button.click()
    for t in range(1, T + 1):
        frame = browser_frame(stepper, stepper.grid)
        assert stepper.t == frame.data["t"] == t == stepper.slider.value
        assert frame.view is stepper.image is stepper.frames.children[t]
        shown = stepper.heatmap_data
        assert shown.shape == (t, len(stepper.source_tokens))  # filled row by row
        np.testing.assert_allclose(shown, expected.alpha[0, 0, :t], atol=1e-6)
        assert frame.data["token"] == expected.output_tokens[t - 1]
        assert frame.data["p"] == pytest.approx(float(expected.probs[t - 1]))
        heat = record(frame.view.value)["heatmaps"][0]  # the picture labels rows 1..t
        assert heat["queries_labelled"] == expected.output_tokens[:t]
        stepper.step_button.click()
    assert stepper.t == T  # Step stops at the last output
    stepper.back_button.click()
    assert browser_frame(stepper, stepper.grid).data["t"] == T - 1
    stepper.reset_button.click()
    stepper.back_button.click()
    assert stepper.t == 1  # Back stops at the first


def test_stepper_caption_names_the_query_s_t_minus_1_and_y_t(stepper, rnnsearch):
    stepper.text.value = "3 May 1979"
    d = decode(rnnsearch, "3 May 1979")
    for t in range(1, len(d) + 1):
        stepper.slider.value = t
        caption = browser_frame(stepper, stepper.grid).data["caption"]
        sub, prev = str(t).translate(SUB), str(t - 1).translate(SUB)
        assert caption.startswith(f"t = {t}:  query s{prev},  y{sub} = '{d.output_tokens[t - 1]}'")


def test_stepper_context_line_names_the_states_that_carry_the_weight(stepper, rnnsearch):
    stepper.text.value = "3 May 1979"
    d = decode(rnnsearch, "3 May 1979")
    assert len(stepper.context_lines) == len(d)
    for t, line in enumerate(stepper.context_lines, start=1):
        top = np.argsort(-d.alpha[0, 0, t - 1], kind="stable")[:3]
        for i in top:  # the three largest alpha_{t,i}, their h_i (1-based) and character
            sub = str(i + 1).translate(SUB)
            assert f"{d.alpha[0, 0, t - 1, i]:.2f}·h{sub} ('{d.source_tokens[i]}')" in line
        assert line.startswith(f"c{str(t).translate(SUB)} = ")


def test_stepper_frames_one_png_per_step_linked_in_the_browser(stepper):
    stepper.text.value = "1 January 2000"
    frames = [bytes(image.value) for image in stepper.frames.children[1:]]  # steps 1..T
    assert len(frames) == len(stepper.decoding) and all(is_png(f) for f in frames)
    assert len(set(frames)) == len(frames)  # each step shows a different picture
    pairs = {(link.source, link.target) for link in stepper.links}
    assert ((stepper.slider, "value"), (stepper.frames, "selected_index")) in pairs
    assert ((stepper.play_button, "value"), (stepper.slider, "value")) in pairs
    check_links_change_the_picture(stepper.links)
    assert (stepper.play_button.min, stepper.play_button.max) == (1, stepper.slider.max)
    stepper.play_button.value = 4  # the browser plays: Play -> slider -> frame
    assert bytes(browser_frame(stepper, stepper.grid).view.value) == frames[3]
    assert stepper.t == 4


def test_stepper_writes_each_steps_words_beside_its_picture_linked_in_the_browser(
    stepper, rnnsearch
):
    stepper.text.value = "3 May 1979"
    d = decode(rnnsearch, "3 May 1979")
    pairs = {(link.source, link.target) for link in stepper.links}
    assert ((stepper.slider, "value"), (stepper.words.root, "selected_index")) in pairs
    assert stepper.words.root in stepper.column.children  # the column right of the picture
    assert stepper.children[-1].children == (stepper.frames, stepper.column)
    for t in range(1, len(d) + 1):
        stepper.slider.value = t
        frame = browser_frame(stepper, stepper.grid)
        shown = stepper.words.frame(stepper.words.shown())  # the words the browser shows
        assert shown is stepper.words.frame() and shown.index == frame.index == (t,)
        said = html.unescape(re.sub(r"<[^>]+>", " ", shown.view.value))
        sub = str(t).translate(SUB)
        assert f"step t = {t}" in said and f"y{sub} =  '{d.output_tokens[t - 1]}'" in said
        assert f"p = {float(d.probs[t - 1]):.2f}" in said
        assert f"query s{str(t - 1).translate(SUB)}" in said
        terms = frame.data["context"].split(" = ", 1)[1].split("   (")[0].split(" + ")
        for term in terms:  # c_t's h_i, as the context line says them, one a line
            assert term in said, (term, said)
        assert frame.data["context"].rsplit("(", 1)[1].rstrip(")") in said  # its share of alpha
        assert "font-size:24px" in shown.view.value


def declared_width(widget) -> float:
    """The px a widget's layout asks for: its width, else its shown children's together."""
    if widget.layout.display == "none":
        return 0.0
    if widget.layout.width:
        return float(widget.layout.width.removesuffix("px"))
    return sum(declared_width(c) for c in getattr(widget, "children", ()))


def test_stepper_picture_and_its_column_fit_the_slide_side_by_side():
    for w in (
        DecodeStepper(),
        DecodeStepper("transformer-en-fr", text="Show previous version in browser"),
    ):
        width = Image.open(io.BytesIO(w.png())).width
        column = float(w.column.layout.min_width.removesuffix("px"))
        margin = float(w.column.layout.margin.split()[3].removesuffix("px"))
        assert width + margin + column <= OUTPUT_AREA_PX, (w.model_chooser.value, width)
        assert width >= decode_frames.WIDTH_PX  # two thirds of the slide: the column the rest
        for row in w.children[:2]:  # the controls: one row each, within the output area
            assert declared_width(row) <= OUTPUT_AREA_PX, [c.layout.width for c in row.children]


def test_stepper_title_stays_inside_its_picture():
    """A title longer than the heatmap is wide makes the picture wider, never runs off it."""
    renderer = decode_frames.DecodeFrames()
    title = "transformer-en-fr cross-attention, layer 2 (last), mean of 4 heads, and more words"
    renderer.frames(np.full((2, 3), 1 / 3), ["a", "b", "<eos>"], ["x", "<eos>"], title)
    fig = renderer.fig
    box = renderer.heatmap.ax.title.get_window_extent(fig.canvas.get_renderer())
    assert 0 <= box.x0 and box.x1 <= fig.bbox.x1, (box, fig.bbox)
    assert renderer.width_px > decode_frames.WIDTH_PX


def test_stepper_play_does_not_block(stepper):
    stepper.reset_button.click()
    stepper.play_button.click()  # returns at once: the browser plays
    assert stepper.play_button.playing
    stepper.reset_button.click()
    assert not stepper.play_button.playing and stepper.t == 1


@pytest.mark.parametrize("what", list(BAD_INPUTS))
def test_stepper_bad_input_gives_a_message_and_keeps_working(stepper, what):
    stepper.text.value = "3 May 1979"
    before = (stepper.translation, [bytes(c.value) for c in stepper.frames.children])
    stepper.text.value = BAD_INPUTS[what]  # must not raise
    assert stepper.message and len(stepper.message) <= 160, what
    assert "Traceback" not in stepper.message
    after = (stepper.translation, [bytes(c.value) for c in stepper.frames.children])
    assert after == before  # the last good decoding stays
    assert "color" in stepper.message_box.value and "<script>" not in stepper.message_box.value
    stepper.text.value = "12/05/2001"
    assert stepper.message == "" and stepper.translation == "2001-05-12"


def test_stepper_transformer_layer_and_head(transformer):
    w = DecodeStepper(model="rnnsearch-dates")
    assert w.head_box.layout.display == "none"
    w.model_chooser.value = "transformer-dates"
    assert w.message == "" and w.head_box.layout.display is None
    d = decode(transformer, "3 May 1979")
    L, H = d.alpha.shape[:2]
    values = [v for _, v in w.head.options]
    assert len(values) == L * H + 1 and values[0] == (L - 1, decode_stepper.MEAN)  # its mean first
    assert values[1] == (L - 1, 0)  # then the last layer's heads
    w.slider.value = 3
    for layer, head in values:
        w.head.value = (layer, head)
        assert w.t == 3  # choosing a head keeps the step
        a = d.alpha[layer]
        want = a.mean(axis=0) if head == decode_stepper.MEAN else a[head]
        np.testing.assert_allclose(browser_frame(w, w.grid).data["rows"], want[:3], atol=1e-6)
    assert w.context_lines == [""] * len(d)  # no c_t to write
    assert "query s" not in w.frame.data["caption"]  # no s_{t-1}: the decoder's own states
    w.model_chooser.value = "rnnsearch-dates"
    assert w.head_box.layout.display == "none" and w.message == ""


def test_stepper_offers_the_installed_models(score_models):
    w = DecodeStepper()
    offered = {value for _, value in w.model_chooser.options}
    installed = set(checkpoints.available())
    assert set(score_lab.SCORE_MODELS.values()) <= offered
    shipped = [(m.label, m.name) for m in catalogue.entries(offered=True) if m.name in installed]
    assert w.model_chooser.options == tuple(shipped)  # the catalogue's labels, in its order
    assert "rnnsearch-reverse" not in offered  # the length experiment's: not in the chooser
    w.model_chooser.value = "rnnsearch-dates-general"
    assert w.message == "" and w.translation == "1979-05-03"


def test_stepper_reads_a_phrase_with_word_tokens_and_shows_unknown_words(word_model):
    w = DecodeStepper(word_model, "Default cell banana")
    assert w.text.description == "phrase"
    assert w.source_tokens == ["default", "cell", UNK, "<eos>"]  # word tokens; <unk> visible
    assert "banana" in w.message and UNK in w.message and len(w.message) <= 160
    assert w.unknown == ["banana"]
    heat = record(w.png())["heatmaps"][0]
    assert heat["keys_labelled"] == ["default", "cell", UNK, "<eos>"]  # tick labels are words
    assert heat["queries_labelled"] == w.decoding.output_tokens
    assert "banana" not in w._renderer.heatmap.ax.get_title()  # the title shows what it read
    w.text.value = "close all tabs"
    assert w.message == "" and w.unknown == [] and UNK not in w.source_tokens


def test_stepper_offers_the_shipped_english_french_model_and_its_words():
    w = DecodeStepper()
    assert "rnnsearch-en-fr" in {v for _, v in w.model_chooser.options}
    w.model_chooser.value = "rnnsearch-en-fr"  # the box switches to a phrase of its kind
    assert w.message == "" and w.text.description == "phrase"
    assert w.text.value == catalogue.TASK_TEXTS["en-fr"].default == "Default cell type"
    d = decode(w.model, w.text.value)
    assert w.source_tokens == d.source_tokens and w.translation == d.text
    pieces = w.model.src_vocab.tokens(w.text.value)  # subword pieces, not characters
    assert w.source_tokens[:-1] == pieces and w.model.src_vocab.join(pieces) == w.text.value
    heat = record(w.png())["heatmaps"][0]
    assert heat["keys_labelled"] == readable_pieces(d.source_tokens)
    assert heat["queries_labelled"] == readable_pieces(d.output_tokens)
    assert not any("\u2581" in label for label in heat["keys_labelled"])
    check_readable(w.png())
    w.model_chooser.value = "rnnsearch-dates"  # and back: a date again
    assert w.message == "" and w.text.value == catalogue.TASK_TEXTS["dates"].default


def test_what_the_box_holds_comes_from_the_catalogue_or_the_card_never_the_name():
    model = attnlab.load("rnnsearch-dates")
    model.card = {**model.card, "name": "dates-read-like-en-fr"}  # a name that misleads
    for widget in (DecodeStepper(model), HeadView(attnlab.load("rnnenc-en-fr"))):
        assert widget.text.description == ("date" if widget.model is model else "phrase")
    w = DecodeStepper(model)
    assert w.text.value == "3 May 1979" and w.message == "" and w.translation == "1979-05-03"
    w = DecodeStepper("rnnsearch-reverse", "0123456789")  # digits: the catalogue's task
    assert w.text.description == "digits" and w.translation == "9876543210"
    assert ("RNNSearch, reversed digits", "rnnsearch-reverse") in w.model_chooser.options


def test_widgets_decode_on_one_thread_and_put_the_count_back(rnnsearch, transformer):
    seen = []
    real = rnnsearch.step

    def step(*args, **kwargs):  # the count while the widget decodes
        seen.append(torch.get_num_threads())
        return real(*args, **kwargs)

    rnnsearch.step = step
    try:
        with torch_threads(2):  # the kernel's setting, whatever it is
            DecodeStepper(rnnsearch)
            HeadView(transformer)
            assert torch.get_num_threads() == 2
    finally:
        del rnnsearch.step
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("what", list(BAD_PHRASES))
def test_stepper_word_model_bad_input_gives_a_message_never_a_crash(word_model, what):
    w = DecodeStepper(word_model, "default cell type")
    text, said = BAD_PHRASES[what]
    w.text.value = text  # must not raise
    assert said in w.message and "Traceback" not in w.message and len(w.message) <= 160
    assert is_png(w.image.value)
    w.text.value = "close all tabs"
    assert w.message == "" and w.source_tokens == ["close", "all", "tabs", "<eos>"]


def test_stepper_unknown_model_gives_a_message():
    w = DecodeStepper(model="no-such-model")
    assert "no-such-model" in w.message
    assert len(w.frames.children) == 2 and is_png(w.image.value)  # the placeholder
    w.text.value = "3 May 1979"  # no model: a message again, no exception
    assert w.message


def test_stepper_model_that_cannot_load_keeps_the_current_one():
    w = DecodeStepper()
    w.model_chooser.options = [*w.model_chooser.options, ("broken", "no-such-model")]
    w.model_chooser.value = "no-such-model"
    assert "no-such-model" in w.message
    assert w.model_chooser.value == "rnnsearch-dates"
    w.step_button.click()
    assert w.t == 2


# ----------------------------------------------------------------- DecodeStepper(score=...)
def test_stepper_score_swaps_the_function_in_and_restores_the_model(score_models):
    model = score_models["dot"]
    trained = model.score
    calls = []

    def my_dot(query, keys):  # the library's dot score, written by a student
        calls.append(tuple(query.shape))
        return query @ keys.transpose(-2, -1)

    w = DecodeStepper(model, score=my_dot)
    assert w.message == "" and calls  # it ran inside the decoding
    assert calls[0][-2] == 1  # one query s_{t-1} per step: (B, 1, d)
    assert w.translation == decode(model, "3 May 1979").text  # the same function: same output
    np.testing.assert_allclose(w.alphas, decode(model, "3 May 1979").alpha[0, 0], atol=1e-5)
    assert model.score is trained  # the model is left as it was
    assert "my_dot" in w.info.value


def test_stepper_score_that_changes_the_attention_changes_the_output(score_models):
    model = score_models["dot"]
    w = DecodeStepper(model, score=lambda q, k: -dot_score(q, k))  # attend to the least alike
    assert w.message == ""
    assert not np.allclose(w.alphas[0], decode(model, "3 May 1979").alpha[0, 0, 0], atol=1e-2)


@pytest.mark.parametrize(
    "broken, words",
    [
        (lambda q, k: q.sum(), "shape"),  # a number, not (B, m, n)
        (lambda q, k: q @ k.transpose(-2, -1) * float("nan"), "NaN"),
        (lambda q, k: 1 / 0, "ZeroDivisionError"),
        (lambda q, k: "scores", "not a tensor"),
        (lambda q, k: q @ k, "raised"),  # a shape error inside the student's code
    ],
)
def test_stepper_broken_score_shows_its_error_inside_the_widget(score_models, broken, words):
    model = score_models["dot"]
    trained = model.score
    w = DecodeStepper(model, score=broken)  # must not raise
    assert words in w.message and "Traceback" not in w.message and len(w.message) <= 160
    assert model.score is trained
    assert len(w.frames.children) == 2 and is_png(w.image.value)  # the placeholder
    w.text.value = "1 January 2000"  # still answers, with the same message
    assert words in w.message


def test_stepper_score_needs_a_model_with_a_score(transformer):
    w = DecodeStepper(transformer, score=dot_score)
    assert "no score to replace" in w.message
    with pytest.raises(TypeError, match="function"):
        DecodeStepper(score="dot")


# ----------------------------------------------------------------- DecodeStepper: the room
def test_stepper_pictures_read_from_the_back_with_every_label(transformer):
    for model, text in [
        ("rnnsearch-dates", "Thursday 3 May 1979"),
        (transformer, "3 May 1979"),
        ("rnnsearch-reverse", "1234567890" * 4),  # 40 digits: every one labelled
    ]:
        w = DecodeStepper(model, text)
        assert w.message == ""
        for image in w.frames.children[1:]:  # steps 1..T
            check_readable(image.value, shown_width(image))
        heat = record(w.png())["heatmaps"][0]
        assert heat["keys_labelled"][-1] == "<eos>" and len(heat["keys"]) == len(w.source_tokens)


def test_stepper_a_crowded_picture_is_caught(stepper):
    """The label check can fail: the same heatmap squeezed into a small figure is crowded."""
    from attnlab.pictures.canvas import png_bytes, slide_figure
    from attnlab.pictures.heatmaps import Heatmap

    fig, sizes = slide_figure(300, 200, layout=None)
    heat = Heatmap(fig.add_subplot(), sizes=sizes)
    heat.set_labels([str(i % 10) for i in range(40)], [str(i % 10) for i in range(40)])
    heat.set_data(np.full((40, 40), 0.5))
    with pytest.raises(AssertionError):
        check_readable(png_bytes(fig, draw=True))


def test_stepper_draws_dollars_backslashes_and_brackets_literally(rnnsearch):
    rnnsearch.card = {**(rnnsearch.card or {}), "name": "my $x$ \\alpha <b>model</b>"}
    try:
        w = DecodeStepper(rnnsearch)
    finally:
        rnnsearch.card = {**rnnsearch.card, "name": "rnnsearch-dates"}
    title = w._renderer.heatmap.ax.get_title()
    assert shown_literally(title, "my $x$ \\alpha <b>model</b> reads '3 May 1979'")
    assert "<b>model" not in w.info.value and "&lt;b&gt;" in w.info.value
    assert "$" in w.text_form()


# --------------------------------------------------------------------------- ScaledDotExplorer
def independent_vectors(d_k: int, n: int = scaled_dot.N_RANDOM, seed: int = 0):
    """The explorer's random q_t and k_i, drawn here from the seed as documented."""
    gen = np.random.default_rng(seed)
    Q, K = gen.standard_normal((n, 512)), gen.standard_normal((n, 512))
    return Q[:, :d_k], K[:, :d_k]


def reference_weights(Q, K, scaled: bool, causal: bool) -> np.ndarray:
    q, k = torch.tensor(Q), torch.tensor(K)
    scores = scaled_dot_score(q, k) if scaled else dot_score(q, k)
    mask = causal_mask(len(Q)) if causal else None
    return masked_softmax(scores, mask).numpy()


@pytest.fixture(scope="module")
def explorer():
    return ScaledDotExplorer()


def set_explorer(w, d_k, scaling, masking):
    w.mode.value, w.d_k_slider.value = RANDOM, d_k
    w.scale_toggle.value, w.mask_toggle.value = scaling, masking
    return browser_frame(w, w.grid)


def test_explorer_opens_on_the_slides_point():
    w = ScaledDotExplorer()
    frame = browser_frame(w, w.grid)
    assert (w.d_k_slider.value, w.scale_toggle.value, w.mode.value) == (512, UNSCALED, RANDOM)
    Q, K = independent_vectors(512)
    top = reference_weights(Q, K, False, False).max(axis=1)
    np.testing.assert_allclose(frame.data["row_max"], top, atol=1e-9)
    assert top.mean() > 0.85  # unscaled at d_k = 512: the rows saturate
    w.scale_toggle.value = SCALED  # one click: the spread comes back
    assert browser_frame(w, w.grid).data["row_max"].mean() < 0.6


def test_explorer_every_shown_frame_matches_the_attention_core(explorer):
    w = explorer
    for d_k in D_K_CHOICES:
        for scaling in (SCALED, UNSCALED):
            for masking in (NO_MASK, CAUSAL):
                frame = set_explorer(w, d_k, scaling, masking)
                Q, K = independent_vectors(d_k)
                want = reference_weights(Q, K, scaling == SCALED, masking == CAUSAL)
                np.testing.assert_allclose(frame.data["weights"], want, atol=1e-9)
                np.testing.assert_allclose(w.heatmap_data, want, atol=1e-9)
                np.testing.assert_allclose(w.scores[~np.isnan(w.scores)],
                                           (Q @ K.T)[~np.isnan(w.scores)], atol=1e-9)  # fmt: skip
                assert w.Q.shape == (scaled_dot.N_RANDOM, d_k)


def test_explorer_causal_mask_zeroes_the_upper_triangle(explorer):
    w = explorer
    frame = set_explorer(w, 16, SCALED, CAUSAL)
    upper = np.triu(np.ones_like(frame.data["weights"], dtype=bool), k=1)
    assert np.all(frame.data["weights"][upper] == 0.0)
    assert np.all(np.isnan(frame.data["scores"][upper]))
    np.testing.assert_allclose(frame.data["weights"].sum(axis=1), 1.0, atol=1e-12)
    frame = set_explorer(w, 16, SCALED, NO_MASK)
    assert np.all(frame.data["weights"] > 0.0)


def test_explorer_readout_states_what_an_independent_count_finds(explorer):
    """The line of numbers of the shown frame, against numbers computed here."""
    w = explorer
    for d_k in (4, 512, 64):
        for scaling in (SCALED, UNSCALED):
            line = set_explorer(w, d_k, scaling, NO_MASK).data["readout"]
            Q, K = independent_vectors(d_k)
            weights = reference_weights(Q, K, scaling == SCALED, False)
            std = float(np.std(Q @ K.T))
            saturated = int((weights.max(axis=1) > 0.99).sum())
            assert line.startswith(f"d_k = {d_k}:")
            assert f"std(QKᵀ) {std:.1f}" in line
            assert f"std(QKᵀ/√d_k) {std / np.sqrt(d_k):.1f}" in line
            assert f"mean largest α {weights.max(axis=1).mean():.2f}" in line
            assert f"α > 0.99 in {saturated} of {scaled_dot.N_RANDOM} rows" in line
            assert w.readout == line


def test_explorer_every_control_works_without_a_kernel(explorer):
    w = explorer
    trained_frames = {id(v) for i, f in w.grid._frames.items() if i[0] == 1 for v in [f.view]}

    def shared(stack):  # the trained head's frames do not depend on d_k: one picture each
        return all(id(c) in trained_frames for c in stack.children)

    check_links_change_the_picture(w.links, shared)
    sources = {link.source for link in w.links}
    for control in (w.d_k_slider, w.scale_toggle, w.mask_toggle, w.mode):
        assert (control, "index") in sources
    first = bytes(set_explorer(w, 512, SCALED, NO_MASK).view.value)
    assert bytes(set_explorer(w, 256, SCALED, NO_MASK).view.value) != first
    check_display(w, f"ScaledDotExplorer: d_k=256, scaled={w.scaled}, causal={w.causal}")


def test_explorer_random_vectors_are_labelled_by_position_not_words(explorer):
    frame = set_explorer(explorer, 64, SCALED, NO_MASK)
    n = scaled_dot.N_RANDOM
    assert frame.data["tokens"] == [f"k{i}" for i in range(1, n + 1)]
    assert frame.data["queries"] == [f"q{t}" for t in range(1, n + 1)]
    heats = record(frame.view.value)["heatmaps"]
    assert len(heats) == 3
    assert all(h["keys_labelled"] == frame.data["tokens"] for h in heats)
    assert heats[0]["queries_labelled"] == frame.data["queries"]
    assert "random" in scaled_dot.RANDOM_NOTE and "position" in scaled_dot.RANDOM_NOTE


def test_explorer_pictures_read_from_the_back(explorer):
    assert explorer.message == ""  # the trained Transformer loaded: its frames are drawn too
    drawn = {id(explorer.grid.frame(index)): index for index in explorer.grid.indices()}
    trained = [i for i in drawn.values() if explorer.grid.frame(i).data.get("trained")]
    assert len(trained) == 2 * 2  # scaled or not, toggle on the mask or not: any d_k
    for index in drawn.values():
        frame = explorer.grid.frame(index)
        assert frame.data, f"frame {index} was never drawn"
        check_readable(frame.view.value, shown_width(frame.view))


def test_explorer_trained_mode_uses_the_models_q_and_k(transformer):
    w = ScaledDotExplorer(model=transformer)
    w.mode.value, w.scale_toggle.value = TRAINED, SCALED  # as the model computes it
    w.text.value = "21.08.1999"
    w.head.value = (1, 2)
    assert w.message == ""
    frame = browser_frame(w, w.grid)
    Q, K = transformer.encoder_qk("21.08.1999", 1, 2)
    np.testing.assert_allclose(frame.data["Q"], Q, atol=1e-5)
    assert w.tokens == transformer.source_tokens("21.08.1999")
    want = transformer.attention_weights("21.08.1999")["encoder_self"][1, 2]
    np.testing.assert_allclose(w.heatmap_data, want, atol=1e-5)
    for bad in BAD_INPUTS.values():
        w.text.value = bad
        assert w.message
    w.text.value = "1 jan 2000"
    assert w.message == "" and w.tokens[0] == "1"
    check_readable(w.image.value, shown_width(w.image))


def test_explorer_never_masks_a_trained_encoder_head(transformer):
    """An encoder head attends to every position: with the trained head shown, the causal-mask
    toggle (for the random Q, K) leaves the weights the model computes, in the kernel and in
    the browser's frame, and the picture says why."""
    w = ScaledDotExplorer(model=transformer)
    w.mode.value, w.scale_toggle.value = TRAINED, SCALED
    unmasked = browser_frame(w, w.grid)
    w.mask_toggle.value = CAUSAL
    frame = browser_frame(w, w.grid)
    assert not frame.data["causal"]
    np.testing.assert_array_equal(frame.data["weights"], unmasked.data["weights"])
    assert bytes(frame.view.value) != bytes(unmasked.view.value)  # its note says why
    want = transformer.attention_weights("3 May 1979")["encoder_self"][0, 0]
    np.testing.assert_allclose(frame.data["weights"], want, atol=1e-5)
    assert np.triu(frame.data["weights"], 1).sum() > 0.1  # the future keeps its weight
    w.mode.value = RANDOM  # the toggle still masks the random Q, K
    assert np.triu(browser_frame(w, w.grid).data["weights"], 1).max() == 0.0


def test_explorer_trained_mode_without_the_model_says_so():
    w = ScaledDotExplorer(model="no-such-model")
    assert w.message == ""
    w.mode.value = TRAINED  # cannot load: back to random Q, K, with the reason shown
    assert w.mode.value != TRAINED and "no-such-model" in w.message
    assert browser_frame(w, w.grid).data["weights"].shape == (scaled_dot.N_RANDOM,) * 2


# --------------------------------------------------------------------------- ScoreLab
@pytest.fixture(scope="module")
def lab(score_models):
    return ScoreLab(score_models)


def test_score_lab_starts_on_the_first_date_chosen_and_shown(score_models):
    lab = ScoreLab(score_models)
    assert lab.date.value == score_lab.EXAMPLE_DATES[0] and lab.date.index == 0
    assert browser_frame(lab, lab.grid).data["text"] == score_lab.EXAMPLE_DATES[0]
    check_display(lab, f"ScoreLab: dot, scaled dot, general, additive on '{lab.date.value}'")


def test_score_lab_shows_each_trained_models_alpha_on_the_same_date(lab, score_models):
    for date in lab.date.options:
        lab.date.value = date
        frame = browser_frame(lab, lab.grid)
        assert lab.message == "" and frame.data["text"] == date
        for name, model in score_models.items():
            d = decode(model, date)
            np.testing.assert_allclose(lab.alphas[name], d.alpha[0, 0], atol=1e-6)
            assert lab.translations[name] == d.text
        heats = record(frame.view.value)["heatmaps"]  # each panel labels every character
        for heat, d in zip(heats, lab.decodings.values(), strict=True):
            assert heat["keys"] == [typography.literal(s) for s in d.source_tokens]
            assert heat["queries"] == [typography.literal(s) for s in d.output_tokens]
    check_display(lab, f"ScoreLab: dot, scaled dot, general, additive on {lab.date.value!r}")


def test_score_lab_titles_carry_the_cards_exact_match(lab, score_models):
    titles = browser_frame(lab, lab.grid).data["titles"]
    for title, (name, model) in zip(titles, score_models.items(), strict=True):
        match = model.card["heldout_accuracy"]
        said = score_lab.said(name)  # "scaled_dot" is titled "scaled dot"
        assert title == f"{score_lab.FORMULAS[name]}\n{said}: {100 * match:.1f}% exact"


def test_score_lab_dates_work_without_a_kernel_and_typed_ones_are_added(lab):
    check_links_change_the_picture(lab.links)
    assert len(lab.frames.children) == len(lab.date.options)
    lab.text.value = "24 Dec 1999"
    frame = browser_frame(lab, lab.grid)
    assert lab.message == "" and lab.date.value == "24 Dec 1999" == frame.data["text"]
    assert set(lab.translations.values()) == {"1999-12-24"}
    assert lab.image is lab.frames.children[-1] and is_png(lab.image.value)
    before = len(lab.frames.children)
    for bad in BAD_INPUTS.values():
        lab.text.value = bad
        assert lab.message and "Traceback" not in lab.message, bad
        assert len(lab.frames.children) == before  # nothing added


def test_score_lab_reads_from_the_back_with_every_label(score_models):
    dates = ["3 May 1979", "Thursday 31 December 1999"]
    lab = ScoreLab(score_models, dates=dates)
    assert lab.message == "" and len(lab.frames.children) == len(dates)
    for image in lab.frames.children:
        heats = record(image.value)["heatmaps"]
        assert len(heats) == len(score_models)  # one panel per score, each checked below
        check_readable(image.value, shown_width(image))


def test_score_lab_draws_names_literally(score_models):
    lab = ScoreLab({"dot $x$ \\a": score_models["dot"]}, dates=["3 May 1979"])
    title = lab.frame.data["titles"][0].splitlines()[1]
    match = 100 * score_models["dot"].card["heldout_accuracy"]
    assert shown_literally(title, f"dot $x$ \\a: {match:.1f}% exact")


# --------------------------------------------------------------------------- PathLengthExplorer
def bfs(edges, source, target) -> int:
    adjacency: dict = {}
    for u, v in edges:
        adjacency.setdefault(u, []).append(v)
    dist = {source: 0}
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v in adjacency.get(u, []):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist[target]


def independent_length(kind: str, n: int, k: int) -> int:
    """Shortest path, input 1 -> output n, in a graph built here from the definitions."""
    if kind == "rnn":
        edges = [(("x", i), ("h", i)) for i in range(n)]
        edges += [(("h", i), ("h", i + 1)) for i in range(n - 1)]
        return bfs(edges, ("x", 0), ("h", n - 1))
    if kind == "self_attention":
        edges = [(("x", i), ("y", j)) for i in range(n) for j in range(n)]
        return bfs(edges, ("x", 0), ("y", n - 1))
    layers, seen = 0, 1  # grow the stack until output n sees all n inputs
    while seen < n:
        layers += 1
        seen = k**layers if kind == "dilated_cnn" else layers * (k - 1) + 1
    edges = []
    for layer in range(1, layers + 1):
        d = k ** (layer - 1) if kind == "dilated_cnn" else 1
        edges += [
            ((layer - 1, j - m * d), (layer, j)) for j in range(n) for m in range(k) if j >= m * d
        ]
    return bfs(edges, (0, 0), (layers, n - 1))


@pytest.fixture(scope="module")
def path_explorer():
    return PathLengthExplorer()


def set_path(w, n, k):
    w.n_slider.value, w.k_slider.value = n, k
    frame = browser_frame(w, w.tables)
    for grid in w.grids.values():  # every panel shows the frame its readouts come from
        assert grid.frame(grid.shown()) is grid.frame()
    return frame


def test_path_explorer_lengths_equal_independent_bfs(path_explorer):
    w = path_explorer
    for n in path_length.N_VALUES:
        for k in path_length.K_VALUES:
            frame = set_path(w, n, k)
            assert (frame.data["n"], frame.data["k"]) == (n, k)
            for kind in paths.KINDS:
                assert w.lengths[kind] == independent_length(kind, n, k), (kind, n, k)
                assert w.paths[kind][0] == (0, 0)
                assert w.paths[kind][-1] == (w.graphs[kind].layers, n - 1)
                assert len(w.paths[kind]) - 1 == w.lengths[kind]
            assert f"<b>{w.lengths['cnn']}</b>" in w.table.value
    assert w.message == ""


def test_path_explorer_exact_count_agrees_with_the_count_and_the_order_stands_apart(
    path_explorer,
):
    w = path_explorer
    for n in path_length.N_VALUES:
        for k in path_length.K_VALUES:
            set_path(w, n, k)
            table = w.table.value
            for kind in paths.KINDS:
                formula, value = w.exact[kind]
                assert value == w.lengths[kind] == independent_length(kind, n, k), (kind, n, k)
                assert f"<td>{formula} = {value}</td>" in table
                order = w.orders[kind]
                assert re.fullmatch(r"O\(.+\)", order) and f"<td>{order}</td>" in table
                assert not re.search(re.escape(order) + r"\s*[:=]", table)  # no number beside it
            assert "counted" in table and "order (Table 1)" in table and "exact count" in table
    set_path(w, 8, 2)  # the contiguous CNN takes 7 steps, order O(n/k)
    assert w.exact["cnn"] == ("⌈(n−1)/(k−1)⌉", 7) and w.lengths["cnn"] == 7
    assert "= 4" not in w.table.value


def test_path_explorer_every_slider_works_without_a_kernel(path_explorer):
    w = path_explorer
    for link in w.links:
        (control, _), (stack, _) = link.source, link.target
        assert control in (w.n_slider, w.k_slider)
        frames = [frames_of(child) for child in stack.children]
        assert len(frames) == len(control.options) and len(set(frames)) == len(frames)
    set_path(w, 16, 2)
    rnn, cnn = w.images["rnn"], w.images["cnn"]
    set_path(w, 16, 3)  # the RNN does not depend on k: the same frame; the CNN does
    assert w.images["rnn"] is rnn and w.images["cnn"] is not cnn
    check_display(w, "PathLengthExplorer: n=16, k=3")


def test_path_explorer_pictures_read_from_the_back(path_explorer):
    assert list(path_explorer.grids) == list(paths.KINDS)
    checked = 0
    for grid in path_explorer.grids.values():
        for index in grid.indices():
            check_readable(grid.frame(index).view.value, shown_width(grid.frame(index).view))
            checked += 1
    nn, nk = len(path_length.N_VALUES), len(path_length.K_VALUES)
    assert checked == nn * (1 + nk + nk + 1)  # RNN, CNN and dilated CNN (each k), attention


# --------------------------------------------------------------------------- exported state
def embedded_bytes(widget) -> int:
    """Bytes of every picture and HTML frame inside ``widget`` (what an export embeds)."""
    todo, seen, total = [widget], set(), 0
    while todo:
        w = todo.pop()
        if id(w) not in seen:
            seen.add(id(w))
            if isinstance(w, widgets.Image):
                total += len(w.value)
            todo.extend(getattr(w, "children", ()))
    return total


def test_pre_rendered_frames_stay_small(stepper, explorer, lab, path_explorer):
    """The exported page embeds every frame: each widget's share stays under a budget."""
    budgets = {stepper: 250_000, explorer: 900_000, lab: 300_000, path_explorer: 600_000}
    for widget, budget in budgets.items():
        size = embedded_bytes(widget)
        assert 0 < size <= budget, (type(widget).__name__, size)


def test_readouts_and_tables_are_set_at_the_widgets_text_size(stepper, path_explorer):
    stepper.text.value = "3 Mai 1979 ½"  # a message too
    texts = [stepper.info.value, stepper.message_box.value, path_explorer.table.value]
    texts += [stepper.words.frame((t,)).view.value for t in range(1, stepper.words.sizes[0])]
    for text in texts:
        sizes = [float(px) for px in re.findall(r"font-size:\s*([\d.]+)px", text)]
        assert sizes and min(sizes) >= TEXT_PX >= 22, text[:80]
    stepper.text.value = "3 May 1979"


# --------------------------------------------------------------------------- HeadView
def test_head_view_every_head_of_the_chosen_kind_and_layer(transformer):
    w = HeadView(transformer)
    assert w.message == "" and w.text.value == "3 May 1979"
    want = transformer.attention_weights("3 May 1979")
    L = want["cross"].shape[0]
    assert list(w.layer.options) == [f"layer {i + 1}" for i in range(L)]
    check_links_change_the_picture(w.links)
    for kind, (key, _, _) in head_view.ATTENTION_KINDS.items():
        for layer in range(L):
            w.kind.value, w.layer.value = kind, f"layer {layer + 1}"
            frame = browser_frame(w, w.grid)
            assert (frame.data["kind"], frame.data["layer"]) == (kind, layer + 1)
            np.testing.assert_allclose(w.weights, want[key][layer], atol=1e-6)
            queries = want["source_tokens"] if key == "encoder_self" else want["output_tokens"]
            assert w.query_tokens == list(queries) and w.key_tokens == want["source_tokens"]
            check_readable(frame.view.value)
            heats = record(frame.view.value)["heatmaps"]
            assert len(heats) == want[key].shape[1]  # one panel per head


def test_head_view_offers_the_installed_transformers_and_reads_a_phrase(word_model):
    w = HeadView()
    offered = {v for _, v in w.model_chooser.options}
    installed = set(checkpoints.available())
    assert offered == {m for m in catalogue.names(kind="transformer") if m in installed}
    assert {"transformer-dates", "transformer-en-fr", "transformer-en-de"} <= offered
    for what, (text, _) in BAD_PHRASES.items():
        w.text.value = text if what != "emoji" else "3 May 1979 🎉"  # a date model here
        assert w.message and "Traceback" not in w.message, what
        assert is_png(w.image.value)
    w.text.value = "12/05/2001"
    assert w.message == ""
    rnn = HeadView(word_model)  # a model without heads: said inside the widget
    assert "no attention heads" in rnn.message


def test_head_view_controls_and_picture_fit_the_slide():
    w = HeadView("transformer-en-fr", "Show previous version in browser")
    assert w.seen_box in w.children[0].children and w.seen.kind == "new"
    assert declared_width(w.children[0]) + 12 <= OUTPUT_AREA_PX  # model, text, seen line
    assert Image.open(io.BytesIO(w.png())).width <= head_view.WIDTH_PX < OUTPUT_AREA_PX


def test_head_view_reads_words_and_shows_unknown_ones():
    torch.manual_seed(0)
    src = Vocab("close all tabs default cell type".split(), level="word")
    tgt = Vocab("alle tabs schließen standard zelltyp".split(), level="word")
    model = Transformer(src, tgt, TransformerConfig(max_src_len=12, max_tgt_len=8))
    model.card = {"name": "tiny-en-de"}
    w = HeadView(model, "Close all bananas")
    assert w.text.description == "phrase"
    assert "bananas" in w.message and UNK in w.message and w.unknown == ["bananas"]
    assert w.key_tokens == ["close", "all", UNK, "<eos>"]  # word tokens, <unk> visible
    for heat in record(w.png())["heatmaps"]:
        assert heat["keys_labelled"] == w.key_tokens
    for what, (text, said) in BAD_PHRASES.items():
        w.text.value = text  # must not raise
        assert said in w.message and "Traceback" not in w.message, what
    w.text.value = "close all tabs"
    assert w.message == "" and w.key_tokens == ["close", "all", "tabs", "<eos>"]
