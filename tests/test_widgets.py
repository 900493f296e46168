"""attnlab.widgets, driven from Python: set values, press buttons, check what is shown.

The DecodeStepper tests use the shipped checkpoints (``rnnsearch-dates``,
``transformer-dates``) and compare every heatmap row with ``attnlab.decode.steps``.
"""

from __future__ import annotations

import base64
import io
import math
from collections import deque

import ipywidgets as widgets
import numpy as np
import pytest
import torch
from PIL import Image

import attnlab
from attnlab.attention import (
    causal_mask,
    dot_score,
    masked_softmax,
    scaled_dot_score,
)
from attnlab.decode import steps as decode_steps
from attnlab.widgets import DecodeStepper, PathLengthExplorer, ScaledDotExplorer, ScoreLab
from attnlab.widgets.scaled_dot import TRAINED, row_entropy, softmax_rows

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


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def rnnsearch():
    return attnlab.load("rnnsearch-dates")


@pytest.fixture(scope="module")
def transformer():
    return attnlab.load("transformer-dates")


@pytest.fixture(scope="module")
def stepper(rnnsearch):
    return DecodeStepper(rnnsearch)


# --------------------------------------------------------------------------- DecodeStepper
def test_stepper_default_model_and_display():
    w = DecodeStepper()
    assert w.model.kind == "rnnsearch" and w.model_chooser.value == "rnnsearch-dates"
    assert w.message == ""
    assert w.translation == w.model.translate("3 May 1979")
    check_display(w, "DecodeStepper: rnnsearch-dates on '3 May 1979'")


def test_stepper_rows_equal_the_models_alpha(stepper, rnnsearch):
    stepper.text.value = "14 July 1989"
    expected = list(decode_steps(rnnsearch, "14 July 1989"))
    assert stepper.message == ""
    assert [s.token for s in stepper.steps] == [s.token for s in expected]
    assert stepper.source_tokens == rnnsearch.source_tokens("14 July 1989")
    assert stepper.slider.max == len(expected) - 1
    stepper.reset_button.click()
    for t, step in enumerate(expected):
        assert stepper.slider.value == t == stepper.current_step.t
        shown = stepper.heatmap_data
        assert shown.shape == (t + 1, len(stepper.source_tokens))  # filled row by row
        np.testing.assert_allclose(shown[t], step.alpha, atol=1e-6)
        np.testing.assert_allclose(shown, np.stack([s.alpha for s in expected[: t + 1]]))
        np.testing.assert_allclose(stepper.current_step.context, step.context, atol=1e-6)
        assert f"<b>{step.token}</b>" in stepper.token_label.value
        assert f"p = {step.prob:.3f}" in stepper.token_label.value
        assert stepper.frames.selected_index == t
        assert stepper.image is stepper.frames.children[t]
        stepper.step_button.click()
    assert stepper.slider.value == len(expected) - 1  # Step stops at the last output
    stepper.back_button.click()
    assert stepper.slider.value == len(expected) - 2
    stepper.reset_button.click()
    assert stepper.slider.value == 0
    stepper.back_button.click()
    assert stepper.slider.value == 0  # Back stops at the first


def test_stepper_frames_are_one_png_per_step(stepper):
    stepper.text.value = "1 January 2000"
    frames = [bytes(image.value) for image in stepper.frames.children]
    assert len(frames) == len(stepper.steps)
    assert all(is_png(f) for f in frames)
    assert len(set(frames)) == len(frames)  # each step shows a different picture
    # The slider drives the Stack in the browser (exported HTML too) and Play the slider.
    pairs = {(link.source, link.target) for link in stepper.links}
    assert ((stepper.slider, "value"), (stepper.frames, "selected_index")) in pairs
    assert ((stepper.play_button, "value"), (stepper.slider, "value")) in pairs
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
    assert stepper.message, what
    assert len(stepper.message) <= 160
    assert "Traceback" not in stepper.message
    assert (stepper.translation, list(stepper.frames.children)) == before  # last good one
    assert stepper.message_box.value and "color" in stepper.message_box.value
    stepper.step_button.click()  # still steps
    stepper.text.value = "12/05/2001"
    assert stepper.message == ""
    assert stepper.translation == "2001-05-12"


def test_stepper_messages_say_what_is_wrong(stepper):
    stepper.text.value = "3 May 1979 🎉"
    assert "🎉" in stepper.message
    stepper.text.value = "7" * 10_000
    assert "10000" in stepper.message and "32" in stepper.message
    stepper.text.value = "   "
    assert "Type a date" in stepper.message or "empty" in stepper.message


def test_stepper_transformer_layer_and_head(transformer):
    w = DecodeStepper(model="rnnsearch-dates")
    w.model_chooser.value = "transformer-dates"
    assert w.message == "" and w.model.kind == "transformer"
    assert w.transformer_box.layout.display is None  # the layer/head choosers show
    expected = list(decode_steps(transformer, "3 May 1979"))
    L, H, n = expected[0].alpha.shape
    assert list(w.layer.options) == list(range(L))
    w.slider.value = 2
    for layer in range(L):
        for head in [*range(H), "mean"]:
            w.layer.value, w.head.value = layer, head
            assert w.slider.value == 2  # choosing a head keeps the step
            for t in range(3):
                a = expected[t].alpha[layer]
                want = a.mean(axis=0) if head == "mean" else a[head]
                np.testing.assert_allclose(w.heatmap_data[t], want, atol=1e-6)
    assert w.current_step.context is None
    w.model_chooser.value = "rnnsearch-dates"
    assert w.transformer_box.layout.display == "none"
    assert w.heatmap_data.ndim == 2 and w.message == ""


def test_stepper_unknown_model_gives_a_message():
    w = DecodeStepper(model="no-such-model")
    assert "no-such-model" in w.message
    assert len(w.frames.children) == 1 and is_png(w.frames.children[0].value)
    w.text.value = "3 May 1979"  # no model: a message again, no exception
    assert w.message


# --------------------------------------------------------------------------- ScaledDotExplorer
def reference_weights(Q, K, scaled: bool, causal: bool) -> np.ndarray:
    q, k = torch.tensor(Q), torch.tensor(K)
    scores = scaled_dot_score(q, k) if scaled else dot_score(q, k)
    mask = causal_mask(len(Q)) if causal else None
    return masked_softmax(scores, mask).numpy()


def test_explorer_matches_the_attention_core():
    w = ScaledDotExplorer()
    for d_k in (1, 7, 64, 512):
        for scaled in (True, False):
            for causal in (False, True):
                w.d_k_slider.value, w.scale_toggle.value = d_k, scaled
                w.causal_toggle.value = causal
                assert w.Q.shape == w.K.shape == (len(w.tokens), d_k)
                want = reference_weights(w.Q, w.K, scaled, causal)
                np.testing.assert_allclose(w.heatmap_data, want, atol=1e-6)
                np.testing.assert_allclose(w.heatmap_data.sum(axis=1), 1.0, atol=1e-9)
                np.testing.assert_allclose(
                    w.scores[~np.isnan(w.scores)], (w.Q @ w.K.T)[~np.isnan(w.scores)]
                )
    assert w.message == ""


def test_explorer_causal_mask_zeroes_the_upper_triangle():
    w = ScaledDotExplorer()
    w.d_k_slider.value = 16
    w.causal_toggle.value = True
    n = len(w.tokens)
    upper = np.triu(np.ones((n, n), bool), k=1)
    assert np.all(w.heatmap_data[upper] == 0.0)
    assert np.all(w.heatmap_data[~upper] > 0.0)
    assert np.all(np.isnan(w.scores[upper])) and np.all(np.isnan(w.scaled_scores[upper]))
    assert w.heatmap_data[0, 0] == 1.0  # the first query sees only itself
    w.causal_toggle.value = False
    assert np.all(w.heatmap_data > 0.0)


def test_explorer_softmax_saturates_without_scaling():
    w = ScaledDotExplorer()
    w.scale_toggle.value = False
    w.d_k_slider.value = 1
    calm_max, calm_h = w.row_max.mean(), w.row_entropy.mean()
    w.d_k_slider.value = 512
    assert w.row_max.mean() > 0.9 > calm_max  # one weight near 1 in most rows
    assert w.row_entropy.mean() < 0.3 < calm_h
    w.scale_toggle.value = True  # dividing by sqrt(d_k) brings the spread back
    assert w.row_max.mean() < 0.7 and w.row_entropy.mean() > 1.0
    np.testing.assert_allclose(w.row_entropy, row_entropy(w.heatmap_data))
    assert "d_k = 512" in w.readout.value


def test_explorer_image_changes_with_d_k():
    w = ScaledDotExplorer()
    first = bytes(w.image.value)
    w.d_k_slider.value = 100
    assert is_png(w.image.value) and bytes(w.image.value) != first
    check_display(w, "ScaledDotExplorer: d_k=100, scaled=True, causal=False")


def test_softmax_rows_equals_masked_softmax():
    gen = np.random.default_rng(1)
    e = gen.normal(scale=30, size=(6, 5))
    allowed = gen.random((6, 5)) > 0.4
    allowed[2] = False  # a row where nothing is allowed stays all zeros
    want = masked_softmax(torch.tensor(e), torch.tensor(allowed)).numpy()
    np.testing.assert_allclose(softmax_rows(e, allowed), want, atol=1e-12)
    np.testing.assert_allclose(softmax_rows(e), torch.softmax(torch.tensor(e), -1).numpy())


def test_explorer_trained_mode_uses_the_models_q_and_k(transformer):
    w = ScaledDotExplorer(model=transformer)
    w.mode.value = TRAINED
    w.text.value = "21.08.1999"
    w.layer.value, w.head.value = 1, 2
    assert w.message == ""
    Q, K = transformer.encoder_qk("21.08.1999", 1, 2)
    np.testing.assert_allclose(w.Q, Q, atol=1e-5)  # one thread here, maybe two there
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
    w.mode.value = TRAINED  # cannot load: back to random Q, K, with the reason shown
    assert w.mode.value != TRAINED
    assert "no-such-model" in w.message
    assert w.weights.shape == (len(w.tokens), len(w.tokens))


# --------------------------------------------------------------------------- ScoreLab
def test_score_lab_alphas_match_the_score_modules():
    w = ScoreLab()
    for j, mix, scale in [(0, 0.0, 1.0), (4, 0.7, 1.0), (9, 1.0, 3.0)]:
        w.target.value, w.mix.value, w.scale.value = j, mix, scale
        s = torch.tensor(w.s)[None, :]  # (1, d)
        h = torch.tensor(w.h)  # (n, d)
        with torch.no_grad():
            want = {
                "dot": dot_score(s, h),
                "scaled_dot": scaled_dot_score(s, h),
                "general": w.modules["general"](s.float(), h.float()).double(),
                "additive": w.modules["additive"](s.float(), h.float()).double(),
            }
        for row, name in enumerate(["dot", "scaled_dot", "general", "additive"]):
            np.testing.assert_allclose(w.scores[name], want[name][0].numpy(), atol=1e-4)
            alpha = torch.softmax(want[name][0], -1).numpy()
            np.testing.assert_allclose(w.heatmap_data[row], alpha, atol=1e-4)
    assert w.heatmap_data.shape == (4, len(w.tokens))


def test_score_lab_dot_finds_the_similar_state():
    w = ScoreLab()
    w.mix.value = 1.0
    for j in range(len(w.tokens)):
        w.target.value = j
        assert int(np.argmax(w.alphas["dot"])) == j
    # The scaled dot is flatter than the dot for the same s and h.
    assert row_entropy(w.alphas["scaled_dot"]) > row_entropy(w.alphas["dot"])
    check_display(w, f"ScoreLab: s like h_{j} ({w.tokens[j]!r}), mix=1.00, scale=1.00")


# --------------------------------------------------------------------------- PathLengthExplorer
def bfs(n_nodes, edges, source, target) -> int:
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
        return bfs(2 * n, edges, ("x", 0), ("h", n - 1))
    if kind == "self_attention":
        edges = [(("x", i), ("y", j)) for i in range(n) for j in range(n)]
        return bfs(2 * n, edges, ("x", 0), ("y", n - 1))
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
    return bfs(None, edges, (0, 0), (layers, n - 1))


def test_path_explorer_lengths_equal_independent_bfs():
    w = PathLengthExplorer()
    for n in (2, 3, 8, 17, 32):
        for k in (2, 3, 5):
            w.n_slider.value, w.k_slider.value = n, k
            for kind in ("rnn", "cnn", "dilated_cnn", "self_attention"):
                assert w.lengths[kind] == independent_length(kind, n, k), (kind, n, k)
                assert w.lengths[kind] == len(w.paths[kind]) - 1
                assert w.paths[kind][0] == (0, 0)
                assert w.paths[kind][-1] == (w.graphs[kind].layers, n - 1)
            assert f"<b>{w.lengths['cnn']}</b>" in w.table.value
    assert w.message == ""


def test_path_explorer_picture_and_table():
    w = PathLengthExplorer(n=8, k=2)
    first = bytes(w.image.value)
    w.n_slider.value = 16
    assert is_png(w.image.value) and bytes(w.image.value) != first
    assert "O(log_k n)" in w.table.value and "O(n/k)" in w.table.value
    assert f"{math.log(16, 2):.2f}" in w.table.value
    w.n_slider.value = 8
    assert bytes(w.image.value) == first  # the same state, the same picture
    check_display(w, "PathLengthExplorer: n=8, k=2")


def test_path_explorer_cached_drawing_equals_a_fresh_one():
    fresh = PathLengthExplorer(n=16, k=3)
    w = PathLengthExplorer(n=16, k=2)  # draws the n = 16 self-attention edges once
    w.k_slider.value = 3  # new (n, k): the self-attention edges come from the cache
    assert bytes(w.image.value) == bytes(fresh.image.value)


def test_stepper_model_that_cannot_load_keeps_the_current_one():
    w = DecodeStepper()
    w.model_chooser.options = [*w.model_chooser.options, ("broken", "no-such-model")]
    w.model_chooser.value = "no-such-model"
    assert "no-such-model" in w.message
    assert w.model_chooser.value == "rnnsearch-dates" and w.model.kind == "rnnsearch"
    w.step_button.click()
    assert w.slider.value == 1
