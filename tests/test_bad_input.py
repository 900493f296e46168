"""A corpus of bad inputs through every public entry point, as a careless or hostile user types.

Each input either works or gives a one-line error of the package's own kind (InvalidInput,
ValueError, CheckpointError, FileNotFoundError raised from attnlab's own code, or argparse's
exit 2 with one error line), never a traceback from inside torch or matplotlib.  Widgets
never raise: they show the error in ``.message``.
"""

from __future__ import annotations

import json
import math
import shutil
import time
import traceback
from pathlib import Path

import pytest

import attnlab
from attnlab.decode import steps
from attnlab.text.vocab import InvalidInput
from attnlab.training import checkpoints
from attnlab.training.checkpoints import CHECKPOINT_DIR, CheckpointError

TEXTS = {
    "works": "3 May 1979",
    "empty": "",
    "blank": "   ",
    "huge": "3 May 1979 " * 2000,
    "unicode digits": "٣ مايو ١٩٧٩",
    "emoji": "3 May 1979 🎉",
    "control characters": "3\x00 May\x07 1979\x1b[31m",
    "right-to-left mark": "\u202e3 May 1979",
    "newline": "3 May 1979\n",
    "mathtext": "$x$",
    "backslash": "\\",
    "html": "<b>3 May</b> 1979",
    "script": "<script>alert(1)</script>",
    "format": "%s%n{0}",
    "nan text": "nan",
    "minus": "-1",
    "big number text": str(10**30),
    "nested brackets": "[" * 1000,
}
NON_TEXTS = {
    "None": None,
    "int": 5,
    "negative": -1,
    "huge int": 10**30,
    "nan": math.nan,
    "bytes": b"3 May 1979",
    "list": ["3 May 1979"],
    "dict": {"text": "3 May 1979"},
}
CORPUS = {**TEXTS, **NON_TEXTS}
OURS = (InvalidInput, CheckpointError, FileNotFoundError, ValueError)


def raised_in_attnlab(err: BaseException) -> bool:
    """The frame that raised ``err`` is attnlab's own code (not torch's, not matplotlib's)."""
    last = traceback.extract_tb(err.__traceback__)[-1]
    return "/attnlab/" in last.filename.replace("\\", "/")


def works_or_says_why(action, *args, **kwargs):
    """Run the entry point: return its value, or check the error it raises is ours."""
    try:
        return action(*args, **kwargs)
    except OURS as err:
        message = str(err)
        assert message and "\n" not in message and len(message) <= 600, repr(message)
        assert raised_in_attnlab(err), traceback.format_exception(err)[-3:]
        return err


@pytest.fixture(scope="module")
def models():
    return {
        name: attnlab.load(name)
        for name in ("rnnsearch-dates", "transformer-dates", "rnnenc-dates")
    }


@pytest.mark.parametrize("text", CORPUS.values(), ids=CORPUS.keys())
def test_translate_and_steps(models, text):
    for model in models.values():
        out = works_or_says_why(model.translate, text)
        got = works_or_says_why(lambda: "".join(s.token for s in steps(model, text)))  # noqa: B023
        assert type(out) is type(got)
        if isinstance(out, str):
            assert out == got and len(out) <= model.max_tgt_len
            assert not any(special in out for special in ("<sos>", "<pad>", "<unk>", "<eos>"))
        else:
            assert str(out) == str(got)
    for model in models.values():  # a bad input before leaves the model working
        assert model.translate(TEXTS["works"]) == "1979-05-03"


@pytest.mark.parametrize("beam", [0, -1, 10**6, 2.5, "3", True, math.nan])
def test_a_bad_beam_width_is_refused_in_one_line(models, beam):
    result = works_or_says_why(models["rnnsearch-dates"].translate, "3 May 1979", beam=beam)
    assert isinstance(result, ValueError) and "beam width" in str(result), result


@pytest.mark.parametrize("beam", [None, 1, 3, 64])
def test_a_good_beam_width_translates(models, beam):
    assert models["rnnsearch-dates"].translate("3 May 1979", beam=beam) == "1979-05-03"


# --------------------------------------------------------------------------- loading
UNKNOWN = (ValueError, "unknown model")
NOT_FOUND = (FileNotFoundError, "checkpoint card not found")
NUL = (ValueError, "has no NUL character")
NOT_A_NAME = (ValueError, "a checkpoint is a name or a path; got ")
# Each bad name, the error it gets, and the words of its one line (the name's own fault).
NAMES = {
    "empty": ("", UNKNOWN),
    "unknown": ("rnnsearch-klingon", UNKNOWN),
    "traversal": ("../../etc/passwd", NOT_FOUND),
    "absolute": ("/etc/passwd", NOT_FOUND),
    "nul": ("rnnsearch-dates\x00", NUL),
    "huge": ("x" * 10_000, UNKNOWN),
    "mathtext": ("$x$", UNKNOWN),
    "missing path": (Path("/nonexistent/model.json"), NOT_FOUND),
    "nul path": ("folder/a\x00.json", NUL),
    "folder path": ("src/", UNKNOWN),
    "None": (None, NOT_A_NAME),
    "int": (5, NOT_A_NAME),
    "list": (["rnnsearch-dates"], NOT_A_NAME),
}


@pytest.mark.parametrize("name, refusal", NAMES.values(), ids=NAMES.keys())
def test_load_names(name, refusal):
    kind, words = refusal
    err = works_or_says_why(attnlab.load, name)
    assert type(err) is kind and words in str(err), repr(err)
    if refusal is UNKNOWN:  # and the names that exist
        assert "; choose one of rnnenc-dates, " in str(err), str(err)
    elif refusal is NOT_FOUND:  # the path it looked for
        assert str(err).endswith(f"{str(name).removesuffix('.json')}.json"), str(err)
    elif refusal is NOT_A_NAME:
        assert str(err).endswith(f"got {type(name).__name__}"), str(err)


def crafted_cards() -> dict:
    card = json.loads((CHECKPOINT_DIR / "rnnenc-dates.json").read_text())

    def signed(**change):
        body = {**card, **change}
        return {**body, "checksum": checkpoints.checksum(body)}

    swapped = list(card["tgt_vocab"])
    swapped[0], swapped[1] = swapped[1], swapped[0]
    return {
        "empty file": "",
        "null": "null",
        "list": "[]",
        "string": '"rnnenc"',
        "nested": "[" * 100_000,
        "huge": json.dumps({"pad": "x" * 1_500_000}),
        "not utf-8": b"\xff\xfe\x00",
        "swapped vocabulary": {**card, "tgt_vocab": swapped},
        "deleted checksum": {k: v for k, v in card.items() if k != "checksum"},
        "negative size": signed(config={**card["config"], "emb": -1}),
        "huge size": signed(config={**card["config"], "dec_hidden": 10**30}),
        "nan size": signed(config={**card["config"], "emb": "NaN"}),
        "million layers": signed(config={**card["config"], "num_layers": 10**6}),
        "kind transformer, rnn config": signed(kind="transformer"),
        "weights elsewhere": signed(weights_file="/etc/passwd"),
    }


@pytest.mark.parametrize("damage", crafted_cards().items(), ids=crafted_cards().keys())
def test_load_damaged_or_crafted_cards(tmp_path, damage):
    _, content = damage
    shutil.copy(checkpoints.weights_path("rnnenc-dates"), tmp_path)
    path = tmp_path / "rnnenc-dates.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    err = works_or_says_why(attnlab.load, "rnnenc-dates", tmp_path)
    assert isinstance(err, CheckpointError) and "rnnenc-dates" in str(err)


@pytest.mark.parametrize("weights", [b"", b"\x00" * 8, b"\xff" * 100, b"{}" * 10])
def test_load_damaged_weights(tmp_path, weights):
    shutil.copy(CHECKPOINT_DIR / "rnnenc-dates.json", tmp_path)
    (tmp_path / checkpoints.weights_path("rnnenc-dates").name).write_bytes(weights)
    err = works_or_says_why(attnlab.load, "rnnenc-dates", tmp_path)
    assert isinstance(err, CheckpointError)


# --------------------------------------------------------------------------- the training CLI
# Its bad arguments (typed, unicode, control characters, markup) are tests/test_train.py's
# BAD_ARGS: each must be refused before training with one error line naming the option.


# --------------------------------------------------------------------------- widgets
@pytest.fixture(scope="module")
def widgets(models):
    from attnlab.widgets import DecodeStepper, ScaledDotExplorer, ScoreLab

    return {
        "DecodeStepper": DecodeStepper(models["rnnsearch-dates"]),
        "ScaledDotExplorer": ScaledDotExplorer(model=models["transformer-dates"]),
        "ScoreLab": ScoreLab(models={"additive": models["rnnsearch-dates"]}, dates=["3 May 1979"]),
    }


@pytest.mark.parametrize("text", TEXTS.values(), ids=TEXTS.keys())
def test_widget_text_boxes_show_errors_and_never_raise(widgets, text):
    for name, widget in widgets.items():
        if name == "ScaledDotExplorer":
            widget.mode.value = widget.mode.options[1]  # the trained mode reads the text box
        widget.text.value = text  # raises nothing
        assert "\n" not in widget.message
        if text == "3 May 1979":
            assert widget.message == "", (name, widget.message)
        assert "<b>" not in widget.message_box.value and "<script>" not in widget.message_box.value


@pytest.mark.parametrize("text", CORPUS.values(), ids=CORPUS.keys())
def test_decode_stepper_constructor(models, text):
    from attnlab.widgets import DecodeStepper

    widget = DecodeStepper(models["rnnsearch-dates"], text=text)
    assert "\n" not in widget.message
    if text == "3 May 1979":
        assert widget.message == "" and widget.translation == "1979-05-03"


@pytest.mark.parametrize("model", ["", "nonexistent", "$x$", "../../etc/passwd", 5, None])
def test_widgets_given_a_bad_model_show_a_message(model):
    from attnlab.widgets import DecodeStepper

    widget = DecodeStepper(model)
    if model is not None:
        assert widget.message and "\n" not in widget.message


@pytest.mark.parametrize("n", [0, 17, 2.5, "8", None])
def test_scaled_dot_explorer_refuses_a_bad_number_of_vectors_in_one_line(models, n):
    from attnlab.widgets import ScaledDotExplorer

    with pytest.raises(ValueError, match=r"^n must be an int in 1\.\.16") as info:
        ScaledDotExplorer(n=n, model=models["transformer-dates"])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    "value, n, k", [(0, 4, 2), (-1, 4, 2), (10**30, 32, 6), (math.nan, 4, 2), (2.5, 4, 2)]
)
def test_path_length_explorer_takes_the_nearest_length_and_kernel(value, n, k):
    from attnlab.widgets import PathLengthExplorer

    widget = works_or_says_why(PathLengthExplorer, n=value, k=value)
    assert widget.message == "" and (widget.n_slider.value, widget.k_slider.value) == (n, k)
    assert widget.graphs["cnn"].n == n and widget.graphs["cnn"].k == k  # the frame shown


def test_score_lab_given_bad_dates_shows_a_message(models):
    from attnlab.widgets import ScoreLab

    bad = [TEXTS[k] for k in ("empty", "emoji", "mathtext", "html", "huge")]
    widget = ScoreLab(models={"additive": models["rnnsearch-dates"]}, dates=["3 May 1979", *bad])
    assert widget.message and "\n" not in widget.message


# --------------------------------------------------------------------------- typed-text caps
#: Typed text over the caps (attnlab.decode.check_text) and the words of our own refusal.
OVER_THE_CAPS = {
    "a 20,000-character word": ("x" * 20_000, "Too long: 20000 characters; type at most 200."),
    "a 300-character word": ("close " + "x" * 300, "Too long"),
    "a 60-character word": ("close " + "x" * 60, "A word of 60 characters is too long"),
    "a lone surrogate": ("close \ud800 tab", "lone surrogate"),
    "201 characters of words": ("close tab " * 20 + "x", "type at most 200"),
}


@pytest.fixture(scope="module")
def word_model():
    return attnlab.load("transformer-en-fr")


@pytest.mark.parametrize(("text", "words"), OVER_THE_CAPS.values(), ids=OVER_THE_CAPS.keys())
def test_decode_refuses_text_over_the_caps_in_one_line_of_its_own(word_model, text, words):
    from attnlab.decode import decode

    start = time.perf_counter()
    err = works_or_says_why(decode, word_model, text)
    assert isinstance(err, InvalidInput) and words in str(err), err
    assert "\ud800" not in str(err)  # what the message line shows is drawable text
    assert time.perf_counter() - start < 1.0


def test_the_word_cap_leaves_a_character_model_its_long_runs_of_digits():
    reverse = attnlab.load("rnnsearch-reverse")
    digits = "1234567890" * 5  # 50 characters, one "word": read one digit at a time
    assert len(reverse.translate(digits)) > 0
    assert works_or_says_why(reverse.translate, "1" * 201).args[0].startswith("Too long")


@pytest.mark.parametrize("widget_class", ["DecodeStepper", "HeadView"])
def test_the_widgets_refuse_text_over_the_caps_in_one_line_of_their_own(word_model, widget_class):
    import attnlab.widgets

    widget = getattr(attnlab.widgets, widget_class)(word_model, text="close all tabs")
    assert widget.message == "", widget.message
    for text, words in OVER_THE_CAPS.values():
        start = time.perf_counter()
        widget.text.value = text
        assert words in widget.message and "\n" not in widget.message, widget.message
        assert "\ud800" not in widget.message_box.value
        assert time.perf_counter() - start < 1.0, (widget_class, text[:20])
    widget.text.value = "close all tabs"  # and it still reads good text
    assert widget.message == ""
