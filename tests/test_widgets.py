"""attnlab.widgets, driven from Python: set values, press buttons, check what is shown.

The widgets use the shipped checkpoints (``rnnsearch-dates``, ``transformer-dates``, the four
``rnnsearch-dates-<score>`` models) and are compared with ``attnlab.decode.decode`` and
``attnlab.attention``.  For every widget: the pictures read from the back (type >= 14 px at
the size shown), every control changes the picture through a browser-side link (so it works
in an exported page), and a ``$``, ``\\`` or ``<`` in what it draws shows literally.
"""

from __future__ import annotations

import base64
import io
import statistics
import time
from collections import deque

import ipywidgets as widgets
import numpy as np
import pytest
import torch
from matplotlib.text import Text
from PIL import Image

import attnlab
from attnlab import paths, plots
from attnlab.attention import causal_mask, dot_score, masked_softmax, scaled_dot_score
from attnlab.decode import decode
from attnlab.widgets import (
    DecodeStepper,
    PathLengthExplorer,
    ScaledDotExplorer,
    ScoreLab,
    decode_stepper,
    path_length,
    scaled_dot,
    score_lab,
)
from attnlab.widgets.scaled_dot import (
    CAUSAL,
    D_K,
    RANDOM_NOTE,
    SCALED,
    TRAINED,
    UNSCALED,
    row_entropy,
)

#: The bad inputs the issue lists, each of which must give a message and no exception.
BAD_INPUTS = {
    "empty": "",
    "only spaces": "     ",
    "unknown characters": "3 Mai 1979 ½ §",
    "too long a date": "Thursday, 3 May 1979, in the late afternoon",
    "10 000 characters": "7" * 10_000,
    "emoji": "3 May 1979 🎉",
}


def is_png(data: bytes) -> bool:
    return Image.open(io.BytesIO(bytes(data))).format == "PNG"


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


def frames_of(widget) -> tuple:
    """Every picture (or HTML) inside a frame or a Stack of frames."""
    if isinstance(widget, widgets.Stack):
        return tuple(f for child in widget.children for f in frames_of(child))
    return (widget.value if isinstance(widget.value, str) else bytes(widget.value),)


def check_links_change_the_picture(links) -> None:
    """Every control -> Stack link: one frame per value of the control, all different."""
    assert links
    for link in links:
        (control, trait), (stack, target) = link.source, link.target
        assert target == "selected_index" and isinstance(stack, widgets.Stack)
        values = len(control.options) if trait == "index" else control.max - control.min + 1
        assert len(stack.children) == values, (control.description, trait)
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


# --------------------------------------------------------------------------- DecodeStepper
def test_stepper_default_model_and_display():
    w = DecodeStepper()
    assert w.model_chooser.value == "rnnsearch-dates" and w.message == ""
    assert w.translation == w.model.translate("3 May 1979")
    check_display(w, "DecodeStepper: rnnsearch-dates on '3 May 1979'")


def test_stepper_rows_equal_the_models_alpha(stepper, rnnsearch):
    stepper.text.value = "14 July 1989"
    expected = decode(rnnsearch, "14 July 1989")
    assert stepper.message == ""
    assert stepper.decoding.output_tokens == expected.output_tokens
    assert stepper.source_tokens == expected.source_tokens
    assert stepper.slider.max == len(expected) - 1
    stepper.reset_button.click()
    for t in range(len(expected)):
        assert stepper.slider.value == t
        shown = stepper.heatmap_data
        assert shown.shape == (t + 1, len(stepper.source_tokens))  # filled row by row
        np.testing.assert_allclose(shown, expected.alpha[0, 0, : t + 1], atol=1e-6)
        assert stepper.image is stepper.frames.children[t]
        stepper.step_button.click()
    assert stepper.slider.value == len(expected) - 1  # Step stops at the last output
    stepper.back_button.click()
    assert stepper.slider.value == len(expected) - 2
    stepper.reset_button.click()
    stepper.back_button.click()
    assert stepper.slider.value == 0  # Back stops at the first


def test_stepper_context_line_names_the_states_that_carry_the_weight(stepper, rnnsearch):
    stepper.text.value = "3 May 1979"
    d = decode(rnnsearch, "3 May 1979")
    for t, line in enumerate(stepper.context_lines):
        top = np.argsort(-d.alpha[0, 0, t], kind="stable")[:3]
        for i in top:  # the three largest alpha_{t,i}, their h_i and source character
            sub = str(i + 1).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
            assert f"{d.alpha[0, 0, t, i]:.2f}·h{sub} ('{d.source_tokens[i]}')" in line
        assert line.startswith("cₜ = ")


def test_stepper_frames_one_png_per_step_linked_in_the_browser(stepper):
    stepper.text.value = "1 January 2000"
    frames = [bytes(image.value) for image in stepper.frames.children]
    assert len(frames) == len(stepper.decoding) and all(is_png(f) for f in frames)
    assert len(set(frames)) == len(frames)  # each step shows a different picture
    pairs = {(link.source, link.target) for link in stepper.links}
    assert ((stepper.slider, "value"), (stepper.frames, "selected_index")) in pairs
    assert ((stepper.play_button, "value"), (stepper.slider, "value")) in pairs
    check_links_change_the_picture(stepper.links[1:])
    assert stepper.play_button.max == stepper.slider.max
    stepper.slider.value = 3
    assert bytes(stepper.image.value) == frames[3]


def test_stepper_play_does_not_block(stepper):
    stepper.reset_button.click()
    stepper.play_button.click()  # returns at once: the browser plays
    assert stepper.play_button.playing
    stepper.reset_button.click()
    assert not stepper.play_button.playing and stepper.slider.value == 0


@pytest.mark.parametrize("what", list(BAD_INPUTS))
def test_stepper_bad_input_gives_a_message_and_keeps_working(stepper, what):
    stepper.text.value = "3 May 1979"
    before = (stepper.translation, list(stepper.frames.children))
    stepper.text.value = BAD_INPUTS[what]  # must not raise
    assert stepper.message and len(stepper.message) <= 160, what
    assert "Traceback" not in stepper.message
    assert (stepper.translation, list(stepper.frames.children)) == before  # last good one
    assert "color" in stepper.message_box.value
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
    assert len(values) == L * H + 1 and values[0] == (L - 1, 0)  # the last layer first
    w.slider.value = 2
    for layer, head in values:
        w.head.value = (layer, head)
        assert w.slider.value == 2  # choosing a head keeps the step
        a = d.alpha[layer]
        want = a.mean(axis=0) if head == decode_stepper.MEAN else a[head]
        np.testing.assert_allclose(w.heatmap_data, want[:3], atol=1e-6)
    assert w.context_lines == [""] * len(d)  # no c_t to write
    w.model_chooser.value = "rnnsearch-dates"
    assert w.head_box.layout.display == "none" and w.message == ""


def test_stepper_offers_the_four_score_models(score_models):
    w = DecodeStepper()
    offered = {value for _, value in w.model_chooser.options}
    assert set(score_lab.SCORE_MODELS.values()) <= offered
    w.model_chooser.value = "rnnsearch-dates-general"
    assert w.message == "" and w.translation == "1979-05-03"


def test_stepper_unknown_model_gives_a_message():
    w = DecodeStepper(model="no-such-model")
    assert "no-such-model" in w.message
    assert len(w.frames.children) == 1 and is_png(w.frames.children[0].value)
    w.text.value = "3 May 1979"  # no model: a message again, no exception
    assert w.message


def test_stepper_model_that_cannot_load_keeps_the_current_one():
    w = DecodeStepper()
    w.model_chooser.options = [*w.model_chooser.options, ("broken", "no-such-model")]
    w.model_chooser.value = "no-such-model"
    assert "no-such-model" in w.message
    assert w.model_chooser.value == "rnnsearch-dates"
    w.step_button.click()
    assert w.slider.value == 1


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
    assert len(w.frames.children) == 1 and is_png(w.frames.children[0].value)
    w.text.value = "1 January 2000"  # still answers, with the same message
    assert words in w.message


def test_stepper_score_needs_a_model_with_a_score(transformer):
    w = DecodeStepper(transformer, score=dot_score)
    assert "no score to replace" in w.message
    with pytest.raises(TypeError, match="function"):
        DecodeStepper(score="dot")


# ----------------------------------------------------------------- DecodeStepper: the room
def test_stepper_pictures_read_from_the_back(transformer):
    for model, text in [
        ("rnnsearch-dates", "Thursday 3 May 1979"),
        (transformer, "3 May 1979"),
        ("rnnsearch-reverse", "1234567890" * 4 + "12345"),  # 45 digits: fewer labels
    ]:
        w = DecodeStepper(model, text)
        assert w.message == ""
        px, text_ = plots.smallest_text(w._renderer.fig, decode_stepper.WIDTH_PX)
        assert px >= plots.MIN_TEXT_PX, (model, text_)
        assert w.frames.children[0].layout.width == f"{decode_stepper.WIDTH_PX}px"
        shown = {t for _, t in plots.text_sizes(w._renderer.fig, decode_stepper.WIDTH_PX)}
        assert "<eos>" in shown


def test_stepper_draws_dollars_backslashes_and_brackets_literally(rnnsearch):
    rnnsearch.card = {**(rnnsearch.card or {}), "name": "my $x$ \\alpha <b>model</b>"}
    try:
        w = DecodeStepper(rnnsearch)
    finally:
        rnnsearch.card = {**rnnsearch.card, "name": "rnnsearch-dates"}
    title = w._renderer.heatmap.ax.get_title()
    assert shown_literally(title, "my $x$ \\alpha <b>model</b> reads '3 May 1979'")
    assert "<b>model" not in w.info.value and "&lt;b&gt;" in w.info.value
    assert "$" in w.describe()


# --------------------------------------------------------------------------- ScaledDotExplorer
def reference_weights(Q, K, scaled: bool, causal: bool) -> np.ndarray:
    q, k = torch.tensor(Q), torch.tensor(K)
    scores = scaled_dot_score(q, k) if scaled else dot_score(q, k)
    mask = causal_mask(len(Q)) if causal else None
    return masked_softmax(scores, mask).numpy()


@pytest.fixture(scope="module")
def explorer():
    return ScaledDotExplorer()


def test_explorer_matches_the_attention_core(explorer):
    w = explorer
    for d_k in D_K:
        for scaled in (SCALED, UNSCALED):
            for causal in (scaled_dot.NO_MASK, CAUSAL):
                w.d_k_slider.value, w.scale_toggle.value, w.mask_toggle.value = d_k, scaled, causal
                assert w.Q.shape == w.K.shape == (len(w.tokens), d_k)
                want = reference_weights(w.Q, w.K, scaled == SCALED, causal == CAUSAL)
                np.testing.assert_allclose(w.heatmap_data, want, atol=1e-9)
                finite = ~np.isnan(w.scores)
                np.testing.assert_allclose(w.scores[finite], (w.Q @ w.K.T)[finite])
    assert w.message == ""


def test_explorer_causal_mask_zeroes_the_upper_triangle(explorer):
    w = explorer
    w.d_k_slider.value, w.scale_toggle.value, w.mask_toggle.value = 16, SCALED, CAUSAL
    n = len(w.tokens)
    upper = np.triu(np.ones((n, n), bool), k=1)
    assert np.all(w.heatmap_data[upper] == 0.0) and np.all(w.heatmap_data[~upper] > 0.0)
    assert np.all(np.isnan(w.scores[upper])) and np.all(np.isnan(w.scaled_scores[upper]))
    assert w.heatmap_data[0, 0] == 1.0  # the first query sees only itself
    w.mask_toggle.value = scaled_dot.NO_MASK
    assert np.all(w.heatmap_data > 0.0)


def test_explorer_preset_shows_the_slides_point(explorer):
    w = explorer
    w.scale_toggle.value, w.d_k_slider.value = SCALED, 1
    calm_max, calm_h = w.row_max.mean(), w.row_entropy.mean()
    w.preset.click()  # d_k = 512, no scaling
    assert (w.d_k_slider.value, w.scale_toggle.value, w.mode.value) == (
        512,
        UNSCALED,
        scaled_dot.RANDOM,
    )
    assert w.row_max.mean() > 0.85 > calm_max  # one weight near 1 in most rows
    assert w.row_entropy.mean() < 0.4 < calm_h
    assert "d_k = 512" in w.readout
    w.scale_toggle.value = SCALED  # dividing by sqrt(d_k) brings the spread back
    assert w.row_max.mean() < 0.7 and w.row_entropy.mean() > 1.0
    np.testing.assert_allclose(w.row_entropy, row_entropy(w.heatmap_data))


def test_explorer_readout_is_the_line_in_the_picture_of_the_same_state(explorer):
    w = explorer
    for d_k in (4, 512, 64):
        w.d_k_slider.value = d_k  # computed in the same update: never one move behind
        values = scaled_dot.panels(
            w.Q, w.K, w.scale_toggle.value == SCALED, w.mask_toggle.value == CAUSAL
        )
        assert w.readout == scaled_dot.summary(values, d_k)
        assert f"d_k = {d_k}:" in w.readout


def test_explorer_every_control_works_without_a_kernel(explorer):
    w = explorer
    check_links_change_the_picture(w.links)
    sources = {link.source for link in w.links}
    for control in (w.d_k_slider, w.scale_toggle, w.mask_toggle, w.mode):
        assert (control, "index") in sources
    first = bytes(w.image.value)
    w.d_k_slider.value = 256
    assert is_png(w.image.value) and bytes(w.image.value) != first
    check_display(w, f"ScaledDotExplorer: d_k=256, scaled={w.scaled}, causal={w.causal}")


def test_explorer_random_mode_says_its_words_are_labels(explorer):
    explorer.mode.value = scaled_dot.RANDOM
    explorer.d_k_slider.value = 4  # a random-mode frame drawn last: its note is in the figure
    explorer._picture(explorer.Q, explorer.K, explorer.tokens, True, False, False)
    texts = [t for _, t in plots.text_sizes(explorer.fig, scaled_dot.WIDTH_PX)]
    assert RANDOM_NOTE in texts and "random" in RANDOM_NOTE and "label" in RANDOM_NOTE


def test_explorer_pictures_read_from_the_back(explorer):
    px, text = plots.smallest_text(explorer.fig, scaled_dot.WIDTH_PX)
    assert px >= plots.MIN_TEXT_PX, text


def test_explorer_trained_mode_uses_the_models_q_and_k(transformer):
    w = ScaledDotExplorer(model=transformer)
    w.mode.value = TRAINED
    w.text.value = "21.08.1999"
    w.head.value = (1, 2)
    assert w.message == ""
    Q, K = transformer.encoder_qk("21.08.1999", 1, 2)
    np.testing.assert_allclose(w.Q, Q, atol=1e-5)
    assert w.tokens == transformer.source_tokens("21.08.1999")
    want = transformer.attention_weights("21.08.1999")["encoder_self"][1, 2]
    np.testing.assert_allclose(w.heatmap_data, want, atol=1e-5)
    for bad in BAD_INPUTS.values():
        w.text.value = bad
        assert w.message
    w.text.value = "1 jan 2000"
    assert w.message == "" and w.tokens[0] == "1"


def test_explorer_trained_mode_without_the_model_says_so():
    w = ScaledDotExplorer(model="no-such-model")
    assert w.message == ""
    w.mode.value = TRAINED  # cannot load: back to random Q, K, with the reason shown
    assert w.mode.value != TRAINED and "no-such-model" in w.message
    assert w.weights.shape == (len(w.tokens), len(w.tokens))


def test_explorer_draws_its_words_literally():
    w = ScaledDotExplorer(sentence="cost $5 \\alpha <b>x</b> $y$")
    labels = [t.get_text() for t in w.panels[0].ax.get_yticklabels()]
    for raw, shown in zip(["cost", "$5", "\\alpha", "<b>x</b>", "$y$"], labels, strict=True):
        assert shown_literally(shown, raw)


# --------------------------------------------------------------------------- ScoreLab
@pytest.fixture(scope="module")
def lab(score_models):
    return ScoreLab(score_models)


def test_score_lab_shows_each_trained_models_alpha_on_the_same_date(lab, score_models):
    for date in lab.date.options:
        lab.date.value = date
        assert lab.message == ""
        for name, model in score_models.items():
            d = decode(model, date)
            np.testing.assert_allclose(lab.alphas[name], d.alpha[0, 0], atol=1e-6)
            assert lab.translations[name] == d.text
    check_display(lab, f"ScoreLab: dot, scaled dot, general, additive on {lab.date.value!r}")


def test_score_lab_titles_carry_the_cards_exact_match(lab, score_models):
    for name, model in score_models.items():
        match = model.card["heldout_accuracy"]
        title = lab.panels[name].ax.get_title()
        assert f"exact match {100 * match:.1f}%" in title and name in title


def test_score_lab_dates_work_without_a_kernel_and_typed_ones_are_added(lab):
    check_links_change_the_picture(lab.links)
    assert len(lab.frames.children) == len(lab.date.options)
    lab.text.value = "24 Dec 1999"
    assert lab.message == "" and lab.date.value == "24 Dec 1999"
    assert set(lab.translations.values()) == {"1999-12-24"}
    assert lab.image is lab.frames.children[-1] and is_png(lab.image.value)
    before = len(lab.frames.children)
    lab.text.value = "3 Mai 1979 ½"
    assert lab.message and len(lab.frames.children) == before  # nothing added


def test_score_lab_reads_from_the_back_and_draws_names_literally(score_models):
    lab = ScoreLab({"dot $x$ \\a": score_models["dot"]}, dates=["3 May 1979"])
    px, text = plots.smallest_text(lab.fig, score_lab.WIDTH_PX)
    assert px >= plots.MIN_TEXT_PX, text
    title = lab.panels["dot $x$ \\a"].ax.get_title()
    assert shown_literally(title.splitlines()[0], "dot $x$ \\a: ")


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


def test_path_explorer_lengths_equal_independent_bfs(path_explorer):
    w = path_explorer
    for n in path_length.N_VALUES:
        for k in path_length.K_VALUES:
            w.n_slider.value, w.k_slider.value = n, k
            for kind in paths.KINDS:
                assert w.lengths[kind] == independent_length(kind, n, k), (kind, n, k)
                assert w.paths[kind][0] == (0, 0)
                assert w.paths[kind][-1] == (w.graphs[kind].layers, n - 1)
            assert f"<b>{w.lengths['cnn']}</b>" in w.table.value
    assert w.message == ""


def test_path_explorer_orders_are_whole_numbers_as_table_1_means_them(path_explorer):
    w = path_explorer
    for n, k, want in [(8, 3, (8, 3, 2, 1)), (16, 2, (16, 8, 4, 1)), (12, 5, (12, 3, 2, 1))]:
        w.n_slider.value, w.k_slider.value = n, k
        assert tuple(w.orders[kind] for kind in paths.KINDS) == want
        table = w.table.value
        assert f"⌈n/k⌉ = {want[1]}" in table and f"⌈log_k n⌉ = {want[2]}" in table
        assert "." not in table.split("<table")[1]  # no 5.20 or 2.02


def test_path_explorer_every_slider_works_without_a_kernel(path_explorer):
    w = path_explorer
    for link in w.links:
        (control, _), (stack, _) = link.source, link.target
        assert control in (w.n_slider, w.k_slider)
        frames = [frames_of(child) for child in stack.children]
        assert len(frames) == len(control.options) and len(set(frames)) == len(frames)
    w.n_slider.value, w.k_slider.value = 16, 2
    rnn, cnn = w.images["rnn"], w.images["cnn"]
    w.k_slider.value = 3  # the RNN does not depend on k: the same frame; the CNN does
    assert w.images["rnn"] is rnn and w.images["cnn"] is not cnn
    check_display(w, "PathLengthExplorer: n=16, k=3")


def test_path_explorer_updates_in_under_10_ms(path_explorer):
    w = path_explorer
    times = []
    for n in path_length.N_VALUES:
        start = time.perf_counter()
        w.n_slider.value = n
        times.append(1000 * (time.perf_counter() - start))
    assert statistics.median(times) < 10


def test_path_explorer_pictures_read_from_the_back():
    for kind in paths.KINDS:
        panel = path_length.Panel(kind)
        px, text = plots.smallest_text(panel.fig, path_length.WIDTH_PX)
        assert px >= plots.MIN_TEXT_PX, (kind, text)


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
    budgets = {stepper: 200_000, explorer: 900_000, lab: 250_000, path_explorer: 600_000}
    for widget, budget in budgets.items():
        size = embedded_bytes(widget)
        assert 0 < size <= budget, (type(widget).__name__, size)


def test_readouts_and_tables_are_set_at_the_lectures_table_size(
    stepper, explorer, lab, path_explorer
):
    import re

    stepper.text.value = "3 Mai 1979 ½"  # a message too
    texts = [stepper.info.value, stepper.message_box.value, path_explorer.table.value]
    for text in texts:
        sizes = [float(px) for px in re.findall(r"font-size:\s*([\d.]+)px", text)]
        assert sizes and min(sizes) >= plots.MIN_TEXT_PX, text[:80]
    stepper.text.value = "3 May 1979"
