r"""The pictures of DecodeStepper and PhraseGallery: one frame per decoding step.

Step t (1-based) shows rows 1..t of alpha (T, n) with row t boxed, under the title; every key
and query labelled at the lecture's tick size (the picture grows for them) and the title kept
inside the picture.  The step's words (y_t, its probability, the output so far and, for
RNNSearch, the context vector c_t = sum_i alpha_{t,i} h_i as the few h_i that carry the
weight) are not drawn: the widget writes them beside the picture at its text size
(:func:`step_caption`, :func:`context_line`).  The static parts are drawn once and each step
blitted over them.
"""

from __future__ import annotations

import functools

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties

from attnlab.pictures.canvas import cache_background, png_bytes, restore_background, slide_figure
from attnlab.pictures.heatmaps import Heatmap, heatmap_room
from attnlab.pictures.typography import TYPE, literal

from ._base import short

__all__ = [
    "DecodeFrames",
    "blank_frame",
    "context_line",
    "context_terms",
    "step_caption",
    "tail",
    "text_px",
]

#: The smallest picture (px, shown at its own size): about two thirds of the slide's width, the
#: widget's readouts in a column beside it; larger when its labels or its title need the room.
#: 430 px tall: under two rows of controls (and a two-line code cell) it ends above 720 px.
WIDTH_PX, HEIGHT_PX = 800, 430
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def context_terms(alpha: np.ndarray, source_tokens: list[str], top: int = 3):
    """The few h_i that carry c_t's weight: (["0.81·h₃ ('M')", ...], more left out, their share)."""
    order = np.argsort(-alpha, kind="stable")[:top]
    terms = [
        f"{alpha[i]:.2f}·h{str(i + 1).translate(SUB)} ('{short(source_tokens[i], 14)}')"
        for i in order
    ]
    return terms, len(alpha) > top, float(alpha[order].sum())


def context_line(alpha: np.ndarray, source_tokens: list[str], t: int, top: int = 3) -> str:
    """c_t (t 1-based) as the few h_i that carry the weight: "c₃ = 0.81·h₃ ('M') + ..."."""
    terms, more, share = context_terms(alpha, source_tokens, top)
    rest = " + …" if more else ""
    return f"c{str(t).translate(SUB)} = {' + '.join(terms)}{rest}   ({100 * share:.0f}% of α)"


def step_caption(t: int, token: str, p: float, so_far: str, query: bool) -> str:
    """The caption of step t (1-based): the query (RNNSearch), y_t, its probability."""
    sub = str(t).translate(SUB)
    asked = f"query s{str(t - 1).translate(SUB)},  " if query else ""
    return f"t = {t}:  {asked}y{sub} = '{short(token, 16)}' (p = {p:.2f});  so far '{so_far}'"


@functools.cache
def _renderer() -> RendererAgg:
    return RendererAgg(8, 8, 100)


def text_px(text: str, px: float) -> float:
    """How wide ``text`` is drawn at ``px`` (a picture rendered at the size it is shown: 100 dpi,
    the matplotlib font), measured by Agg."""
    prop = FontProperties(size=px * 72 / 100)
    width, _, _ = _renderer().get_text_width_height_descent(str(text), prop, ismath=False)
    return float(width)


@functools.cache
def blank_frame() -> bytes:
    """The empty frame 0 (no step shows it): a white pixel."""
    fig, _ = slide_figure(1, 1, layout=None)
    return png_bytes(fig, draw=True)


def tail(text: str, limit: int) -> str:
    """The last ``limit`` characters, with an ellipsis in front when cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


class DecodeFrames:
    """Renders the picture of every decoding step as PNG bytes, sized for its labels.

    ``frames(alpha, source_tokens, output_tokens, title)`` (the tokens as labelled: the
    widget makes subword pieces readable) makes a figure at least ``width_px`` x
    ``height_px``, larger when every key and query label at the lecture's tick size or its
    title needs it, draws the static parts once (ticks, colorbar, title) and blits, for each
    step, rows 1..t of ``alpha`` (T, n) with row t boxed.
    """

    def __init__(self, width_px: int = WIDTH_PX, height_px: int = HEIGHT_PX):
        self.min_width_px, self.min_height_px = width_px, height_px

    def _figure(self, source_tokens: list[str], output_tokens: list[str], title: str) -> None:
        tick = TYPE.tick
        room_w, room_h = heatmap_room(source_tokens, output_tokens, tick, pieces=False)
        ys = max(len(literal(s)) for s in [*output_tokens, "x"])
        left, right = 14 + 1.6 * TYPE.label + (0.62 * ys + 0.3) * tick, 80
        bar = 1 - 0.046 - 0.03  # the colorbar takes the rest of the axes' width (Heatmap)
        W = max(self.min_width_px, left + max(room_w, 220) / bar * 1.02 + right)
        # the title, centred over the heatmap, stays inside the picture on both sides
        half = text_px(title, TYPE.title) / 2 + 8
        while min(self._centre(W, left, right, bar), W - self._centre(W, left, right, bar)) < half:
            W += 10
        # the labels stand level where they fit the axes (as Heatmap decides), else upright
        level_w, _ = heatmap_room(source_tokens, output_tokens, tick, turn=False, pieces=False)
        upright = level_w > (W - left - right) * bar
        longest = max(len(literal(s)) for s in [*source_tokens, "x"])
        label_px = (0.62 * longest + 0.3) * tick if upright else 1.4 * tick
        bottom = 14 + 1.4 * TYPE.label + label_px
        top = 24 + 1.5 * TYPE.title
        H = max(self.min_height_px, top + max(room_h, 120) * 1.02 + bottom)
        self.width_px, self.height_px = int(round(W)), int(round(H))
        self.fig, self.sizes = slide_figure(self.width_px, self.height_px, layout=None)
        W, H = self.width_px, self.height_px
        self.fig.subplots_adjust(left=left / W, right=1 - right / W, top=1 - top / H,
                                 bottom=bottom / H)  # fmt: skip
        self.heatmap = Heatmap(self.fig.add_subplot(), "", sizes=self.sizes)

    @staticmethod
    def _centre(W: float, left: float, right: float, bar: float) -> float:
        """The x of the heatmap's centre (its title's), the colorbar taking its share."""
        return left + (W - left - right) * bar / 2

    def frames(
        self,
        alpha: np.ndarray,
        source_tokens: list[str],
        output_tokens: list[str],
        title: str,
        box_last: bool = True,
    ) -> list[bytes]:
        """One picture per output step, the heatmap filled row by row and the step's row boxed
        in red; ``box_last=False``: no box on the last picture (a whole decoding at a glance)."""
        self._figure(source_tokens, output_tokens, title)
        heat = self.heatmap
        heat.set_labels(source_tokens, output_tokens, reveal_rows=True, pieces=False)
        heat.ax.set_title(literal(title), fontsize=self.sizes.title, pad=12)
        with_labels = cache_background(self.fig)  # the static parts, then row labels < t
        pictures = []
        for t in range(len(output_tokens)):
            restore_background(self.fig, with_labels)
            heat.draw_row_labels([t])  # one new row label per frame
            with_labels = self.fig.canvas.copy_from_bbox(self.fig.bbox)
            shown = np.full(alpha.shape, np.nan)
            shown[: t + 1] = alpha[: t + 1]  # the heatmap fills row by row
            boxed = t if box_last or t < len(output_tokens) - 1 else None
            heat.set_data(shown, row=boxed)
            heat.blit(labels=False)
            pictures.append(png_bytes(self.fig, palette=True))
        return pictures
