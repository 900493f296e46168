r"""DecodeStepper: watch a trained model translate a date, one output token at a time.

At step t the decoder writes y_t with probability p(y_t | y_<t, x) while attending to the
source with weights alpha_{t,1..n}; row t of the heatmap is that alpha.  The t slider (and
Back, Step, Play, Reset) moves through the steps; the heatmap fills row by row, the current
row boxed in red.  For RNNSearch the context vector c_t = sum_i alpha_{t,i} h_i is written
under it as the few h_i that carry the weight ("c_t = 0.81·h_3 ('M') + ...").  A model with
several layers and heads of cross-attention (the Transformer) offers a choice of them.

Every step's picture is rendered once per decoded text into an ``ipywidgets.Stack`` of
images whose ``selected_index`` follows the slider in the browser (one ``jslink``): moving
the slider costs the kernel nothing, and an exported HTML page still steps without a kernel.

``score=`` swaps any function (query (B, m, d_q), keys (B, n, d_k)) -> scores (B, m, n) in
for the RNNSearch model's trained score while it decodes (the model is restored after): an
edit-me cell of the deck.  A broken function shows its error inside the widget.
"""

from __future__ import annotations

import html
from collections.abc import Callable

import ipywidgets as widgets
import numpy as np
import torch

from attnlab.decode import Decoding, decode
from attnlab.plots import (
    Heatmap,
    cache_background,
    literal,
    png_bytes,
    restore_background,
    slide_figure,
)

from ._base import BaseWidget, load_model, one_thread, readable, short

__all__ = ["DecodeStepper", "DecodeFrames", "MODELS", "DEFAULT_DATE", "context_line"]

#: The shipped models the chooser offers, with their labels.
MODELS = {
    "rnnsearch-dates": "RNNSearch (additive score)",
    "rnnsearch-dates-dot": "RNNSearch, dot score",
    "rnnsearch-dates-scaled": "RNNSearch, scaled dot score",
    "rnnsearch-dates-general": "RNNSearch, general score",
    "rnnsearch-dates-additive": "RNNSearch, additive score",
    "transformer-dates": "Transformer",
    "rnnenc-dates": "RNNEncDec (no attention)",
}
DEFAULT_DATE = "3 May 1979"
MEAN = -1  # the "head" that averages the heads
WIDTH_PX, HEIGHT_PX = 600, 400  # the picture, shown at this size


def context_line(alpha: np.ndarray, source_tokens: list[str], top: int = 3) -> str:
    """c_t as the few h_i that carry the weight: "c_t = 0.81·h₃ ('M') + ... (97% of α)"."""
    order = np.argsort(-alpha, kind="stable")[:top]
    sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
    terms = [f"{alpha[i]:.2f}·h{str(i + 1).translate(sub)} ('{source_tokens[i]}')" for i in order]
    rest = " + …" if len(alpha) > top else ""
    share = float(alpha[order].sum())
    return f"cₜ = {' + '.join(terms)}{rest}   ({100 * share:.0f}% of α)"


def _tail(text: str, limit: int) -> str:
    """The last ``limit`` characters, with an ellipsis in front when cut."""
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


class DecodeFrames:
    """One persistent figure that renders the picture of every decoding step as PNG bytes.

    ``frames(alpha, source_tokens, output_tokens, title, captions, lines)`` draws the static
    parts once (ticks, colorbar, title) and blits, for each step t, rows 0..t of ``alpha``
    (T, n) with row t boxed, its caption above the heatmap and its line below (or none).
    """

    def __init__(self):
        self.fig, self.sizes = slide_figure(WIDTH_PX, HEIGHT_PX, layout=None)
        # fixed margins in px (a layout engine per new date costs more than the frames):
        # y labels on the left, title and caption on top, x labels and the c_t line below
        W, H = WIDTH_PX, HEIGHT_PX
        self.fig.subplots_adjust(left=62 / W, right=1 - 40 / W, top=1 - 58 / H, bottom=86 / H)
        ax = self.fig.add_subplot()
        self.heatmap = Heatmap(ax, "", sizes=self.sizes)
        text = {"fontsize": self.sizes.caption, "animated": True}
        self.caption = ax.annotate(  # just above the heatmap, below the title
            "", xy=(0, 1), xycoords="axes fraction", xytext=(0, 4),
            textcoords="offset points", va="bottom", **text,
        )  # fmt: skip
        self.line = self.fig.text(8 / WIDTH_PX, 6 / HEIGHT_PX, "", va="bottom", **text)

    def frames(
        self,
        alpha: np.ndarray,
        source_tokens: list[str],
        output_tokens: list[str],
        title: str,
        captions: list[str],
        lines: list[str],
    ) -> list[bytes]:
        heat = self.heatmap
        heat.set_labels(source_tokens, output_tokens, reveal_rows=True)
        heat.ax.set_title(literal(title), fontsize=self.sizes.title, pad=self.sizes.caption + 10)
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


def checked_score(fn: Callable) -> Callable:
    """``fn`` wrapped so that each way it can break says so in one line (a ScoreError)."""
    name = getattr(fn, "__name__", type(fn).__name__)

    def score(query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        try:
            e = fn(query, keys)
        except Exception as err:  # the student's code: any error, in one line
            raise ScoreError(f"your score {name} raised {type(err).__name__}: {err}") from None
        want = (*query.shape[:-1], keys.shape[-2])  # (B, m, n)
        if not isinstance(e, torch.Tensor):
            raise ScoreError(f"your score {name} returned {type(e).__name__}, not a tensor {want}")
        if tuple(e.shape) != want:
            raise ScoreError(
                f"your score {name} returned shape {tuple(e.shape)}; expected (B, m, n) = {want} "
                f"for query {tuple(query.shape)} and keys {tuple(keys.shape)}"
            )
        if not bool(torch.isfinite(e).all()):
            raise ScoreError(f"your score {name} returned NaN or inf")
        return e

    return score


class DecodeStepper(BaseWidget):
    r"""Step through greedy decoding of a date; the heatmap of alpha_{t,i} fills row by row.

    ``DecodeStepper(model=None, text="3 May 1979", score=None)``: ``model`` is a shipped
    model's name (default ``"rnnsearch-dates"``) or a loaded model; ``score`` a function
    (query (B, m, d_q), keys (B, n, d_k)) -> (B, m, n) used in place of the model's score.

    Attributes for code and tests:

    * ``text`` (Text; a new date is decoded on Enter), ``model_chooser`` (Dropdown of
      model names), ``head`` (Dropdown of (layer, head) for models with several; head -1 is
      the mean of the heads), ``head_box`` (hidden for one layer and head);
    * ``slider`` (IntSlider t = 0..T-1), ``back_button``, ``step_button``, ``reset_button``,
      ``play_button`` (a ``widgets.Play``; ``.click()`` starts/pauses it), ``links`` (the two
      browser-side links: Play -> slider, slider -> frames);
    * ``model``, ``decoding`` (the :class:`attnlab.decode.Decoding` shown), ``translation``,
      ``source_tokens``, ``alphas`` (T, n): the weights shown (chosen layer and head),
      ``heatmap_data``: rows 0..t of it; ``context_lines``: the c_t line of every step;
    * ``frames`` (Stack of one Image per step), ``image`` (the Image of step t), ``message``.
    """

    def __init__(self, model=None, text: str = DEFAULT_DATE, score: Callable | None = None):
        super().__init__()
        if score is not None and not callable(score):
            raise TypeError(f"score must be a function (query, keys) -> scores; got {score!r}")
        self.score = score
        self._models: dict[str, object] = {}
        name = self._register(model)
        self.model = None
        self.decoding: Decoding | None = None
        self.alphas = np.zeros((0, 0))
        self.context_lines: list[str] = []
        self._renderer = DecodeFrames()
        options = [(label, key) for key, label in MODELS.items()]
        options += [(key, key) for key in self._models if key not in MODELS]
        if name not in {key for _, key in options}:
            options.append((name, name))
        self.model_chooser = widgets.Dropdown(
            options=options, value=name, description="model", layout={"width": "340px"}
        )
        self.head = widgets.Dropdown(options=[("", (0, 0))], description="attention")
        self.head_box = widgets.HBox([self.head], layout={"display": "none"})
        shown = text if isinstance(text, str) else ""  # not text: the box starts empty
        self.text = widgets.Text(value=shown, description="date", continuous_update=False)
        self.back_button = widgets.Button(description="◀ Back", layout={"width": "100px"})
        self.step_button = widgets.Button(description="Step ▶", layout={"width": "100px"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "90px"})
        self.play_button = PlayButton(value=0, min=0, max=0, interval=600, description="Play")
        self.slider = widgets.IntSlider(value=0, min=0, max=0, description="step t")
        self.frames = widgets.Stack([], selected_index=None)
        self._frame_layout = widgets.Layout(width=f"{WIDTH_PX}px")  # one for every frame
        self.info = widgets.HTML(layout={"width": "360px", "margin": "40px 0 0 16px"})
        # In the browser the slider picks the frame: no kernel needed (exported HTML too).
        self.links = [
            widgets.jslink((self.play_button, "value"), (self.slider, "value")),
            widgets.jslink((self.slider, "value"), (self.frames, "selected_index")),
        ]
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
        self.text.observe(lambda _: self.guard(self.decode), names="value")
        self.model_chooser.observe(self._on_model, names="value")
        self.head.observe(self._on_head, names="value")
        self._name: str | None = None  # the model whose decoding is shown
        if self.guard(lambda: self._use_model(name)) and self.guard(self.decode):
            self._name = name
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
        if self.guard(lambda: self._use_model(change["new"])) and self.guard(self.decode):
            self._name = change["new"]
            return
        message = self.message  # could not load or decode: go back to the model in use
        if self._name is not None and self._name != change["new"]:
            self.model_chooser.value = self._name
        self.show_message(message)

    # ------------------------------------------------------------------ decoding
    def decode(self) -> None:
        """Decode ``text.value`` with the model and render one frame per step.

        Bad text raises attnlab.data.InvalidInput (a ValueError) before anything changes,
        so the widget keeps showing the last good decoding (``guard`` shows the message).
        """
        if self.model is None:
            raise ValueError("No model is loaded.")
        with one_thread():
            decoding = self._decode(self.text.value)
        if not np.isfinite(decoding.alpha).all():
            raise ValueError("The attention weights are NaN: check the score or softmax.")
        self.decoding = decoding
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

    def _on_head(self, change=None) -> None:
        self.guard(self._render)

    def _decode(self, text: str) -> Decoding:
        if self.score is None:
            return decode(self.model, text)
        trained = self.model.score
        self.model.score = checked_score(self.score)  # swapped in for this decoding only
        try:
            return decode(self.model, text)
        finally:
            self.model.score = trained

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
        where = "" if self.head_box.layout.display == "none" else f", {self.head.label}"
        return short(f"{self.model_chooser.value}{where} reads '{self.text.value}'", 50)

    def _render(self) -> None:
        d = self.decoding
        if d is None:
            return
        if len(d) == 0:
            self._show_placeholder("The model wrote nothing for this input.")
            return
        self.alphas = self._selected_alpha()
        T = len(d)
        captions = [
            f"t = {t}:  y_t = '{d.output_tokens[t]}'  (p = {d.probs[t]:.2f});  "
            f"so far '{_tail(d.text[: t + 1], 16)}'"
            for t in range(T)
        ]
        self.context_lines = [
            context_line(self.alphas[t], d.source_tokens) if d.context is not None else ""
            for t in range(T)
        ]
        pictures = self._renderer.frames(
            self.alphas,
            d.source_tokens,
            d.output_tokens,
            self._title(),
            captions,
            self.context_lines,
        )
        self._set_frames(pictures)

    def _set_frames(self, pictures: list[bytes]) -> None:
        """One Image per step in the Stack; the slider keeps its step where it can."""
        images = list(self.frames.children)
        while len(images) < len(pictures):
            images.append(widgets.Image(format="png", layout=self._frame_layout))
        for image, picture in zip(images, pictures, strict=False):
            image.value = picture
        last = len(pictures) - 1
        t = min(self.slider.value, last)
        self.frames.children = tuple(images[: len(pictures)])
        self.slider.max = self.play_button.max = last
        self.slider.disabled = last == 0
        self.slider.value = self.play_button.value = t
        self.frames.selected_index = t  # the start; then the jslink follows the slider

    def _show_placeholder(self, why: str = "") -> None:
        """A frame that says what to do, when there is no decoding to show."""
        fig, sizes = slide_figure(WIDTH_PX, 80, layout=None)
        fig.text(0.5, 0.5, literal(why or f"Type a date, e.g. '{DEFAULT_DATE}'"), ha="center",
                 va="center", fontsize=sizes.caption)  # fmt: skip
        self.alphas = np.zeros((0, 0))
        self._set_frames([png_bytes(fig, draw=True)])

    # ------------------------------------------------------------------ stepping
    def move(self, delta: int) -> None:
        """Back (delta -1) or Step (+1), clamped to the decoded steps."""
        self.slider.value = int(np.clip(self.slider.value + delta, 0, self.slider.max))

    def reset(self) -> None:
        """Stop playing and go back to the first step."""
        self.play_button.playing = False
        self.slider.value = 0

    @property
    def t(self) -> int:
        return int(self.slider.value)

    @property
    def heatmap_data(self) -> np.ndarray:
        """Rows 0..t of ``alphas``: the rows of the heatmap now filled, (t+1, n)."""
        return self.alphas[: self.t + 1]

    @property
    def image(self) -> widgets.Image:
        """The Image of step t (what the browser shows through the jslink)."""
        return self.frames.children[min(self.t, len(self.frames.children) - 1)]

    # ------------------------------------------------------------------ display
    def describe(self) -> str:
        return f"DecodeStepper: {self.model_chooser.value} on {short(self.text.value, 40)!r}"

    def png(self) -> bytes:
        """The last frame (the whole heatmap): the picture for viewers without a kernel."""
        return bytes(self.frames.children[-1].value)
