"""The exported slides (`make html`) work from disk with the network cut off.

scripts/export_html.py exports a temporary copy of the deck; Chromium opens the file with every
request that is not file:// blocked, and one walk through it (slides.walk) serves four tests:

* ``test_offline_html_works``: nothing asked for the network; the number of slides; typeset
  mathematics on every slide; every picture loaded; the widgets drawn from their stored state;
  the speaker notes hidden;
* ``test_offline_html_fits``: at 1280x720 nothing of any cell reaches past the bottom or the
  right edge on any slide or fragment step (also written to
  artifacts/slides/<deck>-html/overflow.txt);
* ``test_offline_sliders_change_the_picture``: every slider, checkbox and toggle button of
  every widget, moved with the mouse, changes the widget's picture with no kernel
  (pre-rendered frames linked in the browser);
* ``test_offline_html_reads_from_the_back``: the type sizes measured in the browser (markdown
  >= 24 px, code inputs >= 24 px, text outputs >= 20 px, widgets' text >= 22 px, other text
  >= 18 px) and every
  picture's text >= 18 px as shown,
  every heatmap labelled (also written to artifacts/slides/<deck>-html/readability.txt);
* ``test_offline_html_shows_no_scaffolding``: no test marker shows.

Screenshots of every slide go to artifacts/slides/<deck>-html/; the export's size to
artifacts/export_size.json (printed by benchmarks/slider_latency.py).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
import slides

EXPORT_TIMEOUT_S = 900
ANSI = re.compile(r"\x1b\[[0-9;]*m")

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
    slides.copy_served(work)
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
    plain = ANSI.sub("", f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")  # no terminal colours
    assert done.returncode == 0, f"export failed:\n{plain}"
    target = tmp_path / "html" / f"{deck.name}.slides.html"
    assert target.exists(), done.stdout
    return target.as_uri(), deck.notebook()


def export_size(html_file) -> dict:
    """Bytes of the html file and of the whole folder (with lib/)."""
    folder = html_file.parent
    total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
    return {"html_bytes": html_file.stat().st_size, "folder_bytes": total}


def record_size(deck: slides.Deck, size: dict) -> None:
    try:
        data = json.loads(slides.EXPORT_SIZE_JSON.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = {}
    data[deck.name] = size
    slides.save_report(slides.EXPORT_SIZE_JSON, json.dumps(data, indent=1) + "\n")
    mb = 1024 * 1024
    print(
        f"\n{deck.name}: export {size['html_bytes'] / mb:.1f} MiB html, "
        f"{size['folder_bytes'] / mb:.1f} MiB with lib/"
    )


def open_export(page, url: str, nb: dict, deck: slides.Deck) -> list[str]:
    """Load the exported slides; problems found before the walk."""
    page.goto(url)
    page.wait_for_selector(".reveal.ready", timeout=60_000)
    page.wait_for_function("() => window.MathJax && MathJax.Hub", timeout=60_000)
    page.wait_for_function(slides.MATHJAX_IDLE_JS, timeout=60_000)
    if slides.widget_cells(nb) or deck.expected_widgets():
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
    problems += slides.notes_problems(page, nb)
    return problems


@pytest.fixture(scope="module", params=[slides.MINI, slides.LECTURE], ids=lambda d: d.name)
def offline(request, new_page, tmp_path_factory):
    """Export the deck, open it from disk offline and walk it once: (deck, walk, problems)."""
    deck = request.param
    assert (slides.ROOT / deck.path).exists(), f"{deck.path} is missing"
    tmp_path = tmp_path_factory.mktemp(f"export-{deck.name}")
    clock = slides.Clock()
    url, nb = export(deck, tmp_path)
    clock.lap("export")
    record_size(deck, export_size(tmp_path / "html" / f"{deck.name}.slides.html"))
    folder = slides.screenshot_dir(deck, "html")
    with new_page(("file://",)) as page:
        slides.use_sources(page, nb)
        problems = open_export(page, url, nb, deck)
        clock.lap("open")
        walk = slides.walk(page, folder, len(nb["cells"]), live=False, clock=clock)
        problems += walk.problems + slides.check_complete_walk(
            walk.steps, slides.expected_slides(nb)
        )
        if not page.evaluate(slides.MATH_COUNT_JS):
            problems.append("MathJax typeset nothing")
        if page.blocked:
            problems.append(f"the slides asked for the network: {page.blocked[:10]}")
        if page.page_errors:
            problems.append(f"errors in the page: {page.page_errors[:5]}")
    slides.save_report(folder / "overflow.txt", walk.overflow_report())
    slides.save_report(folder / "readability.txt", slides.readability_report(walk))
    slides.save_report(folder / "code.txt", slides.code_report(walk))
    slides.save_report(folder / "fill.txt", slides.fill_report(walk))
    print(f"\n{deck.name} (offline export) {clock}; fit:\n{walk.overflow_report()}")
    return deck, walk, problems


def test_offline_html_works(offline):
    _, _, problems = offline
    assert not problems, "\n".join(problems)


def test_offline_html_fits(offline):
    deck, walk, _ = offline
    problems = slides.fit_problems(walk, deck)
    assert not problems, (
        f"{len(problems)} slides do not fit 1280x720 in the offline export:\n" + "\n".join(problems)
    )


def test_offline_sliders_change_the_picture(offline):
    deck, walk, _ = offline
    problems = slides.control_problems(walk, deck, live=False)
    assert not problems, "\n".join(problems)


def test_offline_html_reads_from_the_back(offline):
    """Markdown >= 24 px, code inputs >= 24 px, text outputs >= 20 px, widgets' text >= 22 px,
    other text >= 18 px,
    pictures' text >= 18 px as shown
    and every heatmap key and query labelled, on every slide and fragment of the export."""
    deck, walk, _ = offline
    problems = slides.readability_problems(walk, deck)
    assert not problems, "\n".join(problems)


def test_offline_html_shows_only_the_code_the_room_reads(offline):
    """As in the slideshow: hidden inputs are not in the export."""
    deck, walk, _ = offline
    problems = slides.code_problems(walk, deck)
    assert not problems, "\n".join(problems)


def test_offline_html_keeps_the_navigation_arrows_clear(offline):
    """No text or picture under reveal.js's arrows or slide number."""
    deck, walk, _ = offline
    problems = slides.controls_problems(walk, deck)
    assert not problems, "\n".join(problems)


def test_offline_html_fills_its_slides(offline):
    """No main-path slide leaves half of the 1280x720 screen empty: its content spans at least
    half the height and half the width."""
    deck, walk, _ = offline
    problems = slides.fill_problems(walk, deck)
    assert not problems, "\n".join(problems)


def test_offline_html_shows_no_scaffolding(offline):
    deck, walk, _ = offline
    problems = slides.scaffolding_problems(walk, deck)
    assert not problems, "\n".join(problems)
