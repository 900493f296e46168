r"""PathLengthExplorer: the dependency graphs of an RNN, CNNs and self-attention, side by side.

Sliders for the sequence length n and the kernel size k.  Each panel draws one graph from
:mod:`attnlab.paths` (inputs at the bottom, outputs at the top), highlights the shortest path
from input 1 to output n in red, and the table beside it prints that path's length next to the
orders of Vaswani et al.'s Table 1: O(n), O(n/k), O(log_k n), O(1).
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.collections import LineCollection

from attnlab import paths
from attnlab.plots import cache_background, new_figure, png_bytes, restore_background

from ._base import BaseWidget

__all__ = ["PathLengthExplorer"]

TITLES = {
    "rnn": "RNN",
    "cnn": "CNN (contiguous, kernel k)",
    "dilated_cnn": "dilated CNN (dilation k^l)",
    "self_attention": "self-attention (one layer)",
}


def _broken_line(segments: list) -> tuple[np.ndarray, np.ndarray]:
    """x and y of many segments ((x0, y0), (x1, y1)) as one line, NaN between segments."""
    a = np.full((len(segments), 3, 2), np.nan)  # (m, [start, end, gap], xy)
    if segments:
        a[:, :2] = np.asarray(segments, dtype=float)
    return a[:, :, 0].ravel(), a[:, :, 1].ravel()


class PathLengthExplorer(BaseWidget):
    """How far apart are input 1 and output n?  Four layer types, counted by BFS.

    Attributes for code and tests:

    * ``n_slider`` (IntSlider, 2..32), ``k_slider`` (IntSlider, 2..6): the controls;
    * ``graphs``: kind -> :class:`attnlab.paths.Graph` now drawn;
    * ``paths``: kind -> the highlighted path, a list of (layer, position) nodes;
    * ``lengths``: kind -> number of edges on that path (= ``attnlab.paths.longest_path``);
    * ``table`` (HTML): the lengths beside O(n), O(n/k), O(log_k n), O(1);
    * ``image`` (Image): the picture; ``message``: a short message ('' when all is well).
    """

    def __init__(self, n: int = 8, k: int = 2, max_n: int = 32):
        super().__init__()
        self.n_slider = widgets.IntSlider(
            value=n, min=2, max=max_n, description="n", continuous_update=True
        )
        self.k_slider = widgets.IntSlider(value=k, min=2, max=6, description="kernel k")
        self.table = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(width="504px"))
        self.graphs: dict[str, paths.Graph] = {}
        self.paths: dict[str, list[tuple[int, int]]] = {}
        self.lengths: dict[str, int] = {}
        self._cache: dict[tuple[int, int], bytes] = {}  # (n, k) -> PNG
        self._fans: dict[int, object] = {}  # n -> pixels of the self-attention edges
        self._build_figure()
        self.children = [
            widgets.HBox([self.n_slider, self.k_slider]),
            self.message_box,
            widgets.HBox([self.image, self.table]),
        ]
        self.n_slider.observe(self._on_change, names="value")
        self.k_slider.observe(self._on_change, names="value")
        self.update()

    # ------------------------------------------------------------------ drawing
    def _build_figure(self) -> None:
        """One persistent figure: four panels whose artists are updated in place.

        The titles never change (the numbers are in the table), so they are drawn once and
        cached; an update draws only the graphs (blitting).
        """
        self.fig = new_figure(7.0, 5.6, dpi=72)  # 504 x 403 pixels, shown at that size
        axes = self.fig.subplots(4, 1)
        self.fig.subplots_adjust(left=0.02, right=0.98, top=0.95, bottom=0.02, hspace=0.35)
        self._art = {}
        for ax, kind in zip(axes, paths.KINDS, strict=True):
            ax.set_axis_off()
            # Edges: one line broken by NaNs (one path to build, not thousands), except the
            # n^2 long edges of self-attention, which Agg rasterises faster one by one.
            if kind == "self_attention":
                edges = LineCollection([], colors="0.75", linewidths=0.6, animated=True)
                ax.add_collection(edges)
            else:
                (edges,) = ax.plot([], [], color="0.75", linewidth=0.6, animated=True)
            (path,) = ax.plot([], [], color="tab:red", linewidth=2.2, animated=True)
            nodes = ax.scatter([], [], s=10, color="0.3", zorder=3, animated=True)
            ends = ax.scatter([], [], s=30, color="tab:red", zorder=4, animated=True)
            order = paths.complexity(kind, 2, 2)[0]
            ax.set_title(f"{TITLES[kind]}   path length {order}", fontsize="medium", loc="left")
            self._art[kind] = (ax, edges, path, nodes, ends)
        self._background = cache_background(self.fig)

    @staticmethod
    def _xy(graph: paths.Graph) -> dict[tuple[int, int], tuple[float, float]]:
        """Node positions: x = position, y = layer scaled to [0, 1] (inputs at the bottom)."""
        return {
            (layer, i): (float(i), layer / graph.layers)
            for layer in range(graph.layers + 1)
            for i in range(graph.n)
        }

    def _draw(self) -> None:
        restore_background(self.fig, self._background)
        canvas = self.fig.canvas
        for kind, (ax, edges, path, nodes, ends) in self._art.items():
            g, p = self.graphs[kind], self.paths[kind]
            xy = self._xy(g)
            ax.set_xlim(-0.7, g.n - 0.3)
            ax.set_ylim(-0.15, 1.15)
            if kind == "self_attention" and g.n in self._fans:
                canvas.restore_region(self._fans[g.n])  # its n^2 edges, drawn for this n before
            else:
                segments = [(xy[u], xy[v]) for u, v in g.edges]
                if kind == "self_attention":
                    edges.set_segments(np.asarray(segments, dtype=float))  # (n^2, 2, 2)
                else:
                    edges.set_data(*_broken_line(segments))
                ax.draw_artist(edges)
                if kind == "self_attention":  # the costliest drawing; it depends on n only
                    self._fans[g.n] = canvas.copy_from_bbox(ax.bbox)
            path.set_data(
                *_broken_line([(xy[u], xy[v]) for u, v in zip(p[:-1], p[1:], strict=True)])
            )
            nodes.set_offsets(np.array(list(xy.values())))
            ends.set_offsets(np.array([xy[p[0]], xy[p[-1]]]))
            for artist in (path, nodes, ends):
                ax.draw_artist(artist)

    def _table_html(self, n: int, k: int) -> str:
        rows = []
        for kind in paths.KINDS:
            order, value = paths.complexity(kind, n, k)
            rows.append(
                f"<tr><td>{html.escape(TITLES[kind])}</td><td>{self.graphs[kind].layers}</td>"
                f"<td><b>{self.lengths[kind]}</b></td><td>{order} = {value:.2f}</td></tr>"
            )
        head = (
            "<tr><th>layer type</th><th>layers</th><th>path 1&rarr;n</th>"
            "<th>Table 1 order</th></tr>"
        )
        return (
            f"<p>n = {n}, k = {k}: edges on the shortest path from input 1 to output n</p>"
            f"<table>{head}{''.join(rows)}</table>"
        )

    # ------------------------------------------------------------------ state
    def update(self) -> None:
        """Recompute the four graphs for the sliders' n and k and redraw the picture."""
        n, k = int(self.n_slider.value), int(self.k_slider.value)
        for kind in paths.KINDS:
            g = paths.dependency_graph(kind, n, k)
            self.graphs[kind] = g
            self.paths[kind] = paths.shortest_path(g)
            self.lengths[kind] = len(self.paths[kind]) - 1
        self.table.value = self._table_html(n, k)
        if (n, k) not in self._cache:  # a redraw costs ~50 ms; each (n, k) is drawn once
            self._draw()
            self._cache[(n, k)] = png_bytes(self.fig)
        self.image.value = self._cache[(n, k)]

    def _on_change(self, change=None) -> None:
        self.guard(self.update)

    def describe(self) -> str:
        return f"PathLengthExplorer: n={self.n_slider.value}, k={self.k_slider.value}"

    def png(self) -> bytes:
        return bytes(self.image.value)
