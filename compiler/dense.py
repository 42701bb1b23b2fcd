"""The exact dense evaluator: the meaning of MATLANG and the oracle for every other stage.

Values are 2-D numpy arrays of one of three kinds:

* ``int64`` while every entry is an integer and provably fits (bounds are checked before each
  operation, so nothing overflows silently);
* ``object`` holding Python ints and Fractions when a bound would overflow int64 or a division is
  not exact;
* ``float64`` once a non-polynomial function (exp, sqrt, ...) is applied, or when ``exact=False``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from matlang import ast
from matlang.errors import EvaluationError, GraphError
from matlang.functions import lower, polynomial_degree
from runtime.graphs import Graph, as_graph, as_graphs, read_graph6

_SAFE = 2**62


def _maxabs(x: np.ndarray) -> int | float:
    if x.size == 0:
        return 0
    if x.dtype == object:
        return max(abs(v) for v in x.flat)
    return abs(x).max().item()


def _to_object(x: np.ndarray) -> np.ndarray:
    if x.dtype == object:
        return x
    out = np.empty(x.shape, dtype=object)
    out[...] = [[int(v) for v in row] for row in x] if x.ndim == 2 else x.tolist()
    return out


def _shrink(x: np.ndarray) -> np.ndarray:
    """Object arrays of Python ints that fit back into int64 become int64 again."""
    if x.dtype != object or x.size == 0:
        return x
    if all(isinstance(v, int) or (isinstance(v, Fraction) and v.denominator == 1) for v in x.flat):
        ints = np.array([[int(v) for v in row] for row in x], dtype=object)
        if _maxabs(ints) < _SAFE:
            return ints.astype(np.int64)
        return ints
    return x


def _float(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64) if x.dtype != np.float64 else x


def _unify(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Both operands in one kind: 'float', 'object' or 'int'."""
    if a.dtype == np.float64 or b.dtype == np.float64:
        return _float(a), _float(b), "float"
    if a.dtype == object or b.dtype == object:
        return _to_object(a), _to_object(b), "object"
    return a, b, "int"


class DenseEvaluator:
    """Evaluates expressions on one graph; ``exact`` keeps integers and rationals exact."""

    def __init__(
        self,
        graph: Graph,
        *,
        exact: bool = True,
        inputs: Mapping[str, Any] | None = None,
        nonfinite: str = "error",
    ) -> None:
        self.graph = graph
        self.n = graph.num_nodes
        a = np.asarray(graph.adjacency)
        if not exact or not np.issubdtype(a.dtype, np.integer):
            a = a.astype(np.float64)
        else:
            a = a.astype(np.int64)
        self.exact = exact
        self.adjacency = a
        self.inputs = {k: self._vector(k, v) for k, v in (inputs or {}).items()}
        self.nonfinite = nonfinite
        self._memo: dict[int, np.ndarray] = {}

    def _vector(self, name: str, v: Any) -> np.ndarray:
        arr = np.asarray(v)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.shape != (self.n,):
            raise GraphError(
                f"input '{name}' must have one value per node ({self.n}), got shape {arr.shape}",
                self.graph.label(),
            )
        if np.issubdtype(arr.dtype, np.integer) and self.exact:
            return arr.astype(np.int64).reshape(-1, 1)
        return arr.astype(np.float64).reshape(-1, 1)

    # -- arithmetic with overflow checks ---------------------------------------------------
    def matmul(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b, kind = _unify(a, b)
        if kind == "int" and _maxabs(a) * _maxabs(b) * max(a.shape[1], 1) >= _SAFE:
            a, b, kind = _to_object(a), _to_object(b), "object"
        if kind == "object":
            return (
                _shrink(np.dot(a, b))
                if a.size and b.size
                else np.zeros((a.shape[0], b.shape[1]), dtype=np.int64)
            )
        return a @ b

    def scale(self, s: np.ndarray, x: np.ndarray) -> np.ndarray:
        s, x, kind = _unify(s, x)
        if kind == "int" and _maxabs(s) * _maxabs(x) >= _SAFE:
            s, x = _to_object(s), _to_object(x)
        return _shrink(s[0, 0] * x) if s.dtype == object else s[0, 0] * x

    def hadamard(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b, kind = _unify(a, b)
        if kind == "int" and _maxabs(a) * _maxabs(b) >= _SAFE:
            a, b, kind = _to_object(a), _to_object(b), "object"
        return _shrink(a * b) if kind == "object" else a * b

    def add(self, a: np.ndarray, b: np.ndarray, sign: int = 1) -> np.ndarray:
        a, b, kind = _unify(a, b)
        if kind == "int" and _maxabs(a) + _maxabs(b) >= _SAFE:
            a, b, kind = _to_object(a), _to_object(b), "object"
        out = a + b if sign > 0 else a - b
        return _shrink(out) if kind == "object" else out

    def divide(self, a: np.ndarray, s: np.ndarray) -> np.ndarray:
        d = s[0, 0]
        if (d == 0) if not isinstance(d, float) else d == 0.0:
            raise EvaluationError(f"division by zero on graph {self.graph.label()}")
        if a.dtype == np.float64 or s.dtype == np.float64:
            return _float(a) / float(d)
        if a.dtype == np.int64 and s.dtype == np.int64 and not np.any(a % int(d)):
            return a // int(d)
        out = _to_object(a) * Fraction(1) / (d if isinstance(d, Fraction) else Fraction(int(d)))
        return _shrink(out)

    def power(self, m: np.ndarray, k: int) -> np.ndarray:
        result = np.eye(m.shape[0], dtype=np.int64)
        if m.dtype == np.float64:
            result = result.astype(np.float64)
        base = m
        while k:
            if k & 1:
                result = self.matmul(result, base)
            k >>= 1
            if k:
                base = self.matmul(base, base)
        return result

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, e: ast.Expr) -> np.ndarray:
        key = id(e)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._eval(e)
        self._memo[key] = out
        return out

    def _eval(self, e: ast.Expr) -> np.ndarray:
        n = self.n
        if isinstance(e, ast.Input):
            if e.name == "A":
                return self.adjacency
            if e.name not in self.inputs:
                raise EvaluationError(
                    f"no value for input '{e.name}' on graph {self.graph.label()}: pass "
                    f"inputs={{'{e.name}': ...}} or give the graph node features"
                )
            return self.inputs[e.name]
        if isinstance(e, ast.Ones):
            return np.ones((n, 1), dtype=np.float64 if not self.exact else np.int64)
        if isinstance(e, ast.Number):
            v = e.value
            if not self.exact:
                return np.array([[float(v)]])
            if v.denominator == 1:
                return np.array([[int(v)]], dtype=np.int64)
            out = np.empty((1, 1), dtype=object)
            out[0, 0] = v
            return out
        if isinstance(e, ast.Mul):
            left, right = self(e.left), self(e.right)
            if e.is_scalar_product:
                return (
                    self.scale(left, right) if e.left.shape.is_scalar else self.scale(right, left)
                )
            return self.matmul(left, right)
        if isinstance(e, ast.Hadamard):
            return self.hadamard(self(e.left), self(e.right))
        if isinstance(e, ast.Add):
            return self.add(self(e.left), self(e.right))
        if isinstance(e, ast.Sub):
            return self.add(self(e.left), self(e.right), sign=-1)
        if isinstance(e, ast.Neg):
            x = self(e.operand)
            return -x
        if isinstance(e, ast.Div):
            return self.divide(self(e.left), self(e.right))
        if isinstance(e, ast.Transpose):
            return self(e.operand).T
        if isinstance(e, ast.Power):
            return self.power(self(e.base), e.exponent)
        if isinstance(e, ast.Diag):
            v = self(e.operand).reshape(-1)
            out = np.zeros((n, n), dtype=v.dtype)
            out[np.arange(n), np.arange(n)] = v
            return out
        if isinstance(e, ast.Trace):
            m = self(e.operand)
            d = np.diagonal(m)
            if m.dtype == object:
                return _shrink(np.array([[sum(d, 0)]], dtype=object))
            if m.dtype == np.int64 and _maxabs(m) * max(n, 1) >= _SAFE:
                return _shrink(np.array([[sum(int(v) for v in d)]], dtype=object))
            return np.array([[d.sum()]], dtype=m.dtype)
        if isinstance(e, ast.Apply):
            return self.apply(e)
        raise TypeError(f"no dense meaning for {type(e).__name__}")  # pragma: no cover

    def apply(self, e: ast.Apply) -> np.ndarray:
        fn = e.function
        consts = e.constants
        formula = fn.specialize(consts)
        syms = [s for i, s in enumerate(fn.symbols) if i not in consts]
        args = [self(a) for i, a in enumerate(e.args) if i not in consts]
        shape = args[0].shape if args else (1, 1)
        exact = self.exact and all(a.dtype != np.float64 for a in args)
        if exact and polynomial_degree(formula, syms) is not None:
            f = lower(formula, syms, "exact")
            objs = [_to_object(a) for a in args]
            out = f(*objs) if objs else np.full(shape, f(), dtype=object)
            out = np.asarray(out, dtype=object).reshape(shape)
            return _shrink(out)
        f = lower(formula, syms, "numpy")
        with np.errstate(all="ignore"):
            fl = [_float(a) for a in args]
            out = np.asarray(f(*fl) if fl else f(), dtype=np.float64)
            out = np.broadcast_to(out, shape).copy()
        if self.nonfinite == "error" and not np.isfinite(out).all():
            bad = np.argwhere(~np.isfinite(out))[0]
            vals = ", ".join(str(a[tuple(bad)]) for a in fl)
            raise EvaluationError(
                f"{fn.name}({vals}) is {out[tuple(bad)]} at entry {tuple(int(i) for i in bad)} on "
                f"graph {self.graph.label()} (pass nonfinite='keep' to keep inf/nan)"
            )
        return out


def _export(x: np.ndarray, shape: ast.Shape) -> Any:
    """Scalars as Python numbers; vectors 1-D; matrices 2-D."""
    if shape.is_scalar:
        v = x[0, 0]
        if isinstance(v, (int, Fraction)):
            return v
        if isinstance(v, np.integer):
            return int(v)
        return float(v)
    if shape.is_vector:
        return x.reshape(-1)
    return x


def _graphs_of(graph: Any) -> tuple[list[Graph], bool]:
    """The graphs to evaluate on and whether the caller gave a single graph."""
    if isinstance(graph, str) and graph.endswith(".g6"):
        return read_graph6(graph), False
    if isinstance(graph, (list, tuple)) or (
        hasattr(graph, "__iter__")
        and not isinstance(graph, (str, np.ndarray, Graph))
        and not hasattr(graph, "nodes")
        and not hasattr(graph, "edge_index")
        and not hasattr(graph, "toarray")
    ):
        return as_graphs(graph), False
    return [as_graph(graph)], True


def evaluate(
    expr: ast.Expr | str,
    graph: Any,
    *,
    exact: bool = True,
    inputs: Mapping[str, Any] | None = None,
    nonfinite: str = "error",
) -> Any:
    """The value of a sentence on a graph (or a list of values on a list of graphs).

    ``graph`` is anything :func:`runtime.graphs.as_graph` accepts (a Graph, an adjacency, a
    networkx graph, a PyG-like object, a built-in name, a graph6 string), a ``.g6`` path, or a
    list of these. Scalars come back as Python ``int``/``Fraction`` when exact, else ``float``;
    vectors as 1-D and matrices as 2-D numpy arrays. Declared inputs (``input h``) come from
    ``inputs`` or, in declaration order, from the columns of the graph's node features.
    """
    from matlang.parser import parse

    e = parse(expr) if isinstance(expr, str) else expr
    graphs, single = _graphs_of(graph)
    values = [evaluate_graph(e, g, exact=exact, inputs=inputs, nonfinite=nonfinite) for g in graphs]
    return values[0] if single else values


def evaluate_graph(
    e: ast.Expr,
    g: Graph,
    *,
    exact: bool = True,
    inputs: Mapping[str, Any] | None = None,
    nonfinite: str = "error",
) -> Any:
    names = ast.inputs_of(e)
    given = dict(inputs or {})
    if names and g.x is not None:
        x = np.asarray(g.x).reshape(g.num_nodes, -1)
        for i, name in enumerate(names):
            if name not in given and i < x.shape[1]:
                given[name] = x[:, i]
    ev = DenseEvaluator(g, exact=exact, inputs=given, nonfinite=nonfinite)
    return _export(ev(e), e.shape)


def evaluate_many(
    exprs: Sequence[ast.Expr], graphs: Sequence[Graph], **kwargs: Any
) -> list[list[Any]]:
    """values[i][j] = sentence i on graph j (each graph's subexpressions evaluated once per
    sentence)."""
    return [[evaluate_graph(e, g, **kwargs) for g in graphs] for e in exprs]


def to_float(v: Any) -> Any:
    """A value with every exact number turned into float64 (for comparisons with tensors)."""
    if isinstance(v, np.ndarray):
        return v.astype(np.float64)
    return float(v)


__all__ = ["DenseEvaluator", "evaluate", "evaluate_graph", "evaluate_many", "to_float"]
