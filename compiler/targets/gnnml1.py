r"""The GNNML1 target: Theorem 6 of the paper made constructive.

For a sentence of ``ML(L1)`` (·, ᵀ, 𝟏, diag, +, −, scalar ×, / — and pointwise functions that
are polynomials, which expand into ⊙ and +), :func:`gnnml1_target` builds the weights of a stack
of the paper's GNNML1 layers (Eq. 3, identity σ, no bias)

.. math::
    H^{(l+1)} = H^{(l)} W^{(l,1)} + A H^{(l)} W^{(l,2)}
        + (H^{(l)} W^{(l,3)}) \odot (H^{(l)} W^{(l,4)})

on ``H^{(0)} = [𝟏 | declared input vectors]``, followed by the sum readout ``𝟏ᵀH`` (graph-level
sentences) and a *readout head*, such that the result equals the sentence on every graph.

How (the stages of this module, top to bottom):

1. **Lowering** pushes every matrix onto the vector it multiplies — ``A v`` stays ``A v``,
   ``diag(u) v = u ⊙ v``, ``(M N) v = M (N v)``, ``Mᵀ v`` by transposing structurally (A is
   symmetric), ``(u wᵀ) v = u (wᵀ v)`` — giving a DAG of *vector nodes* {𝟏, input, A·L, L ⊙ L'}
   over linear combinations ``L`` of nodes. Graph scalars are polynomials in *scalar atoms*
   (``𝟏ᵀ x`` readouts, inverses, functions of scalars); a node vector is ``Σ_m m · L_m`` over
   monomials ``m`` of scalar atoms (``m = 1`` for everything a GNNML1 stack computes by itself).
2. **Scheduling** gives each node a depth (``1 +`` the deepest node it reads) and keeps each
   node as a channel from the layer that computes it to the last layer that reads it.
3. **Weights**: a carried channel is a 1 in ``W1``; ``A·L`` puts ``L``'s coefficients in a column
   of ``W2``; ``L ⊙ L'`` puts them in the same column of ``W3`` and ``W4``.

The readout head (a decision, documented): sum readout gives each graph the readouts ``𝟏ᵀh``
of the last layer's channels. When the sentence is *linear* in those readouts (every sentence
whose scalars are only numbers: the common case) the head is an affine map, i.e. the paper's
readout followed by a linear layer. Products and quotients of graph scalars, e.g.
``(𝟏ᵀA𝟏)²`` or ``(𝟏ᵀA𝟏)·A𝟏``, are beyond sum readout of GNNML1 alone; the head then computes
them exactly as an explicit arithmetic circuit over the readouts (``GNNML1Target.head_is_linear``
says which case holds). ``gnnml1_target(e, nonlinear_head=False)`` refuses such sentences with a
:class:`~matlang.errors.CompileError` naming the subexpression instead.

The lowering, the scheduler and the head are shared with :mod:`compiler.targets.gnnml3`, which adds
traces, ⊙ of matrices and non-polynomial functions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

import sympy as sp
import torch
from torch import Tensor, nn

from matlang import ast
from matlang.errors import CompileError, EvaluationError
from matlang.functions import numeric, polynomial_degree
from runtime import sparse
from runtime.batch import Batch, as_batch
from runtime.models.gnnml1 import GNNML1Conv

Mono = tuple[int, ...]  # a product of scalar atoms (sorted ids, repeats allowed); () is 1
Lin = dict[int, Fraction]  # Σ c_i · node_i over vector nodes
LinKey = tuple[tuple[int, Fraction], ...]
Poly = dict[Mono, Fraction]  # a graph scalar: Σ c_m · m over monomials of scalar atoms
PolyKey = tuple[tuple[Mono, Fraction], ...]
Vec = dict[Mono, Lin]  # a node vector: Σ_m m · L_m (m a graph scalar, broadcast to nodes)
Kind = Literal["graph", "node"]

ONE: Mono = ()


# --------------------------------------------------------------------------- the DAG


@dataclass(frozen=True)
class VectorNode:
    """A node vector: ``ones`` (𝟏), ``input`` (a declared vector), ``prop`` (``C·L`` for the
    support named ``name``; ``A`` in GNNML1), ``had`` (``L ⊙ L'``) or ``fn`` (``f(L)``)."""

    op: str
    args: tuple[LinKey, ...] = ()
    name: str = ""
    function: tuple[sp.Expr, sp.Symbol] | None = None


@dataclass(frozen=True)
class ScalarNode:
    """A graph-scalar atom: ``read`` (``𝟏ᵀ node``), ``inv`` (``1/p``) or ``fn`` (``f(p, ...)``)."""

    op: str
    vector: int = -1
    args: tuple[PolyKey, ...] = ()
    function: tuple[sp.Expr, tuple[sp.Symbol, ...]] | None = None
    text: str = field(default="", compare=False)


@dataclass(frozen=True)
class Program:
    """A lowered sentence: the vector DAG, the scalar atoms, and the output.

    ``kind == "graph"``: the value is the polynomial ``graph_value`` of scalar atoms; ``"node"``:
    the vector ``node_value``. ``supports`` maps each support name used by ``prop`` nodes to its
    matrix expression (``{"A": A}`` for GNNML1). Node ids are topological (children first).
    """

    expr: ast.Expr
    kind: Kind
    vectors: tuple[VectorNode, ...]
    scalars: tuple[ScalarNode, ...]
    supports: Mapping[str, ast.Expr]
    inputs: tuple[str, ...]
    graph_value: Poly
    node_value: Vec

    @property
    def ones(self) -> int:
        return 0  # the lowering creates 𝟏 first

    def input_nodes(self) -> list[int]:
        """The nodes of the declared inputs, in the order of :attr:`inputs`."""
        where = {v.name: i for i, v in enumerate(self.vectors) if v.op == "input"}
        return [where[name] for name in self.inputs if name in where]

    def output_nodes(self) -> list[int]:
        """The vector nodes the output reads: node-level terms and every ``read`` atom."""
        out: set[int] = set()
        for lin in self.node_value.values():
            out.update(lin)
        for a in self.reachable_atoms():
            if self.scalars[a].op == "read":
                out.add(self.scalars[a].vector)
        return sorted(out)

    def reachable_atoms(self) -> list[int]:
        """Scalar atoms the output depends on (through monomials, inverses, function args)."""
        seen: set[int] = set()
        todo = [a for m in self.graph_value for a in m]
        todo += [a for m in self.node_value for a in m]
        while todo:
            a = todo.pop()
            if a in seen:
                continue
            seen.add(a)
            for p in self.scalars[a].args:
                todo.extend(x for m, _ in p for x in m)
        return sorted(seen)

    @property
    def head_is_linear(self) -> bool:
        """True when the output is affine in readouts (graph) or free of graph scalars (node)."""
        if self.kind == "node":
            return all(m == ONE for m in self.node_value)
        return all(
            len(m) == 0 or (len(m) == 1 and self.scalars[m[0]].op == "read")
            for m in self.graph_value
        )

    def describe(self) -> list[str]:
        """One line per vector node and scalar atom, e.g. ``h3 = A·(h1)``."""
        lines = []
        for i, v in enumerate(self.vectors):
            lines.append(f"h{i} = {_node_text(v)}")
        for i, s in enumerate(self.scalars):
            if s.op == "read":
                lines.append(f"s{i} = 𝟏ᵀh{s.vector}")
            elif s.op == "inv":
                lines.append(f"s{i} = 1/({_poly_text(dict(s.args[0]))})")
            else:
                assert s.function is not None
                args = ", ".join(_poly_text(dict(a)) for a in s.args)
                lines.append(f"s{i} = ({s.function[0]})({args})")
        if self.kind == "graph":
            lines.append(f"out = {_poly_text(self.graph_value)}")
        else:
            terms = [
                f"{_mono_text(m)}·({_lin_text(dict(lin_key(lin)))})"
                for m, lin in self.node_value.items()
            ]
            lines.append("out = " + (" + ".join(terms) if terms else "0"))
        return lines


def _frac_text(c: Fraction) -> str:
    return str(c.numerator) if c.denominator == 1 else f"{c.numerator}/{c.denominator}"


def _lin_text(lin: Lin) -> str:
    parts = [(f"h{k}" if c == 1 else f"{_frac_text(c)}·h{k}") for k, c in sorted(lin.items())]
    return " + ".join(parts) if parts else "0"


def _mono_text(m: Mono) -> str:
    return "·".join(f"s{a}" for a in m) if m else "1"


def _poly_text(p: Poly) -> str:
    parts = []
    for m, c in sorted(p.items()):
        if not m:
            parts.append(_frac_text(c))
        else:
            parts.append(_mono_text(m) if c == 1 else f"{_frac_text(c)}·{_mono_text(m)}")
    return " + ".join(parts) if parts else "0"


def _node_text(v: VectorNode) -> str:
    if v.op == "ones":
        return "𝟏"
    if v.op == "input":
        return v.name
    if v.op == "prop":
        return f"{v.name}·({_lin_text(dict(v.args[0]))})"
    if v.op == "had":
        return f"({_lin_text(dict(v.args[0]))}) ⊙ ({_lin_text(dict(v.args[1]))})"
    assert v.function is not None
    return f"[{v.function[1]} ↦ {v.function[0]}]({_lin_text(dict(v.args[0]))})"


def lin_key(lin: Lin) -> LinKey:
    return tuple(sorted((k, c) for k, c in lin.items() if c != 0))


def poly_key(p: Poly) -> PolyKey:
    return tuple(sorted((m, c) for m, c in p.items() if c != 0))


def _frac(value: Any) -> Fraction:
    """A sympy Rational (or int) as a Fraction."""
    r = sp.Rational(value)
    return Fraction(int(r.p), int(r.q))


# --------------------------------------------------------------------------- linear algebra
# Exact arithmetic on Lin / Poly / Vec; zero coefficients are dropped everywhere.


def lin_add(a: Lin, b: Lin, c: Fraction = Fraction(1)) -> Lin:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, Fraction(0)) + c * v
    return {k: v for k, v in out.items() if v != 0}


def lin_scale(a: Lin, c: Fraction) -> Lin:
    return {k: v * c for k, v in a.items()} if c != 0 else {}


def poly_add(a: Poly, b: Poly, c: Fraction = Fraction(1)) -> Poly:
    out = dict(a)
    for m, v in b.items():
        out[m] = out.get(m, Fraction(0)) + c * v
    return {m: v for m, v in out.items() if v != 0}


def mono_mul(a: Mono, b: Mono) -> Mono:
    return tuple(sorted(a + b))


def poly_mul(a: Poly, b: Poly) -> Poly:
    out: Poly = {}
    for ma, ca in a.items():
        for mb, cb in b.items():
            m = mono_mul(ma, mb)
            out[m] = out.get(m, Fraction(0)) + ca * cb
    return {m: v for m, v in out.items() if v != 0}


def poly_const(p: Poly) -> Fraction | None:
    """The value of a constant polynomial, else None."""
    if all(m == ONE for m in p):
        return p.get(ONE, Fraction(0))
    return None


def vec_add(a: Vec, b: Vec, c: Fraction = Fraction(1)) -> Vec:
    out = dict(a)
    for m, lin in b.items():
        out[m] = lin_add(out.get(m, {}), lin, c)
    return {m: lin for m, lin in out.items() if lin}


def vec_scale(v: Vec, p: Poly) -> Vec:
    """``p · v`` for a graph scalar ``p`` (``(s u) ⊙ w = s (u ⊙ w)``, ``A (s u) = s A u``)."""
    out: Vec = {}
    for m, lin in v.items():
        for mp, c in p.items():
            k = mono_mul(m, mp)
            out[k] = lin_add(out.get(k, {}), lin, c)
    return {m: lin for m, lin in out.items() if lin}


# --------------------------------------------------------------------------- lowering


def where(e: ast.Expr) -> str:
    from matlang.printer import to_text

    text = to_text(e, definitions=False)
    at = f" at {e.span.line}:{e.span.col}" if e.span is not None else ""
    return f"`{text}`{at}"


class Lowering:
    """Sentence → :class:`Program` for GNNML1 (the fragment L1 with polynomial functions).

    :mod:`compiler.targets.gnnml3` subclasses it and overrides the hooks that L1 refuses: ⊙ of
    matrices (:meth:`hadamard_matrix`), functions of matrices (:meth:`function_matrix`),
    traces (:meth:`trace`) and non-polynomial functions (:meth:`nonpolynomial`).
    """

    target = "GNNML1"
    hint = "compile it with compiler.targets.gnnml3_target (GNNML3 realises L2/L3 and functions)"

    def __init__(self, expr: ast.Expr, *, nonlinear_head: bool = True) -> None:
        self.expr = expr
        self.nonlinear_head = nonlinear_head
        self.vectors: list[VectorNode] = []
        self._vindex: dict[VectorNode, int] = {}
        self.scalars: list[ScalarNode] = []
        self._sindex: dict[ScalarNode, int] = {}
        self.supports: dict[str, ast.Expr] = {}
        self.inputs = tuple(ast.inputs_of(expr))
        self.ones = self.vnode(VectorNode("ones"))
        # by id (fast) with the expression kept alive, so that an id is never reused while the
        # memo holds it (rules build temporary expressions)
        self._memo: dict[tuple[int, str], tuple[ast.Expr, Any]] = {}

    # -- building blocks --------------------------------------------------------------------
    def fail(self, e: ast.Expr, why: str, hint: str | None = None) -> CompileError:
        msg = f"no {self.target} target for {where(e)}: {why}"
        return CompileError(msg + (f"\n  hint: {hint}" if hint else ""))

    def vnode(self, node: VectorNode) -> int:
        hit = self._vindex.get(node)
        if hit is None:
            hit = self._vindex[node] = len(self.vectors)
            self.vectors.append(node)
        return hit

    def snode(self, node: ScalarNode) -> int:
        hit = self._sindex.get(node)
        if hit is None:
            hit = self._sindex[node] = len(self.scalars)
            self.scalars.append(node)
        return hit

    def prop_lin(self, support: str, lin: Lin) -> Lin:
        """``C · L`` as one node (coefficient of a single term pulled out: ``C (c x) = c C x``)."""
        if not lin:
            return {}
        c = Fraction(1)
        if len(lin) == 1:
            ((k, c),) = lin.items()
            lin = {k: Fraction(1)}
        return {self.vnode(VectorNode("prop", (lin_key(lin),), support)): c}

    def had_lin(self, a: Lin, b: Lin) -> Lin:
        """``L ⊙ L'`` as one node (``𝟏 ⊙ x = x``; single-term coefficients pulled out)."""
        if not a or not b:
            return {}
        c = Fraction(1)
        if len(a) == 1:
            ((k, ca),) = a.items()
            c, a = c * ca, {k: Fraction(1)}
        if len(b) == 1:
            ((k, cb),) = b.items()
            c, b = c * cb, {k: Fraction(1)}
        if a == {self.ones: 1}:
            return lin_scale(b, c)
        if b == {self.ones: 1}:
            return lin_scale(a, c)
        ka, kb = sorted((lin_key(a), lin_key(b)))
        return {self.vnode(VectorNode("had", (ka, kb))): c}

    def prop(self, support: str, v: Vec) -> Vec:
        out: Vec = {}
        for m, lin in v.items():
            out = vec_add(out, {m: self.prop_lin(support, lin)})
        return out

    def had(self, a: Vec, b: Vec) -> Vec:
        out: Vec = {}
        for ma, la in a.items():
            for mb, lb in b.items():
                out = vec_add(out, {mono_mul(ma, mb): self.had_lin(la, lb)})
        return out

    def readout(self, v: Vec) -> Poly:
        """``𝟏ᵀ v``: by linearity a sum of readouts of single nodes."""
        out: Poly = {}
        for m, lin in v.items():
            for k, c in lin.items():
                atom = self.snode(ScalarNode("read", vector=k))
                out = poly_add(out, {mono_mul(m, (atom,)): c})
        return out

    def nonlinear(self, e: ast.Expr, what: str) -> None:
        """The sentence needs ``what`` (beyond sum readout and a linear layer) at ``e``."""
        if not self.nonlinear_head:
            raise self.fail(
                e,
                f"{what} needs a readout head beyond sum readout and a linear layer",
                "pass nonlinear_head=True to compute it exactly in the readout head",
            )

    def times(self, e: ast.Expr, p: Poly, q: Poly) -> Poly:
        if poly_const(p) is None and poly_const(q) is None:
            self.nonlinear(e, "a product of graph-level scalars")
        return poly_mul(p, q)

    def scale(self, e: ast.Expr, v: Vec, p: Poly) -> Vec:
        if poly_const(p) is None and v:
            self.nonlinear(e, "a node vector scaled by a graph-level scalar")
        return vec_scale(v, p)

    def inverse(self, e: ast.Expr, p: Poly) -> Poly:
        c = poly_const(p)
        if c is not None:
            if c == 0:
                raise self.fail(e, "division by zero")
            return {ONE: 1 / c}
        self.nonlinear(e, "a quotient by a graph-level scalar")
        atom = self.snode(ScalarNode("inv", args=(poly_key(p),), text=where(e)))
        return {(atom,): Fraction(1)}

    # -- the sentence -------------------------------------------------------------------------
    def program(self) -> Program:
        e = self.expr
        if e.shape.is_scalar:
            gv, nv, kind = self.scalar(e), {}, "graph"
        elif e.shape.is_vector:
            gv, nv, kind = {}, self.vector(e), "node"
        else:
            raise self.fail(e, "a matrix-valued sentence has no graph- or node-level value")
        return Program(
            e,
            kind,  # type: ignore[arg-type]
            tuple(self.vectors),
            tuple(self.scalars),
            dict(self.supports),
            self.inputs,
            gv,
            nv,
        )

    def _cached(self, e: ast.Expr, tag: str, fn: Callable[[], Any]) -> Any:
        key = (id(e), tag)
        if key not in self._memo:
            self._memo[key] = (e, fn())
        return self._memo[key][1]

    def vector(self, e: ast.Expr) -> Vec:
        """A column — or a row, as the column it transposes — as a node vector."""
        return self._cached(e, "vector", lambda: self._vector(e))  # type: ignore[no-any-return]

    def scalar(self, e: ast.Expr) -> Poly:
        """A 1×1 expression as a graph scalar."""
        return self._cached(e, "scalar", lambda: self._scalar(e))  # type: ignore[no-any-return]

    def _vector(self, e: ast.Expr) -> Vec:
        if isinstance(e, ast.Ones):
            return {ONE: {self.ones: Fraction(1)}}
        if isinstance(e, ast.Input) and e.shape.is_vector:
            return {ONE: {self.vnode(VectorNode("input", name=e.name)): Fraction(1)}}
        if isinstance(e, ast.Transpose):
            return self.vector(e.operand)  # the column form of vᵀ is v
        if isinstance(e, ast.Mul):
            left, right = e.left, e.right
            if left.shape.is_scalar:
                return self.scale(e, self.vector(right), self.scalar(left))
            if right.shape.is_scalar:
                return self.scale(e, self.vector(left), self.scalar(right))
            if left.shape.is_matrix:  # M v
                return self.apply(left, self.vector(right), transposed=False)
            return self.apply(right, self.vector(left), transposed=True)  # (r M)ᵀ = Mᵀ rᵀ
        if isinstance(e, ast.Hadamard):
            return self.had(self.vector(e.left), self.vector(e.right))
        if isinstance(e, ast.Add):
            return vec_add(self.vector(e.left), self.vector(e.right))
        if isinstance(e, ast.Sub):
            return vec_add(self.vector(e.left), self.vector(e.right), Fraction(-1))
        if isinstance(e, ast.Neg):
            return vec_add({}, self.vector(e.operand), Fraction(-1))
        if isinstance(e, ast.Div):
            return self.scale(e, self.vector(e.left), self.inverse(e, self.scalar(e.right)))
        if isinstance(e, ast.Apply):
            return self.function(e, [self.vector(a) for a in e.variable_args])  # type: ignore[return-value]
        raise self.fail(e, f"unexpected {type(e).__name__} of shape {e.shape}")

    def _scalar(self, e: ast.Expr) -> Poly:
        if isinstance(e, ast.Number):
            return {ONE: e.value} if e.value != 0 else {}
        if isinstance(e, ast.Transpose):
            return self.scalar(e.operand)
        if isinstance(e, ast.Mul):
            left, right = e.left, e.right
            if left.shape.is_scalar and right.shape.is_scalar:
                return self.times(e, self.scalar(left), self.scalar(right))
            # rᵀ c = 𝟏ᵀ (r ⊙ c): the inner product is a readout
            return self.readout(self.had(self.vector(left), self.vector(right)))
        if isinstance(e, ast.Hadamard):
            return self.times(e, self.scalar(e.left), self.scalar(e.right))
        if isinstance(e, ast.Add):
            return poly_add(self.scalar(e.left), self.scalar(e.right))
        if isinstance(e, ast.Sub):
            return poly_add(self.scalar(e.left), self.scalar(e.right), Fraction(-1))
        if isinstance(e, ast.Neg):
            return poly_add({}, self.scalar(e.operand), Fraction(-1))
        if isinstance(e, ast.Div):
            return self.times(e, self.scalar(e.left), self.inverse(e, self.scalar(e.right)))
        if isinstance(e, ast.Power):
            base = self.scalar(e.base)
            out: Poly = {ONE: Fraction(1)}
            for _ in range(e.exponent):
                out = self.times(e, out, base)
            return out
        if isinstance(e, ast.Trace):
            return self.trace(e)
        if isinstance(e, ast.Apply):
            return self.function(e, [self.scalar(a) for a in e.variable_args])  # type: ignore[return-value]
        raise self.fail(e, f"unexpected {type(e).__name__} of shape {e.shape}")

    def apply(self, m: ast.Expr, v: Vec, transposed: bool) -> Vec:
        """``M v`` (or ``Mᵀ v``) without forming ``M``."""
        if isinstance(m, ast.Input):
            if m.name != "A":
                raise self.fail(m, f"unknown matrix input {m.name!r}")
            self.supports["A"] = m
            return self.prop("A", v)  # A is symmetric: Aᵀ v = A v
        if isinstance(m, ast.Diag):
            return self.had(self.vector(m.operand), v)  # diag(u) v = u ⊙ v
        if isinstance(m, ast.Mul):
            left, right = m.left, m.right
            if left.shape.is_scalar:
                return self.scale(m, self.apply(right, v, transposed), self.scalar(left))
            if right.shape.is_scalar:
                return self.scale(m, self.apply(left, v, transposed), self.scalar(right))
            if left.shape.is_vector:  # (u wᵀ) v = u (wᵀ v); (u wᵀ)ᵀ v = w (uᵀ v)
                u, w = self.vector(left), self.vector(right)
                if transposed:
                    u, w = w, u
                return self.scale(m, u, self.readout(self.had(w, v)))
            if transposed:  # (M N)ᵀ v = Nᵀ (Mᵀ v)
                return self.apply(right, self.apply(left, v, True), True)
            return self.apply(left, self.apply(right, v, False), False)
        if isinstance(m, ast.Add):
            return vec_add(self.apply(m.left, v, transposed), self.apply(m.right, v, transposed))
        if isinstance(m, ast.Sub):
            return vec_add(
                self.apply(m.left, v, transposed),
                self.apply(m.right, v, transposed),
                Fraction(-1),
            )
        if isinstance(m, ast.Neg):
            return vec_add({}, self.apply(m.operand, v, transposed), Fraction(-1))
        if isinstance(m, ast.Div):
            inv = self.inverse(m, self.scalar(m.right))
            return self.scale(m, self.apply(m.left, v, transposed), inv)
        if isinstance(m, ast.Transpose):
            return self.apply(m.operand, v, not transposed)
        if isinstance(m, ast.Power):
            for _ in range(m.exponent):  # M^k v = M (M^{k-1} v); M^0 = I
                v = self.apply(m.base, v, transposed)
            return v
        if isinstance(m, ast.Hadamard):
            return self.hadamard_matrix(m, v, transposed)
        if isinstance(m, ast.Apply):
            return self.function_matrix(m, v, transposed)
        raise self.fail(m, f"unexpected {type(m).__name__} of shape {m.shape}")

    # -- pointwise functions ------------------------------------------------------------------
    def function(
        self, e: ast.Apply, args: Sequence[Vec | Poly], vector: bool | None = None
    ) -> Vec | Poly:
        """``f(args)`` of vectors (``vector``; default: by ``e``'s shape) or graph scalars: a
        polynomial expands into ⊙ (vectors) or products (scalars)."""
        if vector is None:
            if e.shape.is_matrix:
                raise self.fail(e, "a pointwise function of a matrix is not a vector")
            vector = e.shape.is_vector
        fn = e.function
        consts = e.constants
        formula = fn.specialize(consts)
        syms = [s for i, s in enumerate(fn.symbols) if i not in consts]
        if polynomial_degree(formula, syms) is None:
            return self.nonpolynomial(e, formula, syms, args, vector)
        if not syms:
            c = _frac(sp.expand(formula))
            return {ONE: {self.ones: c}} if vector and c else ({ONE: c} if c else {})
        terms = sp.Poly(sp.expand(formula), *syms).terms()
        powers: list[list[Any]] = [[None, a] for a in args]  # powers[i][k] = args[i]^k

        def power(i: int, k: int) -> Any:
            while len(powers[i]) <= k:
                prev = powers[i][-1]
                powers[i].append(
                    self.had(prev, args[i]) if vector else self.times(e, prev, args[i])  # type: ignore[arg-type]
                )
            return powers[i][k]

        out: Any = {}
        for exps, coeff in terms:
            term: Any = None
            for i, k in enumerate(exps):
                if k:
                    p = power(i, k)
                    if term is None:
                        term = p
                    else:
                        term = self.had(term, p) if vector else self.times(e, term, p)
            c = _frac(coeff)
            if vector:
                term = {ONE: {self.ones: Fraction(1)}} if term is None else term
                out = vec_add(out, term, c)
            else:
                out = poly_add(out, {ONE: Fraction(1)} if term is None else term, c)
        return out  # type: ignore[no-any-return]

    # -- hooks that L1 refuses ----------------------------------------------------------------
    def nonpolynomial(
        self,
        e: ast.Apply,
        formula: sp.Expr,
        syms: Sequence[sp.Symbol],
        args: Sequence[Any],
        vector: bool,
    ) -> Vec | Poly:
        raise self.fail(
            e,
            f"{e.function.name} is not a polynomial; GNNML1 realises L1 (polynomial functions "
            "expand into ⊙)",
            self.hint,
        )

    def hadamard_matrix(self, m: ast.Hadamard, v: Vec, transposed: bool) -> Vec:
        raise self.fail(m, "⊙ of matrices is not in L1 (it is L3)", self.hint)

    def function_matrix(self, m: ast.Apply, v: Vec, transposed: bool) -> Vec:
        raise self.fail(
            m, "a pointwise function of a matrix is not in L1 (it counts as ⊙)", self.hint
        )

    def trace(self, e: ast.Trace) -> Poly:
        raise self.fail(e, "tr is not in L1 (it is L2)", self.hint)


def lower_gnnml1(expr: ast.Expr | str, *, nonlinear_head: bool = True) -> Program:
    """The :class:`Program` of an L1 sentence (string or AST)."""
    from matlang.parser import as_expr

    e = as_expr(expr)
    return Lowering(e, nonlinear_head=nonlinear_head).program()


# --------------------------------------------------------------------------- scheduling


@dataclass(frozen=True)
class Schedule:
    """Which nodes are channels of which layer.

    ``channels[l]`` lists the node ids held by ``H^{(l)}`` (``l = 0`` is the input: 𝟏, then the
    declared inputs); ``depth[i]`` is the layer that computes node ``i``.
    """

    channels: tuple[tuple[int, ...], ...]
    depth: tuple[int, ...]

    @property
    def num_layers(self) -> int:
        return len(self.channels) - 1

    def position(self, layer: int) -> dict[int, int]:
        return {x: j for j, x in enumerate(self.channels[layer])}


def node_reads(node: VectorNode) -> set[int]:
    return {k for lin in node.args for k, _ in lin}


def schedule(program: Program, outputs: Sequence[int] | None = None) -> Schedule:
    """Depth of every node and the channels of every layer (see :class:`Schedule`)."""
    vs = program.vectors
    depth = [0] * len(vs)
    for i, v in enumerate(vs):  # ids are topological
        reads = node_reads(v)
        depth[i] = 1 + max(depth[k] for k in reads) if reads else 0
    outs = list(program.output_nodes() if outputs is None else outputs) or [program.ones]
    layers = max(1, max(depth[x] for x in outs))
    last = [-1] * len(vs)
    for x in outs:
        last[x] = layers
    for i in range(len(vs) - 1, -1, -1):  # consumers have larger ids than what they read
        if last[i] < 0:
            continue
        for k in node_reads(vs[i]):
            last[k] = max(last[k], depth[i] - 1)
    base = [program.ones, *program.input_nodes()]
    channels = [tuple(base)]
    for layer in range(1, layers + 1):
        channels.append(tuple(i for i in range(len(vs)) if last[i] >= layer and depth[i] <= layer))
    return Schedule(tuple(channels), tuple(depth))


# --------------------------------------------------------------------------- evaluation


def lin_tensor(
    lin: LinKey | Lin, position: Mapping[int, int], width: int, dtype: torch.dtype
) -> Tensor:
    """The coefficients of ``L`` over channels as a ``(width,)`` tensor."""
    out = torch.zeros(width, dtype=dtype)
    for k, c in lin.items() if isinstance(lin, dict) else lin:
        out[position[k]] += float(c)
    return out


def evaluate_output(
    program: Program,
    batch: Batch,
    readout: Callable[[int], Tensor],
    node_lin: Callable[[Lin], Tensor],
    like: Tensor,
) -> Tensor:
    """The sentence's value from the readouts of nodes (``readout(i)``: ``(G,)``) and, for
    node-level sentences, linear combinations of nodes (``node_lin(L)``: ``(N,)``).

    Evaluates the scalar atoms (readouts, inverses, functions) exactly as the head does; a zero
    denominator or a non-finite function value raises :class:`EvaluationError`.
    """
    g = batch.num_graphs
    memo: dict[int, Tensor] = {}

    def atom(i: int) -> Tensor:
        if i in memo:
            return memo[i]
        s = program.scalars[i]
        if s.op == "read":
            out = readout(s.vector)
        elif s.op == "inv":
            d = poly(dict(s.args[0]))
            zero = torch.nonzero(d == 0)
            if zero.numel():
                k = int(zero[0])
                raise EvaluationError(
                    f"division by zero on graph {batch.graph_label(k)} (denominator {s.text})"
                )
            out = 1 / d
        else:
            assert s.function is not None
            formula, syms = s.function
            f = numeric(formula, syms, "torch")
            out = f(*[poly(dict(a)) for a in s.args])
            if not isinstance(out, Tensor):
                out = torch.full((g,), float(out), dtype=like.dtype, device=like.device)
            bad = torch.nonzero(~torch.isfinite(out))
            if bad.numel():
                k = int(bad[0])
                raise EvaluationError(
                    f"{formula} is {float(out[k].detach())} on graph "
                    f"{batch.graph_label(k)} ({s.text})"
                )
        memo[i] = out
        return out

    def mono(m: Mono) -> Tensor:
        out = torch.ones(g, dtype=like.dtype, device=like.device)
        for a in m:
            out = out * atom(a)
        return out

    def poly(p: Poly) -> Tensor:
        out = torch.zeros(g, dtype=like.dtype, device=like.device)
        for m, c in p.items():
            out = out + float(c) * mono(m)
        return out

    if program.kind == "graph":
        return poly(program.graph_value)
    out = torch.zeros(batch.num_nodes, dtype=like.dtype, device=like.device)
    for m, lin in program.node_value.items():
        term = node_lin(lin)
        out = out + (term if m == ONE else mono(m)[batch.batch] * term)
    return out


def input_features(
    program: Program, batch: Batch, inputs: Mapping[str, Any], dtype: torch.dtype
) -> Tensor:
    """``H^{(0)} = [𝟏 | declared inputs]``: inputs by name from ``inputs``, else the batch's
    feature columns in order of first use (as the dense evaluator reads them)."""
    n = batch.num_nodes
    device = batch.edge_index.device
    cols = [torch.ones(n, dtype=dtype, device=device)]
    x = None if batch.x is None else batch.x.reshape(n, -1)
    for i, name in enumerate(program.inputs):
        if name in inputs:
            v = torch.as_tensor(inputs[name]).reshape(-1)
        elif x is not None and i < x.shape[1]:
            v = x[:, i]
        else:
            raise EvaluationError(
                f"no value for input '{name}': pass {name}=... or give the batch node features"
            )
        if v.numel() != n:
            raise EvaluationError(
                f"input '{name}' must have one value per node ({n}), got {v.numel()}"
            )
        cols.append(v.to(device=device, dtype=dtype))
    return torch.stack(cols, 1)


def activate(node: VectorNode, x: Tensor, batch: Batch) -> Tensor:
    """``f(x)`` for an ``fn`` node; a non-finite value raises :class:`EvaluationError`."""
    assert node.function is not None
    formula, sym = node.function
    out = numeric(formula, [sym], "torch")(x)
    bad = torch.nonzero(~torch.isfinite(out))
    if bad.numel():
        k = int(bad[0])
        g = int(batch.batch[k])
        raise EvaluationError(
            f"{formula} is {float(out[k].detach())} at node {k - int(batch.ptr[g])} of graph "
            f"{batch.graph_label(g)}"
        )
    return out  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- the target


class ReadoutHead(nn.Module):
    """Sum readout of the last layer's channels, then the sentence's scalar circuit.

    Linear case (``is_linear``): ``value = 𝟏ᵀH w + b`` per graph, or ``H w`` per node — the
    paper's readout and a linear layer. Otherwise the exact circuit of products, quotients and
    functions of the readouts (see the module docstring).
    """

    def __init__(self, program: Program, channels: Sequence[int], backend: str | None) -> None:
        super().__init__()
        self.program = program
        self.position = {x: j for j, x in enumerate(channels)}
        self.width = len(channels)
        self.backend = backend
        self.is_linear = program.head_is_linear

    def forward(self, h: Tensor, batch: Batch) -> Tensor:
        pos = self.position
        cache: dict[str, Tensor] = {}

        def readout(x: int) -> Tensor:
            if "r" not in cache:
                cache["r"] = sparse.scatter_sum(
                    h, batch.batch, batch.num_graphs, backend=self.backend
                )
            return cache["r"][:, pos[x]]

        def node_lin(lin: Lin) -> Tensor:
            return h @ lin_tensor(lin, pos, self.width, h.dtype).to(h.device)

        return evaluate_output(self.program, batch, readout, node_lin, h)

    def extra_repr(self) -> str:
        return f"channels={self.width}, linear={self.is_linear}, kind={self.program.kind!r}"


class _Target(nn.Module):
    """What the GNNML1 and GNNML3 targets share: the lowered program, its schedule, the layer
    stack, the readout head and the backend."""

    def __init__(
        self,
        program: Program,
        sched: Schedule,
        layers: Sequence[nn.Module],
        backend: str | None = None,
    ) -> None:
        super().__init__()
        self.program = program
        self.schedule = sched
        self.layers = nn.ModuleList(layers)
        self.backend = backend
        self.head = ReadoutHead(program, sched.channels[-1], backend)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def kind(self) -> Kind:
        return self.program.kind

    @property
    def head_is_linear(self) -> bool:
        return self.head.is_linear

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype


class GNNML1Target(_Target):
    r"""A stack of GNNML1 layers (Eq. 3, identity σ) and a readout head that compute a sentence.

    Attributes:
        program: the lowered sentence (:meth:`Program.describe` prints its nodes).
        schedule: which node each channel of each layer holds.
        layers: the :class:`~runtime.models.gnnml1.GNNML1Conv` layers; ``layers[l].weights`` are
            ``(W1, W2, W3, W4)`` of layer ``l``.
        head: the :class:`ReadoutHead`.

    Shapes:
        forward(data) → ``(G,)`` for a graph-level sentence, ``(N,)`` for a node-level one.
    """

    @property
    def weights(self) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
        """``(W1, W2, W3, W4)`` of every layer (detached)."""
        out = []
        for conv in self.layers:
            assert isinstance(conv, GNNML1Conv)
            w1, w2, w3, w4 = (p.detach() for p in conv.weights)
            out.append((w1, w2, w3, w4))
        return out

    def forward(self, data: Any, **inputs: Any) -> Tensor:
        batch = as_batch(data)
        h = input_features(self.program, batch, inputs, self.dtype)
        for conv in self.layers:
            h = conv(h, batch.edge_index, batch.edge_weight, self.backend)
        return self.head(h, batch)  # type: ignore[no-any-return]


def gnnml1_weights(
    program: Program, sched: Schedule, dtype: torch.dtype = torch.float64
) -> list[tuple[Tensor, Tensor, Tensor, Tensor]]:
    """``(W1, W2, W3, W4)`` per layer: carry in W1, ``A·L`` in W2, ``L ⊙ L'`` in W3/W4."""
    out = []
    for layer in range(1, sched.num_layers + 1):
        ins, outs = sched.channels[layer - 1], sched.channels[layer]
        pos = sched.position(layer - 1)
        w = [torch.zeros(len(ins), len(outs), dtype=dtype) for _ in range(4)]
        for j, x in enumerate(outs):
            node = program.vectors[x]
            if sched.depth[x] < layer:  # carried: H W1 keeps the channel
                w[0][pos[x], j] = 1
            elif node.op == "prop":
                if node.name != "A":
                    raise CompileError(f"GNNML1 propagates with A only, not {node.name}")
                w[1][:, j] = lin_tensor(node.args[0], pos, len(ins), dtype)
            elif node.op == "had":
                w[2][:, j] = lin_tensor(node.args[0], pos, len(ins), dtype)
                w[3][:, j] = lin_tensor(node.args[1], pos, len(ins), dtype)
            else:
                raise CompileError(f"GNNML1 has no layer term for a {node.op!r} node")
        out.append((w[0], w[1], w[2], w[3]))
    return out


def gnnml1_target(
    expr: ast.Expr | str,
    *,
    nonlinear_head: bool = True,
    dtype: torch.dtype = torch.float64,
    backend: str | None = None,
) -> GNNML1Target:
    """GNNML1 layers (Eq. 3, identity σ, sum readout) whose output is the sentence ``expr``.

    Args:
        expr: an L1 sentence (polynomial functions allowed), graph-level (scalar) or node-level
            (vector); a string is parsed.
        nonlinear_head: allow products/quotients of graph scalars in the readout head; when
            False such a sentence raises :class:`CompileError` naming the subexpression.
        dtype: of the weights (float64: exact to rounding).
        backend: sparse backend for propagation and readout (see :mod:`runtime.sparse`).

    Raises:
        CompileError: the sentence is not in L1 (trace, ⊙ of matrices, a non-polynomial
            function), is matrix-valued, or divides by the number zero.
    """
    program = lower_gnnml1(expr, nonlinear_head=nonlinear_head)
    sched = schedule(program)
    layers = [
        GNNML1Conv.from_weights(w1, w2, w3, w4, activation="identity")
        for w1, w2, w3, w4 in gnnml1_weights(program, sched, dtype)
    ]
    return GNNML1Target(program, sched, layers, backend)


__all__ = [
    "GNNML1Target",
    "Lowering",
    "Program",
    "ReadoutHead",
    "ScalarNode",
    "Schedule",
    "VectorNode",
    "evaluate_output",
    "gnnml1_target",
    "gnnml1_weights",
    "input_features",
    "lower_gnnml1",
    "schedule",
]
