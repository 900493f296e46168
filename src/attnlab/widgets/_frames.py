"""Pre-rendered pictures that the browser picks without a kernel: nested Stacks and jslinks.

A widget whose picture depends on a few controls renders one PNG per combination of their
values.  :class:`FrameGrid` holds them as ``ipywidgets.Stack`` s nested one level per control
(the leaves are ``Image`` s), and links each control's index to the ``selected_index`` of the
Stacks of its level in the browser (``jslink``).  So moving a control shows its frame at once,
in a live slideshow without a round trip to the kernel and in an exported HTML page with no
kernel at all; that one link is the only path from a control to the picture.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import ipywidgets as widgets

__all__ = ["FrameGrid"]


class FrameGrid:
    """``FrameGrid(controls, width_px)``: one Image per combination of the controls' indices.

    ``controls`` are (widget, trait) pairs whose trait is an int index 0..k-1 (a slider's
    ``value`` from 0, a ToggleButtons' or SelectionSlider's ``index``), outermost first, with
    ``sizes`` the number of values of each; ``leaf`` makes each frame (default: an Image
    ``width_px`` wide; ``widgets.HTML`` works too, its ``value`` a string).  ``root`` is the outer Stack (display it);
    ``image(index)`` the Image for a tuple of indices; ``set(index, png)`` puts its picture;
    ``links`` the browser-side links.
    """

    def __init__(
        self,
        controls: Sequence[tuple[widgets.Widget, str]],
        sizes: Sequence[int],
        width_px: int,
        leaf: Callable[[], widgets.Widget] | None = None,
    ):
        self.sizes = tuple(sizes)
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
        self.controls = list(controls)
        self.links: list = []
        self._images: dict[tuple[int, ...], widgets.Widget] = {}
        self.root = self._build(())

    def _build(self, prefix: tuple[int, ...]) -> widgets.Widget:
        level = len(prefix)
        if level == len(self.sizes):
            self._images[prefix] = self._leaf()
            return self._images[prefix]
        children = [self._build((*prefix, i)) for i in range(self.sizes[level])]
        stack = widgets.Stack(children, selected_index=0, layout=self._stack_layout)
        control, trait = self.controls[level]
        self.links.append(widgets.jslink((control, trait), (stack, "selected_index")))
        return stack

    def indices(self) -> list[tuple[int, ...]]:
        return list(itertools.product(*(range(k) for k in self.sizes)))

    def image(self, index: Sequence[int]) -> widgets.Image:
        return self._images[tuple(int(i) for i in index)]

    def set(self, index: Sequence[int], png: bytes) -> None:
        self.image(index).value = png

    def select(self, index: Sequence[int]) -> None:
        """Start every Stack at ``index`` (before the browser's links take over)."""
        self._select(self.root, tuple(int(i) for i in index))

    def _select(self, node: widgets.Widget, index: tuple[int, ...]) -> None:
        if not index or not isinstance(node, widgets.Stack):
            return
        node.selected_index = index[0]
        for child in node.children:
            self._select(child, index[1:])
