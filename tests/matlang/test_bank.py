"""Sentence banks: every node's value against the exact evaluator, dedup against a naive
enumeration, witnesses that really separate, and the fragments' known separation power."""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np
import pytest

from matlang import ast, bank
from matlang.errors import MatlangError
from matlang.evaluator import evaluate_graph
from matlang.graphs import Graph, from_adjacency, named
from matlang.parser import parse
from matlang.printer import to_text


def _mod(v: object) -> np.ndarray:
    arr = np.asarray(v, dtype=object)
    return np.vectorize(lambda x: int(Fraction(x)) % bank.PRIME, otypes=[np.int64])(arr)


def _graphs(seed: int, n: int = 7, p: float = 0.45) -> tuple[Graph, Graph]:
    a, b = bank.random_graphs(2, n, p, seed)
    return from_adjacency(a, name="a"), from_adjacency(b, name="b")


# 1-WL-equivalent, non-isomorphic: the paper's decalin / bicyclopentyl and C6 / 2·C3.
def _two_triangles() -> Graph:
    a = np.zeros((6, 6), dtype=np.int64)
    for i, j in ((0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5)):
        a[i, j] = a[j, i] = 1
    return from_adjacency(a, name="2C3")


@pytest.mark.parametrize("fragment", bank.FRAGMENTS)
def test_every_node_is_its_expression(fragment: str) -> None:
    """Each node's residues equal the dense evaluator's exact value of its expression, every
    node is non-zero and no two nodes share a value (the dedup); sizes are AST sizes."""
    g, h = _graphs(3)
    s = bank.bank(fragment, 8, fingerprint=np.stack([g.adjacency, h.adjacency]))
    assert s.nodes, "the bank is empty"
    vals = bank._replay(s, bank.adjacency_stack([g.adjacency, h.adjacency]))
    seen = set()
    for i, nd in enumerate(s.nodes):
        e = bank.to_expr(s, i)
        assert e.size == nd.size, (to_text(e), e.size, nd.size)
        for k, graph in enumerate((g, h)):
            exact = _mod(evaluate_graph(e, graph)).reshape(vals[i][k].shape)
            assert np.array_equal(exact, vals[i][k].astype(np.int64)), to_text(e)
        assert vals[i].any()
        key = vals[i].tobytes()
        assert key not in seen, f"duplicate node {to_text(e)}"
        seen.add(key)


def _naive(fragment: str, max_size: int) -> list[ast.Expr]:
    """Every scalar sentence of the bank's grammar up to ``max_size`` (no dedup at all)."""
    vec: dict[int, list[ast.Expr]] = {1: [ast.Ones()]}
    mat: dict[int, list[ast.Expr]] = {1: [ast.Input("A")]}
    for s in range(2, max_size + 1):
        vec[s], mat[s] = [], []
        for s1 in range(1, s - 1):
            s2 = s - 1 - s1
            for m in mat.get(s1, []):
                if fragment == "L3" or isinstance(m, ast.Input):
                    vec[s] += [ast.Mul(m, v) for v in vec.get(s2, [])]
            vec[s] += [ast.Hadamard(u, v) for u in vec.get(s1, []) for v in vec.get(s2, [])]
            if fragment != "L1":
                mat[s] += [ast.Mul(m, n) for m in mat.get(s1, []) for n in mat.get(s2, [])]
            if fragment == "L3":
                mat[s] += [ast.Hadamard(m, n) for m in mat.get(s1, []) for n in mat.get(s2, [])]
        if fragment != "L1":
            mat[s] += [ast.Diag(v) for v in vec.get(s - 1, [])]
    out = [ast.Mul(ast.Transpose(ast.Ones()), v) for s in vec for v in vec[s] if s + 3 <= max_size]
    if fragment != "L1":
        out += [ast.Trace(m) for s in mat for m in mat[s] if s + 1 <= max_size]
    return out


@pytest.mark.parametrize(("fragment", "max_size"), [("L1", 10), ("L2", 9), ("L3", 8)])
def test_search_agrees_with_naive_enumeration(fragment: str, max_size: int) -> None:
    """The deduplicated search separates a pair exactly when some sentence of the naive,
    unpruned enumeration does (exact integers), and finds the smallest size."""
    pairs = [_graphs(seed) for seed in range(6)] + [(named("decalin"), named("bicyclopentyl"))]
    pairs.append((named("cycle6"), _two_triangles()))
    sentences = _naive(fragment, max_size)
    for g, h in pairs:
        sizes = [e.size for e in sentences if evaluate_graph(e, g) != evaluate_graph(e, h)]
        s = bank.search_pair(g.adjacency, h.adjacency, fragment, max_size, multiset=False)
        assert (s.separation is not None) == bool(sizes), (fragment, g, h)
        if sizes:
            assert s.separation is not None and s.separation.size == min(sizes)


def test_witnesses_separate_exactly() -> None:
    """The printed witness parses back and the exact evaluator tells the graphs apart with it."""
    cases = [(_graphs(seed, 9, 0.4), "L3", 10) for seed in range(4)]
    cases.append(((named("decalin"), named("bicyclopentyl")), "L3", 10))
    cases.append(((named("cycle6"), _two_triangles()), "L2", 8))
    for (g, h), fragment, k in cases:
        s = bank.search_pair(g.adjacency, h.adjacency, fragment, k)
        w = bank.witness(s)
        assert w is not None, (g, h)
        text = to_text(w)
        back = parse(text)
        assert evaluate_graph(back, g) != evaluate_graph(back, h), text


def test_fragments_separate_what_the_paper_says() -> None:
    """L1 (= 1-WL) cannot separate 1-WL-equivalent graphs however large the bound; L2 sees
    the triangles of C6 vs 2·C3 (tr A³); L3 separates decalin from bicyclopentyl."""
    c6, tri = named("cycle6"), _two_triangles()
    dec, bic = named("decalin"), named("bicyclopentyl")
    for g, h in ((c6, tri), (dec, bic)):
        assert bank.search_pair(g.adjacency, h.adjacency, "L1", 14).separation is None
    s = bank.search_pair(c6.adjacency, tri.adjacency, "L2", 8)
    assert s.separation is not None and to_text(bank.witness(s)) == "tr(A (A A))"
    assert bank.search_pair(dec.adjacency, bic.adjacency, "L3", 12).separation is not None


def test_multiset_readout_is_a_power_sum() -> None:
    """With multisets, a vector whose entry multisets differ separates; the witness is the
    power sum 𝟏ᵀ diag(v)ᵏ 𝟏 for the first k that differs, and it separates exactly."""
    for seed in itertools.count():
        g, h = _graphs(seed, 8, 0.4)
        s = bank.search_pair(g.adjacency, h.adjacency, "L1", 7)
        if s.separation is not None and s.separation.readout == "multiset":
            break
        assert seed < 200, "no multiset separation found on 200 random pairs"
    w = bank.witness(s)
    assert w is not None
    assert evaluate_graph(w, g) != evaluate_graph(w, h)


def test_signatures_group_like_the_search() -> None:
    """A bank's signatures differ on two graphs exactly when one of its sentences does."""
    gs = [_graphs(seed, 7, 0.5)[0] for seed in range(5)] + [named("cycle6"), _two_triangles()]
    b = bank.bank("L2", 8)
    sig = bank.signatures(b, [g.adjacency for g in gs], multiset=False)
    reads = [
        ast.Mul(ast.Transpose(ast.Ones()), bank.to_expr(b, i))
        if r == "sum"
        else ast.Trace(bank.to_expr(b, i))
        for r, i in bank.sentences(b)
    ]
    for x, y in itertools.combinations(range(len(gs)), 2):
        if gs[x].num_nodes != gs[y].num_nodes:
            continue
        differ = any(evaluate_graph(e, gs[x]) != evaluate_graph(e, gs[y]) for e in reads)
        assert (sig[x] != sig[y]) == differ


def test_bad_arguments() -> None:
    g = named("cycle6")
    with pytest.raises(MatlangError, match="unknown fragment"):
        bank.search_pair(g.adjacency, g.adjacency, "L4", 5)
    with pytest.raises(MatlangError, match="at least 1"):
        bank.search_pair(g.adjacency, g.adjacency, "L1", 0)
    # Graphs of different sizes: 𝟏ᵀ𝟏 separates them.
    s = bank.search_pair(g.adjacency, named("cycle5").adjacency, "L1", 5)
    assert s.separation is not None
