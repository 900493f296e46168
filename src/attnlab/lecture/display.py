"""What a deck cell returns: objects that display themselves, and the real source on slides.

Each object has an HTML (or PNG) form for the notebook and a stable text form, so that nbval can
compare the stored outputs: :class:`Table`, :class:`Source`, :class:`Picture` (drawn through
:mod:`attnlab.pictures.canvas`: Agg canvases, no pyplot) and :class:`Message`.
"""

from __future__ import annotations

import ast
import html
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from attnlab.pictures import canvas, frame_cache

__all__ = [
    "Table",
    "Marked",
    "Source",
    "Picture",
    "Message",
    "show_source",
    "MAX_WIDTH_PX",
    "OUTPUT_AREA_PX",
    "CELL_PX",
]

#: The widest a picture is drawn (px at 100 dpi): narrower than the output area of both the
#: RISE slideshow and the offline export at 1280x720, so it is shown at its own size and
#: its type at the size :mod:`attnlab.pictures.typography` sets.
MAX_WIDTH_PX = 960
#: The widest any picture may be (px): the output area of a slide at 1280x720, in RISE and the
#: export, less a margin.  Pictures of three heatmaps with 22 px labels need it.
OUTPUT_AREA_PX = 1205
#: The smallest cell of a heatmap of words (px on the slide).
CELL_PX = 44


@dataclass(frozen=True)
class Marked:
    """A table cell whose characters at the 0-based positions ``wrong`` show in red, bold and
    underlined (not by colour alone): a wrong answer read against the right one above it."""

    text: str
    wrong: frozenset[int] = frozenset()

    def html(self) -> str:
        mark = '<span style="color: #c00000; font-weight: bold; text-decoration: underline">'
        return "".join(
            f"{mark}{html.escape(c)}</span>" if i in self.wrong else html.escape(c)
            for i, c in enumerate(self.text)
        )

    def __str__(self) -> str:
        return self.text


def _cell_html(cell) -> str:
    return cell.html() if isinstance(cell, Marked) else html.escape(str(cell))


@dataclass
class Table:
    """A small table that shows as HTML in the notebook and as aligned text elsewhere."""

    header: list[str]
    rows: list[list[str]]
    caption: str = ""
    first_width: int | None = None  # % of the width for the first column (row labels)
    widths: list[float] | None = None  # % of the width for every column (wins over first_width)
    font_px: int | None = None  # larger type than the slideshow's 20 px, for a table the room reads

    def _repr_html_(self) -> str:
        # Inline styles: the offline export does not load the slideshow's rise.css.  Long
        # strings (digits) wrap inside their cell rather than run off the slide.
        size = f"; font-size: {self.font_px}px" if self.font_px else ""
        td = f'<td style="font-family: monospace; overflow-wrap: anywhere; text-align: left{size}">'
        th = f'<th style="text-align: left{size}">'
        head = "".join(f"{th}{html.escape(h)}</th>" for h in self.header)
        cols = ""
        widths = self.widths
        if self.first_width and not widths:
            rest = (100 - self.first_width) / max(len(self.header) - 1, 1)
            widths = [self.first_width] + [rest] * (len(self.header) - 1)
        if widths:
            cols = "<colgroup>" + "".join(f'<col style="width: {w:.1f}%">' for w in widths)
            cols += "</colgroup>"
        body = "".join(
            "<tr>" + "".join(f"{td}{_cell_html(c)}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        cap = f"<caption>{html.escape(self.caption)}</caption>" if self.caption else ""
        return (
            '<table class="attnlab-table" style="table-layout: fixed; width: 100%">'
            f"{cap}{cols}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        )

    def __repr__(self) -> str:
        cells = [self.header, *[[str(c) for c in row] for row in self.rows]]
        widths = [max(len(r[i]) for r in cells) for i in range(len(self.header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in cells]
        return "\n".join(([self.caption] if self.caption else []) + lines)


@dataclass
class Source:
    """The source of a library function, shown highlighted (HTML) or as plain text."""

    name: str
    code: str

    def _repr_html_(self) -> str:

        body = highlight(self.code, PythonLexer(), HtmlFormatter(noclasses=True, style="default"))
        title = f"<div class='attnlab-source-name'>{html.escape(self.name)}</div>"
        return f"<div class='attnlab-source'>{title}{body}</div>"

    def __repr__(self) -> str:
        return f"# {self.name}\n{self.code}"


class Picture:
    """A figure drawn on an Agg canvas; shows as PNG, its text form is a one-line summary.

    ``Picture(fig, summary, data)``: ``fig`` a Figure, or a function that draws it, called
    when the figure is first needed (``.fig``).  With ``name`` and ``inputs`` (everything the
    picture is drawn from) the PNG is read from the shipped pictures when they hold it
    (:mod:`attnlab.pictures.frame_cache`): a Run-All then draws no figure at all.  ``code``:
    the modules besides attnlab.pictures that draw it.
    """

    def __init__(self, fig, summary: str, data: dict | None = None, *, name: str | None = None,
                 inputs=None, code: tuple[str, ...] = ()):  # fmt: skip
        self._fig = fig
        self.summary = summary
        self.data = {} if data is None else data  # what was drawn, for code and tests
        self._cached = None if name is None else (name, inputs, (*code, __name__))

    @property
    def fig(self):
        if callable(self._fig):
            self._fig = self._fig()
        return self._fig

    def _repr_png_(self) -> bytes:
        if self._cached is None:
            return canvas.png_bytes(self.fig, draw=True)
        name, inputs, code = self._cached
        return frame_cache.rendered(
            name, inputs, lambda: canvas.png_bytes(self.fig, draw=True), code
        )

    def __repr__(self) -> str:
        return self.summary


@dataclass
class Message:
    """A one-line result or error message in place of a picture (never a traceback)."""

    text: str

    def _repr_html_(self) -> str:
        return f"<div class='attnlab-message'>{html.escape(self.text)}</div>"

    def __repr__(self) -> str:
        return self.text


# --------------------------------------------------------------------------- source on slides
def _without_docstring(code: str) -> str:
    """``code`` (one def or class) with the docstring of its outermost definition removed."""
    tree = ast.parse(code)
    node = tree.body[0]
    body = getattr(node, "body", [])
    first = body[0] if body else None
    is_doc = isinstance(first, ast.Expr) and isinstance(getattr(first, "value", None), ast.Constant)
    if not (is_doc and isinstance(first.value.value, str)):
        return code
    lines = code.splitlines()
    del lines[first.lineno - 1 : first.end_lineno]
    return "\n".join(lines)


def _source(fn: Callable, docstring: bool) -> tuple[str, str]:
    """(qualified name, source) of one function, method or class."""
    target = inspect.unwrap(fn)
    try:
        code = textwrap.dedent(inspect.getsource(target)).rstrip()
    except (TypeError, OSError) as err:
        raise ValueError(f"show_source: no Python source for {fn!r} ({err})") from None
    module = getattr(target, "__module__", "") or ""
    qualname = getattr(target, "__qualname__", getattr(target, "__name__", repr(target)))
    return (f"{module}.{qualname}" if module else qualname), (
        code if docstring else _without_docstring(code)
    )


def show_source(*fns: Callable, docstring: bool = False) -> Source:
    """The real source of each of ``fns`` (functions, methods, classes), highlighted.

    The code is read with :func:`inspect.getsource` from the installed package, so the slide
    always shows the code that runs.  Docstrings are left out unless ``docstring=True``.
    """
    if not fns:
        raise ValueError("show_source needs at least one function")
    parts = [_source(fn, docstring) for fn in fns]
    return Source(", ".join(name for name, _ in parts), "\n\n".join(code for _, code in parts))
