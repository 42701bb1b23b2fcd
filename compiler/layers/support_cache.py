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
ids, a weighted sum of its degrees: one pass over a batch's edges and one over its nodes,
:func:`graph_signatures`), and a graph met again is its
filed piece when their edges are the same (each piece keeps its graph's edges, row counts and
local columns): for a batch whose signatures hold one graph each, one comparison of the
batch's edges with the pieces' laid end to end (:func:`same_edges`); graphs that share a
signature (a :data:`Bucket` of several) are told apart graph by graph. A batch of new graphs —
every batch of an inference stream, the first epoch of a training run — makes no key of its
edges beyond the signatures (the per-graph byte keys this replaced were about a tenth of a new
batch's forward and backward at 128 graphs of 25 nodes), and a batch of graphs seen before
compares arrays instead of making and hashing a key per graph.

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
    split_blocks,
)
from matlang.runtime.validate import row_pointers, sort_rows_host, strictly_increasing_rows

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
    #: the graph's edges: row counts and local column ids, row-major (what tells it from
    #: another graph filed under its signature; ``None`` for a piece split without them)
    edges: tuple[np.ndarray, np.ndarray] | None = None


#: Every support of one batch: ``(rowptr, cols, values)`` torch tensors, global ids.
Csr = tuple[Tensor, Tensor, Tensor]


def graph_signatures(
    ptr: np.ndarray, indptr: np.ndarray, cols: np.ndarray
) -> list[tuple[int, int, int, int]]:
    """Each graph's signature, what its cache entry is filed under, from the CSR of the
    batch's row-major edges (``indptr``, ``cols``; graph ``k``'s nodes are
    ``ptr[k]:ptr[k + 1]``): its nodes, its edges, the sum of its edges' local column ids (one
    pass over ``cols``) and the sum over its nodes of the squared degree times the local id
    plus one (one pass over the nodes). Cheap to make for a whole batch and rarely shared by
    two graphs (a shared one costs a comparison graph by graph, :func:`matched`); graphs that
    share one are told apart in the entry by their edges (:data:`Bucket`)."""
    bounds = indptr[ptr]
    counts = np.diff(bounds)
    g = counts.size
    sums = np.zeros(g, dtype=np.int64)
    full = np.flatnonzero(counts)
    if full.size:  # segments from each non-empty graph's first edge to the next one's
        sums[full] = np.add.reduceat(cols, bounds[full])
    local = sums - counts * ptr[:-1]
    sizes = np.diff(ptr)
    degree = np.diff(indptr).astype(np.int64)  # (wrapping past 2⁶³ still gives one value)
    weight = degree * degree
    # each node's local id plus one: its id less its graph's first node, plus one
    weight *= np.arange(1, degree.size + 1, dtype=np.int64) - np.repeat(ptr[:-1], sizes)
    spread = np.zeros(g, dtype=np.int64)
    nodes = np.flatnonzero(sizes)
    if nodes.size:
        spread[nodes] = np.add.reduceat(weight, ptr[nodes])
    return list(zip(sizes.tolist(), counts.tolist(), local.tolist(), spread.tolist()))


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
    rows, cols = edges[0].numpy(), edges[1].numpy()
    counted: list[np.ndarray] = []

    def indptr() -> np.ndarray:
        """The edges' row pointers, once (the validation's count where it made one)."""
        if not counted:
            known = b.row_pointers()
            counted.append(
                known if known is not None else row_pointers(rows, b.num_nodes, sorted_rows=True)
            )
        return counted[0]

    if keys is None:
        keys = cache_keys(graph_signatures(ptr, indptr(), cols), params)
    if looked is None:
        looked = cache.lookup(keys)
        pieces = all_filed(looked, ptr, indptr(), cols, cache)
        if pieces is not None:
            csr = structure() if structure is not None and any(on_edges) else None
            return assemble(pieces, ptr, csr)
    supports = list(compute())
    if structure is not None:
        edge_structure = structure()
    else:  # a copy: the entries must not hold the caller's edges (and the memo on them)
        edge_structure = (torch.from_numpy(indptr()), torch.from_numpy(cols.copy()))
    source = Unsplit(supports, ptr, range(len(keys)), on_edges, edge_structure)
    file_batch(cache, keys, looked, source)
    return supports


#: What the cache holds under a signature (:func:`graph_signatures`): the graphs filed under
#: it, usually one, each a :class:`Piece` or a :class:`Deferred` one (a graph of a computed
#: batch, not split out yet).
Bucket = list


def file_batch(cache: GraphCache, keys: list[CacheKey], looked: list[Any], source: Unsplit) -> None:
    """File every graph of a computed batch: a new entry under each signature not filed yet,
    and the graph added to the entry of each signature that is (a graph filed already is
    added again: :func:`settle` drops the repeat when the entry is next read)."""
    new = tuple.__new__  # (a named tuple's own constructor costs ~2× this, 128 times a batch)
    fresh: dict[CacheKey, Bucket] = {}  # a signature twice in the batch: one entry
    for k, (key, bucket) in enumerate(zip(keys, looked)):
        entry = new(Deferred, (source, k))
        if bucket is MISSING:
            bucket = fresh.get(key)
            if bucket is None:
                fresh[key] = [entry]
                continue
        bucket.append(entry)
    cache.store_many(list(fresh), list(fresh.values()), absent=True)


def all_filed(
    looked: Sequence[Any], ptr: np.ndarray, indptr: np.ndarray, cols: np.ndarray, cache: GraphCache
) -> list[Piece] | None:
    """Every graph's filed piece when each signature looked up has an entry (``looked``,
    :data:`MISSING` where none) and the batch's edges are the filed graphs' (:func:`matched`);
    ``None`` otherwise."""
    if any(p is MISSING for p in looked):
        return None
    return matched(looked, ptr, indptr, cols, cache)


def matched(
    buckets: Sequence[Bucket],
    ptr: np.ndarray,
    indptr: np.ndarray,
    cols: np.ndarray,
    cache: GraphCache,
) -> list[Piece] | None:
    """The filed piece of every graph of a batch whose edges are the CSR ``indptr``, ``cols``
    (row-major, global ids; ``buckets``: the entries under the graphs' signatures), or
    ``None`` when one is not filed (counted as a miss instead of the hit its signature gave).

    A graph is its filed piece when their edges are the same: for a batch whose every
    signature holds one graph (nearly always) that is one comparison of the whole batch's
    edges with the pieces' edges laid end to end (:func:`same_edges`); otherwise graph by
    graph. Deferred entries are split out first (:func:`settle`)."""
    pieces: list[Piece] = []
    append = pieces.append
    single = True
    for bucket in buckets:
        if len(bucket) != 1 or type(bucket[0]) is not Piece:
            settle(bucket)
            single = single and len(bucket) == 1
        append(bucket[0])
    if single and same_edges(pieces, ptr, indptr, cols):
        return pieces
    bounds = indptr[ptr].tolist()
    starts = ptr.tolist()
    out: list[Piece] = []
    for k, bucket in enumerate(buckets):
        lo, hi = starts[k], starts[k + 1]
        counts = np.diff(indptr[lo : hi + 1])
        local = cols[bounds[k] : bounds[k + 1]] - lo
        for piece in bucket:
            if _edges_equal(piece.edges, counts, local):
                out.append(piece)
                break
        else:
            cache.hits -= 1
            cache.misses += 1
            return None
    return out


def same_edges(
    pieces: Sequence[Piece], ptr: np.ndarray, indptr: np.ndarray, cols: np.ndarray
) -> bool:
    """Whether the pieces' edges, laid end to end with the graphs' offsets ``ptr``, are the
    batch's CSR ``indptr``, ``cols``, entry for entry (each graph the piece's graph: the same
    signature gave them the same node count): the row counts, then each column as its graph's
    first node plus the piece's local id (exact: the batch's columns are not known to lie in
    their graphs before this)."""
    counts = np.concatenate([p.edges[0] for p in pieces])  # type: ignore[index]
    if counts.size != indptr.size - 1 or not np.array_equal(counts, np.diff(indptr)):
        return False
    locals_ = [p.edges[1] for p in pieces]  # type: ignore[index]
    nnz = [a.size for a in locals_]
    if sum(nnz) != cols.size:
        return False
    expected = np.repeat(ptr[:-1], nnz)
    expected += np.concatenate(locals_)
    return bool(np.array_equal(expected, cols))


def _edges_equal(edges: Any, counts: np.ndarray, local: np.ndarray) -> bool:
    return (
        edges is not None and np.array_equal(edges[0], counts) and np.array_equal(edges[1], local)
    )


def settle(bucket: Bucket) -> None:
    """Split out ``bucket``'s deferred entries (their batches' pieces, all at once) and drop
    the repeats (a graph filed again keeps its first entry)."""
    for i, e in enumerate(bucket):
        if type(e) is Deferred:
            bucket[i] = e.source.piece(e.k)
    if len(bucket) > 1:
        kept: list[Piece] = []
        for p in bucket:
            if not any(
                q.edges is not None and _edges_equal(p.edges, q.edges[0], q.edges[1]) for q in kept
            ):
                kept.append(p)
        bucket[:] = kept


def filed_pieces(cache: GraphCache) -> list[Piece]:
    """Every piece the cache holds for a layer's supports (split out where deferred)."""
    out = []
    for key in cache.keys():
        if key.transform == TRANSFORM:
            bucket = cache.lookup([key])[0]
            settle(bucket)
            out.extend(bucket)
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
    none at all, and a training epoch pays it once per batch, in the next epoch. ``edges``:
    the batch's edges as CSR ``(rowptr, cols)``, split into each piece's edges."""

    def __init__(
        self,
        supports: Sequence[Csr],
        ptr: np.ndarray,
        ks: Sequence[int],
        on_edges: Sequence[bool] = (),
        edges: tuple[Tensor, Tensor] | None = None,
    ) -> None:
        self._supports: Sequence[Csr] | None = supports
        self._ptr = ptr
        self._ks = list(ks)
        self._on_edges = tuple(on_edges)
        self._edges = edges
        self._pieces: dict[int, Piece] = {}

    def piece(self, k: int) -> Piece:
        if self._supports is not None:
            pieces = split_many(self._supports, self._ptr, self._ks, self._on_edges, self._edges)
            self._pieces = dict(zip(self._ks, pieces))
            # the batch's arrays are let go: the pieces are copies
            self._supports, self._edges = None, None
        return self._pieces[k]


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
    a batch are taken from its coalesced edges after validation).

    Entries are filed only for graphs of validated batches, each with its edges (row counts
    and local columns), under its signature. So a batch whose CSR — rows in order, ids in
    range — equals, entry for entry, its graphs' filed edges laid end to end at its node
    offsets is those graphs, valid (symmetric, no self-loop, no repeat, no edge between
    graphs): that comparison (:func:`matched`, exact) is all a batch of graphs seen before is
    checked by. A signature is blind to the order of a row's columns, so the signatures of
    the rows as given serve. Only a batch with a new graph (or one that matches no filed
    graph) is checked further, for the validation it goes to: each row's columns strictly
    increasing (one pass of scipy's kernel), and each row's first and last column inside its
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
    n = b.num_nodes
    rows, cols = e[0], e[1]
    ptr = b.ptr.numpy()
    rows_in_order = rows.size < 2 or bool((rows[1:] >= rows[:-1]).all())
    fp: tuple[Any, ...] | None = None
    keys: list[CacheKey]
    pieces: list[Piece] | None = None
    if rows_in_order:
        if rows.size and (int(rows[0]) < 0 or int(rows[-1]) >= n):
            return None
        indptr = row_pointers(rows, n, np.int64, sorted_rows=True)
        keys = cache_keys(graph_signatures(ptr, indptr, cols), params)
        looked = cache.lookup(keys)
        pieces = all_filed(looked, ptr, indptr, cols, cache)  # the filed graphs' edges: valid
        row_major = pieces is not None or strictly_increasing_rows(indptr, cols)
    else:
        if rows.size and int(e.view(np.uint64).max()) >= n:  # a negative id reads past 2⁶³
            return None
        row_major = False
    if not row_major:  # rows out of order, or a row's columns: one counting sort
        fp = b.fingerprint()
        indptr, sorted_cols, perm = sort_rows_host(rows, cols, n)
        if not strictly_increasing_rows(indptr, sorted_cols):
            return None  # a repeated edge: the validation says so
        # handed on with the check made: the validation neither sorts nor checks them again
        b.remember("sorted_rows", (indptr, sorted_cols, perm), fp)
        cols = sorted_cols.astype(np.int64)
        if not rows_in_order:  # (else the keys stand: a signature is blind to a row's order)
            keys = cache_keys(graph_signatures(ptr, indptr, cols), params)
            looked = cache.lookup(keys)
        pieces = all_filed(looked, ptr, indptr, cols, cache)
    if pieces is not None:
        _hand_on(b, fp, row_major, indptr)
        a = RowMajor(torch.from_numpy(indptr.astype(np.int64, copy=False)), torch.from_numpy(cols))
        return Seen(keys, ptr, pieces, a, looked)
    # a new graph: the checks the validation is handed (nothing compared, no CSR of A)
    counts = np.diff(indptr)
    full = np.flatnonzero(counts)  # the rows with entries: their first and last columns
    first, last = cols[indptr[full]], cols[indptr[full + 1] - 1]
    g = b.batch.numpy()[full]
    if not bool(((first >= ptr[g]) & (last < ptr[g + 1])).all()):
        return None  # an edge between graphs, or a column out of range
    _hand_on(b, fp, row_major, indptr)
    return Seen(keys, ptr, None, None, looked)


def _hand_on(b: Batch, fp: tuple[Any, ...] | None, row_major: bool, indptr: np.ndarray) -> None:
    """What the look checked, remembered on ``b`` for a validation of the same tensors (a
    compiled module's, another stage's): its ids, order, repeats and graphs (``scanned``:
    whether the edges came row-major) and, for row-major edges, their row pointers."""
    fp = b.fingerprint() if fp is None else fp
    if row_major:
        b.remember("row_pointers", indptr, fp)
    b.remember("scanned", row_major, fp)


def split(
    supports: Sequence[Csr],
    ptr: np.ndarray,
    k: int,
    on_edges: Sequence[bool] = (),
    edges: tuple[Tensor, Tensor] | None = None,
) -> Piece:
    """Graph ``k``'s blocks (local ids, copies: the entry outlives the batch)."""
    return split_many(supports, ptr, [k], on_edges, edges)[0]


def split_many(
    supports: Sequence[Csr],
    ptr: np.ndarray,
    ks: Sequence[int],
    on_edges: Sequence[bool] = (),
    edges: tuple[Tensor, Tensor] | None = None,
) -> list[Piece]:
    """The blocks of graphs ``ks`` (see :func:`split`), each support's cut by the block codec
    of :mod:`runtime.cache` (:func:`~runtime.cache.split_blocks`: the row counts and local ids
    made once for the whole batch, then views) and its values copied once: each graph's piece
    is views (no copy and no conversion per graph: ~2 µs a graph). A support on the edge mask
    (``on_edges[s]``) keeps its values only (see :class:`Piece`). ``edges``: the batch's
    edges as CSR ``(rowptr, cols)``, cut into each piece's ``edges`` by the same codec."""
    sizes = np.diff(ptr)
    width = np.int32 if int(sizes.max(initial=0)) <= np.iinfo(np.int32).max else np.int64
    # a graph's edges in one byte an id where its nodes allow (no self-loop: a row holds at
    # most n - 1 ≤ 255 of them): n + E bytes a graph of 256 nodes or fewer
    edge_width = np.uint8 if int(sizes.max(initial=0)) <= 256 else width
    edge_blocks = (
        None
        if edges is None
        else split_blocks(edges[0].numpy(), edges[1].numpy(), ptr, ks, edge_width)
    )
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
                None if edge_blocks is None else edge_blocks[i][:2],
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
    "cached_supports",
    "file_batch",
    "filed_pieces",
    "same_edges",
    "settle",
    "graph_signatures",
    "matched",
    "Seen",
    "seen_graphs",
    "split",
    "split_many",
]
