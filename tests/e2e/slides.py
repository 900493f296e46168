"""What both browser tests do to a reveal.js deck: walk it, read it, move a slider.

Works on the live RISE slideshow (JupyterLab) and on nbconvert's exported slides alike: both
put each slide in a reveal.js ``<section>`` and each notebook cell in a ``.jp-Cell``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DECK = "notebooks/07_attention.ipynb"
FIXTURE = "tests/e2e/fixtures/mini_deck.ipynb"
# Copied into the test server's root (relative paths kept: the deck loads ../pics/*.png).
SERVED = ["notebooks", "pics", "tests/e2e/fixtures"]
# Screenshots of every slide: artifacts/slides/<deck name>/ (git-ignored).
ARTIFACTS = ROOT / "artifacts" / "slides"

# The widgets of attnlab.widgets, and the slider whose move must change the picture.
WIDGET_CLASSES = ("DecodeStepper", "ScaledDotExplorer", "ScoreLab", "PathLengthExplorer")
# A widget that failed to render shows its text form instead, e.g. "VBox(children=(...".
_NAMES = "|".join(WIDGET_CLASSES)
WIDGET_REPR = re.compile(
    rf"^\s*(?:{_NAMES}|VBox|HBox|Box|GridBox|Tab|Stack|Accordion|IntSlider|FloatSlider|Image|"
    r"Output|Button|Text|Dropdown|Checkbox|HTML|HTMLMath|Label|Play|ToggleButtons)\("
)
PROBLEM_TEXT = re.compile(r"Traceback|Error\b|Exception\b|Warning\b|Error displaying widget")


@dataclass(frozen=True)
class SliderCheck:
    """Moving slider ``label`` in the widget made by the code cell matching ``cell`` must change
    the widget's picture."""

    name: str
    cell: str  # regex on the cell's source
    label: str  # the slider's description


@dataclass(frozen=True)
class Deck:
    path: str  # relative to the repository root (and to the test server's root)
    live_sliders: tuple[SliderCheck, ...]  # checked in the RISE slideshow (kernel running)
    offline_sliders: tuple[SliderCheck, ...]  # checked in the exported HTML (no kernel)

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def notebook(self) -> dict:
        return json.loads((ROOT / self.path).read_text(encoding="utf-8"))


STEPPER = SliderCheck("DecodeStepper t slider", r"\bDecodeStepper\(", "t")
EXPLORER = SliderCheck("ScaledDotExplorer d_k slider", r"\bScaledDotExplorer\(", "d_k")
LECTURE = Deck(DECK, (STEPPER, EXPLORER), (STEPPER,))
_MINI_STEPPER = SliderCheck("pre-rendered frames t slider", r"fixture-stepper", "t")
_MINI_EXPLORER = SliderCheck("kernel-drawn d_k slider", r"fixture-explorer", "d_k")
MINI = Deck(FIXTURE, (_MINI_STEPPER, _MINI_EXPLORER), (_MINI_STEPPER,))


# ---------------------------------------------------------------------------- the notebook
def slide_type(cell: dict) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def expected_slides(nb: dict) -> int:
    """Slides reveal.js shows: one per 'slide' or 'subslide' cell (the first cell opens one)."""
    starts = [slide_type(c) in ("slide", "subslide") for c in nb["cells"]]
    return sum(starts) + (0 if starts and starts[0] else 1)


def notes_cells(nb: dict) -> list[int]:
    return [i for i, c in enumerate(nb["cells"]) if slide_type(c) == "notes"]


WIDGET_CALL = re.compile(rf"\b(?:{_NAMES})\(")


def widget_cells(nb: dict) -> list[int]:
    """Code cells that build one of attnlab's widgets."""
    return [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and WIDGET_CALL.search("".join(c["source"]))
    ]


# ---------------------------------------------------------------------------- page scripts
# The present slide: the innermost section.present (reveal.js nests vertical slides).
PRESENT_JS = """
() => {
  const all = Array.from(document.querySelectorAll('.reveal .slides section.present'));
  const p = all.filter(s => !s.querySelector('section.present')).pop();
  if (!p) return null;
  const leaves = Array.from(document.querySelectorAll('.reveal .slides section'))
    .filter(s => !s.querySelector('section'));
  return {
    index: leaves.indexOf(p),
    total: leaves.length,
    fragments: p.querySelectorAll('.fragment').length,
    visible: p.querySelectorAll('.fragment.visible').length,
  };
}
"""

# Text on the present slide that MathJax left raw ($...$, $$...$$, a TeX command), MathJax
# errors, and formulas whose letters a text-transform changes.
RAW_TEX_JS = r"""
() => {
  const all = Array.from(document.querySelectorAll('.reveal .slides section.present'));
  const p = all.filter(s => !s.querySelector('section.present')).pop();
  if (!p) return ['no present slide'];
  const skip = 'mjx-container, .MathJax, .MathJax_CHTML, .MathJax_Preview, .mjx-chtml, script, '
    + 'style, code, pre, .jp-CodeCell .jp-InputArea, .CodeMirror, .cm-editor, aside.notes';
  const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  let text = '';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.parentElement.closest(skip)) text += n.textContent + ' ';
  }
  const raw = text.match(/\$\$[^$]+\$\$|\$[^$\s][^$]*\$|\\(?:sqrt|frac|alpha|sum|top|mathrm|text|left|right|cdot|dots|exp|log|in|le|ge|times|mathbf|operatorname|begin|end)\b/g);
  const errors = Array.from(p.querySelectorAll('mjx-merror, .MathJax_Error, .merror'))
    .map(e => 'MathJax error: ' + e.textContent);
  // A heading style such as text-transform: uppercase turns d_k into D_K inside formulas.
  const capitals = Array.from(p.querySelectorAll('mjx-container, .MathJax_CHTML'))
    .filter(m => getComputedStyle(m).textTransform !== 'none')
    .map(m => 'formula drawn with text-transform ' + getComputedStyle(m).textTransform + ': '
      + (m.closest('h1, h2, h3, h4, h5, h6, p, li') || m).textContent.slice(0, 60));
  return (raw || []).concat(errors, capitals);
}
"""

# Pictures on the slides that did not load (a missing file, a blocked URL).
BROKEN_IMAGES_JS = """
() => Array.from(document.querySelectorAll('.reveal .slides img'))
  .filter(img => !img.complete || img.naturalWidth === 0)
  .map(img => img.getAttribute('src').slice(0, 100))
"""

MATH_COUNT_JS = """
() => document.querySelectorAll('mjx-container, .MathJax_CHTML, .mjx-chtml.MathJax_CHTML').length
"""

# Every notebook cell in document order, with what the checks need to know about it.
CELLS_JS = """
() => Array.from(document.querySelectorAll('.jp-Cell')).map(c => {
  const outputs = mime => Array.from(c.querySelectorAll(
    mime.map(m => `.jp-OutputArea-output[data-mime-type="${m}"]`).join(', ')))
    .map(e => e.textContent);
  return {
    code: c.classList.contains('jp-CodeCell'),
    source: (c.querySelector('.jp-CodeCell .jp-InputArea-editor') || {textContent: ''}).textContent,
    prompt: (c.querySelector('.jp-InputPrompt') || {textContent: ''}).textContent.trim(),
    inNotes: !!c.closest('aside.notes'),
    visible: c.checkVisibility({opacityProperty: true, visibilityProperty: true}),
    stderr: outputs(['application/vnd.jupyter.stderr']),
    plain: outputs(['text/plain', 'application/vnd.jupyter.stdout']),
    widgetOutputs: outputs(['application/vnd.jupyter.widget-view+json']).length,
    widgets: c.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length,
    text: c.textContent.slice(0, 2000),
  };
})
"""

# The visible pictures inside one cell, as SHA-1 digests of their bytes (src + content).
IMAGES_JS = """
async (cell) => {
  const out = [];
  for (const img of cell.querySelectorAll('.jp-OutputArea-output img')) {
    if (!img.checkVisibility()) continue;
    let digest = '';
    try {
      const bytes = await (await fetch(img.src)).arrayBuffer();
      const hash = await crypto.subtle.digest('SHA-1', bytes);
      digest = Array.from(new Uint8Array(hash)).map(b => b.toString(16).padStart(2, '0')).join('');
    } catch (e) { digest = 'unreadable:' + e; }
    out.push({src: img.src.slice(0, 80), digest, width: img.naturalWidth});
  }
  return out;
}
"""


# ---------------------------------------------------------------------------- python helpers
def present(page) -> dict | None:
    return page.evaluate(PRESENT_JS)


def cells(page) -> list[dict]:
    return page.evaluate(CELLS_JS)


def raw_tex(page, wait_s: float = 8.0) -> list[str]:
    """Raw TeX left on the present slide, after giving MathJax up to wait_s to typeset."""
    deadline = time.monotonic() + wait_s
    while True:
        left = page.evaluate(RAW_TEX_JS)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.25)


def code_cell(page, pattern: str):
    """The one code cell whose source matches ``pattern`` (a Locator)."""
    found = page.locator(".jp-CodeCell").filter(
        has=page.locator(".jp-InputArea", has_text=re.compile(pattern))
    )
    count = found.count()
    assert count == 1, f"{count} code cells match {pattern!r}, expected exactly 1"
    return found.first


def slider(cell, label: str):
    """The ipywidgets slider described ``label`` inside a cell's output."""
    sliders = cell.locator(".widget-slider")
    labels = [s.locator(".widget-label").first.inner_text().strip() for s in sliders.all()]
    assert label in labels, f"no slider labelled {label!r} in the widget; sliders: {labels}"
    return sliders.nth(labels.index(label))


def readout(one_slider) -> str:
    return one_slider.locator(".widget-readout").first.inner_text().strip()


def drag_slider(page, one_slider) -> tuple[str, str]:
    """Drag the handle with the mouse (reveal.js owns the arrow keys) to a far point of the
    track; returns the readout before and after."""
    before = readout(one_slider)
    one_slider.scroll_into_view_if_needed()
    handle = one_slider.locator(".noUi-handle").first.bounding_box()
    track = one_slider.locator(".noUi-target").first.bounding_box()
    assert handle and track, "the slider is not on screen"
    x0, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    # Go to 70% of the track, or to 30% when the handle already sits right of the middle.
    fraction = 0.3 if x0 > track["x"] + track["width"] / 2 else 0.7
    x1 = track["x"] + fraction * track["width"]
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move((x0 + x1) / 2, y, steps=4)
    page.mouse.move(x1, y, steps=4)
    page.mouse.up()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    return before, readout(one_slider)


def pictures(cell) -> list[dict]:
    return cell.evaluate(IMAGES_JS)


def check_slider_changes_picture(page, check: SliderCheck, wait_s: float = 15.0) -> str:
    """Move the slider; return '' when the widget's picture changed, else what went wrong."""
    try:
        cell = code_cell(page, check.cell)
        one_slider = slider(cell, check.label)
    except AssertionError as err:
        return f"{check.name}: {err}"
    first = pictures(cell)
    if not first:
        return f"{check.name}: no picture in the widget before moving the slider"
    before, after = drag_slider(page, one_slider)
    if before == after:
        return f"{check.name}: dragging the handle left the value at {before}"
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        now = pictures(cell)
        if now and [p["digest"] for p in now] != [p["digest"] for p in first]:
            return ""
        time.sleep(0.25)
    return f"{check.name}: value {before} -> {after} but the picture did not change"


def next_step(page, state: dict, wait_s: float = 5.0) -> dict | None:
    """Press Space (next fragment or slide); the new state, or None at the end of the deck."""
    page.keyboard.press("Space")
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        now = present(page)
        if now and (now["index"], now["visible"]) != (state["index"], state["visible"]):
            return now
        time.sleep(0.05)
    return None


def walk(page, folder: Path, checks, n_cells: int) -> tuple[list[dict], list[str]]:
    """Every slide and fragment from the first to the last (Space), a screenshot of each step;
    checks typeset maths and hidden notes on every step, and each slider of ``checks`` on the
    slide where its widget shows.  Returns the steps and the problems found."""
    problems: list[str] = []
    page.keyboard.press("Home")  # reveal.js: first slide
    page.wait_for_function("() => document.querySelector('.reveal .slides section.present')")
    time.sleep(0.3)
    state = present(page)
    assert state and state["index"] == 0, f"Home did not go to the first slide: {state}"
    pending = list(checks)
    steps = []
    for _ in range(10 * n_cells + 20):  # a hard stop, far above any real deck
        steps.append(state)
        flat = settle(page)
        shoot(page, folder, state)
        where = f"slide {state['index'] + 1}, step {state['visible']}"
        if flat:
            problems.append(f"{where}: {flat} formulas typeset but not drawn")
        for raw in raw_tex(page):
            problems.append(f"{where}: formula problem: {raw!r}")
        for cell in cells(page):
            if cell["inNotes"] and cell["visible"]:
                problems.append(f"{where}: speaker notes visible: {cell['text'][:80]!r}")
        for check in list(pending):
            if on_present_slide(page, check):
                pending.remove(check)
                problem = check_slider_changes_picture(page, check)
                if problem:
                    problems.append(f"{where}: {problem}")
                shoot(page, folder, state, "-after-slider")
        nxt = next_step(page, state)
        if nxt is None:
            break
        state = nxt
    for check in pending:
        problems.append(f"{check.name}: its widget never showed on a slide")
    return steps, problems


# MathJax 2 (the exported slides) typesets again on every slide change; MathJax 3 (JupyterLab)
# typesets once, when a cell renders.
MATHJAX_IDLE_JS = """
() => !(window.MathJax && MathJax.Hub) || (MathJax.Hub.queue.pending === 0
  && !MathJax.Hub.queue.running)
"""


# Typeset formulas on the present slide that take no room (typeset while hidden, not yet redrawn).
FLAT_MATH_JS = """
() => {
  const all = Array.from(document.querySelectorAll('.reveal .slides section.present'));
  const p = all.filter(s => !s.querySelector('section.present')).pop();
  if (!p) return 0;
  return Array.from(p.querySelectorAll('mjx-container, .MathJax_CHTML'))
    .filter(m => !m.closest('aside.notes'))
    .filter(m => { const r = m.getBoundingClientRect(); return r.width === 0 || r.height === 0; })
    .length;
}
"""


def settle(page, wait_s: float = 10.0) -> int:
    """Let a fragment fade in and MathJax draw the slide's formulas before a screenshot;
    returns how many formulas still take no room after wait_s."""
    time.sleep(0.25)
    page.wait_for_function(MATHJAX_IDLE_JS, timeout=15_000)
    deadline = time.monotonic() + wait_s
    while (flat := page.evaluate(FLAT_MATH_JS)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return flat


def on_present_slide(page, check: SliderCheck) -> bool:
    """Is the widget of ``check`` on the present slide, and shown (not a hidden fragment)?"""
    try:
        cell = code_cell(page, check.cell)
    except AssertionError:
        return False
    return cell.evaluate(
        "c => !!c.closest('section.present') && "
        "c.checkVisibility({opacityProperty: true, visibilityProperty: true})"
    )


def check_complete_walk(steps: list[dict], expected: int) -> list[str]:
    """The walk saw every slide (as many as the notebook makes) and every fragment."""
    problems = []
    total = steps[-1]["total"]
    if total != expected:
        problems.append(f"{total} slides in the browser, the notebook makes {expected}")
    missed = set(range(total)) - {s["index"] for s in steps}
    if missed:
        problems.append(f"slides never reached: {sorted(i + 1 for i in missed)}")
    shown: dict[int, int] = {}
    for s in steps:
        shown[s["index"]] = max(shown.get(s["index"], 0), s["visible"])
    unseen = {s["index"] + 1: s["fragments"] for s in steps if s["fragments"] > shown[s["index"]]}
    if unseen:
        problems.append(f"fragments never shown (slide: how many): {unseen}")
    return problems


def screenshot_dir(deck: Deck, kind: str) -> Path:
    """artifacts/slides/<deck>[-<kind>]/, emptied."""
    folder = ARTIFACTS / (deck.name if kind == "rise" else f"{deck.name}-{kind}")
    if folder.exists():
        for old in folder.glob("*.png"):
            old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page, folder: Path, state: dict, suffix: str = "") -> None:
    name = f"slide-{state['index'] + 1:02d}-step-{state['visible']}{suffix}.png"
    page.screenshot(path=str(folder / name))
