r"""The targets' intermediate form and what the GNNML targets share.

A sentence lowers (:mod:`compiler.targets.gnnml1`, :mod:`compiler.targets.gnnml3`) to a
:class:`LayerProgram`: a DAG of *vector nodes* {𝟏, input, C·L, L ⊙ L', f(L)} over exact linear
combinations ``L`` of nodes, and *scalar atoms* (``𝟏ᵀ x`` readouts, inverses, functions of graph
scalars). A graph scalar is a polynomial in scalar atoms; a node vector is ``Σ_m m · L_m`` over
monomials ``m`` of atoms (``m = 1`` for everything a layer stack computes by itself).

This module holds, top to bottom: the program and its exact algebra; the **schedule** (each
node's depth, and which nodes are the channels of which layer); the input features ``H⁽⁰⁾`` and
the exact evaluation of the output from readouts; the :class:`ReadoutHead`; and
:class:`LayerTarget`, the module base of every target, with :func:`build_target`, which lowers,
schedules and assembles a target from a sentence.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypedDict, TypeVar

import sympy as sp
import torch
from torch import Tensor, nn

from matlang import ast
from matlang.errors import EvaluationError
from matlang.functions import numeric
from matlang.runtime import sparse
from matlang.runtime.batch import Batch

if TYPE_CHECKING:
    from typing_extensions import Self

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
class LayerProgram:
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


def as_fraction(value: Any) -> Fraction:
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


def schedule(program: LayerProgram, outputs: Sequence[int] | None = None) -> Schedule:
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
    program: LayerProgram,
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
    program: LayerProgram, batch: Batch, inputs: Mapping[str, Any], dtype: torch.dtype
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
    functions of the readouts (the decision is documented in :mod:`compiler.targets.gnnml1`).
    """

    def __init__(self, program: LayerProgram, channels: Sequence[int], backend: str | None) -> None:
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


class LayerTarget(nn.Module, ABC):
    """What every target shares: the lowered program, its schedule, the layer stack, the
    readout head and the backend. A target names its lowering (``lowering``: a class whose
    instances give the :class:`LayerProgram` of a sentence) and assembles its layers from a
    program (:meth:`from_program`); :func:`build_target` does the rest."""

    lowering: ClassVar[Callable[..., Any]]

    def __init__(
        self,
        program: LayerProgram,
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

    @classmethod
    def lower(cls, expr: ast.Expr | str, *, nonlinear_head: bool = True) -> LayerProgram:
        """The :class:`LayerProgram` of a sentence (string or AST) in this target's fragment."""
        from matlang.parser import as_expr

        program: LayerProgram = cls.lowering(as_expr(expr), nonlinear_head=nonlinear_head).program()
        return program

    @classmethod
    @abstractmethod
    def from_program(cls, program: LayerProgram, dtype: torch.dtype, backend: str | None) -> Self:
        """The target whose layers (weights of ``dtype``) and head compute ``program``."""

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


class TargetOptions(TypedDict, total=False):
    """The options of every target builder (see :func:`build_target`)."""

    nonlinear_head: bool
    dtype: torch.dtype
    backend: str | None


T = TypeVar("T", bound=LayerTarget)


def build_target(
    target: type[T],
    expr: ast.Expr | str,
    *,
    nonlinear_head: bool = True,
    dtype: torch.dtype = torch.float64,
    backend: str | None = None,
) -> T:
    """Layers of ``target`` and a readout head whose output is the sentence ``expr``: lowered by
    the target's lowering, scheduled and assembled by ``target.from_program``.

    Args:
        target: the target class (:class:`~compiler.targets.gnnml1.GNNML1Target`,
            :class:`~compiler.targets.gnnml3.GNNML3Target`).
        expr: a graph-level (scalar) or node-level (vector) sentence; a string is parsed.
        nonlinear_head: allow products, quotients and functions of graph scalars in the readout
            head; when False such a sentence raises :class:`~matlang.errors.CompileError` naming
            the subexpression.
        dtype: of the weights (float64: exact to rounding).
        backend: sparse backend for propagation and readout (see :mod:`runtime.sparse`).
    """
    program = target.lower(expr, nonlinear_head=nonlinear_head)
    return target.from_program(program, dtype, backend)


__all__ = [
    "LayerProgram",
    "LayerTarget",
    "ReadoutHead",
    "ScalarNode",
    "Schedule",
    "TargetOptions",
    "VectorNode",
    "activate",
    "build_target",
    "evaluate_output",
    "input_features",
    "schedule",
]
