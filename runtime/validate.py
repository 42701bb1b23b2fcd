"""Whether a :class:`~runtime.batch.Batch` (``b`` below; typed ``Any``: that module imports
this one) is a valid batch of simple undirected graphs: ids in range, no self-loop, no edge
between graphs, no edge stored twice, ``Aᵀ = A`` (weights too).

A valid batch is decided in one pass over its edges (:func:`valid_in_one_pass`): coalesced
edges as they are, unsorted ones after one stable sort (a counting sort on the host), which is
kept for the interpreter (:meth:`~runtime.batch.Batch.row_major`). Only a batch that fails takes
:func:`check_slowly`, which finds the first bad edge and names it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from matlang.errors import GraphError

#: Edges per chunk of the host's validation scan (:func:`scan_edges`): 2 MB per temporary.
SCAN_CHUNK = 1 << 18


def check(
    b: Any, allow_directed: bool, allow_self_loops: bool, fp: tuple[Any, ...] | None = None
) -> None:
    """Raise :class:`GraphError` naming the first bad edge unless ``b`` is valid."""
    ei = b.edge_index
    if ei.dim() != 2 or ei.shape[0] != 2:
        raise GraphError(f"edge_index must have shape (2, E), got {tuple(ei.shape)}", "batch")
    if ei.dtype not in (torch.int64, torch.int32):
        raise GraphError(f"edge_index must hold integers, got {ei.dtype}", "batch")
    if not ei.numel():
        return
    # One pass over the edge keys decides a valid batch; only a batch that fails takes
    # the slow path, which finds the first bad edge and names it.
    if valid_in_one_pass(b, allow_directed, allow_self_loops, fp):
        return
    check_slowly(b, allow_directed, allow_self_loops)


def valid_in_one_pass(
    b: Any, allow_directed: bool, allow_self_loops: bool, fp: tuple[Any, ...] | None = None
) -> bool:
    """Whether the batch is valid, decided from the row-major keys ``i·N + j`` in one
    pass: ids in range, no self-loop, no edge between graphs, and (unless directed is
    allowed) no repeat with ``Aᵀ = A``. The transpose of a coalesced edge list is its
    column-major order: on the host a counting sort (O(N + E), about a third of a comparison
    sort of the keys), on a device one sort of the reversed keys. Unsorted edges are sorted
    once first (:func:`sort_host`, :func:`sort_device`) and the same test runs on the sorted
    order; the order is remembered (``row_major``) so that the interpreter does not sort again.
    ``False`` leaves the verdict, and the message, to :func:`check_slowly`; the range and
    coalescing it saw are remembered either way (``fp``: the fingerprint the caller took, else
    taken here)."""
    n = b.num_nodes
    ei = b.edge_index
    host = ei.device.type == "cpu"
    e: Any
    fp = b.fingerprint() if fp is None else fp
    # a layer's look for graphs seen before checked these tensors' ids, order, repeats and
    # graphs already (``scanned``: whether they came row-major): only self-loops are left
    scanned = b.recall("scanned", fp) if host else None
    if host:
        e = ei.numpy()
        e = e if e.dtype == np.int64 else e.astype(np.int64)
        # one reduction for both ends: read as uint64, a negative id is past 2⁶³ > n
        if scanned is None and e.size and int(e.view(np.uint64).max()) >= n:
            return False
    else:
        e = ei.to(torch.int64)
        lo, hi = (int(t) for t in torch.aminmax(e))
        if lo < 0 or hi >= n:
            return False
    b.remember("in_range", True, fp)
    row, col = e[0], e[1]
    graph_of = b.batch if b.num_graphs > 1 else None
    if scanned is not None:
        coalesced, loops, crossing = scanned, bool((row == col).any()), False
    elif host:  # in chunks: a few MB of temporaries, not E-long keys (80 MB at E = 10⁷)
        coalesced, loops, crossing = scan_edges(
            row, col, n, None if graph_of is None else graph_of.numpy()
        )
    else:
        key = row * n + col
        coalesced = bool((key[1:] > key[:-1]).all()) if key.shape[0] > 1 else True
        loops = bool((row == col).any())
        crossing = graph_of is not None and bool((graph_of[row] != graph_of[col]).any())
    b.remember("coalesced", coalesced, fp)
    if (not allow_self_loops and loops) or crossing:
        return False
    if allow_directed:
        return True
    w = b.edge_weight
    if host:
        hw = None if w is None else w.detach().numpy()
        if coalesced:
            indptr = b.recall("row_pointers", fp)  # a layer's look may have counted them
            if indptr is None:
                indptr = row_pointers(row, n, sorted_rows=True)
                # the stage's edge mask has the same rows: not counted again
                b.remember("row_pointers", indptr, fp)
            return symmetric_sorted(e, hw, n, indptr)
        # the rows sorted already (a layer's look for graphs seen before): not sorted again
        known = sorted_symmetric_host(row, col, hw, n, b.recall("sorted_rows", fp))
        if known is None:
            return False
        indptr, edges, order = known
        b.remember("row_pointers", indptr, fp)
        b.remember("row_major", (edges, order), fp)
        return True
    if coalesced:
        return symmetric_by_sort(row * n + col, row, col, w, n)
    found = sorted_symmetric_device(row, col, w, n)
    if found is None:
        return False
    b.remember("row_major", found, fp)
    return True


def sorted_symmetric_host(
    row: np.ndarray,
    col: np.ndarray,
    weight: np.ndarray | None,
    n: int,
    presorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, torch.Tensor, torch.Tensor] | None:
    """Unsorted int64 edges (in range) that equal their transpose without repeats, weights
    too, as ``(indptr, edges, order)``: the CSR row pointers of the sorted edges, the edges
    row-major ``(2, E)`` int64 and their positions in the input; ``None`` when they do not
    (a repeat or a missing reverse: :func:`check_slowly` decides). One sort
    (:func:`sort_host`); the sorted keys against the sorted reversed keys. ``presorted``: the
    edges sorted and checked without repeats already (a layer's look for graphs seen before,
    :func:`~compiler.layers.support_cache.seen_graphs`, hands on only such a sort)."""
    (indptr, cols, perm), (t_ptr, t_cols, t_perm) = sort_host(row, col, n, presorted)
    if presorted is None and not strictly_increasing_rows(indptr, cols):
        return None  # repeats: the slow path decides (weighted repeats are added up)
    if not (np.array_equal(indptr, t_ptr) and np.array_equal(cols, t_cols)):
        return None
    if weight is not None and not np.array_equal(weight[perm], weight[t_perm]):
        return None
    edges = np.empty((2, cols.size), dtype=np.int64)
    edges[0] = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    edges[1] = cols
    return indptr, torch.from_numpy(edges), torch.from_numpy(perm.astype(np.int64, copy=False))


def sorted_symmetric_device(
    row: torch.Tensor, col: torch.Tensor, weight: torch.Tensor | None, n: int
) -> tuple[torch.Tensor, torch.Tensor] | None:
    """:func:`sorted_symmetric_host` on the edges' device (two stable sorts,
    :func:`sort_device`): ``(edges, order)`` or ``None``."""
    skey, perm, tkey, t_perm = sort_device(row, col, n)
    if skey.numel() > 1 and not bool((skey[1:] > skey[:-1]).all()):
        return None  # repeats: the slow path decides
    if not torch.equal(skey, tkey):
        return None
    if weight is not None and not torch.equal(weight[perm], weight[t_perm]):
        return None
    return torch.stack([skey // n, skey % n]), perm


def sort_host(
    row: np.ndarray,
    col: np.ndarray,
    n: int,
    presorted: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The edges ``(row, col)`` sorted row-major and column-major, each as CSR
    ``(indptr, cols, perm)`` (``perm``: the edges' positions in that order): ``A`` and ``Aᵀ``
    with sorted rows. ``A`` by :func:`sort_rows_host` (or ``presorted``, its result earlier in
    this call), then the transpose the coalesced path takes too (``csr_tocsc``: its rows come
    out sorted within each column). int32 indices where they fit (:func:`row_pointers`)."""
    p, j, x = sort_rows_host(row, col, n) if presorted is None else presorted
    e, itype = j.size, j.dtype
    try:
        from scipy.sparse._sparsetools import csr_tocsc

        tp, ti, tx = np.empty(n + 1, itype), np.empty(e, itype), np.empty(e, itype)
        csr_tocsc(n, n, p, j, x, tp, ti, tx)  # Aᵀ, rows sorted (columns of A, rows in order)
        return (p, j, x), (tp, ti, tx)
    except (ImportError, TypeError, ValueError):  # no private module: numpy's stable sort
        perm = np.argsort(col.astype(np.int64) * n + row, kind="stable").astype(itype)
        return (p, j, x), (row_pointers(col, n).astype(itype), row[perm].astype(itype), perm)


def sort_rows_host(
    row: np.ndarray, col: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The edges ``(row, col)`` (ids in ``[0, n)``) sorted row-major as CSR ``(indptr, cols,
    perm)`` (``perm``: the edges' positions in that order): two stable counting passes
    (scipy's kernels, O(n + E) each), by column (``coo_tocsr`` of the transpose: ``Aᵀ``, its
    rows in input order), then by row (``csr_tocsc`` of that: ``A``, each row's columns in
    increasing order, as a radix sort leaves them) — ~0.85× the time of one pass by row and a
    sort of each row's columns (``csr_sort_indices``), the same arrays. A batch that is sorted
    here and then validated hands it on (:func:`sort_host`'s ``presorted``): one sort, not
    two."""
    e = row.size
    itype = np.int32 if max(n, e) < 2**31 - 1 else np.int64
    ids = np.arange(e, dtype=itype)
    try:
        from scipy.sparse._sparsetools import coo_tocsr, csr_tocsc

        tp, tj, tx = np.empty(n + 1, itype), np.empty(e, itype), np.empty(e, itype)
        coo_tocsr(n, n, e, col.astype(itype), row.astype(itype), ids, tp, tj, tx)
        p, j, x = np.empty(n + 1, itype), np.empty(e, itype), np.empty(e, itype)
        csr_tocsc(n, n, tp, tj, tx, p, j, x)
        return p, j, x
    except (ImportError, TypeError, ValueError):  # no private module: numpy's stable sort
        perm = np.argsort(row.astype(np.int64) * n + col, kind="stable").astype(itype)
        return row_pointers(row, n).astype(itype), col[perm].astype(itype), perm


def sort_device(
    row: torch.Tensor, col: torch.Tensor, n: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(keys, order)`` of the row-major keys ``i·n + j`` sorted (stable), then the same of
    the column-major keys ``j·n + i``: the edges' device sorts them; ``A = Aᵀ`` iff the sorted
    keys agree."""
    skey, perm = torch.sort(row * n + col, stable=True)
    tkey, t_perm = torch.sort(col * n + row, stable=True)
    return skey, perm, tkey, t_perm


def strictly_increasing_rows(indptr: np.ndarray, cols: np.ndarray) -> bool:
    """Whether the columns strictly increase within each row of a CSR (no repeat): one pass
    of scipy's kernel where it takes the arrays (the same integer type; no E-long temporaries,
    ~3× faster on fresh arrays), else by numpy."""
    if cols.size < 2:
        return True
    if indptr.dtype == cols.dtype and indptr.dtype in (np.int32, np.int64):
        try:
            from scipy.sparse._sparsetools import csr_has_canonical_format

            return bool(csr_has_canonical_format(indptr.size - 1, indptr, cols))
        except (ImportError, TypeError, ValueError):  # no private module
            pass
    bad = cols[1:] <= cols[:-1]
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < cols.size)]
    bad[starts - 1] = False  # a row's first column follows the previous row's last
    return not bool(bad.any())


def check_slowly(b: Any, allow_directed: bool, allow_self_loops: bool) -> None:
    """Raise :class:`GraphError` for the first bad edge: out of range, between graphs, a
    self-loop, stored twice or without its reverse."""
    n = b.num_nodes
    b.check_range()
    ei = b.edge_index.to(torch.int64)
    # One graph (a constant batch vector, O(N) to see) has no edge between graphs.
    b_lo, b_hi = torch.aminmax(b.batch)
    if int(b_lo) != int(b_hi):
        cross = b.batch[ei[0]] != b.batch[ei[1]]
        if bool(cross.any()):
            k = int(torch.nonzero(cross)[0])
            u, v = int(ei[0, k]), int(ei[1, k])
            raise GraphError(
                f"edge ({u}, {v}) joins graph {b.graph_label(int(b.batch[u]))} "
                f"to graph {b.graph_label(int(b.batch[v]))}",
                "batch",
            )
    if not allow_self_loops:
        loops = ei[0] == ei[1]
        if bool(loops.any()):
            u = int(ei[0, torch.nonzero(loops)[0]])
            g = int(b.batch[u])
            raise GraphError(f"self-loop at node {u - int(b.ptr[g])}", b.graph_label(g))
    if not allow_directed:
        check_symmetric(b, ei, ei[0] * n + ei[1])


def check_symmetric(b: Any, ei: torch.Tensor, key: torch.Tensor) -> None:
    """No edge stored twice (unweighted), and each edge's reverse stored (of equal weight)."""
    n = b.num_nodes
    rkey = ei[1] * n + ei[0]
    # One sort serves the duplicate check and the reverse-edge lookup.
    order = torch.argsort(key)
    skey = key[order]
    if b.edge_weight is None:
        if skey.numel() > 1 and bool((skey[1:] == skey[:-1]).any()):
            k = int(torch.nonzero(skey[1:] == skey[:-1])[0])
            u, v = int(skey[k] // n), int(skey[k] % n)
            g = int(b.batch[u])
            o = int(b.ptr[g])
            raise GraphError(f"edge ({u - o}, {v - o}) is stored twice", b.graph_label(g))
    pos = torch.searchsorted(skey, rkey).clamp(max=max(key.numel() - 1, 0))
    found = skey[pos] == rkey
    if b.edge_weight is not None:
        found &= b.edge_weight[order][pos] == b.edge_weight
    missing = ~found
    if bool(missing.any()):
        k = int(torch.nonzero(missing)[0])
        u, v = int(ei[0, k]), int(ei[1, k])
        g = int(b.batch[u])
        o = int(b.ptr[g])
        weight = " of the same weight" if b.edge_weight is not None else ""
        raise GraphError(
            f"edge ({u - o}, {v - o}) has no reverse edge ({v - o}, {u - o}){weight}: "
            "store both directions of each undirected edge",
            b.graph_label(g),
        )


def scan_edges(
    row: np.ndarray, col: np.ndarray, n: int, batch: np.ndarray | None
) -> tuple[bool, bool, bool]:
    """``(coalesced, any self-loop, any edge between graphs)`` of int64 edges, in chunks of
    :data:`SCAN_CHUNK` (keys ``i·n + j`` strictly increasing across chunks too)."""
    coalesced, loops, crossing = True, False, False
    last = -1
    for a in range(0, row.size, SCAN_CHUNK):
        r, c = row[a : a + SCAN_CHUNK], col[a : a + SCAN_CHUNK]
        key = r * n + c
        if coalesced:
            coalesced = int(key[0]) > last and bool((key[1:] > key[:-1]).all())
            last = int(key[-1])
        loops = loops or bool((r == c).any())
        if batch is not None and not crossing:
            crossing = bool((batch[r] != batch[c]).any())
    return coalesced, loops, crossing


def row_pointers(
    row: np.ndarray, n: int, dtype: Any = None, *, sorted_rows: bool = False
) -> np.ndarray:
    """CSR row pointers ``(n + 1,)`` of the entries of rows ``row`` once sorted by row, in
    ``dtype`` (``None``: int32 where every index fits, see :func:`symmetric_sorted`, else
    int64): a bincount, or where the rows are sorted already (``sorted_rows``) torch's one
    linear pass over them where it has one (~0.6× a ``searchsorted`` of every row id)."""
    itype = np.dtype(dtype or (np.int32 if max(n, row.size) < 2**31 - 1 else np.int64))
    convert = getattr(torch, "_convert_indices_from_coo_to_csr", None)
    if sorted_rows and convert is not None and itype in (np.int32, np.int64):
        try:
            out = convert(torch.from_numpy(row), n, out_int32=itype == np.int32).numpy()
            return out  # type: ignore[no-any-return]
        except (RuntimeError, TypeError):
            pass
    indptr = np.zeros(n + 1, dtype=itype)
    np.cumsum(np.bincount(row, minlength=n), out=indptr[1:])
    return indptr


def symmetric_sorted(
    e: np.ndarray, weight: np.ndarray | None, n: int, indptr: np.ndarray | None = None
) -> bool:
    """Whether a row-major sorted int64 edge list ``e`` (2, E) without repeats equals its
    transpose (weights too): the CSC form of A, read as CSR, is Aᵀ with sorted rows, built by
    scipy's counting sort (O(n + E)); A = Aᵀ iff the arrays agree. With int32 indices where
    they fit (half the memory of the transposed copy: 40 MB, not 80, at E = 10⁷). ``indptr``:
    the rows' pointers (:func:`row_pointers`) where the caller counted them."""
    row, col = e[0], e[1]
    if indptr is None:
        indptr = row_pointers(row, n, sorted_rows=True)
    itype = indptr.dtype
    col = np.ascontiguousarray(col, dtype=itype)
    data = np.zeros(col.size, dtype=np.int8) if weight is None else np.ascontiguousarray(weight)
    t_ptr = np.empty(n + 1, dtype=itype)
    t_idx = np.empty(col.size, dtype=itype)
    t_data = np.empty_like(data)
    try:  # the kernel itself: the public constructor's checks cost as much as it at n = 10³
        from scipy.sparse._sparsetools import csr_tocsc

        csr_tocsc(n, n, indptr, col, data, t_ptr, t_idx, t_data)
    except (ImportError, TypeError, ValueError):  # no private module, or an unusual dtype
        import scipy.sparse as sps

        t = sps.csr_matrix((data, col, indptr), shape=(n, n)).tocsc()
        t_ptr, t_idx, t_data = t.indptr, t.indices, t.data
    same = np.array_equal(t_ptr, indptr) and np.array_equal(t_idx, col)
    return same and (weight is None or np.array_equal(t_data, data))


def symmetric_by_sort(
    key: torch.Tensor, row: torch.Tensor, col: torch.Tensor, weight: torch.Tensor | None, n: int
) -> bool:
    """Whether coalesced edges (``key = row·n + col`` strictly increasing) equal their
    transpose, weights too: the reversed keys, sorted, are the keys (one sort, on the edges'
    device), and the weight of each edge is that of its reverse."""
    rkey, perm = torch.sort(col * n + row)
    if not torch.equal(rkey, key):
        return False
    return weight is None or bool(torch.equal(weight[perm], weight))
