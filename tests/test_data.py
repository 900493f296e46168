"""attnlab.text.tasks (deterministic tasks, every date form) and attnlab.text.vocab
(vocabularies that name unknown characters); the one list of tasks."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from attnlab.text.tasks import (
    BASE_DATE_FORMATS,
    DATE_FORMATS,
    DATE_STYLES,
    TASKS,
    dates,
    format_date,
    reverse,
)
from attnlab.text.vocab import SPECIALS, InvalidInput, Vocab, normalise

REQUIRED_FORMS = [
    "%d %B %Y",
    "%B %d, %Y",
    "%A, %d %B %Y",
    "%A %B %d %Y",
    "%d %b %Y",
    "%b %d %Y",
    "%d/%m/%Y",
    "%d.%m.%Y",
    "%Y/%m/%d",
    "%Y-%m-%d",
]


def test_dates_are_deterministic_in_the_seed():
    assert dates(300, seed=7) == dates(300, seed=7)
    assert dates(300, seed=7) != dates(300, seed=8)


def test_reverse_is_deterministic_in_the_seed():
    assert reverse(200, seed=1) == reverse(200, seed=1)
    assert reverse(200, seed=1) != reverse(200, seed=2)


def test_dates_targets_are_the_iso_form_of_the_source():
    for src, iso in dates(2000, seed=3):
        d = dt.date.fromisoformat(iso)
        assert dt.date(1900, 1, 1) <= d <= dt.date(2099, 12, 31)
        # The source is that date in one of the listed forms.
        written = {format_date(d, fmt, lower) for fmt, lower in DATE_STYLES}
        assert src in written


def test_every_required_form_is_generated_padded_unpadded_and_lower_case():
    assert set(REQUIRED_FORMS) <= set(BASE_DATE_FORMATS) <= set(DATE_FORMATS)
    assert any("%-d" in f for f in DATE_FORMATS)
    srcs = [s for s, _ in dates(5000, seed=0)]
    assert any(re.fullmatch(r"\d \w+ \d{4}", s) for s in srcs)  # "3 May 1979": day unpadded
    assert any(re.fullmatch(r"0\d [A-Z]\w+ \d{4}", s) for s in srcs)  # "03 May 1979"
    assert any(s[0].isalpha() and s == s.lower() for s in srcs)  # "thursday, 3 may 1979"
    assert any(s[0].isupper() for s in srcs)
    # Every (form, case) style is drawn: each has about 5000/len(styles) examples.
    seen = set()
    pairs = dates(5000, seed=0)
    for src, iso in pairs:
        d = dt.date.fromisoformat(iso)
        seen |= {st for st in DATE_STYLES if format_date(d, *st) == src}
    assert seen == set(DATE_STYLES)


def test_padded_forms_agree_with_strftime():
    # English names whatever the locale; in the C locale strftime gives the same text.
    d = dt.date(1979, 5, 3)
    for fmt in BASE_DATE_FORMATS:
        assert format_date(d, fmt) == d.strftime(fmt)
    assert format_date(d, "%-d %B %Y") == "3 May 1979"
    assert format_date(d, "%A, %-d %B %Y", lower=True) == "thursday, 3 may 1979"


@pytest.mark.parametrize("length", [5, 17, 60])
def test_reverse_has_the_requested_length(length):
    for src, tgt in reverse(50, seed=0, length=length):
        assert len(src) == length and src.isdigit() and tgt == src[::-1]


def test_reverse_length_range_is_covered():
    lengths = {len(s) for s, _ in reverse(2000, seed=0, length=(5, 60))}
    assert lengths == set(range(5, 61))


def test_reverse_rejects_a_bad_length():
    with pytest.raises(ValueError):
        reverse(3, length=0)
    with pytest.raises(ValueError):
        reverse(3, length=(10, 5))


def test_vocab_has_the_four_specials_first_and_round_trips():
    v = TASKS["dates"].tgt_vocab
    assert v.itos[:4] == list(SPECIALS) == ["<pad>", "<sos>", "<eos>", "<unk>"]
    assert (v.pad, v.sos, v.eos, v.unk) == (0, 1, 2, 3)
    ids = v.encode("1979-05-03")
    assert min(ids) >= 4 and v.decode(ids) == "1979-05-03"
    assert v.decode([*ids, v.eos, *v.encode("99")]) == "1979-05-03"  # stops at <eos>


def test_unknown_characters_are_named():
    v = TASKS["dates"].src_vocab
    with pytest.raises(InvalidInput) as err:
        v.encode("3 may 1979 xq😀")
    msg = str(err.value)
    assert "'x'" in msg and "'q'" in msg and "😀" in msg and "\n" not in msg
    assert isinstance(err.value, ValueError)
    assert v.unknown("3 may 1979 xq😀") == ["x", "q", "😀"]
    ids = v.encode("3 x", unknown="unk")
    assert ids[-1] == v.unk and len(ids) == 3
    assert v.encode("3 xqx", unknown="unk") == [*v.encode("3 "), v.unk, v.unk, v.unk]
    assert v.unknown("3 xqx") == ["x", "q"] and v.unknown("3") == []
    for mode in ("ignore", "return"):  # only the two modes
        with pytest.raises(ValueError, match="'raise' or 'unk'"):
            v.encode("3", unknown=mode)


def test_special_token_names_are_not_characters_of_the_text():
    v = Vocab("ab")
    assert v.unknown("<") == ["<"]


def test_every_generated_date_is_readable_by_the_dates_vocabulary():
    v = TASKS["dates"].src_vocab
    assert v.lower_only
    for src, _ in dates(3000, seed=11):
        text = normalise(src, v)
        assert len(text) <= TASKS["dates"].max_src_len
        assert v.unknown(text) == []


def test_normalise_strips_collapses_and_lowers():
    v = TASKS["dates"].src_vocab
    assert normalise("  3   MAY\t1979 \n", v) == "3 may 1979"
    assert normalise("AB", Vocab("ABab")) == "AB"  # a vocabulary with capitals keeps them
    for bad in ["", "   ", "\n\t", None, 3]:
        with pytest.raises(InvalidInput):
            normalise(bad, v)


def test_a_vocabulary_holds_its_symbols_characters_or_words():
    chars = Vocab("ab-")
    words = Vocab(["close", "all", "tabs"], level="word")
    assert chars.symbols == ("a", "b", "-") and words.symbols == ("close", "all", "tabs")
    assert words.itos[len(SPECIALS) :] == list(words.symbols) == words.to_list()
    assert Vocab(words.to_list(), level="word") == words  # as a card stores and loads it
    assert Vocab("ab") != Vocab("ba") and Vocab(["a"], level="word") != Vocab("a")
    assert words.encode("Close tabs") == [4, 6] and words.pad == 0 and words.unk == 3


def test_padding_and_the_teacher_forced_input_use_the_vocabularys_pad():
    from attnlab.text.padding import padded, teacher_forced_input

    v = Vocab("ab")
    assert padded([[4, 5, 2], [5, 2]], v.pad).tolist() == [[4, 5, 2], [5, 2, v.pad]]
    assert padded([[4]], v.pad, length=3).tolist() == [[4, v.pad, v.pad]]
    assert teacher_forced_input([[4, 5], []], v).tolist() == [[v.sos, 4, 5], [v.sos, v.pad, v.pad]]


@pytest.mark.parametrize(
    "module", ["attnlab.text.vocab", "attnlab.models.registry", "attnlab.models.catalogue"]
)
def test_the_examples_in_the_docstrings_run(module):
    """A docstring's example that imports a moved name fails here, not in a reader's hands."""
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module), raise_on_error=False)
    assert result.attempted > 0 and result.failed == 0, f"{module}: {result}"


def test_one_list_of_tasks():
    """The catalogue's tasks are the generated tasks and one per corpus language, and the
    training recipes and the language experiment read their languages from it."""
    from attnlab.experiments.language import MODELS
    from attnlab.models import catalogue
    from attnlab.text.corpus import LANGS
    from attnlab.training.config import CORPUS_TASKS

    languages = {t: text.language for t, text in catalogue.TASK_TEXTS.items() if text.language}
    assert set(catalogue.TASK_TEXTS) == set(TASKS) | set(languages)
    assert not set(TASKS) & set(languages) and sorted(languages.values()) == sorted(LANGS)
    assert CORPUS_TASKS == languages
    for m in catalogue.entries():
        assert m.task in catalogue.TASK_TEXTS
        assert MODELS.get(m.name) == languages.get(m.task)
