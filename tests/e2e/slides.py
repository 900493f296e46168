"""What both browser tests do to a reveal.js deck: walk it, read it, measure it, move its controls.

Works on the live RISE slideshow (JupyterLab) and on nbconvert's exported slides alike: both
put each slide in a reveal.js ``<section>`` and each notebook cell in a ``.jp-Cell``.  Nothing
here knows how many slides a deck has or what they say: the walk goes from the first slide to
the last with Space and checks whatever it finds.

On every slide and fragment step the walk

* takes a screenshot (artifacts/slides/<deck>[-html]/),
* checks the formulas (typeset, drawn), that the speaker notes stay hidden and that no "¶"
  shows beside a title,
* measures the fit: the bounding boxes of every shown cell's input, outputs and markdown (and
  of everything inside them) in the present slide must end inside the 1280x720 screen,
* looks for test scaffolding (``# NBVAL_IGNORE_OUTPUT`` and the like) in the shown text,
* measures the type: the computed font-size of every shown text of every cell (markdown
  >= 24 px, code inputs >= 24 px, text outputs >= 20 px, a widget's labels, buttons, menus,
  boxes, readouts and HTML lines >= 22 px, anything else a cell shows >= 18 px), and of
  every shown picture: the smallest text it draws (its PNG's record, or its figure in
  :mod:`attnlab.pictures.figures`) times the width the browser shows it at over its own width, and
  every key and query of each heatmap in it labelled (up to 40 tokens),
* moves each widget control the first time it shows: in the slideshow every slider, several
  times, timing release-to-new-picture; in the export every slider, checkbox and toggle button
  once, checking that the picture changes.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import io
import json
import re
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from attnlab.files import write_atomic

ROOT = Path(__file__).resolve().parents[2]
DECK = "notebooks/07_attention.ipynb"
FIXTURE = "tests/e2e/fixtures/mini_deck.ipynb"
# Copied into the test server's root (relative paths kept: the deck loads ../pics/*.png).
SERVED = ["notebooks", "pics", "tests/e2e/fixtures"]
# The slideshow's style sheet (RISE loads rise.css beside the notebook; the export inlines it),
# copied beside the fixture deck too: it is tested with the lecture's type sizes.
RISE_CSS = "notebooks/rise.css"
ARTIFACTS = ROOT / "artifacts"
# Screenshots of every slide: artifacts/slides/<deck name>[-html]/ (git-ignored).
SLIDES_ARTIFACTS = ARTIFACTS / "slides"
# Slider latency in the slideshow, one entry per deck (read by benchmarks/slider_latency.py).
LATENCY_JSON = ARTIFACTS / "slider_latency.json"
# The size of the offline export (read by benchmarks/slider_latency.py too).
EXPORT_SIZE_JSON = ARTIFACTS / "export_size.json"

# The widgets of attnlab.widgets.
WIDGET_CLASSES = (
    "DecodeStepper",
    "ScaledDotExplorer",
    "ScoreLab",
    "PathLengthExplorer",
    "HeadView",
)
# A widget that failed to render shows its text form instead, e.g. "VBox(children=(...".
_NAMES = "|".join(WIDGET_CLASSES)
WIDGET_REPR = re.compile(
    rf"^\s*(?:{_NAMES}|VBox|HBox|Box|GridBox|Tab|Stack|Accordion|IntSlider|FloatSlider|Image|"
    r"Output|Button|Text|Dropdown|Checkbox|HTML|HTMLMath|Label|Play|ToggleButtons)\("
)
PROBLEM_TEXT = re.compile(r"Traceback|Error\b|Exception\b|Warning\b|Error displaying widget")
WIDGET_CALL = re.compile(rf"\b(?:{_NAMES})\(")
# Text written for the tests or the linters, never for the room.
SCAFFOLDING = re.compile(
    r"NBVAL_[A-Z_]+|nbval-[a-z-]+|#\s*noqa\b|#\s*fmt:\s*(?:off|on|skip)|#\s*type:\s*ignore"
    r"|#\s*pragma:\s*no\s*cover|ATTNLAB_SOLUTIONS"
)

# The readable type at 1280x720, in CSS px as the browser computes them.
# Code: a cell's input; output: its text outputs and the library's source listings; widget:
# every text of an ipywidget (what the lecturer points at; notebooks/rise.css); text: anything
# else a cell shows, and a picture's smallest text as shown.
MIN_MARKDOWN_PX, MIN_CODE_PX, MIN_OUTPUT_PX, MIN_TEXT_PX = 24.0, 24.0, 20.0, 18.0
MIN_WIDGET_PX = 22.0
MIN_LABEL_PX = 22.0  # a picture's tick and axis labels (attnlab.pictures.typography)
MAX_LABELLED_TOKENS = 40  # heatmaps up to this many keys or queries label every one

LATENCY_MOVES = 5  # slider moves timed per slider in the slideshow
LATENCY_TARGET_MS = 100.0  # the target for the median (benchmarks print the verdict)
FIT_TOLERANCE_PX = 1.0  # sub-pixel rounding of the layout
MAX_CODE_LINES = 8  # lines of a code input the room reads on a main-path slide
SLIDE_SIZE = (1280, 720)  # the projector's px


@dataclass(frozen=True)
class Deck:
    path: str  # relative to the repository root (and to the test server's root)
    widget_cell: str  # regex on a code cell's source: the cells whose widget has controls
    # What a deck is built to get wrong (the fixture deck proves each check can fail):
    overflows: tuple[tuple[str, str], ...] = ()  # (slide title, "bottom" | "right")
    scaffolding: tuple[str, ...] = ()  # slide titles that show test markers
    dead_offline: tuple[str, ...] = ()  # regexes on the source: widgets drawn by the kernel
    small_type: tuple[str, ...] = ()  # slide titles with text below its minimum size
    bad_pictures: tuple[str, ...] = ()  # slide titles with a picture too small or unlabelled
    # How many widget cells have a slider, checkbox or toggle (None: at least one, when the
    # deck has widget cells; a widget may have only a text box or a dropdown).
    controlled_widgets: int | None = None
    # Code the room must read: on the main path (the slides before the one titled
    # backup_title) at most max_code_slides slides show a code input (None: not counted), each
    # input at most MAX_CODE_LINES lines but on the slides built to show more (long_code).
    backup_title: str | None = None
    max_code_slides: int | None = None
    long_code: tuple[str, ...] = ()
    # Slide titles built to show text under the navigation arrows (the fixture's).
    under_controls: tuple[str, ...] = ()
    # Main-path slides whose content spans less than half the screen's height or width: the
    # slide titles built to (the fixture's); None: not checked.
    sparse: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        return Path(self.path).stem

    def notebook(self) -> dict:
        return json.loads((ROOT / self.path).read_text(encoding="utf-8"))

    def expected_widgets(self) -> int:
        return len(code_cells(self.notebook(), self.widget_cell))


LECTURE = Deck(
    DECK, WIDGET_CALL.pattern, backup_title="Backup slides", max_code_slides=8, sparse=()
)
MINI = Deck(
    FIXTURE,
    r"fixture-(?:stepper|explorer)",
    overflows=(("Too tall for the screen", "bottom"), ("Too wide for the screen", "right")),
    scaffolding=("Too tall for the screen",),
    small_type=("Too small to read",),
    bad_pictures=("A picture shown too small",),
    dead_offline=(r"fixture-explorer",),
    controlled_widgets=2,
    long_code=("Too much code to read",),
    under_controls=("Under the arrows",),
    sparse=(
        "A small deck for the browser tests",
        "A slider the kernel answers",
        "Too wide for the screen",
        "Too small to read",
        "A picture shown too small",
        "The end",
    ),
)


def copy_served(root: Path) -> None:
    """Copy SERVED into ``root`` (relative paths kept), with rise.css beside the fixture."""
    import shutil

    for rel in SERVED:
        if (ROOT / rel).exists():
            shutil.copytree(
                ROOT / rel,
                root / rel,
                ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
                dirs_exist_ok=True,
            )
    shutil.copy2(ROOT / RISE_CSS, root / Path(FIXTURE).parent / "rise.css")


# ---------------------------------------------------------------------------- the notebook
def slide_type(cell: dict) -> str:
    return cell.get("metadata", {}).get("slideshow", {}).get("slide_type", "-")


def expected_slides(nb: dict) -> int:
    """Slides reveal.js shows: one per 'slide' or 'subslide' cell (the first cell opens one)."""
    starts = [slide_type(c) in ("slide", "subslide") for c in nb["cells"]]
    return sum(starts) + (0 if starts and starts[0] else 1)


def notes_cells(nb: dict) -> list[int]:
    return [i for i, c in enumerate(nb["cells"]) if slide_type(c) == "notes"]


# What reveal.js's speaker view (S) shows as a slide's notes: the text of its <aside class=
# "notes"> elements.  A markdown notes cell would bring its hidden editor along (the source,
# then the rendered text: every note twice); the deck's notes are raw cells.
NOTES_TEXT_JS = """
() => Array.from(document.querySelectorAll('aside.notes')).map(a => a.textContent)
"""


def notes_problems(page, nb: dict) -> list[str]:
    """Each speaker-notes cell's text is the whole text of one <aside class="notes"> (one per
    notes cell: RISE and the export both wrap each in its own), so the speaker view shows it
    once and whole.  Compared on letters and digits only: the editor of a raw cell joins its
    lines without a space, and markdown drops its asterisks."""
    letters = lambda text: re.sub(r"[\W_]+", "", text)  # noqa: E731
    asides = [letters(text) for text in page.evaluate(NOTES_TEXT_JS)]
    problems = []
    for i in notes_cells(nb):
        source = "".join(nb["cells"][i]["source"])
        text = letters(source)
        if text and text not in asides:
            times = max((a.count(text) for a in asides), default=0)
            problems.append(
                f"cell {i}: the speaker view shows its notes {times} times in one aside, or "
                f"only in part: {source[:60]!r}"
            )
    return problems


def code_cells(nb: dict, pattern: str) -> list[int]:
    """Code cells whose source matches ``pattern``."""
    regex = re.compile(pattern)
    return [
        i
        for i, c in enumerate(nb["cells"])
        if c["cell_type"] == "code" and regex.search("".join(c["source"]))
    ]


def widget_cells(nb: dict) -> list[int]:
    """Code cells that build one of attnlab's widgets."""
    return code_cells(nb, WIDGET_CALL.pattern)


# ---------------------------------------------------------------------------- page scripts
# The present slide: reveal.js marks a vertical stack `section.present` too, so the slide shown
# is the present section that is not a stack.  Its place: h (horizontal), v (vertical), title.
_SLIDE = "document.querySelector('.reveal .slides section.present:not(.stack)')"
_SHOWN = "e => e.checkVisibility({opacityProperty: true, visibilityProperty: true})"
# An element's text as read: no scripts, no anchor marks; a formula as its TeX source where the
# page keeps it (MathJax 2), the drawn glyphs skipped (MathJax 3 keeps no source: left out).
_TEXT_OF = r"""
const textOf = (el) => {
  const skip = 'style, .MathJax_CHTML, .MathJax_Preview, .MJX_Assistive_MathML, mjx-container, '
    + 'script:not([type^="math/tex"])';
  let out = '';
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (parent.closest(skip)) continue;
    out += parent.matches('script') ? '$' + n.textContent + '$' : n.textContent;
  }
  return out.replace(/\u00b6/g, '').replace(/\u200b/g, '').replace(/\s+/g, ' ').trim();
};
"""

# A code cell's source: its editor's text where the input is shown; where it is hidden
# (``jupyter.source_hidden``: JupyterLab's placeholder in RISE, nothing in the export) the
# notebook's own, found by the cell's index in RISE (data-windowed-list-index) or its id in the
# export (id="cell-id=..."): :func:`use_sources` puts the notebook's sources into the page.
_SOURCE_OF = r"""
const sourceOf = (cell) => {
  const editor = cell.querySelector('.jp-InputArea-editor');
  if (editor) return editor.textContent;
  const known = window.__attnlabSources || {index: [], id: {}};
  const i = cell.dataset.windowedListIndex;
  if (i !== undefined && known.index[+i] !== undefined) return known.index[+i];
  return known.id[(cell.id || '').replace(/^cell-id=/, '')] || '';
};
"""

PRESENT_JS = f"""
() => {{
  {_TEXT_OF}
  const p = {_SLIDE};
  if (!p) return null;
  const leaves = Array.from(document.querySelectorAll('.reveal .slides section'))
    .filter(s => !s.querySelector('section'));
  const top = p.parentElement.closest('section') || p;
  const tops = Array.from(document.querySelectorAll('.reveal .slides > section'));
  const heading = Array.from(p.querySelectorAll('h1, h2, h3, h4'))
    .find(h => !h.closest('aside.notes'));
  const title = textOf(heading || p).slice(0, 60);
  return {{
    index: leaves.indexOf(p),
    total: leaves.length,
    h: tops.indexOf(top),
    v: top === p ? 0 : Array.from(top.children).filter(c => c.matches('section')).indexOf(p),
    title,
    fragments: p.querySelectorAll('.fragment').length,
    visible: p.querySelectorAll('.fragment.visible').length,
  }};
}}
"""

# How far the shown content of the present slide reaches past the screen's bottom and right
# edge.  Every shown cell's input, each of its outputs and its markdown is one part; a part's
# box is the union of its own box and its shown descendants' (content cut off by a scrolling
# box is still content the room does not see).
FIT_JS = f"""
() => {{
  {_TEXT_OF}
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  const W = document.documentElement.clientWidth, H = document.documentElement.clientHeight;
  const found = [];
  const cells = Array.from(p.querySelectorAll('.jp-Cell'))
    .filter(c => !c.closest('aside.notes') && shown(c));
  cells.forEach(cell => {{
    const text = textOf(cell.querySelector('.jp-InputArea-editor, .jp-MarkdownOutput') || cell);
    const markdown = cell.classList.contains('jp-MarkdownCell');
    const parts = markdown
      ? Array.from(cell.querySelectorAll('.jp-MarkdownOutput')).map(e => ['markdown', e])
      : Array.from(cell.querySelectorAll('.jp-InputArea')).map(e => ['input', e]).concat(
          Array.from(cell.querySelectorAll('.jp-OutputArea-output'))
            .map((e, i) => ['output ' + (i + 1), e]));
    for (const [kind, part] of parts) {{
      if (!shown(part)) continue;
      let bottom = -Infinity, right = -Infinity;
      for (const e of [part, ...part.querySelectorAll('*')]) {{
        const r = e.getBoundingClientRect();
        if (r.width === 0 || r.height === 0 || !shown(e)) continue;
        bottom = Math.max(bottom, r.bottom);
        right = Math.max(right, r.right);
      }}
      if (bottom > H + {FIT_TOLERANCE_PX} || right > W + {FIT_TOLERANCE_PX}) {{
        found.push({{part: kind, cell: text.slice(0, 50),
                    bottom: Math.ceil(Math.max(0, bottom - H)),
                    right: Math.ceil(Math.max(0, right - W))}});
      }}
    }}
  }});
  return found;
}}
"""

# The type of the present slide: every shown text of its cells (speaker notes and formulas
# left out), as the browser computes it, below the minimum for its kind: code (cell inputs,
# text outputs, the library's source, a code block in markdown), markdown, widget (every text
# of an ipywidget: labels, readouts, buttons, menus, boxes, its HTML lines and tables), or
# anything else a cell shows (HTML tables); code is a cell's input, output its text outputs
# and the library's source.  One entry per kind and size, with an example.
TYPE_JS = f"""
(mins) => {{
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  const math = 'mjx-container, .MathJax, .MathJax_CHTML, .MathJax_Preview, .MJX_Assistive_MathML, '
    + 'script, style';
  const code = '.jp-InputArea-editor, .jp-RenderedMarkdown pre';
  const output = '.jp-OutputArea-output pre, .jp-RenderedText, .attnlab-source';
  const found = {{}};
  for (const cell of p.querySelectorAll('.jp-Cell')) {{
    if (cell.closest('aside.notes') || !shown(cell)) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
      const el = n.parentElement;
      const text = n.textContent.replace(/[\\s\\u00b6\\u200b]+/g, ' ').trim();
      if (!text || el.closest(math) || el.closest('.jp-InputPrompt, .jp-OutputPrompt')) continue;
      const box = el.getBoundingClientRect();
      if (box.width === 0 || box.height === 0 || !shown(el)) continue;
      const kind = el.closest(code) ? 'code' : el.closest(output) ? 'output'
        : el.closest('.jp-RenderedMarkdown') ? 'markdown'
        : el.closest('.jupyter-widgets') ? 'widget' : 'other';
      const size = parseFloat(getComputedStyle(el).fontSize);
      if (size + 0.01 >= mins[kind]) continue;
      const key = kind + ' ' + size;
      if (!found[key]) found[key] = {{kind, size, min: mins[kind], text: text.slice(0, 40)}};
    }}
  }}
  return Object.values(found);
}}
"""

# The pictures shown on the present slide: digest of their bytes, their own width and the
# width the browser shows them at; the bytes too (base64) of those whose digest is not in
# ``seen`` (each picture is read once per walk).
PICTURES_JS = f"""
async (seen) => {{
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  const out = [];
  for (const img of p.querySelectorAll('.jp-Cell img')) {{
    if (img.closest('aside.notes') || !shown(img) || !img.naturalWidth) continue;
    const box = img.getBoundingClientRect();
    if (box.width === 0) continue;
    let digest = 'unreadable', data = null;
    try {{
      const bytes = await (await fetch(img.src)).arrayBuffer();
      const hash = await crypto.subtle.digest('SHA-1', bytes);
      digest = Array.from(new Uint8Array(hash)).map(b => b.toString(16).padStart(2, '0')).join('');
      if (!seen.includes(digest)) {{
        let s = '';
        const u = new Uint8Array(bytes);
        for (let i = 0; i < u.length; i += 0x8000) {{
          s += String.fromCharCode(...u.subarray(i, i + 0x8000));
        }}
        data = btoa(s);
      }}
    }} catch (e) {{ digest = 'unreadable: ' + e; }}
    out.push({{digest, data, natural: img.naturalWidth, shown: box.width,
              src: img.src.startsWith('data:') ? 'data: URL' : img.src.slice(0, 80)}});
  }}
  return out;
}}
"""

# attnlab widgets on the present slide that show no picture (an empty Stack, a frame not
# chosen): the first words of their cell's source.
EMPTY_WIDGETS_JS = f"""
(pattern) => {{
  {_SOURCE_OF}
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  const call = new RegExp(pattern);
  const out = [];
  for (const cell of p.querySelectorAll('.jp-CodeCell')) {{
    if (cell.closest('aside.notes') || !shown(cell)) continue;
    const source = sourceOf(cell);
    if (!call.test(source)) continue;
    const pictures = Array.from(cell.querySelectorAll('.jp-OutputArea-output img'))
      .filter(img => shown(img) && img.naturalWidth > 0 && img.getBoundingClientRect().height > 0);
    if (!pictures.length) out.push(source.trim().slice(0, 60));
  }}
  return out;
}}
"""

# The code inputs the present slide shows (hidden ones are not): their lines (CodeMirror's in
# RISE, the highlighted <pre>'s in the export) and first words.
INPUTS_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  return Array.from(p.querySelectorAll('.jp-CodeCell .jp-InputArea'))
    .filter(a => !a.closest('aside.notes') && shown(a) && a.getBoundingClientRect().height > 0)
    .map(a => {{
      const editor = a.querySelectorAll('.cm-line').length;
      const pre = a.querySelector('pre');
      const lines = editor || (pre ? pre.textContent.replace(/\\n+$/, '').split('\\n').length : 0);
      return {{lines, text: a.textContent.replace(/\\s+/g, ' ').trim().slice(0, 50)}};
    }});
}}
"""

# The box the present slide's shown content spans, in px of the screen: the union of its
# text's own lines (a paragraph's box is the slide's width, its words may not be) and of its
# pictures, canvases and widgets' controls, in its shown cells (the title included).
FILL_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return null;
  const shown = {_SHOWN};
  const box = {{top: Infinity, bottom: -Infinity, left: Infinity, right: -Infinity}};
  const add = r => {{
    if (r.width === 0 || r.height === 0) return;
    box.top = Math.min(box.top, r.top); box.bottom = Math.max(box.bottom, r.bottom);
    box.left = Math.min(box.left, r.left); box.right = Math.max(box.right, r.right);
  }};
  for (const cell of p.querySelectorAll('.jp-Cell')) {{
    if (cell.closest('aside.notes') || !shown(cell)) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
      if (!n.textContent.trim() || !shown(n.parentElement)) continue;
      if (n.parentElement.closest('script, style, .jp-InputPrompt, .jp-OutputPrompt')) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      for (const r of range.getClientRects()) add(r);
    }}
    for (const e of cell.querySelectorAll('img, svg, canvas, input, button, select, textarea')) {{
      if (shown(e) && !e.closest('mjx-container, .jp-InputPrompt')) add(e.getBoundingClientRect());
    }}
  }}
  return box.bottom > box.top ? box : null;
}}
"""

# Text and pictures of the present slide's shown cells under reveal.js's navigation arrows or
# slide number (the room cannot read them there): the first words of each.
UNDER_CONTROLS_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  const marks = Array.from(document.querySelectorAll('.reveal .controls button, .reveal .slide-number'))
    .filter(e => shown(e)).map(e => e.getBoundingClientRect()).filter(r => r.width && r.height);
  const hit = r => marks.some(m => r.left < m.right && r.right > m.left && r.top < m.bottom
                                   && r.bottom > m.top);
  const found = new Set();
  for (const cell of p.querySelectorAll('.jp-Cell')) {{
    if (cell.closest('aside.notes') || !shown(cell)) continue;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
      if (!n.textContent.trim() || !shown(n.parentElement)) continue;
      const range = document.createRange();
      range.selectNodeContents(n);
      if (Array.from(range.getClientRects()).some(hit)) found.add(n.textContent.trim().slice(0, 40));
    }}
    for (const e of cell.querySelectorAll('img, canvas, input, button, select')) {{
      if (shown(e) && hit(e.getBoundingClientRect())) found.add(e.tagName.toLowerCase());
    }}
  }}
  return Array.from(found);
}}
"""

# Headings of the present slide that show a "¶" anchor (as the room sees them: innerText).
PILCROW_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return [];
  return Array.from(p.querySelectorAll('h1, h2, h3, h4, h5, h6'))
    .filter(h => !h.closest('aside.notes') && h.innerText.includes('\u00b6'))
    .map(h => h.innerText.slice(0, 60));
}}
"""

# Test markers in the text of the shown cells of the present slide (input, outputs, markdown).
SHOWN_TEXT_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return '';
  const shown = {_SHOWN};
  return Array.from(p.querySelectorAll('.jp-Cell'))
    .filter(c => !c.closest('aside.notes') && shown(c))
    .map(c => c.textContent).join('\\n');
}}
"""

# The controls of the widgets on the present slide that the walk has not moved yet: sliders,
# checkboxes and toggle buttons that are shown.  Each gets data-attnlab-control=<n> (a handle
# for Playwright) and is described: kind, label, and the cell (its source) it belongs to.
CONTROLS_JS = f"""
(kinds) => {{
  {_TEXT_OF}
  {_SOURCE_OF}
  const p = {_SLIDE};
  if (!p) return [];
  const shown = {_SHOWN};
  window.__attnlabControls = window.__attnlabControls || 0;
  const selectors = {{
    slider: '.widget-slider',
    checkbox: '.widget-checkbox',
    toggle: '.widget-toggle-buttons, .widget-toggle-button:not(.widget-toggle-buttons *)',
  }};
  const out = [];
  for (const cell of p.querySelectorAll('.jp-CodeCell')) {{
    if (cell.closest('aside.notes') || !shown(cell)) continue;
    const source = sourceOf(cell);
    for (const kind of kinds) {{
      for (const c of cell.querySelectorAll('.jp-OutputArea-output ' +
                                            selectors[kind].split(', ').join(', .jp-OutputArea-output '))) {{
        if (c.dataset.attnlabControl || !shown(c)) continue;
        if (c.querySelector('input:disabled, button:disabled')) continue;
        c.dataset.attnlabControl = String(++window.__attnlabControls);
        if (!cell.dataset.attnlabCell) cell.dataset.attnlabCell = 'c' + c.dataset.attnlabControl;
        const named = c.querySelector('.widget-label');
        const label = kind === 'toggle'
          ? Array.from(c.querySelectorAll('button')).map(b => textOf(b)).join(' / ')
          : (named && textOf(named)) || textOf(c).slice(0, 30);
        out.push({{id: c.dataset.attnlabControl, cell: cell.dataset.attnlabCell, kind, source,
                  label}});
      }}
    }}
  }}
  return out;
}}
"""

# Text on the present slide that MathJax left raw ($...$, $$...$$, a TeX command), MathJax
# errors, and formulas whose letters a text-transform changes.
RAW_TEX_JS = rf"""
() => {{
  const p = {_SLIDE};
  if (!p) return ['no present slide'];
  const skip = 'mjx-container, .MathJax, .MathJax_CHTML, .MathJax_Preview, .mjx-chtml, script, '
    + 'style, code, pre, .jp-CodeCell .jp-InputArea, .CodeMirror, .cm-editor, aside.notes';
  const walker = document.createTreeWalker(p, NodeFilter.SHOW_TEXT);
  let text = '';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {{
    if (!n.parentElement.closest(skip)) text += n.textContent + ' ';
  }}
  const raw = text.match(/\$\$[^$]+\$\$|\$[^$\s][^$]*\$|\\(?:sqrt|frac|alpha|sum|top|mathrm|text|left|right|cdot|dots|exp|log|in|le|ge|times|mathbf|operatorname|begin|end)\b/g);
  const errors = Array.from(p.querySelectorAll('mjx-merror, .MathJax_Error, .merror'))
    .map(e => 'MathJax error: ' + e.textContent);
  // A heading style such as text-transform: uppercase turns d_k into D_K inside formulas.
  const capitals = Array.from(p.querySelectorAll('mjx-container, .MathJax_CHTML'))
    .filter(m => getComputedStyle(m).textTransform !== 'none')
    .map(m => 'formula drawn with text-transform ' + getComputedStyle(m).textTransform + ': '
      + (m.closest('h1, h2, h3, h4, h5, h6, p, li') || m).textContent.slice(0, 60));
  return (raw || []).concat(errors, capitals);
}}
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
CELLS_JS = f"""
() => {{
  {_SOURCE_OF}
  return Array.from(document.querySelectorAll('.jp-Cell')).map(c => {{
    const outputs = mime => Array.from(c.querySelectorAll(
      mime.map(m => `.jp-OutputArea-output[data-mime-type="${{m}}"]`).join(', ')))
      .map(e => e.textContent);
    const code = c.classList.contains('jp-CodeCell');
    return {{
      code,
      source: code ? sourceOf(c) : '',
      inputShown: !!c.querySelector('.jp-InputArea'),
      prompt: (c.querySelector('.jp-InputArea .jp-InputPrompt') || {{textContent: ''}})
        .textContent.trim(),
      inNotes: !!c.closest('aside.notes'),
      visible: c.checkVisibility({{opacityProperty: true, visibilityProperty: true}}),
      stderr: outputs(['application/vnd.jupyter.stderr']),
      plain: outputs(['text/plain', 'application/vnd.jupyter.stdout']),
      widgetOutputs: outputs(['application/vnd.jupyter.widget-view+json']).length,
      widgets: c.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length,
      text: c.textContent.slice(0, 2000),
    }};
  }});
}}
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

# Watches one cell's shown pictures from now on: each change of which <img> is shown or of its
# src is recorded once the new picture is decoded and the next frame is drawn
# (requestAnimationFrame), and so are the drag's last mouse move and the release (pointerup).
WATCH_PICTURE_JS = """
(cell) => {
  const shownSrc = () => Array.from(cell.querySelectorAll('.jp-OutputArea-output img'))
    .filter(i => i.checkVisibility()).map(i => i.src);
  const w = {released: null, moved: null, changes: [], last: shownSrc().join('|')};
  if (window.__attnlabWatch) window.__attnlabWatch.stop();
  window.__attnlabWatch = w;
  const seen = () => {
    const now = shownSrc(), key = now.join('|');
    if (key === w.last) return;
    w.last = key;
    const imgs = Array.from(cell.querySelectorAll('.jp-OutputArea-output img'))
      .filter(i => i.checkVisibility());
    Promise.all(imgs.map(i => i.decode().catch(() => null))).then(() =>
      requestAnimationFrame(() => w.changes.push({t: performance.now(), key})));
  };
  const observer = new MutationObserver(seen);
  observer.observe(cell, {subtree: true, childList: true, attributes: true,
                          attributeFilter: ['src', 'class', 'style', 'hidden']});
  const up = () => { if (w.released === null) w.released = performance.now(); };
  const move = () => { if (w.released === null) w.moved = performance.now(); };
  window.addEventListener('pointerup', up, true);
  window.addEventListener('pointermove', move, true);
  w.stop = () => {
    observer.disconnect();
    window.removeEventListener('pointerup', up, true);
    window.removeEventListener('pointermove', move, true);
  };
  return w.last;
}
"""
WATCH_STATE_JS = """
() => { const w = window.__attnlabWatch;
        return {released: w.released, moved: w.moved, changes: w.changes,
                now: performance.now(), last: w.last}; }
"""
WATCH_STOP_JS = "() => window.__attnlabWatch && window.__attnlabWatch.stop()"

# MathJax 2 (the exported slides) typesets again on every slide change; MathJax 3 (JupyterLab)
# typesets once, when a cell renders.
MATHJAX_IDLE_JS = """
() => !(window.MathJax && MathJax.Hub) || (MathJax.Hub.queue.pending === 0
  && !MathJax.Hub.queue.running)
"""

IMAGES_LOADED_JS = f"""
() => Array.from(({_SLIDE} || document).querySelectorAll('img')).every(i => i.complete)
"""

# Typeset formulas on the present slide that take no room (typeset while hidden, not yet redrawn).
FLAT_MATH_JS = f"""
() => {{
  const p = {_SLIDE};
  if (!p) return 0;
  return Array.from(p.querySelectorAll('mjx-container, .MathJax_CHTML'))
    .filter(m => !m.closest('aside.notes'))
    .filter(m => {{ const r = m.getBoundingClientRect(); return r.width === 0 || r.height === 0; }})
    .length;
}}
"""


# ---------------------------------------------------------------------------- results
@dataclass
class Overflow:
    """The worst overflow seen on one slide, over its fragment steps."""

    slide: dict  # PRESENT_JS of the slide
    bottom: int = 0
    right: int = 0
    where: list[str] = field(default_factory=list)

    def add(self, step: str, found: dict) -> None:
        self.bottom = max(self.bottom, found["bottom"])
        self.right = max(self.right, found["right"])
        edges = [f"{found[e]} px past the {e}" for e in ("bottom", "right") if found[e]]
        self.where.append(f"{step}: {found['part']} of {found['cell']!r}: {', '.join(edges)}")

    def line(self) -> str:
        edges = [
            f"{px} px past the {'bottom' if e == 'bottom' else 'right edge'}"
            for e, px in (("bottom", self.bottom), ("right", self.right))
            if px
        ]
        return f"{where_slide(self.slide)}: {' and '.join(edges)}"


@dataclass
class Control:
    """One widget control moved by the walk."""

    id: str
    cell: str
    kind: str  # slider | checkbox | toggle
    label: str
    widget: str  # the widget's class, or the first line of its cell
    slide: dict
    source: str = ""
    changed: bool = False
    problem: str = ""
    latencies_ms: list[float] = field(default_factory=list)


@dataclass
class Walk:
    steps: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    overflows: dict[int, Overflow] = field(default_factory=dict)
    scaffolding: dict[int, tuple[dict, set[str]]] = field(default_factory=dict)
    controls: list[Control] = field(default_factory=list)
    # slide index -> (the slide, problems): text too small, pictures too small or unlabelled
    small_type: dict[int, tuple[dict, list[str]]] = field(default_factory=dict)
    bad_pictures: dict[int, tuple[dict, list[str]]] = field(default_factory=dict)
    records: dict[str, dict | None] = field(default_factory=dict)  # digest -> its record
    pictures_checked: int = 0
    # slide index -> (the slide, the code inputs it shows: INPUTS_JS's, each once)
    code: dict[int, tuple[dict, list[dict]]] = field(default_factory=dict)
    # slide index -> (the slide, the box its content spans at its fullest step: FILL_JS's)
    fill: dict[int, tuple[dict, dict]] = field(default_factory=dict)
    # slide index -> (the slide, what shows under the navigation arrows: UNDER_CONTROLS_JS's)
    under_controls: dict[int, tuple[dict, list[str]]] = field(default_factory=dict)

    def overflow_report(self) -> str:
        if not self.overflows:
            return "every slide and fragment fits the 1280x720 screen\n"
        lines = []
        for o in self.overflows.values():
            lines.append(o.line())
            lines.extend(f"    {w}" for w in o.where)
        return "\n".join(lines) + "\n"

    def latency_record(self) -> dict:
        widgets: dict[str, dict] = {}
        for c in self.controls:
            if c.kind != "slider":
                continue
            name = f"{c.widget}, slide {c.slide['index'] + 1}"
            entry = widgets.setdefault(name, {"sliders": {}, "moves_ms": []})
            entry["sliders"][c.label] = {
                "moves_ms": [round(x, 1) for x in c.latencies_ms],
                "median_ms": round(statistics.median(c.latencies_ms), 1)
                if c.latencies_ms
                else None,
                "problem": c.problem,
            }
            entry["moves_ms"] += [round(x, 1) for x in c.latencies_ms]
        for entry in widgets.values():
            moves = entry["moves_ms"]
            entry["median_ms"] = round(statistics.median(moves), 1) if moves else None
        return widgets


class Clock:
    """Seconds spent in each phase of a test (printed, to keep the browser tests fast)."""

    def __init__(self) -> None:
        self.start = self.last = time.monotonic()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.monotonic()
        self.laps[name] = self.laps.get(name, 0.0) + now - self.last
        self.last = now

    def __str__(self) -> str:
        laps = ", ".join(f"{k} {v:.0f} s" for k, v in self.laps.items())
        return f"{time.monotonic() - self.start:.0f} s ({laps})"


def where_slide(slide: dict) -> str:
    """'slide 18 (10.2) 'Why divide...'': the place in the deck, then the number reveal.js
    shows in the corner (h.v, 1-based; h alone on a top-level slide)."""
    h, v = slide["h"] + 1, slide["v"] + 1
    shown = f"{h}.{v}" if slide["v"] else f"{h}"
    return f"slide {slide['index'] + 1} ({shown}) {slide['title']!r}"


def where_step(slide: dict) -> str:
    return f"{where_slide(slide)} step {slide['visible']}/{slide['fragments']}"


# ---------------------------------------------------------------------------- python helpers
def present(page) -> dict | None:
    return page.evaluate(PRESENT_JS)


def use_sources(page, nb: dict) -> None:
    """Give the page's scripts the notebook's sources (``sourceOf``), now and after every
    navigation: a hidden input shows none."""
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in nb["cells"]]  # fmt: skip
    ids = [c.get("id", "") for c in nb["cells"]]
    known = {"index": sources, "id": dict(zip(ids, sources, strict=True))}
    script = f"window.__attnlabSources = {json.dumps(known)};"
    page.add_init_script(script)
    page.evaluate(f"() => {{ {script} }}")


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


def readout(one_slider) -> str:
    return one_slider.locator(".widget-readout").first.inner_text().strip()


def drag_to(page, one_slider, fraction: float, steps: int = 1) -> None:
    """Drag the slider's handle with the mouse (reveal.js owns the arrow keys) to ``fraction``
    of its track, and release."""
    handle = one_slider.locator(".noUi-handle").first.bounding_box()
    track = one_slider.locator(".noUi-target").first.bounding_box()
    assert handle and track, "the slider is not on screen"
    x0, y = handle["x"] + handle["width"] / 2, handle["y"] + handle["height"] / 2
    x1 = track["x"] + fraction * track["width"]
    page.mouse.move(x0, y)
    page.mouse.down()
    page.mouse.move(x1, y, steps=steps)
    page.mouse.up()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


def far_fraction(page, one_slider) -> float:
    """70% of the track, or 30% when the handle already sits right of the middle."""
    handle = one_slider.locator(".noUi-handle").first.bounding_box()
    track = one_slider.locator(".noUi-target").first.bounding_box()
    assert handle and track, "the slider is not on screen"
    return 0.3 if handle["x"] + handle["width"] / 2 > track["x"] + track["width"] / 2 else 0.7


def pictures(cell) -> list[str]:
    """SHA-1 digests of the shown pictures of a cell."""
    return [p["digest"] for p in cell.evaluate(IMAGES_JS)]


def wait_for_new_picture(cell, first: list[str], wait_s: float = 10.0) -> bool:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        now = pictures(cell)
        if now and now != first:
            return True
        time.sleep(0.1)
    return False


def operate(page, control, kind: str) -> None:
    """Move a slider far, tick a checkbox, or pick another toggle button."""
    if kind == "slider":
        drag_to(page, control, far_fraction(page, control), steps=8)
    elif kind == "checkbox":
        control.locator("input[type=checkbox]").first.click()
    else:
        buttons = control.locator("button:not(.mod-active)")
        (buttons.first if buttons.count() else control.locator("button").first).click()
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


def state_text(control, kind: str) -> str:
    """What the control shows as its value (a slider's readout, ticked, the active button)."""
    if kind == "slider":
        return readout(control)
    if kind == "checkbox":
        return str(control.locator("input[type=checkbox]").first.is_checked())
    return control.evaluate(
        "c => Array.from(c.querySelectorAll('button.mod-active'))"
        ".map(b => b.textContent).join('|') || String(c.classList.contains('mod-active'))"
    )


def check_control_changes_picture(page, control: Control) -> None:
    """Offline: one move of the control must change the widget's picture."""
    cell = page.locator(f'[data-attnlab-cell="{control.cell}"]')
    handle = page.locator(f'[data-attnlab-control="{control.id}"]')
    first = pictures(cell)
    if not first:
        control.problem = "no picture in the widget"
        return
    before = state_text(handle, control.kind)
    operate(page, handle, control.kind)
    after = state_text(handle, control.kind)
    if before == after:
        control.problem = f"moving it left it at {before!r}"
        return
    control.changed = wait_for_new_picture(cell, first, wait_s=5.0)
    if not control.changed:
        control.problem = f"{before!r} -> {after!r} but the picture did not change"


def time_slider(page, control: Control, moves: int = LATENCY_MOVES, quiet_s: float = 0.5) -> None:
    """Live: move a slider ``moves`` times; each time record the milliseconds from releasing
    the mouse to the last new picture on screen (the widget quiet for ``quiet_s`` after it)."""
    cell = page.locator(f'[data-attnlab-cell="{control.cell}"]')
    handle = page.locator(f'[data-attnlab-control="{control.id}"]')
    first = pictures(cell)
    if not first:
        control.problem = "no picture in the widget"
        return
    targets = [0.8, 0.2, 0.65, 0.35, 0.9, 0.1, 0.55]
    for fraction in (targets * (1 + moves // len(targets)))[:moves]:
        before = readout(handle)
        cell.evaluate(WATCH_PICTURE_JS)
        drag_to(page, handle, fraction)
        if readout(handle) == before:
            page.evaluate(WATCH_STOP_JS)
            continue  # this spot of the track gives the same value: no move to time
        latency = wait_quiet(page, quiet_s)
        page.evaluate(WATCH_STOP_JS)
        if latency is None:
            control.problem = (
                f"the value went from {before!r} to {readout(handle)!r} but no new picture"
            )
            continue
        control.latencies_ms.append(latency)
    # each timed move ended on a new picture (a move back to the first value may end on it)
    control.changed = bool(control.latencies_ms)
    if not control.latencies_ms and not control.problem:
        control.problem = f"dragging the handle never moved it from {readout(handle)!r}"


def wait_quiet(page, quiet_s: float, wait_s: float = 15.0) -> float | None:
    """Milliseconds from the end of the drag to the last picture change, once nothing changed
    for ``quiet_s``; None when the picture never changed within ``wait_s``.

    The drag ends with one mouse move to the final spot and the release right after it (a few
    ms later); the slider sends its value on the move (continuous_update) or on the release,
    so the clock starts at the move, or at the release when no move was seen."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        w = page.evaluate(WATCH_STATE_JS)
        if w["changes"] and w["now"] - w["changes"][-1]["t"] > quiet_s * 1000:
            start = w["moved"] if w["moved"] is not None else w["released"]
            if start is None:
                start = w["changes"][0]["t"]
            return max(0.0, w["changes"][-1]["t"] - start)
        time.sleep(0.05)
    return None


PROMPT = re.compile(r"^\s*(?:In\s*)?\[[\d\s]*\]:\s*")


def widget_name(source: str) -> str:
    """The attnlab widget a cell builds, else the first line of its source."""
    found = WIDGET_CALL.search(source)
    if found:
        return found.group(0).rstrip("(")
    source = PROMPT.sub("", source).strip()
    return source.splitlines()[0][:40] if source else "widget"


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


def check_step(page, walk: Walk, state: dict, label: str = "") -> None:
    """Fit and scaffolding of the present step."""
    where = where_step(state) + label
    for found in page.evaluate(FIT_JS):
        walk.overflows.setdefault(state["index"], Overflow(state)).add(where, found)
    markers = set(SCAFFOLDING.findall(page.evaluate(SHOWN_TEXT_JS)))
    if markers:
        walk.scaffolding.setdefault(state["index"], (state, set()))[1].update(markers)
    check_type(page, walk, state, where)
    check_pictures(page, walk, state, where)
    shown_code = walk.code.setdefault(state["index"], (state, []))[1]
    shown_code += [i for i in page.evaluate(INPUTS_JS) if i not in shown_code]
    under = page.evaluate(UNDER_CONTROLS_JS)
    if under:
        hidden = walk.under_controls.setdefault(state["index"], (state, []))[1]
        hidden += [u for u in under if u not in hidden]
    box = page.evaluate(FILL_JS)
    if box:
        _, before = walk.fill.setdefault(state["index"], (state, dict(box)))
        before.update(
            top=min(before["top"], box["top"]),
            bottom=max(before["bottom"], box["bottom"]),
            left=min(before["left"], box["left"]),
            right=max(before["right"], box["right"]),
        )
    for source in page.evaluate(EMPTY_WIDGETS_JS, WIDGET_CALL.pattern):
        problem = f"{where}: the widget of {source!r} shows no picture"
        if problem not in walk.problems:
            walk.problems.append(problem)


def check_type(page, walk: Walk, state: dict, where: str) -> None:
    """Every shown text of the present step at least its kind's size (TYPE_JS)."""
    mins = {
        "markdown": MIN_MARKDOWN_PX,
        "code": MIN_CODE_PX,
        "output": MIN_OUTPUT_PX,
        "widget": MIN_WIDGET_PX,
        "other": MIN_TEXT_PX,
    }
    for t in page.evaluate(TYPE_JS, mins):
        line = f"{where}: {t['kind']} text at {t['size']:g} px (< {t['min']:g}): {t['text']!r}"
        found = walk.small_type.setdefault(state["index"], (state, []))[1]
        if line not in found:
            found.append(line)


@functools.cache
def _figure_pictures() -> dict[str, str]:
    """SHA-1 of each picture in pics/ -> the name of the figure that draws it."""
    return {
        hashlib.sha1(path.read_bytes()).hexdigest(): path.stem
        for path in (ROOT / "pics").glob("*.png")
    }


def picture_record(data: bytes) -> dict | None:
    """What a picture draws, in its own pixels: its PNG's record (attnlab.pictures.canvas.png_bytes),
    or, for a picture of pics/, the record of the figure that draws it (attnlab.pictures.figures);
    None when neither says."""
    from PIL import Image

    from attnlab.pictures import typography

    image = Image.open(io.BytesIO(data))
    text = getattr(image, "text", {}).get(typography.RECORD_KEY)
    if text:
        return json.loads(text)
    name = _figure_pictures().get(hashlib.sha1(data).hexdigest())
    if name is None:
        return None
    from attnlab.pictures import figures, heatmaps

    fig = figures.FIGURES[name]()
    sizes = typography.text_sizes(fig, image.width)  # at the PNG's own width
    px, text = min(sizes) if sizes else (0.0, "")
    labels = typography.label_sizes(fig, image.width)
    label_px, label = min(labels) if labels else (0.0, "")
    hm = [h.record() for h in heatmaps.heatmaps_of(fig)]
    return {
        "min_text_px": px,
        "min_text": text[:40],
        "min_label_px": label_px,
        "min_label": label[:40],
        "heatmaps": hm,
    }


def picture_problems(record: dict | None, shown: float, natural: float) -> list[str]:
    """Why a picture shown ``shown`` px wide (its own width ``natural``) does not read."""
    if record is None:
        return ["a picture that records neither its type nor its figure"]
    problems = []
    px = record["min_text_px"] * shown / natural
    if record["min_text_px"] and px < MIN_TEXT_PX - 0.05:
        problems.append(
            f"text {px:.1f} px tall (< {MIN_TEXT_PX:g}): {record['min_text']!r}, the picture "
            f"shown {shown:.0f} px wide, drawn {natural:.0f}"
        )
    label_px = record.get("min_label_px", 0.0) * shown / natural
    if record.get("min_label_px") and label_px < MIN_LABEL_PX - 0.05:
        problems.append(
            f"tick or axis label {label_px:.1f} px tall (< {MIN_LABEL_PX:g}): "
            f"{record['min_label']!r}, the picture shown {shown:.0f} px wide, drawn {natural:.0f}"
        )
    for heat in record["heatmaps"]:
        keys, queries = heat["keys"], heat["queries"]
        if max(len(keys), len(queries)) > MAX_LABELLED_TOKENS:
            continue
        missing = [k for k in keys if k not in heat["keys_labelled"]]
        missing += [q for q in queries if q not in heat["queries_labelled"]]
        if missing or len(heat["keys_labelled"]) < len(keys):
            problems.append(f"a heatmap of {len(queries)}x{len(keys)} tokens leaves "
                            f"{len(missing)} unlabelled: {missing[:5]}")  # fmt: skip
        elif heat["crowded"]:
            problems.append(f"a heatmap of {len(queries)}x{len(keys)} tokens too small for "
                            "its labels (they touch)")  # fmt: skip
    return problems


def check_pictures(page, walk: Walk, state: dict, where: str) -> None:
    """Every shown picture of the present step reads from the back (picture_problems)."""
    for pic in page.evaluate(PICTURES_JS, list(walk.records)):
        if pic["data"] is not None:
            walk.records[pic["digest"]] = picture_record(base64.b64decode(pic["data"]))
        walk.pictures_checked += 1
        for problem in picture_problems(walk.records.get(pic["digest"]), pic["shown"],
                                        pic["natural"]):  # fmt: skip
            line = f"{where}: {problem} ({pic['src']})"
            found = walk.bad_pictures.setdefault(state["index"], (state, []))[1]
            if line not in found:
                found.append(line)


def check_formulas_and_notes(page, walk: Walk, state: dict, flat: int) -> None:
    where = where_step(state)
    for title in page.evaluate(PILCROW_JS):
        walk.problems.append(f"{where}: a '¶' shows in the title {title!r}")
    if flat:
        walk.problems.append(f"{where}: {flat} formulas typeset but not drawn")
    for raw in raw_tex(page):
        walk.problems.append(f"{where}: formula problem: {raw!r}")
    for cell in cells(page):
        if cell["inNotes"] and cell["visible"]:
            walk.problems.append(f"{where}: speaker notes visible: {cell['text'][:80]!r}")


def move_controls(page, walk: Walk, state: dict, live: bool) -> bool:
    """Move the controls that show for the first time; True when any was moved."""
    kinds = ["slider"] if live else ["slider", "checkbox", "toggle"]
    found = page.evaluate(CONTROLS_JS, kinds)
    for c in found:
        control = Control(
            c["id"], c["cell"], c["kind"], c["label"], widget_name(c["source"]), state, c["source"]
        )
        walk.controls.append(control)
        try:
            if live:
                time_slider(page, control)
            else:
                check_control_changes_picture(page, control)
        except AssertionError as err:
            control.problem = str(err)
    return bool(found)


def walk(page, folder: Path, n_cells: int, live: bool, clock: Clock | None = None) -> Walk:
    """Every slide and fragment from the first to the last (Space): a screenshot, the checks
    above, and the widget controls moved (``live``: the slideshow with a kernel)."""
    result = Walk()
    page.keyboard.press("Home")  # reveal.js: first slide
    page.wait_for_function(f"() => {_SLIDE}")
    time.sleep(0.3)
    state = present(page)
    assert state and state["index"] == 0, f"Home did not go to the first slide: {state}"
    for _ in range(10 * n_cells + 20):  # a hard stop, far above any real deck
        result.steps.append(state)
        flat = settle(page)
        shoot(page, folder, state)
        check_formulas_and_notes(page, result, state, flat)
        check_step(page, result, state)
        if clock:
            clock.lap("walk")
        if move_controls(page, result, state, live):
            if clock:
                clock.lap("controls")
            time.sleep(0.3)
            check_step(page, result, state, " (after moving its controls)")
            shoot(page, folder, state, "-after-controls")
        nxt = next_step(page, state)
        if nxt is None:
            break
        state = nxt
    return result


def settle(page, wait_s: float = 10.0) -> int:
    """Let a fragment fade in and MathJax draw the slide's formulas before a screenshot;
    returns how many formulas still take no room after wait_s."""
    time.sleep(0.25)
    page.wait_for_function(MATHJAX_IDLE_JS, timeout=15_000)
    try:  # a picture not loaded yet takes no room: measuring then would miss its overflow
        page.wait_for_function(IMAGES_LOADED_JS, timeout=10_000)
    except PlaywrightTimeout:
        pass  # BROKEN_IMAGES_JS reports pictures that never load
    deadline = time.monotonic() + wait_s
    while (flat := page.evaluate(FLAT_MATH_JS)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return flat


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


# ---------------------------------------------------------------------------- the verdicts
def fit_problems(result: Walk, deck: Deck) -> list[str]:
    """Overflows the deck is not built to have, and built-in ones that were not found."""
    expected = dict(deck.overflows)
    problems = []
    for o in result.overflows.values():
        edge = expected.get(o.slide["title"])
        if any(getattr(o, e) and e != edge for e in ("bottom", "right")):
            problems.append(o.line() + "\n    " + "\n    ".join(o.where[:6]))
    for title, edge in deck.overflows:
        hit = [o for o in result.overflows.values() if o.slide["title"] == title]
        if not hit or not getattr(hit[0], edge):
            problems.append(f"{title!r} is built to run past the {edge}; the check found nothing")
    return problems


def scaffolding_problems(result: Walk, deck: Deck) -> list[str]:
    problems = [
        f"{where_slide(slide)} shows test scaffolding: {sorted(markers)}"
        for slide, markers in result.scaffolding.values()
        if slide["title"] not in deck.scaffolding
    ]
    seen = {slide["title"] for slide, _ in result.scaffolding.values()}
    problems += [
        f"{t!r} shows a test marker but the check found none"
        for t in deck.scaffolding
        if t not in seen
    ]
    return problems


def control_problems(result: Walk, deck: Deck, live: bool) -> list[str]:
    """Every widget cell had its controls moved; each changed the picture (offline: except the
    widgets the deck draws in the kernel on purpose, which must not)."""
    problems = []
    dead = [re.compile(p) for p in deck.dead_offline] if not live else []
    moved = len({c.cell for c in result.controls})
    expected = deck.controlled_widgets
    if (expected is None and deck.expected_widgets() and not moved) or (
        expected is not None and moved != expected
    ):
        names = sorted({c.widget for c in result.controls})
        problems.append(
            f"controls found in {moved} widgets ({names}); the deck has "
            f"{deck.expected_widgets()} widget cells"
            + (f", {expected} of them with controls" if expected is not None else "")
        )
    for c in result.controls:
        on_purpose = not live and any(d.search(c.source) for d in dead)
        name = f"{where_slide(c.slide)}: {c.widget} {c.kind} {c.label!r}"
        if on_purpose and c.changed:
            problems.append(f"{name} changed the picture with no kernel: the check is broken")
        elif not on_purpose and not c.changed:
            problems.append(f"{name}: {c.problem or 'the picture did not change'}")
    return problems


def readability_problems(result: Walk, deck: Deck) -> list[str]:
    """Text or pictures too small, heatmaps unlabelled, where the deck is not built to have
    them; and each slide built to have them that the checks did not catch."""
    problems = []
    for found, expected, what in (
        (result.small_type, deck.small_type, "text too small"),
        (result.bad_pictures, deck.bad_pictures, "a picture that does not read"),
    ):
        for slide, lines in found.values():
            if slide["title"] not in expected:
                problems.append(where_slide(slide) + ":\n    " + "\n    ".join(lines[:8]))
        seen = {slide["title"] for slide, _ in found.values()}
        problems += [f"{t!r} is built to show {what}; the check found none"
                     for t in expected if t not in seen]  # fmt: skip
    if not result.pictures_checked and (deck.bad_pictures or deck.expected_widgets()):
        problems.append("no picture was measured on any slide")
    return problems


def code_problems(result: Walk, deck: Deck) -> list[str]:
    """Main-path slides showing more code than the room reads: an input over MAX_CODE_LINES
    lines where the deck is not built to show one, more than ``max_code_slides`` slides with
    code; and each slide built to show too much that the check did not catch."""
    slides = sorted(result.code.values(), key=lambda found: found[0]["index"])
    backup = [
        s["index"] for s, _ in slides if deck.backup_title and s["title"] == deck.backup_title
    ]
    main = [(s, inputs) for s, inputs in slides if not backup or s["index"] < backup[0]]
    problems, caught = [], set()
    for slide, inputs in main:
        for i in inputs:
            if i["lines"] <= MAX_CODE_LINES:
                continue
            caught.add(slide["title"])
            if slide["title"] not in deck.long_code:
                problems.append(f"{where_slide(slide)}: {i['lines']} lines of code: {i['text']!r}")
    problems += [f"{t!r} is built to show too much code; the check found none"
                 for t in deck.long_code if t not in caught]  # fmt: skip
    with_code = [where_slide(s) for s, inputs in main if inputs]
    if deck.max_code_slides is not None and len(with_code) > deck.max_code_slides:
        problems.append(
            f"{len(with_code)} main-path slides show code (at most {deck.max_code_slides}): "
            + "; ".join(with_code)
        )
    if deck.backup_title and not backup:
        problems.append(f"no slide titled {deck.backup_title!r}: where does the backup begin?")
    return problems


def fill_problems(result: Walk, deck: Deck) -> list[str]:
    """Main-path slides whose content spans less than half the screen's height or width
    (FILL_JS), but those the deck is built to leave sparse; and each of those the check did not
    catch."""
    if deck.sparse is None:
        return []
    W, H = SLIDE_SIZE
    found = sorted(result.fill.values(), key=lambda f: f[0]["index"])
    backup = [s["index"] for s, _ in found if deck.backup_title and s["title"] == deck.backup_title]
    problems, caught = [], set()
    for slide, box in found:
        if backup and slide["index"] >= backup[0]:
            continue
        empty = []
        if box["bottom"] - box["top"] < H / 2:
            empty.append(f"its content {box['bottom'] - box['top']:.0f} px high")
        if box["right"] - box["left"] < W / 2:
            empty.append(f"its content {box['right'] - box['left']:.0f} px wide")
        if not empty:
            continue
        caught.add(slide["title"])
        if slide["title"] not in deck.sparse:
            problems.append(
                f"{where_slide(slide)} leaves half the screen empty: " + ", ".join(empty)
            )
    problems += [f"{t!r} is built to leave half the screen empty; the check found nothing"
                 for t in deck.sparse if t not in caught]  # fmt: skip
    return problems


def controls_problems(result: Walk, deck: Deck) -> list[str]:
    """Slides with text or a picture under the navigation arrows or the slide number, but
    those the deck is built to have; and each of those the check did not catch."""
    problems = [
        f"{where_slide(slide)}: under the navigation arrows: {found[:4]}"
        for slide, found in result.under_controls.values()
        if slide["title"] not in deck.under_controls
    ]
    seen = {slide["title"] for slide, _ in result.under_controls.values()}
    problems += [f"{t!r} is built to show text under the arrows; the check found none"
                 for t in deck.under_controls if t not in seen]  # fmt: skip
    return problems


def fill_report(result: Walk) -> str:
    lines = []
    for slide, box in sorted(result.fill.values(), key=lambda f: f[0]["index"]):
        size = f"{box['right'] - box['left']:.0f} x {box['bottom'] - box['top']:.0f} px"
        lines.append(f"{where_slide(slide)}: y {box['top']:.0f}-{box['bottom']:.0f}, {size}")
    return "\n".join(lines) + "\n"


def code_report(result: Walk) -> str:
    lines = []
    for slide, inputs in sorted(result.code.values(), key=lambda found: found[0]["index"]):
        if inputs:
            lines.append(
                where_slide(slide) + ": " + ", ".join(f"{i['lines']} lines" for i in inputs)
            )
    return "\n".join(lines or ["no slide shows code"]) + "\n"


def readability_report(result: Walk) -> str:
    lines = [f"{result.pictures_checked} pictures measured"]
    for found in (result.small_type, result.bad_pictures):
        for slide, problems in found.values():
            lines.append(where_slide(slide))
            lines.extend(f"    {p}" for p in problems)
    return "\n".join(lines) + "\n"


def save_report(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text)  # a reader (the benchmark) never sees half a report


def screenshot_dir(deck: Deck, kind: str) -> Path:
    """artifacts/slides/<deck>[-<kind>]/, emptied of old screenshots."""
    folder = SLIDES_ARTIFACTS / (deck.name if kind == "rise" else f"{deck.name}-{kind}")
    if folder.exists():
        for old in folder.glob("*.png"):
            old.unlink()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shoot(page, folder: Path, state: dict, suffix: str = "") -> None:
    name = f"slide-{state['index'] + 1:02d}-step-{state['visible']}{suffix}.png"
    page.screenshot(path=str(folder / name))
