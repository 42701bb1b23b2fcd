"""The graph-constant stage of a Plan: every step that depends only on the graph, on GraphBLAS.

A step is a graph constant when nothing it reads is a node input or a trainable parameter: the
masks, ``A`` and every product, Hadamard product, diagonal, degree, trace and fixed function of
those. :class:`ConstantStage` finds them in a :class:`~compiler.plan.Plan` and computes them once
per batch with :mod:`runtime.graphblas` (masked ``mxm`` that never forms the unmasked product,
int64 where the values are integers); :meth:`ConstantStage.evaluate` returns the registers the
learnable stage reads, as torch tensors (masks as ``(2, M)`` indices in the interpreter's order,
values without a copy where the dtype allows).

Its twin in torch, for batches on a GPU, is :mod:`compiler.torch_constants` (same steps, same
values, on the batch's device); a compiled module picks one by its ``constants`` option.

With ``exact=True`` (:func:`~compiler.exact.evaluate_exact`) parameters count as constants at
their exact values, so a sentence without node inputs is computed whole: integers and
Fractions like the dense evaluator, on graphs far too large for it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import numpy as np

from matlang.compiler.interpret import (
    SHARED,
    Fusion,
    Kernel,
    PlanStage,
    Run,
    boundary,
    constant_steps,
    graph_of,
    scalar,
    size_of,
    underflow_at,
    underflow_error,
)
from matlang.compiler.plan import EDGE, GRAPH, NODE, Op, Plan, Step
from matlang.errors import EvaluationError
from matlang.functions import (
    FLOAT32_EXACT,
    FLOAT_EXACT,
    numeric,
)
from matlang.runtime import kernels
from matlang.runtime.graphblas import Kernels, Mask, as_float64, is_iso, maxabs
from matlang.runtime.kernels import GraphView

#: A matrix of Fractions comes back dense (object array) up to this many nodes.
DENSE_RATIONAL_LIMIT = 4096



#: The GraphBLAS stage's view of a batch (numpy arrays): :class:`~runtime.kernels.GraphView`.
Graphs = GraphView[np.ndarray]


# --------------------------------------------------------------------------- the table


def _stage(run: Run) -> ConstantStage:
    stage = run.stage
    assert isinstance(stage, ConstantStage)
    return stage


def _const(run: Run, k: int, st: Step, a: list[Any]) -> np.ndarray:
    return _number(st.attr("value"), run.stage.exact, run.graphs.g)


def _param(run: Run, k: int, st: Step, a: list[Any]) -> np.ndarray:
    value = next(p.value for p in run.stage.plan.params if p.name == st.attr("name"))
    return _number(value, True, run.graphs.g)


def _sampled(run: Run, k: int, st: Step, a: list[Any]) -> np.ndarray:
    s = a[2]
    ma, mb = run.mask_of(st.args[0]), run.mask_of(st.args[1])
    if s.nnz == 0:
        return np.zeros(0, dtype=np.int64)
    return run.kern.sampled(ma, a[0], mb, a[1], s)  # type: ignore[no-any-return]


def _nonzero(run: Run, k: int, st: Step, a: list[Any]) -> np.ndarray:
    gr: Graphs = run.graphs
    zero = np.asarray(a[0] == 0)
    if run.stage.nonfinite == "error" and bool(zero.any()):
        g = int(np.nonzero(np.broadcast_to(zero, (gr.g,)))[0][0])
        raise EvaluationError(
            f"division by zero on graph {gr.label(g)}: the divisor {st.attr('what')} is 0"
        )
    return a[0]  # type: ignore[no-any-return]


def _diagonal_values(run: Run, k: int, st: Step, a: list[Any]) -> np.ndarray:
    return np.full(run.graphs.n, a[0]) if is_iso(a[0]) else a[0]


#: The GraphBLAS stage's kernels (numpy arrays, :class:`~runtime.graphblas.Mask`).
GRAPHBLAS: dict[Op, Kernel] = {
    **SHARED,
    Op.EDGES: lambda run, k, st, a: Mask.from_sorted_coo(
        run.graphs.n, run.graphs.rows, run.graphs.cols, run.graphs.indptr
    ),
    Op.IDENTITY: lambda run, k, st, a: Mask.identity(run.graphs.n),
    Op.EMPTY: lambda run, k, st, a: Mask.empty(run.graphs.n),
    Op.FULL: lambda run, k, st, a: Mask.full(run.graphs.ptr),
    Op.ONES: lambda run, k, st, a: np.array(1, dtype=np.int64),
    Op.CONST: _const,
    Op.PARAM: _param,
    Op.ADJACENCY: lambda run, k, st, a: (
        np.array(1, dtype=np.int64) if run.graphs.weight is None else run.graphs.weight
    ),
    Op.GATHER_ROW: lambda run, k, st, a: a[0] if is_iso(a[0]) else a[0][a[1].rows],
    Op.GATHER_COL: lambda run, k, st, a: a[0] if is_iso(a[0]) else a[0][a[1].cols],
    Op.BROADCAST_EDGE: lambda run, k, st, a: a[0][run.graphs.node_graph[a[1].rows]],
    Op.SAMPLED: _sampled,
    Op.BROADCAST: lambda run, k, st, a: a[0][run.graphs.node_graph],
    Op.AS_EDGE: _diagonal_values,
    Op.AS_NODE: _diagonal_values,
    Op.NEG: lambda run, k, st, a: np.negative(a[0]),
    Op.NONZERO: _nonzero,
    Op.APPLY: lambda run, k, st, a: _stage(run)._apply(run.graphs, run.regs, k, st, a),
}


def _triangle_readouts(
    plan: Plan, const: list[bool], exported: set[int]
) -> dict[int, tuple[int, ...]]:
    """The readouts that are ``tr(A³)`` of the edges' adjacency, by their inner steps:
    ``readout(row_sum(mul(A, sampled(A, A, E))))`` with ``A = adjacency(E)`` on the edge mask
    ``E``, where the row sum, the product and the sampled ``A²`` are read by nothing else and
    not exported. ``{readout: (E, row_sum, mul, sampled)}``; the stage computes such a readout
    by :meth:`~runtime.graphblas.Kernels.triangle_trace` when ``A`` is 0/1 and symmetric."""
    users: list[list[int]] = [[] for _ in plan.steps]
    for k, st in enumerate(plan.steps):
        for a in {*st.args, *(() if st.mask is None else (st.mask,))}:
            users[a].append(k)

    def only(r: int, k: int) -> bool:
        return users[r] == [k] and r not in exported and const[r]

    steps = plan.steps
    out: dict[int, tuple[int, ...]] = {}
    for k, st in enumerate(steps):
        if st.op != "readout" or not const[k]:
            continue
        rs = st.args[0]
        if steps[rs].op != "row_sum" or not only(rs, k):
            continue
        mul = steps[rs].args[0]
        if steps[mul].op != "mul" or not only(mul, rs):
            continue
        x, y = steps[mul].args
        if steps[x].op == "sampled":
            x, y = y, x
        sx, sy = steps[x], steps[y]
        if sx.op != "adjacency" or sy.op != "sampled" or not only(y, mul):
            continue
        edges = sx.args[0]
        if (
            steps[edges].op != "edges"
            or sy.args != (x, x, edges)
            or sy.mask != edges
            or steps[mul].mask != edges
        ):
            continue
        out[k] = (edges, rs, mul, y)
    return out


#: tr(A³) of a 0/1 symmetric A by the triangle count: its three inner steps are skipped.
TRIANGLES = Fusion(
    find=_triangle_readouts,
    applies=lambda graphs: graphs.weight is None and graphs.symmetric,
    compute=lambda kern, regs, inner: kern.triangle_trace(regs[inner[0]]),
)


class ConstantStage(PlanStage):
    """Computes a plan's graph constants on GraphBLAS (see the module docstring): the loop of
    :class:`~compiler.interpret.PlanStage` with the table :data:`GRAPHBLAS` and the triangle
    count registered as a fusion.

    Args:
        plan: the plan.
        trainable_functions: pointwise functions are MLPs (not constants).
        exact: parameters are constants at their exact value; integers never overflow silently
            (a bound past int64 raises) and divisions give Fractions.
        nonfinite: ``"error"`` raises on a non-finite function value or a division by 0.
    """

    table = GRAPHBLAS
    fusions = (TRIANGLES,)
    per_graph_counts = True
    name = "GraphBLAS constant stage"

    def __init__(
        self,
        plan: Plan,
        *,
        trainable_functions: bool = False,
        exact: bool = False,
        nonfinite: str = "error",
    ) -> None:
        super().__init__(
            plan, trainable_functions=trainable_functions, exact=exact, nonfinite=nonfinite
        )
        self._functions: dict[tuple[int, bool], Callable[..., Any]] = {}

    @property
    def _triangles(self) -> dict[int, tuple[int, ...]]:
        """The readouts the triangle count computes (:func:`_triangle_readouts`)."""
        return next((found for rule, found in self._fused if rule is TRIANGLES), {})

    def kernels(self, graphs: Graphs) -> kernels.Kernels[np.ndarray, Mask]:
        return Kernels(graphs.n, graphs.ptr, graphs.node_graph, exact=self.exact)

    def graph_counts(self, graphs: Graphs, st: Step, v: Any, sizes: dict[int, Any]) -> Any:
        if isinstance(v, Mask):  # block-diagonal: graph g's rows are its nodes
            return np.diff(v.indptr[graphs.ptr])
        if st.kind == EDGE:
            assert st.mask is not None
            return sizes[st.mask]
        return np.diff(graphs.ptr) if st.kind == NODE else np.ones(graphs.g, np.int64)

    def _function(self, fn: int, exact: bool) -> Callable[..., Any]:
        """Function ``fn`` on numpy arrays (``exact``: on Python numbers)."""
        hit = self._functions.get((fn, exact))
        if hit is None:
            f = self.plan.functions[fn]
            hit = numeric(f.formula, f.symbols, "exact" if exact else "numpy")
            self._functions[(fn, exact)] = hit
        return hit

    def _apply(self, gr: Graphs, regs: dict[int, Any], k: int, st: Step, a: list[Any]) -> Any:
        size = size_of(st, regs, gr)
        args = [np.broadcast_to(x, (size,)) for x in a]
        computable, mod_bound = self._exactness(st.attr("fn"))
        # exact on integers and Fractions only: a float (a weight) read exactly is still a float
        exact = computable and self.exact and all(np.asarray(x).dtype.kind != "f" for x in a)
        if mod_bound is not None and not exact:
            # a remainder of a float past 2⁵³ is noise, not a rounding: integers go exact
            exact = self._mod_exactly(gr, regs, st, args, computable, mod_bound)
        fn = self._function(st.attr("fn"), exact)
        if exact:
            out = fn(*[np.asarray(x, dtype=object) for x in args])
        else:
            with np.errstate(all="ignore"):
                name = self.plan.functions[st.attr("fn")].name
                where = f"{name}(...) in {st.note or 'the sentence'}"
                out = fn(*[as_float64(x, where) for x in args])
        out = np.asarray(out)
        if out.ndim == 0 or out.shape != (size,):
            out = np.broadcast_to(out, (size,)).copy()
        if exact:
            return shrink_exact(out)
        out = out.astype(np.float64)
        if self.nonfinite == "error" and not np.isfinite(out).all():
            i = int(np.nonzero(~np.isfinite(out))[0][0])
            name = self.plan.functions[st.attr("fn")].name
            raise EvaluationError(
                f"{name}(...) in {st.note or 'the sentence'} is {out[i]} on graph "
                f"{gr.label(graph_of(regs, st, gr, i))} (compile with "
                "nonfinite='keep' to keep inf/nan)"
            )
        return out

    def _mod_exactly(
        self,
        gr: Graphs,
        regs: dict[int, Any],
        st: Step,
        args: list[Any],
        computable: bool,
        mod_bound: Callable[[float], float],
    ) -> bool:
        """Whether a function with ``Mod`` must run on Python numbers: where a remainder's
        argument may reach 2⁵³, integer values are computed exactly, and floats are refused."""
        if not args or args[0].size == 0:
            return False
        sizes = [np.abs(np.asarray(x, dtype=np.float64)) for x in args]
        top = max(float(x.max()) for x in sizes)
        if mod_bound(top) < FLOAT_EXACT:
            return False
        if computable and all(np.asarray(x).dtype.kind in "iub" for x in args):
            return True
        at = next(int(np.argmax(x)) for x in sizes if float(x.max()) == top)
        raise self._mod_error(st, top, gr.label(graph_of(regs, st, gr, at)))

def no_underflow(
    module: Any, step: Step, x: Any, y: Any, out: Any, label: Callable[[int], str]
) -> Any:
    """``out`` of a compiled module's product or quotient step, or (``nonfinite="error"``) an
    error where it underflowed a nonzero value to 0 — as an overflow to inf is refused. Read
    back only for graph values and products with a number literal (where tiny values come
    from): other steps are not read back (a device sync per step). ``label``: an entry's graph
    (the entry's row: its node, edge or graph)."""
    if module.nonfinite != "error" or not out.is_floating_point():
        return out
    steps = module.plan.steps
    if step.kind != GRAPH and not any(steps[a].op in ("param", "const") for a in step.args):
        return out
    at = underflow_at(step.op, x.detach(), y.detach(), out.detach())
    if at is not None:
        raise underflow_error(step, label(at // max(out.shape[1:].numel(), 1)))
    return out



def _graph_of(plan: Plan, regs: dict[int, Any], st: Step, gr: Graphs, i: int) -> int:
    return graph_of(regs, st, gr, i)  # (the signature _mod_exactly calls)


def _number(value: Fraction, exact: bool, g: int) -> np.ndarray:
    """A scalar on every graph (:func:`~compiler.interpret.scalar`): int64 when whole, a
    Fraction (exact) or a float otherwise."""
    x = scalar(value, exact)
    if isinstance(x, Fraction):
        out = np.empty(g, dtype=object)
        out[:] = [x] * g
        return out
    return np.full(g, x, dtype=np.int64 if isinstance(x, int) else np.float64)


def shrink_exact(x: np.ndarray) -> np.ndarray:
    """Exact results as int64 where every entry is a whole number that fits, else objects."""
    flat = list(x.flat)
    if all(isinstance(v, (int, np.integer)) or (isinstance(v, Fraction) and v.denominator == 1)
           for v in flat):
        ints = [int(v) for v in flat]
        if not ints or max(abs(v) for v in ints) < 2**62:
            return np.array(ints, dtype=np.int64).reshape(x.shape)
    out = np.empty(x.shape, dtype=object)
    out.flat[:] = [int(v) if isinstance(v, Fraction) and v.denominator == 1 else v for v in flat]
    return out


# --------------------------------------------------------------------------- torch side


def graphs_of(
    batch: Any, edges: Any, weight: Any, *, fingerprint: tuple[Any, ...] | None = None
) -> Graphs:
    """The stage's view of a :class:`runtime.batch.Batch` whose prepared (coalesced) edges are
    ``edges`` (``(2, E)`` int64) and ``weight`` (float64 or ``None``); ``symmetric`` when the
    batch passed validation (:meth:`~runtime.batch.Batch.known_symmetric`; ``fingerprint``:
    the batch's, as the caller took it)."""
    ei = edges.detach().cpu().numpy()
    w = None
    if weight is not None:
        w = weight.detach().cpu().numpy()
        if np.array_equal(w, np.round(w)) and (w.size == 0 or np.abs(w).max() < 2**53):
            w = w.astype(np.int64)
    return Graphs(
        batch.num_nodes,
        batch.ptr.detach().cpu().numpy().astype(np.int64, copy=False),
        batch.batch.detach().cpu().numpy().astype(np.int64, copy=False),
        ei[0],
        ei[1],
        w,
        batch.graph_label,
        symmetric=_known_symmetric(batch, fingerprint),
        indptr=_row_pointers(batch, fingerprint, int(ei.shape[1])),
    )


def _row_pointers(batch: Any, fingerprint: tuple[Any, ...] | None, e: int) -> np.ndarray | None:
    """The row pointers validation counted for the batch's edges (int64), ``None`` when it did
    not (or they do not end at the ``e`` prepared edges)."""
    known = getattr(batch, "row_pointers", None)
    indptr = None if known is None else known(fingerprint=fingerprint)
    if indptr is None or int(indptr[-1]) != e:
        return None
    return indptr.astype(np.int64, copy=False)


def _known_symmetric(batch: Any, fingerprint: tuple[Any, ...] | None) -> bool:
    known = getattr(batch, "known_symmetric", None)
    if known is None:
        return False
    return bool(known() if fingerprint is None else known(fingerprint=fingerprint))


def to_torch(value: Any, size: int, dtype: Any) -> Any:
    """A stage value as a torch tensor of ``dtype`` (a mask as its ``(2, M)`` index)."""
    import torch

    if isinstance(value, Mask):
        return torch.from_numpy(np.stack([value.rows, value.cols]))
    if is_iso(value):
        v = value.item()
        _warn_float32(abs(v), dtype)
        return torch.full((size,), float(v), dtype=dtype)
    if value.dtype == object:
        value = value.astype(np.float64)
    elif value.dtype.kind in "iub" and dtype == torch.float32 and value.size:
        _warn_float32(maxabs(value), dtype)
    # numpy casts to float32/float64 itself (the same rounding as torch's): the first torch op
    # after GraphBLAS costs 20–40 µs, from_numpy a fraction of that
    if dtype == torch.float64 or dtype == torch.float32:
        want = np.float64 if dtype == torch.float64 else np.float32
        return torch.from_numpy(np.ascontiguousarray(value, dtype=want))
    return torch.from_numpy(np.ascontiguousarray(value)).to(dtype)


def _warn_float32(bound: float, dtype: Any) -> None:
    import torch

    if dtype == torch.float32 and math.isfinite(bound) and bound > FLOAT32_EXACT:
        warnings.warn(
            f"a graph constant of this sentence reaches {bound:.0f}, past 2**24: float32 rounds "
            "it; compile with dtype=torch.float64 (or call .double()) for exact counts",
            stacklevel=4,
        )


__all__ = [
    "ConstantStage",
    "FLOAT32_EXACT",
    "Graphs",
    "boundary",
    "constant_steps",
    "graphs_of",
    "size_of",
    "to_torch",
    "no_underflow",
    "shrink_exact",
    "underflow_at",
    "underflow_error",
]
