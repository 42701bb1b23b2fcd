"""One loop for the graph-constant stages; each backend is a table of kernels.

A stage finds a :class:`~compiler.plan.Plan`'s graph constants (:func:`constant_steps`), the
registers the learnable stage reads of them (:func:`boundary`), and runs them in one loop
(:meth:`PlanStage.run`: registers, frees after the last use, exports, entry counts) whose step
dispatch is the backend's table ``dict[Op, Kernel]``:

* :data:`SHARED`: the ops that are one call of the kernel interface
  (:class:`runtime.kernels.Kernels`), the same for every backend;
* ``GRAPHBLAS`` (:mod:`compiler.constants`, on the host; exact or float) and ``TORCH``
  (:mod:`compiler.torch_constants`, on the batch's device): the leaves, index operations and
  functions each backend writes in its own array library.

A :class:`Fusion` is a rule registered beside a table: steps it finds in a plan are computed by
one kernel call instead of one call each (the triangle count for ``tr(A³)``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar

import numpy as np

from matlang.compiler.exactness import ModExactness
from matlang.compiler.plan import EDGE, GRAPH, MASK, NODE, OPS, Op, Plan, Step
from matlang.errors import EvaluationError, MatlangError
from matlang.functions import exact_degree, mod_argument_bound, mod_refusal
from matlang.runtime.kernels import Kernels


def constant_steps(
    plan: Plan, *, trainable_functions: bool = False, exact: bool = False
) -> list[bool]:
    """For each step, whether it depends only on the graph (``exact``: parameters too)."""
    const: list[bool] = []
    for st in plan.steps:
        if not OPS[st.op].constant:  # a node input
            const.append(False)
        elif st.op == Op.PARAM:
            const.append(exact)
        elif st.op == Op.APPLY and trainable_functions:
            const.append(False)
        else:
            const.append(all(const[a] for a in st.args))
    return const


def boundary(plan: Plan, const: list[bool]) -> list[int]:
    """The constant registers the learnable stage reads (its arguments, their masks, the masks
    of its own values) or returns."""
    need: set[int] = set()
    for k, st in enumerate(plan.steps):
        if const[k]:
            continue
        for a in st.args:
            if const[a]:
                need.add(a)
            m = plan.steps[a].mask
            if m is not None:
                need.add(m)
        if st.mask is not None:
            need.add(st.mask)
    for o in plan.outputs:
        if const[o.register]:
            need.add(o.register)
        m = plan.steps[o.register].mask
        if m is not None:
            need.add(m)
    return sorted(need)


# --------------------------------------------------------------------------- helpers


def size_of(step: Step, regs: Mapping[int, Any], graphs: Any) -> int:
    """Entries of a register of kind ``step.kind`` (a mask's own count is its ``nnz``)."""
    if step.kind == MASK:
        return 0
    if step.kind == EDGE:
        assert step.mask is not None
        return int(regs[step.mask].nnz)
    return int(graphs.g) if step.kind == GRAPH else int(graphs.n)


def graph_of(regs: Mapping[int, Any], st: Step, graphs: Any, i: int) -> int:
    """The graph of entry ``i`` of register ``st`` (a graph, a node, or an edge's row)."""
    if st.kind == GRAPH:
        return i
    if st.kind == NODE:
        return int(graphs.node_graph[i])
    assert st.mask is not None
    return int(graphs.node_graph[regs[st.mask].rows[i]])


def scalar(value: Fraction, exact: bool) -> int | Fraction | float:
    """A constant as a stage holds it: an int when whole (and within int64, below 2⁶²), the
    Fraction (``exact``), else a float."""
    if value.denominator == 1 and abs(value) < 2**62:
        return int(value)
    return value if exact else float(value)


# --------------------------------------------------------------------------- tables


@dataclass
class Run:
    """What a kernel sees of one run: the stage, the backend's kernels, the batch and the
    registers computed so far."""

    stage: PlanStage
    kern: Kernels[Any, Any]
    graphs: Any
    regs: dict[int, Any] = field(default_factory=dict)

    def mask_of(self, register: int) -> Any:
        """The mask that value register ``register`` lives on."""
        m = self.stage.plan.steps[register].mask
        assert m is not None
        return self.regs[m]


#: ``kernel(run, k, step, args)``: register ``k``'s value from its arguments' values.
Kernel = Callable[[Run, int, Step, list[Any]], Any]
Table = Mapping[Op, Kernel]


def _no_underflow(run: Run, st: Step, a: list[Any], out: Any) -> Any:
    """``out``, or (``nonfinite="error"``) an error where a float product or quotient
    underflowed a nonzero value to 0, as an overflow to inf is refused."""
    if run.stage.nonfinite == "error":
        at = underflow_at(st.op, a[0], a[1], out)
        if at is not None:
            gr = run.graphs
            raise underflow_error(st, gr.label(graph_of(run.regs, st, gr, at)))
    return out


def underflow_at(op: str, x: Any, y: Any, out: Any) -> int | None:
    """The first entry where a float product (quotient) ``out = x op y`` is 0 though its
    exact value is not (both factors nonzero; a nonzero dividend over a finite divisor):
    float64 underflowed. ``None`` where none did. numpy arrays and torch tensors alike."""
    if isinstance(out, (np.ndarray, np.generic, int, float)):
        out = np.asarray(out)
        if out.dtype.kind != "f" or out.size == 0 or out.all():
            return None
        xs, ys = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        xs, ys = np.broadcast_to(xs, out.shape), np.broadcast_to(ys, out.shape)
        ok = np.isfinite(ys) if op == "div" else ys != 0
        bad = (out == 0) & (xs != 0) & ok
        return int(np.flatnonzero(bad)[0]) if bad.any() else None
    import torch

    if not isinstance(out, torch.Tensor):
        return None
    if not out.is_floating_point() or out.numel() == 0 or bool(out.detach().all()):
        return None
    xs, ys = torch.broadcast_tensors(torch.as_tensor(x), torch.as_tensor(y))
    xs, ys = xs.expand(out.shape), ys.expand(out.shape)
    ok = torch.isfinite(ys) if op == "div" else ys != 0
    bad = ((out == 0) & (xs != 0) & ok).reshape(-1)
    hit = torch.nonzero(bad)
    return int(hit[0, 0]) if hit.numel() else None


def underflow_error(st: Step, graph: str) -> EvaluationError:
    """float64 (the dtype's range) underflowed a nonzero value to 0 at ``st``."""
    what = st.note or "a product in the sentence"
    return EvaluationError(
        f"{what} underflows to 0 on graph {graph}: its exact value is not 0 but below the "
        "range of the float dtype (about 1e-308 in float64, 1e-45 in float32); evaluate the "
        "sentence exactly (matlang.evaluate) or scale it (nonfinite='keep' keeps the 0)"
    )


def _add(run: Run, k: int, st: Step, a: list[Any]) -> Any:
    return run.kern.add(a[0], a[1], 1 if st.op == Op.ADD else -1)


#: The ops that are one call of the kernel interface (every backend's table includes these).
SHARED: dict[Op, Kernel] = {
    Op.COMPOSE: lambda run, k, st, a: run.kern.compose(a[0], a[1]),
    Op.UNION: lambda run, k, st, a: run.kern.union(a[0], a[1]),
    Op.FLIP: lambda run, k, st, a: a[0].flip(),
    Op.EYE: lambda run, k, st, a: run.kern.eye(a[0]),
    Op.LOOKUP: lambda run, k, st, a: run.kern.lookup(run.mask_of(st.args[0]), a[0], a[1]),
    Op.TRANSPOSE: lambda run, k, st, a: a[0],  # the same numbers on the flipped mask
    Op.PROPAGATE: lambda run, k, st, a: run.kern.propagate(
        a[0], a[1], a[2], bool(st.attr("transpose"))
    ),
    Op.READOUT: lambda run, k, st, a: run.kern.readout(a[0]),
    Op.ROW_SUM: lambda run, k, st, a: run.kern.row_sum(run.mask_of(st.args[0]), a[0]),
    Op.DIAGONAL: lambda run, k, st, a: run.kern.diagonal(run.mask_of(st.args[0]), a[0]),
    Op.ADD: _add,
    Op.SUB: _add,
    Op.MUL: lambda run, k, st, a: _no_underflow(run, st, a, run.kern.mul(a[0], a[1])),
    Op.DIV: lambda run, k, st, a: _no_underflow(run, st, a, run.kern.div(a[0], a[1])),
}


@dataclass(frozen=True)
class Fusion:
    """A rule registered beside a backend's table: ``find(plan, const, exported)`` gives
    ``{step: (input, *skipped)}`` — steps computed by ``compute(kern, regs, inner)`` from the
    ``input`` register, their ``skipped`` inner steps not computed — when ``applies(graphs)``."""

    find: Callable[[Plan, list[bool], set[int]], dict[int, tuple[int, ...]]]
    applies: Callable[[Any], bool]
    compute: Callable[[Any, Mapping[int, Any], tuple[int, ...]], Any]


def _missing(run: Run, k: int, st: Step, a: list[Any]) -> Any:  # pragma: no cover
    raise MatlangError(f"no graph-constant kernel for plan op {st.op!r}")


# --------------------------------------------------------------------------- the loop


class PlanStage:
    """Computes a plan's graph constants by a backend's :attr:`table` (see the module
    docstring); a backend is a subclass naming its table, fusions and kernels.

    Args:
        plan: the plan.
        trainable_functions: pointwise functions are MLPs (not constants).
        exact: parameters are constants at their exact value; integers never overflow silently
            (a bound past int64 raises) and divisions give Fractions.
        nonfinite: ``"error"`` raises on a non-finite function value or a division by 0.
    """

    #: the backend's kernels by op (:data:`SHARED` and its own)
    table: ClassVar[Table] = SHARED
    #: rules that compute several steps in one call, tried in order
    fusions: ClassVar[tuple[Fusion, ...]] = ()
    #: whether :meth:`run` counts entries per graph (``per_graph``)
    per_graph_counts: ClassVar[bool] = False
    #: the stage's name in messages
    name: ClassVar[str] = "constant stage"

    def __init__(
        self,
        plan: Plan,
        *,
        trainable_functions: bool = False,
        exact: bool = False,
        nonfinite: str = "error",
    ) -> None:
        self.plan = plan
        self.exact = exact
        self.nonfinite = nonfinite
        self.const = constant_steps(plan, trainable_functions=trainable_functions, exact=exact)
        self.exports = boundary(plan, self.const)
        last = [-1] * len(plan.steps)
        for k, st in enumerate(plan.steps):
            if self.const[k]:
                for a in st.args:
                    last[a] = k
                    m = plan.steps[a].mask
                    if m is not None:
                        last[m] = k
        keep = set(self.exports)
        self._fused = [(rule, rule.find(plan, self.const, keep)) for rule in self.fusions]
        for _, found in self._fused:
            for k, inner in found.items():  # the fused step reads its input register
                last[inner[0]] = max(last[inner[0]], k)
        self._frees: list[list[int]] = [[] for _ in plan.steps]
        for r, k in enumerate(last):
            if k >= 0 and r not in keep:
                self._frees[k].append(r)
        self._program = [
            (k, st, self.table.get(st.op, _missing))
            for k, st in enumerate(plan.steps)
            if self.const[k]
        ]
        self._exactly: dict[int, tuple[bool, Callable[[float], float] | None]] = {}
        # the steps on the way to a Mod: their float values are checked for rounding
        self.mod_exactness = ModExactness(plan, trainable_functions=trainable_functions)

    @property
    def steps(self) -> frozenset[int]:
        return frozenset(k for k, c in enumerate(self.const) if c)

    def kernels(self, graphs: Any) -> Kernels[Any, Any]:
        """The backend's kernels on ``graphs``."""
        raise NotImplementedError

    def _exactness(self, fn: int) -> tuple[bool, Callable[[float], float] | None]:
        """Whether ``fn``'s values are exactly computable (a polynomial, or with ``Mod``:
        :func:`~matlang.functions.exact_degree`), and with ``Mod`` the bound of its arguments
        (:func:`~matlang.functions.mod_argument_bound`); sympy once per function."""
        known = self._exactly.get(fn)
        if known is None:
            f = self.plan.functions[fn]
            known = (
                exact_degree(f.formula, f.symbols) is not None,
                mod_argument_bound(f.formula, f.symbols),
            )
            self._exactly[fn] = known
        return known

    # -- running ---------------------------------------------------------------------------
    def operator(
        self, graphs: Any, regs: Mapping[int, Any], mask: int, values: int, transpose: bool
    ) -> tuple[Any, Any, Any, bool]:
        """The CSR arrays of the matrix ``values`` on ``mask`` (transposed) and whether it is
        symmetric (both registers exported by :meth:`run`)."""
        kern = self.kernels(graphs)
        m, v = regs[mask], regs[values]
        # A on the validated edges is symmetric: no transpose to compare with
        known = (
            graphs.symmetric
            and self.plan.steps[mask].op == Op.EDGES
            and (v.ndim == 0 or v is graphs.weight)
        )
        return kern.csr(m, v, transpose, symmetric=True if known else None)

    def run(self, graphs: Any, *, per_graph: bool = False) -> tuple[dict[int, Any], dict[int, Any]]:
        """Every exported register (masks, values as arrays, 0-d where the same on every
        entry), and the number of entries of every register computed (a mask's entries, a
        value's size); ``per_graph``: those numbers for each graph, ``(G,)`` arrays."""
        if per_graph and not self.per_graph_counts:
            raise MatlangError(f"the {self.name} keeps no per-graph counts")
        run = Run(self, self.kernels(graphs), graphs)
        regs = run.regs
        sizes: dict[int, Any] = {}
        fused: dict[int, tuple[Fusion, tuple[int, ...]]] = {}
        for rule, found in self._fused:
            if found and rule.applies(graphs):
                fused.update((k, (rule, inner)) for k, inner in found.items())
        skipped = {r for _, inner in fused.values() for r in inner[1:]}
        ranges: dict[int, tuple[float, float]] = {}  # of the steps on the way to a Mod
        for k, st, kernel in self._program:
            v: Any = None  # a skipped step: not computed
            if k in fused:
                rule, inner = fused[k]
                v = rule.compute(run.kern, regs, inner)
            elif k not in skipped:
                v = kernel(run, k, st, [regs[x] for x in st.args])
            regs[k] = v
            if v is not None and k in self.mod_exactness.steps:  # no rounding before a Mod
                self._check_rounding(graphs, k, st, v, regs, ranges)
            if per_graph:
                sizes[k] = self.graph_counts(graphs, st, v, sizes)
            elif k in skipped:  # not computed: no entries
                sizes[k] = 0
            else:
                sizes[k] = v.nnz if st.kind == MASK else size_of(st, regs, graphs)
            for r in self._frees[k]:
                regs.pop(r, None)
        return {k: regs[k] for k in self.exports if k in regs}, sizes

    def graph_counts(self, graphs: Any, st: Step, v: Any, sizes: dict[int, Any]) -> Any:
        """The entries of ``v`` (step ``st``) on each graph (:attr:`per_graph_counts`)."""
        raise NotImplementedError  # pragma: no cover

    def _check_rounding(
        self, gr: Any, k: int, st: Step, v: Any, regs: dict[int, Any],
        ranges: dict[int, tuple[float, float]],
    ) -> None:
        """Refuse a float64 step on the way to a ``Mod`` that rounded (:mod:`.exactness`)."""
        self.mod_exactness.check(
            k, v, [regs[a] for a in st.args], regs, dtype="float64",
            graph=lambda i: gr.label(graph_of(regs, st, gr, i)),
            graph_size=lambda: int((gr.ptr[1:] - gr.ptr[:-1]).max()) if gr.g else 0,
            advice="evaluate the sentence exactly (matlang.evaluate)", ranges=ranges,
        )

    def _mod_error(
        self,
        st: Step,
        top: float,
        graph: str,
        way: str = "",
        dtype: str = "float64",
        bits: int = 53,
    ) -> EvaluationError:
        """:func:`~matlang.functions.mod_refusal` for ``st``'s function on ``graph``; ``way``:
        a way out besides the exact evaluator (both stages and the interpreter raise it)."""
        name = self.plan.functions[st.attr("fn")].name
        what = f"{name}(...) in {st.note or 'the sentence'}"
        advice = f"{way}evaluate the sentence exactly (matlang.evaluate)"
        return EvaluationError(mod_refusal(what, top, graph, advice, dtype, bits))


__all__ = [
    "Fusion",
    "Kernel",
    "PlanStage",
    "Run",
    "SHARED",
    "Table",
    "boundary",
    "constant_steps",
    "graph_of",
    "scalar",
    "underflow_at",
    "underflow_error",
    "size_of",
]
