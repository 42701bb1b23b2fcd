"""The exact dense evaluator: the meaning of MATLANG and the oracle for every other stage.

Values are 2-D numpy arrays of one of three kinds:

* ``int64`` while every entry is an integer and provably fits (bounds are checked before each
  operation, so nothing overflows silently);
* ``object`` holding Python ints and Fractions when a bound would overflow int64 or a division is
  not exact;
* ``float64`` once a non-polynomial function (exp, sqrt, ...) is applied, or when ``exact=False``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from matlang import ast, limits
from matlang.errors import EvaluationError, GraphError
from matlang.functions import (
    FLOAT_EXACT,
    exact_degree,
    mod_argument_bound,
    mod_refusal,
    numeric,
)
from matlang.graphs import Graph, as_graphs, is_one_graph, node_features

_SAFE = 2**62
# Exact values are refused beyond MAX_DIGITS decimal digits (say tr(A^10000)): the arithmetic
# would slow down and Python could not print them; float64 (exact=False) answers at once.
_MAX_EXACT_BITS = limits.MAX_DIGITS / math.log10(2)


@lru_cache(maxsize=512)
def _lowered(formula: Any, symbols: tuple[Any, ...], exact: bool) -> tuple[Any, int | None]:
    """The lowering of a formula and its degree when it is exactly computable (a polynomial, or
    with Mod: :func:`matlang.functions.exact_degree`; memoised: sympy is slow and the same
    function is applied on every graph)."""
    degree = exact_degree(formula, symbols)
    backend = "exact" if exact and degree is not None else "numpy"
    return numeric(formula, symbols, backend), degree


@lru_cache(maxsize=512)
def _mod_bound(formula: Any, symbols: tuple[Any, ...]) -> Any:
    """:func:`~matlang.functions.mod_argument_bound`, memoised as :func:`_lowered`."""
    return mod_argument_bound(formula, symbols)


def _maxabs(x: np.ndarray) -> int | float:
    if x.size == 0:
        return 0
    if x.dtype == object:
        return max(abs(v) for v in x.flat)
    return abs(x).max().item()


def _to_object(x: np.ndarray) -> np.ndarray:
    """Exact Python numbers (numpy turns int64 entries into Python ints here)."""
    return x if x.dtype == object else x.astype(object)


def _shrink(x: np.ndarray) -> np.ndarray:
    """Object arrays of Python ints that fit back into int64 become int64 again."""
    if x.dtype != object or x.size == 0:
        return x
    flat = x.ravel()
    if all(isinstance(v, int) or (isinstance(v, Fraction) and v.denominator == 1) for v in flat):
        ints = np.empty(x.shape, dtype=object)
        ints.ravel()[:] = [int(v) for v in flat]
        if _maxabs(ints) < _SAFE:
            return ints.astype(np.int64)
        return ints
    # a mixed array keeps its Fractions, but whole ones are written as ints (1, not 1/1)
    out = np.empty(x.shape, dtype=object)
    out.ravel()[:] = [int(v) if isinstance(v, Fraction) and v.denominator == 1 else v for v in flat]
    return out


def _float(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float64:
        return x
    try:
        return x.astype(np.float64)
    except OverflowError:
        digits = len(str(abs(int(_maxabs(x)))))
        raise EvaluationError(
            f"an exact value with {digits} digits does not fit in float64"
        ) from None


def _bits(x: np.ndarray) -> float:
    """log2 of the largest magnitude in ``x`` (0 for arrays of zeros and ones)."""
    m = _maxabs(x)
    if isinstance(m, Fraction):  # math.log2 would go through float and overflow
        m = int(m) + 1
    return math.log2(m) if m > 1 else 0.0


def _short_text(e: ast.Expr) -> str:
    from matlang.printer import to_text

    text = to_text(e, definitions=False)
    return text if len(text) <= 40 else text[:37] + "..."


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
            return _float(a) / _float(s)[0, 0]
        if a.dtype == np.int64 and s.dtype == np.int64 and not np.any(a % int(d)):
            return a // int(d)
        out = _to_object(a) * Fraction(1) / (d if isinstance(d, Fraction) else Fraction(int(d)))
        return _shrink(out)

    def power(self, m: np.ndarray, k: int) -> np.ndarray:
        if m.dtype != np.float64 and k > 1:
            # |(Mᵏ)_ij| ≤ ‖Mᵏ‖∞ ≤ ‖M‖∞ᵏ, the largest row sum of |M| (the degree for A) to the k
            norm = max((sum(abs(v) for v in row) for row in m), default=0)
            bits = math.log2(norm) * k if norm > 1 else 0.0
            self._check_size(bits, f"a power ^{k}")
        if k == 0:  # M⁰ = I
            return np.eye(m.shape[0], dtype=np.float64 if m.dtype == np.float64 else np.int64)
        # Square-and-multiply, starting from the first factor rather than from I @ M.
        result: np.ndarray | None = None
        base = m
        while k:
            if k & 1:
                result = base if result is None else self.matmul(result, base)
            k >>= 1
            if k:
                base = self.matmul(base, base)
        assert result is not None
        return result

    def _check_size(self, bits: float, what: str) -> None:
        if bits > _MAX_EXACT_BITS:
            raise EvaluationError(
                f"{what} would give exact numbers of about {int(bits * math.log10(2))} digits "
                f"on graph {self.graph.label()}, beyond {limits.named('MAX_DIGITS')}; evaluate "
                "with exact=False (--float) instead"
            )

    # -- evaluation ------------------------------------------------------------------------
    def __call__(self, e: ast.Expr) -> np.ndarray:
        key = id(e)
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        out = self._eval(e)
        if out.dtype == object:  # exact numbers past int64: bounded (products, sums, ...)
            self._check_size(_bits(out), _short_text(e))
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
            if v.denominator == 1 and abs(v) < _SAFE:
                return np.array([[int(v)]], dtype=np.int64)
            if v.denominator == 1:  # a literal beyond int64 (1e96) stays a Python int
                return _shrink(np.array([[int(v)]], dtype=object))
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
            entries = self(e.operand).reshape(-1)
            out = np.zeros((n, n), dtype=entries.dtype)
            out[np.arange(n), np.arange(n)] = entries
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
        # every literal argument is fixed before lowering (binom(x, 3) -> x(x-1)(x-2)/6)
        consts = {i: a.value for i, a in enumerate(e.args) if isinstance(a, ast.Number)}
        formula = fn.specialize(consts)
        syms = tuple(s for i, s in enumerate(fn.symbols) if i not in consts)
        args = [self(a) for i, a in enumerate(e.args) if i not in consts]
        shape = args[0].shape if args else (1, 1)
        exact = self.exact and all(a.dtype != np.float64 for a in args)
        f, degree = _lowered(formula, syms, exact)
        if exact and degree is not None:
            self._check_size(
                max((_bits(a) for a in args), default=0.0) * max(degree, 1), f"{fn.name}(...)"
            )
            objs = [_to_object(a) for a in args]
            out = f(*objs) if objs else f()
            if not isinstance(out, np.ndarray):
                full = np.empty(shape, dtype=object)
                full[...] = out
                out = full
            return _shrink(np.asarray(out, dtype=object).reshape(shape))
        with np.errstate(all="ignore"):
            fl = [_float(a) for a in args]
            self._check_mod(fn.name, _mod_bound(formula, syms), fl)
            if _mod_bound(formula, syms) is not None:  # nothing it came from rounded either
                from matlang.exactness import check_dense

                check_dense(
                    self._memo, fn.name, formula, syms,
                    [a for i, a in enumerate(e.args) if i not in consts], fl,
                    self.graph.label(), _MOD_ADVICE,
                )
            out = np.asarray(f(*fl) if fl else f(), dtype=np.float64)
            out = np.broadcast_to(out, shape).copy()
        if self.nonfinite == "error" and not np.isfinite(out).all():
            at = tuple(int(i) for i in np.argwhere(~np.isfinite(out))[0])
            variable = iter(fl)
            shown = ", ".join(
                str(e.args[i]) if i in consts else str(next(variable)[at])
                for i in range(len(e.args))
            )
            raise EvaluationError(
                f"{fn.name}({shown}) is {out[at]} at entry {at} on graph {self.graph.label()} "
                "(pass nonfinite='keep' to keep inf/nan)"
            )
        return out

    def _check_mod(self, name: str, bound: Any, args: list[np.ndarray]) -> None:
        """A ``Mod`` of a float past 2⁵³ is noise, not a rounding: refused (float inputs, or
        ``exact=False``), as the compiled stages refuse it."""
        if bound is None:
            return
        top = max((float(np.abs(a).max()) for a in args if a.size), default=0.0)
        if bound(top) >= FLOAT_EXACT:
            raise EvaluationError(mod_refusal(f"{name}(...)", top, self.graph.label(), _MOD_ADVICE))


_MOD_ADVICE = "evaluate with integer inputs and exact=True (the default) for the exact remainder"


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


def evaluate(
    expr: ast.Expr | str,
    graph: Any,
    *,
    exact: bool = True,
    inputs: Mapping[str, Any] | None = None,
    nonfinite: str = "error",
) -> Any:
    """The value of a sentence on a graph (or a list of values on a list of graphs).

    ``graph`` is anything :func:`matlang.graphs.as_graph` accepts (a Graph, an adjacency, a
    networkx graph, a PyG-like ``Data``, a built-in name, a graph6 string) for one value, or
    several graphs for a list of values: a list of these, a 3-D array (G, n, n), a ``.g6`` path
    or a PyG-like ``Batch`` (split by its own ``ptr``; see :func:`matlang.graphs.pyg_layout`).
    Scalars come back as Python ``int``/``Fraction`` when exact, else ``float``; vectors as 1-D
    and matrices as 2-D numpy arrays. Declared inputs (``input h``) come from ``inputs`` or, in
    declaration order, from the columns of the graph's node features.
    """
    from matlang.parser import as_expr, as_program

    program = as_program(expr)
    e = as_expr(program)  # the error that says how many sentences there are
    order = program.inputs
    # the one rule for what a batch is (matlang.graphs): a PyG Batch gives one value per graph
    graphs, single = as_graphs(graph), is_one_graph(graph)
    values = [
        evaluate_graph(e, g, exact=exact, inputs=inputs, nonfinite=nonfinite, input_order=order)
        for g in graphs
    ]
    return values[0] if single else values


def evaluate_graph(
    e: ast.Expr,
    g: Graph,
    *,
    exact: bool = True,
    inputs: Mapping[str, Any] | None = None,
    nonfinite: str = "error",
    input_order: Sequence[str] | None = None,
) -> Any:
    """The value of ``e`` on one graph. Declared inputs missing from ``inputs`` are read from
    the columns of ``g.x``: in ``input_order`` (a program's declaration order) when given, else
    in the order of first use in ``e`` (the order :func:`matlang.to_text` declares them)."""
    used = ast.inputs_of(e)
    names = [n for n in input_order if n in used] if input_order is not None else used
    given = dict(inputs or {})
    if names and g.x is not None:
        x = node_features(np.asarray(g.x))
        for i, name in enumerate(names):
            if name not in given and i < x.shape[1]:
                given[name] = x[:, i]
    ev = DenseEvaluator(g, exact=exact, inputs=given, nonfinite=nonfinite)
    with np.errstate(over="ignore", invalid="ignore"):
        value = ev(e)
    if nonfinite == "error" and value.dtype == np.float64 and not np.isfinite(value).all():
        raise EvaluationError(
            f"the value on graph {g.label()} is not finite (float64 overflow or 0·inf); "
            "pass nonfinite='keep' to keep inf/nan"
        )
    return _export(value, e.shape)


def evaluate_many(
    exprs: Sequence[ast.Expr], graphs: Sequence[Graph], **kwargs: Any
) -> list[list[Any]]:
    """values[i][j] = sentence i on graph j (each graph's subexpressions evaluated once per
    sentence)."""
    return [[evaluate_graph(e, g, **kwargs) for g in graphs] for e in exprs]


def to_json(v: Any) -> Any:
    """A value (or a record holding values) as plain JSON data: exact integers stay integers, an
    inexact Fraction becomes the string ``'p/q'``, numpy scalars and arrays become Python numbers
    and lists, tuples become lists, paths become strings. The project's one JSON encoder: result
    files, ``--json`` output and witnesses all go through it."""
    if isinstance(v, dict):
        return {k: to_json(x) for k, x in v.items()}
    if isinstance(v, np.ndarray):
        return [to_json(x) for x in (v.tolist() if v.dtype != object else list(v))]
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, Fraction):
        return int(v) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    return v


def format_value(v: Any) -> str:
    """A value as one line of text: JSON for vectors and matrices, ``p/q`` for fractions."""
    import json

    j = to_json(v)
    return json.dumps(j) if isinstance(j, list) else str(j)


def to_float(v: Any) -> Any:
    """A value with every exact number turned into float64 (for comparisons with tensors)."""
    if isinstance(v, np.ndarray):
        return v.astype(np.float64)
    return float(v)


__all__ = ["DenseEvaluator", "evaluate", "evaluate_graph", "evaluate_many", "to_float"]
