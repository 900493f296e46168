r"""DecodeStepper: watch a trained model translate a date, one output token at a time.

At step t the decoder writes y_t with probability p(y_t | y_<t, x) while attending to the
source with weights alpha_{t,1..n}; row t of the heatmap is that alpha.  The t slider (and
Back, Step, Play, Reset) moves through the steps; the heatmap fills row by row, the current
row boxed in red; for RNNSearch the context vector c_t = sum_i alpha_{t,i} h_i is drawn
beneath it.  The Transformer has several layers and heads of cross-attention: choose one.

Every step's picture is rendered once per decoded text (about 10 ms each, see
``benchmarks/widgets.py``) into an ``ipywidgets.Stack`` of images whose ``selected_index`` is
linked to the slider in the browser (``jslink``).  So moving the slider costs the kernel
nothing, and a notebook exported to HTML with its widget state still steps through the
frames without any kernel.
"""

from __future__ import annotations

import html
from collections.abc import Iterator

import ipywidgets as widgets
import numpy as np

from attnlab.plots import (
    ContextBars,
    Heatmap,
    cache_background,
    new_figure,
    png_bytes,
    restore_background,
)

from ._base import BaseWidget, load_model, one_thread, short

__all__ = ["DecodeStepper", "DecodeFrames", "MODELS", "DEFAULT_DATE"]

#: The shipped models the chooser offers, with their labels.
MODELS = {
    "rnnsearch-dates": "RNNSearch",
    "transformer-dates": "Transformer",
    "rnnenc-dates": "RNNEncDec (no attention)",
}
DEFAULT_DATE = "3 May 1979"
MEAN_HEAD = "mean"
SCORE_FORMULAS = {
    "dot": "dot score s^T h_i",
    "scaled_dot": "scaled dot score s^T h_i / sqrt(d)",
    "general": "general score s^T W_a h_i",
    "additive": "additive score v^T tanh(W s + U h_i)",
}


class DecodeFrames:
    """One persistent figure that renders the picture of each decoding step as PNG bytes.

    ``set_grid(src_tokens, out_tokens, title)`` draws the static parts once (ticks, colorbar,
    title); ``render(alphas, t, caption, context)`` then blits rows 0..t of ``alphas``
    (T, n_src) with row t boxed, the caption, and c_t as bars (when ``context_size``);
    ``render_all`` yields every step's frame, drawing one new row label per frame.
    """

    def __init__(self, context_size: int | None = None, dpi: int = 80):
        self.context_size = context_size
        height = 5.4 if context_size else 4.2
        self.fig = new_figure(7.0, height, dpi=dpi, layout="constrained")
        if context_size:
            ax_heat, ax_bars = self.fig.subplots(2, 1, height_ratios=[3, 1])
            self.bars = ContextBars(ax_bars, context_size)
        else:
            ax_heat, self.bars = self.fig.add_subplot(), None
        self.heatmap = Heatmap(ax_heat, "")
        self.caption = ax_heat.annotate(  # just above the heatmap, below the title
            "",
            xy=(0, 1),
            xycoords="axes fraction",
            xytext=(0, 4),
            textcoords="offset points",
            va="bottom",
            fontsize="medium",
            animated=True,
        )
        self._background = None

    def set_grid(self, src_tokens: list[str], out_tokens: list[str], title: str) -> None:
        self.heatmap.set_labels(src_tokens, out_tokens, reveal_rows=True)
        self.heatmap.ax.set_title(title, fontsize="medium", pad=22)
        self._background = cache_background(self.fig)

    def render(
        self, alphas: np.ndarray, t: int, caption: str, context: np.ndarray | None = None
    ) -> bytes:
        """PNG of step t: rows 0..t of alphas (T, n_src) shown, later rows blank."""
        restore_background(self.fig, self._background)
        self.heatmap.draw_row_labels(range(t + 1))
        return self._blit_step(alphas, t, caption, context)

    def render_all(
        self, alphas: np.ndarray, captions: list[str], contexts: list
    ) -> Iterator[bytes]:
        """PNG of every step, in order: each frame adds one row label to the last one's."""
        restore_background(self.fig, self._background)
        with_labels = self.fig.canvas.copy_from_bbox(self.fig.bbox)  # labels of rows < t
        for t, (caption, context) in enumerate(zip(captions, contexts, strict=True)):
            restore_background(self.fig, with_labels)
            self.heatmap.draw_row_labels([t])
            with_labels = self.fig.canvas.copy_from_bbox(self.fig.bbox)
            yield self._blit_step(alphas, t, caption, context)

    def _blit_step(self, alphas, t: int, caption: str, context) -> bytes:
        shown = np.full(alphas.shape, np.nan)
        shown[: t + 1] = alphas[: t + 1]  # the heatmap fills row by row
        self.heatmap.set_data(shown, row=t)
        self.heatmap.blit(labels=False)
        if self.bars is not None and context is not None:
            self.bars.set_values(context)
            self.bars.blit()
        self.caption.set_text(caption)
        self.heatmap.ax.draw_artist(self.caption)
        return png_bytes(self.fig)


class PlayButton(widgets.Play):
    """``widgets.Play`` (it runs in the browser, so it never blocks the kernel) with click()."""

    def click(self) -> None:
        """Start playing from the current step, or pause, like pressing the button."""
        self.playing = not self.playing


class DecodeStepper(BaseWidget):
    r"""Step through greedy decoding of a date; the heatmap of alpha_{t,i} fills row by row.

    ``DecodeStepper(model=None, text="3 May 1979")``: ``model`` is a shipped model's name
    (default ``"rnnsearch-dates"``) or a loaded model.

    Attributes for code and tests:

    * ``text`` (Text; a new date is decoded on Enter), ``model_chooser`` (Dropdown of
      model names), ``layer`` and ``head`` (Dropdowns, Transformer only; head "mean"
      averages the heads);
    * ``slider`` (IntSlider t = 0..T-1, the 0-based step, equal to ``Step.t``),
      ``back_button``, ``step_button``, ``reset_button`` (Buttons), ``play_button`` (a
      ``widgets.Play`` linked to the slider in the browser; ``.click()`` starts/pauses it);
    * ``model`` (the model in use), ``steps`` (list of ``attnlab.decode.Step``),
      ``source_tokens``, ``translation``, ``current_step`` (the Step at t or None);
    * ``alphas``: (T, n_src) the weights shown for every step (for the Transformer: the
      chosen layer and head, or the mean over heads); ``heatmap_data``: rows 0..t of it, the
      rows now filled, so ``heatmap_data[t]`` is ``steps[t].alpha`` (RNNSearch);
    * ``links``: the two browser-side links, Play -> slider and slider -> frames;
    * ``token_label`` (HTML, kept for code, not displayed: y_t, its probability, the output so
      far; each frame's caption shows the same in the picture), ``frames`` (Stack of
      ``frame_images``, one PNG per step), ``image`` (the Image now shown),
      ``message`` (a short message for bad input, '' when all is well).
    """

    def __init__(self, model=None, text: str = DEFAULT_DATE):
        super().__init__()
        self._models: dict[str, object] = {}
        options = [(label, name) for name, label in MODELS.items()]
        if model is None:
            name = "rnnsearch-dates"
        elif isinstance(model, str):
            name = model
            if name not in MODELS:
                options.append((name, name))
        else:  # a model object: offer it under its card's name
            card = getattr(model, "card", None) or {}
            name = str(card.get("name") or f"{model.kind} (given)")
            self._models[name] = model
            if name not in MODELS:
                options.append((name, name))
        self.model = None
        self.steps: list = []
        self.source_tokens: list[str] = []
        self.translation = ""
        self.alphas = np.zeros((0, 0))
        self._decoded_text = ""
        self._frames_renderer: DecodeFrames | None = None
        self._renderer_key: tuple = ()
        self._setting = False  # True while the frames are swapped: ignore slider events
        self._choosing = False  # True while the code itself sets a chooser: ignore its events

        narrow = {"width": "180px"}
        self.model_chooser = widgets.Dropdown(
            options=options, value=name, description="model", layout={"width": "280px"}
        )
        self.layer = widgets.Dropdown(options=[0], value=0, description="layer", layout=narrow)
        self.head = widgets.Dropdown(options=[0], value=0, description="head", layout=narrow)
        self.text = widgets.Text(value=text, description="date", continuous_update=False)
        self.back_button = widgets.Button(description="◀ Back", layout={"width": "80px"})
        self.step_button = widgets.Button(description="Step ▶", layout={"width": "80px"})
        self.reset_button = widgets.Button(description="Reset", layout={"width": "70px"})
        self.play_button = PlayButton(value=0, min=0, max=0, interval=600, description="Play")
        self.slider = widgets.IntSlider(
            value=0, min=0, max=0, description="t", layout={"width": "320px"}
        )
        self.links = [widgets.jslink((self.play_button, "value"), (self.slider, "value"))]
        self.token_label = widgets.HTML()
        self.info = widgets.HTML()
        self.frame_images: list[widgets.Image] = []
        self.frames = widgets.Stack([], selected_index=None)
        # In the browser the slider picks the frame: no kernel needed (exported HTML too).
        self.links.append(widgets.jslink((self.slider, "value"), (self.frames, "selected_index")))
        self.transformer_box = widgets.HBox([self.layer, self.head])
        self.transformer_box.layout.display = "none"
        # token_label is not shown: it needs a kernel to follow the slider, while the
        # caption drawn in each frame follows it everywhere (exported HTML too).
        self.children = [
            widgets.HBox([self.model_chooser, self.text, self.transformer_box]),
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
            self.frames,
            self.info,
        ]
        self.back_button.on_click(lambda _: self.move(-1))
        self.step_button.on_click(lambda _: self.move(+1))
        self.reset_button.on_click(lambda _: self.reset())
        self.slider.observe(self._on_slider, names="value")
        self.text.observe(lambda _: self.guard(self.decode), names="value")
        self.model_chooser.observe(self._on_model, names="value")
        self.layer.observe(self._on_head, names="value")
        self.head.observe(self._on_head, names="value")
        if self.guard(lambda: self._use_model(name)):
            self.guard(self.decode)
        if not self.frame_images:
            self._show_placeholder()

    # ------------------------------------------------------------------ models
    def _use_model(self, name: str) -> None:
        if name not in self._models:
            self._models[name] = load_model(name)  # FileNotFoundError/CheckpointError
        self.model = self._models[name]
        transformer = self.model.kind == "transformer"
        self.transformer_box.layout.display = None if transformer else "none"
        if transformer:
            cfg = self.model.config
            self._choosing = True  # the decode that follows renders the frames, once
            try:
                self.layer.options = list(range(cfg.num_layers))
                self.layer.value = cfg.num_layers - 1  # the last layer: the one that predicts
                self.head.options = [*range(cfg.num_heads), MEAN_HEAD]
                self.head.value = 0
            finally:
                self._choosing = False
        self.info.value = f"<small>{html.escape(self._model_description())}</small>"

    def _model_description(self) -> str:
        m = self.model
        if m.kind == "rnnsearch":
            score = getattr(getattr(m, "config", None), "score", "additive")
            return f"RNNSearch (bi-GRU encoder, GRU decoder), {SCORE_FORMULAS.get(score, score)}"
        if m.kind == "transformer":
            return "Transformer: cross-attention of the chosen decoder layer and head"
        if m.kind == "rnnencdec":
            return (
                "RNNEncDec: no attention; the decoder sees only the encoder's final state, "
                "drawn as all weight on the last source position"
            )
        return m.kind

    def _on_model(self, change) -> None:
        if self._choosing:
            return
        if self.guard(lambda: self._use_model(change["new"])):
            self.guard(self.decode)
        else:  # could not load: show why, and go back to the model in use
            message = self.message
            self._choosing = True
            try:
                self.model_chooser.value = change["old"]
            finally:
                self._choosing = False
            self.show_message(message)

    def _on_head(self, change=None) -> None:
        if self._choosing:
            return
        if self.model is not None and self.model.kind == "transformer" and self.steps:
            self.guard(lambda: self._render_frames(keep_t=True))

    # ------------------------------------------------------------------ decoding
    def decode(self) -> None:
        """Decode ``text.value`` with the model and render one frame per step.

        Bad text raises attnlab.data.InvalidInput (a ValueError) before anything changes,
        so the widget keeps showing the last good decoding (``guard`` shows the message).
        """
        from attnlab.decode import steps as decode_steps  # late: imports torch

        if self.model is None:
            raise ValueError("No model is loaded.")
        text = self.text.value
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"Type a date first, for example '{DEFAULT_DATE}'.")
        source_tokens = self.model.source_tokens(text)  # InvalidInput on bad text
        with one_thread():
            steps = list(decode_steps(self.model, text))
        self.steps, self.source_tokens = steps, source_tokens
        self.translation = "".join(s.token for s in steps)
        self._decoded_text = text
        self._render_frames(keep_t=False)

    def _alpha_rows(self) -> np.ndarray:
        """(T, n_src): the attention of each step that the heatmap shows."""
        n = len(self.source_tokens)
        if not self.steps:
            return np.zeros((0, n))
        rows = []
        for s in self.steps:
            a = np.asarray(s.alpha, dtype=float)
            if a.ndim == 3:  # Transformer: (layers, heads, n_src)
                a = a[int(self.layer.value)]  # (heads, n_src)
                a = a.mean(axis=0) if self.head.value == MEAN_HEAD else a[int(self.head.value)]
            rows.append(a)
        return np.stack(rows)  # (T, n_src)

    def _title(self) -> str:
        name = self.model_chooser.value
        where = ""
        if self.model.kind == "transformer":
            head = "mean of heads" if self.head.value == MEAN_HEAD else f"head {self.head.value}"
            where = f", layer {self.layer.value}, {head}"
        return short(f"{name}{where} reads '{self._decoded_text}'", 70)

    def _renderer(self) -> DecodeFrames:
        ctx = self.steps[0].context if self.steps else None
        size = None if ctx is None else int(np.asarray(ctx).size)
        key = (size,)
        if self._frames_renderer is None or key != self._renderer_key:
            self._frames_renderer, self._renderer_key = DecodeFrames(context_size=size), key
        return self._frames_renderer

    def _render_frames(self, keep_t: bool) -> None:
        self.alphas = self._alpha_rows()
        T = len(self.steps)
        if T == 0:
            self._show_placeholder("The model wrote nothing for this input.")
            return
        renderer = self._renderer()
        renderer.set_grid(self.source_tokens, [s.token for s in self.steps], self._title())
        captions = [self._caption(t) for t in range(T)]
        pictures = list(renderer.render_all(self.alphas, captions, [s.context for s in self.steps]))
        t = min(self.slider.value, T - 1) if keep_t else 0
        self._set_frames(pictures, t)

    def _caption(self, t: int) -> str:
        s = self.steps[t]
        so_far = "".join(x.token for x in self.steps[: t + 1])
        return f"t = {t}:  y_t = '{s.token}'  (p = {s.prob:.2f})   output so far: '{so_far}'"

    def _set_frames(self, pictures: list[bytes], t: int) -> None:
        """Put the frames in the Stack (reusing Image widgets) and show frame t."""
        while len(self.frame_images) < len(pictures):
            self.frame_images.append(
                widgets.Image(format="png", layout=widgets.Layout(width="560px"))
            )
        for image, picture in zip(self.frame_images, pictures, strict=False):
            image.value = picture
        self._setting = True
        try:
            self.frames.selected_index = None
            self.frames.children = tuple(self.frame_images[: len(pictures)])
            last = len(pictures) - 1
            self.slider.max = self.play_button.max = last
            self.slider.disabled = last == 0
            self.slider.value = self.play_button.value = t
            self.frames.selected_index = t
        finally:
            self._setting = False
        self._show_step()

    def _show_placeholder(self, why: str = "") -> None:
        """A frame that says what to do, when there is no decoding to show."""
        fig = new_figure(7.0, 1.2, dpi=80)
        fig.text(0.5, 0.5, why or f"Type a date, e.g. '{DEFAULT_DATE}'", ha="center")
        self.steps, self.alphas = [], np.zeros((0, len(self.source_tokens)))
        self._set_frames([png_bytes(fig, draw=True)], 0)

    # ------------------------------------------------------------------ stepping
    def _on_slider(self, change) -> None:
        if self._setting:
            return
        t = int(change["new"])
        if self.frames.children and t < len(self.frames.children):
            self.frames.selected_index = t  # the browser does this too (jslink)
        self._show_step()

    def _show_step(self) -> None:
        step = self.current_step
        if step is None:
            self.token_label.value = ""
            return
        so_far = "".join(s.token for s in self.steps[: step.t + 1])
        self.token_label.value = (
            f"t = {step.t}: y<sub>t</sub> = <b>{html.escape(step.token)}</b> with "
            f"p = {step.prob:.3f}; output so far: <code>{html.escape(so_far)}</code>"
        )

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
    def current_step(self):
        """The attnlab.decode.Step now shown, or None when nothing is decoded."""
        return self.steps[self.t] if self.steps and self.t < len(self.steps) else None

    @property
    def heatmap_data(self) -> np.ndarray:
        """Rows 0..t of ``alphas``: the rows of the heatmap now filled, (t+1, n_src)."""
        return self.alphas[: self.t + 1] if len(self.alphas) else self.alphas

    @property
    def image(self) -> widgets.Image | None:
        """The Image widget now shown."""
        i = self.frames.selected_index
        return None if i is None else self.frames.children[i]

    # ------------------------------------------------------------------ display
    def describe(self) -> str:
        return f"DecodeStepper: {self.model_chooser.value} on {short(self.text.value, 40)!r}"

    def png(self) -> bytes:
        """The last frame (the whole heatmap): the picture for viewers without a kernel."""
        return bytes(self.frame_images[len(self.frames.children) - 1].value)
