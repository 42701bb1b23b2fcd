"""The cost model: predicted peak bytes and FLOPs of a plan, per graph.

Sizes, for one graph with ``n`` nodes and ``E`` directed edges (``2·|edges|``):

* a node value holds ``n`` numbers, a graph scalar 1, an edge value ``|S|`` numbers for its mask
  ``S``, and a mask ``|S|`` entries of two int64 indices (16 bytes);
* mask sizes are exact when a graph is given (:func:`mask_sizes`, from the graph's structure) and
  otherwise estimated from ``n`` and ``E``: ``|E|``, ``|I| = n``, ``|J| = n²``,
  ``|S∘T| ≈ |S|·|T|/n`` (the average-degree estimate, at most ``n²``), ``|S∪T| ≤ |S| + |T|``;
* a composition or a sampled product enumerates every path ``i → k → j`` of its two operands:
  ``paths(S, T) = Σ_k colcount_S(k)·rowcount_T(k)`` (``≈ |S|·|T|/n``), held while it runs.

FLOPs: ``propagate`` 2|S| (one multiply-add per entry), ``sampled`` 2·paths, pointwise ops one
per number (a function ``f`` costs its sympy operation count per number), readouts and row sums
one per summand. Index work (composition, union, look-up, gathers) moves memory but is not
counted as FLOPs. Peak bytes: the largest sum, over the steps, of the registers alive at that step
(the interpreter frees a register after its last use) plus that step's temporaries, plus the
batch itself (the edge index and the node-to-graph vector).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sps
import sympy as sp

from matlang.compiler.plan import EDGE, GRAPH, MASK, NODE, Op, Plan, Step

N, E = sp.symbols("n E", positive=True)

_INDEX_BYTES = 16  # one mask entry: two int64 indices


@dataclass(frozen=True)
class Cost:
    """Predicted peak bytes and FLOPs of one forward pass on one graph."""

    peak_bytes: Any
    flops: Any
    mask_entries: dict[int, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "predicted_bytes": _plain(self.peak_bytes),
            "predicted_flops": _plain(self.flops),
            "mask_entries": {str(k): _plain(v) for k, v in self.mask_entries.items()},
        }


def _plain(v: Any) -> Any:
    if isinstance(v, sp.Basic):
        return str(v)
    return int(v)


# --------------------------------------------------------------------------- mask sizes
# One table per way of sizing a mask op (exact on a graph, estimated in n and E), keyed by the
# op enum; tests/compiler/test_op_tables.py checks that each covers exactly the mask ops.

#: a scipy CSR matrix (scipy ships no precise types for it)
Csr = Any


def _exact_compose(ms: list[Csr], n: int, pattern: Csr) -> tuple[Csr, int | None]:
    prod = ms[0] @ ms[1]
    return (prod != 0).astype(np.int64), int(prod.sum())


#: ``op → (argument masks, n, the graph's pattern) → (mask, paths enumerated or None)``
EXACT_MASKS: dict[Op, Callable[[list[Csr], int, Csr], tuple[Csr, int | None]]] = {
    Op.EDGES: lambda ms, n, pattern: (pattern, None),
    Op.IDENTITY: lambda ms, n, pattern: (sps.identity(n, dtype=np.int64, format="csr"), None),
    Op.EMPTY: lambda ms, n, pattern: (sps.csr_matrix((n, n), dtype=np.int64), None),
    Op.FULL: lambda ms, n, pattern: (sps.csr_matrix(np.ones((n, n), dtype=np.int64)), None),
    Op.COMPOSE: _exact_compose,
    Op.UNION: lambda ms, n, pattern: (((ms[0] + ms[1]) != 0).astype(np.int64), None),
    Op.FLIP: lambda ms, n, pattern: (ms[0].T.tocsr(), None),
}


def _estimated_compose(sizes: list[Any]) -> tuple[Any, Any]:
    p = sizes[0] * sizes[1] / N
    return sp.Min(N**2, p), p


#: ``op → (argument masks' sizes) → (size, paths enumerated or None)``, sympy in ``n``, ``E``
ESTIMATED_MASKS: dict[Op, Callable[[list[Any]], tuple[Any, Any]]] = {
    Op.EDGES: lambda sizes: (E, None),
    Op.IDENTITY: lambda sizes: (N, None),
    Op.EMPTY: lambda sizes: (sp.Integer(0), None),
    Op.FULL: lambda sizes: (N**2, None),
    Op.COMPOSE: _estimated_compose,
    Op.UNION: lambda sizes: (sp.Min(N**2, sizes[0] + sizes[1]), None),
    Op.FLIP: lambda sizes: (sizes[0], None),
}


def mask_sizes(plan: Plan, adjacency: Any) -> tuple[dict[int, int], dict[int, int]]:
    """Exact entries of every mask register of ``plan`` on one graph, and the number of paths
    each ``compose``/``sampled`` step enumerates. ``adjacency`` is an n×n array (or a Graph)."""
    a = np.asarray(getattr(adjacency, "adjacency", adjacency))
    n = a.shape[0]
    pattern = sps.csr_matrix((a != 0).astype(np.int64))
    masks: dict[int, Csr] = {}
    paths: dict[int, int] = {}
    for k, s in enumerate(plan.steps):
        if s.kind == MASK:
            m, p = EXACT_MASKS[s.op]([masks[j] for j in s.args], n, pattern)
            masks[k] = sps.csr_matrix(m)
            if p is not None:
                paths[k] = p
        elif s.op == Op.SAMPLED:
            left = masks[plan.steps[s.args[0]].mask or 0]
            right = masks[plan.steps[s.args[1]].mask or 0]
            # Σ_k colcount_L(k) · rowcount_R(k)
            cols = np.asarray(left.sum(axis=0)).reshape(-1)
            rows = np.asarray(right.sum(axis=1)).reshape(-1)
            paths[k] = int(cols @ rows)
    return {k: int(m.nnz) for k, m in masks.items()}, paths


def estimated_sizes(plan: Plan) -> tuple[dict[int, Any], dict[int, Any]]:
    """Mask entries and path counts as sympy expressions in ``n`` and ``E``."""
    sizes: dict[int, Any] = {}
    paths: dict[int, Any] = {}
    for k, s in enumerate(plan.steps):
        if s.kind == MASK:
            sizes[k], p = ESTIMATED_MASKS[s.op]([sizes[j] for j in s.args])
            if p is not None:
                paths[k] = p
        elif s.op == Op.SAMPLED:
            left = sizes[plan.steps[s.args[0]].mask or 0]
            right = sizes[plan.steps[s.args[1]].mask or 0]
            paths[k] = left * right / N
    return sizes, paths


# --------------------------------------------------------------------------- the model


def _function_ops(plan: Plan) -> list[int]:
    return [max(1, int(sp.count_ops(f.formula))) for f in plan.functions]


@dataclass(frozen=True)
class _Sizes:
    """What a step's cost reads: the plan, ``n``, mask sizes, path counts, bytes a number,
    and each function's operation count."""

    plan: Plan
    n: Any
    sizes: dict[int, Any]
    paths: dict[int, Any]
    dtype_bytes: int
    fops: list[int]

    def numbers(self, k: int) -> Any:
        s = self.plan.steps[k]
        if s.kind == NODE:
            return self.n
        if s.kind == GRAPH:
            return 1
        if s.kind == EDGE:
            assert s.mask is not None
            return self.sizes[s.mask]
        return self.sizes[k]


def _free(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return 0, 0


def _propagate(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    m = c.sizes[s.args[0]]
    return 2 * m, m * c.dtype_bytes  # one multiply-add an entry; the messages w_ij h_j


def _sampled(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    p = c.paths[k]
    return 2 * p, p * (_INDEX_BYTES + 8 + c.dtype_bytes)  # rows, cols, term ids, the terms


def _compose(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return 0, c.paths[k] * (_INDEX_BYTES + 8)


def _index_work(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return 0, c.numbers(s.args[0]) * 8 + c.numbers(k) * 8


def _pointwise(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return c.numbers(k), 0


def _apply(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return c.numbers(k) * c.fops[s.attr("fn")], 0


def _summing(c: _Sizes, s: Step, k: int) -> tuple[Any, Any]:
    return c.numbers(s.args[0]), 0  # one addition a summand


#: ``op → (sizes, step, register) → (FLOPs, temporary bytes)``: every op, those that cost
#: neither (leaves, masks' own entries, gathers, views) explicitly free
STEP_COSTS: dict[Op, Callable[[_Sizes, Step, int], tuple[Any, Any]]] = {
    **{op: _free for op in Op},
    Op.PROPAGATE: _propagate,
    Op.SAMPLED: _sampled,
    Op.COMPOSE: _compose,
    Op.UNION: _index_work,
    Op.LOOKUP: _index_work,
    **{op: _pointwise for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.NEG)},
    Op.APPLY: _apply,
    Op.READOUT: _summing,
    Op.DIAGONAL: _summing,
    Op.ROW_SUM: _summing,
}


def evaluate_cost(
    plan: Plan,
    n: Any,
    e: Any,
    sizes: dict[int, Any],
    paths: dict[int, Any],
    *,
    dtype_bytes: int = 4,
    maximum: Callable[..., Any] = max,
    peak: bool = True,
) -> Cost:
    """Peak bytes and FLOPs from the node count, the edge count and the mask sizes (numbers or
    sympy expressions alike); ``peak=False``: FLOPs only (the peak is the batch's bytes)."""
    steps = plan.steps
    ctx = _Sizes(plan, n, sizes, paths, dtype_bytes, _function_ops(plan))

    def nbytes(k: int) -> Any:
        return ctx.numbers(k) * (_INDEX_BYTES if steps[k].kind == MASK else dtype_bytes)

    last = plan.last_use() if peak else []
    base = e * _INDEX_BYTES + n * 8  # the batch: edge_index and the node-to-graph vector
    live: Any = 0
    candidates: list[Any] = [base]
    flops: Any = 0
    for k, s in enumerate(steps):
        f, temp = STEP_COSTS[s.op](ctx, s, k)
        flops += f
        if not peak:
            continue
        live = live + nbytes(k)
        candidates.append(base + live + temp)
        for reg in range(k + 1):
            if last[reg] == k:
                live = live - nbytes(reg)
    top = maximum(*candidates) if len(candidates) > 1 else base
    return Cost(top, flops, {k: v for k, v in sizes.items()})


def predict(plan: Plan, graph: Any, *, dtype_bytes: int = 4) -> Cost:
    """The cost of one forward pass on ``graph`` (a Graph or an adjacency), with its exact mask
    sizes."""
    a = np.asarray(getattr(graph, "adjacency", graph))
    n = int(a.shape[0])
    e = int(np.count_nonzero(a))
    sizes, paths = mask_sizes(plan, a)
    return evaluate_cost(plan, n, e, sizes, paths, dtype_bytes=dtype_bytes)


def symbolic(plan: Plan, *, dtype_bytes: int = 4) -> Cost:
    """The cost as sympy expressions in ``n`` (nodes) and ``E`` (directed edges), with the
    estimated mask sizes."""
    sizes, paths = estimated_sizes(plan)
    cost = evaluate_cost(
        plan, N, E, sizes, paths, dtype_bytes=dtype_bytes, maximum=lambda *xs: sp.Max(*xs)
    )
    return Cost(
        sp.simplify(cost.peak_bytes),
        sp.expand(cost.flops),
        {k: sp.simplify(v) for k, v in cost.mask_entries.items()},
    )


def symbolic_flops(plan: Plan) -> Any:
    """``symbolic(plan).flops`` without the peak bytes' and mask sizes' simplification (a
    layer's ``repr`` shows FLOPs: milliseconds instead of a second)."""
    sizes, paths = estimated_sizes(plan)
    return sp.expand(evaluate_cost(plan, N, E, sizes, paths, peak=False).flops)


def describe(plan: Plan, *, dtype_bytes: int = 4) -> str:
    """The cost model as text (for ``--explain``): masks, FLOPs and peak bytes per graph."""
    cost = symbolic(plan, dtype_bytes=dtype_bytes)
    lines = [f"cost model (per graph; n nodes, E directed edges, {dtype_bytes}-byte numbers):"]
    for info in plan.masks:
        lines.append(
            f"  mask {plan.name(info.register)} = {info.support}: ≈ "
            f"{cost.mask_entries[info.register]} entries"
        )
    lines.append(f"  layers: {plan.layers()}")
    lines.append(f"  FLOPs ≈ {cost.flops}")
    lines.append(f"  peak bytes ≈ {cost.peak_bytes}")
    return "\n".join(lines)


__all__ = [
    "ESTIMATED_MASKS",
    "EXACT_MASKS",
    "STEP_COSTS",
    "Cost",
    "symbolic_flops",
    "N",
    "E",
    "mask_sizes",
    "estimated_sizes",
    "evaluate_cost",
    "predict",
    "symbolic",
    "describe",
]
