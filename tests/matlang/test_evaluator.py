"""The exact dense evaluator: Python integers without overflow, rationals for division,
float64 for transcendental functions, every graph source, and clear errors for bad graphs."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sps
import sympy as sp
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from matlang import ast as A
from matlang import evaluate, parse
from matlang.errors import EvaluationError, GraphError, MatlangError, PowerError
from matlang.evaluator import DenseEvaluator, evaluate_graph, evaluate_many, to_float
from matlang.graphs import (
    PAPER_GRAPH6,
    Graph,
    as_graph,
    from_adjacency,
    from_edge_index,
    from_graph6,
    named,
    to_graph6,
)
from matlang.shapes import SCALAR
from tests.fixtures import exprs

PATH3 = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
TRIANGLE = np.ones((3, 3), dtype=int) - np.eye(3, dtype=int)


# --------------------------------------------------------------------------- exact integers


def test_power_beyond_int64_is_exact() -> None:
    """tr(A^40) on K10: closed walks of length 40 = 9^40 + 9·(-1)^40 (eigenvalues 9, -1×9)."""
    value = evaluate("tr(A^40)", "K10")
    assert type(value) is int
    assert value == 9**40 + 9 * (-1) ** 40
    assert value > 2**63
    m = evaluate("A^40", "K10")
    assert m.dtype == object and type(m[0, 1]) is int
    # (A^k)_ii = ((n-1)^k + (n-1)(-1)^k)/n and (A^k)_ij = ((n-1)^k - (-1)^k)/n on K_n
    assert m[3, 3] == (9**40 + 9) // 10 and m[0, 1] == (9**40 - 1) // 10
    assert evaluate("𝟏ᵀ A^41 𝟏", "K10") == 10 * 9**41


def test_overflow_in_hadamard_sum_and_trace() -> None:
    a20 = (9**20 - 1) // 10  # off-diagonal entry of A^20 on K10, about 1.2e18 < 2^63
    assert a20 < 2**63 < a20 * a20
    assert evaluate("𝟏ᵀ (A^20 ⊙ A^20) 𝟏", "K10") == 90 * a20**2 + 10 * ((9**20 + 9) // 10) ** 2
    big = evaluate("A^20 + A^20 + A^20 + A^20 + A^20 + A^20 + A^20 + A^20", "K10")
    assert big[0, 1] == 8 * a20 and 8 * a20 > 2**63
    assert evaluate("tr(A^20 ⊙ A^20) - tr(A^20 ⊙ A^20)", "K10") == 0
    # coming back under the bound gives int64 again
    back = evaluate("(A^40 - A^40) A", "K10")
    assert back.dtype == np.int64 and not back.any()


def test_values_stay_int64_when_small() -> None:
    v = evaluate("A 𝟏", PATH3)
    assert v.dtype == np.int64 and v.tolist() == [1, 2, 1]
    assert evaluate("A²", PATH3).dtype == np.int64
    assert type(evaluate("𝟏ᵀ A 𝟏", PATH3)) is int


def test_huge_exact_values_are_refused_clearly() -> None:
    too_big = r"a power \^10000 would give exact numbers of about 9542 digits on graph K10, beyond"
    with pytest.raises(EvaluationError, match=too_big + " the limit MAX_DIGITS = 4 000"):
        evaluate("tr(A^10000)", "K10")
    # every exact value stays printable (Python refuses ints of more than 4300 digits)
    assert len(str(evaluate("tr(A^8000)", "K3"))) == 2409
    product = r"A³⁰⁰⁰ A³⁰⁰⁰ would give exact numbers of about 57\d\d digits"
    with pytest.raises(EvaluationError, match=product):
        evaluate("tr(A^3000 A^3000)", "K10")  # a product, not a power: checked as computed
    with pytest.raises(PowerError, match=r"the power \^1000000 is beyond the limit MAX_EXPONENT"):
        evaluate("tr(A^1000000)", "K10")
    assert evaluate("tr(A^1000)", "K3") == 2**1000 + 2  # eigenvalues 2, -1, -1
    assert evaluate("tr(A^1000)", "K3", exact=False) == pytest.approx(2.0**1000)
    with pytest.raises(EvaluationError, match="does not fit in float64"):
        evaluate("exp(tr(A^2000))", "K10")


# --------------------------------------------------------------------------- rationals


def test_division_is_exact() -> None:
    assert evaluate("tr(A^3) / 4", TRIANGLE) == Fraction(3, 2)
    assert type(evaluate("tr(A^3) / 4", TRIANGLE)) is Fraction
    six = evaluate("tr(A^3) / 6", TRIANGLE)
    assert six == 1 and type(six) is int
    v = evaluate("A 𝟏 / tr(A²)", PATH3)
    assert v.tolist() == [Fraction(1, 4), Fraction(1, 2), Fraction(1, 4)]
    half = evaluate("0.5 A 𝟏", PATH3)
    assert half.tolist() == [Fraction(1, 2), 1, Fraction(1, 2)]
    assert type(half[1]) is int  # whole entries of a mixed array are ints, not Fraction(1, 1)
    assert evaluate("A / (2 / 3)", PATH3)[0, 1] == Fraction(3, 2)
    assert evaluate("(1 / 3) tr(A²) + (2 / 3) tr(A²)", PATH3) == 4
    assert evaluate("0.1 + 0.2", PATH3) == Fraction(3, 10)  # literals are exact decimals


def test_division_by_zero_is_an_error() -> None:
    with pytest.raises(EvaluationError, match="division by zero on graph"):
        evaluate("A / tr(A)", PATH3)
    with pytest.raises(EvaluationError, match="division by zero"):
        evaluate("A / 0", PATH3, exact=False)


# --------------------------------------------------------------------------- floats


def test_transcendental_functions_are_float64() -> None:
    v = evaluate("𝟏ᵀ exp(A) 𝟏", "K2")
    assert type(v) is float and v == pytest.approx(2 + 2 * math.e, rel=1e-15)
    a = PATH3.astype(float)
    d = a.sum(1)
    ec = evaluate("𝟏ᵀ A diag(exp(-A²𝟏)) A 𝟏", PATH3)
    assert ec == pytest.approx(float(np.ones(3) @ a @ np.diag(np.exp(-(a @ a @ np.ones(3)))) @ d))
    assert evaluate("sqrt(A 𝟏)", PATH3) == pytest.approx(np.sqrt([1, 2, 1]))
    assert evaluate("sigmoid(tr(A))", PATH3) == 0.5
    assert evaluate("relu(A - 0.5 I)", PATH3).tolist() == PATH3.tolist()
    assert evaluate("invsqrt(A 𝟏)", PATH3) == pytest.approx([1, 2**-0.5, 1])


def test_exact_false_gives_floats() -> None:
    v = evaluate("tr(A^3) / 4", TRIANGLE, exact=False)
    assert type(v) is float and v == 1.5
    m = evaluate("A", PATH3, exact=False)
    assert m.dtype == np.float64
    assert to_float(evaluate("tr(A^3) / 4", TRIANGLE)) == 1.5


def test_nonfinite_values() -> None:
    with pytest.raises(EvaluationError, match=r"log\(0\.0\) is -inf at entry \(0, 0\)"):
        evaluate("log(A)", PATH3)
    kept = evaluate("log(A)", PATH3, nonfinite="keep")
    assert kept[0, 0] == -math.inf and kept[0, 1] == 0.0
    with pytest.raises(EvaluationError, match="not finite"):
        evaluate("tr(exp(A)^2000)", "K10")
    assert evaluate("tr(exp(A)^2000)", "K10", nonfinite="keep") == math.inf


def test_polynomial_functions_stay_exact() -> None:
    stars = evaluate("𝟏ᵀ binom(A𝟏, 3)", "star5")
    assert stars == 10 and type(stars) is int
    assert evaluate("let f(x) = x*(x-1)*(x-2)/6; 𝟏ᵀ f(A𝟏)", "star5") == 10
    assert evaluate("let f(x) = x/4; 𝟏ᵀ f(A𝟏)", "star5") == Fraction(10, 4)
    assert evaluate("let f(x) = 0.5*x^2; f(A𝟏)", PATH3).tolist() == [
        Fraction(1, 2),
        2,
        Fraction(1, 2),
    ]
    assert evaluate("binom(5, 2)", PATH3) == 10
    assert evaluate("square(A 𝟏) - A 𝟏 ⊙ A 𝟏", PATH3).tolist() == [0, 0, 0]
    assert evaluate("max(A 𝟏, 2) + min(A 𝟏, 2)", PATH3).tolist() == [3, 4, 3]
    # a huge polynomial degree is refused rather than computed for hours
    with pytest.raises(EvaluationError, match=r"f\(\.\.\.\) would give exact numbers"):
        evaluate("let f(x) = x^100; tr(f(f(f(A^2))))", "K10")


# --------------------------------------------------------------------------- shapes of values


def test_value_shapes() -> None:
    assert evaluate("A 𝟏", "petersen").shape == (10,)
    assert evaluate("𝟏ᵀ A", "petersen").shape == (10,)
    assert evaluate("A²", "petersen").shape == (10, 10)
    # Petersen is srg(10, 3, 0, 1): A² = 3I + (J - I - A)
    assert evaluate("A² - 3 I + A + I", "petersen").tolist() == np.ones((10, 10)).tolist()
    assert isinstance(evaluate("tr(A²)", "petersen"), int)
    values = evaluate("tr(A²) / 2", ["petersen", "K4", "cycle6"])
    assert values == [15, 6, 6]
    assert evaluate_many([parse("tr(A^3)/6"), parse("A 𝟏")], [named("K4")])[0] == [4]


def test_empty_and_single_node_graphs() -> None:
    empty = from_adjacency(np.zeros((0, 0), dtype=int))
    assert evaluate("𝟏ᵀ A 𝟏", empty) == 0
    assert evaluate("A 𝟏", empty).shape == (0,)
    assert evaluate("𝟏ᵀ binom(A𝟏, 3)", empty) == 0
    assert evaluate("tr(I)", np.zeros((1, 1), dtype=int)) == 1


# --------------------------------------------------------------------------- declared inputs


def test_inputs_from_argument_and_features() -> None:
    g = from_adjacency(PATH3, x=np.array([[1, 10], [2, 20], [3, 30]]))
    # from the text: declaration order picks the feature columns
    assert evaluate("input h, w; A w + h", g).tolist() == [21, 42, 23]
    # given explicitly, an input overrides the features
    assert evaluate("input h, w; A w + h", g, inputs={"h": [0, 0, 0]}).tolist() == [20, 40, 20]
    # an AST has lost the declaration: columns go in order of first use (as to_text declares)
    e = parse("input h, w; A w + h")
    assert evaluate(e, g).tolist() == [12, 24, 32]
    assert evaluate("input h; hᵀ A h", PATH3, inputs={"h": np.array([1, 2, 3])}) == 16
    f = evaluate("input h; A h", PATH3, inputs={"h": [0.5, 0.25, 1.0]})
    assert f.dtype == np.float64 and f.tolist() == [0.25, 1.5, 0.25]
    pyg = SimpleNamespace(edge_index=np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), num_nodes=3,
                          x=torch.tensor([[1.0], [2.0], [3.0]]))  # fmt: skip
    assert evaluate("input h; A h", pyg).tolist() == [2.0, 4.0, 2.0]


def test_input_errors() -> None:
    with pytest.raises(EvaluationError, match=r"no value for input 'h' on graph .*inputs="):
        evaluate("input h; A h", PATH3)
    with pytest.raises(GraphError, match=r"input 'h' must have one value per node \(3\)"):
        evaluate("input h; A h", PATH3, inputs={"h": [1, 2]})


# --------------------------------------------------------------------------- graph sources

TRIANGLES = "tr(A^3) / 6"


def test_every_graph_source_gives_the_same_value(tmp_path: Path) -> None:
    dec = named("decalin")
    a = np.asarray(dec.adjacency)
    sources: list[Any] = [
        dec,
        "decalin",
        PAPER_GRAPH6["decalin"],
        a,
        as_graph(a.tolist()),
        a.astype(bool),
        a.astype(float),
        sps.csr_matrix(a),
        sps.coo_matrix(a),
        torch.tensor(a),
        from_edge_index(dec.edge_index, 10),
        SimpleNamespace(edge_index=torch.tensor(dec.edge_index), num_nodes=10),
        from_graph6(to_graph6(dec)),
    ]
    for src in sources:
        assert evaluate("tr(A^5)", src) == 0, type(src)
        assert evaluate("𝟏ᵀ A 𝟏", src) == 22
    bic = named("bicyclopentyl")
    f = tmp_path / "pair.g6"
    f.write_text(f"{to_graph6(dec)}\n\n{to_graph6(bic)}\n")
    assert evaluate("tr(A^5)", str(f)) == [0, 20]
    assert evaluate("tr(A^5)", f) == [0, 20]  # a Path works too
    assert evaluate("tr(A^5)", [dec, bic, "cycle5"]) == [0, 20, 10]


def test_networkx_graphs() -> None:
    nx = pytest.importorskip("networkx")
    assert evaluate("tr(A^3) / 6", nx.complete_graph(5)) == 10
    assert evaluate("tr(A²) / 2", nx.petersen_graph()) == 15
    assert evaluate("𝟏ᵀ A 𝟏", nx.Graph([("a", "b"), ("b", "c")])) == 4
    g = nx.Graph()
    g.add_edge(0, 1, weight=3)
    # the hint names a call that works: evaluate and compile take graphs, not the option
    with pytest.raises(GraphError, match=r"is 3 \(a weighted graph: matlang\.graphs\.as_graph"):
        evaluate("𝟏ᵀ A 𝟏", g)
    assert evaluate("𝟏ᵀ A 𝟏", as_graph(g, allow_weights=True)) == 6
    # parallel edges of a multigraph: refused by name, or their count read as a weight, as
    # networkx.to_numpy_array adds them (never merged into one edge silently)
    multi = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])
    with pytest.raises(GraphError, match=r"MultiGraph: edge \(0, 1\) is stored 2 times"):
        evaluate("𝟏ᵀ A 𝟏", multi)
    assert evaluate("𝟏ᵀ A 𝟏", as_graph(multi, allow_weights=True)) == 6
    assert nx.to_numpy_array(multi).sum() == 6
    assert evaluate("𝟏ᵀ A 𝟏", nx.MultiGraph([(0, 1), (1, 2)])) == 4  # no parallel edge: as is
    loops = nx.MultiGraph([(0, 0), (0, 1)])
    assert as_graph(loops, allow_self_loops=True).adjacency.tolist() == [[1, 1], [1, 0]]
    with pytest.raises(GraphError, match="not symmetric"):
        as_graph(nx.DiGraph([(0, 1)]))
    with pytest.raises(GraphError, match="self-loop at node 0"):
        as_graph(nx.Graph([(0, 0), (0, 1)]))


def test_named_graphs() -> None:
    sizes = {
        "decalin": (10, 11),
        "bicyclopentyl": (10, 11),
        "cospectral_G": (10, 20),
        "cospectral_H": (10, 20),
        "rook4x4": (16, 48),
        "shrikhande": (16, 48),
        "petersen": (10, 15),
        "cycle7": (7, 7),
        "C5": (5, 5),
        "path4": (4, 3),
        "P2": (2, 1),
        "K6": (6, 15),
        "complete3": (3, 3),
        "star4": (5, 4),
        "empty3": (3, 0),
    }
    for name, (n, m) in sizes.items():
        g = named(name)
        assert (g.num_nodes, g.num_edges) == (n, m), name
        assert evaluate("𝟏ᵀ A 𝟏 / 2", name) == m


# --------------------------------------------------------------------------- bad graphs

BAD = [
    (np.array([[0, 1], [0, 0]]), "adjacency is not symmetric: entry (0, 1) is 1 but (1, 0) is 0 "
     "(a directed graph: matlang.graphs.as_graph(g, allow_directed=True))"),
    (np.array([[1, 1], [1, 0]]), "self-loop at node 0 (to keep self-loops: "
     "matlang.graphs.as_graph(g, allow_self_loops=True))"),
    (np.zeros((3, 2)), "adjacency must be a square matrix, got shape (3, 2)"),
    (np.array([[0, 1, 1, 2], [1, 0, 2, 1]]), "adjacency must be a square matrix, got shape "
     "(2, 4); a (2, E) array reads as an adjacency, not an edge_index: give "
     "matlang.graphs.from_edge_index(edge_index, num_nodes) or a PyG Data"),
    (np.array([[0, 2], [2, 0]]), "adjacency must be 0/1, entry (0, 1) is 2 (a weighted graph: "
     "matlang.graphs.as_graph(g, allow_weights=True), or a PyG edge_weight)"),
    (np.array([[0, 0.5], [0.5, 0]]), "adjacency must be 0/1, entry (0, 1) is 0.5 (a weighted "
     "graph: matlang.graphs.as_graph(g, allow_weights=True), or a PyG edge_weight)"),
    (np.array([[0, np.nan], [np.nan, 0]]), "adjacency has NaN or infinite entries"),
    (np.array([["a", "b"], ["c", "d"]]), "adjacency must be numeric, got dtype <U1"),
    (object(), "cannot make a graph from object: give an adjacency matrix, an edge_index object, "
     "a networkx graph, a built-in name or a graph6 string"),
    ("no_such_graph", "no built-in graph named 'no_such_graph'; known: decalin, bicyclopentyl, "
     "cospectral_G, cospectral_H, rook4x4, shrikhande, petersen, cycleN, pathN, completeN, starN, "
     "emptyN, CN, PN, KN"),
    ("cycle2", "no built-in graph 'cycle2': size 2 out of range"),
    ("I?", "graph 'I?': graph6 string for 10 nodes needs 8 data characters, has 1"),
]  # fmt: skip


@pytest.mark.parametrize(("graph", "message"), BAD)
def test_bad_graphs(graph: Any, message: str) -> None:
    with pytest.raises(GraphError) as info:
        as_graph(graph)
    assert str(info.value) == message
    with pytest.raises(GraphError):
        evaluate("tr(A)", graph)


BAD_EDGE_INDEX = [
    (np.array([[0, 5], [5, 0]]), 3, "edge_index refers to node 5 but the graph has 3 nodes"),
    (np.array([[0, -1], [-1, 0]]), 3, "edge_index refers to node -1 but the graph has 3 nodes"),
    (np.array([0, 1, 1, 0]), 3, "edge_index must have shape (2, E), got (4,)"),
    (np.array([[0.0, 1.0], [1.0, 0.0]]), 3, "edge_index must hold integers, got dtype float64"),
    (np.array([[0, 1, 0], [1, 0, 1]]), 3, "edge (0, 1) appears 2 times in edge_index"),
    (np.array([[0], [1]]), 3, "edge (0, 1) has no reverse edge (1, 0): store both directions of "
     "each undirected edge (or a directed graph: matlang.graphs.as_graph(g, allow_directed=True))"),
    (np.array([[1], [1]]), 3, "self-loop at node 1 (to keep self-loops: "
     "matlang.graphs.as_graph(g, allow_self_loops=True))"),
]  # fmt: skip


@pytest.mark.parametrize(("edge_index", "n", "message"), BAD_EDGE_INDEX)
def test_bad_edge_index(edge_index: np.ndarray, n: int, message: str) -> None:
    with pytest.raises(GraphError) as info:
        from_edge_index(edge_index, n)
    assert str(info.value) == message
    pyg = SimpleNamespace(edge_index=edge_index, num_nodes=n)
    with pytest.raises(GraphError):
        evaluate("tr(A)", pyg)


def test_allow_options() -> None:
    w = as_graph(np.array([[0, 2], [2, 0]]), allow_weights=True)
    assert evaluate("𝟏ᵀ A 𝟏", w) == 4 and evaluate("tr(A²)", w) == 8
    wf = from_edge_index(np.array([[0, 1], [1, 0]]), 2, edge_weight=[0.5, 0.5], allow_weights=True)
    assert evaluate("𝟏ᵀ A 𝟏", wf) == 1.0
    loops = as_graph(np.array([[1, 1], [1, 0]]), allow_self_loops=True)
    assert evaluate("tr(A)", loops) == 1 and evaluate("tr(A²)", loops) == 3
    directed = as_graph(np.array([[0, 1], [0, 0]]), allow_directed=True)
    assert evaluate("𝟏ᵀ A", directed).tolist() == [0, 1]
    assert evaluate("A 𝟏", directed).tolist() == [1, 0]
    assert evaluate("Aᵀ 𝟏", directed).tolist() == [0, 1]
    ei = from_edge_index(np.array([[0], [1]]), 2, allow_directed=True)
    assert ei.adjacency.tolist() == [[0, 1], [0, 0]]
    multi = from_edge_index(np.array([[0, 1, 0, 1], [1, 0, 1, 0]]), 2, allow_weights=True)
    assert multi.adjacency.tolist() == [[0, 2], [2, 0]]


def test_graphs_are_immutable_copies() -> None:
    a = PATH3.copy()
    g = as_graph(a)
    a[0, 1] = a[1, 0] = 0
    assert evaluate("𝟏ᵀ A 𝟏", g) == 4
    with pytest.raises(ValueError):
        g.adjacency[0, 1] = 0
    assert isinstance(g, Graph) and g.label() == "Bg"  # graph6 of the path 0-1-2


# --------------------------------------------------------------------------- property tests


def _reference(e: A.Expr, adj: list[list[int]], h: list[Fraction]) -> list[list[Fraction]]:
    """An independent exact evaluator on lists of Fractions (matrices as row lists)."""
    n = len(adj)

    def rec(x: A.Expr) -> list[list[Fraction]]:
        if isinstance(x, A.Input):
            return (
                [[Fraction(v) for v in row] for row in adj] if x.name == "A" else [[v] for v in h]
            )
        if isinstance(x, A.Ones):
            return [[Fraction(1)] for _ in range(n)]
        if isinstance(x, A.Number):
            return [[x.value]]
        if isinstance(x, A.Transpose):
            m = rec(x.operand)
            return (
                [list(col) for col in zip(*m)] if m else [[] for _ in range(len(m[0]) if m else 0)]
            )
        if isinstance(x, (A.Add, A.Sub, A.Hadamard)):
            p, q = rec(x.left), rec(x.right)
            op = {A.Add: lambda u, v: u + v, A.Sub: lambda u, v: u - v,
                  A.Hadamard: lambda u, v: u * v}[type(x)]  # fmt: skip
            return [[op(u, v) for u, v in zip(r, s)] for r, s in zip(p, q)]
        if isinstance(x, A.Neg):
            return [[-u for u in r] for r in rec(x.operand)]
        if isinstance(x, A.Div):
            d = rec(x.right)[0][0]
            return [[u / d for u in r] for r in rec(x.left)]
        if isinstance(x, A.Mul):
            p, q = rec(x.left), rec(x.right)
            if x.left.shape == SCALAR and x.right.shape != SCALAR or x.is_scalar_product:
                s, m = (p, q) if x.left.shape == SCALAR else (q, p)
                return [[s[0][0] * u for u in r] for r in m]
            cols = list(zip(*q))
            return [[sum((u * v for u, v in zip(r, c)), Fraction(0)) for c in cols] for r in p]
        if isinstance(x, A.Power):
            base = rec(x.base)
            out = [[Fraction(int(i == j)) for j in range(len(base))] for i in range(len(base))]
            for _ in range(x.exponent):
                out = [[sum((out[i][k] * base[k][j] for k in range(len(base))), Fraction(0))
                        for j in range(len(base))] for i in range(len(base))]  # fmt: skip
            return out
        if isinstance(x, A.Diag):
            v = [u for r in rec(x.operand) for u in r]
            return [[v[i] if i == j else Fraction(0) for j in range(n)] for i in range(n)]
        if isinstance(x, A.Trace):
            m = rec(x.operand)
            return [[sum((m[i][i] for i in range(len(m))), Fraction(0))]]
        assert isinstance(x, A.Apply)
        args = [rec(a) for a in x.args]
        n_rows = max(len(a) for a in args)
        n_cols = max(len(a[0]) if a else 0 for a in args)
        out = []
        for i in range(n_rows):
            row = []
            for j in range(n_cols):
                vals = [a[0][0] if len(a) == 1 and len(a[0]) == 1 else a[i][j] for a in args]
                subs = {s: sp.Rational(v.numerator, v.denominator)
                        for s, v in zip(x.function.symbols, vals)}  # fmt: skip
                r = sp.Rational(sp.expand_func(x.function.formula.subs(subs)))
                row.append(Fraction(int(r.p), int(r.q)))
            out.append(row)
        return out

    return rec(e)


@st.composite
def small_graphs(draw: st.DrawFn) -> np.ndarray:
    n = draw(st.integers(1, 5))
    bits = draw(st.lists(st.booleans(), min_size=n * (n - 1) // 2, max_size=n * (n - 1) // 2))
    a = np.zeros((n, n), dtype=np.int64)
    a[np.triu_indices(n, 1)] = bits
    return a + a.T


polynomial_sentences = st.sampled_from([SCALAR]).flatmap(
    lambda s: exprs(s, 3, polynomial=True, inputs=True)
) | st.sampled_from(["column", "matrix", "row"]).flatmap(
    lambda k: exprs(parse({"column": "𝟏", "matrix": "A", "row": "𝟏ᵀ"}[k]).shape, 3,
                    polynomial=True, inputs=True)
)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(polynomial_sentences, small_graphs(), st.data())
def test_exact_evaluator_matches_reference(e: A.Expr, a: np.ndarray, data: st.DataObject) -> None:
    """Dense exact values equal an independent Fraction evaluator, and float64 agrees with them
    up to rounding."""
    n = a.shape[0]
    h = data.draw(st.lists(st.integers(-3, 3), min_size=n, max_size=n))
    try:
        got = evaluate_graph(e, from_adjacency(a), inputs={"h": h})
    except EvaluationError as err:
        assert "division by zero" in str(err) or "exact numbers" in str(err)
        return
    want = _reference(e, a.tolist(), [Fraction(v) for v in h])
    got_rows = np.asarray(got, dtype=object).reshape(len(want), -1).tolist() if n else []
    assert [[Fraction(v) for v in r] for r in got_rows] == want if n else True
    if e.shape.is_scalar:
        assert type(got) in (int, Fraction)
    else:
        assert got.dtype in (np.int64, object)
    # float64 evaluation agrees up to rounding relative to the largest intermediate value
    ev = DenseEvaluator(from_adjacency(a), exact=False, inputs={"h": h})
    approx = np.asarray(ev(e), dtype=np.float64).reshape(-1)
    scale = max([1.0] + [float(np.max(np.abs(v))) for v in ev._memo.values() if v.size])
    exact = np.array([float(v) for r in want for v in r])
    assert np.allclose(approx, exact, rtol=1e-9, atol=1e-9 * scale)


def test_errors_are_project_errors() -> None:
    for text, graph in [("A / tr(A)", PATH3), ("log(A)", PATH3), ("tr(A)", np.zeros(3))]:
        with pytest.raises(MatlangError):
            evaluate(text, graph)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["scalar", "column", "matrix"]).flatmap(
    lambda k: exprs(parse({"scalar": "1", "column": "𝟏", "matrix": "A"}[k]).shape, 3)
), small_graphs(), st.booleans())  # fmt: skip
def test_any_sentence_evaluates_or_raises_a_project_error(
    e: A.Expr, a: np.ndarray, exact: bool
) -> None:
    """Random sentences with every function and divisions by expressions: a value of the right
    shape, or an EvaluationError (log 0, division by zero, ...), never another exception."""
    try:
        v = evaluate_graph(e, from_adjacency(a), exact=exact, inputs={"h": [1] * a.shape[0]})
    except EvaluationError:
        return
    n = a.shape[0]
    want = {"scalar": (), "column": (n,), "row": (n,), "matrix": (n, n)}[e.shape.kind]
    assert np.shape(v) == want
    if not exact:
        assert np.isfinite(np.asarray(v, dtype=np.float64)).all()
