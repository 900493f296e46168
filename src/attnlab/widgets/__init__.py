"""Live widgets for the lecture (ipywidgets): step through decoding, explore QK^T/sqrt(d_k).

* :class:`DecodeStepper`: a trained model decodes a date step by step; the heatmap of
  alpha_{t,i} fills row by row (pre-rendered frames, so exported slides still step).
* :class:`ScaledDotExplorer`: QK^T, QK^T/sqrt(d_k) and the softmax as d_k grows.
* :class:`ScoreLab`: the four score functions on the same s_{t-1} and h_1..h_n.
* :class:`PathLengthExplorer`: path lengths in RNNs, CNNs and self-attention.

Every widget is an ``ipywidgets.VBox`` that displays itself; see each class for the
attributes that code and tests use.
"""

from .decode_stepper import DecodeStepper
from .path_length import PathLengthExplorer
from .scaled_dot import ScaledDotExplorer
from .score_lab import ScoreLab

__all__ = ["DecodeStepper", "ScaledDotExplorer", "ScoreLab", "PathLengthExplorer"]
