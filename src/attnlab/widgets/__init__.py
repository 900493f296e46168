"""Live widgets for the lecture (ipywidgets): step through decoding, explore QK^T/sqrt(d_k).

* :class:`DecodeStepper`: a trained model decodes a date step by step; the heatmap of
  alpha_{t,i} fills row by row; ``score=`` swaps your own score function in.
* :class:`ScaledDotExplorer`: QK^T, QK^T/sqrt(d_k) and the softmax as d_k grows.
* :class:`ScoreLab`: four RNNSearch models trained with the four scores read the same date.
* :class:`PathLengthExplorer`: path lengths in RNNs, CNNs and self-attention.
* :class:`HeadView`: every head of a trained Transformer on a date or a phrase the room types.
* :class:`PhraseGallery`: prepared phrases, each translated once, chosen from a list.

Every widget is an ``ipywidgets.VBox`` that displays itself; see each class for the
attributes that code and tests use.  Each has its pictures when it is built, one per
value of its controls, in Stacks that the controls pick in the browser (``jslink``, see
:mod:`attnlab.widgets._frames`): a control moves the picture without a kernel round trip,
and in an exported page without any kernel.  The pictures the deck shows are read from the
shipped frames (:mod:`attnlab.pictures.frame_cache`, keyed by what each draws); any other
(a typed date, another model, a student's score) is drawn.  The pictures' type sizes come
from ``attnlab.pictures.typography.TYPE``; every other text a widget shows (its controls, in
notebooks/rise.css, and its HTML lines: the message, the model, seen in training, a step's
words, tables) is ``attnlab.widgets._base.TEXT_PX`` (24 px) on the slide, the controls 22 px.
"""

from .decode_stepper import DecodeStepper
from .head_view import HeadView
from .path_length import PathLengthExplorer
from .phrase_gallery import PhraseGallery
from .scaled_dot import ScaledDotExplorer
from .score_lab import ScoreLab

__all__ = [
    "DecodeStepper",
    "ScaledDotExplorer",
    "ScoreLab",
    "PathLengthExplorer",
    "HeadView",
    "PhraseGallery",
]
