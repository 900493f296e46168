"""Real-language pictures: stored test-split examples decoded live, heads on real words, alpha
beside occlusion (the examples are found and stored by :mod:`attnlab.experiments.language`)."""

from __future__ import annotations

import random

import numpy as np

from attnlab.decode import decode
from attnlab.lecture.display import CELL_PX, MAX_WIDTH_PX, OUTPUT_AREA_PX, Picture, Table
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
    x_labels, y_labels, panels: int = 1, max_height: float = 520, title="", side_px: float = 0,
    cell_px: float = CELL_PX, max_width: float = MAX_WIDTH_PX,
):  # fmt: skip
    """A slide figure with ``panels`` heatmaps side by side, each big enough for every label.

    Cells at least ``cell_px`` square (and as much as ``heatmaps.heatmap_room`` asks), plus
    room for the longest labels (x labels turned upright), the titles and one colorbar, in at
    most ``max_width`` px.  ``side_px`` > 0 adds one more axes that wide on the right (the
    figure may then be as wide as the slide's output area): the last of the returned axes.
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
    if not side_px:
        fig, sizes = canvas.slide_figure(width, height)
        return fig, sizes, fig.subplots(1, panels, squeeze=False)[0]
    total = min(OUTPUT_AREA_PX, width + side_px)
    fig, sizes = canvas.slide_figure(total, height)
    ratios = [width / panels] * panels + [total - width]
    return fig, sizes, fig.subplots(1, panels + 1, squeeze=False, width_ratios=ratios)[0]


def _alignment_lines(ax, alpha, x_labels, y_labels, sizes, least: float = 0.2) -> None:
    """Bahdanau's alignment the way a textbook draws it: the source words in a column on the
    left, the output words on the right, a line for each weight alpha_{t,i} >= ``least``, as
    thick as the weight: where the order changes, the lines cross."""
    n, T = len(x_labels), len(y_labels)
    top = max(n, T) - 1

    def place(k: int, count: int) -> float:  # rows from the top, centred on the longer column
        return top - k - (top - (count - 1)) / 2

    for t in range(T):
        for i in range(n):
            if alpha[t, i] >= least:
                ax.plot(
                    [0, 1], [place(i, n), place(t, T)], color="#0b5394", alpha=0.35 + 0.65 * alpha[t, i],
                    lw=1 + 9 * alpha[t, i], solid_capstyle="round",
                )  # fmt: skip
    for i, word in enumerate(x_labels):
        ax.text(-0.04, place(i, n), word, ha="right", va="center", fontsize=sizes.tick)
    for t, word in enumerate(y_labels):
        ax.text(1.04, place(t, T), word, ha="left", va="center", fontsize=sizes.tick)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.6, top + 0.6)
    ax.set_title(
        rf"a line per $\alpha_{{t,i}} \geq {least:g}$, as thick as it", fontsize=sizes.title
    )
    ax.axis("off")


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


def held_out_example(
    model, example: dict, what: str = "", layer: int | None = None, head=None, lines=False
):
    """A stored test-split example (:mod:`attnlab.experiments.language`), decoded live again.

    The picture is ``model``'s alpha on the example's English (the cross-attention of
    ``layer``, mean over the heads or ``head``); its title names the test split (the held-out
    packages are another split) and says whether the live output equals the reference, word
    for word (``what`` goes in front).  ``lines``: the same weights beside it as alignment
    lines between the two columns of words (:func:`_alignment_lines`).
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

    x_shown, y_shown = heatmaps.tick_labels(x), heatmaps.tick_labels(y)
    longest = CHAR_WIDTH * TYPE.tick * max(map(len, x_shown + y_shown))
    side = 2 * longest + 260 if lines else 0  # two columns of words and the lines between

    def draw():
        # at most 430 px high: the slide keeps a line of text below it
        fig, sizes, axes = _sized_heatmaps(x, y, max_height=430, title=title, side_px=side)
        heatmaps.still_heatmap(
            axes[0], alpha, x, y, title=title, xlabel="English (source i)", ylabel="output t",
            sizes=sizes,
        )  # fmt: skip
        if lines:
            _alignment_lines(axes[1], alpha, x_shown, y_shown, sizes)
        return fig

    summary = (
        f"held-out (test split): {example['source']!r} -> {result.text!r}; reference "
        f"{example['reference']!r} ({'the same words' if right else 'different'})"
    )
    return Picture(draw, summary, {"alpha": alpha, "output": result.text, "right": right},
                   name="held_out_example", inputs=[alpha, list(x), list(y), title, lines],
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
