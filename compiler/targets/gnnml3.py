r"""The GNNML3 target: masked supports as edge features and GNNML3 layers (paper Eq. 6–8).

For a sentence of ``ML(L3)`` (L1 plus ``tr``, ⊙ of matrices and pointwise functions),
:func:`gnnml3_target` builds GNNML3 layers (Eq. 8, :class:`~runtime.models.gnnml3.GNNML3Conv`
with ``C = C'``, identity σ and linear ``mlp_5``, ``mlp_6``)

.. math::
    H^{(l+1)} = \Big(\sum_s C^{(s)} H^{(l)} W^{(l,s)} \,\Big\Vert\,
        (H^{(l)} W^{(l,5)}) \odot (H^{(l)} W^{(l,6)})\Big)

whose supports ``C^{(s)}`` are the matrices the sentence needs, materialised on their masks as
edge features on the receptive field ``M`` (Algorithm 1 with the sentence's matrices in place of
spectral filters): ``C^{(0)} = I`` (the all-pass support, which carries channels), ``A``, and
e.g. ``A ⊙ A²`` on the edges of A, or ``A³ ⊙ I`` — the diagonal of ``A³``, on the self-loops —
for ``tr(A³)``. ``M = A + I`` (the paper's 1-hop receptive field) unless a support reaches
further (``A² ⊙ A²`` lives on the 2-hop mask); then ``M`` is ``A + I`` joined with the
supports' structural masks.

The lowering is GNNML1's (:mod:`compiler.targets.gnnml1`) with these rules added, each an identity:

* ``(X ⊙ diag u) v = u ⊙ dvec(X) ⊙ v`` where ``dvec(X) = (X ⊙ I) 𝟏`` is the diagonal of X;
* ``tr(X) = 𝟏ᵀ dvec(X)``, with ``dvec(A) = 0`` (no self-loops), ``dvec(diag u) = u``,
  ``dvec(X ⊙ Y) = dvec X ⊙ dvec Y``, ``dvec(f(X)) = f(dvec X)``, ``dvec(u wᵀ) = u ⊙ w``; any
  other ``dvec(X)`` is ``(X ⊙ I) 𝟏``, one propagation with a diagonal support;
* ``(X ⊙ Y) v`` and ``f(X) v`` (f(0) = 0) propagate with the support ``X ⊙ Y`` or ``f(X)``;
* a non-polynomial ``f`` of one vector is a channel whose σ is ``f`` (σ acts channel-wise:
  identity everywhere else); a polynomial ``f`` expands into ``mlp_5 ⊙ mlp_6`` products.

Supports are materialised by sampled sparse products (``runtime.sparse``): ``(A ⊙ A²)`` is
``A²`` sampled on the edges of ``A``, ``diag(A⁵)`` is ``A² · A³`` sampled on the diagonal. A
support whose structural mask is full (``𝟏𝟏ᵀ``, ``f(X)`` with ``f(0) ≠ 0``) is refused with a
:class:`~matlang.errors.CompileError` naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

import sympy as sp
import torch
from torch import Tensor

from compiler.support import FullMaskError, function_facts, mask_for, order
from compiler.targets.gnnml1 import (
    ONE,
    Lin,
    Lowering,
    Poly,
    Program,
    ScalarNode,
    Schedule,
    Vec,
    VectorNode,
    _Target,
    activate,
    input_features,
    interpret,
    lin_key,
    lin_tensor,
    poly_key,
    schedule,
    vec_add,
    where,
)
from matlang import ast
from matlang.errors import CompileError, EvaluationError
from matlang.functions import numeric
from runtime import sparse
from runtime.batch import Batch, as_batch
from runtime.models.gnnml3 import GNNML3Conv, SupportOperator
from runtime.preprocess import Supports

IDENTITY = "I"  # the all-pass support C^{(0)}: it carries channels from layer to layer
#: A zero channel standing in for an empty convolution part (zero-width propagation is not
#: supported by every sparse backend).
PADDING = -1


def _identity_matrix() -> ast.Expr:
    return ast.Diag(ast.Ones())


def _is_outer(e: ast.Expr) -> bool:
    """``u wᵀ``: a column times a row."""
    return isinstance(e, ast.Mul) and e.left.shape.is_vector and e.right.shape.is_vector


# --------------------------------------------------------------------------- support masks


def mask_order(e: ast.Expr) -> float:
    """How the mask of a matrix expression grows, ``|mask| ≈ n·dᵒʳᵈᵉʳ`` (the compiler core's
    support inference, :mod:`compiler.support`): 0 for ``I``, 1 for ``E``, k for k hops, ∞ when
    the mask is full."""
    try:
        return order(mask_for(e))
    except FullMaskError:
        return math.inf


def support_radius(e: ast.Expr) -> int | None:
    """The hop radius r of a matrix's mask (``mask ⊆ (A + I)^r``), ``None`` when full."""
    o = mask_order(e)
    return None if math.isinf(o) else max(0, int(o))


def _specialized(e: ast.Apply) -> tuple[sp.Expr, list[sp.Symbol]]:
    consts = e.constants
    syms = [s for i, s in enumerate(e.function.symbols) if i not in consts]
    return e.function.specialize(consts), syms


# --------------------------------------------------------------------------- lowering


class Lowering3(Lowering):
    """Sentence → :class:`~compiler.targets.gnnml1.Program` with supports (module docstring)."""

    target = "GNNML3"
    hint = None  # type: ignore[assignment]

    def __init__(self, expr: ast.Expr, *, nonlinear_head: bool = True) -> None:
        super().__init__(expr, nonlinear_head=nonlinear_head)
        self._support_name: dict[ast.Expr, str] = {}

    def support(self, m: ast.Expr, transposed: bool = False) -> str:
        """The name of the support ``m`` (or ``mᵀ``), registered once per distinct matrix."""
        expr = ast.Transpose(m) if transposed else m
        name = self._support_name.get(expr)
        if name is not None:
            return name
        mask_for(m, why="is a GNNML3 support")  # FullMaskError names m and why it is full
        name = f"C{len(self._support_name) + 1}"
        self._support_name[expr] = name
        self.supports[name] = expr
        return name

    def hadamard_matrix(self, m: ast.Hadamard, v: Vec, transposed: bool) -> Vec:
        for a, b in ((m.left, m.right), (m.right, m.left)):
            if isinstance(a, ast.Diag):  # (X ⊙ diag u) v = u ⊙ dvec(X) ⊙ v
                return self.had(self.had(self.vector(a.operand), self.diagonal(b)), v)
            if _is_outer(a):  # (u wᵀ) ⊙ X = diag(u) X diag(w); transposed: diag(w) Xᵀ diag(u)
                u, w = self.vector(a.left), self.vector(a.right)  # type: ignore[attr-defined]
                if transposed:
                    u, w = w, u
                return self.had(u, self.apply(b, self.had(w, v), transposed))
        return self.prop(self.support(m, transposed), v)

    def function_matrix(self, m: ast.Apply, v: Vec, transposed: bool) -> Vec:
        return self.prop(self.support(m, transposed), v)

    def trace(self, e: ast.Trace) -> Poly:
        return self.readout(self.diagonal(e.operand))  # tr X = 𝟏ᵀ dvec(X)

    def diagonal(self, x: ast.Expr) -> Vec:
        """``dvec(X) = (X ⊙ I) 𝟏``, the diagonal of a matrix as a node vector."""
        return self._cached(x, "diagonal", lambda: self._diagonal(x))  # type: ignore[no-any-return]

    def _diagonal_support(self, x: ast.Expr) -> Vec:
        name = self.support(ast.Hadamard(x, _identity_matrix()))
        return self.prop(name, {ONE: {self.ones: Fraction(1)}})

    def _diagonal(self, x: ast.Expr) -> Vec:
        if isinstance(x, ast.Input):
            if x.name != "A":
                raise self.fail(x, f"unknown matrix input {x.name!r}")
            return {}  # simple graphs have no self-loops (batches are validated)
        if isinstance(x, ast.Diag):
            return self.vector(x.operand)
        if isinstance(x, ast.Add):
            return vec_add(self.diagonal(x.left), self.diagonal(x.right))
        if isinstance(x, ast.Sub):
            return vec_add(self.diagonal(x.left), self.diagonal(x.right), Fraction(-1))
        if isinstance(x, ast.Neg):
            return vec_add({}, self.diagonal(x.operand), Fraction(-1))
        if isinstance(x, ast.Transpose):
            return self.diagonal(x.operand)
        if isinstance(x, ast.Div):
            return self.scale(x, self.diagonal(x.left), self.inverse(x, self.scalar(x.right)))
        if isinstance(x, ast.Mul):
            left, right = x.left, x.right
            if left.shape.is_scalar:
                return self.scale(x, self.diagonal(right), self.scalar(left))
            if right.shape.is_scalar:
                return self.scale(x, self.diagonal(left), self.scalar(right))
            if left.shape.is_vector:  # dvec(u wᵀ) = u ⊙ w
                return self.had(self.vector(left), self.vector(right))
            if _is_outer(left):  # (u wᵀ N)_ii = u_i (wᵀ N)_i
                row = ast.Mul(left.right, right)  # type: ignore[attr-defined]
                return self.had(self.vector(left.left), self.vector(row))  # type: ignore[attr-defined]
            if _is_outer(right):  # (M u wᵀ)_ii = (M u)_i w_i
                col = ast.Mul(left, right.left)  # type: ignore[attr-defined]
                return self.had(self.vector(col), self.vector(right.right))  # type: ignore[attr-defined]
            if isinstance(left, ast.Diag):  # (diag(u) N)_ii = u_i N_ii
                return self.had(self.vector(left.operand), self.diagonal(right))
            if isinstance(right, ast.Diag):
                return self.had(self.diagonal(left), self.vector(right.operand))
            return self._diagonal_support(x)
        if isinstance(x, ast.Power):
            if x.exponent == 0:
                return {ONE: {self.ones: Fraction(1)}}
            if x.exponent == 1:
                return self.diagonal(x.base)
            if isinstance(x.base, ast.Diag):  # diag(u)^k = diag(u^{⊙k})
                u = self.vector(x.base.operand)
                out = u
                for _ in range(x.exponent - 1):
                    out = self.had(out, u)
                return out
            return self._diagonal_support(x)
        if isinstance(x, ast.Hadamard):
            for a, b in ((x.left, x.right), (x.right, x.left)):
                if isinstance(a, ast.Diag):
                    return self.had(self.vector(a.operand), self.diagonal(b))
            return self.had(self.diagonal(x.left), self.diagonal(x.right))
        if isinstance(x, ast.Apply):  # f(X)_ii = f(X_ii)
            return self.function(  # type: ignore[return-value]
                x, [self.diagonal(a) for a in x.variable_args], vector=True
            )
        raise self.fail(x, f"unexpected {type(x).__name__} of shape {x.shape}")

    def nonpolynomial(
        self,
        e: ast.Apply,
        formula: sp.Expr,
        syms: Sequence[sp.Symbol],
        args: Sequence[Any],
        vector: bool,
    ) -> Vec | Poly:
        if not vector:  # a function of graph scalars: computed in the readout head
            self.nonlinear(e, f"the function {e.function.name} of graph-level scalars")
            atom = self.snode(
                ScalarNode(
                    "fn",
                    args=tuple(poly_key(a) for a in args),
                    function=(formula, tuple(syms)),
                    text=where(e),
                )
            )
            value: Poly = {(atom,): Fraction(1)}
            return value
        if len(syms) != 1:
            raise self.fail(
                e,
                f"{e.function.name} is not a polynomial and takes {len(syms)} vectors; a "
                "GNNML3 layer applies a non-polynomial function to one channel at a time",
            )
        (arg,) = args
        if any(m != ONE for m in arg):
            raise self.fail(
                e,
                f"{e.function.name} is not a polynomial and its argument depends on "
                "graph-level scalars",
            )
        lin: Lin = arg.get(ONE, {})
        # f of the zero vector still reads a channel (𝟏 with coefficient 0): a depth-1 node
        key = lin_key(lin) or ((self.ones, Fraction(0)),)
        node = self.vnode(VectorNode("fn", (key,), function=(formula, syms[0])))
        return {ONE: {node: Fraction(1)}}


def lower_gnnml3(expr: ast.Expr | str, *, nonlinear_head: bool = True) -> Program:
    """The :class:`~compiler.targets.gnnml1.Program` of an L3 sentence (string or AST)."""
    from matlang.parser import as_expr

    e = as_expr(expr)
    return Lowering3(e, nonlinear_head=nonlinear_head).program()


# --------------------------------------------------------------------------- materialisation


SparseMatrix = tuple[Tensor, Tensor]  # (index (2, m) coalesced row-major, values (m,))


class Materialiser:
    """Values of matrix expressions of a batch on their masks, by sparse kernels.

    ``full(X)`` is X on its structural mask (coalesced); ``sample(X, index)`` is X at given
    entries. Vectors and scalars inside (``diag(u)``, ``s·X``) are lowered and interpreted.
    """

    def __init__(
        self,
        batch: Batch,
        inputs: Mapping[str, Tensor],
        dtype: torch.dtype = torch.float64,
        backend: str | None = None,
    ) -> None:
        self.batch = batch
        self.n = batch.num_nodes
        self.inputs = dict(inputs)
        self.dtype = dtype
        self.backend = backend
        self._full: dict[ast.Expr, SparseMatrix] = {}
        self._vector: dict[ast.Expr, Tensor] = {}
        self._scalar: dict[ast.Expr, Tensor] = {}

    # -- values of vectors and scalars --------------------------------------------------------
    def _run(self, e: ast.Expr) -> Tensor:
        program = Lowering3(e).program()
        sup = {name: self.full(x) for name, x in program.supports.items()}
        return interpret(
            program,
            self.batch,
            inputs=self.inputs,
            supports=sup,
            dtype=self.dtype,
            backend=self.backend,
        )

    def vector(self, e: ast.Expr) -> Tensor:
        if e not in self._vector:
            self._vector[e] = self._run(e)
        return self._vector[e]

    def scalar(self, e: ast.Expr) -> Tensor:
        if e not in self._scalar:
            self._scalar[e] = self._run(e)
        return self._scalar[e]

    # -- helpers ------------------------------------------------------------------------------
    def _coalesce(self, index: Tensor, values: Tensor) -> SparseMatrix:
        return sparse.coalesce(index, values, self.n, backend=self.backend)

    def diagonal_index(self) -> Tensor:
        """The entries ``(i, i)`` of every node."""
        i = torch.arange(self.n, device=self.batch.edge_index.device)
        return torch.stack([i, i])

    def lookup(self, m: SparseMatrix, index: Tensor) -> Tensor:
        """``m`` at the entries ``index`` (0 where ``m`` stores nothing)."""
        mi, mv = m
        n = max(self.n, 1)
        keys, query = mi[0] * n + mi[1], index[0] * n + index[1]
        if keys.numel() == 0:
            return torch.zeros(query.numel(), dtype=mv.dtype, device=mv.device)
        pos = torch.searchsorted(keys, query).clamp(max=keys.numel() - 1)
        hit = keys[pos] == query
        return torch.where(hit, mv[pos], torch.zeros((), dtype=mv.dtype, device=mv.device))

    def _row_scalar(self, s: ast.Expr, index: Tensor) -> Tensor:
        return self.scalar(s)[self.batch.batch[index[0]]]

    # -- full materialisation -------------------------------------------------------------------
    def full(self, e: ast.Expr) -> SparseMatrix:
        """``e`` on its structural mask."""
        if e not in self._full:
            self._full[e] = self._materialise(e)
        return self._full[e]

    def _materialise(self, e: ast.Expr) -> SparseMatrix:
        if isinstance(e, ast.Input):
            ei = self.batch.edge_index
            w = self.batch.edge_weight
            w = torch.ones(ei.shape[1], dtype=self.dtype) if w is None else w.to(self.dtype)
            return self._coalesce(ei, w)
        if isinstance(e, ast.Diag):
            return self.diagonal_index(), self.vector(e.operand)
        if isinstance(e, ast.Mul):
            left, right = e.left, e.right
            if left.shape.is_scalar or right.shape.is_scalar:
                s, x = (left, right) if left.shape.is_scalar else (right, left)
                idx, val = self.full(x)
                return idx, val * self._row_scalar(s, idx)
            if left.shape.is_vector:
                raise CompileError(f"{where(e)} has a full mask (an outer product)")
            (ia, va), (ib, vb) = self.full(left), self.full(right)
            return sparse.spspmm(ia, va, ib, vb, self.n, backend=self.backend)
        if isinstance(e, ast.Power):
            if e.exponent == 0:
                return self.diagonal_index(), torch.ones(self.n, dtype=self.dtype)
            if e.exponent == 1:
                return self.full(e.base)
            (ia, va), (ib, vb) = self.full(ast.Power(e.base, e.exponent - 1)), self.full(e.base)
            return sparse.spspmm(ia, va, ib, vb, self.n, backend=self.backend)
        if isinstance(e, ast.Hadamard):
            # the side with the smaller mask is materialised, the other sampled on it
            small, other = e.left, e.right
            if mask_order(e.right) < mask_order(e.left):
                small, other = e.right, e.left
            idx, val = self.full(small)
            return idx, val * self.sample(other, idx)
        if isinstance(e, (ast.Add, ast.Sub)):
            (ia, va), (ib, vb) = self.full(e.left), self.full(e.right)
            sign = 1.0 if isinstance(e, ast.Add) else -1.0
            return self._coalesce(torch.cat([ia, ib], 1), torch.cat([va, sign * vb]))
        if isinstance(e, ast.Neg):
            idx, val = self.full(e.operand)
            return idx, -val
        if isinstance(e, ast.Div):
            idx, val = self.full(e.left)
            return idx, val / self._row_scalar(e.right, idx)
        if isinstance(e, ast.Transpose):
            idx, val = self.full(e.operand)
            return self._coalesce(idx.flip(0), val)
        if isinstance(e, ast.Apply):
            if not function_facts(e).vanishes_at_zero:
                mask_for(e, why="is a GNNML3 support")  # raises FullMaskError
            parts = [self.full(a)[0] for a in e.variable_args]
            cat = torch.cat(parts, 1)
            idx, _ = self._coalesce(cat, torch.zeros(cat.shape[1], dtype=self.dtype))
            return idx, self.sample(e, idx)
        raise CompileError(f"cannot materialise {where(e)}")

    # -- sampling -------------------------------------------------------------------------------
    def sample(self, e: ast.Expr, index: Tensor) -> Tensor:
        """``e`` at the entries ``index`` (``(2, m)``), without materialising ``e``."""
        if isinstance(e, ast.Input):
            return self.lookup(self.full(e), index)
        if isinstance(e, ast.Diag):
            u = self.vector(e.operand)
            return torch.where(index[0] == index[1], u[index[0]], torch.zeros((), dtype=u.dtype))
        if isinstance(e, ast.Mul):
            left, right = e.left, e.right
            if left.shape.is_scalar:
                return self._row_scalar(left, index) * self.sample(right, index)
            if right.shape.is_scalar:
                return self._row_scalar(right, index) * self.sample(left, index)
            if left.shape.is_vector:  # (u wᵀ)_ij = u_i w_j
                return self.vector(left)[index[0]] * self.vector(right)[index[1]]
            if isinstance(left, ast.Diag):  # (diag(u) N)_ij = u_i N_ij
                return self.vector(left.operand)[index[0]] * self.sample(right, index)
            if isinstance(right, ast.Diag):
                return self.sample(left, index) * self.vector(right.operand)[index[1]]
            if _is_outer(left):  # (u wᵀ N)_ij = u_i (wᵀ N)_j
                row = ast.Mul(left.right, right)  # type: ignore[attr-defined]
                return self.vector(left.left)[index[0]] * self.vector(row)[index[1]]  # type: ignore[attr-defined]
            if _is_outer(right):  # (M u wᵀ)_ij = (M u)_i w_j
                col = ast.Mul(left, right.left)  # type: ignore[attr-defined]
                return self.vector(col)[index[0]] * self.vector(right.right)[index[1]]  # type: ignore[attr-defined]
            return self._sampled_product(left, right, index)
        if isinstance(e, ast.Power):
            k = e.exponent
            if k == 0:
                return (index[0] == index[1]).to(self.dtype)
            if k == 1:
                return self.sample(e.base, index)
            half = k // 2  # M^k = M^{⌊k/2⌋} M^{⌈k/2⌉}
            return self._sampled_product(
                ast.Power(e.base, half), ast.Power(e.base, k - half), index
            )
        if isinstance(e, ast.Hadamard):
            return self.sample(e.left, index) * self.sample(e.right, index)
        if isinstance(e, ast.Add):
            return self.sample(e.left, index) + self.sample(e.right, index)
        if isinstance(e, ast.Sub):
            return self.sample(e.left, index) - self.sample(e.right, index)
        if isinstance(e, ast.Neg):
            return -self.sample(e.operand, index)
        if isinstance(e, ast.Div):
            return self.sample(e.left, index) / self._row_scalar(e.right, index)
        if isinstance(e, ast.Transpose):
            return self.sample(e.operand, index.flip(0))
        if isinstance(e, ast.Apply):
            formula, syms = _specialized(e)
            f = numeric(formula, syms, "torch")
            out = f(*[self.sample(a, index) for a in e.variable_args])
            if not isinstance(out, Tensor):
                out = torch.full((index.shape[1],), float(out), dtype=self.dtype)
            bad = torch.nonzero(~torch.isfinite(out))
            if bad.numel():
                raise EvaluationError(f"{where(e)} is not finite on a support entry")
            return out
        raise CompileError(f"cannot sample {where(e)}")

    def _sampled_product(self, left: ast.Expr, right: ast.Expr, index: Tensor) -> Tensor:
        (ia, va), (ib, vb) = self.full(left), self.full(right)
        return sparse.sampled_product(ia, va, ib, vb, index, self.n, backend=self.backend)


# --------------------------------------------------------------------------- the target


class GNNML3Target(_Target):
    r"""GNNML3 layers (Eq. 8, ``C = C'``, identity σ except on function channels) and a readout
    head that compute a sentence.

    Attributes:
        program: the lowered sentence (:meth:`~compiler.targets.gnnml1.Program.describe`).
        schedule: which node each channel of each layer holds (convolution part first, then the
            product part).
        support_names / support_exprs: the supports' columns, ``I`` first.
        receptive_field: the largest hop radius of a support (1: ``M = A + I``).
        layers: the :class:`~runtime.models.gnnml3.GNNML3Conv` layers.
        activations: per layer, ``(channel, node)`` for channels whose σ is a function ``f``.

    Shapes:
        forward(data) → ``(G,)`` for a graph-level sentence, ``(N,)`` for a node-level one.
    """

    def __init__(
        self,
        program: Program,
        sched: Schedule,
        layers: Sequence[GNNML3Conv],
        activations: Sequence[Sequence[tuple[int, VectorNode]]],
        support_names: Sequence[str],
        backend: str | None = None,
    ) -> None:
        super().__init__(program, sched, layers, backend)
        self.activations = [list(a) for a in activations]
        self.support_names = tuple(support_names)
        exprs = dict(program.supports)
        exprs[IDENTITY] = _identity_matrix()
        self.support_exprs = tuple(exprs[s] for s in self.support_names)
        radii = [support_radius(x) or 0 for x in self.support_exprs]
        self.receptive_field = max([1, *radii])

    def _named_inputs(
        self, batch: Batch, inputs: Mapping[str, Any], dtype: torch.dtype
    ) -> dict[str, Tensor]:
        h0 = input_features(self.program, batch, inputs, dtype)
        return {name: h0[:, 1 + i] for i, name in enumerate(self.program.inputs)}

    def supports(self, data: Any, **inputs: Any) -> Supports:
        """The edge features ``C'`` on the receptive field ``M`` (Algorithm 1's output)."""
        batch = as_batch(data)
        dtype = self.dtype
        mat = Materialiser(batch, self._named_inputs(batch, inputs, dtype), dtype, self.backend)
        n = batch.num_nodes
        parts = [mat.full(ast.Input("A")), (mat.diagonal_index(), torch.ones(n, dtype=dtype))]
        parts += [mat.full(x) for x in self.support_exprs]
        cat = torch.cat([p[0] for p in parts], 1)
        mask, _ = sparse.coalesce(
            cat, torch.zeros(cat.shape[1], dtype=dtype), n, backend=self.backend
        )
        attr = torch.stack([mat.lookup(p, mask) for p in parts[2:]], 1)
        return Supports(mask, attr, self.support_names)

    def forward(self, data: Any, supports: Supports | None = None, **inputs: Any) -> Tensor:
        batch = as_batch(data)
        dtype = self.dtype
        sup = self.supports(batch, **inputs) if supports is None else supports
        attr = sup.edge_attr.to(dtype)
        h = input_features(self.program, batch, inputs, dtype)
        op = SupportOperator(sup.edge_index, h.shape[0], sup.num_supports)  # shared by the layers
        for conv, acts in zip(self.layers, self.activations, strict=True):
            h = conv(h, sup.edge_index, attr, operator=op)
            if acts:  # σ = f on the channels that realise a non-polynomial function
                cols = list(h.unbind(1))
                for j, node in acts:
                    cols[j] = activate(node, cols[j], batch)
                h = torch.stack(cols, 1)
        return self.head(h, batch)  # type: ignore[no-any-return]


def _gnnml3_schedule(program: Program) -> Schedule:
    """GNNML1's schedule with each layer's channels ordered as Eq. 8 concatenates them: the
    convolution part (carried, propagated and function channels), then the product part."""
    sched = schedule(program)
    channels = [sched.channels[0]]
    for layer in range(1, sched.num_layers + 1):
        outs = sched.channels[layer]
        new_products = [
            x for x in outs if sched.depth[x] == layer and program.vectors[x].op == "had"
        ]
        conv = [x for x in outs if x not in new_products] or [PADDING]
        channels.append(tuple(conv + new_products))
    return Schedule(tuple(channels), sched.depth)


def gnnml3_target(
    expr: ast.Expr | str,
    *,
    nonlinear_head: bool = True,
    dtype: torch.dtype = torch.float64,
    backend: str | None = None,
) -> GNNML3Target:
    """GNNML3 layers (Eq. 8) on the sentence's materialised supports that compute ``expr``.

    Args:
        expr: an L1/L2/L3 sentence (pointwise functions allowed), graph- or node-level.
        nonlinear_head: allow products, quotients and functions of graph scalars in the readout
            head (else :class:`CompileError` naming the subexpression).
        dtype: of the weights and supports.
        backend: sparse backend (see :mod:`runtime.sparse`).

    Raises:
        CompileError: a support with a full mask, a non-polynomial function of several vectors,
            a matrix-valued sentence, or division by the number zero.
    """
    program = lower_gnnml3(expr, nonlinear_head=nonlinear_head)
    sched = _gnnml3_schedule(program)
    used = {v.name for v in program.vectors if v.op == "prop"}
    names = [IDENTITY, *(s for s in program.supports if s in used)]
    index = {s: i for i, s in enumerate(names)}
    layers, activations = [], []
    for layer in range(1, sched.num_layers + 1):
        ins, outs = sched.channels[layer - 1], sched.channels[layer]
        pos = sched.position(layer - 1)
        products = [
            x
            for x in outs
            if x != PADDING and sched.depth[x] == layer and program.vectors[x].op == "had"
        ]
        conv = outs[: len(outs) - len(products)]
        w = torch.zeros(len(names), len(ins), len(conv), dtype=dtype)
        w5 = torch.zeros(len(ins), len(products), dtype=dtype)
        w6 = torch.zeros(len(ins), len(products), dtype=dtype)
        acts: list[tuple[int, VectorNode]] = []
        for j, x in enumerate(conv):
            if x == PADDING:
                continue
            node = program.vectors[x]
            if sched.depth[x] < layer:  # carried by the all-pass support I
                w[index[IDENTITY], pos[x], j] = 1
            elif node.op == "prop":
                w[index[node.name], :, j] = lin_tensor(node.args[0], pos, len(ins), dtype)
            elif node.op == "fn":  # I·L, then σ = f on this channel
                w[index[IDENTITY], :, j] = lin_tensor(node.args[0], pos, len(ins), dtype)
                acts.append((j, node))
            else:
                raise CompileError(f"GNNML3 has no layer term for a {node.op!r} node")
        for j, x in enumerate(products):
            node = program.vectors[x]
            w5[:, j] = lin_tensor(node.args[0], pos, len(ins), dtype)
            w6[:, j] = lin_tensor(node.args[1], pos, len(ins), dtype)
        layers.append(
            GNNML3Conv.from_weights(
                w, w5 if products else None, w6 if products else None, activation="identity"
            )
        )
        activations.append(acts)
    return GNNML3Target(program, sched, layers, activations, names, backend)


__all__ = [
    "GNNML3Target",
    "Lowering3",
    "Materialiser",
    "gnnml3_target",
    "lower_gnnml3",
    "support_radius",
]
