"""Benchmark: ms per widget update, persistent figures against re-creating the figure.

An update is a state change (a slider value set from Python, as the browser would) until the
new PNG bytes are ready in the widget's ``Image``.  Each widget is measured at a 30x30
heatmap with token labels (ScoreLab: 4 scores x 30 words; PathLengthExplorer: n = 30, it
has graphs instead of a heatmap), and compared with what a naive widget does: build a new
figure (imshow, tick labels, colorbar) and ``savefig`` it for every update.

* DecodeStepper renders every step's frame when a date is decoded, so moving its slider
  costs the kernel nothing; its "update" is rendering one frame (30 source x 30 output
  tokens, with the context bars), and the time to decode and render a whole new date is
  printed too.
* PathLengthExplorer redraws its graphs for each new (n, k) (reusing the pixels of the
  n^2 self-attention edges when only k changed) and keeps each picture, so a state seen
  before costs nothing; new states are measured, sweeping n at each k.

Targets: median <= 30 ms per update, and at least 3x faster than re-creating the figure.

Run:  .venv/bin/python benchmarks/widgets.py   (or ``make bench``)
"""

from __future__ import annotations

import io
import statistics
import time
from collections.abc import Callable, Iterable

import numpy as np
from matplotlib.collections import LineCollection

from attnlab import paths
from attnlab.plots import new_figure  # a Figure on an Agg canvas: no pyplot, no GUI
from attnlab.widgets import PathLengthExplorer, ScaledDotExplorer, ScoreLab
from attnlab.widgets.decode_stepper import DecodeFrames

N = 30  # heatmap size: 30 x 30 with labels
TARGET_MS, TARGET_RATIO = 30.0, 3.0
WORDS = [f"w{i:02d}" for i in range(N)]


def timed(updates: Iterable[Callable[[], object]], warmup: int = 3) -> list[float]:
    """ms of each update (after a few warm-up updates that are not counted)."""
    updates = list(updates)
    for update in updates[:warmup]:
        update()
    times = []
    for update in updates[warmup:]:
        t0 = time.perf_counter()
        update()
        times.append(1e3 * (time.perf_counter() - t0))
    return times


def summary(times: list[float]) -> tuple[float, float]:
    return statistics.median(times), float(np.percentile(times, 90))


# --------------------------------------------------------------------------- naive baselines
def naive_heatmaps(
    panels: list[tuple[np.ndarray, list[str], list[str], str, float, float]],
    size: tuple[float, float],
    dpi: int,
    bars: np.ndarray | None = None,
) -> bytes:
    """A new figure per update: imshow, tick labels and a colorbar per panel, then savefig."""
    fig = new_figure(*size, dpi=dpi)
    rows = 2 if bars is not None else 1
    for i, (data, xl, yl, cmap, vmin, vmax) in enumerate(panels):
        ax = fig.add_subplot(rows, len(panels), i + 1)
        im = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto")
        ax.set_xticks(range(len(xl)), xl, rotation=90, fontsize="x-small")
        ax.set_yticks(range(len(yl)), yl, fontsize="x-small")
        fig.colorbar(im, ax=ax)
    if bars is not None:
        ax = fig.add_subplot(rows, 1, 2)
        ax.bar(range(len(bars)), bars)
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()


def naive_paths(n: int, k: int) -> bytes:
    """The path-length picture drawn from scratch (four panels of graphs)."""
    fig = new_figure(7.0, 5.6, dpi=72)
    for p, kind in enumerate(paths.KINDS):
        ax = fig.add_subplot(4, 1, p + 1)
        ax.set_axis_off()
        g = paths.dependency_graph(kind, n, k)
        path = paths.shortest_path(g)
        segments = [[(i, lu), (j, lv)] for (lu, i), (lv, j) in g.edges]
        ax.add_collection(LineCollection(segments, colors="0.75", linewidths=0.6))
        ax.autoscale_view()
        ax.plot([i for _, i in path], [layer for layer, _ in path], color="tab:red")
        ax.set_title(f"{kind}: path {len(path) - 1}", fontsize="small", loc="left")
    out = io.BytesIO()
    fig.savefig(out, format="png")
    return out.getvalue()


# --------------------------------------------------------------------------- the widgets
def bench_decode_stepper() -> tuple[list[float], list[float]]:
    gen = np.random.default_rng(0)
    alphas = gen.dirichlet(np.ones(N), size=N)  # (T=30, n_src=30), rows sum to 1
    contexts = np.tanh(gen.normal(size=(N, 128)))  # c_t, 2 x 64 dims as in rnnsearch-dates
    frames = DecodeFrames(context_size=128)
    frames.set_grid(list("0123456789" * 3), list("9876543210" * 3), "rnnsearch on 30 digits")
    captions = [f"t = {t}: y_t = '{t % 10}' (p = 0.99)" for t in range(N)]
    ours = []
    for _ in range(3):  # the frames of one decoding, rendered as DecodeStepper does
        frames_iter = frames.render_all(alphas, captions, list(contexts))
        while True:
            t0 = time.perf_counter()
            if next(frames_iter, None) is None:
                break
            ours.append(1e3 * (time.perf_counter() - t0))

    def naive(t: int) -> bytes:
        shown = np.where(np.arange(N)[:, None] <= t, alphas, np.nan)
        labels = list("0123456789" * 3)
        return naive_heatmaps(
            [(shown, labels, labels, "viridis", 0, 1)], (7.0, 5.4), 80, bars=contexts[t]
        )

    return ours, timed(lambda t=t: naive(t) for t in range(12))


def bench_scaled_dot() -> tuple[list[float], list[float]]:
    w = ScaledDotExplorer(sentence=" ".join(WORDS))
    d_ks = list(range(2, 512, 8))

    def set_d_k(d_k: int) -> None:
        w.d_k_slider.value = d_k  # the observer recomputes and puts new PNG bytes in w.image

    ours = timed(lambda d=d: set_d_k(d) for d in d_ks)

    def naive(d_k: int) -> bytes:
        Q, K = w._Q_all[:, :d_k], w._K_all[:, :d_k]
        raw = Q @ K.T
        scaled = raw / np.sqrt(d_k)
        e = np.exp(scaled - scaled.max(axis=1, keepdims=True))
        weights = e / e.sum(axis=1, keepdims=True)
        panels = [
            (raw, WORDS, WORDS, "RdBu_r", -6, 6),
            (scaled, WORDS, WORDS, "RdBu_r", -6, 6),
            (weights, WORDS, WORDS, "viridis", 0, 1),
        ]
        return naive_heatmaps(panels, (12.0, 4.4), 80)

    return ours, timed(lambda d=d: naive(d) for d in d_ks[:12])


def bench_score_lab() -> tuple[list[float], list[float]]:
    w = ScoreLab(sentence=" ".join(WORDS))
    mixes = [float(m) for m in np.linspace(0.0, 1.0, 41)]

    def set_mix(m: float) -> None:
        w.mix.value = m

    ours = timed(lambda m=m: set_mix(m) for m in mixes)

    def naive(m: float) -> bytes:
        w.mix.value = m  # the numbers, then a new figure for them
        labels = ["dot", "scaled", "general", "additive"]
        return naive_heatmaps([(w.heatmap_data, WORDS, labels, "viridis", 0, 1)], (10, 3.2), 80)

    return ours, timed(lambda m=m: naive(m) for m in mixes[:12])


def bench_path_length() -> tuple[list[float], list[float], list[float]]:
    w = PathLengthExplorer(n=N, k=2)
    states = [(n, k) for k in (2, 3, 4, 5, 6) for n in (26, 27, 28, 29, 30, 31, 32)]

    def set_state(n: int, k: int) -> None:
        w.n_slider.value, w.k_slider.value = n, k

    new = timed(lambda s=s: set_state(*s) for s in states)
    seen = timed(lambda s=s: set_state(*s) for s in states)  # every state is cached now
    return new, seen, timed(lambda s=s: naive_paths(*s) for s in states[:8])


def main() -> None:
    print(f"widget updates, ms (median / p90), {N}x{N} heatmaps with labels, Agg, PNG bytes")
    header = f"{'widget':<34} {'ours':>15} {'re-create':>15} {'speed-up':>9}  targets"
    print(header)
    print("-" * len(header))

    def row(name: str, ours: list[float], naive: list[float]) -> bool:
        (m, p), (nm, np90) = summary(ours), summary(naive)
        ratio = nm / m
        ok = m <= TARGET_MS and ratio >= TARGET_RATIO
        print(
            f"{name:<34} {m:6.1f} / {p:6.1f} {nm:6.1f} / {np90:6.1f} {ratio:8.1f}x  "
            f"{'met' if ok else 'MISSED'}"
        )
        return ok

    results = []
    results.append(row("DecodeStepper (one frame)", *bench_decode_stepper()))
    results.append(row("ScaledDotExplorer (d_k slider)", *bench_scaled_dot()))
    results.append(row("ScoreLab (mix slider, 4x30)", *bench_score_lab()))
    new, seen, naive = bench_path_length()
    results.append(row("PathLengthExplorer (new n, k)", new, naive))
    m, p = summary(seen)
    print(f"{'PathLengthExplorer (seen n, k)':<34} {m:6.1f} / {p:6.1f}  (cached picture)")

    try:  # a whole new date: decode with the shipped model and render every frame
        from attnlab.widgets import DecodeStepper

        stepper = DecodeStepper()
        dates = ["3 May 1979", "14 July 1989", "1 January 2000", "21.08.1999", "2024-02-29"]
        times = timed((lambda d=d: setattr(stepper.text, "value", d) for d in dates * 3), warmup=2)
        slider = timed(lambda t=t: setattr(stepper.slider, "value", t) for t in list(range(9)) * 3)
        print(
            f"DecodeStepper: new date (decode + {len(stepper.steps)} frames) "
            f"{statistics.median(times):.0f} ms; slider move (frames ready) "
            f"{statistics.median(slider):.2f} ms"
        )
    except (OSError, ValueError) as err:  # no shipped checkpoint yet
        print(f"DecodeStepper with a shipped model: skipped ({err})")
    print(f"targets: median <= {TARGET_MS:.0f} ms and >= {TARGET_RATIO:.0f}x faster: ", end="")
    print("all met" if all(results) else "not all met (see MISSED)")


if __name__ == "__main__":
    main()
