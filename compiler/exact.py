"""Exact evaluation on sparse graphs: a sentence without node inputs evaluated whole on
GraphBLAS, exactly (integers stay integers, divisions give Fractions) — what
:func:`matlang.evaluator.evaluate` gives, for graphs the dense evaluator cannot hold. The
constant stage of :mod:`compiler.constants` run with ``exact=True``; :func:`evaluate_sparse`
is its face (``matlang.evaluate(..., sparse=True)``, ``matlang eval --sparse``)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sps
import torch

from matlang.compiler.constants import (
    DENSE_RATIONAL_LIMIT,
    ConstantStage,
    Graphs,
    graphs_of,
    shrink_exact,
)
from matlang.compiler.lower import lower
from matlang.compiler.plan import Plan
from matlang.errors import EvaluationError
from matlang.graphs import is_one_graph, sparse_pattern
from matlang.parser import as_program
from matlang.runtime.batch import Batch, as_batch
from matlang.runtime.graphblas import is_iso
from matlang.runtime.masks import prepared_edges


def evaluate_exact(plan: Plan, graphs: Graphs) -> list[Any]:
    """The plan's outputs computed whole on GraphBLAS, exactly (needs a plan without node
    inputs): graph level ``(G,)``, node level ``(N,)``, a matrix ``(Mask, values)``."""
    if plan.inputs:
        raise EvaluationError(
            "exact sparse evaluation needs a sentence without node inputs "
            f"(it declares {', '.join(plan.inputs)})"
        )
    stage = ConstantStage(plan, exact=True)
    regs, _ = stage.run(graphs)
    out: list[Any] = []
    for o in plan.outputs:
        v = regs[o.register]
        if o.level == "matrix":
            m = plan.steps[o.register].mask
            assert m is not None
            out.append((regs[m], v))
        else:
            size = gr_size(o.level, graphs)
            out.append(np.broadcast_to(v, (size,)) if is_iso(v) else v)
    return out


def gr_size(level: str, graphs: Graphs) -> int:
    return graphs.g if level == "graph" else graphs.n



def evaluate_sparse(expr: Any, graph: Any) -> Any:
    """The exact value of a sentence without node inputs on sparse graphs, on GraphBLAS: what
    :func:`matlang.evaluator.evaluate` gives, for graphs the dense evaluator cannot hold.

    ``graph``: a :class:`runtime.batch.Batch`, a PyG ``Data``/``Batch``, a scipy sparse
    adjacency, a Graph or a list of graphs. Scalars come back as ``int``/``Fraction`` (``float``
    after a non-polynomial function), vectors as 1-D numpy arrays, a matrix as a scipy CSR
    array (int64 or float64); one value per graph (a list) unless one graph was given.
    """
    program = as_program(expr)
    if len(program.sentences) != 1:
        raise EvaluationError(
            f"evaluate takes one sentence, got {len(program.sentences)} (evaluate them one by one)"
        )
    plan = lower(program)
    if hasattr(graph, "tocoo") and not hasattr(graph, "edge_index"):  # scipy sparse
        single = True
        batch = _sparse_batch(graph)
    else:
        # the dense evaluator's rule (matlang.graphs): a PyG Batch of one graph is a list
        single = is_one_graph(graph)
        batch = as_batch(graph)
    edges, weight = prepared_edges(batch)
    with torch.no_grad():
        graphs = graphs_of(batch, edges, weight)
    (value,) = evaluate_exact(plan, graphs)
    out = _split(plan.outputs[0].level, value, graphs)
    return out[0] if single else out


def _sparse_batch(matrix: Any) -> Any:
    """A scipy sparse 0/1 adjacency as a validated batch of one graph; checked by the dense
    evaluator's rule (:func:`matlang.graphs.sparse_pattern`: a weighted matrix is refused)."""
    n, rows, cols = sparse_pattern(matrix)
    edge_index = torch.from_numpy(np.stack([rows, cols]))
    return Batch.from_edge_index(edge_index, num_nodes=n).validate()


def _python(v: Any) -> Any:
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, Fraction) and v.denominator == 1:
        return int(v)
    return v


def _split(level: str, value: Any, graphs: Graphs) -> list[Any]:
    """One value per graph."""
    ptr = graphs.ptr
    if level == "graph":
        return [_python(v) for v in np.asarray(value).tolist()] if value.dtype != object else [
            _python(v) for v in value
        ]
    if level == "node":
        if value.dtype == object:
            value = shrink_exact(value)
        return [np.asarray(value[a:b]) for a, b in zip(ptr[:-1], ptr[1:])]
    mask, vals = value
    vals = np.broadcast_to(vals, (mask.nnz,))
    if vals.dtype == object and any(isinstance(v, (float, np.floating)) for v in vals):
        # a float among the entries: a float matrix (scipy, 0.0 off the mask) as the dense
        # evaluator gives, not an object matrix whose absent entries are the integer 0
        vals = vals.astype(np.float64)
    rows, cols = mask.rows, mask.cols
    out = []
    for a, b in zip(ptr[:-1], ptr[1:]):
        sel = (rows >= a) & (rows < b)
        if vals.dtype == object:  # Fractions: scipy holds no exact rationals
            if b - a > DENSE_RATIONAL_LIMIT:
                raise EvaluationError(
                    f"a matrix of Fractions on a graph of {b - a} nodes: scipy holds no exact "
                    "rationals; scale the sentence to integers (multiply by the denominator)"
                )
            dense = np.zeros((b - a, b - a), dtype=object)
            dense[rows[sel] - a, cols[sel] - a] = vals[sel]
            out.append(dense)
            continue
        out.append(
            sps.csr_array((vals[sel], (rows[sel] - a, cols[sel] - a)), shape=(b - a, b - a))
        )
    return out


__all__ = ["evaluate_exact", "evaluate_sparse", "gr_size"]
