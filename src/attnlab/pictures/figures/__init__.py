"""Every picture in ``pics/``, drawn by code: :func:`write_all` (``python -m attnlab figures``).

One function per picture, each returning a :class:`matplotlib.figure.Figure` (no pyplot,
so nothing is left open), one module per figure of the papers or family of diagrams:

* :mod:`~attnlab.pictures.figures.seq2seq`: ``seq2seq_lite`` (Sutskever et al., 2014) and
  ``seq2seq_attention`` (Bahdanau et al., 2014);
* :mod:`~attnlab.pictures.figures.length_experiment`: ``seq2seq_attention_length``, our
  length experiment (needs its stored results);
* :mod:`~attnlab.pictures.figures.wavenet`: dilated causal convolutions and the paths from
  the last output;
* :mod:`~attnlab.pictures.figures.transformer`: ``transformer_overview`` (encoder and
  decoder) and ``transformer_attention`` (scaled dot-product and multi-head attention);
* :mod:`~attnlab.pictures.figures.table2`: ``transformer_results``, Table 2 of Vaswani et
  al. (2017);
* :mod:`~attnlab.pictures.figures.scores`: ``language_scores``, our real-language chrF on
  both test splits beside the dictionary (needs the stored results).

Output is deterministic: fixed size and dpi, matplotlib's default style, and no
timestamp or software version in the PNG, so regenerating ``pics/`` changes no byte.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import matplotlib as mpl
from matplotlib.figure import Figure

from attnlab.pictures.figures.length_experiment import FigureUnavailable, seq2seq_attention_length
from attnlab.pictures.figures.scores import language_scores
from attnlab.pictures.figures.seq2seq import seq2seq_attention, seq2seq_lite
from attnlab.pictures.figures.shown import CONTENT_WIDTH_PX, SHOWN_WIDTH, shown_width_px
from attnlab.pictures.figures.table2 import transformer_results
from attnlab.pictures.figures.transformer import transformer_attention, transformer_overview
from attnlab.pictures.figures.wavenet import causal_conv_reach, wavenet

__all__ = [
    "FIGURES",
    "DPI",
    "SHOWN_WIDTH",
    "CONTENT_WIDTH_PX",
    "shown_width_px",
    "FigureUnavailable",
    "drawing_style",
    "seq2seq_lite",
    "seq2seq_attention",
    "seq2seq_attention_length",
    "wavenet",
    "causal_conv_reach",
    "transformer_overview",
    "transformer_attention",
    "transformer_results",
    "language_scores",
    "save",
    "write_all",
]

DPI = 150  # pixels per inch of every PNG


FIGURES: dict[str, Callable[[], Figure]] = {
    "seq2seq_lite": seq2seq_lite,
    "seq2seq_attention": seq2seq_attention,
    "seq2seq_attention_length": seq2seq_attention_length,
    "wavenet": wavenet,
    "transformer_overview": transformer_overview,
    "transformer_attention": transformer_attention,
    "transformer_results": transformer_results,
    "language_scores": language_scores,
}
"""Every picture of ``pics/``: file name (without ``.png``) -> the function drawing it."""


@contextmanager
def drawing_style() -> Iterator[None]:
    """Matplotlib's defaults (not the user's matplotlibrc) plus our fonts, while drawing."""
    with mpl.rc_context():
        mpl.rcdefaults()
        mpl.rcParams.update(
            {
                "font.family": "DejaVu Sans",
                "mathtext.fontset": "dejavusans",
                "svg.hashsalt": "attnlab",
                "path.simplify": False,
            }
        )
        yield


def save(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` as a PNG at :data:`DPI` with no timestamp or version: same input, same bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, facecolor="white", metadata={"Software": None})
    return path


def write_all(
    out: str | Path, names: Sequence[str] | None = None, *, log=None
) -> tuple[list[Path], dict[str, str]]:
    """Draw the pictures ``names`` (default: all of :data:`FIGURES`) into the folder ``out``.

    Returns ``(written, skipped)``: the paths written, and for each picture that could not
    be drawn here (see :class:`FigureUnavailable`) the reason.  ``log`` (e.g. ``print``)
    gets one line per picture.
    """
    names = list(FIGURES) if names is None else list(names)
    unknown = [n for n in names if n not in FIGURES]
    if unknown:
        raise ValueError(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}")
    out = Path(out)
    written: list[Path] = []
    skipped: dict[str, str] = {}
    for name in names:
        start = time.perf_counter()
        with drawing_style():
            try:
                fig = FIGURES[name]()
            except FigureUnavailable as err:
                skipped[name] = str(err)
                if log:
                    log(f"skipped {name}.png: {err}")
                continue
            written.append(save(fig, out / f"{name}.png"))
        if log:
            log(f"wrote {written[-1]} ({time.perf_counter() - start:.2f} s)")
    return written, skipped
