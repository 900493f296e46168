r"""PathLengthExplorer: the dependency graphs of an RNN, CNNs and self-attention, one above another.

Sliders for the sequence length n and the kernel size k.  Each panel draws one graph from
:mod:`attnlab.paths` (inputs at the bottom, outputs at the top) with the shortest path from
input 1 to output n in red; the table beside it gives that path's length (counted by BFS)
next to the whole number Vaswani et al.'s Table 1 means: n, ceil(n/k), ceil(log_k n), 1.

Every (n, k) on the sliders is drawn when the widget is built, one picture per panel (the
RNN and self-attention panels depend on n only), each in a Stack linked to the sliders in
the browser: the sliders work in an exported page, and a kernel update is a lookup.
"""

from __future__ import annotations

import html
import io

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from PIL import Image

from attnlab import paths
from attnlab.plots import cache_background, png_bytes, restore_background, slide_figure

from ._base import BaseWidget, readable
from ._frames import FrameGrid

__all__ = ["PathLengthExplorer", "N_VALUES", "K_VALUES"]

TITLES = {
    "rnn": "RNN",
    "cnn": "CNN (contiguous, kernel k)",
    "dilated_cnn": "dilated CNN (dilation kˡ)",
    "self_attention": "self-attention (one layer)",
}
N_VALUES = (4, 6, 8, 12, 16, 24, 32)
K_VALUES = (2, 3, 4, 5, 6)
WIDTH_PX, PANEL_PX = 520, 104  # each panel, shown at this size


def _broken_line(segments: list) -> tuple[np.ndarray, np.ndarray]:
    """x and y of many segments ((x0, y0), (x1, y1)) as one line, NaN between segments."""
    a = np.full((len(segments), 3, 2), np.nan)  # (m, [start, end, gap], xy)
    if segments:
        a[:, :2] = np.asarray(segments, dtype=float)
    return a[:, :, 0].ravel(), a[:, :, 1].ravel()


def _xy(graph: paths.Graph) -> dict[tuple[int, int], tuple[float, float]]:
    """Node positions: x = position, y = layer scaled to [0, 1] (inputs at the bottom)."""
    return {
        (layer, i): (float(i), layer / graph.layers)
        for layer in range(graph.layers + 1)
        for i in range(graph.n)
    }


class Panel:
    """One kind's graph in a persistent figure: title drawn once, the graph blitted."""

    def __init__(self, kind: str):
        self.kind = kind
        self.fig, sizes = slide_figure(WIDTH_PX, PANEL_PX, layout=None)
        self.fig.subplots_adjust(left=0.02, right=0.98, top=1 - 26 / PANEL_PX, bottom=0.04)
        ax = self.ax = self.fig.add_subplot()
        ax.set_axis_off()
        ax.set_title(TITLES[kind], fontsize=sizes.label, loc="left")
        # self-attention's n^2 edges: a LineCollection (Agg draws them faster one by one)
        if kind == "self_attention":
            self.edges = LineCollection([], colors="0.75", linewidths=0.6, animated=True)
            ax.add_collection(self.edges)
        else:
            (self.edges,) = ax.plot([], [], color="0.75", linewidth=0.6, animated=True)
        (self.path,) = ax.plot([], [], color="tab:red", linewidth=2.2, animated=True)
        self.nodes = ax.scatter([], [], s=10, color="0.3", zorder=3, animated=True)
        self.ends = ax.scatter([], [], s=30, color="tab:red", zorder=4, animated=True)
        self.background = cache_background(self.fig)

    def png(self, graph: paths.Graph, path: list) -> bytes:
        restore_background(self.fig, self.background)
        xy = _xy(graph)
        self.ax.set_xlim(-0.7, graph.n - 0.3)
        self.ax.set_ylim(-0.15, 1.15)
        segments = [(xy[u], xy[v]) for u, v in graph.edges]
        if self.kind == "self_attention":
            self.edges.set_segments(np.asarray(segments, dtype=float))  # (n^2, 2, 2)
        else:
            self.edges.set_data(*_broken_line(segments))
        self.path.set_data(
            *_broken_line([(xy[u], xy[v]) for u, v in zip(path, path[1:], strict=False)])
        )
        self.nodes.set_offsets(np.array(list(xy.values())))
        self.ends.set_offsets(np.array([xy[path[0]], xy[path[-1]]]))
        for artist in (self.edges, self.path, self.nodes, self.ends):
            self.ax.draw_artist(artist)
        return png_bytes(self.fig, palette=True)


class PathLengthExplorer(BaseWidget):
    """How far apart are input 1 and output n?  Four layer types, counted by BFS.

    ``PathLengthExplorer(n=8, k=2)``.  Attributes for code and tests:

    * ``n_slider`` (SelectionSlider over :data:`N_VALUES`), ``k_slider`` (over
      :data:`K_VALUES`): the controls;
    * ``graphs``: kind -> :class:`attnlab.paths.Graph` now shown; ``paths``: kind -> the
      highlighted path, a list of (layer, position) nodes; ``lengths``: kind -> number of
      edges on it (= ``attnlab.paths.longest_path``); ``orders``: kind -> Table 1's whole
      number;
    * ``table`` (HTML now shown), ``images``: kind -> the Image now shown, ``message``.
    """

    def __init__(self, n: int = 8, k: int = 2):
        super().__init__()
        n = min(N_VALUES, key=lambda v: abs(v - n))
        k = min(K_VALUES, key=lambda v: abs(v - k))
        self.n_slider = widgets.SelectionSlider(options=N_VALUES, value=n, description="length n")
        self.k_slider = widgets.SelectionSlider(options=K_VALUES, value=k, description="kernel k")
        self._state = {(a, b): self._count(a, b) for a in N_VALUES for b in K_VALUES}
        by_n, by_k = (self.n_slider, "index"), (self.k_slider, "index")
        nn, nk = len(N_VALUES), len(K_VALUES)
        self.grids = {
            kind: FrameGrid([by_k, by_n] if kind in ("cnn", "dilated_cnn") else [by_n],
                            (nk, nn) if kind in ("cnn", "dilated_cnn") else (nn,), WIDTH_PX)
            for kind in paths.KINDS
        }  # fmt: skip
        self.tables = FrameGrid([by_k, by_n], (nk, nn), 0, leaf=widgets.HTML)
        self._render()
        self.links = [link for g in (*self.grids.values(), self.tables) for link in g.links]
        self.children = [
            widgets.HBox([self.n_slider, self.k_slider]),
            self.message_box,
            widgets.HBox([widgets.VBox([g.root for g in self.grids.values()]), self.tables.root]),
        ]
        self.n_slider.observe(self._on_change, names="value")
        self.k_slider.observe(self._on_change, names="value")
        for grid in (*self.grids.values(), self.tables):
            grid.select(self._index(grid))
        self.update()

    @staticmethod
    def _count(n: int, k: int) -> dict:
        graphs = {kind: paths.dependency_graph(kind, n, k) for kind in paths.KINDS}
        found = {kind: paths.shortest_path(g) for kind, g in graphs.items()}
        return {"graphs": graphs, "paths": found}

    def _render(self) -> None:
        for kind, grid in self.grids.items():
            panel = Panel(kind)
            for index in grid.indices():
                n = N_VALUES[index[-1]]
                k = K_VALUES[index[0]] if len(index) == 2 else K_VALUES[0]
                state = self._state[(n, k)]
                grid.set(index, panel.png(state["graphs"][kind], state["paths"][kind]))
        for i, j in self.tables.indices():
            self.tables.set((i, j), self._table_html(N_VALUES[j], K_VALUES[i]))

    def _table_html(self, n: int, k: int) -> str:
        state = self._state[(n, k)]
        rows = []
        for kind in paths.KINDS:
            order, value, how = paths.complexity(kind, n, k)
            g, counted = state["graphs"][kind], len(state["paths"][kind]) - 1
            rows.append(
                f"<tr><td>{html.escape(TITLES[kind])}</td><td>{g.layers}</td>"
                f"<td><b>{counted}</b></td><td>{order}: {how if how == str(value) else f'{how} = {value}'}</td></tr>"
            )
        head = "<tr><th>layer type</th><th>layers</th><th>path 1&rarr;n</th><th>Table 1</th></tr>"
        return readable(
            f"<p>n = {n}, k = {k}: edges on the shortest path from input 1 to output n</p>"
            f'<table class="attnlab-table">{head}{"".join(rows)}</table>'
        )

    def _index(self, grid: FrameGrid) -> tuple[int, ...]:
        i, j = self.k_slider.index, self.n_slider.index
        return (i, j) if len(grid.sizes) == 2 else (j,)

    # ------------------------------------------------------------------ state
    def update(self) -> None:
        """The counts for the sliders' n and k (every picture is drawn already)."""
        n, k = int(self.n_slider.value), int(self.k_slider.value)
        state = self._state[(n, k)]
        self.graphs, self.paths = state["graphs"], state["paths"]
        self.lengths = {kind: len(p) - 1 for kind, p in self.paths.items()}
        self.orders = {kind: paths.complexity(kind, n, k)[1] for kind in paths.KINDS}

    @property
    def table(self) -> widgets.HTML:
        return self.tables.image(self._index(self.tables))

    @property
    def images(self) -> dict[str, widgets.Image]:
        return {kind: g.image(self._index(g)) for kind, g in self.grids.items()}

    def _on_change(self, change=None) -> None:
        self.guard(self.update)

    def describe(self) -> str:
        return f"PathLengthExplorer: n={self.n_slider.value}, k={self.k_slider.value}"

    def png(self) -> bytes:
        """The four panels now shown, one above another, as one PNG."""
        panels = [
            Image.open(io.BytesIO(bytes(i.value))).convert("RGB") for i in self.images.values()
        ]
        out = Image.new("RGB", (WIDTH_PX, sum(p.height for p in panels)), "white")
        y = 0
        for p in panels:
            out.paste(p, (0, y))
            y += p.height
        buf = io.BytesIO()
        out.save(buf, format="png")
        return buf.getvalue()
