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

The lowering is GNNML1's (:class:`~compiler.targets.gnnml1.GNNML1Lowering`) with these rules
added, each an identity:

* ``(X ⊙ diag u) v = u ⊙ dvec(X) ⊙ v`` where ``dvec(X) = (X ⊙ I) 𝟏`` is the diagonal of X;
* ``tr(X) = 𝟏ᵀ dvec(X)``, with ``dvec(A) = 0`` (no self-loops), ``dvec(diag u) = u``,
  ``dvec(X ⊙ Y) = dvec X ⊙ dvec Y``, ``dvec(f(X)) = f(dvec X)``, ``dvec(u wᵀ) = u ⊙ w``; any
  other ``dvec(X)`` is ``(X ⊙ I) 𝟏``, one propagation with a diagonal support;
* ``(X ⊙ Y) v`` and ``f(X) v`` (f(0) = 0) propagate with the support ``X ⊙ Y`` or ``f(X)``;
* a non-polynomial ``f`` of one vector is a channel whose σ is ``f`` (σ acts channel-wise:
  identity everywhere else); a polynomial ``f`` expands into ``mlp_5 ⊙ mlp_6`` products.

Supports are materialised on their masks by the Plan interpreter, the compiler's one sparse
evaluator (:func:`compiler.api.materialise`): ``(A ⊙ A²)`` is ``A²`` sampled on the edges of
``A``, ``diag(A⁵)`` is ``A⁵`` sampled on the diagonal. A support whose structural mask is full
(``𝟏𝟏ᵀ``, ``f(X)`` with ``f(0) ≠ 0``) is refused with a :class:`~matlang.errors.CompileError`
naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import sympy as sp
import torch
from torch import Tensor

from matlang import algebra, ast
from matlang.compiler import api
from matlang.compiler.module import CompiledModule
from matlang.compiler.support import FullMaskError, mask_for, order
from matlang.compiler.targets.gnnml1 import GNNML1Lowering, where
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
    activate,
    build_target,
    input_features,
    lin_key,
    lin_tensor,
    poly_key,
    schedule,
    vec_add,
)
from matlang.errors import CompileError
from matlang.runtime import masks
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.models.gnnml3 import GNNML3Conv, SupportOperator
from matlang.runtime.preprocess import Supports

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from matlang.compiler.targets.program import TargetOptions

IDENTITY = "I"  # the all-pass support C^{(0)}: it carries channels from layer to layer
#: A zero channel standing in for an empty convolution part (zero-width propagation is not
#: supported by every sparse backend).
PADDING = -1


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


# --------------------------------------------------------------------------- lowering


class GNNML3Lowering(GNNML1Lowering):
    """Sentence → :class:`~compiler.targets.program.LayerProgram` with supports (see the
    module docstring)."""

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
            # (u wᵀ) ⊙ X = diag(u) X diag(w); transposed: diag(w) Xᵀ diag(u)
            if algebra.is_outer(a):
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
        name = self.support(ast.Hadamard(x, algebra.identity()))
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
            if algebra.is_outer(left):  # (u wᵀ N)_ii = u_i (wᵀ N)_i
                row = ast.Mul(left.right, right)  # type: ignore[attr-defined]
                return self.had(self.vector(left.left), self.vector(row))  # type: ignore[attr-defined]
            if algebra.is_outer(right):  # (M u wᵀ)_ii = (M u)_i w_i
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


# --------------------------------------------------------------------------- the target


class GNNML3Target(LayerTarget):
    r"""GNNML3 layers (Eq. 8, ``C = C'``, identity σ except on function channels) and a readout
    head that compute a sentence.

    Attributes:
        program: the lowered sentence (:meth:`~compiler.targets.program.LayerProgram.describe`).
        schedule: which node each channel of each layer holds (convolution part first, then the
            product part).
        support_names / support_exprs: the supports' columns, ``I`` first.
        receptive_field: the largest hop radius of a support (1: ``M = A + I``).
        layers: the :class:`~runtime.models.gnnml3.GNNML3Conv` layers.
        activations: per layer, ``(channel, node)`` for channels whose σ is a function ``f``.

    Shapes:
        forward(data) → ``(G,)`` for a graph-level sentence, ``(N,)`` for a node-level one.
    """

    lowering = GNNML3Lowering

    @classmethod
    def from_program(
        cls, program: LayerProgram, dtype: torch.dtype, backend: str | None
    ) -> GNNML3Target:
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
        return cls(program, sched, layers, activations, names, backend)

    def __init__(
        self,
        program: LayerProgram,
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
        exprs[IDENTITY] = algebra.identity()
        self.support_exprs = tuple(exprs[s] for s in self.support_names)
        radii = [support_radius(x) or 0 for x in self.support_exprs]
        self.receptive_field = max([1, *radii])
        self._compiled: dict[torch.dtype, list[CompiledModule]] = {}

    def _named_inputs(
        self, batch: Batch, inputs: Mapping[str, Any], dtype: torch.dtype
    ) -> dict[str, Tensor]:
        h0 = input_features(self.program, batch, inputs, dtype)
        return {name: h0[:, 1 + i] for i, name in enumerate(self.program.inputs)}

    def _compiled_supports(self, dtype: torch.dtype) -> list[CompiledModule]:
        """The supports compiled to Plans, once per dtype. Their number literals are fixed
        values here, not weights of the target (no gradient reaches them)."""
        modules = self._compiled.get(dtype)
        if modules is None:
            modules = [
                api.compile(x, dtype=dtype, backend=self.backend) for x in self.support_exprs
            ]
            for m in modules:
                m.requires_grad_(False)
            self._compiled[dtype] = modules
        return modules

    def supports(self, data: Any, **inputs: Any) -> Supports:
        """The edge features ``C'`` on the receptive field ``M`` (Algorithm 1's output): each
        support materialised on its mask by the Plan interpreter (:func:`compiler.api.materialise`),
        then read on ``M = A + I`` joined with those masks."""
        batch = as_batch(data)
        dtype = self.dtype
        named = self._named_inputs(batch, inputs, dtype)
        parts = [api.materialise(m, batch, inputs=named) for m in self._compiled_supports(dtype)]
        n = batch.num_nodes
        nodes = torch.arange(n, device=batch.edge_index.device)
        mask = masks.union_masks(masks.prepared_edges(batch)[0], torch.stack([nodes, nodes]), n)
        for index, _ in parts:
            mask = masks.union_masks(mask, index, n)
        attr = torch.stack([masks.lookup(index, values, mask, n) for index, values in parts], 1)
        return Supports(mask, attr.to(dtype), self.support_names)

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


def _gnnml3_schedule(program: LayerProgram) -> Schedule:
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


def gnnml3_target(expr: ast.Expr | str, **options: Unpack[TargetOptions]) -> GNNML3Target:
    """GNNML3 layers (Eq. 8) on the sentence's materialised supports that compute ``expr``: an
    L1/L2/L3 sentence (pointwise functions allowed), graph- or node-level. ``options``
    (``nonlinear_head``, ``dtype`` of the weights and supports, ``backend``) are those of
    :func:`~compiler.targets.program.build_target`.

    Raises:
        CompileError: a support with a full mask, a non-polynomial function of several vectors,
            a matrix-valued sentence, or division by the number zero.
    """
    return build_target(GNNML3Target, expr, **options)


__all__ = ["GNNML3Lowering", "GNNML3Target", "gnnml3_target", "support_radius"]
