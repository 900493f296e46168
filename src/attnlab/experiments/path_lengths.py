r"""Path lengths between input and output positions: RNN, CNN, dilated CNN, self-attention.

Vaswani et al. (2017), Table 1, compares layer types by the *maximum path length*: how many
steps a signal takes from one position to another.  Short paths make long-range dependencies
easy to learn.  This module builds the dependency graph of each layer type explicitly and
finds that length by breadth-first search (BFS), so the numbers in the lecture are counted,
not asserted:

==================  =========================================================  ===========
kind                graph (inputs x_1..x_n are layer 0)                        path length
==================  =========================================================  ===========
``rnn``             h_i <- x_i and h_i <- h_{i-1} (one recurrent layer)        n: O(n)
``cnn``             causal convolutions, kernel k: y_j <- x_{j-k+1..j}         O(n/k)
``dilated_cnn``     causal convolutions, kernel k, dilation k^l in layer l     O(log_k n)
``self_attention``  one layer, every output y_j <- every input x_i             1: O(1)
==================  =========================================================  ===========

The path length is the number of edges on the shortest path from input position 1 to output
position n, in the smallest stack whose last output sees every input (for the convolutions:
ceil((n-1)/(k-1)) contiguous layers, or ceil(log_k n) dilated layers, WaveNet-style).

Nodes are ``(layer, position)`` pairs with positions 0..n-1 (position 1..n in the text).
:func:`causal_conv_graph` builds a stack of causal convolutions with any dilations and
:func:`reach` finds every node an output depends on (the WaveNet picture of
:mod:`attnlab.pictures.figures` uses both): the one implementation of these graphs.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = [
    "KINDS",
    "MAX_N",
    "MAX_K",
    "Graph",
    "dependency_graph",
    "causal_conv_graph",
    "reach",
    "num_layers",
    "shortest_path",
    "longest_path",
    "complexity",
]

#: The four layer types, in the order of Vaswani et al.'s Table 1 (plus the dilated CNN).
KINDS = ("rnn", "cnn", "dilated_cnn", "self_attention")
#: Largest sequence length accepted (self-attention has n^2 edges).
MAX_N = 512
#: Largest kernel size accepted.
MAX_K = 64

Node = tuple[int, int]  # (layer, position)


@dataclass
class Graph:
    """A layered dependency graph: an edge (u, v) means v is computed from u.

    ``layers`` counts the layers above the inputs; inputs are layer 0, the outputs are layer
    ``layers``.  ``edges`` lists (u, v) pairs; ``source`` is input position 1, ``target``
    output position n.
    """

    kind: str
    n: int
    k: int
    layers: int
    edges: list[tuple[Node, Node]] = field(default_factory=list)

    @property
    def source(self) -> Node:
        return (0, 0)

    @property
    def target(self) -> Node:
        return (self.layers, self.n - 1)

    @property
    def nodes(self) -> list[Node]:
        return [(layer, i) for layer in range(self.layers + 1) for i in range(self.n)]

    def successors(self) -> dict[Node, list[Node]]:
        """Adjacency lists: node -> the nodes computed from it."""
        out: dict[Node, list[Node]] = {v: [] for v in self.nodes}
        for u, v in self.edges:
            out[u].append(v)
        return out

    def predecessors(self) -> dict[Node, list[Node]]:
        """Adjacency lists: node -> the nodes it is computed from."""
        out: dict[Node, list[Node]] = {v: [] for v in self.nodes}
        for u, v in self.edges:
            out[v].append(u)
        return out


def _check(kind: str, n: int, k: int) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}")
    for name, value, lo, hi in (("n", n, 2, MAX_N), ("k", k, 2, MAX_K)):
        if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
            raise ValueError(f"{name} must be an int from {lo} to {hi}; got {value!r}")


def num_layers(kind: str, n: int, k: int) -> int:
    """Layers in the smallest stack whose last output sees all n inputs."""
    _check(kind, n, k)
    if kind in ("rnn", "self_attention"):
        return 1
    if kind == "cnn":
        # L layers of kernel k see L(k-1)+1 inputs: need L(k-1)+1 >= n.
        return max(1, math.ceil((n - 1) / (k - 1)))
    # dilated: L layers with dilations 1, k, k^2, ... see k^L inputs: need k^L >= n.
    layers, seen = 0, 1
    while seen < n:
        layers, seen = layers + 1, seen * k
    return max(1, layers)


def causal_conv_graph(n: int, k: int, dilations: Sequence[int]) -> Graph:
    """Causal convolutions over n positions, kernel k, dilation ``dilations[l - 1]`` in layer l.

    y_j <- x_j, x_{j-d}, ..., x_{j-(k-1)d} in each layer (left of position 0 is zero
    padding: no edge).  Any n >= 1, k >= 2 and dilations >= 1 (ValueError otherwise).
    """
    if n < 1 or k < 2 or any(d < 1 for d in dilations):
        raise ValueError(
            f"need n >= 1, k >= 2 and dilations >= 1; got n={n}, k={k}, dilations={dilations}"
        )
    kind = "cnn" if all(d == 1 for d in dilations) else "dilated_cnn"
    g = Graph(kind=kind, n=n, k=k, layers=len(dilations))
    for layer, d in enumerate(dilations, start=1):
        g.edges += [
            ((layer - 1, j - m * d), (layer, j))
            for j in range(n)
            for m in range(k)
            if j - m * d >= 0
        ]
    return g


def dependency_graph(kind: str, n: int, k: int = 3) -> Graph:
    """The explicit dependency graph of ``kind`` over n positions (kernel size k for CNNs)."""
    layers = num_layers(kind, n, k)  # also validates kind, n, k
    g = Graph(kind=kind, n=n, k=k, layers=layers)
    if kind == "rnn":
        g.edges += [((0, i), (1, i)) for i in range(n)]  # h_i = f(x_i, h_{i-1})
        g.edges += [((1, i - 1), (1, i)) for i in range(1, n)]  # the recurrent edge
    elif kind == "self_attention":
        g.edges += [((0, i), (1, j)) for j in range(n) for i in range(n)]  # y_j = sum alpha v_i
    else:
        dilations = [k**i if kind == "dilated_cnn" else 1 for i in range(layers)]  # layer i + 1
        g.edges = causal_conv_graph(n, k, dilations).edges
    return g


def shortest_path(graph: Graph) -> list[Node]:
    """The nodes on a shortest path from ``graph.source`` to ``graph.target`` (BFS).

    Raises ValueError if the target cannot be reached (the stack is too shallow).
    """
    succ = graph.successors()
    parent: dict[Node, Node | None] = {graph.source: None}
    queue = deque([graph.source])
    while queue:
        u = queue.popleft()
        if u == graph.target:
            break
        for v in succ[u]:
            if v not in parent:
                parent[v] = u
                queue.append(v)
    if graph.target not in parent:
        raise ValueError(f"output {graph.n} does not see input 1 in this {graph.kind} graph")
    path = [graph.target]
    while parent[path[-1]] is not None:
        path.append(parent[path[-1]])
    return path[::-1]


def reach(graph: Graph, node: Node | None = None) -> set[Node]:
    """Every node ``node`` (default: the last output, ``graph.target``) depends on, itself too."""
    pred = graph.predecessors()
    start = graph.target if node is None else node
    if start not in pred:
        raise ValueError(f"node {start!r} is not in the graph (nodes are (layer, position))")
    seen, stack = {start}, [start]
    while stack:
        for u in pred[stack.pop()]:
            if u not in seen:
                seen.add(u)
                stack.append(u)
    return seen


def longest_path(kind: str, n: int, k: int = 3) -> int:
    """Edges on the shortest path from input 1 to output n: Vaswani et al.'s maximum path length.

    ``kind`` is one of ``rnn``, ``cnn``, ``dilated_cnn``, ``self_attention``; n from 2 to
    512 positions; k from 2 to 64 (the kernel size, ignored by ``rnn`` and
    ``self_attention`` but still checked).  Bad values raise ValueError.
    """
    return len(shortest_path(dependency_graph(kind, n, k))) - 1


def complexity(kind: str, n: int, k: int) -> tuple[str, int, str]:
    """Vaswani et al.'s Table 1 order of the path length, as the whole number it means.

    Returns (order, value, how): ("O(n)", n, "n"), ("O(n/k)", ceil(n/k), "⌈n/k⌉"),
    ("O(log_k n)", ceil(log_k n), "⌈log_k n⌉") or ("O(1)", 1, "1"); ceil(log_k n) is the
    smallest L with k^L >= n, counted in integers (no float logarithm).
    """
    _check(kind, n, k)
    if kind == "rnn":
        return "O(n)", n, "n"
    if kind == "cnn":
        return "O(n/k)", -(-n // k), "⌈n/k⌉"
    if kind == "dilated_cnn":
        return "O(log_k n)", num_layers(kind, n, k), "⌈log_k n⌉"  # the smallest L, k^L >= n
    return "O(1)", 1, "1"
