"""Our length experiment as the deck shows it (Bahdanau et al.'s Fig. 2, ours): the one picture
of ``pics/`` drawn from stored results rather than by hand."""

from __future__ import annotations

from matplotlib.figure import Figure

from attnlab.experiments import language, length
from attnlab.pictures import plots
from attnlab.pictures.figures.shown import shown_width_px

__all__ = ["FigureUnavailable", "seq2seq_attention_length"]


class FigureUnavailable(RuntimeError):
    """A picture that cannot be drawn here (its data or the module drawing it is missing)."""


def seq2seq_attention_length(results: dict | None = None, by_length: dict | None = None) -> Figure:
    """Our length experiment: exact match against input length, the four models we trained,
    beside RNNSearch against RNNEncDec on English->French by English length.

    With and without attention, trained on lengths up to 60 and up to 30, drawn by
    :func:`attnlab.pictures.plots.length_figure`.  ``results`` defaults to
    :func:`attnlab.experiments.length.load_results`, ``by_length`` to the
    ``attention_by_length`` of :func:`attnlab.experiments.language.load_results` (both stored
    in ``src/attnlab/results/``); raises :class:`FigureUnavailable` when they are missing or
    damaged.
    """
    try:
        if results is None:
            results = length.load_results()
        if by_length is None:
            by_length = language.load_results()["attention_by_length"]
    except (FileNotFoundError, ValueError, KeyError) as err:
        raise FigureUnavailable(f"no stored length-experiment results ({err})") from err
    return plots.length_figure(
        results, shown_width_px("seq2seq_attention_length"), by_length=by_length
    )
