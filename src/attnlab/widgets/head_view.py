r"""HeadView: every head of a trained Transformer on a date or a phrase of the room's own.

One panel per head of the chosen layer: the cross-attention alpha (output tokens y_t down,
source tokens across) or the encoder self-attention (source tokens both ways), every token
labelled (subword pieces for the language models, readably: ``Daten`` ``##träger``).  The
model chooser offers the installed Transformers (dates, English->French, English->German);
the box takes the text, decoded on Enter.  Attention and layer are toggles whose frames are
rendered when the text is decoded (:class:`attnlab.widgets._frames.FrameGrid`): they work in
an exported page without a kernel, and the readouts (``weights``, the tokens) are the frame's.
Bad text (empty, too long) gives a one-line message inside the widget, never a traceback.

A subword model's pieces are labelled readably (``Daten`` ``##träger``:
:func:`attnlab.pictures.heatmaps.tick_labels`), and a third toggle, pieces / words
(:data:`UNITS`), shows alpha per word (:func:`attnlab.text.subwords.per_word`: a key word's
weight the sum over its pieces, a query word's row the mean of its pieces' rows).  For a
real-language model one line beside the text box says whether the typed English was seen in
training, is a near-twin of a training string, or is new
(:class:`attnlab.widgets._base.ModelWidget`).
"""

from __future__ import annotations

import warnings

import ipywidgets as widgets
import numpy as np

from attnlab.models import catalogue
from attnlab.models.threads import torch_threads
from attnlab.pictures.canvas import png_bytes, slide_figure
from attnlab.pictures.frame_cache import rendered
from attnlab.pictures.heatmaps import Heatmap, heatmap_room, tick_labels
from attnlab.pictures.typography import TYPE, literal
from attnlab.text.subwords import per_word

from ._base import ModelWidget, short, unknown_words
from ._frames import FrameGrid

__all__ = ["HeadView", "ATTENTION_KINDS", "UNITS"]

#: The attentions shown: the key of ``model.attention_weights`` and its panel's axes.
ATTENTION_KINDS = {
    "cross-attention": ("cross", "source (keys)", "output (queries)"),
    "encoder self-attention": ("encoder_self", "source (keys)", "source (queries)"),
}
#: How a subword model's alpha is shown: over its pieces, or per word (summed over a word's pieces).
UNITS = ("pieces", "words")
WIDTH_PX = 1150  # the widest picture, its right edge left of the slideshow's arrows; a long
# text makes it taller (two rows of heads)


def _figure(keys: list[str], queries: list[str], heads: int):
    """A figure with one panel per head, each large enough for every key and query label."""
    tick = TYPE.tick
    need_w, need_h = heatmap_room(keys, queries, tick, pieces=False)
    ys = max(len(literal(q)) for q in [*queries, "x"])
    left = 16 + 1.6 * TYPE.label + (0.62 * ys + 0.3) * tick
    right, gap = 70, 16
    bar = 1 / (1 - 0.046 - 0.03)  # the colorbar's share of the last panel (Heatmap)
    cols = next(c for c in (heads, 2, 1)
                if left + right + (c - 1 + bar) * need_w + (c - 1) * gap <= WIDTH_PX or c == 1)  # fmt: skip
    rows = -(-heads // cols)
    longest = max(len(literal(k)) for k in [*keys, "x"])
    title_px = 1.5 * TYPE.label + 10
    labels_px = 1.4 * TYPE.label + (0.62 * longest + 0.3) * tick + 16
    panel_h = max(need_h * 1.02, 100)
    height = rows * (title_px + panel_h + labels_px) + 1.5 * TYPE.title + 10
    fig, sizes = slide_figure(WIDTH_PX, height, layout=None)
    fig.subplots_adjust(left=left / WIDTH_PX, right=1 - right / WIDTH_PX,
                        top=1 - (title_px + 1.5 * TYPE.title + 10) / height,
                        bottom=labels_px / height,
                        wspace=gap * cols / ((cols - 1 + bar) * need_w),
                        hspace=(title_px + labels_px) / panel_h)  # fmt: skip
    ratios = [1.0] * (cols - 1) + [bar]
    axes = fig.subplots(rows, cols, squeeze=False, width_ratios=ratios).ravel()
    for ax in axes[heads:]:
        ax.set_axis_off()
    return fig, sizes, axes[:heads], cols


def picture(weights: np.ndarray, keys: list[str], queries: list[str], title: str, axes_names):
    """(h, m, n) weights of one layer, one panel per head: the PNG (``keys`` and ``queries``
    the labels as shown)."""
    heads = weights.shape[0]
    fig, sizes, axes, cols = _figure(keys, queries, heads)
    xlabel, ylabel = axes_names
    for j, ax in enumerate(axes):
        heat = Heatmap(ax, f"head {j + 1}", colorbar=j % cols == cols - 1, sizes=sizes,
                       xlabel=xlabel, ylabel=ylabel if j % cols == 0 else "")  # fmt: skip
        heat.image.set_animated(False)  # a still picture per frame
        heat.set_labels(keys, queries, pieces=False)
        heat.set_data(weights[j])
        if j % cols:  # the same queries in every panel of a row: labelled on its left only
            ax.sharey(axes[j - j % cols])
            ax.tick_params(labelleft=False)
    fig.suptitle(literal(title), fontsize=sizes.title)
    with warnings.catch_warnings():  # a glyph the font lacks: a box, never a warning
        warnings.simplefilter("ignore", UserWarning)
        return png_bytes(fig, draw=True, palette=True)


def _same_view(words: tuple, pieces: tuple) -> bool:
    """True when the per-word view shows what the pieces' view shows (one piece a word)."""
    return words[3:5] == pieces[3:5] and np.allclose(words[0], pieces[0])


class HeadView(ModelWidget):
    """Every head of one layer of a trained Transformer, on a text the room types.

    ``HeadView(model=None, text=None)``: a model name (default ``"transformer-dates"``) or a
    loaded Transformer; ``text`` what it reads first (default: a date, or a phrase for a
    language model).

    Attributes for code and tests: ``model_chooser`` (Dropdown of the installed
    Transformers: :class:`attnlab.widgets._base.ModelWidget`), ``text`` (Text, on Enter),
    ``kind`` (ToggleButtons over :data:`ATTENTION_KINDS`), ``layer`` (ToggleButtons "layer
    1".."layer L", the last one first), ``unit`` (ToggleButtons over :data:`UNITS` for a
    subword model, else "pieces" alone and hidden), ``grid`` (FrameGrid: kind > layer > unit),
    ``frames``, ``links``, ``frame`` (the Frame the toggles select: ``data`` holds weights
    (h, m, n), keys, queries (the model's tokens, or the words), kind, layer, unit); from it
    ``weights``, ``key_tokens``, ``query_tokens``; ``model``, ``unknown`` (words read as
    <unk>), ``seen`` and ``seen_box`` (seen in training), ``image``, ``message``.
    """

    default_model = catalogue.lecture_model("transformer")
    offered = {"offered": True, "kind": "transformer"}
    chooser_width = "440px"  # the model, the text and the seen line in one row at 22 px

    def __init__(self, model=None, text: str | None = None):
        super().__init__()
        name = self._choose(model, text)
        self.kind = widgets.ToggleButtons(
            options=list(ATTENTION_KINDS), style={"button_width": "270px"}
        )
        self.layer = widgets.ToggleButtons(options=["layer 1"], style={"button_width": "110px"})
        self.unit = widgets.ToggleButtons(
            options=UNITS[:1], style={"button_width": "110px"}, layout={"display": "none"}
        )
        self.text.layout.width = "440px"
        self.seen_box.layout.width, self.seen_box.layout.margin = "300px", "0 0 0 12px"
        self.grid = self._grid(1, False)
        self.frames, self.links = self.grid.root, self.grid.links
        self.children = [
            widgets.HBox([self.model_chooser, self.text, self.seen_box]),
            widgets.HBox([self.kind, self.layer, self.unit]),
            self.message_box,
            self.frames,
        ]
        self._start(name)

    def _grid(self, layers: int, pieces: bool, same=()) -> FrameGrid:
        """kind > layer > unit; the ``same`` indices (words shown as their one piece each)
        reuse the pieces' frame."""
        same = set(same)
        return FrameGrid(
            [(self.kind, "index"), (self.layer, "index"), (self.unit, "index")],
            (len(ATTENTION_KINDS), layers, len(UNITS) if pieces else 1), 0,
            share=lambda i: (*i[:2], 0) if tuple(i) in same else tuple(i),
        )  # fmt: skip

    def _accept(self, name: str, model) -> None:
        if not hasattr(model, "attention_weights"):
            raise ValueError(f"{name} has no attention heads: choose a Transformer")

    def _show_text(self) -> None:
        """Every kind, layer (and unit) of the model on ``text.value``: one frame each."""
        if self.model is None:
            raise ValueError("No model is loaded.")
        with torch_threads(1):  # batch 1: a second thread brings nothing (attnlab.models.threads)
            w = self.model.attention_weights(self.text.value)  # InvalidInput on bad text
        src, out = list(w["source_tokens"]), list(w["output_tokens"])
        pieces = self.model.src_vocab.level == "subword"
        layers = w["cross"].shape[0]
        keep = self.layer.index if len(self.layer.options) == layers else layers - 1
        units = UNITS if pieces else UNITS[:1]
        unit = self.unit.index if tuple(self.unit.options) == units else 0
        with self.hold_trait_notifications():
            self.layer.options = [f"layer {i + 1}" for i in range(layers)]
            self.unit.options = units
        self.layer.index, self.unit.index = keep, unit  # the last layer first; a choice is kept
        self.unit.layout.display = None if pieces else "none"
        views = {}  # index -> weights (h, m, n), keys, queries, labels of both, axes' names
        for k, (key, xlabel, ylabel) in enumerate(ATTENTION_KINDS.values()):
            queries = src if key == "encoder_self" else out
            for layer in range(layers):
                weights = np.asarray(w[key][layer], dtype=float)  # (h, m, n)
                shown = (tick_labels(src, pieces), tick_labels(queries, pieces))
                views[(k, layer, 0)] = (weights, src, queries, *shown, (xlabel, ylabel))
                if pieces:
                    split = [per_word(a, queries, src) for a in weights]  # per head
                    words_q, words_k = split[0][0], split[0][1]
                    per = np.stack([a for _, _, a in split]).astype(float)
                    names = tuple(n.replace(" (", " words (") for n in (xlabel, ylabel))
                    views[(k, layer, 1)] = (per, words_k, words_q, words_k, words_q, names)
        same = [
            (k, layer, 1)
            for (k, layer, u), v in views.items()
            if u == 1 and _same_view(v, views[(k, layer, 0)])
        ]
        self.grid = self._grid(layers, pieces, same)
        labels = list(ATTENTION_KINDS)
        for index in self.grid.indices():
            weights, keys, queries, key_labels, query_labels, names = views[index]
            k, layer, u = index
            per = ", per word" if u == 1 else ""
            title = short(f"{self.model_chooser.value}, {labels[k]}, layer {layer + 1}{per}", 70)
            drawn = [weights, key_labels, query_labels, title, names]
            png = rendered("HeadView", drawn, lambda d=drawn: picture(*d), code=[__name__])
            self.grid.set(index, png, weights=weights, keys=keys, queries=queries,
                          kind=labels[k], layer=layer + 1, unit=units[u])  # fmt: skip
        self.grid.select()
        self.frames, self.links = self.grid.root, self.grid.links
        self.children = [*self.children[:3], self.frames]
        self.unknown = unknown_words(self.model, self.text.value, src)

    # ------------------------------------------------------------------ readouts
    @property
    def frame(self):
        return self.grid.frame()

    @property
    def weights(self) -> np.ndarray:
        return self.frame.data["weights"]

    @property
    def key_tokens(self) -> list[str]:
        return list(self.frame.data["keys"])

    @property
    def query_tokens(self) -> list[str]:
        return list(self.frame.data["queries"])

    @property
    def image(self) -> widgets.Image:
        return self.frame.view

    def text_form(self) -> str:
        return f"HeadView: {self.model_chooser.value} on {short(self.text.value, 40)!r}"

    def png(self) -> bytes:
        data = self.frame.view.value
        return bytes(data) if data else b""
