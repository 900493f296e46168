"""attnlab.experiments.path_lengths: the dependency graphs and their path lengths (Vaswani et al., Table 1).

The reference here is written independently of the module: a breadth-first search over a
successor function that describes each layer type directly, with the stack depth found by
growing it until output n sees input 1 (not from the module's formulas).
"""

from __future__ import annotations

import math
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attnlab.experiments import path_lengths


def successors(kind: str, n: int, k: int, layers: int, node):
    """Nodes computed from ``node`` = (layer, position), positions 0..n-1."""
    layer, i = node
    if kind == "rnn":
        if layer == 0:
            return [(1, i)]  # x_i feeds h_i
        return [(1, i + 1)] if i + 1 < n else []  # h_i feeds h_{i+1}
    if kind == "self_attention":
        return [(1, j) for j in range(n)] if layer == 0 else []
    if layer == layers:
        return []
    step = k**layer if kind == "dilated_cnn" else 1  # the dilation of layer `layer + 1`
    return [(layer + 1, i + m * step) for m in range(k) if i + m * step < n]


def bfs_distance(kind: str, n: int, k: int, layers: int) -> int | None:
    """Edges from input 1 to output n, or None when output n does not see input 1."""
    start, goal = (0, 0), (layers, n - 1)
    dist = {start: 0}
    queue = deque([start])
    while queue:
        u = queue.popleft()
        for v in successors(kind, n, k, layers, u):
            if v not in dist:
                dist[v] = dist[u] + 1
                queue.append(v)
    return dist.get(goal)


def reference_length(kind: str, n: int, k: int) -> int:
    """The smallest stack whose last output sees input 1, then its BFS distance."""
    layers = 1
    while bfs_distance(kind, n, k, layers) is None:
        layers += 1
    return bfs_distance(kind, n, k, layers)


@pytest.mark.parametrize("kind", path_lengths.KINDS)
@pytest.mark.parametrize("k", [2, 3, 4, 7])
def test_longest_path_equals_independent_bfs(kind, k):
    for n in [2, 3, 4, 5, 8, 9, 10, 16, 17, 27, 28, 33, 64, 100]:
        assert path_lengths.longest_path(kind, n, k) == reference_length(kind, n, k), (kind, n, k)


@given(
    kind=st.sampled_from(path_lengths.KINDS),
    n=st.integers(min_value=2, max_value=120),
    k=st.integers(min_value=2, max_value=9),
)
def test_longest_path_equals_bfs_for_any_n_and_k(kind, n, k):
    assert path_lengths.longest_path(kind, n, k) == reference_length(kind, n, k)


@pytest.mark.parametrize("n", [2, 5, 9, 30, 81, 200])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_table_1_orders(n, k):
    # RNN: n edges (x_1 -> h_1 -> ... -> h_n); self-attention: one edge.
    assert path_lengths.longest_path("rnn", n, k) == n
    assert path_lengths.longest_path("self_attention", n, k) == 1
    # Contiguous convolutions: L layers see L(k-1)+1 inputs, one edge per layer.
    assert path_lengths.longest_path("cnn", n, k) == math.ceil((n - 1) / (k - 1))
    # Dilated convolutions (dilation k^l): k^L inputs after L layers.
    assert path_lengths.longest_path("dilated_cnn", n, k) == max(
        1, math.ceil(math.log(n, k) - 1e-9)
    )


def test_growth_matches_big_o():
    # Doubling n doubles the RNN path, about doubles the CNN path, adds ~1 dilated layer.
    assert path_lengths.longest_path("rnn", 64, 2) == 2 * path_lengths.longest_path("rnn", 32, 2)
    assert (
        path_lengths.longest_path("dilated_cnn", 64, 2)
        == path_lengths.longest_path("dilated_cnn", 32, 2) + 1
    )
    assert path_lengths.longest_path("cnn", 65, 3) == 2 * path_lengths.longest_path("cnn", 33, 3)


@pytest.mark.parametrize("kind", path_lengths.KINDS)
def test_graph_and_path_are_consistent(kind):
    g = path_lengths.dependency_graph(kind, 12, 3)
    assert g.layers == path_lengths.num_layers(kind, 12, 3)
    edges = set(g.edges)
    nodes = set(g.nodes)
    assert all(u in nodes and v in nodes for u, v in edges)
    p = path_lengths.shortest_path(g)
    assert p[0] == g.source == (0, 0) and p[-1] == g.target == (g.layers, 11)
    assert all((u, v) in edges for u, v in zip(p[:-1], p[1:], strict=False))


def test_dilated_edges_use_dilation_k_to_the_l():
    g = path_lengths.dependency_graph("dilated_cnn", 27, 3)
    assert g.layers == 3
    for (lu, i), (lv, j) in g.edges:
        assert lv == lu + 1
        assert (j - i) % 3**lu == 0 and 0 <= (j - i) // 3**lu < 3


def test_stack_is_the_smallest_that_sees_every_input():
    for kind in ("cnn", "dilated_cnn"):
        for n, k in [(10, 2), (10, 3), (30, 4)]:
            g = path_lengths.dependency_graph(kind, n, k)
            assert bfs_distance(kind, n, k, g.layers) is not None
            assert bfs_distance(kind, n, k, g.layers - 1) is None or g.layers == 1


@pytest.mark.parametrize(
    "kind, n, k",
    [
        ("transformer", 8, 2),
        ("RNN", 8, 2),
        ("", 8, 2),
        ("rnn", 1, 2),
        ("rnn", 0, 2),
        ("cnn", -5, 2),
        ("cnn", 2.5, 2),
        ("cnn", "8", 2),
        ("cnn", True, 2),
        ("cnn", path_lengths.MAX_N + 1, 2),
        ("cnn", 8, 1),
        ("dilated_cnn", 8, 0),
        ("dilated_cnn", 8, -2),
        ("self_attention", 8, 3.0),
        ("rnn", 8, path_lengths.MAX_K + 1),
    ],
)
def test_bad_arguments_raise_value_error(kind, n, k):
    with pytest.raises(ValueError):
        path_lengths.longest_path(kind, n, k)
    with pytest.raises(ValueError):
        path_lengths.dependency_graph(kind, n, k)


@pytest.mark.parametrize("n", [2, 5, 8, 9, 27, 30, 81, 200])
@pytest.mark.parametrize("k", [2, 3, 5])
def test_table_1_orders_are_the_whole_numbers_they_mean(n, k):
    assert path_lengths.complexity("rnn", n, k) == ("O(n)", n, "n")
    assert path_lengths.complexity("cnn", n, k) == ("O(n/k)", math.ceil(n / k), "⌈n/k⌉")
    order, value, how = path_lengths.complexity("dilated_cnn", n, k)
    assert (order, how) == ("O(log_k n)", "⌈log_k n⌉") and isinstance(value, int)
    assert k**value >= n > k ** (value - 1)  # ceil(log_k n), exact (27 = 3^3 gives 3)
    assert value == path_lengths.longest_path("dilated_cnn", n, k)
    assert path_lengths.complexity("self_attention", n, k) == ("O(1)", 1, "1")


# --------------------------------------------------------------------------- any dilations
def reference_reach(n: int, k: int, dilations: list[int]) -> set[tuple[int, int]]:
    """Nodes the last output reads, walking down by hand: (l, t) reads t, t - d, .., t - (k-1)d."""
    top = len(dilations)
    reached = frontier = {(top, n - 1)}
    for layer in range(top, 0, -1):
        d = dilations[layer - 1]
        frontier = {(layer - 1, t - m * d) for _, t in frontier for m in range(k) if t - m * d >= 0}
        reached = reached | frontier
    return reached


@given(
    n=st.integers(1, 40),
    k=st.integers(2, 4),
    dilations=st.lists(st.integers(1, 9), min_size=1, max_size=4),
)
def test_reach_of_a_causal_conv_stack_matches_a_walk_by_hand(n, k, dilations):
    graph = path_lengths.causal_conv_graph(n, k, dilations)
    assert graph.layers == len(dilations)
    assert path_lengths.reach(graph) == reference_reach(n, k, dilations)


def test_the_dilated_stack_is_the_causal_conv_graph_with_dilations_k_to_the_l():
    graph = path_lengths.dependency_graph("dilated_cnn", 27, 3)  # 3 layers: 1, 3, 9
    same = path_lengths.causal_conv_graph(27, 3, [1, 3, 9])
    assert sorted(graph.edges) == sorted(same.edges)
    assert path_lengths.reach(graph) >= {(0, i) for i in range(27)}  # output 27 sees every input


def test_the_wavenet_picture_counts_on_the_path_length_graphs(monkeypatch):
    from attnlab.pictures import figures

    calls = []
    real = path_lengths.reach
    monkeypatch.setattr(path_lengths, "reach", lambda g, node=None: calls.append(g) or real(g))
    reached = figures.causal_conv_reach((1, 2, 4, 8), 16)
    assert len(calls) == 1 and calls[0].k == 2 and calls[0].layers == 4  # one implementation
    assert reached == reference_reach(16, 2, [1, 2, 4, 8])


def test_reach_of_a_node_not_in_the_graph_is_a_one_line_error():
    graph = path_lengths.causal_conv_graph(4, 2, [1])
    with pytest.raises(ValueError, match="not in the graph"):
        path_lengths.reach(graph, node=(9, 9))
