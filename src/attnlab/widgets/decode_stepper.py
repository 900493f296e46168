r"""DecodeStepper: watch a trained model translate, one output token at a time.

At step t = 1..T the decoder writes y_t with probability p(y_t | y_<t, x) while attending to
the source h_1..h_n with weights alpha_{t,1..n}; for RNNSearch the query is the previous
decoder state s_{t-1} (as on the equations slide: alpha_{t,i} = softmax_i score(s_{t-1}, h_i)).
Row t of the heatmap is that alpha.  The t slider (and Back, Step, Play, Reset) moves through
the steps; the heatmap fills row by row, the current row boxed in red.  Beside the picture, in
a column at the widget's text size, the step's words: y_t, its probability, the output so far
and, for RNNSearch, the query and the context vector c_t = sum_i alpha_{t,i} h_i as the few
h_i that carry the weight ("c_3 = 0.81·h_3 ('M') + ..."); under them the model and whether
the text was seen in training.  A model with several layers and heads of cross-attention (the
Transformer) offers a choice of them.

The model chooser offers the date models and the real-language ones (English->French,
English->German) that are installed; the box takes a date or a phrase of the room's own.  A
real-language model knows every character (subword pieces, byte fallback); a word a
vocabulary lacks would be shown as ``<unk>`` (and said in the widget); text the model cannot
read (empty, too long) gives a one-line message inside the widget.  A subword
model's pieces are shown readably (:func:`attnlab.pictures.heatmaps.tick_labels`: ``Daten``
``##träger``, never ``▁`` or ``<0xC3>``) on the heatmap, in the step's words and the c_t line.
Beside the picture, for a real-language model, one line says whether the typed English was
seen in training, is a near-twin of a training string, or is new
(:class:`attnlab.widgets._base.ModelWidget`).

Every step's picture is rendered once per decoded text into a
:class:`attnlab.widgets._frames.FrameGrid` whose Stack follows the slider in the browser (one
``jslink``), its words into a second one (HTML) linked the same way, and each frame carries
the readouts of its step (t, y_t, p, alpha_t, c_t): moving the slider costs the kernel
nothing, an exported HTML page still steps without a kernel, and what the widget reports is
what the frame shows.

``score=`` swaps any function (query (B, m, d_q), keys (B, n, d_k)) -> scores (B, m, n) in
for the RNNSearch model's trained score while it decodes (the model is restored after): an
edit-me cell of the deck.  It is swapped in through :mod:`attnlab.guard.parts` and guarded by
:mod:`attnlab.guard.sandbox` (a time budget; what it changes is put back): whatever goes wrong,
``SystemExit`` included, is a message inside the widget.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np

from attnlab.decode import Decoding, decode
from attnlab.guard import parts
from attnlab.guard.sandbox import Session
from attnlab.models.threads import torch_threads
from attnlab.pictures.canvas import png_bytes, slide_figure
from attnlab.pictures.frame_cache import rendered_all
from attnlab.pictures.heatmaps import tick_labels
from attnlab.pictures.typography import literal

from ._base import ModelWidget, readable, short, unknown_words
from ._frames import FrameGrid
from .decode_frames import (
    SUB,
    WIDTH_PX,
    DecodeFrames,
    blank_frame,
    context_line,
    context_terms,
    step_caption,
    tail,
)
from .score_swap import ScoreError, checked_score

__all__ = ["DecodeStepper", "MEAN", "step_words"]

MEAN = -1  # the "head" that averages the heads


def step_words(t: int, token: str, p: float, so_far: str, terms=None) -> str:
    """The words of step t (1-based) beside its picture, as HTML at the widget's text size:
    y_t and its probability, the output so far and, for RNNSearch (``terms``: what
    :func:`attnlab.widgets.decode_frames.context_terms` returns), the query s_{t-1} and c_t,
    one h_i a line.  The same words as :func:`step_caption` and :func:`context_line`."""
    esc, sub = html.escape, str(t).translate(SUB)
    lines = [f"<b>step t = {t}</b>"]
    if terms is not None:
        lines.append(f"query s{str(t - 1).translate(SUB)} (the decoder's state)")
    lines.append(f"y{sub} = <b>'{esc(short(token, 16))}'</b> &nbsp;(p = {p:.2f})")
    lines.append(f"so far '{esc(so_far)}'")
    said = "".join(f"<div>{line}</div>" for line in lines)
    if terms is not None:  # c_t, one h_i a line, a little apart
        shown, more, share = terms
        sums = [f"c{sub} = {esc(shown[0])}"] + [f"&nbsp;&nbsp;+ {esc(x)}" for x in shown[1:]]
        sums[-1] += " + …" if more else ""
        sums.append(f"({100 * share:.0f}% of α)")
        said += '<div style="margin-top:10px">' + "<br>".join(sums) + "</div>"
    return readable(said)


class PlayButton(widgets.Play):
    """``widgets.Play`` (it runs in the browser, so it never blocks the kernel) with click()."""

    def click(self) -> None:
        """Start playing from the current step, or pause, like pressing the button."""
        self.playing = not self.playing


class DecodeStepper(ModelWidget):
    r"""Step through greedy decoding; the heatmap of alpha_{t,i} fills row by row.

    ``DecodeStepper(model=None, text=None, score=None)``: ``model`` is a shipped model's name
    (default ``"rnnsearch-dates"``) or a loaded model; ``text`` what it reads first (default:
    a date, or a phrase for a language model); ``score`` a function (query (B, m, d_q), keys
    (B, n, d_k)) -> (B, m, n) used in place of the model's score.

    Attributes for code and tests:

    * ``text`` (Text: a date or a phrase, decoded on Enter), ``model_chooser`` (Dropdown of
      model names: :class:`attnlab.widgets._base.ModelWidget`), ``head`` (Dropdown of
      (layer, head) for models with several; head -1 is the mean of the heads),
      ``head_box`` (hidden for one layer and head);
    * ``slider`` (IntSlider "step t" = 1..T), ``back_button``, ``step_button``,
      ``reset_button``, ``play_button`` (a ``widgets.Play`` over t = 1..T; ``.click()``
      starts/pauses it), ``links`` (the browser-side links: Play -> slider, slider -> frames:
      the Stack's child t is step t, child 0 an empty frame no step shows);
    * ``model``, ``decoding`` (the :class:`attnlab.decode.Decoding` shown), ``translation``,
      ``source_tokens`` (unknown words as ``<unk>``), ``unknown`` (the words read as <unk>),
      ``alphas`` (T, n): the weights shown (chosen layer and head), ``seen`` and
      ``seen_box`` (seen in training: :class:`attnlab.widgets._base.ModelWidget`);
    * ``grid`` (the FrameGrid, one frame per step), ``frames`` (its Stack), ``frame`` (the
      step's Frame: ``data`` holds t, token, p, alpha, rows, context, caption); ``words``
      (the FrameGrid of the step's words beside the picture, HTML: :func:`step_words`),
      ``column`` (the VBox beside the picture: the step's words, ``info``, ``seen_box``);
      from it: ``t`` (1-based), ``heatmap_data`` (rows 1..t of ``alphas``), ``context_lines``
      (every step's c_t line), ``image`` (the Image of step t), ``message``.
    """

    def __init__(self, model=None, text: str | None = None, score: Callable | None = None):
        super().__init__()
        if score is not None and not callable(score):
            raise TypeError(f"score must be a function (query, keys) -> scores; got {score!r}")
        self.score = score
        self.decoding: Decoding | None = None
        self.alphas = np.zeros((0, 0))
        self._renderer = DecodeFrames()
        name = self._choose(model, text)
        self.head = widgets.Dropdown(
            options=[("", (0, 0))], description="attention", layout={"width": "400px"},
            style={"description_width": "100px"},
        )  # fmt: skip
        self.head_box = widgets.HBox([self.head], layout={"display": "none"})
        self.back_button = widgets.Button(description="◀ Back", layout={"width": "110px"})
        self.step_button = widgets.Button(description="Step ▶", layout={"width": "110px"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "96px"})
        self.play_button = PlayButton(value=1, min=1, max=1, interval=600, description="Play")
        self.slider = widgets.IntSlider(
            value=1, min=1, max=1, description="step t", layout={"width": "330px"},
            style={"description_width": "70px"},
        )  # fmt: skip
        # frame t is step t (1-based, as the slider says); frame 0 is empty and never shown
        self.grid = FrameGrid([(self.slider, "value")], (2,), 0)
        self.frames = self.grid.root
        self.frames.layout.flex = "0 0 auto"  # the picture at its own width, never squeezed
        # the step's words, one HTML frame per step, picked by the slider like the pictures
        self.words = FrameGrid([(self.slider, "value")], (2,), 0, leaf=widgets.HTML)
        self.info = widgets.HTML(layout={"margin": "14px 0 0 0"})
        self.seen_box.layout.margin = "6px 0 0 0"
        # In the browser the slider picks the frame: no kernel needed (exported HTML too).
        self.links = [
            widgets.jslink((self.play_button, "value"), (self.slider, "value")),
            *self.grid.links,
            *self.words.links,
        ]
        # the same Play <-> slider link in the kernel, so that Step and Back keep Play in step
        self._kernel_link = widgets.link((self.play_button, "value"), (self.slider, "value"))
        # beside the picture, not under it: the slide is wide, and the column reads at 22 px;
        # below the picture only when a long text leaves it too little room
        self.column = widgets.VBox(
            [self.words.root, self.info, self.seen_box],
            layout={"flex": "1 1 0", "min_width": "300px", "margin": "8px 0 0 18px"},
        )
        self.children = [
            widgets.HBox([self.model_chooser, self.text]),
            widgets.HBox(
                [
                    self.reset_button,
                    self.back_button,
                    self.step_button,
                    self.play_button,
                    self.slider,
                    self.head_box,
                ],
                layout={"align_items": "center"},
            ),
            self.message_box,
            widgets.HBox(
                [self.frames, self.column],
                layout={"align_items": "flex-start", "flex_flow": "row wrap"},
            ),
        ]
        self.back_button.on_click(lambda _: self.move(-1))
        self.step_button.on_click(lambda _: self.move(+1))
        self.reset_button.on_click(lambda _: self.reset())
        self.head.observe(self._on_head, names="value")
        self._start(name)

    # ------------------------------------------------------------------ models
    def _accept(self, name: str, model) -> None:
        if self.score is not None and not hasattr(model, "score"):
            raise ValueError(f"{name} has no score to replace; choose an RNNSearch model")
        shown = html.escape(self._model_description(name))
        self.info.value = readable(f'<span style="color:#555555">{shown}</span>')

    def _model_description(self, name: str) -> str:
        label = self._label(name)
        if self.score is not None:
            fn = getattr(self.score, "__name__", type(self.score).__name__)
            return f"{label} with your score function {fn}() in place of its trained score"
        return label

    def _show_nothing(self) -> None:
        self._show_placeholder()

    # ------------------------------------------------------------------ decoding
    def _show_text(self) -> None:
        """Decode ``text.value`` with the model and render one frame per step.

        Bad text raises attnlab.text.vocab.InvalidInput (a ValueError) before anything changes,
        so the widget keeps showing the last good decoding (``guard`` shows the message).
        """
        if self.model is None:
            raise ValueError("No model is loaded.")
        with torch_threads(1):  # batch 1: a second thread brings nothing (attnlab.models.threads)
            decoding = self._decoding(self.text.value)
        if not np.isfinite(decoding.alpha).all():
            raise ValueError("The attention weights are NaN: check the score or softmax.")
        self.decoding = decoding
        self.unknown = unknown_words(self.model, self.text.value, decoding.source_tokens)
        L, H = decoding.alpha.shape[:2]
        options = [("", (0, 0))]
        if L * H > 1:  # several layers and heads: the last layer's mean of heads by default
            heads = [(f"layer {i + 1}, head {j + 1}", (i, j)) for i in range(L) for j in range(H)]
            last = (L - 1) * H  # the mean, the last layer's heads, then the earlier layers
            mean = (f"layer {L}, mean of {H} heads", (L - 1, MEAN))  # the last layer
            options = [mean, *heads[last:], *heads[:last]]
        if [v for _, v in self.head.options] != [v for _, v in options]:
            self.head.unobserve(self._on_head, names="value")  # rendered once, below
            self.head.options = options  # selects the first
            self.head.observe(self._on_head, names="value")
        self.head_box.layout.display = None if L * H > 1 else "none"
        self._render()

    def _on_head(self, change=None) -> None:
        self.guard(self._render)

    def _decoding(self, text: str) -> Decoding:
        if self.score is None:
            return decode(self.model, text)
        # The student's score, swapped in (attnlab.guard.parts) for this decoding only and guarded:
        # what it changes in the library or the model is put back, and it runs on a budget.
        session = Session(shared=((self.model_chooser.value, self.model),))
        score = checked_score(self.score, session)
        with parts.swap(self.model, "score", lambda trained: score):
            decoding = decode(self.model, text)
        name = getattr(self.score, "__name__", type(self.score).__name__)
        if session.changes:
            raise ScoreError(session.changed_message(f"your score {name}"))
        self.note = " ".join(session.printed.shown(2, f"your score {name}").split("\n"))
        return decoding

    @property
    def translation(self) -> str:
        if self.decoding is None:
            return ""
        if self.decoding.level == "subword":  # the pieces joined as SentencePiece joins them
            return self.model.tgt_vocab.join(self.decoding.output_tokens)
        return self.decoding.text

    @property
    def source_tokens(self) -> list[str]:
        return [] if self.decoding is None else self.decoding.source_tokens

    def _selected_alpha(self) -> np.ndarray:
        """(T, n): the weights of the chosen layer and head (or their mean)."""
        layer, head = self.head.value
        a = self.decoding.alpha[layer]  # (h, T, n)
        return a.mean(axis=0) if head == MEAN else a[head]

    def _title(self) -> str:
        """The model, the head, and the text as a word or character model read it (unknown words:
        <unk>); a subword model reads what was typed, shown in the box above."""
        # a Transformer's choice of layer and head: of its cross-attention (its rows: the outputs)
        where = (
            "" if self.head_box.layout.display == "none" else f" cross-attention, {self.head.label}"
        )
        d = self.decoding
        if d.level == "subword":  # it reads what was typed, shown in the box and on the axis
            return short(f"{self.model_chooser.value}{where}", 64)
        read = " ".join(d.source_tokens[:-1]) if d.level == "word" else self.text.value
        return short(f"{self.model_chooser.value}{where} reads '{read}'", 64)

    def _render(self) -> None:
        d = self.decoding
        if d is None:
            return
        if len(d) == 0:
            self._show_placeholder("The model wrote nothing for this input.")
            return
        self.alphas = alpha = self._selected_alpha()  # (T, n)
        T = len(d)
        rnn = d.context is not None  # RNNSearch: the query is s_{t-1}, c_t is a mix of h_i
        words = d.level in ("word", "subword")
        pieces = d.level == "subword"
        source = tick_labels(d.source_tokens, pieces)  # the tokens as the picture labels them
        output = tick_labels(d.output_tokens, pieces)
        join = self.model.tgt_vocab.join if pieces else " ".join
        so_far = [
            tail(join(d.output_tokens[: t + 1]) if words else d.text[: t + 1], 28 if words else 18)
            for t in range(T)
        ]
        captions = [
            step_caption(t + 1, output[t], float(d.probs[t]), so_far[t], rnn) for t in range(T)
        ]
        terms = [context_terms(alpha[t], source) if rnn else None for t in range(T)]
        lines = [context_line(alpha[t], source, t + 1) if rnn else "" for t in range(T)]
        drawn = [alpha, source, output, self._title()]

        def draw() -> list[bytes]:
            with warnings.catch_warnings():  # a glyph the font lacks: a box, never a warning
                warnings.simplefilter("ignore", UserWarning)
                return self._renderer.frames(*drawn)

        # every step's picture, read from the shipped frames when they hold them all
        steps = [[*drawn, t] for t in range(T)]
        pictures = rendered_all(
            "DecodeStepper", steps, draw, code=[__name__, DecodeFrames.__module__]
        )
        self.grid.resize(T + 1)
        self.words.resize(T + 1)
        self.grid.set((0,), blank_frame(), t=0, rows=alpha[:0], context="")
        self.words.set((0,), "")
        for t, picture in enumerate(pictures):
            self.grid.set(
                (t + 1,), picture, t=t + 1, token=d.output_tokens[t], p=float(d.probs[t]),
                alpha=alpha[t], rows=alpha[: t + 1], context=lines[t], caption=captions[t],
            )  # fmt: skip
            said = step_words(t + 1, output[t], float(d.probs[t]), so_far[t], terms[t])
            self.words.set((t + 1,), said)
        self._set_steps(T)

    def _set_steps(self, T: int) -> None:
        """The slider over t = 1..T; it keeps its step where it can."""
        t = min(max(int(self.slider.value), 1), T)
        self.slider.max = self.play_button.max = T
        self.slider.value = self.play_button.value = t
        self.slider.disabled = T == 1
        self.grid.select((t,))  # the start; then the jslinks follow the slider
        self.words.select((t,))

    def _show_placeholder(self, why: str = "") -> None:
        """A frame that says what to do, when there is no decoding to show."""
        fig, sizes = slide_figure(WIDTH_PX, 80, layout=None)
        reads = self._reads(self.model_chooser.value)
        example = f", e.g. '{reads.default}'" if reads.default else ""
        what = f"Type {reads.asked}{example}, then Enter"
        fig.text(0.5, 0.5, literal(why or what), ha="center", va="center",
                 fontsize=sizes.caption)  # fmt: skip
        self.alphas = np.zeros((0, 0))
        self.grid.resize(2)
        self.words.resize(2)
        self.grid.set((0,), blank_frame(), t=0, rows=np.zeros((0, 0)), context="")
        self.grid.set((1,), png_bytes(fig, draw=True), t=0, rows=np.zeros((0, 0)), context="")
        self.words.set((0,), "")
        self.words.set((1,), "")
        self._set_steps(1)

    # ------------------------------------------------------------------ stepping
    def move(self, delta: int) -> None:
        """Back (delta -1) or Step (+1), clamped to the decoded steps."""
        self.slider.value = int(np.clip(self.slider.value + delta, 1, self.slider.max))

    def reset(self) -> None:
        """Stop playing and go back to the first step."""
        self.play_button.playing = False
        self.slider.value = 1

    @property
    def frame(self):
        """The Frame of the step the slider selects: its picture and its readouts."""
        return self.grid.frame()

    @property
    def t(self) -> int:
        """The step shown, 1-based (0 when there is nothing decoded)."""
        return int(self.frame.data.get("t", 0))

    @property
    def heatmap_data(self) -> np.ndarray:
        """Rows 1..t of ``alphas``: the rows of the heatmap the frame shows, (t, n)."""
        return self.frame.data["rows"]

    @property
    def context_lines(self) -> list[str]:
        """The c_t line of every step (empty for models without c_t)."""
        return [self.grid.frame((t,)).data.get("context", "") for t in range(1, self.grid.sizes[0])]

    @property
    def image(self) -> widgets.Image:
        """The Image of step t (what the browser shows through the jslink)."""
        return self.frame.view

    # ------------------------------------------------------------------ display
    def text_form(self) -> str:
        return f"DecodeStepper: {self.model_chooser.value} on {short(self.text.value, 40)!r}"

    def png(self) -> bytes:
        """The last frame (the whole heatmap): the picture for viewers without a kernel."""
        return bytes(self.grid.frame((self.grid.sizes[0] - 1,)).view.value)
