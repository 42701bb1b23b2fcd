"""The per-graph cache: results filed per graph, across batches, and the one block-diagonal
codec that splits a batch's result into its graphs' pieces and assembles a batch from them.

* :class:`GraphCache` (``PreprocessCache``, its former name, is an alias) is an explicit,
  bounded store owned by its user (a compiled module, a layer's stage, a model, a transform).
  An entry is filed under a :class:`CacheKey`: the user's name for what it computes, the
  graph's fingerprint (:func:`graph_fingerprint`: sha256 of ``n``, the bytes of its local
  ``edge_index`` and of its edge weights; a layer's supports file graphs under a cheap
  signature and tell those that share one apart by their edges,
  :mod:`compiler.layers.support_cache`) and *every* parameter the result depends on, so a
  changed parameter can never read a stale entry.
* :class:`BatchMemo`: a batch object seen before gets its assembled result back after an
  exact comparison of its arrays with the ones it had (the cache's one whole-batch memo).
* The codec (:func:`split_block`, :func:`split_blocks`, :func:`concat_blocks`): every result
  of a batch is block-diagonal — graph ``k``'s rows are its nodes ``ptr[k]:ptr[k+1]`` and, in
  CSR, its entries the contiguous range ``indptr[ptr[k]]:indptr[ptr[k+1]]`` — so a graph's
  piece is a slice with local ids, and assembling is concatenating with offsets. The graph constants
  (:mod:`compiler.constant_cache`) and a layer's supports (:mod:`compiler.layers.support_cache`)
  both file their CSR structures through it, each with its own value type.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import numpy as np
import torch
from torch import Tensor

from matlang.errors import MatlangError
from matlang.graphs import Graph
from matlang.runtime.batch import Batch
from matlang.runtime.local_graphs import (  # noqa: F401 - the fingerprints, re-exported
    LocalGraph,
    as_local_graph,
    graph_fingerprint,
    graph_fingerprints,
)

T = TypeVar("T")

#: What :meth:`GraphCache.lookup` returns for a key it does not hold.
MISSING: Any = object()


class CacheKey(NamedTuple):
    """What a cache entry is: a transform, a graph fingerprint, and every parameter (a named
    tuple: hashed and compared in C, a dataset's epoch looks up thousands)."""

    transform: str
    # a fingerprint, or a graph's signature in a layer's support cache
    # (compiler.layers.support_cache.graph_signatures)
    graph: str | bytes | tuple[int, ...]
    params: tuple[tuple[str, Any], ...]


class GraphCache:
    """An explicit, bounded store of per-graph results, owned by whoever passes it (a model,
    a layer's stage, a transform): nothing module-level holds one.

    Args:
        max_entries: least recently used entries are dropped beyond this (``None``: no bound).
    """

    def __init__(self, max_entries: int | None = 100_000) -> None:
        if max_entries is not None and max_entries < 1:
            raise MatlangError(f"max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._store: OrderedDict[CacheKey, Any] = OrderedDict()
        # Identity memos, weak so that they die with their graph or batch.
        self._fingerprints: weakref.WeakKeyDictionary[Graph, str] = weakref.WeakKeyDictionary()
        self._batches: weakref.WeakKeyDictionary[Batch, BatchMemo] = weakref.WeakKeyDictionary()
        self.hits = 0
        self.misses = 0
        #: whole-batch results served to a batch object seen before
        self.batch_hits = 0

    def get_or_compute(self, key: CacheKey, compute: Callable[[], T]) -> T:
        """The entry under ``key``, computing and storing it first when absent."""
        if key in self._store:
            self.hits += 1
            self._store.move_to_end(key)
            return self._store[key]  # type: ignore[no-any-return]
        self.misses += 1
        value = compute()
        self.store(key, value)
        return value

    def lookup(self, keys: list[CacheKey]) -> list[Any]:
        """The entries under ``keys`` (each counted as a hit), :data:`MISSING` for those absent
        (counted as misses): for callers that compute their missing entries together, then
        :meth:`store` them."""
        store, missing = self._store, MISSING
        out = [store.get(key, missing) for key in keys]
        found = 0
        for key, value in zip(keys, out):
            if value is not missing:
                store.move_to_end(key)
                found += 1
        self.hits += found
        self.misses += len(keys) - found
        return out

    def store_many(
        self, keys: Sequence[CacheKey], values: Sequence[Any], *, absent: bool = False
    ) -> None:
        """:meth:`store` each value under its key, the bound enforced once. ``absent``: the
        caller just found none of ``keys`` filed (a new key goes in last: not moved)."""
        store = self._store
        for key, value in zip(keys, values):
            store[key] = value
            if not absent:
                store.move_to_end(key)
        self._evict()

    def store(self, key: CacheKey, value: Any) -> None:
        """File ``value`` under ``key`` (the least recently used entry goes beyond the bound)."""
        self._store[key] = value
        self._store.move_to_end(key)
        self._evict()

    def _evict(self) -> None:
        """Drop the least recently used entries beyond the bound."""
        if self.max_entries is not None:
            while len(self._store) > self.max_entries:
                self._store.popitem(last=False)

    def fingerprint(self, graph: Any) -> str:
        """The graph's fingerprint; a :class:`~matlang.graphs.Graph`'s is computed once (its
        adjacency is read-only, like the edge arrays it caches on itself)."""
        if not isinstance(graph, Graph):
            return as_local_graph(graph).fingerprint()
        fp = self._fingerprints.get(graph)
        if fp is None:
            fp = as_local_graph(graph).fingerprint()
            self._fingerprints[graph] = fp
        return fp

    def get_or_compute_batch(self, batch: Batch, key: Hashable, compute: Callable[[], T]) -> T:
        """A whole-batch result: served again to the same batch object when its arrays still
        equal (exactly) those it was computed from, else computed (per-graph entries still
        come from the cache) and remembered."""
        memo = self._batches.get(batch)
        if memo is None or not memo.matches(batch):
            memo = BatchMemo.of(batch)
            self._batches[batch] = memo
        elif key in memo.results:
            self.batch_hits += 1
            return memo.results[key]
        value = compute()
        memo.results[key] = value
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        # a cache is no state: a pickled or deep-copied owner starts with an empty one
        return (type(self), (self.max_entries,))

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __len__(self) -> int:
        return len(self._store)

    def keys(self) -> list[CacheKey]:
        return list(self._store)

    def clear(self) -> None:
        self._store.clear()
        self._fingerprints.clear()
        self._batches.clear()
        self.hits = self.misses = self.batch_hits = 0

    def __repr__(self) -> str:
        return (
            f"GraphCache(entries={len(self)}, hits={self.hits}, misses={self.misses}, "
            f"batch_hits={self.batch_hits})"
        )


def _same(a: Tensor | None, b: Tensor | None) -> bool:
    if a is None or b is None:
        return a is b
    return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a, b))


@dataclass(frozen=True, eq=False)
class BatchMemo:
    """The cache's one batch memo: copies of the arrays a batch object's whole-batch results
    were computed from, and those results (:meth:`GraphCache.get_or_compute_batch`)."""

    edge_index: Tensor
    batch: Tensor
    ptr: Tensor
    edge_weight: Tensor | None
    results: dict[Hashable, Any] = field(default_factory=dict)

    @staticmethod
    def of(b: Batch) -> BatchMemo:
        ew = None if b.edge_weight is None else b.edge_weight.detach().clone()
        return BatchMemo(
            b.edge_index.detach().clone(), b.batch.detach().clone(), b.ptr.detach().clone(), ew
        )

    def matches(self, b: Batch) -> bool:
        """The batch still holds exactly these arrays (tensors are mutable in place)."""
        return (
            _same(self.edge_index, b.edge_index)
            and _same(self.ptr, b.ptr)
            and _same(self.batch, b.batch)
            and _same(self.edge_weight, b.edge_weight)
        )


# --------------------------------------------------------------------------- the codec


def split_block(
    indptr: np.ndarray, indices: np.ndarray, a: int, b: int
) -> tuple[np.ndarray, np.ndarray, int, int]:
    """Rows ``a:b`` (one graph's nodes) of a block-diagonal CSR structure: their entry counts,
    their column ids minus ``a`` (local ids) and the range ``lo:hi`` of their entries (the
    caller slices its values with it)."""
    lo, hi = int(indptr[a]), int(indptr[b])
    return np.diff(indptr[a : b + 1]), indices[lo:hi] - a, lo, hi


def split_blocks(
    indptr: np.ndarray,
    indices: np.ndarray,
    ptr: np.ndarray,
    ks: Sequence[int],
    dtype: Any = np.int64,
) -> list[tuple[np.ndarray, np.ndarray, int, int]]:
    """:func:`split_block` of the graphs ``ks`` (graph ``k``'s nodes are ``ptr[k]:ptr[k+1]``)
    at once: the local ids and row counts of every entry in one vector pass each (as
    ``dtype``: fresh arrays that outlive the batch), then a view per graph."""
    ebounds = indptr[ptr]  # graph k's entries: ebounds[k]:ebounds[k + 1]
    # in place, in ``dtype`` from the start: one E-long array, not three
    local = np.repeat(ptr[:-1].astype(dtype), np.diff(ebounds))
    np.subtract(indices, local, out=local, casting="unsafe")
    counts = np.diff(indptr).astype(dtype)
    eb, nb = ebounds.tolist(), ptr.tolist()
    return [(counts[nb[k] : nb[k + 1]], local[eb[k] : eb[k + 1]], eb[k], eb[k + 1]) for k in ks]


def concat_blocks(
    parts: Sequence[tuple[np.ndarray, np.ndarray]], ptr: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Block-diagonal CSR structure ``(indptr, indices)`` from the graphs' ``(row counts,
    local indices)`` (graph ``k``'s nodes are ``ptr[k]:ptr[k+1]``): what :func:`split_block`
    took apart, with its values concatenated in the same order by the caller."""
    indptr = np.zeros(int(ptr[-1]) + 1, dtype=np.int64)
    np.cumsum(np.concatenate([p[0] for p in parts]), out=indptr[1:])
    nnz = np.array([p[1].size for p in parts], dtype=np.int64)
    indices = np.concatenate([p[1] for p in parts]) + np.repeat(ptr[:-1], nnz)
    return indptr, indices


#: The cache's former name (kept for one release).
PreprocessCache = GraphCache

__all__ = [
    "MISSING",
    "BatchMemo",
    "CacheKey",
    "GraphCache",
    "LocalGraph",
    "PreprocessCache",
    "as_local_graph",
    "concat_blocks",
    "graph_fingerprint",
    "graph_fingerprints",
    "split_block",
    "split_blocks",
]
