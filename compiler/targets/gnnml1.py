r"""The GNNML1 target: Theorem 6 of the paper made constructive.

For a sentence of ``ML(L1)`` (·, ᵀ, 𝟏, diag, +, −, scalar ×, / — and pointwise functions that
are polynomials, which expand into ⊙ and +), :func:`gnnml1_target` builds the weights of a stack
of the paper's GNNML1 layers (Eq. 3, identity σ, no bias)

.. math::
    H^{(l+1)} = H^{(l)} W^{(l,1)} + A H^{(l)} W^{(l,2)}
        + (H^{(l)} W^{(l,3)}) \odot (H^{(l)} W^{(l,4)})

on ``H^{(0)} = [𝟏 | declared input vectors]``, followed by the sum readout ``𝟏ᵀH`` (graph-level
sentences) and a *readout head*, such that the result equals the sentence on every graph.

How (the stages, top to bottom; scheduling is :func:`compiler.targets.program.schedule`):

1. **Lowering** (:class:`GNNML1Lowering`) pushes every matrix onto the vector it multiplies —
   ``A v`` stays ``A v``,
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

The program, the scheduler and the head are in :mod:`compiler.targets.program`, shared with
:mod:`compiler.targets.gnnml3`, whose lowering extends this one with traces, ⊙ of matrices and
non-polynomial functions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import sympy as sp
import torch
from torch import Tensor

from matlang import ast
from matlang.compiler.targets.program import (
    ONE,
    LayerProgram,
    LayerTarget,
    Lin,
    Poly,
    ScalarNode,
    Schedule,
    Vec,
    VectorNode,
    as_fraction,
    build_target,
    input_features,
    lin_key,
    lin_scale,
    lin_tensor,
    mono_mul,
    poly_add,
    poly_const,
    poly_key,
    poly_mul,
    schedule,
    vec_add,
    vec_scale,
)
from matlang.errors import CompileError
from matlang.functions import polynomial_degree
from matlang.runtime.batch import as_batch
from matlang.runtime.models.gnnml1 import GNNML1Conv

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from matlang.compiler.targets.program import TargetOptions

# --------------------------------------------------------------------------- lowering


def where(e: ast.Expr) -> str:
    from matlang.printer import to_text

    text = to_text(e, definitions=False)
    at = f" at {e.span.line}:{e.span.col}" if e.span is not None else ""
    return f"`{text}`{at}"


class GNNML1Lowering:
    """Sentence → :class:`LayerProgram` for GNNML1 (the fragment L1 with polynomial functions).

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
    def program(self) -> LayerProgram:
        e = self.expr
        if e.shape.is_scalar:
            gv, nv, kind = self.scalar(e), {}, "graph"
        elif e.shape.is_vector:
            gv, nv, kind = {}, self.vector(e), "node"
        else:
            raise self.fail(e, "a matrix-valued sentence has no graph- or node-level value")
        return LayerProgram(
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
            c = as_fraction(sp.expand(formula))
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
            c = as_fraction(coeff)
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


# --------------------------------------------------------------------------- the target


class GNNML1Target(LayerTarget):
    r"""A stack of GNNML1 layers (Eq. 3, identity σ) and a readout head that compute a sentence.

    Attributes:
        program: the lowered sentence (:meth:`~compiler.targets.program.LayerProgram.describe`
            prints its nodes).
        schedule: which node each channel of each layer holds.
        layers: the :class:`~runtime.models.gnnml1.GNNML1Conv` layers; ``layers[l].weights`` are
            ``(W1, W2, W3, W4)`` of layer ``l``.
        head: the :class:`~compiler.targets.program.ReadoutHead`.

    Shapes:
        forward(data) → ``(G,)`` for a graph-level sentence, ``(N,)`` for a node-level one.
    """

    lowering = GNNML1Lowering

    @classmethod
    def from_program(
        cls, program: LayerProgram, dtype: torch.dtype, backend: str | None
    ) -> GNNML1Target:
        sched = schedule(program)
        layers = [
            GNNML1Conv.from_weights(w1, w2, w3, w4, activation="identity")
            for w1, w2, w3, w4 in gnnml1_weights(program, sched, dtype)
        ]
        return cls(program, sched, layers, backend)

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
    program: LayerProgram, sched: Schedule, dtype: torch.dtype = torch.float64
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


def gnnml1_target(expr: ast.Expr | str, **options: Unpack[TargetOptions]) -> GNNML1Target:
    """GNNML1 layers (Eq. 3, identity σ, sum readout) whose output is the sentence ``expr``: an
    L1 sentence (polynomial functions allowed), graph-level (scalar) or node-level (vector).
    ``options`` (``nonlinear_head``, ``dtype``, ``backend``) are those of
    :func:`~compiler.targets.program.build_target`.

    Raises:
        CompileError: the sentence is not in L1 (trace, ⊙ of matrices, a non-polynomial
            function), is matrix-valued, or divides by the number zero.
    """
    return build_target(GNNML1Target, expr, **options)


__all__ = ["GNNML1Lowering", "GNNML1Target", "gnnml1_target", "gnnml1_weights"]
