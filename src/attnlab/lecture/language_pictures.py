"""Real-language pictures: stored test-split examples decoded live, heads on real words, alpha
beside occlusion (the examples are found and stored by :mod:`attnlab.experiments.language`)."""

from __future__ import annotations

import numpy as np

from attnlab.decode import decode
from attnlab.lecture.display import CELL_PX, MAX_WIDTH_PX, Picture, Table
from attnlab.pictures import canvas, heatmaps
from attnlab.pictures.typography import CHAR_WIDTH, TYPE
from attnlab.text.vocab import tokenize

__all__ = [
    "PREPARED_PHRASES",
    "SUBWORD_PHRASES",
    "self_attention_heads",
    "held_out_example",
    "alpha_and_occlusion",
    "subword_table",
]

#: The live demo's prepared English->French phrases (:class:`attnlab.widgets.PhraseGallery`):
#: strings of the held-out packages (Trac, OpenSlides), none in the training split nor one
#: word from a string there (tests/test_phrase_gallery.py), and one honest failure, a word
#: the model has barely seen ("motions": "Peut supporttions de support").
PREPARED_PHRASES = [
    ("Show previous version in browser", "held out"),
    ("Show internal items", "held out"),
    ("Hide this warning", "held out"),
    ("View the ticket description", "held out"),
    ("Can support motions", "held out: an honest failure"),
]


def _sized_heatmaps(x_labels, y_labels, panels: int = 1, max_height: float = 520, title=""):
    """A slide figure with ``panels`` heatmaps side by side, each big enough for every label.

    Cells at least :data:`CELL_PX` square (and as much as ``heatmaps.heatmap_room`` asks), plus
    room for the longest labels (x labels turned upright), the titles and one colorbar.
    """
    room_w, room_h = heatmaps.heatmap_room(x_labels, y_labels)  # px at the shown size
    label_px = CHAR_WIDTH * TYPE.tick  # about one character of a tick label
    x_room = label_px * max(map(len, x_labels)) + 2.5 * TYPE.label  # upright ticks + label
    y_room = label_px * max(map(len, y_labels)) + 2.5 * TYPE.label
    title_px = CHAR_WIDTH * TYPE.title * len(title)  # about the width of the longest title
    cols_px = max(room_w, CELL_PX * len(x_labels), 5 * CELL_PX, title_px if panels > 1 else 0)
    rows_px = max(room_h, CELL_PX * len(y_labels))
    width = panels * cols_px + y_room + 90 + 30 * (panels - 1)
    width = min(MAX_WIDTH_PX, max(width, title_px + y_room + 90))
    height = min(max_height, rows_px + x_room + 2.5 * TYPE.title)
    fig, sizes = canvas.slide_figure(width, height)
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, sizes, axes


def self_attention_heads(model, text: str, layer: int = 0, heads=None) -> Picture:
    """The encoder self-attention of ``layer`` on ``text``, one panel per head side by side:
    every head, or those of ``heads`` (0-based; a long text leaves room for only a few)."""
    w = model.attention_weights(text)
    src = w["source_tokens"]
    shown = list(range(w["encoder_self"].shape[1])) if heads is None else list(heads)
    weights = w["encoder_self"][layer][shown]  # (heads shown, n, n)
    h = len(shown)

    def draw():
        fig, sizes, axes = _sized_heatmaps(src, src, panels=h)
        for ax in axes[1:]:
            ax.sharey(axes[0])  # one row of query labels, on the left, for every panel
        for k, ax in enumerate(axes):
            heatmaps.still_heatmap(
                ax, weights[k], src, src, title=f"head {shown[k] + 1}", colorbar=k == h - 1,
                xlabel="key", ylabel="query" if k == 0 else "", sizes=sizes,
            )  # fmt: skip
            if k:
                ax.tick_params(labelleft=False)
        return fig

    which = f"{h} heads" if heads is None else "heads " + ", ".join(str(i + 1) for i in shown)
    summary = f"{model.card['name']}: encoder self-attention, layer {layer + 1}, {which}: {text!r}"
    return Picture(draw, summary, {"weights": weights, "source": src, "heads": shown},
                   name="self_attention_heads", inputs=[weights, list(src), shown],
                   code=(__name__,))  # fmt: skip


def held_out_example(model, example: dict, what: str = "", layer: int | None = None, head=None):
    """A stored test-split example (:mod:`attnlab.experiments.language`), decoded live again.

    The picture is ``model``'s alpha on the example's English (the cross-attention of
    ``layer``, mean over the heads or ``head``); its title names the test split (the held-out
    packages are another split) and says whether the live output equals the reference, word
    for word (``what`` goes in front).
    """
    result = decode(model, example["source"])
    right = tokenize(result.text) == tokenize(example["reference"])
    if head is not None and not what:
        shown = range(result.alpha.shape[0])[-1 if layer is None else layer]  # 0-based
        what = f"layer {shown + 1}, head {head + 1}: "
    title = f"{what}test split, output {'= reference' if right else '≠ reference'}"
    alpha = result.alpha[-1 if layer is None else layer]  # (h, T, n)
    alpha = alpha.mean(axis=0) if head is None else alpha[head]  # (T, n)
    x, y = result.source_tokens, result.output_tokens

    def draw():
        # at most 430 px high: the slide keeps a line of text below it
        fig, sizes, (ax,) = _sized_heatmaps(x, y, max_height=430, title=title)
        heatmaps.still_heatmap(
            ax, alpha, x, y, title=title, xlabel="English (source i)", ylabel="output t",
            sizes=sizes,
        )  # fmt: skip
        return fig

    summary = (
        f"held-out (test split): {example['source']!r} -> {result.text!r}; reference "
        f"{example['reference']!r} ({'the same words' if right else 'different'})"
    )
    return Picture(draw, summary, {"alpha": alpha, "output": result.text, "right": right},
                   name="held_out_example", inputs=[alpha, list(x), list(y), title],
                   code=(__name__,))  # fmt: skip


def alpha_and_occlusion(example: dict, agreement: float, chance: float) -> Picture:
    """alpha beside occlusion (the drop of log p(y_t) when source piece i is hidden, as a share
    of the largest drop); ``agreement`` over the test split, beside ``chance`` (random picks)."""
    x = example["source_tokens"][:-1]  # without <eos>
    y = example["output_tokens"]
    alpha = np.asarray(example["alpha"])[:, :-1]  # (T, n - 1)
    drop = np.clip(np.asarray(example["occlusion"]), 0, None)  # (T, n - 1) nats
    costs = "cost of hiding piece i (/ largest)"
    t, a, k = example["step"], example["alpha_argmax"], example["occlusion_argmax"]

    def draw():
        fig, sizes, (left, right) = _sized_heatmaps(x, y, panels=2, max_height=420, title=costs)
        right.sharey(left)  # one row of output labels, on the left
        heatmaps.still_heatmap(
            left, alpha, x, y, title="alpha", xlabel="source i", ylabel="output t", sizes=sizes
        )
        heatmaps.still_heatmap(
            right, drop / max(drop.max(), 1e-9), x, y, title=costs,
            xlabel="source i", ylabel="", sizes=sizes,
        )  # fmt: skip
        right.tick_params(labelleft=False)
        for ax in (left, right):
            ax.axhline(t - 0.5, color="red", lw=2)
            ax.axhline(t + 0.5, color="red", lw=2)
        return fig

    cost = np.asarray(example["occlusion"])[t]  # nats
    summary = (
        f"{example['source']!r} -> {example['output']!r}, output {t + 1} ({y[t]!r}): alpha "
        f"{x[a]!r} {alpha[t, a]:.2f}, {x[k]!r} {alpha[t, k]:.2f}; hiding {x[k]!r} costs "
        f"{cost[k]:.1f} nats, hiding {x[a]!r} {cost[a]:.2f}. Over the test split alpha's "
        f"argmax is the most costly piece at {agreement:.0%} of the steps (chance {chance:.1%})"
    )
    return Picture(draw, summary, {"alpha": alpha, "drop": drop}, name="alpha_and_occlusion",
                   inputs=[alpha, drop, list(x), list(y), t], code=(__name__,))  # fmt: skip


#: Strings of the held-out packages whose rare words the subword vocabulary cuts into pieces:
#: two that beam search writes right where greedy decoding does not, one that neither does.
SUBWORD_PHRASES = [
    "Participant number",
    "Can create motions",
    "Available Reports",
    "Follow recommendations for all motions",
]


def subword_table(model, texts: list[str] = SUBWORD_PHRASES, beam: int = 4) -> Table:
    """Each text as the model reads it (its subword pieces, "##" a piece inside a word) and what
    it writes, greedily and with beam search of width ``beam``."""
    rows = []
    for text in texts:
        d = decode(model, text)
        pieces = heatmaps.tick_labels(d.source_tokens[:-1], True)  # without <eos>
        beamed = decode(model, text, beam=beam)
        rows.append([text, " ".join(pieces), d.text, beamed.text])
    return Table(
        ["English (held out)", "the pieces it reads", "greedy", f"beam {beam}"],
        rows,
        caption="SentencePiece BPE: 4,000 pieces for both sides, learned from the training split",
        first_width=30,
    )
