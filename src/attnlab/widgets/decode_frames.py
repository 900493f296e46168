r"""The pictures of DecodeStepper: one frame per decoding step, sized for its labels.

Step t (1-based) shows rows 1..t of alpha (T, n) with row t boxed, the step's caption above
the heatmap (the query s_{t-1} for RNNSearch, y_t and its probability) and, for RNNSearch,
the context vector c_t = sum_i alpha_{t,i} h_i below it, as the few h_i that carry the
weight.  The static parts are drawn once and each step blitted over them.
"""

from __future__ import annotations

import functools

import numpy as np

from attnlab.pictures.canvas import cache_background, png_bytes, restore_background, slide_figure
from attnlab.pictures.heatmaps import Heatmap, heatmap_room
from attnlab.pictures.typography import TYPE, literal

from ._base import short

__all__ = ["DecodeFrames", "blank_frame", "context_line", "step_caption", "tail"]

WIDTH_PX, HEIGHT_PX = 700, 360  # the smallest picture; larger when its labels need the room
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def context_line(alpha: np.ndarray, source_tokens: list[str], t: int, top: int = 3) -> str:
    """c_t (t 1-based) as the few h_i that carry the weight: "c₃ = 0.81·h₃ ('M') + ..."."""
    order = np.argsort(-alpha, kind="stable")[:top]
    terms = [
        f"{alpha[i]:.2f}·h{str(i + 1).translate(SUB)} ('{short(source_tokens[i], 14)}')"
        for i in order
    ]
    rest = " + …" if len(alpha) > top else ""
    share = float(alpha[order].sum())
    return f"c{str(t).translate(SUB)} = {' + '.join(terms)}{rest}   ({100 * share:.0f}% of α)"


def step_caption(t: int, token: str, p: float, so_far: str, query: bool) -> str:
    """The caption of step t (1-based): the query (RNNSearch), y_t, its probability."""
    sub = str(t).translate(SUB)
    asked = f"query s{str(t - 1).translate(SUB)},  " if query else ""
    return f"t = {t}:  {asked}y{sub} = '{short(token, 16)}' (p = {p:.2f});  so far '{so_far}'"


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

    ``frames(alpha, source_tokens, output_tokens, title, captions, lines)`` (the tokens as
    labelled: the widget makes subword pieces readable) makes a figure
    large enough for every key and query label at the lecture's tick size, draws the static
    parts once (ticks, colorbar, title) and blits, for each step, rows 1..t of ``alpha``
    (T, n) with row t boxed, its caption above the heatmap and its line below (or none).
    """

    def _figure(self, source_tokens: list[str], output_tokens: list[str], texts: list[str]) -> None:
        tick = TYPE.tick
        room_w, room_h = heatmap_room(source_tokens, output_tokens, tick, pieces=False)
        ys = max(len(literal(s)) for s in [*output_tokens, "x"])
        left, right = 14 + 1.6 * TYPE.label + (0.62 * ys + 0.3) * tick, 80
        bar = 1 - 0.046 - 0.03  # the colorbar takes the rest of the axes' width (Heatmap)
        W = max(WIDTH_PX, left + max(room_w, 220) / bar * 1.02 + right)
        W = max(W, 24 + 0.52 * TYPE.caption * max(map(len, texts), default=0))  # captions fit
        # the labels stand level where they fit the axes (as Heatmap decides), else upright
        level_w, _ = heatmap_room(source_tokens, output_tokens, tick, turn=False, pieces=False)
        upright = level_w > (W - left - right) * bar
        longest = max(len(literal(s)) for s in [*source_tokens, "x"])
        label_px = (0.62 * longest + 0.3) * tick if upright else 1.4 * tick
        bottom = 18 + 1.4 * TYPE.label + 1.5 * TYPE.caption + label_px
        top = 34 + 1.5 * TYPE.title + 1.4 * TYPE.caption
        H = max(HEIGHT_PX, top + max(room_h, 120) * 1.02 + bottom)
        self.width_px, self.height_px = int(round(W)), int(round(H))
        self.fig, self.sizes = slide_figure(self.width_px, self.height_px, layout=None)
        W, H = self.width_px, self.height_px
        self.fig.subplots_adjust(left=left / W, right=1 - right / W, top=1 - top / H,
                                 bottom=bottom / H)  # fmt: skip
        ax = self.fig.add_subplot()
        self.heatmap = Heatmap(ax, "", sizes=self.sizes)
        text = {"fontsize": self.sizes.caption, "animated": True}
        self.caption = ax.annotate(  # just above the heatmap, below the title
            "", xy=(0, 1), xycoords="axes fraction", xytext=(-left + 8, 6),
            textcoords="offset pixels", va="bottom", **text,
        )  # fmt: skip
        self.line = self.fig.text(8 / W, 6 / H, "", va="bottom", **text)

    def frames(
        self,
        alpha: np.ndarray,
        source_tokens: list[str],
        output_tokens: list[str],
        title: str,
        captions: list[str],
        lines: list[str],
    ) -> list[bytes]:
        self._figure(source_tokens, output_tokens, [title, *captions, *lines])
        heat = self.heatmap
        heat.set_labels(source_tokens, output_tokens, reveal_rows=True, pieces=False)
        heat.ax.set_title(literal(title), fontsize=self.sizes.title,
                          pad=1.4 * self.sizes.caption + 12)  # fmt: skip
        with_labels = cache_background(self.fig)  # the static parts, then row labels < t
        pictures = []
        for t, (caption, line) in enumerate(zip(captions, lines, strict=True)):
            restore_background(self.fig, with_labels)
            heat.draw_row_labels([t])  # one new row label per frame
            with_labels = self.fig.canvas.copy_from_bbox(self.fig.bbox)
            shown = np.full(alpha.shape, np.nan)
            shown[: t + 1] = alpha[: t + 1]  # the heatmap fills row by row
            heat.set_data(shown, row=t)
            heat.blit(labels=False)
            for artist, value in ((self.caption, caption), (self.line, line)):
                artist.set_text(literal(value))
                self.fig.draw_artist(artist)
            pictures.append(png_bytes(self.fig, palette=True))
        return pictures
