"""Number kinds, every path, one oracle: sentences drawn from a small grammar whose values mix
integers, rationals (``/2``, ``/3``), floats from functions (sigmoid, tanh, exp), weights that are
not integers, ``binom`` after a cancellation and huge/tiny literals inside ``let`` functions are
computed by

- the dense exact evaluator and the sparse one (``sparse=True``): an exact value must come back
  exact and equal, a float value as a float (never a Fraction) within a relative 1e-12;
- ``matlang.compile(..., dtype=float64)`` under each constant stage (``graphblas``, ``torch``,
  ``none``), ``SentenceReadout`` (graph-level sentences) and ``SentenceFeatures`` (node- and
  graph-level ones): within a relative 1e-9;

against an interpreter written here (Python Fractions and floats on dense object matrices)
that reads the generator's own tree, not the project's parser. A path may refuse with a project
error (counted); any other exception, or a wrong value, fails.

The default run is sampled (``EXAMPLES``); ``MATLANG_KINDS_SCALE=N`` runs N times as many, and
the ``slow`` test runs 20× with ``MATLANG_KINDS_REPORT`` (a JSON file) receiving the counts.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import matlang
from matlang.errors import MatlangError
from matlang.graphs import as_graph

SCALE = float(os.environ.get("MATLANG_KINDS_SCALE", "1"))
EXAMPLES = 8
REL_EXACT_PATHS = 1e-12
REL_FLOAT_PATHS = 1e-9
#: values compared / refused per path, wrong values, foreign exceptions
COUNTS: Counter[str] = Counter()

Number = Any  # int | Fraction | float


# --------------------------------------------------------------------------- the grammar


@dataclass(frozen=True)
class Node:
    """A sentence tree: ``kind`` ("matrix", "column", "scalar"), its text and its children."""

    op: str
    kind: str
    args: tuple[Any, ...] = ()

    def text(self) -> str:
        a = self.args
        op = self.op
        if op in ("A", "ones", "I"):
            return {"A": "A", "ones": "𝟏", "I": "I"}[op]
        if op == "mm":
            return f"({a[0].text()} {a[1].text()})"
        if op == "had":
            return f"({a[0].text()} ⊙ {a[1].text()})"
        if op in ("add", "sub"):
            return f"({a[0].text()} {'+' if op == 'add' else '-'} {a[1].text()})"
        if op == "div":
            return f"({a[0].text()} / {a[1]})"
        if op == "scale":
            return f"({a[1]} {a[0].text()})"
        if op == "fn":
            return f"{a[0]}({a[1].text()})"
        if op == "binom":
            return f"binom({a[0].text()}, 2)"
        if op == "diag":
            return f"diag({a[0].text()})"
        if op == "tr":
            return f"tr({a[0].text()})"
        if op == "sum":
            return f"(𝟏ᵀ {a[0].text()})"
        if op == "round_trip":  # lo(hi(x)): a huge then a tiny literal, inside let functions
            return f"lo(hi({a[0].text()}))"
        if op == "cancel":  # hi(x) - hi(x) + x
            return f"((hi({a[0].text()}) - hi({a[0].text()})) + {a[0].text()})"
        raise AssertionError(op)


LETS = "let hi(x) = x * 1e150; let lo(x) = x * 1e-150; "
FUNCTIONS = ("sigmoid", "tanh", "exp")


_A, _ONE = Node("A", "matrix"), Node("ones", "column")


def _matrix_atoms() -> list[Node]:
    """One matrix of each number kind: integer, rational, float from a function, a float
    weight (A itself on a weighted graph), huge/tiny literals that cancel."""
    return [
        _A,
        Node("I", "matrix"),
        Node("mm", "matrix", (_A, _A)),
        Node("div", "matrix", (_A, 2)),
        Node("div", "matrix", (_A, 3)),
        Node("fn", "matrix", ("sigmoid", _A)),
        Node("fn", "matrix", ("tanh", _A)),
        Node("fn", "matrix", ("exp", _A)),
        Node("round_trip", "matrix", (_A,)),
    ]


def _column_atoms() -> list[Node]:
    deg = Node("mm", "column", (_A, _ONE))
    return [
        _ONE,
        deg,
        Node("div", "column", (_ONE, 2)),
        Node("div", "column", (deg, 3)),
        Node("fn", "column", ("sigmoid", deg)),
        Node("fn", "column", ("tanh", _ONE)),
        Node("binom", "column", (deg,)),
        Node("binom", "column", (Node("cancel", "column", (deg,)),)),
        Node("round_trip", "column", (deg,)),
    ]


MATRIX_ATOMS, COLUMN_ATOMS = _matrix_atoms(), _column_atoms()


@st.composite
def matrices(draw: st.DrawFn, depth: int) -> Node:
    if depth <= 0:
        return draw(st.sampled_from(MATRIX_ATOMS))
    d = depth - 1
    k = draw(st.integers(0, 7))
    if k in (0, 1):  # products and Hadamard products of two kinds: the kernels' mixed cases
        op = "mm" if k == 0 else "had"
        return Node(op, "matrix", (draw(matrices(d)), draw(matrices(d))))
    if k == 2:
        op = draw(st.sampled_from(["add", "sub"]))
        return Node(op, "matrix", (draw(matrices(d)), draw(matrices(d))))
    if k == 3:
        return Node("div", "matrix", (draw(matrices(d)), draw(st.sampled_from([2, 3]))))
    if k == 4:
        return Node("scale", "matrix", (draw(matrices(d)), draw(st.sampled_from([2, 3]))))
    if k == 5:  # bounded functions (no overflow)
        return Node("fn", "matrix", (draw(st.sampled_from(("sigmoid", "tanh"))), draw(matrices(d))))
    if k == 6:
        return Node("diag", "matrix", (draw(columns(d)),))
    return Node("round_trip", "matrix", (draw(matrices(d)),))


@st.composite
def columns(draw: st.DrawFn, depth: int) -> Node:
    if depth <= 0:
        return draw(st.sampled_from(COLUMN_ATOMS))
    d = depth - 1
    k = draw(st.integers(0, 6))
    if k in (0, 1):
        return Node("mm", "column", (draw(matrices(d)), draw(columns(d))))
    if k == 2:
        return Node("had", "column", (draw(columns(d)), draw(columns(d))))
    if k == 3:
        return Node("div", "column", (draw(columns(d)), draw(st.sampled_from([2, 3]))))
    if k == 4:
        f = draw(st.sampled_from(("sigmoid", "tanh")))
        return Node("fn", "column", (f, draw(columns(d))))
    if k == 5:  # binom after a cancellation of huge values (exact: 0 + x)
        return Node("binom", "column", (Node("cancel", "column", (draw(columns(d)),)),))
    return Node("binom", "column", (draw(columns(d)),))


@st.composite
def sentences(draw: st.DrawFn) -> Node:
    depth = draw(st.integers(1, 2))
    k = draw(st.integers(0, 2))
    if k == 0:
        return draw(columns(depth))
    if k == 1:
        return Node("sum", "scalar", (draw(columns(depth)),))
    return Node("tr", "scalar", (draw(matrices(depth)),))


# --------------------------------------------------------------------------- the oracle


def _sigmoid(x: Number) -> float:
    x = float(x)
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


FN: dict[str, Callable[[Number], float]] = {
    "sigmoid": _sigmoid,
    "tanh": lambda x: math.tanh(float(x)),
    "exp": lambda x: math.exp(float(x)),
}
HI, LO = Fraction(10) ** 150, Fraction(1, 10**150)


def _scaled(x: Number, c: Fraction) -> Number:
    """x · c as the language does: exact for an exact x, a float for a float."""
    return x * c if not isinstance(x, float) else x * float(c)


def oracle(node: Node, a: np.ndarray) -> np.ndarray:
    """The value of ``node`` on the adjacency ``a`` (an object matrix of ints or floats), as an
    object array (matrices n×n, columns n, scalars 0-d)."""
    n = a.shape[0]
    op, args = node.op, node.args
    if op == "A":
        return a
    if op == "I":
        out = np.zeros((n, n), dtype=object)
        for i in range(n):
            out[i, i] = 1
        return out
    if op == "ones":
        return np.array([1] * n, dtype=object)
    if op == "mm":
        x, y = oracle(args[0], a), oracle(args[1], a)
        return _matmul(x, y)
    if op == "had":
        return _map2(lambda p, q: p * q, oracle(args[0], a), oracle(args[1], a))
    if op in ("add", "sub"):
        sign = 1 if op == "add" else -1
        return _map2(lambda p, q: p + sign * q, oracle(args[0], a), oracle(args[1], a))
    if op == "div":
        c = Fraction(1, args[1])
        return _map(lambda p: _scaled(p, c), oracle(args[0], a))
    if op == "scale":
        return _map(lambda p: _scaled(p, Fraction(args[1])), oracle(args[0], a))
    if op == "fn":
        return _map(FN[args[0]], oracle(args[1], a))
    if op == "binom":
        return _map(_binom2, oracle(args[0], a))
    if op == "diag":
        v = oracle(args[0], a)
        out = np.zeros((n, n), dtype=object)
        for i in range(n):
            out[i, i] = v[i]
        return out
    if op == "tr":
        m = oracle(args[0], a)
        return np.array(_sum(m[i, i] for i in range(n)), dtype=object)
    if op == "sum":
        return np.array(_sum(oracle(args[0], a)), dtype=object)
    if op == "round_trip":
        return _map(lambda p: _scaled(_scaled(p, HI), LO), oracle(args[0], a))
    if op == "cancel":
        x = oracle(args[0], a)
        big = _map(lambda p: _scaled(p, HI), x)
        return _map2(lambda p, q: p + q, _map2(lambda p, q: p - q, big, big), x)
    raise AssertionError(op)


def _binom2(p: Number) -> Number:
    return p * (p - 1) / 2 if isinstance(p, float) else Fraction(p) * (p - 1) / 2


def _sum(values: Any) -> Number:
    total: Number = 0
    for v in values:
        total = total + v
    return total


def _map(f: Callable[[Number], Number], x: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    out.flat[:] = [f(v) for v in x.flat]
    return out


def _map2(f: Callable[[Number, Number], Number], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    out = np.empty(x.shape, dtype=object)
    out.flat[:] = [f(p, q) for p, q in zip(x.flat, y.flat)]
    return out


def _matmul(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if y.ndim == 1:
        rows = [_sum(x[i, k] * y[k] for k in range(y.shape[0])) for i in range(x.shape[0])]
        return np.array(rows, dtype=object)
    n = x.shape[0]
    out = np.empty((n, n), dtype=object)
    for i in range(n):
        for j in range(n):
            out[i, j] = _sum(x[i, k] * y[k, j] for k in range(n))
    return out


# --------------------------------------------------------------------------- graphs


GRAPHS: dict[str, np.ndarray] = {
    "K3": np.ones((3, 3), dtype=int) - np.eye(3, dtype=int),
    "P4": np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0]]),
    "star3": np.array([[0, 1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]),
    "C5": np.array([[1 if (i - j) % 5 in (1, 4) else 0 for j in range(5)] for i in range(5)]),
    "P3 weighted 0.5, 1.5": np.array([[0, 0.5, 0], [0.5, 0, 1.5], [0, 1.5, 0]]),
    "K3 weighted 1/3, 2, 0.25": np.array(
        [[0, 1 / 3, 2.0], [1 / 3, 0, 0.25], [2.0, 0.25, 0]]
    ),
}


def _object(a: np.ndarray) -> np.ndarray:
    out = np.empty(a.shape, dtype=object)
    out.flat[:] = [float(v) if a.dtype.kind == "f" else int(v) for v in a.flat]
    return out


def _data(a: np.ndarray) -> Any:
    from torch_geometric.data import Data

    rows, cols = np.nonzero(a)
    ei = torch.from_numpy(np.stack([rows, cols]).astype(np.int64))
    d = Data(edge_index=ei, num_nodes=a.shape[0])
    if a.dtype.kind == "f":
        d.edge_weight = torch.tensor(a[rows, cols], dtype=torch.float64)
    return d


# --------------------------------------------------------------------------- comparing


def _flat(value: Any) -> list[Any]:
    if isinstance(value, torch.Tensor):
        return [float(v) for v in value.detach().reshape(-1).tolist()]
    if isinstance(value, np.ndarray):
        return [v.item() if isinstance(v, np.generic) else v for v in value.reshape(-1).tolist()]
    return [value]


def _exact(v: Any) -> bool:
    return isinstance(v, (int, Fraction)) and not isinstance(v, bool)


def _in_range(v: Number) -> bool:
    """Values a float64 path can hold without overflow or underflow (others are refused or
    rounded by design, not compared)."""
    f = abs(float(v))
    return f == 0 or 1e-290 < f < 1e290


def compare(path: str, got: Any, want: np.ndarray, *, exact_path: bool) -> None:
    got_flat, want_flat = _flat(got), _flat(want)
    assert len(got_flat) == len(want_flat), (path, got, want)
    for g, w in zip(got_flat, want_flat):
        if not _in_range(w):
            COUNTS[f"{path}: out of float64 range (not compared)"] += 1
            continue
        COUNTS[f"{path}: values compared"] += 1
        ok: bool
        if exact_path and _exact(w):
            ok = _exact(g) and g == w
        elif exact_path:
            ok = isinstance(g, float) and math.isclose(g, w, rel_tol=REL_EXACT_PATHS, abs_tol=1e-12)
        else:
            ok = math.isclose(float(g), float(w), rel_tol=REL_FLOAT_PATHS, abs_tol=1e-9)
        if not ok:
            COUNTS[f"{path}: wrong values"] += 1
            raise AssertionError(f"{path}: got {g!r}, want {w!r}")


@dataclass
class Case:
    tree: Node
    graph: str

    @property
    def text(self) -> str:
        return LETS + self.tree.text()


def _run(path: str, case: Case, fn: Callable[[], Any], want: np.ndarray, exact: bool) -> None:
    try:
        got = fn()
    except MatlangError as e:
        COUNTS[f"{path}: refused ({type(e).__name__})"] += 1
        return
    except Exception:
        COUNTS[f"{path}: foreign exceptions"] += 1
        raise
    compare(path, got, want, exact_path=exact)


def paths(case: Case, want: np.ndarray) -> Iterator[tuple[str, Callable[[], Any], bool]]:
    a = GRAPHS[case.graph]
    weighted = a.dtype.kind == "f"
    graph = as_graph(a, allow_weights=True) if weighted else as_graph(a)
    text = case.text
    yield "dense evaluator", lambda: matlang.evaluate(text, graph), True
    yield "sparse evaluator", lambda: matlang.evaluate(text, graph, sparse=True), True
    for stage in ("graphblas", "torch", "none"):

        def compiled(s: str = stage) -> Any:
            # a full support (sigmoid(A) in a product) is computed on all n² entries
            return _full_or_not(
                lambda dense: matlang.compile(text, dtype=torch.float64, constants=s, dense=dense)
            )([graph])

        yield f"compile constants={stage}", compiled, False
    data = _data(a)
    if case.tree.kind == "scalar":
        from matlang.nn import SentenceReadout

        def readout() -> Any:
            x = torch.zeros(a.shape[0], 1, dtype=torch.float64)
            layer = _full_or_not(lambda dense: SentenceReadout([text], dense=dense))
            return layer(x, data.edge_index, edge_weight=data.get("edge_weight"))

        yield "SentenceReadout", readout, False
    from matlang.transforms import SentenceFeatures

    def features() -> Any:
        out = SentenceFeatures([text], dtype=torch.float64)(data)
        return out.graph_features if case.tree.kind == "scalar" else out.x

    yield "SentenceFeatures", features, False


def _full_or_not(build: Callable[[bool], Any]) -> Any:
    """``build(False)``, or ``build(True)`` where the sentence's support is full."""
    from matlang.compiler.support import FullMaskError

    try:
        return build(False)
    except FullMaskError:
        return build(True)


def check(case: Case) -> None:
    COUNTS["sentences"] += 1
    want = oracle(case.tree, _object(GRAPHS[case.graph]))
    for path, fn, exact in paths(case, want):
        _run(path, case, fn, want, exact)


cases = st.builds(Case, sentences(), st.sampled_from(sorted(GRAPHS)))
SETTINGS = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@settings(SETTINGS, max_examples=int(EXAMPLES * SCALE))
@given(cases)
def test_every_path_agrees_with_the_oracle(case: Case) -> None:
    check(case)


@pytest.mark.slow
@settings(SETTINGS, max_examples=int(EXAMPLES * SCALE * 20))
@given(cases)
def test_every_path_agrees_with_the_oracle_long(case: Case) -> None:
    check(case)


@pytest.fixture(scope="module", autouse=True)
def _report() -> Iterator[None]:
    yield
    path = os.environ.get("MATLANG_KINDS_REPORT")
    if path:
        with open(path, "w") as f:
            json.dump(dict(sorted(COUNTS.items())), f, indent=1)


@pytest.mark.parametrize(
    "text, graph",
    [
        ("(A ⊙ (A/2)) sigmoid(𝟏)", "K3"),
        ("(tanh(A)) (𝟏/2)", "K3"),
        ("A (𝟏/2)", "P3 weighted 0.5, 1.5"),
        ("𝟏ᵀ binom(((hi(A 𝟏) - hi(A 𝟏)) + A 𝟏), 2)", "C5"),
    ],
)
def test_the_oracle_reads_the_reproducers(text: str, graph: str) -> None:
    """The oracle itself on the sentences that were wrong on the sparse path, by hand."""
    trees = {
        "(A ⊙ (A/2)) sigmoid(𝟏)": Node(
            "mm",
            "column",
            (
                Node("had", "matrix", (_A, Node("div", "matrix", (_A, 2)))),
                Node("fn", "column", ("sigmoid", Node("ones", "column"))),
            ),
        ),
        "(tanh(A)) (𝟏/2)": Node(
            "mm",
            "column",
            (Node("fn", "matrix", ("tanh", Node("A", "matrix"))),
             Node("div", "column", (Node("ones", "column"), 2))),
        ),
        "A (𝟏/2)": Node(
            "mm", "column", (_A, Node("div", "column", (_ONE, 2)))
        ),
        "𝟏ᵀ binom(((hi(A 𝟏) - hi(A 𝟏)) + A 𝟏), 2)": Node(
            "sum",
            "scalar",
            (Node("binom", "column", (Node("cancel", "column", (
                Node("mm", "column", (Node("A", "matrix"), Node("ones", "column"))),)),)),),
        ),
    }
    tree = trees[text]
    want = oracle(tree, _object(GRAPHS[graph]))
    hand = {
        "(A ⊙ (A/2)) sigmoid(𝟏)": [2 * 0.5 / (1 + math.exp(-1))] * 3,
        "(tanh(A)) (𝟏/2)": [math.tanh(1)] * 3,
        "A (𝟏/2)": [0.25, 1.0, 0.75],
        "𝟏ᵀ binom(((hi(A 𝟏) - hi(A 𝟏)) + A 𝟏), 2)": [5],
    }[text]
    assert [float(v) for v in _flat(want)] == pytest.approx(hand, rel=1e-15)
    check(Case(tree, graph))
