"""The pictures (typography, canvas, heatmaps, deck pictures, training plots): the length curves, the persistent heatmap (blitting) and the context bars."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from attnlab.pictures import canvas, heatmaps, plots, training_plots, typography

RESULTS = {
    "bins": [[5, 10], [11, 20], [21, 30], [31, 40]],
    "models": {
        "rnnenc": {"exact_match": [0.8, 0.2, 0.0, 0.0], "token_accuracy": [0.9, 0.5, 0.3, 0.2]},
        "rnnsearch": {"exact_match": [1.0, 1.0, 0.9, 0.6], "token_accuracy": [1, 1, 0.95, 0.8]},
    },
    "config": {"models": {"rnnsearch": {"train_lengths": [5, 30]}}},
}


def test_length_curves_draws_one_line_per_model():
    ax = plots.length_curves(RESULTS, metric="exact_match")
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == {"rnnenc", "rnnsearch"}
    for name, line in lines.items():
        np.testing.assert_allclose(line.get_ydata(), RESULTS["models"][name]["exact_match"])
        np.testing.assert_allclose(line.get_xdata(), [7.5, 15.5, 25.5, 35.5])  # bin centres
    assert [t.get_text() for t in ax.get_xticklabels()] == ["5-10", "11-20", "21-30", "31-40"]
    assert ax.get_ylabel() == "exact match"
    # The training range (5-30) is narrower than the tested bins: the lengths beyond it shaded.
    spans = [p for p in ax.patches if p.get_label().startswith("longer than trained")]
    assert len(spans) == 1
    x0, x1 = spans[0].get_x(), spans[0].get_x() + spans[0].get_width()
    assert (x0, x1) == (30, 40)


def test_a_shading_among_several_training_ranges_names_its_models():
    # models trained on 5-30 and on 5-40: past 30 only the first kind is out of its range
    two = {**RESULTS, "config": {"models": {"rnnenc": {"train_lengths": [5, 40]},
                                            "rnnsearch": {"train_lengths": [5, 30]}}}}  # fmt: skip
    ax = plots.length_curves(two, metric="exact_match")
    labels = [p.get_label() for p in ax.patches if p.get_label().startswith("longer than")]
    assert labels == ["longer than the ≤ 30 models saw"]


def test_length_curves_token_accuracy_and_given_axes():
    fig = canvas.new_figure(4, 3)
    ax = fig.add_subplot()
    assert plots.length_curves(RESULTS, metric="token_accuracy", ax=ax) is ax
    values = sorted(tuple(line.get_ydata()) for line in ax.get_lines())
    assert values[0] == (0.9, 0.5, 0.3, 0.2)


def test_length_curves_no_shading_when_trained_on_every_length():
    results = {**RESULTS, "config": {"train_lengths": [5, 40]}}
    ax = plots.length_curves(results)
    assert not [p for p in ax.patches if p.get_label().startswith("longer")]


def test_length_curves_rejects_bad_input():
    with pytest.raises(ValueError, match="metric"):
        plots.length_curves(RESULTS, metric="bleu")
    broken = {**RESULTS, "models": {"m": {"exact_match": [1.0], "token_accuracy": [1.0]}}}
    with pytest.raises(ValueError, match="4 bins"):
        plots.length_curves(broken)


def test_length_curves_on_the_shipped_results():
    # the results file ships with the package: missing, it is a failure, never a skip
    from attnlab.experiments.length import load_results

    results = load_results()
    assert len(results["bins"]) >= 4 and len(results["models"]) == 4
    ax = plots.length_curves(results)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert set(lines) == set(results["models"])
    for name, line in lines.items():
        np.testing.assert_allclose(line.get_ydata(), results["models"][name]["exact_match"])
    png = canvas.png_bytes(ax.get_figure(), draw=True)
    assert Image.open(io.BytesIO(png)).format == "PNG"


def _pixel(fig, ax, x, y):
    """RGB of the canvas at data point (x, y) of ``ax``."""
    rgba = np.asarray(fig.canvas.buffer_rgba())
    px, py = ax.transData.transform((x, y))
    return rgba[int(rgba.shape[0] - py), int(px), :3]


def _is_red(rgb) -> bool:
    r, g, b = (int(v) for v in rgb)
    return r > 200 and g < 80 and b < 80


def test_heatmap_blits_the_values_and_the_highlighted_row():
    fig = canvas.new_figure(5, 4.5)
    ax = fig.add_subplot()
    heat = heatmaps.Heatmap(ax, "alpha")
    heat.set_labels(list("abcd"), list("xyz"))
    background = canvas.cache_background(fig)
    values = np.array([[1.0, 0, 0, 0], [0, 0.5, 0.5, 0], [np.nan] * 4])
    canvas.restore_background(fig, background)
    heat.set_data(values, row=1)
    heat.blit()
    viridis = matplotlib.colormaps["viridis"]
    top = (np.array(viridis(1.0)[:3]) * 255).round()
    low = (np.array(viridis(0.0)[:3]) * 255).round()
    np.testing.assert_allclose(_pixel(fig, ax, 0, 0), top, atol=2)  # alpha = 1
    np.testing.assert_allclose(_pixel(fig, ax, 1, 0), low, atol=2)  # alpha = 0
    np.testing.assert_allclose(_pixel(fig, ax, 2, 2), [255, 255, 255], atol=2)  # NaN: blank
    # The red box around row 1: its top edge runs along y = 0.5.
    assert _is_red(_pixel(fig, ax, 1.5, 0.5))
    assert not _is_red(_pixel(fig, ax, 1.5, 1.0))  # the middle of row 1 is not boxed
    np.testing.assert_array_equal(heat.data, values)
    # Blitting again from the background forgets the old values.
    canvas.restore_background(fig, background)
    heat.set_data(np.zeros((3, 4)), row=None)
    heat.blit()
    np.testing.assert_allclose(_pixel(fig, ax, 0, 0), low, atol=2)
    assert not _is_red(_pixel(fig, ax, 1.5, 0.5))


def test_heatmap_rejects_a_wrong_shape():
    fig = canvas.new_figure(4, 3)
    heat = heatmaps.Heatmap(fig.add_subplot())
    heat.set_labels(["a", "b"], ["x"])
    with pytest.raises(ValueError, match=r"\(1, 2\).*\(2, 2\)"):
        heat.set_data(np.zeros((2, 2)))


def test_png_bytes_is_a_png_of_the_figure_size():
    fig = canvas.new_figure(3, 2, dpi=50)
    fig.add_subplot().plot([0, 1])
    image = Image.open(io.BytesIO(canvas.png_bytes(fig, draw=True)))
    assert image.format == "PNG" and image.size == (150, 100)


# --------------------------------------------------------------------------- type sizes
def test_points_and_shown_px_are_inverse_and_ignore_the_dpi():
    # A 10 in figure shown 720 px wide: 1 pt = 1 px, whatever the dpi it is rendered at.
    assert typography.shown_px(14, 10, 720) == pytest.approx(14)
    assert typography.points(14, 5, 720) == pytest.approx(7)
    assert typography.shown_px(typography.points(17, 7.3, 901), 7.3, 901) == pytest.approx(17)
    for dpi in (50, 100, 200):
        fig = canvas.new_figure(10, 2, dpi=dpi)
        fig.text(0.5, 0.5, "x", fontsize=21)
        assert typography.smallest_text(fig, 720) == (pytest.approx(21), "x")
    sizes = typography.TYPE.at(10, 360)  # shown at half the size: twice the points
    assert sizes.tick == pytest.approx(2 * typography.TYPE.tick)
    assert typography.TYPE.smallest() >= typography.MIN_TEXT_PX


def test_text_sizes_finds_ticks_in_view_legends_and_colorbars():
    fig = canvas.new_figure(6, 3)
    ax = fig.add_subplot()
    ax.plot([0, 1], label="a line")
    ax.set_xticks([0, 0.5, 1])
    ax.tick_params(labelsize=9)
    ax.legend(fontsize=20)
    texts = dict((t, px) for px, t in typography.text_sizes(fig, 6 * 72))
    assert texts["a line"] == pytest.approx(20)
    assert texts["0.5"] == pytest.approx(9)  # a tick label
    assert typography.smallest_text(fig, 6 * 72)[0] == pytest.approx(9)


def test_literal_shows_dollars_and_backslashes_as_typed():
    from matplotlib.text import Text

    for raw in ["$x$", "a\\$b", "\\alpha", "price $5", "<eos>", "$", "\\"]:
        shown, math = Text(0, 0, "")._preprocess_math(typography.literal(raw))
        assert (shown, math) == (raw, False), raw
    assert typography.literal(" ") == "␣"


def _heatmap_fig(n_cols: int, n_rows: int, width_px=560, height_px=400):
    fig, sizes = canvas.slide_figure(width_px, height_px)
    heat = heatmaps.Heatmap(fig.add_subplot(), "t", sizes=sizes)
    heat.set_labels([f"{i % 10}" for i in range(n_cols)], [f"{i % 10}" for i in range(n_rows)])
    return fig, heat


def test_heatmap_labels_every_key_and_query_never_thinned():
    fig, heat = _heatmap_fig(40, 40)  # 40 tokens in 560 x 400 px: labelled, but crowded
    assert [t.get_text() for t in heat.ax.get_xticklabels()] == [f"{i % 10}" for i in range(40)]
    assert [t.get_text() for t in heat.ax.get_yticklabels()] == [f"{i % 10}" for i in range(40)]
    assert typography.smallest_text(fig, 560)[0] >= typography.MIN_TEXT_PX
    assert heat.crowded
    rec = heat.record()
    assert rec["keys_labelled"] == rec["keys"] and rec["crowded"]
    # heatmap_room says how large the axes must be: given that room, nothing is crowded
    w, h = heatmaps.heatmap_room(heat.x_labels, heat.y_labels, typography.TYPE.tick)
    assert h == pytest.approx(40 * heatmaps.LABEL_PITCH * typography.TYPE.tick)
    fig, heat = _heatmap_fig(40, 40, width_px=int(w / 0.85) + 120, height_px=int(h / 0.8) + 120)
    assert not heat.crowded
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in heat.ax.get_yticklabels()]
    assert all(a.y0 >= b.y1 - 0.5 for a, b in zip(boxes, boxes[1:], strict=False))  # apart
    fig, heat = _heatmap_fig(8, 6)
    assert len(heat.ax.get_xticklabels()) == 8 and len(heat.ax.get_yticklabels()) == 6
    assert not heat.crowded


def test_more_than_40_tokens_without_room_are_thinned_not_overprinted():
    fig, heat = _heatmap_fig(45, 45)
    assert heat.crowded
    xt = [t.get_position()[0] for t in heat.ax.get_xticklabels()]
    assert 2 < len(xt) < 45 and xt[0] == 0 and xt[-1] == 44  # every k-th, and the last
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in heat.ax.get_yticklabels()]
    assert all(a.y0 >= b.y1 - 0.5 for a, b in zip(boxes, boxes[1:], strict=False))  # apart
    fig, heat = _heatmap_fig(40, 40)  # 40: every label, crowded or not
    assert len(heat.ax.get_xticklabels()) == len(heat.ax.get_yticklabels()) == 40


def test_words_turn_upright_where_level_labels_would_touch():
    words = ["default", "cell", "type", "of", "the", "notebook", "<eos>"]
    fig, sizes = canvas.slide_figure(400, 300)
    heat = heatmaps.Heatmap(fig.add_subplot(), sizes=sizes)
    heat.set_labels(words, ["type", "de", "cellule"])
    assert {t.get_rotation() for t in heat.ax.get_xticklabels()} == {90.0}
    fig, sizes = canvas.slide_figure(1200, 300)
    heat = heatmaps.Heatmap(fig.add_subplot(), sizes=sizes)
    heat.set_labels(["a", "b", "c"], ["x"])
    assert {t.get_rotation() for t in heat.ax.get_xticklabels()} == {0.0}


def test_timings_ticks_are_the_measured_lengths_and_do_not_overlap():
    t = {
        "n": [16, 32, 64, 128, 256, 512],
        "rnn_ms": [1, 2, 4, 8, 16, 33],
        "attention_ms": [0.3, 0.4, 0.6, 1.2, 3, 9],
    }
    fig = plots.timings(t, shown_width_px=780)
    ax = fig.axes[0]
    fig.canvas.draw()
    labels = [lab for lab in ax.get_xticklabels() if lab.get_text()]
    assert [lab.get_text() for lab in labels] == ["16", "32", "64", "128", "256", "512"]
    boxes = [lab.get_window_extent() for lab in labels]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:], strict=False))  # apart
    assert typography.smallest_text(fig, 780)[0] >= typography.MIN_TEXT_PX


class _Decoding:
    def __init__(self, L=2, H=4, T=10, n=11):
        rng = np.random.default_rng(0)
        self.alpha = rng.dirichlet(np.ones(n), size=(L, H, T))  # (L, h, T, n)
        self.source_tokens = [*"3 may 1979", "<eos>"][:n]
        self.output_tokens = list("1979-05-03")[:T]


def test_head_grid_one_panel_per_layer_and_head():
    d = _Decoding()
    fig = plots.head_grid(d, shown_width_px=1200)
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels][:2] == ["layer 1, head 1", "layer 1, head 2"]
    assert len(panels) == 8
    np.testing.assert_allclose(panels[5].images[0].get_array()[..., 0].shape, (10, 11))
    assert typography.smallest_text(fig, 1200)[0] >= typography.MIN_TEXT_PX
    texts = {t for _, t in typography.text_sizes(fig, 1200)}
    assert "<eos>" in texts


def test_mask_picture_and_training_plot_read_from_the_back():
    import torch

    from attnlab.attention import causal_mask, scaled_dot_product_attention

    m = causal_mask(6)
    _, w = scaled_dot_product_attention(
        torch.randn(6, 8), torch.randn(6, 8), torch.randn(6, 8), mask=m
    )
    fig = plots.mask_and_weights(m, w, shown_width_px=900)
    assert typography.smallest_text(fig, 900)[0] >= typography.MIN_TEXT_PX
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == list("123456")  # from 1
    tp = training_plots.TrainingPlot("rnnsearch $x$ on dates", shown_width_px=800)
    for step in range(1, 30):
        tp.add_loss(step, 3 / step)
    tp.set_history({"step": [10, 20], "accuracy": [0.3, 0.9], "seconds": [1.0, 2.0]}, 0.99)
    assert Image.open(io.BytesIO(tp.png())).format == "PNG"
    assert typography.smallest_text(tp.fig, 800)[0] >= typography.MIN_TEXT_PX
    np.testing.assert_allclose(tp.acc_line.get_ydata(), [0.3, 0.9])


def test_mask_picture_says_how_much_weight_reaches_the_future():
    import torch

    from attnlab.attention import causal_mask, scaled_dot_product_attention

    Q, K, V = torch.randn(5, 4), torch.randn(5, 4), torch.randn(5, 4)
    causal = causal_mask(5)
    _, w = scaled_dot_product_attention(Q, K, V, mask=causal)
    titles = [a.get_title() for a in plots.mask_and_weights(causal, w).axes if a.get_title()]
    assert titles[0] == "the mask: grey = hidden (False)"
    rgba = np.asarray(plots.mask_and_weights(causal, w).axes[0].images[0].get_array(), float)
    brightness = rgba[..., :3].mean(axis=-1) / rgba.max()  # (n, n): 1 = white
    np.testing.assert_array_equal(brightness < 0.9, ~causal.numpy())  # the hidden cells shaded
    assert titles[1].endswith("on future keys: 0.00")
    future = ~causal  # only the future (the last query has no key left: a row of zeros)
    _, w = scaled_dot_product_attention(Q, K, V, mask=future)
    expected = float(w.triu(diagonal=1).sum())
    assert expected == pytest.approx(4.0)  # queries 1-4 put all their weight there
    title = [a.get_title() for a in plots.mask_and_weights(future, w).axes if a.get_title()][1]
    assert title.endswith(f"on future keys: {expected:.2f}")


def test_live_plot_updates_one_picture_in_place(monkeypatch):
    shown = []

    class Handle:  # what display(..., display_id=True) returns in a notebook
        def update(self, image):
            shown.append(image.data)

    def display(image, display_id=False):
        shown.append(image.data)
        return Handle()

    monkeypatch.setattr("IPython.display.display", display)
    live = training_plots.LivePlot("rnnsearch on dates")
    for step in range(1, 21):
        live.step(step, 2.0 / step)
    live.measured({"step": [10, 20], "accuracy": [0.5, 0.97], "seconds": [0.5, 1.0]}, 0.99)
    live.close()
    np.testing.assert_allclose(live.plot.loss_line.get_ydata(), [2.0 / s for s in range(1, 21)])
    np.testing.assert_allclose(live.plot.acc_line.get_ydata(), [0.5, 0.97])
    assert "exact match 0.970" in live.plot.fig.get_suptitle()
    assert live.plot.target_line is not None
    assert len(shown) == 4 and all(Image.open(io.BytesIO(p)).format == "PNG" for p in shown)


def test_a_row_of_panels_labelled_on_its_left_counts_only_for_the_same_queries():
    fig, sizes = canvas.slide_figure(900, 300)
    left, mid, right = fig.subplots(1, 3)
    keys = ["a", "b", "c"]
    heats = [
        heatmaps.still_heatmap(left, np.full((2, 3), 0.3), keys, ["x", "y"], sizes=sizes),
        heatmaps.still_heatmap(mid, np.full((2, 3), 0.3), keys, ["x", "y"], sizes=sizes),
        heatmaps.still_heatmap(right, np.full((2, 3), 0.3), keys, ["p", "q"], sizes=sizes),
    ]
    for ax in (mid, right):
        ax.tick_params(labelleft=False)  # labelled once, on the row's left
    fig.canvas.draw()
    records = [h.record() for h in heats]
    assert records[1]["queries_labelled"] == ["x", "y"]  # the row's labels are its own
    assert records[2]["queries_labelled"] == []  # other queries: unlabelled, and caught
