r"""DecodeStepper: watch a trained model translate, one output token at a time.

At step t = 1..T the decoder writes y_t with probability p(y_t | y_<t, x) while attending to
the source h_1..h_n with weights alpha_{t,1..n}; for RNNSearch the query is the previous
decoder state s_{t-1} (as on the equations slide: alpha_{t,i} = softmax_i score(s_{t-1}, h_i)).
Row t of the heatmap is that alpha.  The t slider (and Back, Step, Play, Reset) moves through
the steps; the heatmap fills row by row, the current row boxed in red.  For RNNSearch the
context vector c_t = sum_i alpha_{t,i} h_i is written under it as the few h_i that carry the
weight ("c_3 = 0.81·h_3 ('M') + ...").  A model with several layers and heads of
cross-attention (the Transformer) offers a choice of them.

The model chooser offers the date models and the real-language ones (English->French,
English->German) that are installed; the box takes a date or a phrase of the room's own.  A
word the model never saw is read, and shown, as ``<unk>`` (and said in the widget); text the
model cannot read (empty, too long) gives a one-line message inside the widget.

Every step's picture is rendered once per decoded text into a
:class:`attnlab.widgets._frames.FrameGrid` whose Stack follows the slider in the browser (one
``jslink``), and each frame carries the readouts of its step (t, y_t, p, alpha_t, c_t):
moving the slider costs the kernel nothing, an exported HTML page still steps without a
kernel, and what the widget reports is what the frame shows.

``score=`` swaps any function (query (B, m, d_q), keys (B, n, d_k)) -> scores (B, m, n) in
for the RNNSearch model's trained score while it decodes (the model is restored after): an
edit-me cell of the deck.  It is swapped in through :mod:`attnlab.guard.parts` and guarded by
:mod:`attnlab.guard.sandbox` (a time budget; what it changes is put back): whatever goes wrong,
``SystemExit`` included, is a message inside the widget.
"""

from __future__ import annotations

import functools
import html
import warnings
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import torch

from attnlab.decode import Decoding, decode
from attnlab.guard import parts
from attnlab.guard.sandbox import OutOfTime, Session, StudentRaised, describe, kind_problem
from attnlab.pictures.canvas import cache_background, png_bytes, restore_background, slide_figure
from attnlab.pictures.heatmaps import Heatmap, heatmap_room
from attnlab.pictures.typography import TYPE, literal
from attnlab.text.vocab import UNK
from attnlab.training import checkpoints

from ._base import BaseWidget, load_model, one_thread, readable, short
from ._frames import FrameGrid

__all__ = [
    "DecodeStepper",
    "DecodeFrames",
    "MODELS",
    "DEFAULT_DATE",
    "DEFAULT_TEXT",
    "context_line",
    "step_caption",
]

#: The models the chooser offers (those installed), with their labels.
MODELS = {
    "rnnsearch-dates": "RNNSearch (additive score), dates",
    "rnnsearch-dates-dot": "RNNSearch, dot score, dates",
    "rnnsearch-dates-scaled": "RNNSearch, scaled dot score, dates",
    "rnnsearch-dates-general": "RNNSearch, general score, dates",
    "rnnsearch-dates-additive": "RNNSearch, additive score, dates",
    "transformer-dates": "Transformer, dates",
    "rnnenc-dates": "RNNEncDec (no attention), dates",
    "rnnsearch-en-fr": "RNNSearch, English → French",
    "rnnenc-en-fr": "RNNEncDec (no attention), English → French",
    "transformer-en-fr": "Transformer, English → French",
    "transformer-en-de": "Transformer, English → German",
}
DEFAULT_DATE = "3 May 1979"
#: What the box starts with for each kind of model (by the end of its name).
DEFAULT_TEXT = {"dates": DEFAULT_DATE, "en-fr": "Default cell type", "en-de": "Close all tabs"}
MEAN = -1  # the "head" that averages the heads
WIDTH_PX, HEIGHT_PX = 700, 360  # the smallest picture; larger when its labels need the room
SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _kind(name: str) -> str:
    """'dates', 'en-fr', 'en-de' ...: what the model reads (the end of its name)."""
    for kind in DEFAULT_TEXT:
        if name.endswith(kind) or f"-{kind}-" in name:
            return kind
    return "dates"


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
def _blank() -> bytes:
    """The empty frame 0 (no step shows it): a white pixel."""
    fig, _ = slide_figure(1, 1, layout=None)
    return png_bytes(fig, draw=True)


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters, with an ellipsis in front when cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


class DecodeFrames:
    """Renders the picture of every decoding step as PNG bytes, sized for its labels.

    ``frames(alpha, source_tokens, output_tokens, title, captions, lines)`` makes a figure
    large enough for every key and query label at the lecture's tick size, draws the static
    parts once (ticks, colorbar, title) and blits, for each step, rows 1..t of ``alpha``
    (T, n) with row t boxed, its caption above the heatmap and its line below (or none).
    """

    def _figure(self, source_tokens: list[str], output_tokens: list[str], texts: list[str]) -> None:
        tick = TYPE.tick
        room_w, room_h = heatmap_room(source_tokens, output_tokens, tick)
        ys = max(len(literal(s)) for s in [*output_tokens, "x"])
        left, right = 14 + 1.6 * TYPE.label + (0.62 * ys + 0.3) * tick, 80
        bar = 1 - 0.046 - 0.03  # the colorbar takes the rest of the axes' width (Heatmap)
        W = max(WIDTH_PX, left + max(room_w, 220) / bar * 1.02 + right)
        W = max(W, 24 + 0.52 * TYPE.caption * max(map(len, texts), default=0))  # captions fit
        # the labels stand level where they fit the axes (as Heatmap decides), else upright
        level_w, _ = heatmap_room(source_tokens, output_tokens, tick, turn=False)
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
        heat.set_labels(source_tokens, output_tokens, reveal_rows=True)
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


class PlayButton(widgets.Play):
    """``widgets.Play`` (it runs in the browser, so it never blocks the kernel) with click()."""

    def click(self) -> None:
        """Start playing from the current step, or pause, like pressing the button."""
        self.playing = not self.playing


class ScoreError(ValueError):
    """A swapped-in score function that fails, returns the wrong shape or NaN."""


def checked_score(fn: Callable, session: Session | None = None) -> Callable:
    """``fn`` called in ``session`` (a time budget, state put back, prints captured), wrapped
    so that each way it can break says so in one line (a ScoreError): any exception it raises,
    ``SystemExit`` included, the budget, a wrong type, dtype, device or shape, NaN."""
    name = getattr(fn, "__name__", type(fn).__name__)
    who = f"your score {name}"
    session = session or Session()

    def score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        try:
            e = session.call(fn, query, keys)
        except StudentRaised as raised:  # the student's code: any error, in one line
            raise ScoreError(f"{who} raised {describe(raised.error)}") from None
        except OutOfTime as error:
            raise ScoreError(session.time_message(error, who)) from None
        want = (*query.shape[:-1], keys.shape[-2])  # (B, m, n)
        if not isinstance(e, torch.Tensor):
            raise ScoreError(f"{who} returned {type(e).__name__}, not a tensor {want}")
        problem = kind_problem(e, query.dtype, query.device, who)
        if problem is not None:
            raise ScoreError(problem)
        if tuple(e.shape) != want:
            raise ScoreError(
                f"{who} returned shape {tuple(e.shape)}; expected (B, m, n) = {want} "
                f"for query {tuple(query.shape)} and keys {tuple(keys.shape)}"
            )
        if not bool(torch.isfinite(e).all()):
            raise ScoreError(f"{who} returned NaN or inf")
        return e

    return score


class DecodeStepper(BaseWidget):
    r"""Step through greedy decoding; the heatmap of alpha_{t,i} fills row by row.

    ``DecodeStepper(model=None, text=None, score=None)``: ``model`` is a shipped model's name
    (default ``"rnnsearch-dates"``) or a loaded model; ``text`` what it reads first (default:
    a date, or a phrase for a language model); ``score`` a function (query (B, m, d_q), keys
    (B, n, d_k)) -> (B, m, n) used in place of the model's score.

    Attributes for code and tests:

    * ``text`` (Text: a date or a phrase, decoded on Enter), ``model_chooser`` (Dropdown of
      model names), ``head`` (Dropdown of (layer, head) for models with several; head -1 is
      the mean of the heads), ``head_box`` (hidden for one layer and head);
    * ``slider`` (IntSlider "step t" = 1..T), ``back_button``, ``step_button``,
      ``reset_button``, ``play_button`` (a ``widgets.Play`` over t = 1..T; ``.click()``
      starts/pauses it), ``links`` (the browser-side links: Play -> slider, slider -> frames:
      the Stack's child t is step t, child 0 an empty frame no step shows);
    * ``model``, ``decoding`` (the :class:`attnlab.decode.Decoding` shown), ``translation``,
      ``source_tokens`` (unknown words as ``<unk>``), ``unknown`` (the words read as <unk>),
      ``alphas`` (T, n): the weights shown (chosen layer and head);
    * ``grid`` (the FrameGrid, one frame per step), ``frames`` (its Stack), ``frame`` (the
      step's Frame: ``data`` holds t, token, p, alpha, rows, context, caption);
      from it: ``t`` (1-based), ``heatmap_data`` (rows 1..t of ``alphas``), ``context_lines``
      (every step's c_t line), ``image`` (the Image of step t), ``message``.
    """

    def __init__(self, model=None, text: str | None = None, score: Callable | None = None):
        super().__init__()
        if score is not None and not callable(score):
            raise TypeError(f"score must be a function (query, keys) -> scores; got {score!r}")
        self.score = score
        self._models: dict[str, object] = {}
        name = self._register(model)
        self.model = None
        self.decoding: Decoding | None = None
        self.alphas = np.zeros((0, 0))
        self.unknown: list[str] = []
        self._renderer = DecodeFrames()
        self.model_chooser = widgets.Dropdown(
            options=self._options(name), value=name, description="model",
            layout={"width": "430px"}, style={"description_width": "60px"},
        )  # fmt: skip
        self.head = widgets.Dropdown(options=[("", (0, 0))], description="attention")
        self.head_box = widgets.HBox([self.head], layout={"display": "none"})
        if text is None:
            text = DEFAULT_TEXT[_kind(name)]
        shown = text if isinstance(text, str) else ""  # not text: the box starts empty
        self.text = widgets.Text(
            value=shown, description=self._box_name(name), continuous_update=False,
            placeholder="type, then Enter", layout={"width": "380px"},
            style={"description_width": "70px"},
        )  # fmt: skip
        self.back_button = widgets.Button(description="◀ Back", layout={"width": "100px"})
        self.step_button = widgets.Button(description="Step ▶", layout={"width": "100px"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "90px"})
        self.play_button = PlayButton(value=1, min=1, max=1, interval=600, description="Play")
        self.slider = widgets.IntSlider(value=1, min=1, max=1, description="step t")
        # frame t is step t (1-based, as the slider says); frame 0 is empty and never shown
        self.grid = FrameGrid([(self.slider, "value")], (2,), 0)
        self.frames = self.grid.root
        self.frames.layout.flex = "0 0 auto"  # the picture at its own width, never squeezed
        self.info = widgets.HTML(layout={"width": "300px", "margin": "40px 0 0 12px"})
        # In the browser the slider picks the frame: no kernel needed (exported HTML too).
        self.links = [
            widgets.jslink((self.play_button, "value"), (self.slider, "value")),
            *self.grid.links,
        ]
        # the same Play <-> slider link in the kernel, so that Step and Back keep Play in step
        self._kernel_link = widgets.link((self.play_button, "value"), (self.slider, "value"))
        self.children = [
            widgets.HBox([self.model_chooser, self.text, self.head_box]),
            widgets.HBox(
                [
                    self.reset_button,
                    self.back_button,
                    self.step_button,
                    self.play_button,
                    self.slider,
                ]
            ),
            self.message_box,
            # the model's description beside the picture, not under it: the slide is wide
            widgets.HBox([self.frames, self.info], layout={"align_items": "flex-start"}),
        ]
        self.back_button.on_click(lambda _: self.move(-1))
        self.step_button.on_click(lambda _: self.move(+1))
        self.reset_button.on_click(lambda _: self.reset())
        self.text.observe(self._on_text, names="value")
        self.model_chooser.observe(self._on_model, names="value")
        self.head.observe(self._on_head, names="value")
        self._name: str | None = None  # the model whose decoding is shown
        if self.guard(lambda: self._use_model(name)) and self.guard(self.decode):
            self._name = name
            self._say_unknown()
        else:
            self._show_placeholder()

    # ------------------------------------------------------------------ models
    def _register(self, model) -> str:
        if model is None:
            return "rnnsearch-dates"
        if isinstance(model, str):
            return model
        card = getattr(model, "card", None) or {}
        name = str(card.get("name") or f"{type(model).__name__} (given)")
        self._models[name] = model
        return name

    def _options(self, name: str) -> list[tuple[str, str]]:
        """The installed models of :data:`MODELS`, the given ones, and ``name``."""
        try:
            installed = set(checkpoints.available())
        except OSError:
            installed = set()
        options = [(label, key) for key, label in MODELS.items() if key in installed]
        options += [(key, key) for key in self._models if key not in MODELS]
        if name not in {key for _, key in options}:
            options.append((MODELS.get(name, name), name))
        return options

    @staticmethod
    def _box_name(name: str) -> str:
        return "date" if _kind(name) == "dates" else "phrase"

    def _use_model(self, name: str) -> None:
        if name not in self._models:
            self._models[name] = load_model(name)  # FileNotFoundError/CheckpointError
        model = self._models[name]
        if self.score is not None and not hasattr(model, "score"):
            raise ValueError(f"{name} has no score to replace; choose an RNNSearch model")
        self.model = model
        self.info.value = readable(html.escape(self._model_description(name)))

    def _model_description(self, name: str) -> str:
        label = MODELS.get(name, name)
        if self.score is not None:
            fn = getattr(self.score, "__name__", type(self.score).__name__)
            return f"{label} with your score function {fn}() in place of its trained score"
        return label

    def _on_model(self, change) -> None:
        new, old = change["new"], self._name
        typed = self.text.value
        if old is not None and _kind(new) != _kind(old) and typed == DEFAULT_TEXT[_kind(old)]:
            self.text.unobserve(self._on_text, names="value")  # decoded once, below
            self.text.value = DEFAULT_TEXT[_kind(new)]  # the example of the new kind
            self.text.observe(self._on_text, names="value")
        self.text.description = self._box_name(new)
        if self.guard(lambda: self._use_model(new)) and self.guard(self.decode):
            self._name = new
            self._say_unknown()
            return
        message = self.message  # could not load or decode: go back to the model in use
        if old is not None and old != new:
            self.model_chooser.value = old
        self.show_message(message)

    def _on_text(self, change=None) -> None:
        if self.guard(self.decode):
            self._say_unknown()

    def _say_unknown(self) -> None:
        """Words the model never saw: read as <unk>, shown in the picture and said here."""
        if self.unknown:
            words = ", ".join(f"'{w}'" for w in self.unknown[:6])
            more = " …" if len(self.unknown) > 6 else ""
            self.show_message(f"Not in the model's vocabulary, read as {UNK}: {words}{more}")

    # ------------------------------------------------------------------ decoding
    def decode(self) -> None:
        """Decode ``text.value`` with the model and render one frame per step.

        Bad text raises attnlab.text.vocab.InvalidInput (a ValueError) before anything changes,
        so the widget keeps showing the last good decoding (``guard`` shows the message).
        """
        if self.model is None:
            raise ValueError("No model is loaded.")
        with one_thread():
            decoding = self._decode(self.text.value)
        if not np.isfinite(decoding.alpha).all():
            raise ValueError("The attention weights are NaN: check the score or softmax.")
        self.decoding = decoding
        self.unknown = self._unknown_words(self.text.value, decoding)
        L, H = decoding.alpha.shape[:2]
        options = [("", (0, 0))]
        if L * H > 1:  # several layers and heads: choose one (the last layer by default)
            heads = [(f"layer {i + 1}, head {j + 1}", (i, j)) for i in range(L) for j in range(H)]
            last = (L - 1) * H  # the last layer's heads, their mean, then the earlier layers
            options = [*heads[last:], (f"layer {L}, mean of heads", (L - 1, MEAN)), *heads[:last]]
        if [v for _, v in self.head.options] != [v for _, v in options]:
            self.head.unobserve(self._on_head, names="value")  # rendered once, below
            self.head.options = options  # selects the first
            self.head.observe(self._on_head, names="value")
        self.head_box.layout.display = None if L * H > 1 else "none"
        self._render()

    def _unknown_words(self, text: str, decoding: Decoding) -> list[str]:
        """The words of ``text`` the model read as <unk> (word models; [] for characters)."""
        vocab = getattr(self.model, "src_vocab", None)
        if UNK not in decoding.source_tokens or vocab is None or not hasattr(vocab, "tokens"):
            return []
        read = vocab.tokens(text)
        return list(dict.fromkeys(w for w in read if w not in vocab.stoi))

    def _on_head(self, change=None) -> None:
        self.guard(self._render)

    def _decode(self, text: str) -> Decoding:
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
        return "" if self.decoding is None else self.decoding.text

    @property
    def source_tokens(self) -> list[str]:
        return [] if self.decoding is None else self.decoding.source_tokens

    def _selected_alpha(self) -> np.ndarray:
        """(T, n): the weights of the chosen layer and head (or their mean)."""
        layer, head = self.head.value
        a = self.decoding.alpha[layer]  # (h, T, n)
        return a.mean(axis=0) if head == MEAN else a[head]

    def _title(self) -> str:
        """The model, the head, and the text as the model read it (unknown words: <unk>)."""
        where = "" if self.head_box.layout.display == "none" else f", {self.head.label}"
        d = self.decoding
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
        words = d.level == "word"
        so_far = [
            _tail(
                " ".join(d.output_tokens[: t + 1]) if words else d.text[: t + 1],
                28 if words else 18,
            )
            for t in range(T)
        ]
        captions = [
            step_caption(t + 1, d.output_tokens[t], float(d.probs[t]), so_far[t], rnn)
            for t in range(T)
        ]
        lines = [context_line(alpha[t], d.source_tokens, t + 1) if rnn else "" for t in range(T)]
        with warnings.catch_warnings():  # a glyph the font lacks: a box, never a warning
            warnings.simplefilter("ignore", UserWarning)
            pictures = self._renderer.frames(
                alpha, d.source_tokens, d.output_tokens, self._title(), captions, lines
            )
        self.grid.resize(T + 1)
        self.grid.set((0,), _blank(), t=0, rows=alpha[:0], context="")
        for t, picture in enumerate(pictures):
            self.grid.set(
                (t + 1,), picture, t=t + 1, token=d.output_tokens[t], p=float(d.probs[t]),
                alpha=alpha[t], rows=alpha[: t + 1], context=lines[t], caption=captions[t],
            )  # fmt: skip
        self._set_steps(T)

    def _set_steps(self, T: int) -> None:
        """The slider over t = 1..T; it keeps its step where it can."""
        t = min(max(int(self.slider.value), 1), T)
        self.slider.max = self.play_button.max = T
        self.slider.value = self.play_button.value = t
        self.slider.disabled = T == 1
        self.grid.select((t,))  # the start; then the jslink follows the slider

    def _show_placeholder(self, why: str = "") -> None:
        """A frame that says what to do, when there is no decoding to show."""
        fig, sizes = slide_figure(WIDTH_PX, 80, layout=None)
        what = f"Type a date, e.g. '{DEFAULT_DATE}', then Enter"
        fig.text(0.5, 0.5, literal(why or what), ha="center", va="center",
                 fontsize=sizes.caption)  # fmt: skip
        self.alphas = np.zeros((0, 0))
        self.grid.resize(2)
        self.grid.set((0,), _blank(), t=0, rows=np.zeros((0, 0)), context="")
        self.grid.set((1,), png_bytes(fig, draw=True), t=0, rows=np.zeros((0, 0)), context="")
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
    def describe(self) -> str:
        return f"DecodeStepper: {self.model_chooser.value} on {short(self.text.value, 40)!r}"

    def png(self) -> bytes:
        """The last frame (the whole heatmap): the picture for viewers without a kernel."""
        return bytes(self.grid.frame((self.grid.sizes[0] - 1,)).view.value)
