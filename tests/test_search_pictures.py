"""Beam search drawn from a shipped model's real decoding, and byte-pair encoding on a toy corpus
(attnlab.lecture.search_pictures): what the pictures say is what the code does."""

import itertools

import pytest
import torch
from matplotlib.patches import Rectangle
from matplotlib.text import Text

import attnlab
from attnlab.decode import allowed_tokens, decode, decode_batch
from attnlab.lecture.display import OUTPUT_AREA_PX, Picture
from attnlab.lecture.search_pictures import (
    BEAM,
    BEAM_PHRASE,
    GREEDY,
    MAX_STEPS,
    SENNRICH_WORDS,
    Merge,
    beam_search_picture,
    bpe_merges_picture,
    learn_merges,
    segment,
    traced_search,
)
from attnlab.pictures import typography
from attnlab.text import seen
from attnlab.text.corpus import load_corpus
from attnlab.text.vocab import InvalidInput

NAME, PHRASE, REFERENCE = BEAM_PHRASE


@pytest.fixture(scope="module")
def model():
    return attnlab.load(NAME)


@pytest.fixture(scope="module")
def picture(model):
    return beam_search_picture(model, PHRASE, reference=REFERENCE)


# --------------------------------------------------------------------------- shared checks
def _texts(fig) -> list[tuple[str, object]]:
    """(text, its box in the PNG's px) of every text the figure draws (drawn first)."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [
        (t.get_text(), t.get_window_extent(renderer))
        for t in fig.findobj(Text)
        if t.get_visible() and t.get_text().strip()
    ]


def _readable_on_a_slide(fig) -> None:
    """Every text at least 22 px tall at the size the slide shows it (its own px: it fits the
    output area of a 1280x720 slide), inside the picture, and no two texts overlapping."""
    width, height = fig.get_figwidth() * fig.dpi, fig.get_figheight() * fig.dpi
    assert width <= OUTPUT_AREA_PX and width <= 1200 and height <= 520
    px, text = typography.smallest_text(fig, width)
    assert px == typography.TYPE.label >= typography.MIN_LABEL_PX >= 22, text  # nothing smaller
    boxes = _texts(fig)
    for text, box in boxes:
        assert box.x0 >= 0 and box.y0 >= 0 and box.x1 <= width and box.y1 <= height, text
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), (a, b)


def _inside_boxes(fig) -> int:
    """Every text whose centre lies in a drawn box fits in it; returns how many do."""
    texts = _texts(fig)
    rects = [p.get_window_extent() for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    inside = 0
    for text, box in texts:
        cx, cy = (box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2
        for rect in rects:
            if rect.x0 <= cx <= rect.x1 and rect.y0 <= cy <= rect.y1:
                assert rect.x0 <= box.x0 and box.x1 <= rect.x1, text
                assert rect.y0 <= box.y0 and box.y1 <= rect.y1, text
                inside += 1
                break
    return inside


def _one_line_error(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert message and "\n" not in message and "Traceback" not in message
    return message


# --------------------------------------------------------------------------- the traced search
@pytest.mark.parametrize("text", [PHRASE, "Hide this warning", "Delete news", "Save"])
def test_traced_search_returns_what_decode_writes(model, text):
    for k in (1, 4):
        search = traced_search(model, text, k)
        assert model.tgt_vocab.join(list(search.best)) == decode(model, text, beam=k).text
        assert search.finished[0] == (search.best, search.best_score)  # the best ended first
        for step in search.steps:
            kept = [c for c in step.candidates if c.kept]
            assert len(kept) == min(k, len(step.candidates))
            assert [c.rank for c in step.candidates] == list(range(len(step.candidates)))
            scores = [c.score for c in step.candidates]
            assert scores == sorted(scores, reverse=True)
            assert len(step.candidates) <= k + 2  # the k kept and the best two pruned


def test_greedy_is_the_search_of_width_one_and_keeps_the_likeliest_piece(model):
    greedy = traced_search(model, PHRASE, 1)
    assert model.tgt_vocab.join(list(greedy.best)) == decode(model, PHRASE).text
    for step in greedy.steps:
        assert step.candidates[0].kept and not any(c.kept for c in step.candidates[1:])


def _total_log_p(model, text: str, pieces: tuple[str, ...]) -> float:
    """sum_t log p(y_t | y_<t, x) of ``pieces`` and the <eos> after them, read back in one
    teacher-forced pass (not the search's own sums)."""
    vocab = model.tgt_vocab
    ids = [vocab.stoi[p] for p in pieces]
    batch = decode_batch(model, [model.prepare(text)], outputs=[ids])
    logits = batch.logits[0, : len(ids) + 1].masked_fill(~allowed_tokens(vocab), float("-inf"))
    logp = torch.log_softmax(logits, dim=-1)
    return float(logp[torch.arange(len(ids) + 1), [*ids, vocab.eos]].sum())


def test_the_log_probabilities_are_the_models(model):
    for k in (1, 4):
        search = traced_search(model, PHRASE, k)
        for pieces, score in search.finished:
            assert score == pytest.approx(_total_log_p(model, PHRASE, pieces), abs=1e-4)


def test_traced_search_refuses_what_decode_refuses(model):
    with pytest.raises(ValueError, match="beam width"):
        traced_search(model, PHRASE, 0)
    with pytest.raises(InvalidInput):
        traced_search(model, "x" * 300, 4)


# --------------------------------------------------------------------------- the example
def test_the_example_is_held_out_and_greedy_loses_to_beam_four(model):
    """The rule that found it: a string of the held-out packages, 1 to 4 words, that greedy
    gets wrong and beam 4 writes exactly as the reference; greedy's output is one beam 4 ends
    too, with a lower total, though its piece was the likelier where the two parted; and it is
    new: not in training, not one word from a training string, not inside one."""
    assert (PHRASE, REFERENCE) in load_corpus(NAME.rsplit("-", 1)[-1])["unseen"]
    told = seen.verdict(seen.seen_index(NAME.rsplit("-", 1)[-1]), PHRASE)
    assert told.kind == "new" and told.string is None, told.line
    assert 1 <= len(PHRASE.split()) <= 4
    greedy, beam = decode(model, PHRASE).text, decode(model, PHRASE, beam=4).text
    assert greedy != REFERENCE and beam == REFERENCE
    narrow, wide = traced_search(model, PHRASE, 1), traced_search(model, PHRASE, 4)
    ended = dict(wide.finished)
    assert narrow.best in ended and ended[narrow.best] == pytest.approx(narrow.best_score)
    assert wide.best_score > narrow.best_score
    parted = next(t for t, (g, b) in enumerate(zip(narrow.best, wide.best, strict=False)) if g != b)
    assert parted >= 1  # the same first piece: greedy's wrong turn is later
    at = {c.pieces: c.score for c in wide.steps[parted].candidates}
    assert at[narrow.best[: parted + 1]] > at[wide.best[: parted + 1]]  # locally likelier
    assert len(wide.steps) <= MAX_STEPS


# --------------------------------------------------------------------------- beam search picture
def test_beam_picture_outputs_are_decodes(model, picture):
    assert isinstance(picture, Picture)
    assert picture.data["beam"] == decode(model, PHRASE, beam=4).text == REFERENCE
    assert picture.data["greedy"] == decode(model, PHRASE).text
    assert picture.data["beam_score"] > picture.data["greedy_score"]
    shown = {t.get_text() for t in picture.fig.findobj(Text)}
    assert {picture.data["beam"], picture.data["greedy"]} <= shown
    assert f"−{-picture.data['beam_score']:.2f}" in " ".join(shown)
    assert f"−{-picture.data['greedy_score']:.2f}" in " ".join(shown)
    assert repr(picture).startswith(f"beam search k = 4 on '{PHRASE}': '{REFERENCE}'")


def test_beam_picture_draws_every_kept_and_two_pruned_per_step(picture):
    steps = picture.data["steps"]
    assert len(steps) == len(picture.data["search"].steps) <= MAX_STEPS
    for step in steps:
        assert sum(c.kept for c in step.candidates) == 4
        assert sum(not c.kept for c in step.candidates) <= 2
    shown = [t.get_text() for t in picture.fig.findobj(Text)]
    assert [s for s in shown if s.startswith("$t = ")] == [f"$t = {s.t}$" for s in steps]
    drawn = len([s for s in shown if s.startswith("−") and "log" not in s])
    assert drawn == sum(len(s.candidates) for s in steps)  # one log p per box


def _edged(fig, colour) -> int:
    from matplotlib.colors import to_rgba

    return sum(
        1
        for p in fig.axes[0].patches
        if isinstance(p, Rectangle) and p.get_edgecolor() == to_rgba(colour)
    )


def test_beam_picture_marks_greedys_path_and_the_winners(picture):
    greedy, wide = picture.data["greedy_search"], picture.data["search"]
    fig = picture.fig
    # one box per piece of each output and its <eos>, all in view for this example
    assert _edged(fig, GREEDY) == len(greedy.best) + 1
    assert _edged(fig, BEAM) == len(wide.best) + 1


def test_beam_picture_is_readable_and_fits_the_slide(picture):
    _readable_on_a_slide(picture.fig)
    assert _inside_boxes(picture.fig) >= 2 * sum(len(s.candidates) for s in picture.data["steps"])


def test_beam_picture_is_the_same_png_every_time(model, picture):
    again = beam_search_picture(model, PHRASE, reference=REFERENCE)
    assert again._repr_png_() == picture._repr_png_()
    assert picture._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"


def test_beam_picture_draws_the_first_steps_of_a_longer_search(model):
    short = beam_search_picture(model, "Hide this warning", steps=2)
    assert len(short.data["steps"]) == 2
    assert short.data["beam"] == decode(model, "Hide this warning", beam=4).text
    _readable_on_a_slide(short.fig)


def test_beam_picture_fits_a_long_text_and_a_stuttering_output():
    german = attnlab.load("transformer-en-de")  # its greedy output stutters on this string
    picture = beam_search_picture(german, "Enable Two-Factor Authentication")
    assert picture.data["greedy"].count("Faktor") > 5  # greedy stutters: "-Faktor-Faktor-..."
    _readable_on_a_slide(picture.fig)
    shown = [t.get_text() for t in picture.fig.findobj(Text)]
    assert shown.count(picture.data["beam"]) == 1  # in full
    cut = [s for s in shown if s.startswith("Zwei-Faktor-Faktor")]
    assert len(cut) == 1 and cut[0].endswith("…")


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"beam": 1}, "width 2 to 4"),
        ({"beam": 5}, "width 2 to 4"),
        ({"beam": True}, "width 2 to 4"),
        ({"steps": 0}, "steps must be"),
        ({"steps": MAX_STEPS + 1}, "steps must be"),
        ({"steps": 2.5}, "steps must be"),
    ],
)
def test_beam_picture_refuses_bad_arguments_in_one_line(model, kwargs, says):
    with pytest.raises(ValueError) as err:
        beam_search_picture(model, PHRASE, **kwargs)
    assert says in _one_line_error(err)


# --------------------------------------------------------------------------- byte-pair encoding
def test_learn_merges_on_sennrichs_corpus():
    """By hand, counts low 5, lower 2, newest 6, widest 3: e+s occurs in newest and widest,
    6 + 3 = 9; s+t also 9 but e+s is met first; w+e 2 + 6 = 8; l+o and o+w 5 + 2 = 7.  Then
    es+t 9; l+o 7 (met before o+w); lo+w 7; n+e and e+w and w+est 6: n+e, met first; ne+w 6."""
    merges = learn_merges(SENNRICH_WORDS, 6)
    assert [(m.pair, m.count) for m in merges] == [
        (("e", "s"), 9),
        (("es", "t"), 9),
        (("l", "o"), 7),
        (("lo", "w"), 7),
        (("n", "e"), 6),
        (("ne", "w"), 6),
    ]
    assert merges[0].corpus == (
        ("l", "o", "w"),
        ("l", "o", "w", "e", "r"),
        ("n", "e", "w", "es", "t"),
        ("w", "i", "d", "es", "t"),
    )
    assert merges[-1].corpus == (
        ("low",),
        ("low", "e", "r"),
        ("new", "est"),
        ("w", "i", "d", "est"),
    )
    for merge in merges:  # a merge only joins pieces: every word is still spelt the same
        assert ["".join(p) for p in merge.corpus] == list(SENNRICH_WORDS)


def test_a_merge_joins_the_pair_left_to_right_and_ties_go_to_the_pair_met_first():
    assert learn_merges({"aaaa": 1}, 1)[0].corpus == (("aa", "aa"),)
    assert learn_merges({"ab": 1, "ba": 1}, 1)[0].pair == ("a", "b")
    assert learn_merges({"ba": 1, "ab": 1}, 1)[0].pair == ("b", "a")
    assert learn_merges({"ab": 1, "ba": 2}, 1)[0].pair == ("b", "a")  # the count first


def test_learning_stops_when_every_word_is_one_piece():
    merges = learn_merges({"ab": 3, "c": 1}, 5)
    assert merges == [Merge(("a", "b"), 3, (("ab",), ("c",)))]
    assert learn_merges(SENNRICH_WORDS, 0) == []
    assert len(learn_merges(SENNRICH_WORDS, 100)) == 12  # 3 + 5 + 6 + 6 letters, 4 words


def test_segment_cuts_an_unseen_word_with_the_merges_in_order():
    merges = learn_merges(SENNRICH_WORDS, 6)
    assert segment("lowest", merges) == ("low", "est")
    assert segment("newer", merges) == ("new", "e", "r")
    assert segment("xyz", merges) == ("x", "y", "z")  # letters never seen stay letters
    assert segment("lowest", [("l", "o"), ("lo", "w")]) == ("low", "e", "s", "t")
    assert segment("lowest", []) == tuple("lowest")


@pytest.mark.parametrize(
    ("words", "says"),
    [
        ({}, "a dict of words"),
        ([("low", 5)], "a dict of words"),
        ({"low": 0}, "at least 1"),
        ({"low": 2.5}, "at least 1"),
        ({"low": True}, "at least 1"),
        ({"lo w": 1}, "no space"),
        ({"": 1}, "no space"),
        ({5: 1}, "no space"),
    ],
)
def test_bad_words_give_one_line_of_our_own(words, says):
    with pytest.raises(ValueError) as err:
        learn_merges(words, 3)
    assert says in _one_line_error(err)


def test_bad_merges_and_words_to_draw_give_one_line_of_our_own():
    for merges in (-1, "3", None):
        with pytest.raises(ValueError) as err:
            learn_merges(SENNRICH_WORDS, merges)
        assert "merges" in _one_line_error(err)
    for merges in (0, 7, 2.0):
        with pytest.raises(ValueError) as err:
            bpe_merges_picture(merges=merges)
        assert "1 to 6 merges" in _one_line_error(err)
    with pytest.raises(ValueError) as err:
        bpe_merges_picture({w: 1 for w in ["a", "b", "c", "d", "e", "f"]})
    assert "at most 5 words" in _one_line_error(err)
    with pytest.raises(ValueError) as err:
        bpe_merges_picture({"supercalifragilistic": 2, "expialidocious": 1, "antidis": 1})
    assert "too many letters" in _one_line_error(err)
    with pytest.raises(ValueError) as err:
        bpe_merges_picture(unseen="two words")
    assert "no space" in _one_line_error(err)


def test_bpe_picture_shows_every_merge_and_the_unseen_word():
    picture = bpe_merges_picture()
    assert [m.pair for m in picture.data["merges"]] == [
        m.pair for m in learn_merges(SENNRICH_WORDS, 6)
    ]
    assert picture.data["unseen"] == ("low", "est")
    shown = [t.get_text() for t in picture.fig.findobj(Text)]
    assert [s for s in shown if "→" in s and "+" in s][:6] == [
        "e + s → es",
        "es + t → est",
        "l + o → lo",
        "lo + w → low",
        "n + e → ne",
        "ne + w → new",
    ]
    assert "lowest → low + est  (the merges, in order)" in shown
    # every piece of every row is a box with its text: characters (20) and each merge's row
    rows = [("l", "o", "w", "l", "o", "w", "e", "r", *"newest", *"widest")]
    rows += [sum(m.corpus, ()) for m in picture.data["merges"]]
    pieces = sum(len(r) for r in rows) + 2  # and "low", "est" of the unseen word
    assert _inside_boxes(picture.fig) == pieces
    # the pieces a row's merge made are filled, the others white
    filled = [p for p in picture.fig.axes[0].patches if p.get_facecolor()[:3] != (1, 1, 1)]
    made = sum(
        r.count("".join(m.pair)) for r, m in zip(rows[1:], picture.data["merges"], strict=True)
    )
    assert len(filled) == made == 2 + 2 + 2 + 2 + 1 + 1
    assert repr(picture) == (
        "BPE on 4 words: 6 merges (e+s 9, es+t 9, l+o 7, lo+w 7, n+e 6, ne+w 6); "
        "'lowest' -> low est"
    )


def test_bpe_picture_is_readable_and_the_same_png_every_time():
    picture = bpe_merges_picture()
    _readable_on_a_slide(picture.fig)
    assert bpe_merges_picture()._repr_png_() == picture._repr_png_()
    fewer = bpe_merges_picture({"hug": 10, "pug": 5, "pun": 12, "bun": 4, "hugs": 5}, 4, "bug")
    _readable_on_a_slide(fewer.fig)
    assert fewer.data["unseen"] == ("b", "ug")
