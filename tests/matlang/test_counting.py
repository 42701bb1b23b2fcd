"""Counting sentences of the paper (Theorems 3–5, Appendix) equal brute-force subgraph counts,
and the appendix sentences give the values printed in the paper."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np
import pytest

from matlang import evaluate, parse
from matlang.errors import ShapeError
from matlang.evaluator import evaluate_graph
from matlang.graphs import Graph, from_adjacency, named

# The paper's sentences, spelled as in the paper (Unicode) where the grammar allows it.
TRIANGLES = parse("tr(A³) / 6")  # Theorem 4 (Harary & Manvel)
FOUR_CYCLES = parse("(tr(A⁴) + tr(A²) − 2·𝟏ᵀA²𝟏) / 8")  # Theorem 4
THREE_STARS = parse("𝟏ᵀ binom(A𝟏, 3)")  # Theorem 3: Σ_v C(d(v), 3)
THREE_STARS_F = parse("let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A𝟏)")  # Theorem 3 with the paper's f
# Theorem 5: ½ · 𝟏ᵀ(A³ ⊙ diag(A𝟏 − 2))𝟏; "A𝟏 − 2" is written A𝟏 − 2𝟏 (scalars do not broadcast)
TAILED = parse("1/2 · 𝟏ᵀ(A³ ⊙ diag(A𝟏 − 2𝟏))𝟏")


def edges_of(a: np.ndarray) -> set[tuple[int, int]]:
    return {(i, j) for i, j in zip(*np.nonzero(np.triu(a, 1)))}


def copies(a: np.ndarray, k: int, m: int, degrees: tuple[int, ...]) -> Iterator[frozenset]:
    """Every (not necessarily induced) subgraph with k nodes and m edges, no isolated node, and
    the sorted degree sequence ``degrees``, as its edge set. For the patterns used here the degree
    sequence fixes the isomorphism type: K3 (2,2,2); K1,3 (1,1,1,3); C4 (2,2,2,2); paw
    (1,2,2,3) is the only 4-node 4-edge graph besides C4."""
    edges = edges_of(a)
    for nodes in itertools.combinations(range(a.shape[0]), k):
        inside = [e for e in itertools.combinations(nodes, 2) if e in edges]
        for chosen in itertools.combinations(inside, m):
            deg = dict.fromkeys(nodes, 0)
            for u, v in chosen:
                deg[u] += 1
                deg[v] += 1
            if tuple(sorted(deg.values())) == degrees:
                yield frozenset(chosen)


def count(a: np.ndarray, k: int, m: int, degrees: tuple[int, ...]) -> int:
    return sum(1 for _ in copies(a, k, m, degrees))


def induced_paws(a: np.ndarray) -> int:
    """Node sets whose induced subgraph is a paw (a triangle with a tail)."""
    edges = edges_of(a)
    total = 0
    for nodes in itertools.combinations(range(a.shape[0]), 4):
        inside = [e for e in itertools.combinations(nodes, 2) if e in edges]
        deg = [sum(v in e for e in inside) for v in nodes]
        total += len(inside) == 4 and sorted(deg) == [1, 2, 2, 3]
    return total


def random_graphs(count_: int, seed: int = 2021) -> list[Graph]:
    """Graphs with n ≤ 9 of mixed density, many with isolated nodes, plus a few fixed ones."""
    rng = np.random.default_rng(seed)
    out = [from_adjacency(np.zeros((0, 0), dtype=np.int64)), named("K4"), named("K5"),
           named("petersen"), named("cycle4"), named("star3")]  # fmt: skip
    while len(out) < count_:
        n = int(rng.integers(1, 10))
        p = float(rng.choice([0.1, 0.25, 0.4, 0.6, 0.8, 0.95]))
        upper = np.triu(rng.random((n, n)) < p, 1).astype(np.int64)
        a = upper + upper.T
        isolated = int(rng.integers(0, 3)) if n > 2 else 0  # cut some nodes loose
        a[:isolated, :] = 0
        a[:, :isolated] = 0
        out.append(from_adjacency(a))
    return out


GRAPHS = random_graphs(300)


def test_random_graphs_are_varied() -> None:
    sizes = {g.num_nodes for g in GRAPHS}
    assert sizes >= set(range(0, 10))
    with_isolated = sum(1 for g in GRAPHS if g.num_nodes and (g.adjacency.sum(1) == 0).any())
    assert with_isolated > 100
    assert sum(1 for g in GRAPHS if evaluate_graph(TRIANGLES, g) > 0) > 100
    assert sum(1 for g in GRAPHS if evaluate_graph(FOUR_CYCLES, g) > 0) > 80


def test_counting_sentences_equal_brute_force() -> None:
    for g in GRAPHS:
        a = np.asarray(g.adjacency)
        triangles = count(a, 3, 3, (2, 2, 2))
        stars = count(a, 4, 3, (1, 1, 1, 3))
        cycles = count(a, 4, 4, (2, 2, 2, 2))
        paws = count(a, 4, 4, (1, 2, 2, 3))
        got = [evaluate_graph(s, g) for s in (TRIANGLES, THREE_STARS, THREE_STARS_F, FOUR_CYCLES,
                                               TAILED)]  # fmt: skip
        assert got == [triangles, stars, stars, cycles, paws], g.label()
        assert all(type(v) is int for v in got)


def test_tailed_triangle_sentence_counts_non_induced_copies() -> None:
    """Theorem 5's sentence is Σ_v t(v)(d(v) − 2): each triangle with one more edge at one of its
    nodes. That is the number of paw subgraphs (not necessarily induced); it differs from the
    induced count whenever a paw sits inside a K4 or a diamond."""
    for g in GRAPHS[:120]:
        a = np.asarray(g.adjacency)
        d = a.sum(1)
        tri = [sum(1 for u, w in itertools.combinations(np.flatnonzero(a[v]), 2) if a[u, w])
               for v in range(a.shape[0])]  # fmt: skip
        assert evaluate_graph(TAILED, g) == sum(t * (dv - 2) for t, dv in zip(tri, d))
    k4 = np.asarray(named("K4").adjacency)
    assert evaluate(TAILED, "K4") == count(k4, 4, 4, (1, 2, 2, 3)) == 12
    assert induced_paws(k4) == 0
    diamond = k4.copy()
    diamond[0, 1] = diamond[1, 0] = 0
    assert evaluate(TAILED, diamond) == 4 and induced_paws(diamond) == 0
    paw = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 1], [0, 0, 1, 0]])
    assert evaluate(TAILED, paw) == induced_paws(paw) == 1


def test_paper_spelling_without_ones_is_a_shape_error() -> None:
    """The paper writes diag(A𝟏 − 2); a scalar does not broadcast here, and the error says how."""
    with pytest.raises(ShapeError, match="for a constant vector write 2 ones"):
        parse("1/2 · 𝟏ᵀ(A³ ⊙ diag(A𝟏 − 2))𝟏")


# --------------------------------------------------------------------------- paper appendix


def test_decalin_and_bicyclopentyl() -> None:
    """Appendix B: equal closed walks up to length 4, tr(A⁵) = 0 vs 20."""
    for k in range(1, 5):
        assert evaluate(f"tr(A^{k})", "decalin") == evaluate(f"tr(A^{k})", "bicyclopentyl")
    assert evaluate("tr(A⁵)", "decalin") == 0
    assert evaluate("tr(A⁵)", "bicyclopentyl") == 20


def test_chebnet_second_support() -> None:
    """Appendix B: y = 𝟏ᵀ C⁽²⁾ 𝟏 with C⁽²⁾ = 2/λmax · L − I and L the normalised Laplacian gives
    −9.9327 (decalin, λmax 2) and −9.9269 (bicyclopentyl, λmax 1.8418)."""
    norm_l = "(I - diag(invsqrt(A 𝟏)) A diag(invsqrt(A 𝟏)))"
    for name, lam, y in [("decalin", "2", -9.9327), ("bicyclopentyl", "1.8418", -9.9269)]:
        laplacian = evaluate(norm_l, name)
        assert max(np.linalg.eigvalsh(laplacian)) == pytest.approx(float(lam), abs=5e-5)
        assert evaluate(f"𝟏ᵀ ((2 / {lam}) {norm_l} - I) 𝟏", name) == pytest.approx(y, abs=5e-5)


def test_cospectral_pair() -> None:
    """Appendix C: tr(A²)=40, tr(A³)=48, tr(A⁴)=360, tr(A⁵)=920 on both graphs."""
    for name in ("cospectral_G", "cospectral_H"):
        assert [evaluate(f"tr(A^{k})", name) for k in (2, 3, 4, 5)] == [40, 48, 360, 920]


L3_SENTENCE = "𝟏ᵀ((A ⊙ A²)² 𝟏 ⊙ (A ⊙ A²)² 𝟏)"  # the paper's 𝟏ᵀ((X ⊙ X²)²𝟏)²


@pytest.mark.parametrize(
    ("text"), [L3_SENTENCE, "𝟏ᵀ square((A ⊙ A²)² 𝟏)", "let f(x) = x*x; 𝟏ᵀ f((A∘A^2)^2 ones)"]
)
def test_l3_sentence(text: str) -> None:
    """Appendix C and D: 6032 vs 5872 on the cospectral pair, 331776 on both strongly regular
    graphs (which are 3-WL equivalent)."""
    assert evaluate(text, ["cospectral_G", "cospectral_H"]) == [6032, 5872]
    assert evaluate(text, ["rook4x4", "shrikhande"]) == [331776, 331776]


def test_strongly_regular_pair_parameters() -> None:
    """rook4x4 and Shrikhande are srg(16, 6, 2, 2): A² = 6I + 2A + 2(J − I − A)."""
    for name in ("rook4x4", "shrikhande"):
        m = evaluate("A² - 6 I - 2 A - 2 (𝟏 𝟏ᵀ - I - A)", name)
        assert not m.any()
