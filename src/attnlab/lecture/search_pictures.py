"""How beam search finds an output and how byte-pair encoding learns its pieces, as pictures:
:func:`beam_search_picture` (a shipped model's real search, :func:`traced_search`, beside
greedy decoding's) and :func:`bpe_merges_picture` (Sennrich et al. 2016's merges on a toy
corpus, :func:`learn_merges`, and an unseen word cut by them, :func:`segment`).  Both are
drawn in slide px (``canvas.slide_figure``), every text ``TYPE.label`` (22 px) tall."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from itertools import pairwise

import torch
from matplotlib import patches
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from attnlab import decode as D  # the search's own parts: model calls, masks, choice of k
from attnlab.lecture.display import Picture
from attnlab.pictures import canvas
from attnlab.pictures.diagrams import OKABE_ITO, tint
from attnlab.pictures.typography import TYPE, literal
from attnlab.text.subwords import readable
from attnlab.text.vocab import EOS

__all__ = [
    "BEAM_PHRASE",
    "MAX_STEPS",
    "SENNRICH_WORDS",
    "Candidate",
    "Merge",
    "Search",
    "SearchStep",
    "beam_search_picture",
    "bpe_merges_picture",
    "learn_merges",
    "segment",
    "traced_search",
]

#: The beam picture's example (model, English, reference): a string of a held-out package (the
#: split "unseen"), neither in training nor one word from nor inside a training string, that
#: greedy decoding gets wrong and beam search of width 4 writes exactly.  Greedy writes
#: "Valeurs spéciaux": "##i" is the likelier fourth piece, but the ending after it is not;
#: beam 4 keeps "##ial" too, and "Valeurs spéciales" (the adjective agreeing) wins as a whole.
BEAM_PHRASE = ("transformer-en-fr", "Special values", "Valeurs spéciales")


# --------------------------------------------------------------------------- the traced search
@dataclass(frozen=True)
class Candidate:
    """A continuation a search step scored.  pieces: the output so far, its new piece last
    (``<eos>`` when it ends the output); score: total log-probability sum_t log p(y_t | y_<t,
    x); rank: its place among all the step's continuations (0 the best); kept: among the k
    best (live on, or ended by ``<eos>``), else pruned."""

    pieces: tuple[str, ...]
    score: float
    rank: int
    kept: bool

    @property
    def ended(self) -> bool:
        return self.pieces[-1] == EOS


@dataclass(frozen=True)
class SearchStep:
    """Step t (1-based): its best continuations, best first (the k kept, then a few pruned)."""

    t: int
    candidates: tuple[Candidate, ...]


@dataclass(frozen=True)
class Search:
    """A traced search of width ``k``: its steps, every output it ended (pieces without
    ``<eos>`` and total log-probability, best first), and the one it returns (``best``)."""

    k: int
    steps: tuple[SearchStep, ...]
    finished: tuple[tuple[tuple[str, ...], float], ...]
    best: tuple[str, ...]
    best_score: float


def traced_search(model, text: object, k: int, pruned: int = 2) -> Search:
    """Beam search of width ``k`` (k = 1: greedy decoding) on ``text``, step by step.

    The search of :func:`attnlab.decode.beam_search` itself (:func:`attnlab.decode.search_steps`),
    keeping at each step the ``pruned`` best continuations it drops besides the k it keeps.  ``best`` spelt is ``decode(model, text, beam=k).text``.
    """
    D.check_beam(k)
    D.check_text(text, model.src_vocab.level != "char")
    src, _ = D.source_batch(model.src_vocab, [model.prepare(text)])  # (1, n)
    vocab = model.tgt_vocab
    finished: list[tuple[float, list[int]]] = []
    steps = [
        SearchStep(t, _ranked(vocab, beams, logp, k + pruned, k))
        for t, (beams, logp) in enumerate(D.search_steps(model, src, k, finished), start=1)
    ]
    best = max(finished, key=lambda f: f[0])  # the output beam_search returns
    ended = sorted(finished, key=lambda f: -f[0])
    spelt = tuple((tuple(vocab.itos[i] for i in seq), score) for score, seq in ended)
    return Search(k, tuple(steps), spelt, tuple(vocab.itos[i] for i in best[1]), best[0])


def _ranked(vocab, beams, logp: torch.Tensor, shown: int, k: int) -> tuple[Candidate, ...]:
    """The ``shown`` best continuations of the live ``beams``, the first k kept, ranked by
    total log-probability with the stable sort of ``decode._extend`` (ties as it breaks them)."""
    V = logp.shape[-1]
    total = (beams.scores[:, None] + logp).flatten()  # (b * V,)
    values, indices = (v[:shown].tolist() for v in torch.sort(total, descending=True, stable=True))
    best = [(s, i) for s, i in zip(values, indices, strict=True) if s > float("-inf")]
    return tuple(
        Candidate(tuple(vocab.itos[j] for j in [*beams.seqs[i // V], i % V]), s, r, r < k)
        for r, (s, i) in enumerate(best)
    )


# --------------------------------------------------------------------------- drawing in slide px
_WIDTH = 1150  # px on the slide, both pictures: clear of the navigation arrows at the right


def _px_figure(height: float):
    """A slide figure _WIDTH x ``height`` px, a frameless axes over it in px (y down), its sizes."""
    fig, sizes = canvas.slide_figure(_WIDTH, height, layout=None)
    ax = fig.add_axes((0, 0, 1, 1), xlim=(0, _WIDTH), ylim=(height, 0))
    ax.set_axis_off()
    return fig, ax, sizes


@cache
def _text_px(text: str, weight: str = "normal") -> float:
    """How wide ``text`` is on the slide (px) in the pictures' type, ``TYPE.label`` px tall."""
    prop = FontProperties(size=TYPE.label, weight=weight)
    return TextToPath().get_text_width_height_descent(text, prop, ismath=False)[0]


def _fitted(text: str, width: float, weight: str = "normal") -> str:
    """``text`` as drawn (:func:`literal`), cut to fit ``width`` px with an ellipsis."""
    cut = text
    while _text_px(cut, weight) > width and len(cut) > 1:
        cut = cut[:-1]
    return literal(text if cut == text else cut[:-1] + "…")


def _minus(x: float) -> str:
    """``x`` to 2 decimals with a true minus sign (a hyphen reads as a dash)."""
    return f"{x:.2f}".replace("-", "\N{MINUS SIGN}")


# --------------------------------------------------------------------------- beam search picture
MAX_STEPS = 6  # the most steps the beam picture draws (a longer search: its first steps)
GREEDY, BEAM = OKABE_ITO["vermillion"], OKABE_ITO["blue"]
_LANGUAGES = {"de": "German", "fr": "French"}
_HEIGHT = 520
_BOX_H = 2.45 * TYPE.label  # a box: the piece over its log p
_PITCH = _BOX_H + 6  # from one box to the next below it
_LEFT = 110  # the column of the words "kept" and "pruned"


def beam_search_picture(
    model, text: str, beam: int = 4, steps: int | None = None, reference: str | None = None
) -> Picture:
    """Beam search of width ``beam`` on ``text``, one column per output step, beside greedy's.

    Each column holds the ``beam`` prefixes the search keeps (boxes: the prefix's last piece
    over its total log p) and, faded under the dashed line, the best two it prunes; a line
    joins each box to the prefix it extends.  Greedy decoding's path (the likeliest piece at
    every step) is edged in vermillion where its prefixes are among the boxes, the winning
    beam's in blue; the last lines give both outputs and their total log p (with
    ``reference``: whether each is it).  ``steps``: the steps drawn (default all, at most
    :data:`MAX_STEPS`).  Both searches are :func:`traced_search`, so the outputs are
    ``decode(model, text, beam=beam).text`` and ``decode(model, text).text``.
    """
    if not isinstance(beam, int) or isinstance(beam, bool) or not 2 <= beam <= 4:
        raise ValueError(f"the picture shows a beam of width 2 to 4; got {beam!r:.20}")
    if steps is not None and (type(steps) is not int or not 1 <= steps <= MAX_STEPS):
        raise ValueError(f"steps must be None or an int from 1 to {MAX_STEPS}; got {steps!r:.20}")
    wide, narrow = traced_search(model, text, beam), traced_search(model, text, 1)
    columns = wide.steps[: steps or MAX_STEPS]
    join = model.tgt_vocab.join
    outputs = {"beam": join(list(wide.best)), "greedy": join(list(narrow.best)),
               "beam_score": wide.best_score, "greedy_score": narrow.best_score}  # fmt: skip
    task = (getattr(model, "card", None) or {}).get("task", "")
    target = _LANGUAGES.get(task.rpartition("-")[2], task or "the output")
    after = f"” → {target}, beam search with "
    room = _WIDTH - 440 - _text_px(f"{after}k = {beam}")  # the note on the right: 332 px
    title = f"“{_fitted(text, room)}{after}$k = {beam}$"
    # the boxes of each path: every prefix of its output and <eos>
    paths = [{(*o, EOS)[:n] for n in range(1, len(o) + 2)} for o in (narrow.best, wide.best)]

    def draw():
        fig, ax, sizes = _px_figure(_HEIGHT)
        ax.text(4, 16, title, fontsize=sizes.label, va="center")
        ax.text(_WIDTH - 4, 16, r"box: a piece, $\log p$ of all so far", fontsize=sizes.label,
                va="center", ha="right")  # fmt: skip
        _draw_columns(ax, sizes, columns, beam, paths)
        _draw_outputs(ax, sizes, outputs, beam, reference)
        return fig

    summary = (
        f"beam search k = {beam} on {text!r}: {outputs['beam']!r} (log p "
        f"{wide.best_score:.2f}); greedy: {outputs['greedy']!r} (log p {narrow.best_score:.2f})"
    )
    drawn = [[[list(c.pieces), c.score, c.kept] for c in s.candidates] for s in columns]
    inputs = [drawn, title, [list(p) for p in (narrow.best, wide.best)], [*outputs.values()],
              reference]  # fmt: skip
    data = {**outputs, "search": wide, "greedy_search": narrow, "steps": columns}
    return Picture(draw, summary, data, name="beam_search_picture", inputs=inputs,
                   code=(__name__,))  # fmt: skip


def _row_y(rank: int, k: int) -> float:
    """The centre of the box of the rank-th candidate (px down): the pruned below a gap."""
    return 74 + _BOX_H / 2 + rank * _PITCH + (14 if rank >= k else 0)


def _draw_columns(ax, sizes, columns, k: int, paths) -> None:
    """The step headers, the boxes of every column and the lines that join them."""
    greedy, winner = paths
    pitch = (_WIDTH - _LEFT) / len(columns)
    width = min(pitch - 46, 200)
    kept_y = (_row_y(0, k) + _row_y(k - 1, k)) / 2
    ax.text(4, kept_y, "kept", fontsize=sizes.label, va="center")
    ax.text(4, _row_y(k, k), "pruned", fontsize=sizes.label, va="center", color="0.45")
    line_y = (_row_y(k - 1, k) + _row_y(k, k)) / 2
    ax.plot([0, _WIDTH], [line_y, line_y], color="0.6", lw=1.2, ls=(0, (4, 4)))
    where: dict[tuple[str, ...], tuple[float, float]] = {}  # a kept prefix -> its box centre
    for c, step in enumerate(columns):
        x = _LEFT + pitch * (c + 0.5)
        ax.text(x, 50, f"$t = {step.t}$", fontsize=sizes.label, ha="center", va="center")
        here = {}
        for cand in step.candidates:
            y = _row_y(cand.rank, k)
            on = (cand.pieces in greedy, cand.pieces in winner)
            _box(ax, sizes, (x, y), width, cand, on)
            parent = where.get(cand.pieces[:-1])
            if parent is not None:
                _join(ax, (parent[0] + width / 2, parent[1]), (x - width / 2, y), cand, on)
            if cand.kept and not cand.ended:
                here[cand.pieces] = (x, y)
        where = here


def _box(ax, sizes, centre, width: float, cand: Candidate, on: tuple[bool, bool]) -> None:
    """One candidate's box: its last piece over its total log p; faded when pruned, grey when
    it ended the output, edged in the colour of each path it is on."""
    x, y = centre
    faded = not cand.kept
    fill = tint(OKABE_ITO["grey"], 0.75) if cand.ended and cand.kept else "white"
    edges = [colour for colour, yes in zip((GREEDY, BEAM), on, strict=True) if yes]
    for n, colour in enumerate(edges):  # the greedy edge outside the beam's on a shared box
        pad = 5 * (len(edges) - 1 - n)
        ax.add_patch(patches.Rectangle(
            (x - width / 2 - pad, y - _BOX_H / 2 - pad), width + 2 * pad, _BOX_H + 2 * pad,
            facecolor=fill if n == len(edges) - 1 else "none", edgecolor=colour, lw=3.5,
            zorder=3 - 0.1 * n,
        ))  # fmt: skip
    if not edges:
        ax.add_patch(patches.Rectangle(
            (x - width / 2, y - _BOX_H / 2), width, _BOX_H, facecolor=fill,
            edgecolor="0.45" if faded else "0.3", lw=1.5, ls="--" if faded else "-", zorder=3,
        ))  # fmt: skip
    piece = _fitted(readable(list(cand.pieces))[-1], width - 12)
    ax.text(x, y - 0.26 * _BOX_H, piece, fontsize=sizes.label, ha="center", va="center",
            color="0.3" if faded else "black", zorder=4)  # fmt: skip
    ax.text(x, y + 0.24 * _BOX_H, _minus(cand.score), fontsize=sizes.label, ha="center",
            va="center", color="0.35" if faded else "0.25", zorder=4)  # fmt: skip


def _join(ax, start, end, cand: Candidate, on: tuple[bool, bool]) -> None:
    """The line from a prefix's box to its continuation's: in the colour of each path it is on
    (two side by side on a shared stretch), else thin grey (dashed to a pruned box)."""
    (x0, y0), (x1, y1) = start, end
    colours = [colour for colour, yes in zip((GREEDY, BEAM), on, strict=True) if yes]
    if not colours:
        style = {"color": "0.6", "lw": 1.2, "ls": "--"} if not cand.kept else {"color": "0.45"}
        ax.plot([x0, x1], [y0, y1], zorder=1, **{"lw": 1.5, **style})
    for n, colour in enumerate(colours):
        dy = 4 * (2 * n - len(colours) + 1)
        ax.plot([x0, x1], [y0 + dy, y1 + dy], color=colour, lw=3.5, zorder=2)


def _draw_outputs(ax, sizes, outputs: dict, k: int, reference: str | None) -> None:
    """The two outputs, each after a sample of its path's colour, with their total log p."""
    rows = [(BEAM, f"beam, $k = {k}$:", "beam"), (GREEDY, "greedy:", "greedy")]
    for n, (colour, name, key) in enumerate(rows):
        text, score = outputs[key], outputs[f"{key}_score"]
        y = _HEIGHT - 52 + 34 * n
        verdict = ""
        if reference is not None:
            verdict = "   = the reference ✓" if text == reference else "   ≠ the reference ✗"
        score_text = f"log p = {_minus(score)}{verdict}"  # as wide as the typeset line
        ax.plot([4, 44], [y, y], color=colour, lw=5)
        ax.text(56, y, name, fontsize=sizes.label, va="center")
        room = _WIDTH - 4 - 210 - _text_px(score_text) - 30
        ax.text(210, y, _fitted(text, room, "bold"), fontsize=sizes.label, va="center",
                weight="bold")  # fmt: skip
        ax.text(_WIDTH - 4, y, rf"$\log p$ = {_minus(score)}" + verdict, fontsize=sizes.label,
                va="center", ha="right")  # fmt: skip


# --------------------------------------------------------------------------- byte-pair encoding
#: Sennrich et al. (2016)'s example corpus: each word and how often it occurs.
SENNRICH_WORDS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


@dataclass(frozen=True)
class Merge:
    """One merge learned: the adjacent ``pair`` found most often in the corpus, how often
    (``count``: each word's count times the times it holds the pair), and the ``corpus`` after
    it (each word's pieces, in the order of the words)."""

    pair: tuple[str, str]
    count: int
    corpus: tuple[tuple[str, ...], ...]


def _check_words(words: object) -> dict[str, int]:
    """``words`` as a dict; ValueError (one line) unless it maps words to counts of 1 or more."""
    if not isinstance(words, Mapping) or not words:
        raise ValueError(f"BPE needs a dict of words and their counts; got {words!r:.60}")
    for word, count in words.items():
        if not isinstance(word, str) or not word or any(c.isspace() for c in word):
            raise ValueError(f"each word is a string with no space; got {word!r:.40}")
        if type(count) is not int or count < 1:
            raise ValueError(f"each count is an int of at least 1; got {word!r}: {count!r:.20}")
    return dict(words)


def _merged(pieces: tuple[str, ...], pair: tuple[str, str]) -> tuple[str, ...]:
    """``pieces`` with every ``pair`` of neighbours, read left to right, made one piece."""
    out: list[str] = []
    for piece in pieces:
        if out and (out[-1], piece) == pair:  # a piece just merged is never pair[0] again
            out[-1] += piece
        else:
            out.append(piece)
    return tuple(out)


def learn_merges(words: Mapping[str, int], merges: int) -> list[Merge]:
    """The first ``merges`` merges byte-pair encoding learns from ``words`` (word -> count).

    Every word starts as its characters.  One merge: count each adjacent pair of pieces over
    the corpus (a word's pairs as often as the word occurs), take the most frequent (a tie
    goes to the pair met first, reading the words in order, each left to right) and make it
    one piece everywhere.  Fewer merges when every word is one piece.  A toy of the merge
    rule only (Sennrich et al. also mark each word's end): the shipped models' pieces are
    SentencePiece BPE, learned by :func:`attnlab.text.subwords.train_subwords`.
    """
    words = _check_words(words)
    if type(merges) is not int or merges < 0:
        raise ValueError(f"merges is an int of at least 0; got {merges!r:.20}")
    corpus = {word: tuple(word) for word in words}
    learned = []
    for _ in range(merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for word, pieces in corpus.items():
            for pair in pairwise(pieces):
                pairs[pair] += words[word]
        if not pairs:
            break
        best = max(pairs, key=pairs.__getitem__)  # max keeps the first met of a tie
        corpus = {word: _merged(pieces, best) for word, pieces in corpus.items()}
        learned.append(Merge(best, pairs[best], tuple(corpus.values())))
    return learned


def segment(word: str, merges: list[Merge] | list[tuple[str, str]]) -> tuple[str, ...]:
    """``word`` cut into pieces as BPE cuts a word it never saw: its characters, then each of
    ``merges`` applied in the order it was learned."""
    _check_words({word: 1})
    out = tuple(word)
    for merge in merges:
        out = _merged(out, merge.pair if isinstance(merge, Merge) else tuple(merge))
    return out


MAX_MERGES, MAX_WORDS = 6, 5  # the rows and the columns the BPE picture draws at most
_BPE_TITLE = (
    "Byte-pair encoding (Sennrich et al. 2016): merge the most frequent adjacent pair, repeat"
)
_ROW = 50  # px from one row of the corpus to the next
_NEW = tint(OKABE_ITO["sky"], 0.45)  # the fill of a piece the row's merge made


def _piece_width(piece: str) -> float:
    """A piece's box, px: its text and a margin, at least 28 px (an "l" is narrow)."""
    return max(_text_px(literal(piece)) + 20, 28)


def _word_width(pieces) -> float:
    return sum(_piece_width(p) for p in pieces) + 5 * (len(pieces) - 1)


def bpe_merges_picture(
    words: Mapping[str, int] = SENNRICH_WORDS, merges: int = MAX_MERGES, unseen: str = "lowest"
) -> Picture:
    """Byte-pair encoding learning ``merges`` merges on ``words`` (word -> count), one row each.

    The first row is the corpus as characters; each row after it names the merge (the most
    frequent adjacent pair, and its count) and shows every word's pieces after it, the pieces
    it made filled.  The last row cuts ``unseen`` with the merges learned (:func:`segment`).
    A toy of the merge rule (:func:`learn_merges`): the shipped models use SentencePiece BPE
    (:mod:`attnlab.text.subwords`).
    """
    words = _check_words(words)
    if type(merges) is not int or not 1 <= merges <= MAX_MERGES:
        raise ValueError(f"the picture draws 1 to {MAX_MERGES} merges; got {merges!r:.20}")
    if len(words) > MAX_WORDS:
        raise ValueError(f"the picture draws at most {MAX_WORDS} words; got {len(words)}")
    learned = learn_merges(words, merges)
    cut = segment(unseen, learned)
    heads = [f"{literal(word)} ×{count}" for word, count in words.items()]
    columns = [max(_word_width(w), 1.1 * _text_px(h)) for w, h in zip(words, heads, strict=True)]
    names = ["characters", *(f"{a} + {b} → {a}{b}" for a, b in (m.pair for m in learned))]
    left = max(_text_px(literal(n)) for n in [*names, "new word:"]) + 80  # then the counts
    note = f"{literal(unseen)} → {' + '.join(map(literal, cut))}  (the merges, in order)"
    need = max(sum(columns) + 40 * (len(words) - 1), _word_width(cut) + 30 + _text_px(note))
    if left + need > _WIDTH - 8:
        raise ValueError(f"too many letters to draw: {left + need:.0f} px, the picture {_WIDTH}")
    rows = [tuple(tuple(w) for w in words)] + [m.corpus for m in learned]
    height = 96 + _ROW * (len(rows) + 1) + 10

    def draw():
        fig, ax, sizes = _px_figure(height)
        ax.text(4, 16, _BPE_TITLE, fontsize=sizes.label, va="center")
        spare = (_WIDTH - 8 - left - sum(columns)) / max(len(words) - 1, 1)
        xs = [left + sum(columns[:i]) + min(spare, 64) * i for i in range(len(words))]
        for x, head in zip(xs, heads, strict=True):
            ax.text(x, 58, head, fontsize=sizes.label, va="center", weight="bold")
        ax.text(4, 58, "merge", fontsize=sizes.label, va="center")
        ax.text(left - 12, 58, "count", fontsize=sizes.label, va="center", ha="right")
        for n, corpus in enumerate(rows):
            y = 96 + _ROW * n + _ROW / 2 - 4
            ax.text(4, y, literal(names[n]), fontsize=sizes.label, va="center")
            if n:
                ax.text(left - 12, y, str(learned[n - 1].count), fontsize=sizes.label,
                        va="center", ha="right")  # fmt: skip
            for x, before, after in zip(xs, rows[max(n - 1, 0)], corpus, strict=True):
                _pieces(ax, sizes, x, y, after, _made(before, after) if n else ())
        y = 96 + _ROW * len(rows) + _ROW / 2 + 4
        ax.plot([0, _WIDTH], [y - _ROW / 2 - 2] * 2, color="0.6", lw=1.2, ls=(0, (4, 4)))
        ax.text(4, y, "new word:", fontsize=sizes.label, va="center")
        end = _pieces(ax, sizes, xs[0], y, cut, ())
        ax.text(end + 30, y, note, fontsize=sizes.label, va="center")
        return fig

    said = ", ".join(f"{m.pair[0]}+{m.pair[1]} {m.count}" for m in learned)
    summary = (
        f"BPE on {len(words)} words: {len(learned)} merges ({said}); {unseen!r} -> {' '.join(cut)}"
    )
    data = {"merges": learned, "unseen": cut, "words": words}
    drawn = [list(words.items()), [[list(m.pair), m.count] for m in learned], unseen, list(cut)]
    return Picture(draw, summary, data, name="bpe_merges_picture", inputs=drawn,
                   code=(__name__,))  # fmt: skip


def _made(before: tuple[str, ...], after: tuple[str, ...]) -> tuple[int, ...]:
    """The positions in ``after`` of the pieces a merge made of two of ``before``."""
    made, i = [], 0
    for j, piece in enumerate(after):
        joined = piece != before[i]  # a merge only joins two neighbours into one piece
        made += [j] if joined else []
        i += 2 if joined else 1
    return tuple(made)


def _pieces(ax, sizes, x: float, y: float, pieces: tuple[str, ...], made) -> float:
    """A word's pieces as boxes from ``x`` on the line ``y``, those at ``made`` filled: its end."""
    for j, piece in enumerate(pieces):
        w = _piece_width(piece)
        fill = _NEW if j in made else "white"
        ax.add_patch(patches.Rectangle((x, y - 19), w, 38, facecolor=fill, edgecolor="0.3",
                                       lw=1.5))  # fmt: skip
        ax.text(x + w / 2, y, literal(piece), fontsize=sizes.label, ha="center", va="center")
        x += w + 5
    return x - 5
