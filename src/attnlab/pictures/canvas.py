"""Figures on their own Agg canvas, and their PNG bytes: no pyplot state, no GUI.

Every picture of the lecture is drawn into a :func:`new_figure` (a :func:`shown_figure` when
its type is sized for the px it is shown at, a :func:`slide_figure` when it is also rendered at
those px), so it works the same in a kernel, in a test and in ``nbconvert``.  :func:`png_bytes` turns the rendered buffer into PNG bytes for an
``ipywidgets.Image``; :func:`cache_background` / :func:`restore_background` are the two halves
of blitting (redraw only what moves).
"""

from __future__ import annotations

import io
import json

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image
from PIL.PngImagePlugin import PngInfo

from attnlab.pictures.typography import RECORD_KEY, TYPE, TypeSizes, picture_record

__all__ = [
    "new_figure",
    "shown_figure",
    "slide_figure",
    "png_bytes",
    "cache_background",
    "restore_background",
]


def new_figure(width: float, height: float, dpi: int = 100, layout: str | None = None) -> Figure:
    """A figure on its own Agg canvas: no pyplot, no global state, nothing shown by accident."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout=layout)
    FigureCanvasAgg(fig)
    return fig


def shown_figure(
    width: float,
    height: float,
    shown_width_px: float,
    dpi: int = 100,
    layout: str | None = "constrained",
) -> tuple[Figure, TypeSizes]:
    """A figure ``width`` x ``height`` inches, and the lecture's sizes (pt) for it when the
    slide shows it ``shown_width_px`` wide: its type is then :data:`TYPE` px tall there."""
    fig = new_figure(width, height, dpi=dpi, layout=layout)
    return fig, TYPE.at(width, shown_width_px)


def slide_figure(
    width_px: float, height_px: float, dpi: int = 100, layout: str | None = "constrained"
) -> tuple[Figure, TypeSizes]:
    """A figure rendered at exactly the px it is shown at, and the lecture's sizes for it (pt).

    For widget pictures: the ``widgets.Image`` is ``width_px`` wide, so one rendered pixel is
    one pixel on the slide.
    """
    return shown_figure(width_px / dpi, height_px / dpi, width_px, dpi=dpi, layout=layout)


def png_bytes(fig: Figure, draw: bool = False, palette: bool = False) -> bytes:
    """The figure's current Agg buffer as PNG bytes (``draw=True`` redraws everything first).

    Fast PNG settings: the buffer is already rendered, PIL only compresses it lightly
    (zlib level 1 with run-length encoding, which suits flat-coloured plots).  ``palette``:
    256 colours and zlib level 6, about 4x smaller (for frames an exported page embeds).
    The PNG carries :func:`attnlab.pictures.typography.picture_record` (its smallest text, the labels of
    its heatmaps) in a text chunk ``RECORD_KEY``: the browser tests read it on the slides.
    """
    canvas = fig.canvas
    if draw:
        canvas.draw()
    rgba = np.asarray(canvas.buffer_rgba())  # (H, W, 4) uint8, no copy
    image = Image.frombuffer("RGBA", (rgba.shape[1], rgba.shape[0]), rgba, "raw", "RGBA", 0, 1)
    out = io.BytesIO()
    info = PngInfo()
    info.add_itxt(RECORD_KEY, json.dumps(picture_record(fig), ensure_ascii=False), zip=True)
    if palette:
        rgb = image.convert("RGB").quantize(256, method=Image.Quantize.FASTOCTREE)
        rgb.save(out, format="png", compress_level=6, pnginfo=info)
    else:  # Z_RLE compression:
        image.convert("RGB").save(
            out, format="png", compress_level=1, compress_type=3, pnginfo=info
        )
    return out.getvalue()


def cache_background(fig: Figure):
    """Draw the static parts of ``fig`` (every non-animated artist) and keep a copy of them."""
    fig.canvas.draw()
    return fig.canvas.copy_from_bbox(fig.bbox)


def restore_background(fig: Figure, background) -> None:
    """Put the cached static picture back before blitting the animated artists."""
    fig.canvas.restore_region(background)
