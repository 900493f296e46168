"""Our length experiment as the deck shows it (Bahdanau et al.'s Fig. 2, ours): the one picture
of ``pics/`` drawn from stored results rather than by hand."""

from __future__ import annotations

from matplotlib.figure import Figure

from attnlab.experiments import length
from attnlab.pictures import plots
from attnlab.pictures.figures.shown import shown_width_px

__all__ = ["FigureUnavailable", "seq2seq_attention_length"]


class FigureUnavailable(RuntimeError):
    """A picture that cannot be drawn here (its data or the module drawing it is missing)."""


def seq2seq_attention_length(results: dict | None = None) -> Figure:
    """Our length experiment: exact match against input length, the four models we trained.

    With and without attention, trained on lengths up to 60 and up to 30, drawn by
    :func:`attnlab.pictures.plots.length_figure`.  ``results`` defaults to
    :func:`attnlab.experiments.length.load_results` (the stored results in
    ``src/attnlab/results/``); raises :class:`FigureUnavailable` when they are missing or
    damaged.
    """
    if results is None:
        try:
            results = length.load_results()
        except (FileNotFoundError, ValueError) as err:
            raise FigureUnavailable(f"no stored length-experiment results ({err})") from err
    return plots.length_figure(results, shown_width_px("seq2seq_attention_length"))
