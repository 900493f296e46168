"""The digit-reversal task, live: which models reverse a string, and where attention's alignment breaks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from attnlab.decode import decode
from attnlab.experiments import length as length_experiment
from attnlab.lecture.display import Marked, Picture, Table
from attnlab.pictures import canvas, heatmaps
from attnlab.training.checkpoints import load

__all__ = ["reverse_demo", "alignment_failure"]


def reverse_demo(
    names: Sequence[str], lengths: Sequence[int], seed: int = 0, results: dict | None = None
) -> Table:
    """Reverse a random digit string of each length with each model, under the right answer.

    For each length: a row with the right answer (the string reversed), then a row per model:
    "✓ right", or its output with the wrong digits in red (:func:`_wrong_positions`).  Beside
    each output, the model's exact match at that length in the length experiment (``results``,
    default :func:`attnlab.experiments.length.load_results`: Fig. 2's test strings), so that one
    lucky or unlucky draw is read against the rate.
    """
    results = results or length_experiment.load_results()
    rng = np.random.default_rng(seed)
    models = [load(n) for n in names]
    rows = []
    for length in lengths:
        digits = "".join(rng.choice(list("0123456789"), size=length))
        expected = digits[::-1]
        rows.append([str(length), "right answer", expected, ""])
        for name, model in zip(names, models, strict=True):
            try:
                got = model.translate(digits)
            except ValueError as err:  # e.g. longer than the model supports
                got = f"({err})"
            shown = "✓ right" if got == expected else _marked(got, expected)
            rows.append(["", name, shown, _rate(results, name, length)])
    per_bin = results.get("config", {}).get("per_bin")
    strings = f"{per_bin} test strings" if per_bin else "the test strings"
    caption = f"Reverse a random digit string (exact match: on {strings} of that length range)"
    header = ["digits", "", "output (wrong digits in red)", "exact match"]
    # 24 px: the wrong digits are the message; 40 of them still fit on one line
    return Table(header, rows, caption, widths=[9, 23, 51, 17], font_px=24)


def _rate(results: dict, name: str, length: int) -> str:
    """ "8% (11-20)": the exact match of ``name`` in the length bin holding ``length``, or ""
    when the experiment has no such model or bin."""
    for (lo, hi), rate in zip(
        results["bins"], results["models"].get(name, {}).get("exact_match", []), strict=False
    ):
        if lo <= length <= hi:
            return f"{rate:.0%} ({lo}-{hi})"
    return ""


def _marked(got: str, expected: str) -> Marked:
    """``got`` with its wrong digits marked; a dash, marked, for each digit it is short of."""
    missing = max(len(expected) - len(got), 0)
    shown = got + "–" * missing
    return Marked(shown, _wrong_positions(got, expected) | set(range(len(got), len(shown))))


def _wrong_positions(got: str, expected: str) -> frozenset[int]:
    """The 0-based positions of ``got`` to mark wrong: of the right length, each digit that
    differs; of another length (one digit dropped or added shifts every later one), every
    digit from the first wrong one on."""
    if len(got) == len(expected):
        return frozenset(t for t, (g, c) in enumerate(zip(got, expected, strict=True)) if g != c)
    first = _first_wrong(got, expected)
    return frozenset(range(first, len(got)))


def _first_wrong(got: str, expected: str) -> int | None:
    """0-based index of the first output character that is not the expected one, or None."""
    for t in range(max(len(got), len(expected))):
        if t >= len(got) or t >= len(expected) or got[t] != expected[t]:
            return t
    return None


def alignment_failure(model, length: int = 45, seed: int = 0) -> Picture:
    """Reverse a random digit string with ``model``; show alpha against the ideal alignment.

    For reversal the ideal alignment puts output digit t (1-based) on source digit n + 1 - t:
    the dotted line (a bi-GRU's weight often sits one off it: its states read their
    neighbours).  The red line marks the first wrong output digit.
    """
    rng = np.random.default_rng(seed)
    digits = "".join(rng.choice(list("0123456789"), size=length))
    result = decode(model, digits)
    alpha = result.alpha.reshape(-1, *result.alpha.shape[-2:]).mean(axis=0)  # (T, n)
    wrong = _first_wrong(result.text, digits[::-1])
    T, n = alpha.shape
    right = length if wrong is None else wrong

    def draw():
        fig, sizes = canvas.slide_figure(760, 460)
        ax = fig.add_subplot()
        x, y = [str(i) for i in range(1, n + 1)], [str(t) for t in range(1, T + 1)]  # 1-based
        heatmaps.still_heatmap(
            ax, alpha, x, y, xlabel="source position i", ylabel="output step t", sizes=sizes
        )
        ax.plot([length - 1 - t for t in range(length)], range(length), ":", color="white", lw=2)
        if wrong is not None:
            ax.axhline(wrong - 0.5, color="red", lw=2)  # above the first wrong row
        ax.set_title(f"{length} digits in: the first {right} outputs right", fontsize=sizes.title)
        return fig

    summary = (
        f"{length} digits in, {len(result.text)} out; first wrong output digit: "
        f"{'none' if wrong is None else wrong + 1}"
    )
    data = {"digits": digits, "output": result.text, "first_wrong": wrong, "alpha": alpha}
    return Picture(draw, summary, data, name="alignment_failure",
                   inputs=[alpha, length, wrong], code=(__name__,))  # fmt: skip
