"""The deck has one source: notebooks/07_attention.ipynb and its jupytext pair agree.

The notebook (with its stored outputs, for nbval and the slideshow) and the py:percent file
(for reading and reviewing diffs) are two views of the same cells; `jupytext --sync` keeps
them one.  These tests read both through jupytext and compare what the text file holds of
each cell: its type, its source and its metadata (slide type, tags).  Timestamps play no part.
"""

from __future__ import annotations

import re
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
DECK = ROOT / "notebooks" / "07_attention.ipynb"
PAIR = DECK.with_suffix(".py")
FORMAT = "py:percent"
# What the slideshow needs from the notebook's own metadata, kept in the text file too.
NOTEBOOK_KEYS = ("kernelspec", "rise")


def as_text_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """``nb`` as the py:percent file would hold it (jupytext's own metadata filters)."""
    return jupytext.reads(jupytext.writes(nb, fmt=FORMAT), fmt=FORMAT)


def differences(notebook: nbformat.NotebookNode, text: nbformat.NotebookNode) -> list[str]:
    """Where the cells (type, source, metadata) or the slideshow settings of the two differ."""
    expected = as_text_notebook(notebook)
    found: list[str] = []
    for key in NOTEBOOK_KEYS:
        if expected.metadata.get(key) != text.metadata.get(key):
            found.append(f"notebook metadata {key!r} differs")
    if len(expected.cells) != len(text.cells):
        found.append(f"{len(expected.cells)} cells in the notebook, {len(text.cells)} in the text")
    for i, (a, b) in enumerate(zip(expected.cells, text.cells, strict=False)):
        first_line = (a.source.splitlines() or [""])[0][:60]
        for field in ("cell_type", "source", "metadata"):
            if a[field] != b[field]:
                found.append(f"cell {i} ({first_line!r}): {field} differs")
    return found


@pytest.fixture(scope="module")
def notebook() -> nbformat.NotebookNode:
    return jupytext.read(DECK)


@pytest.fixture(scope="module")
def text() -> nbformat.NotebookNode:
    return jupytext.read(PAIR)


def test_the_deck_is_paired_with_a_py_percent_file(notebook, text):
    assert notebook.metadata["jupytext"]["formats"] == "ipynb,py:percent"
    assert text.metadata["jupytext"]["formats"] == "ipynb,py:percent"


def test_the_notebook_and_its_text_file_hold_the_same_cells(notebook, text):
    found = differences(notebook, text)
    assert not found, (
        "notebooks/07_attention.ipynb and notebooks/07_attention.py disagree; run "
        "`.venv/bin/jupytext --sync notebooks/07_attention.ipynb` (the newer file wins):\n"
        + "\n".join(found[:10])
    )


def test_a_changed_source_slide_type_or_tag_is_found(notebook):
    text = jupytext.reads(jupytext.writes(notebook, fmt=FORMAT), fmt=FORMAT)
    assert differences(notebook, text) == []
    code = next(i for i, c in enumerate(text.cells) if c.cell_type == "code")
    tagged = next(i for i, c in enumerate(text.cells) if c.metadata.get("tags"))
    slide = next(i for i, c in enumerate(text.cells) if "slideshow" in c.metadata)
    text.cells[code].source += "\n1 + 1"
    text.cells[tagged].metadata["tags"] = []
    text.cells[slide].metadata["slideshow"] = {"slide_type": "fragment"}
    found = " ".join(differences(notebook, text))
    assert f"cell {code} " in found and "source differs" in found
    assert f"cell {tagged} " in found and f"cell {slide} " in found
    assert "metadata differs" in found
    del text.cells[-1]
    assert any("cells in the notebook" in d for d in differences(notebook, text))


def test_the_notebook_keeps_its_stored_outputs_for_nbval(notebook):
    """Executed in order, top to bottom, with the outputs stored (nbval compares them)."""
    counts = [c.execution_count for c in notebook.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))
    assert sum(bool(c.outputs) for c in notebook.cells if c.cell_type == "code") > len(counts) / 2


def test_test_markers_live_in_tags_only(notebook):
    """No cell shows scaffolding written for the tests: nbval markers are tags."""
    for cell in notebook.cells:
        assert not re.search(r"NBVAL", cell.source, re.IGNORECASE), cell.source[:80]
        for tag in cell.metadata.get("tags", []):
            assert tag.startswith("nbval-") or tag in ("remove-input",), tag


def _slides(notebook) -> list[list[nbformat.NotebookNode]]:
    """The cells of each slide and subslide, in order."""
    slides: list[list[nbformat.NotebookNode]] = []
    for cell in notebook.cells:
        kind = cell.metadata.get("slideshow", {}).get("slide_type", "-")
        if kind == "skip":
            continue
        if kind in ("slide", "subslide") or not slides:
            slides.append([])
        slides[-1].append(cell)
    return slides


def test_every_slide_has_speaker_notes(notebook):
    for cells in _slides(notebook):
        kinds = [c.metadata.get("slideshow", {}).get("slide_type", "-") for c in cells]
        assert "notes" in kinds, f"no speaker notes on the slide {cells[0].source[:60]!r}"


#: The most characters of one notes cell.  RISE puts a notes cell's whole node in the slide's
#: <aside class="notes">, which the speaker view (S) copies: a raw cell's node is its editor,
#: and an editor on a slide not shown draws only its first 900 or so characters (measured in
#: Chromium: 916 and more were cut).  A markdown cell would bring its source and its rendered
#: text (every note twice).  Longer notes are split over several raw cells.
NOTES_MAX_CHARS = 760


def test_speaker_notes_are_raw_cells_the_speaker_view_shows_whole(notebook):
    notes = [
        c for c in notebook.cells if c.metadata.get("slideshow", {}).get("slide_type") == "notes"
    ]
    assert notes
    for cell in notes:
        where = cell.source[:60]
        assert cell.cell_type == "raw", f"a {cell.cell_type} notes cell shows twice: {where!r}"
        assert cell.metadata.get("raw_mimetype") == "text/markdown", where
        assert len(cell.source) <= NOTES_MAX_CHARS, f"{len(cell.source)} characters: {where!r}"


@pytest.mark.parametrize(
    "shown",
    ["attention", "scaled_dot_product_attention", "causal_mask", "MultiHeadAttention.forward"],
)
def test_the_equation_slides_show_the_librarys_source(notebook, shown):
    call = re.compile(rf"show_source\([^)]*\bA\.{re.escape(shown)}\b")
    cells = [c for c in notebook.cells if c.cell_type == "code" and call.search(c.source)]
    assert cells, f"no cell runs lecture.show_source(A.{shown})"
    (output,) = [o for o in cells[0].outputs if o.output_type == "execute_result"]
    assert "text/html" in output.data  # highlighted, as the room sees it
    assert f"def {shown.split('.')[-1]}(" in output.data["text/plain"]
