"""How wide the deck shows each picture of ``pics/``, and so the px its type is checked at."""

from __future__ import annotations

__all__ = ["SHOWN_WIDTH", "CONTENT_WIDTH_PX", "shown_width_px"]


#: How wide the deck shows each picture, in % of the 1280 px slide (``<img width="..%">`` in
#: notebooks/07_attention.ipynb; tests/test_figures.py checks the deck agrees).  At that width
#: every text of the picture is at least ``typography.MIN_TEXT_PX`` (18 px) tall.
SHOWN_WIDTH: dict[str, int] = {
    "seq2seq_lite": 90,
    "seq2seq_attention": 84,
    "seq2seq_attention_length": 95,
    "wavenet": 95,
    "transformer_overview": 100,
    "transformer_attention": 79,
    "transformer_results": 85,
    "language_scores": 90,
}


#: The width of the slide's content area, which ``width="..%"`` refers to: 1237 of the 1280 px
#: (measured in the RISE slideshow by tests/e2e: a 90% picture is shown 1113 px wide).
CONTENT_WIDTH_PX = 1237


def shown_width_px(name: str) -> float:
    """Width in px at which the deck shows picture ``name`` on the 1280 px slide."""
    return CONTENT_WIDTH_PX * SHOWN_WIDTH[name] / 100
