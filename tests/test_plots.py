"""attnlab.plots: the length curves, the persistent heatmap (blitting) and the context bars."""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from attnlab import plots

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
    # The training range (5-30) is narrower than the tested bins: it is shaded.
    spans = [p for p in ax.patches if p.get_label().startswith("trained lengths")]
    assert len(spans) == 1
    x0, x1 = spans[0].get_x(), spans[0].get_x() + spans[0].get_width()
    assert (x0, x1) == (5, 30)


def test_length_curves_token_accuracy_and_given_axes():
    fig = plots.new_figure(4, 3)
    ax = fig.add_subplot()
    assert plots.length_curves(RESULTS, metric="token_accuracy", ax=ax) is ax
    values = sorted(tuple(line.get_ydata()) for line in ax.get_lines())
    assert values[0] == (0.9, 0.5, 0.3, 0.2)


def test_length_curves_no_shading_when_trained_on_every_length():
    results = {**RESULTS, "config": {"train_lengths": [5, 40]}}
    ax = plots.length_curves(results)
    assert not [p for p in ax.patches if p.get_label().startswith("trained")]


def test_length_curves_rejects_bad_input():
    with pytest.raises(ValueError, match="metric"):
        plots.length_curves(RESULTS, metric="bleu")
    broken = {**RESULTS, "models": {"m": {"exact_match": [1.0], "token_accuracy": [1.0]}}}
    with pytest.raises(ValueError, match="4 bins"):
        plots.length_curves(broken)


def test_length_curves_on_the_shipped_results():
    length = pytest.importorskip("attnlab.experiments.length")
    try:
        results = length.load_results()
    except FileNotFoundError:
        pytest.skip("the length experiment has not written its results yet")
    ax = plots.length_curves(results)
    assert len(ax.get_lines()) == len(results["models"])
    png = plots.png_bytes(ax.get_figure(), draw=True)
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
    fig = plots.new_figure(5, 4.5)
    ax = fig.add_subplot()
    heat = plots.Heatmap(ax, "alpha")
    heat.set_labels(list("abcd"), list("xyz"))
    background = plots.cache_background(fig)
    values = np.array([[1.0, 0, 0, 0], [0, 0.5, 0.5, 0], [np.nan] * 4])
    plots.restore_background(fig, background)
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
    plots.restore_background(fig, background)
    heat.set_data(np.zeros((3, 4)), row=None)
    heat.blit()
    np.testing.assert_allclose(_pixel(fig, ax, 0, 0), low, atol=2)
    assert not _is_red(_pixel(fig, ax, 1.5, 0.5))


def test_heatmap_rejects_a_wrong_shape():
    fig = plots.new_figure(4, 3)
    heat = plots.Heatmap(fig.add_subplot())
    heat.set_labels(["a", "b"], ["x"])
    with pytest.raises(ValueError, match=r"\(1, 2\).*\(2, 2\)"):
        heat.set_data(np.zeros((2, 2)))


def test_png_bytes_is_a_png_of_the_figure_size():
    fig = plots.new_figure(3, 2, dpi=50)
    fig.add_subplot().plot([0, 1])
    image = Image.open(io.BytesIO(plots.png_bytes(fig, draw=True)))
    assert image.format == "PNG" and image.size == (150, 100)


def test_context_bars():
    fig = plots.new_figure(4, 2)
    bars = plots.ContextBars(fig.add_subplot(), size=6)
    c = np.linspace(-1, 1, 6)
    bars.set_values(c)
    np.testing.assert_allclose(bars.bars.get_data().values, c)
    with pytest.raises(ValueError, match=r"\(6,\)"):
        bars.set_values(np.zeros(5))
