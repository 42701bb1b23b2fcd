"""Graph constants cached per graph, across batches: a dataset's constants are computed once.

A :class:`~compiler.constants.ConstantStage` runs once per batch object (the batch memo). A
shuffled loader builds new batch objects every epoch, each made of graphs seen before: here the
stage's results are filed per graph in a :class:`~runtime.cache.GraphCache` (the
project's one per-graph cache), under a :class:`~runtime.cache.CacheKey` made of the
graph's fingerprint (sha256 of ``n`` and its coalesced local edges and weights) and every option
the results depend on (the plan, the module's options, the dtype of the batch's weights, whether
symmetry was validated). A batch is then assembled from its graphs' entries; the graphs missing
from the cache are computed together, as one sub-batch, and split into entries.

Every result of the stage is block-diagonal: a mask's CSR rows of graph ``k`` are its nodes
``ptr[k]:ptr[k+1]`` and its entries the contiguous range ``indptr[ptr[k]]:indptr[ptr[k+1]]``;
edge values follow their mask's entries, node values the nodes, graph values the graphs. So a
graph's entry is a slice with local ids, and assembling is concatenating with offsets (the
codec of :mod:`runtime.cache`, shared with the layers' supports): the result equals the stage
run on the whole batch, entry for entry.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

from matlang.compiler.constants import ConstantStage, Graphs
from matlang.compiler.plan import EDGE, GRAPH, NODE, OPS
from matlang.runtime.cache import (
    MISSING,
    CacheKey,
    GraphCache,
    concat_blocks,
    graph_fingerprints,
    split_block,
)
from matlang.runtime.graphblas import Mask, is_iso

#: The transform's name in cache keys.
TRANSFORM = "compiled.constants"

#: An operator's CSR arrays ``(indptr, indices, values, symmetric)``.
Csr = tuple[np.ndarray, np.ndarray, np.ndarray, bool]
OperatorKey = tuple[int, int, bool]


@dataclass
class StageResult:
    """What the stage gives a batch: the exported registers (numpy, masks as
    :class:`~runtime.graphblas.Mask`), the entries of every register it computed, and the CSR
    arrays of the operators of the propagate steps with a constant matrix."""

    values: dict[int, Any]
    sizes: dict[int, int]
    operators: dict[OperatorKey, Csr]


@dataclass
class _Piece:
    """One graph's share of a :class:`StageResult`, local node ids."""

    values: dict[int, Any]  # a Mask as (row counts, indices, transposed), values as arrays;
    # the edge mask as EDGES (it is the batch's own edges: rebuilt from them, not stored)
    regs: tuple[int, ...]  # the computed registers, in the order of counts
    counts: np.ndarray  # entries of every computed register on this graph (int64)
    operators: dict[OperatorKey, Csr]


#: A piece's edge mask: the batch's coalesced edges, the same arrays the stage reads.
EDGES = "edges"


def run_stage(stage: ConstantStage, graphs: Graphs, operators: set[OperatorKey]) -> StageResult:
    """The stage on a whole batch, no cache."""
    values, sizes = stage.run(graphs)
    ops = {key: stage.operator(graphs, values, *key) for key in operators}
    return StageResult(values, sizes, ops)


class CachedStage:
    """A :class:`~compiler.constants.ConstantStage` whose results are cached per graph.

    Args:
        stage: the stage.
        operators: the ``(mask, values, transpose)`` operators the caller wants built.
        cache: where entries are filed.
        params: what the results depend on besides the graph (the plan and every option).
    """

    def __init__(
        self,
        stage: ConstantStage,
        operators: set[OperatorKey],
        cache: GraphCache,
        params: tuple[tuple[str, Hashable], ...],
    ) -> None:
        self.stage, self.operators, self.cache, self.params = stage, operators, cache, params
        plan = stage.plan
        self._kinds = {k: st.kind for k, st in enumerate(plan.steps)}
        self._masks = {k: st.mask for k, st in enumerate(plan.steps)}
        self._edges = frozenset(k for k, st in enumerate(plan.steps) if st.op == "edges")

    @staticmethod
    def worth(stage: ConstantStage) -> bool:
        """Whether the stage does more than read the batch's edges (a step not
        :attr:`~compiler.plan.OpSpec.cheap`)."""
        return any(c and not OPS[st.op].cheap for c, st in zip(stage.const, stage.plan.steps))

    def run(self, graphs: Graphs) -> StageResult:
        """The stage's results on ``graphs``, assembled from cached graphs where it can."""
        g = graphs.g
        bounds = np.searchsorted(graphs.rows, graphs.ptr)  # graph k: edges bounds[k]:bounds[k+1]
        if g == 1 and int(graphs.ptr[0]) == 0:  # one graph: its ids are already local
            local_rows, local_cols = graphs.rows, graphs.cols
        else:
            starts = np.repeat(graphs.ptr[:-1], np.diff(bounds))
            local_rows, local_cols = graphs.rows - starts, graphs.cols - starts
            del starts
        weights = None if graphs.weight is None else graphs.weight.dtype.str
        # one short string for the options: hashing a key hashes it (cached on the str)
        options = repr((self.params, ("weights", weights), ("symmetric", graphs.symmetric)))
        params = (("options", hashlib.sha1(options.encode()).hexdigest()),)
        fps = graph_fingerprints(np.diff(graphs.ptr), bounds, local_rows, local_cols, graphs.weight)
        keys = [CacheKey(TRANSFORM, fp, params) for fp in fps]
        pieces = self.cache.lookup(keys)
        missing = [k for k in range(g) if pieces[k] is MISSING]
        if len(missing) == g:  # the local ids are needed no more: 2E ids not held meanwhile
            del local_rows, local_cols
            result, counts = self._compute(graphs)
            for k in range(g):
                piece = _split(result, counts, graphs.ptr, k, self._kinds, self._masks, self._edges)
                self.cache.store(keys[k], piece)
            return result
        if missing:
            sub = _subset(graphs, missing, bounds, local_rows, local_cols)
            del local_rows, local_cols
            result, counts = self._compute(sub)
            for j, k in enumerate(missing):
                piece = _split(result, counts, sub.ptr, j, self._kinds, self._masks, self._edges)
                pieces[k] = piece
                self.cache.store(keys[k], piece)
        return _assemble(pieces, graphs)

    def _compute(self, graphs: Graphs) -> tuple[StageResult, dict[int, np.ndarray]]:
        values, counts = self.stage.run(graphs, per_graph=True)
        sizes = {k: int(c.sum()) for k, c in counts.items()}
        ops = {key: self.stage.operator(graphs, values, *key) for key in self.operators}
        return StageResult(values, sizes, ops), counts


def _subset(
    graphs: Graphs,
    ks: list[int],
    bounds: np.ndarray,
    local_rows: np.ndarray,
    local_cols: np.ndarray,
) -> Graphs:
    """The graphs ``ks`` of a batch as a batch of their own (ids renumbered, labels kept)."""
    sel = np.asarray(ks, dtype=np.int64)
    sizes = np.diff(graphs.ptr)[sel]
    ptr = np.zeros(sel.size + 1, dtype=np.int64)
    np.cumsum(sizes, out=ptr[1:])
    ecount = (bounds[1:] - bounds[:-1])[sel]
    first = np.zeros(sel.size, dtype=np.int64)
    np.cumsum(ecount[:-1], out=first[1:])
    idx = np.repeat(bounds[sel] - first, ecount) + np.arange(int(ecount.sum()), dtype=np.int64)
    offset = np.repeat(ptr[:-1], ecount)
    return Graphs(
        int(ptr[-1]),
        ptr,
        np.repeat(np.arange(sel.size, dtype=np.int64), sizes),
        local_rows[idx] + offset,
        local_cols[idx] + offset,
        None if graphs.weight is None else graphs.weight[idx],
        lambda j: graphs.label(int(sel[j])),
        symmetric=graphs.symmetric,
    )


def _split(
    result: StageResult,
    counts: dict[int, np.ndarray],
    ptr: np.ndarray,
    k: int,
    kinds: dict[int, str],
    masks: dict[int, int | None],
    edges: frozenset[int] = frozenset(),
) -> _Piece:
    """Graph ``k``'s share of ``result`` (copies: the batch's arrays stay the batch's; a value
    that is the same on every entry is spelled out, so that pieces concatenate)."""
    a, b = int(ptr[k]), int(ptr[k + 1])
    values: dict[int, Any] = {}
    for reg, v in result.values.items():
        if reg in edges and isinstance(v, Mask) and not v.transposed:
            values[reg] = EDGES
        elif isinstance(v, Mask):
            indptr, indices, _, _ = split_block(v.indptr, v.indices, a, b)
            values[reg] = (indptr, indices, v.transposed)
        elif is_iso(v):
            values[reg] = np.full(int(counts[reg][k]), v.item(), dtype=v.dtype)
        elif kinds[reg] == NODE:
            values[reg] = v[a:b].copy()
        elif kinds[reg] == GRAPH:
            values[reg] = v[k : k + 1].copy()
        else:
            assert kinds[reg] == EDGE
            m = result.values[masks[reg]]  # type: ignore[index]
            values[reg] = v[int(m.indptr[a]) : int(m.indptr[b])].copy()
    ops: dict[OperatorKey, Csr] = {}
    for key, (indptr, indices, vals, symmetric) in result.operators.items():
        ip, ix, lo, hi = split_block(indptr, indices, a, b)
        ops[key] = (ip, ix, np.ascontiguousarray(vals[lo:hi]), symmetric)
    regs = tuple(counts)
    return _Piece(values, regs, np.array([c[k] for c in counts.values()], dtype=np.int64), ops)


def _assemble(pieces: list[_Piece], graphs: Graphs) -> StageResult:
    """The batch's :class:`StageResult` from its graphs' pieces (graph order)."""
    ptr = graphs.ptr
    first = pieces[0]
    values: dict[int, Any] = {}
    for reg, v0 in first.values.items():
        if isinstance(v0, str) and v0 == EDGES:  # the batch's own edges, as the stage reads them
            values[reg] = Mask.from_sorted_coo(graphs.n, graphs.rows, graphs.cols)
            continue
        parts = [p.values[reg] for p in pieces]
        if isinstance(v0, tuple):
            indptr, indices = concat_blocks([(p[0], p[1]) for p in parts], ptr)
            values[reg] = Mask(graphs.n, indptr, indices, transposed=v0[2])
        else:
            values[reg] = np.concatenate(parts)
    totals = np.add.reduce([p.counts for p in pieces]) if len(pieces) > 1 else first.counts
    sizes = dict(zip(first.regs, totals.tolist()))
    ops: dict[OperatorKey, Csr] = {}
    for key in first.operators:
        ops_k = [p.operators[key] for p in pieces]
        indptr, indices = concat_blocks([(p[0], p[1]) for p in ops_k], ptr)
        vals = np.concatenate([p[2] for p in ops_k])
        ops[key] = (indptr, indices, vals, all(p[3] for p in ops_k))
    return StageResult(values, sizes, ops)


__all__ = ["CachedStage", "StageResult", "TRANSFORM", "run_stage"]
