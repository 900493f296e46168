r"""PathLengthExplorer: the dependency graphs of an RNN, CNNs and self-attention, one above another.

Sliders for the sequence length n and the kernel size k.  Each panel draws one graph from
:mod:`attnlab.experiments.path_lengths` (inputs at the bottom, outputs at the top) with the shortest path from
input 1 to output n in red; the table beside it gives that path's length as counted (BFS), the
exact count's formula with its value (always the counted number: n, ceil((n-1)/(k-1)),
ceil(log_k n), 1), and, apart, the order Vaswani et al.'s Table 1 gives (O(n), O(n/k),
O(log_k n), O(1)): how the count grows, constants dropped, never a number of its own.

Every (n, k) on the sliders is drawn when the widget is built, one picture per panel (the
RNN and self-attention panels depend on n only), each in a Stack linked to the sliders in
the browser (:class:`attnlab.widgets._frames.FrameGrid`): the sliders work in an exported
page, and the readouts (``lengths``, ``exact``, ``orders``) are those of the frame shown.
"""

from __future__ import annotations

import html
import io

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection
from PIL import Image

from attnlab.experiments import path_lengths as paths
from attnlab.pictures.canvas import cache_background, png_bytes, restore_background, slide_figure
from attnlab.pictures.frame_cache import rendered

from ._base import BaseWidget, readable
from ._frames import FrameGrid

__all__ = ["PathLengthExplorer", "N_VALUES", "K_VALUES", "EXACT", "exact_count"]

TITLES = {
    "rnn": "RNN",
    "cnn": "CNN (contiguous, kernel k)",
    "dilated_cnn": "dilated CNN (dilation kˡ)",
    "self_attention": "self-attention (one layer)",
}
#: The exact number of edges on the path from input 1 to output n, as a formula.
EXACT = {
    "rnn": "n",
    "cnn": "⌈(n−1)/(k−1)⌉",
    "dilated_cnn": "⌈log_k n⌉",
    "self_attention": "1",
}
N_VALUES = (4, 6, 8, 12, 16, 24, 32)
K_VALUES = (2, 3, 4, 5, 6)
WIDTH_PX, PANEL_PX = 520, 112  # each panel, shown at this size


def exact_count(kind: str, n: int, k: int) -> int:
    """The value of :data:`EXACT`'s formula: the edges from input 1 to output n."""
    if kind == "rnn":
        return n  # x_1 -> h_1 -> h_2 -> ... -> h_n
    if kind == "cnn":
        return max(1, -(-(n - 1) // (k - 1)))  # L layers see L(k-1)+1 inputs
    if kind == "dilated_cnn":
        return paths.num_layers(kind, n, k)  # the smallest L with k^L >= n
    return 1


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
        ax.set_title(TITLES[kind], fontsize=sizes.label, loc="left", pad=2)
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
    * ``grids``: kind -> the FrameGrid of its panel; ``tables``: the FrameGrid of the table;
      each frame's ``data`` holds what it shows;
    * from the frame the sliders select: ``graphs``: kind -> :class:`attnlab.experiments.path_lengths.Graph`;
      ``paths``: kind -> the highlighted path, a list of (layer, position) nodes;
      ``lengths``: kind -> edges on it (counted); ``exact``: kind -> (formula, value), the
      value always the counted length; ``orders``: kind -> Table 1's order ("O(n/k)");
    * ``table`` (the HTML now shown), ``images``: kind -> the Image now shown, ``message``.
    """

    def __init__(self, n: int = 8, k: int = 2):
        super().__init__()
        n = min(N_VALUES, key=lambda v: abs(v - n))
        k = min(K_VALUES, key=lambda v: abs(v - k))
        self.n_slider = widgets.SelectionSlider(options=N_VALUES, value=n, description="length n")
        self.k_slider = widgets.SelectionSlider(options=K_VALUES, value=k, description="kernel k")
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
            widgets.HBox([widgets.VBox([g.root for g in self.grids.values()],
                                       layout={"flex": "0 0 auto"}),  # never squeezed
                          self.tables.root], layout={"align_items": "flex-start"}),
        ]  # fmt: skip
        for grid in (*self.grids.values(), self.tables):
            grid.select()

    def _render(self) -> None:
        for kind, grid in self.grids.items():
            panel: list[Panel] = []  # its figure, made on the first picture to draw
            for index in grid.indices():
                n = N_VALUES[index[-1]]
                k = K_VALUES[index[0]] if len(index) == 2 else K_VALUES[0]
                graph = paths.dependency_graph(kind, n, k)
                path = paths.shortest_path(graph)  # BFS
                grid.set(index, self._png(panel, graph, path), graph=graph, path=path)
        for i, j in self.tables.indices():
            n, k = N_VALUES[j], K_VALUES[i]
            lengths = {
                kind: len(self._panel((i, j), kind).data["path"]) - 1 for kind in paths.KINDS
            }
            exact = {kind: (EXACT[kind], exact_count(kind, n, k)) for kind in paths.KINDS}
            orders = {kind: paths.complexity(kind, n, k)[0] for kind in paths.KINDS}
            html_table = self._table_html(n, k, lengths, exact, orders)
            self.tables.set((i, j), html_table, n=n, k=k, lengths=lengths, exact=exact,
                            orders=orders)  # fmt: skip

    @staticmethod
    def _png(panel: list, graph: paths.Graph, path: list) -> bytes:
        """A graph's picture, read from the shipped frames when they hold it
        (:mod:`attnlab.pictures.frame_cache`), else drawn by the kind's ``panel``."""

        def draw() -> bytes:
            if not panel:
                panel.append(Panel(graph.kind))
            return panel[0].png(graph, path)

        edges = np.asarray(graph.edges, dtype=np.int64).reshape(-1, 2, 2)  # one array: fast
        drawn = [graph.kind, graph.n, graph.layers, edges, np.asarray(path, dtype=np.int64)]
        return rendered("PathLengthExplorer", drawn, draw, code=[__name__])

    def _panel(self, table_index: tuple[int, int], kind: str):
        """The panel frame of ``kind`` for the table frame (k index, n index)."""
        i, j = table_index
        grid = self.grids[kind]
        return grid.frame((i, j) if len(grid.sizes) == 2 else (j,))

    @staticmethod
    def _table_html(n: int, k: int, lengths: dict, exact: dict, orders: dict) -> str:
        rows = []
        for kind in paths.KINDS:
            formula, value = exact[kind]
            rows.append(
                f"<tr><td>{html.escape(TITLES[kind])}</td><td><b>{lengths[kind]}</b></td>"
                f"<td>{html.escape(formula)} = {value}</td><td>{html.escape(orders[kind])}</td></tr>"
            )
        # at 22 px beside the 520 px panels: every cell on one line but the second heading
        head = (
            '<tr><th>layer type</th><th style="white-space:normal">path 1&rarr;n, counted</th>'
            "<th>exact count</th><th>order (Table 1)</th></tr>"
        )
        return readable(
            f"<p>n = {n}, k = {k}: edges on the shortest path from input 1 to output n. "
            "The order says how that count grows with n, constants dropped.</p>"
            f'<table class="attnlab-paths" style="white-space:nowrap">{head}{"".join(rows)}'
            "</table>"
        )

    # ------------------------------------------------------------------ readouts
    @property
    def frame(self):
        """The table's frame the sliders select: n, k, lengths, exact, orders."""
        return self.tables.frame()

    @property
    def lengths(self) -> dict[str, int]:
        return dict(self.frame.data["lengths"])

    @property
    def exact(self) -> dict[str, tuple[str, int]]:
        return dict(self.frame.data["exact"])

    @property
    def orders(self) -> dict[str, str]:
        return dict(self.frame.data["orders"])

    @property
    def graphs(self) -> dict[str, paths.Graph]:
        return {kind: g.frame().data["graph"] for kind, g in self.grids.items()}

    @property
    def paths(self) -> dict[str, list]:
        return {kind: g.frame().data["path"] for kind, g in self.grids.items()}

    @property
    def table(self) -> widgets.HTML:
        return self.tables.image()

    @property
    def images(self) -> dict[str, widgets.Image]:
        return {kind: g.image() for kind, g in self.grids.items()}

    def text_form(self) -> str:
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
