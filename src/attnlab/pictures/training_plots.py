"""Training plots: loss and held-out exact match while a model trains.

:class:`LivePlot` is an observer of :func:`attnlab.training.loop.fit` (its ``step``,
``measured`` and ``close``): the training loop knows nothing of pictures; a notebook cell
that wants the live picture passes one in::

    fit("rnnsearch", "dates", target=0.99, observer=LivePlot("rnnsearch on dates"), progress=False)
"""

from __future__ import annotations

from attnlab.pictures.canvas import new_figure, png_bytes
from attnlab.pictures.typography import TYPE, literal

__all__ = ["TrainingPlot", "LivePlot"]


# --------------------------------------------------------------------------- training plot
class TrainingPlot:
    """Training loss (every step) and held-out exact match (every measurement), one figure.

    ``add_loss(step, loss)``, ``set_history(history, target)``; ``png()`` draws it.
    """

    def __init__(self, title: str, shown_width_px: float = 800):
        width = 8.0
        self.sizes = TYPE.at(width, shown_width_px)
        self.fig = new_figure(width, 3.0, dpi=80, layout="constrained")
        self.ax_loss, self.ax_acc = self.fig.subplots(1, 2)
        (self.loss_line,) = self.ax_loss.plot([], [], color="tab:blue")
        (self.acc_line,) = self.ax_acc.plot([], [], color="tab:green", marker=".")
        self.ax_loss.set_yscale("log")
        self.ax_acc.set_ylim(0, 1.02)
        for ax, label in ((self.ax_loss, "training loss"), (self.ax_acc, "held-out exact match")):
            ax.set_xlabel("step", fontsize=self.sizes.label)
            ax.set_ylabel(label, fontsize=self.sizes.label)
            ax.tick_params(labelsize=self.sizes.tick)
        self.title = literal(title)
        self.target_line = None
        self.loss_steps: list[int] = []
        self.loss_values: list[float] = []
        self.fig.suptitle(self.title, fontsize=self.sizes.title)

    def add_loss(self, step: int, loss: float) -> None:
        self.loss_steps.append(step)
        self.loss_values.append(loss)
        self.loss_line.set_data(self.loss_steps, self.loss_values)
        self.ax_loss.relim()
        self.ax_loss.autoscale_view()

    def set_history(self, history: dict, target: float | None) -> None:
        steps = history["step"]
        self.acc_line.set_data(steps, history["accuracy"])
        self.ax_acc.relim()
        self.ax_acc.autoscale_view(scaley=False)
        if target is not None and self.target_line is None:
            self.target_line = self.ax_acc.axhline(target, color="grey", lw=0.8, ls="--")
        self.fig.suptitle(
            f"{self.title}: step {steps[-1]}, {history['seconds'][-1]:.1f} s, "
            f"exact match {history['accuracy'][-1]:.3f}",
            fontsize=self.sizes.title,
        )

    def png(self) -> bytes:
        return png_bytes(self.fig, draw=True)


class LivePlot:
    """A :class:`TrainingPlot` shown in a notebook and updated in place while ``fit`` trains:
    pass it as ``fit(..., observer=LivePlot(title))``."""

    def __init__(self, title: str):
        # Only in a notebook: training from the command line never loads IPython.
        from IPython import display as ipython

        self.plot = TrainingPlot(title)
        self._Image = ipython.Image
        self.handle = ipython.display(ipython.Image(data=self.plot.png()), display_id=True)

    def step(self, step: int, loss: float, redraw_every: int = 10) -> None:
        """Record one step's loss; redraw every few steps (a redraw costs ~50 ms)."""
        self.plot.add_loss(step, loss)
        if step % redraw_every == 0:
            self.handle.update(self._Image(data=self.plot.png()))

    def measured(self, history: dict, target: float | None) -> None:
        """Draw the held-out exact match measured so far (``history["accuracy"]``)."""
        self.plot.set_history(history, target)
        self.handle.update(self._Image(data=self.plot.png()))

    def close(self) -> None:
        """Nothing to release: the picture stays in the notebook as it was last drawn."""
