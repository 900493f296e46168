"""The lecture fits 90 minutes: each slide's speaker notes give its minutes, summed <= 70.

The format the deck follows: the last line of a speaker-notes cell is
exactly ``Minutes: N`` (N an int or a decimal, e.g. ``Minutes: 1.5``), one such line per slide
of the main path: from the first slide to the "References" slide, inclusive.  Backup slides
come after References (RISE shows them last) and are not counted.  The check reads the
notebook itself; small notebooks built here prove that it fails on each way to get it wrong.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DECK = ROOT / "notebooks" / "07_attention.ipynb"
MINUTES = re.compile(r"^Minutes: (\d+(?:\.\d+)?)$")
REFERENCES = re.compile(r"^#+\s*References\b", re.MULTILINE)
BUDGET = 70.0  # notes-minutes of the main path: the rest of 90 goes to questions


def slide_type(cell: dict) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def source(cell: dict) -> str:
    s = cell.get("source", "")
    return "".join(s) if isinstance(s, list) else s


def slides(nb: dict) -> list[list[dict]]:
    """The cells of each slide (a 'slide' or 'subslide' cell opens one), in order."""
    found: list[list[dict]] = []
    for cell in nb["cells"]:
        if slide_type(cell) in ("slide", "subslide") or not found:
            found.append([])
        found[-1].append(cell)
    return found


def main_path(nb: dict) -> list[list[dict]]:
    """The slides from the first to the References slide (inclusive)."""
    all_slides = slides(nb)
    for i, cells in enumerate(all_slides):
        if any(c["cell_type"] == "markdown" and REFERENCES.search(source(c)) for c in cells):
            return all_slides[: i + 1]
    raise AssertionError("no References slide: the main path has no end")


def title(cells: list[dict]) -> str:
    for c in cells:
        if c["cell_type"] == "markdown" and slide_type(c) != "notes" and source(c).strip():
            return source(c).strip().splitlines()[0][:60]
    return "(untitled)"


def minutes(nb: dict) -> tuple[float, list[str]]:
    """The main path's minutes, and the slides whose notes do not say theirs properly."""
    total, problems = 0.0, []
    for k, cells in enumerate(main_path(nb), start=1):
        given = []
        for c in cells:
            if slide_type(c) != "notes":
                continue
            lines = [line.strip() for line in source(c).strip().splitlines()]
            for line in lines[:-1]:
                if line.lower().startswith("minutes"):
                    problems.append(f"slide {k} {title(cells)!r}: a Minutes line not last")
            found = MINUTES.match(lines[-1]) if lines else None
            if found:
                given.append(float(found.group(1)))
        if len(given) != 1:
            problems.append(
                f"slide {k} {title(cells)!r}: {len(given)} 'Minutes: N' lines in its notes"
            )
        total += sum(given)
    return total, problems


def test_the_main_path_fits_70_minutes_by_its_notes():
    nb = json.loads(DECK.read_text(encoding="utf-8"))
    total, problems = minutes(nb)
    assert not problems, "\n".join(problems)
    assert 0 < total <= BUDGET, f"the notes give {total:g} minutes; the main path has {BUDGET:g}"


# ------------------------------------------------------------------ the check can fail
def _cell(kind: str, text: str, slide: str = "-") -> dict:
    return {
        "cell_type": "markdown" if kind != "code" else "code",
        "source": text,
        "metadata": {"slideshow": {"slide_type": slide}},
    }


def _deck(*slide_minutes: str | None, backup: str | None = "Minutes: 30") -> dict:
    cells = []
    for k, notes in enumerate(slide_minutes):
        cells.append(_cell("markdown", f"## Slide {k}", "slide"))
        if notes is not None:
            cells.append(_cell("markdown", f"Say this.\n{notes}", "notes"))
    cells.append(_cell("markdown", "## References", "slide"))
    cells.append(_cell("markdown", "Read these.\nMinutes: 1", "notes"))
    cells.append(_cell("markdown", "## Backup: more", "slide"))
    if backup is not None:
        cells.append(_cell("markdown", f"Only if asked.\n{backup}", "notes"))
    return {"cells": cells}


def test_minutes_sum_the_main_path_only():
    total, problems = minutes(_deck("Minutes: 3", "Minutes: 1.5"))
    assert (total, problems) == (5.5, [])  # 3 + 1.5 + 1 (References); the backup's 30 not


@pytest.mark.parametrize(
    "deck, words",
    [
        (_deck("Minutes: 3", None), "0 'Minutes: N' lines"),  # a slide without notes
        (_deck("Minutes: 3", "about 2 minutes"), "0 'Minutes: N' lines"),  # another format
        (_deck("Minutes: 3\nthen ask the room"), "not last"),
    ],
)
def test_minutes_check_fails_on_a_slide_without_its_minutes(deck, words):
    _, problems = minutes(deck)
    assert problems and words in problems[0]


def test_minutes_check_fails_over_budget_and_without_references():
    total, problems = minutes(_deck(*["Minutes: 9"] * 10))
    assert not problems and total > BUDGET
    with pytest.raises(AssertionError, match="References"):
        main_path({"cells": [_cell("markdown", "## Only slide", "slide")]})
