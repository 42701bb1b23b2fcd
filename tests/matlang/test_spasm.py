"""The spasm: canonical forms, automorphisms and treewidth against networkx, Möbius coefficients
against brute-force subgraph counts (own enumeration), known formulas from the literature."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from matlang.spasm import (
    SmallGraph,
    automorphisms,
    canonical,
    hom_count,
    independent_partitions,
    rooted_hom_count,
    spasm,
    sub_count,
    treewidth,
)

nx = pytest.importorskip("networkx")


def small(g: object) -> SmallGraph:
    nodes = sorted(g.nodes)  # type: ignore[attr-defined]
    pos = {v: i for i, v in enumerate(nodes)}
    return SmallGraph.of(len(nodes), [(pos[u], pos[v]) for u, v in g.edges])  # type: ignore[attr-defined]


def cycle(k: int) -> SmallGraph:
    return SmallGraph.of(k, [(i, (i + 1) % k) for i in range(k)])


def brute_sub(p: SmallGraph, a: np.ndarray) -> int:
    """Copies of P in G: injective maps preserving P's edges (backtracking), over |Aut(P)|."""
    n = a.shape[0]
    nb = [set(np.flatnonzero(a[i]).tolist()) for i in range(n)]
    total = 0

    def extend(img: list[int]) -> None:
        nonlocal total
        v = len(img)
        if v == p.n:
            total += 1
            return
        for w in range(n):
            if w not in img and all(img[u] in nb[w] for u in p.neighbours[v] if u < v):
                extend([*img, w])

    extend([])
    aut = automorphisms(p)
    assert total % aut == 0
    return total // aut


def random_graph(n: int, p: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.triu(rng.random((n, n)) < p, 1).astype(np.int64)
    return a + a.T


def connected_atlas(lo: int, hi: int) -> list[SmallGraph]:
    from networkx.generators.atlas import graph_atlas_g

    return [
        small(g) for g in graph_atlas_g() if lo <= g.number_of_nodes() <= hi and nx.is_connected(g)
    ]


def test_atlas_has_141_connected_patterns_of_3_to_6_nodes() -> None:
    assert len(connected_atlas(3, 6)) == 2 + 6 + 21 + 112


def test_canonical_forms_separate_the_atlas_and_ignore_labels() -> None:
    graphs = connected_atlas(1, 7)  # 1+1+2+6+21+112+853 graphs, pairwise non-isomorphic
    keys = {canonical(g) for g in graphs}
    assert len(keys) == len(graphs)
    rng = np.random.default_rng(1)
    for g in graphs[::37]:
        order = rng.permutation(g.n).tolist()
        assert canonical(g.relabel(order)) == canonical(g)


def test_automorphisms_match_networkx() -> None:
    from networkx.algorithms.isomorphism import GraphMatcher

    for g in connected_atlas(3, 6)[::3]:
        h = nx.Graph(list(g.edges))
        assert automorphisms(g) == sum(1 for _ in GraphMatcher(h, h).isomorphisms_iter())


@pytest.mark.parametrize(
    ("graph", "tw"),
    [
        (SmallGraph.of(5, [(0, 1), (1, 2), (1, 3), (3, 4)]), 1),
        (cycle(8), 2),
        (SmallGraph.of(4, [(i, j) for i in range(4) for j in range(i + 1, 4)]), 3),
        (SmallGraph.of(5, [(i, j) for i in range(5) for j in range(i + 1, 5)]), 4),
        (small(nx.petersen_graph()), 4),
        (small(nx.grid_2d_graph(3, 3)), 3),
        (small(nx.complete_bipartite_graph(3, 3)), 3),
    ],
)
def test_treewidth_known_values(graph: SmallGraph, tw: int) -> None:
    assert treewidth(graph) == tw


def test_treewidth_at_most_two_iff_no_k4_minor_on_the_atlas() -> None:
    # networkx's min-degree heuristic is an upper bound; a treewidth ≤ 2 answer from it is exact
    from networkx.algorithms.approximation import treewidth_min_degree

    for g in connected_atlas(3, 7)[::5]:
        h = nx.Graph(list(g.edges))
        upper, _ = treewidth_min_degree(h)
        t = treewidth(g)
        assert t <= upper
        if upper <= 2:
            assert t == upper


def test_partitions_are_independent_and_counted_by_bell_numbers() -> None:
    empty = SmallGraph.of(5, [])
    assert sum(1 for _ in independent_partitions(empty)) == 52  # Bell(5)
    c5 = cycle(5)
    for blocks in independent_partitions(c5):
        for b in blocks:
            pairs = itertools.combinations(b, 2)
            assert not any((min(u, v), max(u, v)) in c5.edges for u, v in pairs)


def test_four_cycle_spasm_is_the_known_formula() -> None:
    # 8·#C4 = tr(A⁴) − 2 Σ dᵢ² + 2m = hom(C4) − 2 hom(P3) + hom(K2)   (Harary & Manvel)
    got = {(q.graph.n, len(q.graph.edges)): q.coefficient for q in spasm(cycle(4))}
    assert got == {(4, 4): Fraction(1, 8), (3, 2): Fraction(-1, 4), (2, 1): Fraction(1, 8)}


def test_hom_count_is_the_trace_for_cycles() -> None:
    a = random_graph(12, 0.4, 3)
    for k in range(3, 8):
        assert hom_count(cycle(k), a) == int(np.trace(np.linalg.matrix_power(a, k)))


def test_rooted_hom_count_sums_to_hom() -> None:
    a = random_graph(10, 0.5, 4)
    house = SmallGraph.of(5, [(0, 1), (1, 2), (2, 3), (3, 0), (2, 4), (3, 4)])
    for r in range(5):
        assert sum(rooted_hom_count(house, a, r)) == hom_count(house, a)


@pytest.mark.parametrize("seed", [0, 1])
def test_spasm_counts_equal_brute_force_on_all_connected_patterns(seed: int) -> None:
    a = random_graph(8, 0.55, seed)
    for p in connected_atlas(3, 6):
        assert sub_count(p, a) == brute_sub(p, a), p


def test_k4_counts_on_rook_and_shrikhande() -> None:
    from matlang.graphs import named

    k4 = SmallGraph.of(4, [(i, j) for i in range(4) for j in range(i + 1, 4)])
    assert brute_sub(k4, named("rook4x4").adjacency) == 8  # its 4 rows and 4 columns
    assert brute_sub(k4, named("shrikhande").adjacency) == 0
    assert sub_count(k4, named("rook4x4").adjacency) == 8
