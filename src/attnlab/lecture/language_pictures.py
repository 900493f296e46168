"""Real-language pictures: stored test-split examples decoded live, heads on real words, alpha
beside occlusion (the examples are found and stored by :mod:`attnlab.experiments.language`)."""

from __future__ import annotations

import random

import numpy as np

from attnlab.decode import decode
from attnlab.lecture.display import CELL_PX, MAX_WIDTH_PX, Picture, Table
from attnlab.pictures import canvas, heatmaps
from attnlab.pictures.typography import CHAR_WIDTH, TYPE
from attnlab.text import seen
from attnlab.text.vocab import tokenize

__all__ = [
    "PREPARED_PHRASES",
    "drawn_phrases",
    "SUBWORD_PHRASES",
    "self_attention_heads",
    "held_out_example",
    "alpha_and_occlusion",
    "subword_table",
    "word_order_models",
]

#: The live demo's prepared English->French phrases (:class:`attnlab.widgets.PhraseGallery`):
#: strings of the held-out packages (Trac, OpenSlides), none in the training split nor one
#: word from a string there (tests/test_phrase_gallery.py), and one honest failure, a word
#: the model has barely seen ("motions": "Peut supporttions de support").
PREPARED_PHRASES = [
    ("Show previous version in browser", "chosen"),
    ("Show internal items", "chosen"),
    ("Hide this warning", "chosen"),
    ("View the ticket description", "chosen"),
    ("Can support motions", "chosen: an honest failure"),
]


def _target_language(model, who: str) -> str:
    """ "fr" or "de": the language a translation model writes, from its card's task ("en-fr");
    a one-line ValueError naming ``who`` for any other model."""
    task = (getattr(model, "card", None) or {}).get("task", "")
    if not task.startswith("en-"):
        raise ValueError(f"{who} needs a translation model; got task {task!r}")
    return task[3:]


def drawn_phrases(
    model, count: int = 8, seed: int = 0, words: tuple[int, int] = (2, 6), chosen=PREPARED_PHRASES
):
    """``count`` strings of the held-out packages drawn at random (``random.Random(seed)``),
    as (English, note) pairs for :class:`attnlab.widgets.PhraseGallery`: not a selection of
    successes.  Drawn among the strings of ``words`` words (bounds included) without
    placeholders that were neither in the training split nor one word from a string there
    (:mod:`attnlab.text.seen`), and none of the ``chosen`` (text, note) pairs shown beside
    them; each note says whether ``model`` (greedy) writes the reference word for word (✓) or
    not (✗, with the reference)."""
    if not isinstance(count, int) or isinstance(count, bool) or not 1 <= count <= 20:
        raise ValueError(f"count must be an int from 1 to 20; got {count!r:.20}")
    lang = _target_language(model, "drawn_phrases")
    index = seen.seen_index(lang)
    lo, hi = words
    shown = {text for text, _ in chosen}  # a chosen phrase drawn again would count twice
    pool = [
        (en, ref)
        for en, ref in seen.held_out_pairs(lang)  # the held-out split, shipped
        if lo <= len(en.split()) <= hi and "{" not in en and en not in shown
        and seen.verdict(index, en).kind == "new"
    ]  # fmt: skip
    drawn = random.Random(seed).sample(pool, min(count, len(pool)))
    notes = []
    for en, ref in drawn:
        right = tokenize(decode(model, en).text, lower=False) == tokenize(ref, lower=False)
        notes.append((en, "random: ✓ the reference" if right else f"random: ✗ ref. {ref}"))
    return notes


def _sized_heatmaps(
    x_labels, y_labels, panels: int = 1, max_height: float = 520, title="",
    cell_px: float = CELL_PX, max_width: float = MAX_WIDTH_PX,
):  # fmt: skip
    """A slide figure with ``panels`` heatmaps side by side, each big enough for every label.

    Cells at least ``cell_px`` square (and as much as ``heatmaps.heatmap_room`` asks), plus
    room for the longest labels (x labels turned upright), the titles and one colorbar, in at
    most ``max_width`` px.
    """
    room_w, room_h = heatmaps.heatmap_room(x_labels, y_labels)  # px at the shown size
    label_px = CHAR_WIDTH * TYPE.tick  # about one character of a tick label
    x_room = label_px * max(map(len, x_labels)) + 2.5 * TYPE.label  # upright ticks + label
    y_room = label_px * max(map(len, y_labels)) + 2.5 * TYPE.label
    title_px = CHAR_WIDTH * TYPE.title * len(title)  # about the width of the longest title
    cols_px = max(room_w, cell_px * len(x_labels), 5 * cell_px, title_px if panels > 1 else 0)
    rows_px = max(room_h, cell_px * len(y_labels))
    width = panels * cols_px + y_room + 90 + 30 * (panels - 1)
    width = min(max_width, max(width, title_px + y_room + 90))
    height = min(max_height, rows_px + x_room + 2.5 * TYPE.title)
    fig, sizes = canvas.slide_figure(width, height)
    return fig, sizes, fig.subplots(1, panels, squeeze=False)[0]


def self_attention_heads(
    model, text: str, layer: int = 0, heads=None, max_height: float = 520
) -> Picture:
    """The encoder self-attention of ``layer`` on ``text``, one panel per head side by side:
    every head, or those of ``heads`` (0-based; a long text leaves room for only a few), at
    most ``max_height`` px tall (room for a caption under it)."""
    w = model.attention_weights(text)
    src = w["source_tokens"]
    shown = list(range(w["encoder_self"].shape[1])) if heads is None else list(heads)
    weights = w["encoder_self"][layer][shown]  # (heads shown, n, n)
    h = len(shown)

    def draw():
        fig, sizes, axes = _sized_heatmaps(src, src, panels=h, max_height=max_height)
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
                   name="self_attention_heads", inputs=[weights, list(src), shown, max_height],
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
        fig, sizes, axes = _sized_heatmaps(x, y, max_height=430, title=title)
        heatmaps.still_heatmap(
            axes[0], alpha, x, y, title=title, xlabel="English (source i)", ylabel="output t",
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


def word_order_models(models, example: dict) -> Picture:
    """Bahdanau's Fig. 3 on one stored test-split string, one heatmap per model side by side:
    each model's cross-attention of its last layer (the mean over its heads) while it
    translates ``example["source"]`` live, so the same reordering can be compared as sharp as
    each model draws it.  Each panel's title names the model (and the heads averaged) and says
    whether its output is right (the reference, word for word) or not."""
    if not 1 <= len(models) <= 2:
        raise ValueError(f"word_order_models draws one or two models; got {len(models)}")
    panels = []
    for model in models:
        _target_language(model, "word_order_models")
        result = decode(model, example["source"])
        right = tokenize(result.text) == tokenize(example["reference"])
        alpha = result.alpha[-1].mean(axis=0)  # last layer, mean of heads: (T, n)
        heads = result.alpha.shape[1]
        what = f", mean of {heads} heads" if heads > 1 else ""  # what the panel averages
        title = f"{model.card['name']}{what}: {'right' if right else '≠ reference'}"
        panels.append((title, alpha, result.source_tokens, result.output_tokens, right))
    x, y = panels[0][2], panels[0][3]
    same_labels = all(p[2] == x and p[3] == y for p in panels)

    def draw():
        longest_title = max((p[0] for p in panels), key=len)
        # cells as large as the occlusion figure's, to be read from the back, and clear of
        # the navigation arrows at the slide's bottom right (x > 1170 px)
        fig, sizes, axes = _sized_heatmaps(
            x, y, panels=len(panels), max_height=420, title=longest_title, cell_px=54,
            max_width=1140,
        )  # fmt: skip
        for k, (ax, (title, alpha, src, out, _)) in enumerate(zip(axes, panels, strict=True)):
            heatmaps.still_heatmap(
                ax, alpha, src, out, title=title, colorbar=k == len(panels) - 1,
                xlabel="English (source i)", ylabel="output t" if k == 0 else "", sizes=sizes,
            )  # fmt: skip
            if k and same_labels:
                ax.tick_params(labelleft=False)  # one column of output words, on the left
        return fig

    summary = "; ".join(f"{t}: {tokenize(example['source'])} -> {o}" for t, _, _, o, _ in panels)
    data = {"alpha": [p[1] for p in panels], "right": [p[4] for p in panels]}
    return Picture(draw, f"test split: {summary}", data, name="word_order_models",
                   inputs=[[p[1] for p in panels], [list(p[2]) + list(p[3]) for p in panels],
                           [p[0] for p in panels]],
                   code=(__name__,))  # fmt: skip


#: Quote marks that stand alone as a token's label, and the labels shown for them instead.
QUOTES = ("'", '"', "`")
QUOTED = {f"‹{q}›" for q in QUOTES}


def _quoted(label: str) -> str:
    """A label that is only a quote mark between angle quotes: ‹'›."""
    return f"‹{label}›" if label in QUOTES else label


#: Occlusion costs at or above this many nats share the brightest colour: a drop of 1 nat
#: (p falls to a third) is decisive, and larger ones need not dim it.
COST_CAP = 1.5


def alpha_and_occlusion(example: dict, agreement: float, chance: float) -> Picture:
    """alpha beside occlusion (the drop of log p(y_t) when source piece i is hidden, the output
    kept fixed, in nats on one scale for every row, capped at :data:`COST_CAP` nats: a step whose
    drops are all tiny stays dark, and a decisive 1-nat drop stays bright beside a 4-nat one;
    a rise in p shows as 0); ``agreement`` over the test split, beside ``chance`` (random
    picks); the panels' titles name the model."""
    # labels as the picture shows them; a lone quote mark is lost from row 20 (under a tick
    # mark it reads as the tick's end), so it is put between angle quotes and stands level
    x = [_quoted(s) for s in heatmaps.tick_labels(example["source_tokens"][:-1], True)]
    y = [_quoted(s) for s in heatmaps.tick_labels(example["output_tokens"], True)]
    alpha = np.asarray(example["alpha"])[:, :-1]  # (T, n - 1)
    drop = np.clip(np.asarray(example["occlusion"]), 0, None)  # (T, n - 1) nats
    model = example.get("model", "rnnsearch-en-fr")  # the stored example: language_run's model
    costs = f"cost of hiding piece i (nats, {COST_CAP:g}+ bright)"
    t, a, k = example["step"], example["alpha_argmax"], example["occlusion_argmax"]

    def draw():
        # wider than most pictures, to be read from the back, yet clear of the navigation
        # arrows at the slide's bottom right (x > 1170 px)
        fig, sizes, (left, right) = _sized_heatmaps(
            x, y, panels=2, max_height=490, title=costs, cell_px=54, max_width=1140
        )
        right.sharey(left)  # one row of output labels, on the left
        heatmaps.still_heatmap(
            left,
            alpha,
            x,
            y,
            title=f"alpha ({model})",
            xlabel="source i",
            ylabel="output t",
            sizes=sizes,
            turn=True,
            pieces=False,
        )
        heatmaps.still_heatmap(
            right, drop, x, y, title=costs, vmin=0.0, vmax=COST_CAP, extend="max",
            xlabel="source i", ylabel="", sizes=sizes, turn=True, pieces=False,
        )  # fmt: skip
        right.tick_params(labelleft=False)
        for ax in (left, right):
            for label in ax.get_xticklabels():  # the quoted quote marks level, as in the rows
                if label.get_text() in QUOTED:
                    label.set_rotation(0)
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
    "Available Reports",
    "Follow recommendations for all motions",
]


def _marked(output: str, reference: str | None) -> str:
    """``output`` with ✓ when it is ``reference`` word for word, ✗ when not (as it is when
    there is no reference to compare with)."""
    if reference is None:
        return output
    same = tokenize(output, lower=False) == tokenize(reference, lower=False)
    return f"{'✓' if same else '✗'} {output}"


def subword_table(model, texts: list[str] = SUBWORD_PHRASES, beam: int = 4, references=None):
    """Each text as the model reads it (its subword pieces, "##" a piece inside a word) and what
    it writes, greedily and with beam search of width ``beam``, each output marked ✓ when it is
    the reference word for word and ✗ when not.  ``references`` (English -> reference): by
    default the held-out packages' strings of the model's target language."""
    if references is None:
        references = dict(seen.held_out_pairs(_target_language(model, "subword_table")))
    rows = []
    for text in texts:
        d = decode(model, text)
        pieces = heatmaps.tick_labels(d.source_tokens[:-1], True)  # without <eos>
        beamed = decode(model, text, beam=beam)
        reference = references.get(text)
        rows.append(
            [text, " ".join(pieces), _marked(d.text, reference), _marked(beamed.text, reference)]
        )
    return Table(
        ["English (held out)", "the pieces it reads", "greedy", f"beam {beam}"],
        rows,
        caption="SentencePiece BPE, 4,000 pieces; ✓: the reference word for word",
        first_width=26,
    )
