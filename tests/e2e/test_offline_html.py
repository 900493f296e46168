"""The exported slides (`make html`) work from disk with the network cut off.

scripts/export_html.py exports a temporary copy of the deck; Chromium opens the file with every
request that is not file:// blocked, and the test checks: nothing asked for the network, the
number of slides, typeset mathematics on every slide, every picture loaded, the widgets drawn
from their stored state, the speaker notes hidden, and that moving the DecodeStepper's slider
changes its picture (pre-rendered frames, no kernel).  Screenshots of every slide go to
artifacts/slides/<deck>-html/.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import slides

EXPORT_TIMEOUT_S = 900

IMAGE_COUNT_JS = "() => document.querySelectorAll('.reveal .slides img').length"
# Widget views still waiting for the renderer (their <script> has no drawn view beside it).
UNRENDERED_WIDGETS_JS = """
() => Array.from(document.querySelectorAll(
    'script[type="application/vnd.jupyter.widget-view+json"]'))
  .filter(s => !s.parentElement.querySelector('.jupyter-widgets')).length
"""


def markdown_pictures(nb: dict) -> int:
    """<img> tags and ![..](..) pictures in the markdown cells (notes excluded)."""
    text = "".join(
        "".join(c["source"])
        for c in nb["cells"]
        if c["cell_type"] == "markdown" and slides.slide_type(c) != "notes"
    )
    return len(re.findall(r"<img\b|!\[[^\]]*\]\(", text))


def export(deck: slides.Deck, tmp_path) -> tuple[str, dict]:
    """Run scripts/export_html.py on a copy of the repo's notebooks; returns (file URL, nb)."""
    work = tmp_path / "src"
    for rel in slides.SERVED:
        if (slides.ROOT / rel).exists():
            shutil.copytree(slides.ROOT / rel, work / rel)
    env = dict(os.environ, OMP_NUM_THREADS="2")
    done = subprocess.run(
        [
            sys.executable,
            str(slides.ROOT / "scripts" / "export_html.py"),
            "--notebook",
            str(work / deck.path),
            "--out",
            str(tmp_path / "html"),
        ],
        cwd=slides.ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=EXPORT_TIMEOUT_S,
    )
    assert done.returncode == 0, f"export failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    target = tmp_path / "html" / f"{deck.name}.slides.html"
    assert target.exists(), done.stdout
    return target.as_uri(), deck.notebook()


@pytest.mark.parametrize("deck", [slides.MINI, slides.LECTURE], ids=lambda d: d.name)
def test_offline_html(offline_page, deck, tmp_path):
    page = offline_page
    assert (slides.ROOT / deck.path).exists(), f"{deck.path} is missing"
    url, nb = export(deck, tmp_path)
    folder = slides.screenshot_dir(deck, "html")

    page.goto(url)
    page.wait_for_selector(".reveal.ready", timeout=60_000)
    page.wait_for_function("() => window.MathJax && MathJax.Hub", timeout=60_000)
    page.wait_for_function(slides.MATHJAX_IDLE_JS, timeout=60_000)
    if slides.widget_cells(nb) or deck is slides.MINI:
        page.wait_for_function(
            "() => document.querySelectorAll('.jupyter-widgets').length > 0", timeout=60_000
        )
    page.wait_for_function(
        "() => Array.from(document.images).every(img => img.complete)", timeout=30_000
    )
    problems = []
    if page.evaluate(UNRENDERED_WIDGETS_JS):
        problems.append(f"{page.evaluate(UNRENDERED_WIDGETS_JS)} widgets not drawn")
    broken = page.evaluate(slides.BROKEN_IMAGES_JS)
    if broken:
        problems.append(f"pictures that did not load: {broken}")
    if page.evaluate(IMAGE_COUNT_JS) < markdown_pictures(nb):
        problems.append("fewer pictures on the slides than in the notebook's markdown")
    found = slides.cells(page)
    for cell in found:
        for text in cell["stderr"]:
            if slides.PROBLEM_TEXT.search(text):
                problems.append(f"an error output: {text[-1500:]}")
        for text in cell["plain"]:
            if slides.WIDGET_REPR.match(text):
                problems.append(f"text instead of a widget: {text[:200]}")
    notes, hidden = len(slides.notes_cells(nb)), sum(c["inNotes"] for c in found)
    if hidden != notes:
        problems.append(f"{notes} speaker-notes cells but {hidden} cells in the hidden notes")

    steps, walk_problems = slides.walk(page, folder, deck.offline_sliders, len(nb["cells"]))
    problems += walk_problems
    problems += slides.check_complete_walk(steps, slides.expected_slides(nb))
    assert page.evaluate(slides.MATH_COUNT_JS) > 0, "MathJax typeset nothing"
    assert not page.blocked, f"the slides asked for the network: {page.blocked[:10]}"
    assert not page.page_errors, f"errors in the page: {page.page_errors[:5]}"
    assert not problems, "\n".join(problems)
