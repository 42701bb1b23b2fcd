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
* its values are the graphs' values, one after another;
* a support on the edge mask (``A ⊙ A²``: an entry per edge, in the edges' row-major order)
  is filed as its values only (half the bytes of an entry): the batch's own edges, which a
  batch of filed graphs has as CSR already, are its structure.

Every support is block-diagonal (a sentence of one graph never reads another: the batch
semantics of :mod:`runtime.batch`), so this equals the supports computed on the whole batch,
entry for entry (checked by ``tests/compiler/test_support_cache.py`` against the uncached path
and the dense evaluator), and a graph's value never depends on what else is in the batch.
A batch with a graph not yet filed is computed whole (the constant stages' own per-graph cache
serves the graphs it has) and its graphs filed, to be split into their entries when first met
again.

The entries are filed under each graph's signature (nodes, edges, the sum of its local column
ids: one pass over a batch's edges, :func:`graph_signatures`), and within a signature's entry
(a :data:`Bucket`, nearly always of one graph) told apart by the graph's exact key (its local
edges as bytes, :func:`graph_keys`). The exact keys of a computed batch are made only when one
of its graphs' signatures is met again (:meth:`Unsplit.key`), so a batch of new graphs — every
batch of an inference stream, the first epoch of a training run — makes none: at 128 graphs of
25 nodes they were about a tenth of a new batch's forward and backward.

Only unweighted host batches are filed: a weighted ``A`` (an explainer's mask, learned weights)
changes every step, and a device batch keeps its supports on the device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from matlang.errors import MatlangError
from matlang.runtime.batch import Batch
from matlang.runtime.cache import (
    MISSING,
    CacheKey,
    GraphCache,
    concat_blocks,
    graph_fingerprints,
    split_blocks,
)
from matlang.runtime.local_graphs import pair_bytes, small_graph_keys
from matlang.runtime.validate import canonical_rows, sort_rows_host, strictly_increasing_rows

#: The transform's name in cache keys.
TRANSFORM = "layer.supports"


class Piece(NamedTuple):
    """Every support of one graph, local ids, row-major: what the cache holds per graph.
    The arrays are views into the arrays split from one batch (see :func:`split_many`). A
    support on the edge mask (``A ⊙ A²``: an entry per edge, in the edges' row-major order)
    keeps its values only (``counts`` and ``cols`` ``None``): its structure is the graph's
    edges, which the batch that assembles it has (:func:`assemble`'s ``edges``)."""

    counts: tuple[np.ndarray | None, ...]  # each support's entries in each row
    cols: tuple[np.ndarray | None, ...]  # each support's column ids
    vals: tuple[np.ndarray, ...]  # each support's values (float64)
    nnz: tuple[int, ...]  # entries of each support


#: Every support of one batch: ``(rowptr, cols, values)`` torch tensors, global ids.
Csr = tuple[Tensor, Tensor, Tensor]


def graph_keys(
    sizes: np.ndarray, bounds: np.ndarray, local_rows: np.ndarray, local_cols: np.ndarray
) -> list[str | bytes]:
    """The graphs' keys in the cache: for a batch of graphs of at most 256 nodes their exact
    keys (:func:`~runtime.local_graphs.small_graph_keys`: ``n`` and the local edges as bytes),
    else their fingerprints (:func:`~runtime.cache.graph_fingerprints`: sha256 of ``n`` and the
    local edges); graph ``k``'s row-major local edges are ``bounds[k]:bounds[k + 1]``. Either
    is the graph's own, never the batch's."""
    if int(np.max(sizes, initial=0)) <= 256:
        lo, hi = int(bounds[0]), int(bounds[-1])
        return list(
            small_graph_keys(sizes, bounds - lo, pair_bytes(local_rows, local_cols, lo, hi, 0))
        )
    return list(graph_fingerprints(sizes, bounds, local_rows, local_cols, None))


def batch_fingerprints(b: Batch, edges: Tensor) -> tuple[list[str | bytes], np.ndarray]:
    """The graphs' exact keys (:func:`graph_keys`) from the batch's coalesced ``edges`` (global
    ids, row-major), and their first nodes. (A vectorised 128-bit hash of the edge sets, two
    64-bit mixes summed per graph, measured no faster at 128 × ER(25).)"""
    ptr = b.ptr.numpy()
    return edge_keys(ptr, edges[0].numpy(), edges[1].numpy()), ptr


def edge_keys(ptr: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> list[str | bytes]:
    """The exact keys (:func:`graph_keys`) of the graphs laid out by ``ptr`` whose coalesced
    edges (global ids, row-major) are ``rows``, ``cols``."""
    bounds = np.searchsorted(rows, ptr)
    if ptr.size == 2:
        local_rows, local_cols = rows, cols
    else:
        starts = np.repeat(ptr[:-1], np.diff(bounds))
        local_rows, local_cols = rows - starts, cols - starts
    return graph_keys(np.diff(ptr), bounds, local_rows, local_cols)


def graph_signatures(
    ptr: np.ndarray, bounds: np.ndarray, cols: np.ndarray
) -> list[tuple[int, int, int]]:
    """Each graph's signature, what its cache entry is filed under: its nodes, its edges and
    the sum of its edges' local column ids (one pass over the row-major ``cols``; graph ``k``'s
    edges are ``bounds[k]:bounds[k + 1]``). Cheap to make for a whole batch, and rarely shared
    by two graphs; those that share one are told apart in the entry by their exact keys
    (:class:`Bucket`), made only for graphs whose signature is filed."""
    counts = np.diff(bounds)
    sums = np.zeros(counts.size, dtype=np.int64)
    full = np.flatnonzero(counts)
    if full.size:  # segments from each non-empty graph's first edge to the next one's
        sums[full] = np.add.reduceat(cols, bounds[full])
    local = sums - counts * ptr[:-1]
    return list(zip(np.diff(ptr).tolist(), counts.tolist(), local.tolist()))


def cached_supports(
    b: Batch,
    edges: Tensor,
    cache: GraphCache,
    params: tuple[tuple[str, str], ...],
    compute: Callable[[], Sequence[Csr]],
    keys: list[CacheKey] | None = None,
    on_edges: Sequence[bool] = (),
    structure: Callable[[], tuple[Tensor, Tensor]] | None = None,
    looked: list[Any] | None = None,
) -> list[Csr]:
    """Every support of ``b`` as ``(rowptr, cols, values)``: assembled from the cache when
    every graph is filed, else ``compute()`` on the whole batch and its graphs filed.
    ``keys``: the graphs' cache keys (their signatures, :func:`graph_signatures`) when the
    caller has them (:func:`seen_graphs`, from these same edges); ``looked``: the cache's
    entries under them (:data:`MISSING` where none) where the caller looked them up already
    and found the batch not filed whole (:func:`seen_graphs`), not looked up again;
    ``on_edges``: which supports are on the edge mask (filed as values only, see
    :class:`Piece`), assembled on ``structure()``, the caller's CSR of these edges
    (:func:`~compiler.layers.supports.edge_csr`; :func:`assemble` refuses such a support
    without it)."""
    if b.num_graphs == 0:
        return list(compute())
    ptr = b.ptr.numpy()
    if keys is None:
        rows, cols = edges[0].numpy(), edges[1].numpy()
        keys = cache_keys(graph_signatures(ptr, np.searchsorted(rows, ptr), cols), params)
    if looked is None:
        looked = cache.lookup(keys)
        if not any(p is MISSING for p in looked):
            pieces = matched(looked, batch_fingerprints(b, edges)[0], cache)
            if pieces is not None:
                csr = structure() if structure is not None and any(on_edges) else None
                return assemble(pieces, ptr, csr)
    supports = list(compute())
    if structure is not None:
        rowptr, cols_t = structure()
        keyer = _csr_keyer(rowptr, cols_t, ptr)
    else:  # a copy: the entries must not hold the caller's edges (and the memo on them)
        keyer = _edge_keyer(edges.numpy().copy(), ptr)
    file_batch(cache, keys, looked, Unsplit(supports, ptr, range(len(keys)), on_edges, keyer))
    return supports


def _csr_keyer(rowptr: Tensor, cols: Tensor, ptr: np.ndarray) -> Callable[[], list[Any]]:
    """The exact keys of a batch's graphs from its edges' CSR, made when first asked for."""

    def keys() -> list[Any]:
        indptr = rowptr.numpy()
        rows = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
        return edge_keys(ptr, rows, cols.numpy())

    return keys


def _edge_keyer(e: np.ndarray, ptr: np.ndarray) -> Callable[[], list[Any]]:
    """The exact keys of a batch's graphs from its coalesced edges, made when first asked for."""
    return lambda: edge_keys(ptr, e[0], e[1])


#: What the cache holds under a signature (:func:`graph_signatures`): the graphs filed under
#: it, usually one, each ``[exact key, entry]`` — the key ``None`` until it is first needed
#: (:meth:`Unsplit.key`: a batch of new graphs makes no exact key), the entry a :class:`Piece`
#: or a :class:`Deferred` one.
Bucket = list


def file_batch(
    cache: GraphCache, keys: list[CacheKey], looked: list[Any], source: Unsplit
) -> None:
    """File every graph of a computed batch: a new entry under each signature not filed yet,
    and the graph added (its exact key not made yet) to the entry of each signature that is
    (a graph filed already is added again: :func:`matched` drops the repeat when it first
    makes the keys)."""
    new = tuple.__new__  # (a named tuple's own constructor costs ~2× this, 128 times a batch)
    fresh_keys, fresh = [], []
    for k, (key, bucket) in enumerate(zip(keys, looked)):
        entry = [None, new(Deferred, (source, k))]
        if bucket is MISSING:
            bucket = [entry]
            looked[k] = bucket  # a signature twice in the batch: one entry
            fresh_keys.append(key)
            fresh.append(bucket)
        else:
            bucket.append(entry)
    cache.store_many(fresh_keys, fresh, absent=True)


def matched(
    buckets: Sequence[Bucket], exact: Sequence[Any], cache: GraphCache
) -> list[Piece] | None:
    """The filed piece of every graph (``exact``: their exact keys; ``buckets``: the entries
    under their signatures), split out of their batches where still deferred; ``None`` when
    one is not filed (counted as a miss instead of the hit its signature gave)."""
    out: list[Piece] = []
    append = out.append
    for bucket, key in zip(buckets, exact):
        if len(bucket) == 1:  # nearly always: one graph a signature, its piece split out
            e = bucket[0]
            value = e[1]
            if e[0] == key and type(value) is Piece:
                append(value)
                continue
        piece = find(bucket, key)
        if piece is None:
            cache.hits -= 1
            cache.misses += 1
            return None
        append(piece)
    return out


def find(bucket: Bucket, key: Any) -> Piece | None:
    """The piece filed under exact ``key`` in ``bucket`` (split out and kept as a piece if
    deferred), ``None`` if there is none. Exact keys not made yet are made first (a batch's
    all at once, :meth:`Unsplit.key`), and a graph filed twice keeps its first entry."""
    for e in bucket:
        if e[0] is None:
            _make_keys(bucket)
            break
    for e in bucket:
        if e[0] == key:
            value = e[1]
            if type(value) is Deferred:
                value = e[1] = value.source.piece(value.k)
            return value  # type: ignore[no-any-return]
    return None


def _make_keys(bucket: Bucket) -> None:
    """Make the exact keys of ``bucket``'s entries that have none, and drop the repeats (the
    first entry filed under a key keeps it)."""
    for e in bucket:
        if e[0] is None:
            e[0] = e[1].source.key(e[1].k)
    if len(bucket) > 1:
        first: dict[Any, list[Any]] = {}
        for e in bucket:
            first.setdefault(e[0], e)
        bucket[:] = list(first.values())


def filed_pieces(cache: GraphCache) -> list[Piece]:
    """Every piece the cache holds for a layer's supports (split out where deferred)."""
    out = []
    for key in cache.keys():
        if key.transform == TRANSFORM:
            bucket = cache.lookup([key])[0]
            _make_keys(bucket)  # (from the batches' edges: before their pieces are split out)
            for e in bucket:
                if type(e[1]) is Deferred:
                    e[1] = e[1].source.piece(e[1].k)
                out.append(e[1])
    return out


def cache_keys(fingerprints: Sequence[Any], params: tuple[Any, ...]) -> list[CacheKey]:
    """The layer's cache keys of the graphs (``tuple.__new__``: a named tuple's own
    constructor costs ~2× this, 128 times a batch)."""
    new = tuple.__new__
    return [new(CacheKey, (TRANSFORM, f, params)) for f in fingerprints]


class Unsplit:
    """The supports of one computed batch, split into its graphs' pieces when one of them is
    first met again (all of them at once, :func:`split_many`), not when the batch is computed:
    a batch of new graphs pays no split, a stream of graphs that never come back (inference)
    none at all, and a training epoch pays it once per batch, in the next epoch. The graphs'
    exact keys likewise (``keys()``: all of them, made when first asked for)."""

    def __init__(
        self,
        supports: Sequence[Csr],
        ptr: np.ndarray,
        ks: Sequence[int],
        on_edges: Sequence[bool] = (),
        keys: Callable[[], list[Any]] | None = None,
    ) -> None:
        self._supports: Sequence[Csr] | None = supports
        self._ptr = ptr
        self._ks = list(ks)
        self._on_edges = tuple(on_edges)
        self._pieces: dict[int, Piece] = {}
        self._keyer = keys
        self._keys: list[Any] | None = None

    def piece(self, k: int) -> Piece:
        if self._supports is not None:
            pieces = split_many(self._supports, self._ptr, self._ks, self._on_edges)
            self._pieces = dict(zip(self._ks, pieces))
            self._supports = None  # the batch's arrays are let go: the pieces are copies
        return self._pieces[k]

    def key(self, k: int) -> Any:
        """Graph ``k``'s exact key (:func:`graph_keys`)."""
        if self._keys is None:
            if self._keyer is None:
                raise MatlangError("internal: a filed batch without its edges' keys")
            self._keys = self._keyer()
            self._keyer = None  # the edges are let go
        return self._keys[k]


class Deferred(NamedTuple):
    """A cache entry: graph ``k`` of a computed batch, not split out yet (:class:`Unsplit`)."""

    source: Unsplit
    k: int


class RowMajor(NamedTuple):
    """A batch's edges row-major, as CSR arrays: its ``A`` without the values."""

    indptr: Tensor  # (N + 1,) int64
    cols: Tensor  # (E,) int64


class Seen(NamedTuple):
    """What :func:`seen_graphs` found of a batch."""

    keys: list[CacheKey]  # the graphs' cache keys
    ptr: np.ndarray  # their first nodes (and the node count)
    pieces: list[Piece] | None  # every graph's entry when all are filed, else None
    a: RowMajor | None  # the batch's edges row-major when all are filed, else None
    looked: list[Any]  # the cache's entries under keys, MISSING where none (cached_supports)


def seen_graphs(b: Batch, cache: GraphCache, params: tuple[tuple[str, str], ...]) -> Seen | None:
    """The graphs' cache keys (their signatures, :func:`graph_signatures`), their first
    nodes, every graph's entry when all of the unvalidated batch ``b`` are filed (``None`` in
    their place otherwise: the caller validates, computes and files under these keys, handing
    :func:`cached_supports` the entries looked up here), and the batch's edges row-major (when
    all are filed; ``None`` otherwise); ``None`` when the checks below fail (the keys of such
    a batch are taken from its coalesced edges after validation). The graphs' exact keys are
    made only when every signature is filed: a batch with a new graph makes none.

    Entries are filed only for graphs of validated batches, told apart within a signature's
    entry by :func:`graph_keys` of ``n`` and their local edges (the bytes themselves for graphs
    of at most 256 nodes, their sha256 otherwise). So a graph whose exact key is a filed
    graph's is that graph, valid (symmetric,
    no self-loop, no repeat) — provided the bytes keyed are its edges: ids in range, the edge
    list sorted row-major without repeats (so each graph's edges are one contiguous run), and
    each column within its row's graph (no edge between graphs, and local ids below ``n``, as
    the keys' narrow widths need). Those are checked here on the
    CSR form: rows non-decreasing, then each row's columns strictly increasing (one pass each,
    int32 where the edges came sorted), then each row's first and last columns inside its
    graph (O(N), not O(E)). An edge list in another order (PyG's ``torch.cat([e, e.flip(0)],
    1)``) is sorted first: one counting sort (:func:`~runtime.validate.sort_rows_host`) more
    than a sorted one, no more. What was checked is handed on to the validation of a batch
    with a new graph (``scanned``, ``row_pointers``, ``sorted_rows``): not checked twice."""
    ei = b.edge_index
    if ei.device.type != "cpu" or b.edge_weight is not None or b.num_graphs == 0:
        return None
    # these arrays share ei's storage, not ei (numpy() aliases through a tensor of its own):
    # A's columns taken from them below, kept in the memo on ei, hold no reference to ei, unlike
    # a torch view of it inside a sparse tensor (see supports.row_major_csr; test_no_leaks.py)
    e = ei.detach().numpy()
    e = e if e.dtype == np.int64 else e.astype(np.int64)
    n, fp = b.num_nodes, b.fingerprint()
    rows, cols = e[0], e[1]
    row_major = rows.size < 2 or bool((rows[1:] >= rows[:-1]).all())
    indptr: np.ndarray | None = None
    if row_major:
        if rows.size and (int(rows[0]) < 0 or int(rows[-1]) >= n):
            return None
        indptr = sorted_row_pointers(ei[0], rows, n)
        row_major = canonical_rows(indptr, cols)
    sorted_cols: np.ndarray | None = None
    if not row_major:  # rows out of order, or a row's columns: one counting sort
        if rows.size and int(e.view(np.uint64).max()) >= n:  # a negative id reads past 2⁶³
            return None
        indptr, sorted_cols, perm = sort_rows_host(rows, cols, n)
        b.remember("sorted_rows", (indptr, sorted_cols, perm), fp)
        if not strictly_increasing_rows(indptr, sorted_cols):
            return None  # a repeated edge: the validation says so
        cols = sorted_cols
    assert indptr is not None
    ptr = b.ptr.numpy()
    node_graph = b.batch.numpy()
    counts = np.diff(indptr)
    full = np.flatnonzero(counts)  # the rows with entries: their first and last columns
    first, last = cols[indptr[full]], cols[indptr[full + 1] - 1]
    g = node_graph[full]
    if not bool(((first >= ptr[g]) & (last < ptr[g + 1])).all()):
        return None  # an edge between graphs, or a column out of range
    if row_major:
        b.remember("row_pointers", indptr, fp)
    b.remember("scanned", row_major, fp)
    bounds = indptr[ptr]  # graph k's edges: bounds[k]:bounds[k + 1]
    keys = cache_keys(graph_signatures(ptr, bounds, cols), params)
    looked = cache.lookup(keys)
    if any(p is MISSING for p in looked):
        # a new graph: the caller validates and computes (no exact key, no CSR of A needed)
        return Seen(keys, ptr, None, None, looked)
    exact = row_major_keys(ptr, node_graph, indptr, bounds, cols)
    pieces = matched(looked, exact, cache)
    if pieces is None:  # a graph that shares a filed graph's signature only
        return Seen(keys, ptr, None, None, looked)
    a_cols = torch.from_numpy(cols if sorted_cols is None else sorted_cols.astype(np.int64))
    a = RowMajor(torch.from_numpy(indptr.astype(np.int64)), a_cols)
    return Seen(keys, ptr, pieces, a, looked)


def row_major_keys(
    ptr: np.ndarray,
    node_graph: np.ndarray,
    indptr: np.ndarray,
    bounds: np.ndarray,
    cols: np.ndarray,
) -> list[str | bytes]:
    """The graphs' exact keys (:func:`graph_keys`, the same as :func:`edge_keys`) from the
    CSR of their row-major edges (``indptr``, ``cols``; ``bounds``: each graph's first edge)."""
    n = int(ptr[-1])
    sizes = np.diff(ptr)
    counts = np.diff(indptr)
    node_start = ptr[node_graph]
    if int(sizes.max(initial=0)) <= 256:  # the edges as graph_keys reads them: one byte an id
        # ids mod 256: a local id is below 256, so the difference of wrapped ids is exact
        pairs = np.empty((cols.size, 2), dtype=np.uint8)
        pairs[:, 0] = np.repeat((np.arange(n) - node_start).astype(np.uint8), counts)
        local_cols = pairs[:, 1]
        local_cols[...] = cols
        # each edge's graph's first node: one run a graph (not one a node, as for the rows)
        local_cols -= np.repeat(ptr[:-1].astype(np.uint8), np.diff(bounds))
        return list(small_graph_keys(sizes, bounds, pairs))
    starts = np.repeat(node_start, counts)
    local_rows = np.repeat(np.arange(n) - node_start, counts)
    return graph_keys(sizes, bounds, local_rows, cols - starts)


def sorted_row_pointers(row: Tensor, rows: np.ndarray, n: int) -> np.ndarray:
    """The CSR row pointers ``(n + 1,)`` int64 of sorted rows (``row`` as a tensor, ``rows``
    as its int64 numpy array): torch's one linear pass where it has one (~0.6× numpy's
    ``searchsorted`` of every row id), else that."""
    convert = getattr(torch, "_convert_indices_from_coo_to_csr", None)
    if convert is not None:
        try:
            return convert(row.to(torch.int64), n).numpy()  # type: ignore[no-any-return]
        except (RuntimeError, TypeError):
            pass
    return np.searchsorted(rows, np.arange(n + 1, dtype=np.int64))


def split(
    supports: Sequence[Csr], ptr: np.ndarray, k: int, on_edges: Sequence[bool] = ()
) -> Piece:
    """Graph ``k``'s blocks (local ids, copies: the entry outlives the batch)."""
    return split_many(supports, ptr, [k], on_edges)[0]


def split_many(
    supports: Sequence[Csr], ptr: np.ndarray, ks: Sequence[int], on_edges: Sequence[bool] = ()
) -> list[Piece]:
    """The blocks of graphs ``ks`` (see :func:`split`), each support's cut by the block codec
    of :mod:`runtime.cache` (:func:`~runtime.cache.split_blocks`: the row counts and local ids
    made once for the whole batch, then views) and its values copied once: each graph's piece
    is views (no copy and no conversion per graph: ~2 µs a graph). A support on the edge mask
    (``on_edges[s]``) keeps its values only (see :class:`Piece`)."""
    sizes = np.diff(ptr)
    width = np.int32 if int(sizes.max(initial=0)) <= np.iinfo(np.int32).max else np.int64
    parts = []
    for s, (rowptr, c, v) in enumerate(supports):
        indptr = rowptr.numpy()
        if s < len(on_edges) and on_edges[s]:
            bounds = indptr[ptr].tolist()
            blocks = [(None, None, bounds[k], bounds[k + 1]) for k in ks]
        else:
            blocks = split_blocks(indptr, c.numpy(), ptr, ks, width)  # type: ignore[assignment]
        parts.append((blocks, v.numpy().copy()))
    out = []
    for i in range(len(ks)):
        blocks_i = [(b[i], vals) for b, vals in parts]
        out.append(
            Piece(
                tuple(b[0] for b, _ in blocks_i),
                tuple(b[1] for b, _ in blocks_i),
                tuple(vals[b[2] : b[3]] for b, vals in blocks_i),
                tuple(b[3] - b[2] for b, _ in blocks_i),
            )
        )
    return out


def assemble(
    pieces: Sequence[Piece], ptr: np.ndarray, edges: tuple[Tensor, Tensor] | None = None
) -> list[Csr]:
    """The batch's supports from its graphs' blocks (graph ``k``'s nodes are
    ``ptr[k]:ptr[k+1]``), each support joined by the block codec of :mod:`runtime.cache`
    (:func:`~runtime.cache.concat_blocks`): a few concatenations, whatever the number of
    graphs. A support filed as values only (on the edge mask) takes ``edges``, the batch's
    edges as CSR ``(rowptr, cols)`` (row-major, graph by graph), as its structure: only its
    values are concatenated."""
    out = []
    for k in range(len(pieces[0].counts)):
        vals = torch.from_numpy(np.concatenate([p.vals[k] for p in pieces]))
        if pieces[0].cols[k] is None:
            if edges is None or int(edges[1].shape[0]) != int(vals.shape[0]):
                raise MatlangError(
                    "internal: a support filed on the edge mask needs the batch's edges "
                    f"({vals.shape[0]} values)"
                )
            out.append((edges[0], edges[1], vals))
            continue
        rowptr, cols = concat_blocks([(p.counts[k], p.cols[k]) for p in pieces], ptr)  # type: ignore[misc]
        out.append((torch.from_numpy(rowptr), torch.from_numpy(cols), vals))
    return out


__all__ = [
    "TRANSFORM",
    "Piece",
    "assemble",
    "Deferred",
    "Unsplit",
    "batch_fingerprints",
    "graph_keys",
    "cached_supports",
    "edge_keys",
    "file_batch",
    "filed_pieces",
    "find",
    "graph_signatures",
    "matched",
    "row_major_keys",
    "Seen",
    "seen_graphs",
    "split",
    "split_many",
]
