"""attnlab.pictures.frame_cache: the deck's pictures read from results/frames.zip.

A picture read from the archive must be the picture the code draws now (byte for byte), the
archive must hold every picture a Run-All of the deck shows (else the Run-All draws them:
slow, but never wrong), a changed input or a changed drawing function must be drawn afresh,
and re-executing the deck with ATTNLAB_RECORD_FRAMES=1 replaces the archive with exactly
the pictures it used.
"""

from __future__ import annotations

import sys
import zipfile

import numpy as np
import pytest

import attnlab
from attnlab import lecture
from attnlab.experiments.language import load_results
from attnlab.pictures import canvas, frame_cache
from attnlab.widgets import (
    DecodeStepper,
    PathLengthExplorer,
    PhraseGallery,
    ScaledDotExplorer,
    ScoreLab,
)

REBUILD = "re-execute the deck with ATTNLAB_RECORD_FRAMES=1 (README: Editing the deck)"


def deck_pictures() -> list[bytes]:
    """Every PNG the deck's widgets and cached pictures show, built as the deck builds them."""
    transformer = attnlab.load("transformer-dates")
    language = load_results()
    shown = [
        ScoreLab(),
        DecodeStepper(),
        ScaledDotExplorer(),
        PathLengthExplorer(),
        PhraseGallery("transformer-en-fr", lecture.PREPARED_PHRASES),
        DecodeStepper("transformer-en-fr", text="Show previous version in browser"),
    ]
    pngs = [png for widget in shown for png in widget_pngs(widget)]
    pictures = [
        lecture.positional_encoding_picture(n=40, d=64, at=10),
        lecture.causal_demo(),
        lecture.three_attentions(transformer, "3 May 1979"),
        lecture.alignment_failure(attnlab.load("rnnsearch-reverse-30"), length=45, seed=0),
        lecture.word_order_models(
            [attnlab.load("rnnsearch-en-fr"), attnlab.load("transformer-en-fr")],
            language["word_order"],
        ),
        lecture.alpha_and_occlusion(
            language["alpha_vs_occlusion"]["example"],
            language["alpha_vs_occlusion"]["agreement"],
            language["alpha_vs_occlusion"]["chance"],
        ),
    ]
    return pngs + [p._repr_png_() for p in pictures]


def widget_pngs(widget) -> list[bytes]:
    """Every picture a widget holds (its frames), in a fixed order."""
    found, todo, seen = [], [widget], set()
    while todo:
        w = todo.pop(0)
        if id(w) in seen:
            continue
        seen.add(id(w))
        value = getattr(w, "value", None)
        if isinstance(value, (bytes, memoryview)) and bytes(value):
            found.append(bytes(value))
        todo.extend(getattr(w, "children", ()))
    return found


@pytest.fixture
def counted(monkeypatch):
    """Fresh counts of the pictures read and drawn."""
    counts = frame_cache.Counts()
    monkeypatch.setattr(frame_cache, "counts", counts)
    monkeypatch.delenv(frame_cache.RECORD_ENV, raising=False)
    return counts


def test_the_deck_reads_every_picture_and_each_is_the_one_drawn_now(counted, monkeypatch):
    read = deck_pictures()
    assert counted.drawn == 0, f"{counted.drawn} of the deck's pictures are not stored: {REBUILD}"
    assert counted.read > 100
    monkeypatch.setattr(frame_cache, "_stored", lambda key: None)  # no archive: all drawn
    drawn = deck_pictures()
    assert counted.drawn == counted.read
    assert len(read) == len(drawn)
    stale = [i for i, (a, b) in enumerate(zip(read, drawn, strict=True)) if a != b]
    assert not stale, f"{len(stale)} stored pictures differ from the ones drawn now: {REBUILD}"


def test_a_date_not_stored_is_drawn_not_read(counted):
    lab = ScoreLab(dates=["3 May 1979", "29 Feb 2024"])
    assert (counted.read, counted.drawn) == (1, 1)
    lab.date.value = "29 Feb 2024"
    assert lab.frame.data["text"] == "29 Feb 2024"
    assert lab.png() == lab._picture(lab.decodings)[0]  # the picture of this date, drawn


def test_a_picture_read_from_the_archive_draws_its_figure_only_when_asked(counted):
    picture = lecture.positional_encoding_picture(n=40, d=64, at=10)
    png = picture._repr_png_()
    assert (counted.read, counted.drawn) == (1, 0)
    assert callable(picture._fig)  # no figure was made for the slide
    assert png == canvas.png_bytes(picture.fig, draw=True)
    assert len(picture.fig.axes) >= 3


def test_the_key_says_what_is_drawn():
    key = frame_cache.picture_key
    alpha = np.array([[0.25, 0.75]], dtype=np.float32)
    assert key("x", [alpha]) != key("x", [alpha[:, ::-1]])
    assert key("x", [alpha]) != key("y", [alpha])
    assert key("x", [1]) != key("x", [1.0]) != key("x", ["1"]) != key("x", [[1]])
    assert key("x", ["ab", "c"]) != key("x", ["a", "bc"])
    assert key("x", [np.zeros(4)]) != key("x", [np.zeros((2, 2))])
    # the last bits of float arithmetic differ between CPUs: not a different picture
    assert key("x", [alpha]) == key("x", [alpha.astype(np.float64) + 1e-9])
    assert key("x", [-0.0]) == key("x", [0.0])
    with pytest.raises(TypeError, match="cannot key"):
        key("x", [object()])


def test_a_change_to_the_drawing_code_is_another_key(tmp_path, monkeypatch):
    module = tmp_path / "drawing_for_the_key.py"
    module.write_text("WIDTH = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(frame_cache, "_code_digest", frame_cache._code_digest.__wrapped__)
    before = frame_cache.picture_key("x", [1], code=["drawing_for_the_key"])
    module.write_text("WIDTH = 2\n")
    assert frame_cache.picture_key("x", [1], code=["drawing_for_the_key"]) != before
    assert frame_cache.picture_key("x", [1]) != before
    sys.modules.pop("drawing_for_the_key", None)


def test_recording_keeps_exactly_the_pictures_used(tmp_path, monkeypatch, counted):
    archive = tmp_path / "frames.zip"
    monkeypatch.setattr(frame_cache, "ARCHIVE", archive)
    monkeypatch.setattr(frame_cache, "_recorded", {})
    frame_cache._archive.cache_clear()
    monkeypatch.setenv(frame_cache.RECORD_ENV, "1")
    try:
        assert frame_cache.rendered("a", [1], lambda: b"one") == b"one"
        assert frame_cache.rendered("b", [2], lambda: b"two") == b"two"
        with zipfile.ZipFile(archive) as z:
            assert sorted(z.read(n) for n in z.namelist()) == [b"one", b"two"]
        # a second rebuild that uses "b" only: "b" is read from the archive, "a" is dropped
        monkeypatch.setattr(frame_cache, "_recorded", {})
        frame_cache._archive.cache_clear()
        assert frame_cache.rendered("b", [2], lambda: b"drawn again") == b"two"
        with zipfile.ZipFile(archive) as z:
            names = z.namelist()
        assert names == [frame_cache.picture_key("b", [2])]
        assert not list(tmp_path.glob(".*.tmp"))  # replaced whole (files.write_atomic)
        assert (counted.read, counted.drawn) == (1, 2)
    finally:
        frame_cache._archive.cache_clear()  # the shipped archive again


def test_without_an_archive_every_picture_is_drawn(tmp_path, monkeypatch, counted):
    monkeypatch.setattr(frame_cache, "ARCHIVE", tmp_path / "missing.zip")
    frame_cache._archive.cache_clear()
    try:
        assert frame_cache.rendered("a", [1], lambda: b"png") == b"png"
        assert (counted.read, counted.drawn) == (0, 1)
        assert not (tmp_path / "missing.zip").exists()  # nothing written at Run-All
    finally:
        frame_cache._archive.cache_clear()


def test_the_stored_sequential_steps_are_the_ones_counted_now():
    stored = lecture.sequential_steps(**lecture.measurements.SEQUENTIAL_STEPS)
    counted = lecture.sequential_steps(**lecture.measurements.SEQUENTIAL_STEPS, cached={})
    assert repr(stored) == repr(counted), "results/deck.json is stale: python -m attnlab deck"
    assert stored._repr_html_() == counted._repr_html_()


def test_sequential_steps_not_stored_are_counted(monkeypatch):
    monkeypatch.setattr(lecture.measurements, "graph_depth", lambda out: 7)
    assert lecture.sequential_steps(lengths=[8, 32, 128, 512], d=32).rows[0][1] != "7"  # read
    assert lecture.sequential_steps(lengths=[8, 16], d=32).rows[1] == ["16", "7", "7"]  # counted
