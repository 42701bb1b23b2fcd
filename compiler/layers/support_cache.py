"""A layer's supports cached per graph, as CSR blocks: a new batch of graphs seen before is
assembled, not recomputed.

A DataLoader builds a new batch object every step from graphs it has served before. The batch
memo (:mod:`runtime.batch`) does not see them again (a new ``edge_index`` tensor is a new
batch), and each sentence's constant stage would look its graphs up on its own
(:mod:`compiler.constant_cache`) and then be interpreted, converted and sorted into CSR again.
Here every support of a layer is filed per graph in one entry of a
:class:`~runtime.cache.GraphCache` (the project's one per-graph cache): for each support, the
graph's row counts, its local column ids and its values, in row-major order. A batch whose
graphs are all filed is then a concatenation with offsets — one look-up for every sentence, no
interpreter, no sort, no bincount:

* the batch's CSR row counts are its graphs' row counts, one after another (graphs occupy
  consecutive node ranges, ``ptr``), so the row pointers are their cumulative sum;
* its column ids are each graph's local ids plus the graph's first node;
* its values are the graphs' values, one after another.

Every support is block-diagonal (a sentence of one graph never reads another: the batch
semantics of :mod:`runtime.batch`), so this equals the supports computed on the whole batch,
entry for entry (checked by ``tests/compiler/test_support_cache.py`` against the uncached path
and the dense evaluator), and a graph's value never depends on what else is in the batch.
A batch with a graph not yet filed is computed whole (the constant stages' own per-graph cache
serves the graphs it has) and split into entries for the graphs that were missing.

Only unweighted host batches are filed: a weighted ``A`` (an explainer's mask, learned weights)
changes every step, and a device batch keeps its supports on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import torch
from torch import Tensor

from matlang.runtime.batch import Batch
from matlang.runtime.cache import (
    MISSING,
    CacheKey,
    GraphCache,
    concat_blocks,
    graph_fingerprints,
    split_blocks,
)

#: The transform's name in cache keys.
TRANSFORM = "layer.supports"


class Piece(NamedTuple):
    """Every support of one graph, local ids, row-major: what the cache holds per graph."""

    counts: np.ndarray  # (S, n): entries in each row of each support
    cols: tuple[np.ndarray, ...]  # each support's column ids
    vals: tuple[np.ndarray, ...]  # each support's values (float64)
    nnz: np.ndarray  # (S,) entries of each support


#: Every support of one batch: ``(rowptr, cols, values)`` torch tensors, global ids.
Csr = tuple[Tensor, Tensor, Tensor]


def batch_fingerprints(b: Batch, edges: Tensor) -> tuple[list[str], np.ndarray]:
    """The graphs' fingerprints (:func:`~runtime.cache.graph_fingerprints`: sha256 of
    ``n`` and the graph's own local edges, never of the batch) from the batch's coalesced
    ``edges`` (global ids, row-major), and their first nodes. (A vectorised 128-bit hash of
    the edge sets, two 64-bit mixes summed per graph, measured no faster at 128 × ER(25).)"""
    ptr = b.ptr.numpy()
    rows, cols = edges[0].numpy(), edges[1].numpy()
    bounds = np.searchsorted(rows, ptr)
    if b.num_graphs == 1:
        local_rows, local_cols = rows, cols
    else:
        starts = np.repeat(ptr[:-1], np.diff(bounds))
        local_rows, local_cols = rows - starts, cols - starts
    return graph_fingerprints(np.diff(ptr), bounds, local_rows, local_cols, None), ptr


def cached_supports(
    b: Batch,
    edges: Tensor,
    cache: GraphCache,
    params: tuple[tuple[str, str], ...],
    compute: Callable[[], Sequence[Csr]],
    keys: list[CacheKey] | None = None,
) -> list[Csr]:
    """Every support of ``b`` as ``(rowptr, cols, values)``: assembled from the cache when
    every graph is filed, else ``compute()`` on the whole batch and the missing graphs filed.
    ``keys``: the graphs' keys when the caller has them (:func:`seen_graphs`, from these same
    edges)."""
    if b.num_graphs == 0:
        return list(compute())
    if keys is None:
        fps, ptr = batch_fingerprints(b, edges)
        keys = [CacheKey(TRANSFORM, fp, params) for fp in fps]
    else:
        ptr = b.ptr.numpy()
    pieces = cache.lookup(keys)
    missing = [k for k, p in enumerate(pieces) if p is MISSING]
    if not missing:
        return assemble(pieces, ptr)
    supports = list(compute())
    for k, piece in zip(missing, split_many(supports, ptr, missing)):
        cache.store(keys[k], piece)
    return supports


def seen_graphs(
    b: Batch, cache: GraphCache, params: tuple[tuple[str, str], ...]
) -> tuple[list[CacheKey], np.ndarray, list[Piece] | None] | None:
    """The graphs' cache keys, their first nodes, and every graph's entry when all of the
    unvalidated batch ``b`` are filed (``None`` in their place otherwise: the caller validates,
    computes and files under these keys); ``None`` when the checks below fail (the keys of
    such a batch are taken from its coalesced edges after validation).

    Entries are filed only for graphs of validated batches, under the sha256 of ``n`` and
    their local edges. So a graph whose edges hash to a filed graph's is that graph, valid
    (symmetric, no self-loop, no repeat) — provided the bytes hashed are its edges: ids in
    range, the edge list sorted row-major without repeats (keys ``i·N + j`` strictly
    increasing, so each graph's edges are one contiguous run), and each column within its
    row's graph (no edge between graphs, and local ids below ``n``, as the hash's narrow
    widths need). Those are checked here, a few vector passes instead of the validation's
    transposition; an unweighted host batch only."""
    ei = b.edge_index
    if ei.device.type != "cpu" or b.edge_weight is not None or b.num_graphs == 0:
        return None
    e = ei.detach().numpy()
    n = b.num_nodes
    rows, cols = e[0], e[1]
    if e.shape[1]:
        # rows sorted: their extremes are the ends; the columns are checked by graph below
        if int(rows[0]) < 0 or int(rows[-1]) >= n:
            return None
        key = rows * n + cols
        if key.size > 1 and not bool((key[1:] > key[:-1]).all()):
            return None
    ptr = b.ptr.numpy()
    bounds = np.searchsorted(rows, ptr)
    if int(bounds[0]) != 0 or int(bounds[-1]) != rows.size:  # every edge in some graph's run
        return None
    per = np.diff(bounds)
    starts = np.repeat(ptr[:-1], per)
    local_cols = cols - starts
    if local_cols.size and not bool(
        ((local_cols >= 0) & (local_cols < np.repeat(np.diff(ptr), per))).all()
    ):
        return None
    fps = graph_fingerprints(np.diff(ptr), bounds, rows - starts, local_cols, None)
    keys = [CacheKey(TRANSFORM, fp, params) for fp in fps]
    if not all(k in cache for k in keys):
        return keys, ptr, None
    return keys, ptr, cache.lookup(keys)


def split(supports: Sequence[Csr], ptr: np.ndarray, k: int) -> Piece:
    """Graph ``k``'s blocks (local ids, copies: the entry outlives the batch)."""
    return split_many(supports, ptr, [k])[0]


def split_many(supports: Sequence[Csr], ptr: np.ndarray, ks: Sequence[int]) -> list[Piece]:
    """The blocks of graphs ``ks`` (see :func:`split`), each support's cut by the block codec
    of :mod:`runtime.cache` (:func:`~runtime.cache.split_blocks`: one vector pass per
    support, then a slice and a copy per graph)."""
    parts = [
        (split_blocks(rowptr.numpy(), c.numpy(), ptr, ks), v.numpy()) for rowptr, c, v in supports
    ]
    bounds = ptr.tolist()
    out = []
    for i, k in enumerate(ks):
        lo, hi = bounds[k], bounds[k + 1]
        width = np.int32 if hi - lo <= np.iinfo(np.int32).max else np.int64
        counts = np.empty((len(parts), hi - lo), dtype=width)
        cols_k, vals_k, nnz = [], [], []
        for j, (blocks, vals) in enumerate(parts):
            counts[j], local, a, z = blocks[i]
            cols_k.append(local.astype(width))
            vals_k.append(vals[a:z].copy())
            nnz.append(z - a)
        out.append(Piece(counts, tuple(cols_k), tuple(vals_k), np.array(nnz, dtype=np.int64)))
    return out


def assemble(pieces: Sequence[Piece], ptr: np.ndarray) -> list[Csr]:
    """The batch's supports from its graphs' blocks (graph ``k``'s nodes are
    ``ptr[k]:ptr[k+1]``), each support joined by the block codec of :mod:`runtime.cache`
    (:func:`~runtime.cache.concat_blocks`): a few concatenations, whatever the number of
    graphs."""
    out = []
    for k in range(pieces[0].counts.shape[0]):
        rowptr, cols = concat_blocks([(p.counts[k], p.cols[k]) for p in pieces], ptr)
        vals = np.concatenate([p.vals[k] for p in pieces])
        out.append((torch.from_numpy(rowptr), torch.from_numpy(cols), torch.from_numpy(vals)))
    return out


__all__ = [
    "TRANSFORM",
    "Piece",
    "assemble",
    "batch_fingerprints",
    "cached_supports",
    "seen_graphs",
    "split",
    "split_many",
]
