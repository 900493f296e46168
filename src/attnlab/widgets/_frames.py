"""The one frame mechanism of the widgets: pre-rendered frames the browser picks.

A widget whose picture depends on a few controls renders one frame per combination of their
values: a picture (PNG in an ``Image``, or HTML) *and the readouts computed with it*.
:class:`FrameGrid` holds the pictures as ``ipywidgets.Stack`` s nested one level per control
(the leaves are the pictures) and links each control's index to the ``selected_index`` of the
Stacks of its level in the browser (``jslink``).  So moving a control shows its frame at once,
in a live slideshow without a round trip to the kernel and in an exported HTML page with no
kernel at all; that one link is the only path from a control to the picture.

The widget's readouts (the numbers it reports to code and tests) are read from the frame the
controls select (``grid.frame().data``), never recomputed beside it: what a widget says is what
it drew.  ``grid.shown()`` follows the Stacks' ``selected_index`` from the root, as the browser
sets them through the links: the tests compare the two.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import ipywidgets as widgets

__all__ = ["Frame", "FrameGrid"]


@dataclass
class Frame:
    """One pre-rendered state: the picture the browser shows and the readouts drawn with it."""

    index: tuple[int, ...]
    view: widgets.Widget  # an Image (``value`` PNG bytes) or an HTML (``value`` a string)
    data: dict = field(default_factory=dict)


class FrameGrid:
    """``FrameGrid(controls, sizes, width_px)``: one frame per combination of control indices.

    ``controls`` are (widget, trait) pairs whose trait is an int index 0..k-1 (a slider's
    ``value`` from 0, a SelectionSlider's, ToggleButtons' or Dropdown's ``index``), outermost
    first, with ``sizes`` the number of values of each.  ``leaf`` makes each picture (default:
    an Image ``width_px`` wide; ``widgets.HTML`` works too).  ``share(index)`` may map an index
    to another one whose picture it reuses (a control that does not matter in part of the
    grid: one picture, several places).

    * ``root``: the outer Stack (display it); ``links``: the browser-side links;
    * ``set(index, picture, **data)``: a frame's picture and readouts;
    * ``index()``: the index the controls select now; ``frame(index=None)``: that Frame;
    * ``shown()``: the index the Stacks select (what the browser shows once the links ran);
    * ``resize(n)``: a one-level grid with ``n`` frames (a new decoding, a typed date).
    """

    def __init__(
        self,
        controls: Sequence[tuple[widgets.Widget, str]],
        sizes: Sequence[int],
        width_px: int,
        leaf: Callable[[], widgets.Widget] | None = None,
        share: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None,
    ):
        if len(controls) != len(sizes):
            raise ValueError("one size per control")
        self.sizes = tuple(int(k) for k in sizes)
        # one Layout (and Style) shared by every frame and Stack: an exported page stores
        # each model once, and hundreds of copies of the same layout were a third of it
        self._layout = widgets.Layout(width=f"{width_px}px") if width_px else widgets.Layout()
        self._stack_layout = widgets.Layout()
        if leaf is None:
            self._leaf = lambda: widgets.Image(format="png", layout=self._layout)
        elif leaf is widgets.HTML:
            style = widgets.HTML().style  # HTMLStyle is not exported by ipywidgets 8.1
            self._leaf = lambda: widgets.HTML(layout=self._layout, style=style)
        else:
            self._leaf = leaf
        self._share = share or (lambda index: index)
        self.controls = list(controls)
        self.links: list = []
        self._frames: dict[tuple[int, ...], Frame] = {}
        self.root = self._build(())

    # ------------------------------------------------------------------ building
    def _build(self, prefix: tuple[int, ...]) -> widgets.Widget:
        level = len(prefix)
        if level == len(self.sizes):
            return self._frame_at(prefix).view
        children = [self._build((*prefix, i)) for i in range(self.sizes[level])]
        stack = widgets.Stack(children, selected_index=0, layout=self._stack_layout)
        control, trait = self.controls[level]
        self.links.append(widgets.jslink((control, trait), (stack, "selected_index")))
        return stack

    def _frame_at(self, index: tuple[int, ...]) -> Frame:
        owner = tuple(self._share(index))
        if owner not in self._frames:
            self._frames[owner] = Frame(owner, self._leaf())
        if index != owner:
            self._frames[index] = self._frames[owner]
        return self._frames[index]

    def resize(self, n: int) -> None:
        """A one-level grid with ``n`` frames: leaves reused or added, the link kept."""
        if len(self.sizes) != 1:
            raise ValueError("only a one-level grid can be resized")
        n = max(int(n), 1)
        views = [self._frame_at((i,)).view for i in range(n)]
        for i in [i for (i,) in self._frames if i >= n]:
            del self._frames[(i,)]
        self.sizes = (n,)
        self.root.children = tuple(views)
        self.root.selected_index = min(self.root.selected_index or 0, n - 1)

    # ------------------------------------------------------------------ frames
    def indices(self) -> list[tuple[int, ...]]:
        """Every index whose picture is its own (the shared ones left out)."""
        every = itertools.product(*(range(k) for k in self.sizes))
        return [i for i in every if tuple(self._share(i)) == i]

    def set(self, index: Sequence[int], picture, **data) -> None:
        """Put a frame's picture (PNG bytes or HTML) and the readouts computed with it."""
        frame = self._frames[tuple(int(i) for i in index)]
        frame.view.value = picture
        frame.data = data

    def index(self) -> tuple[int, ...]:
        """The index the controls select now (what their links select in the browser)."""
        return tuple(
            min(max(int(getattr(c, trait) or 0), 0), k - 1)
            for (c, trait), k in zip(self.controls, self.sizes, strict=True)
        )

    def frame(self, index: Sequence[int] | None = None) -> Frame:
        """The Frame at ``index`` (default: the one the controls select)."""
        key = self.index() if index is None else tuple(int(i) for i in index)
        return self._frames[key]

    def image(self, index: Sequence[int] | None = None) -> widgets.Widget:
        return self.frame(index).view

    def shown(self) -> tuple[int, ...]:
        """The index the Stacks select, followed from the root (the browser's picture)."""
        node, found = self.root, []
        while isinstance(node, widgets.Stack):
            i = node.selected_index or 0
            found.append(i)
            node = node.children[i]
        return tuple(found)

    def select(self, index: Sequence[int] | None = None) -> None:
        """Start every Stack at ``index`` (default: the controls'), before the links take over."""
        self._select(self.root, tuple(self.index() if index is None else index))

    def _select(self, node: widgets.Widget, index: tuple[int, ...]) -> None:
        if not index or not isinstance(node, widgets.Stack):
            return
        node.selected_index = int(index[0])
        for child in node.children:
            self._select(child, index[1:])
