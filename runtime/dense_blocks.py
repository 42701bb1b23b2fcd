"""A masked product of many small graphs as dense products of their blocks.

Every matrix of a batch is block-diagonal: a graph's sentence never reads another graph (the
batch semantics of :mod:`runtime.batch`). On a batch of many small graphs (molecules, TU sets,
the counting sets: 20–40 nodes) ``(A B)|S`` is cheaper as ``G`` dense ``m × m`` products, one
BLAS call each, than as one sparse product: at 128 graphs of 25 nodes (mean degree 10) the
masked ``A A`` on ``A`` takes 2.6 ms in GraphBLAS (saxpy, 340 k terms) and 0.8 ms more to align
its entries with the mask, and 0.3 ms here (``G m³`` = 2 M multiply-adds, scattered in and read
back out at the mask's entries).

Only integer operands take this path, and only where every partial sum stays below ``2⁵³``
(float64's exact integers; float32's, ``2²⁴``, where the bound allows; a product sums at
most ``m`` terms), so the result is the exact
integer GraphBLAS gives, entry for entry. Float operands keep the sparse kernel, whose order of
summation the float results follow.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

import numpy as np

from matlang.functions import FLOAT32_EXACT, FLOAT_EXACT

#: dense blocks are taken when their multiply-adds are at most this many times the sparse
#: product's estimated terms (a BLAS multiply-add costs ~1/20 of a sparse term here)
DENSE_OVER_SPARSE = 16
#: the most cells one dense operand may have (32 MiB of float64)
MAX_CELLS = 2**22
#: the most bytes of scratch a thread keeps between products (see :func:`_scratch`)
SCRATCH_KEPT = 8 * 2**20

_SCRATCH = threading.local()


def _scratch(slot: int, size: int, dtype: Any) -> np.ndarray:
    """``size`` cells of ``dtype`` from this thread's scratch ``slot``, uninitialised, reused
    from one product to the next: the dense blocks are a few hundred KB (320 KB at 128 graphs
    of 25 nodes in float32) and a fresh array of that size is fresh pages, faulted in on first
    write (~110 page faults a product, most of its time on a VM). Nothing is kept in them
    between calls: every product overwrites what it reads, and its result is a new array. A
    thread keeps at most :data:`SCRATCH_KEPT` bytes a slot."""
    bufs: dict[int, np.ndarray] | None = getattr(_SCRATCH, "bufs", None)
    if bufs is None:
        bufs = _SCRATCH.bufs = {}
    nbytes = int(size) * np.dtype(dtype).itemsize
    buf = bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = np.empty(nbytes, dtype=np.uint8)
        if nbytes <= SCRATCH_KEPT:
            bufs[slot] = buf
    return buf[:nbytes].view(dtype)


class Blocks:
    """The graphs' layout: ``ptr`` offsets, ``node_graph`` the graph of each node, ``m`` the
    largest graph."""

    def __init__(self, ptr: np.ndarray, node_graph: np.ndarray) -> None:
        self.ptr = np.asarray(ptr, dtype=np.int64)
        self.node_graph = np.asarray(node_graph, dtype=np.int64)
        #: cells of the masks met so far, by identity (a batch's kernels meet few masks,
        #: most of them more than once: ``A`` is both operands and the mask of ``A ⊙ A²``)
        self._cells: dict[tuple[int, bool], tuple[object, np.ndarray | None]] = {}
        sizes = np.diff(self.ptr)
        self.sizes = sizes
        self.g = int(sizes.size)
        self.m = int(sizes.max()) if sizes.size else 0

    def worth_it(self, a_nnz: int, b_nnz: int, n: int) -> bool:
        """Whether ``G`` dense ``m × m`` products cost less than the sparse product of operands
        with ``a_nnz`` and ``b_nnz`` entries (``a_nnz · b_nnz / n`` terms, each entry of ``A``
        meeting a row of ``B`` of mean length)."""
        if self.m == 0 or n == 0 or self.g * self.m * self.m > MAX_CELLS:
            return False
        terms = a_nnz * max(b_nnz, 1) / n
        return self.g * self.m**3 <= DENSE_OVER_SPARSE * max(terms, 1.0)

    @cached_property
    def offsets(self) -> np.ndarray:
        """Per node ``v`` of graph ``g`` starting at node ``p``: ``g·m² − p·(m + 1)``, so that
        the cell of entry ``(i, j)`` is ``i·m + j + offsets[i]`` (``g·m² + (i − p)·m + (j −
        p)``): one gather an entry."""
        start = np.repeat(self.ptr[:-1], self.sizes)
        return self.node_graph * (self.m * self.m) - start * (self.m + 1)

    def mask_cells(self, mask: Any) -> np.ndarray | None:
        """The cell of each entry of a mask as it is read (``rows``, ``cols``) in the ``(G, m,
        m)`` blocks, once per mask; ``None`` if an entry is not inside its row's graph (never
        the case on a batch: then the sparse kernel answers). Checked on the stored structure
        in O(n): its columns are sorted in each row, so a row's first and last columns lie in
        its graph iff all do."""
        key = (id(mask), bool(mask.transposed))
        hit = self._cells.get(key)
        if hit is None or hit[0] is not mask:
            hit = self._cells[key] = (mask, self._cells_of(mask))
        return hit[1]

    def _cells_of(self, mask: Any) -> np.ndarray | None:
        indptr, indices = mask.indptr, mask.indices
        full = np.flatnonzero(indptr[1:] > indptr[:-1])  # the rows with entries
        if full.size:
            first, last = indices[indptr[full]], indices[indptr[full + 1] - 1]
            graph_lo = self.ptr[self.node_graph[full]]
            graph_hi = graph_lo + self.sizes[self.node_graph[full]]
            if not bool(((first >= graph_lo) & (last < graph_hi)).all()):
                return None
        if mask.transposed:
            rows = mask.rows
            cells = rows * self.m
            cells += mask.cols
            cells += self.offsets[rows]
            return cells
        # rows as stored: row i's term ``i·m + offsets[i]`` repeated along its entries (a
        # sequential pass, not a gather)
        per_row = np.arange(self.offsets.size, dtype=np.int64) * self.m + self.offsets
        cells = np.repeat(per_row, np.diff(indptr))
        cells += indices  # in place: a second E-long array costs ~8× the add here (fresh pages)
        return cells

    def product(self, a: Any, va: np.ndarray, b: Any, vb: np.ndarray, s: Any) -> np.ndarray | None:
        """``(A B)|S`` as int64 aligned with the entries of mask ``s``; ``a``, ``b``: masks
        (``rows``, ``cols`` as read) holding the integer values ``va``, ``vb`` (a 0-d array:
        one value for every entry). ``None`` where the dense path is not exact or an entry
        leaves its graph."""
        if va.dtype.kind not in "iub" or vb.dtype.kind not in "iub":
            return None
        bound = self.m * _maxabs(va) * _maxabs(vb)
        if bound >= FLOAT_EXACT:
            return None
        ca, cb, cs = self.mask_cells(a), self.mask_cells(b), self.mask_cells(s)
        if ca is None or cb is None or cs is None:
            return None
        shape = (self.g, self.m, self.m)
        # float32 holds every integer below 2²⁴ exactly: half the memory, twice BLAS's speed
        dtype = np.float32 if bound < FLOAT32_EXACT else np.float64
        da = self._scatter(0, ca, va, dtype)
        # ``A A`` (the walks of a sentence): one operand scattered, read twice
        same = ca is cb and (vb is va or (va.ndim == 0 and vb.ndim == 0 and va == vb))
        db = da if same else self._scatter(1, cb, vb, dtype)
        prod = _scratch(2, da.size, dtype).reshape(shape)
        np.matmul(da.reshape(shape), db.reshape(shape), out=prod)
        return prod.reshape(-1)[cs].astype(np.int64)  # a new array: nothing aliases the scratch

    def _scatter(self, slot: int, cells: np.ndarray, values: np.ndarray, dtype: Any) -> np.ndarray:
        """The ``(G·m·m,)`` blocks holding ``values`` at ``cells``, in scratch ``slot`` (the
        values cast first: a scatter that casts as it goes is ~3× slower; a 0-d value is one
        scalar)."""
        out = _scratch(slot, self.g * self.m * self.m, dtype)
        out.fill(0)
        out[cells] = dtype(values) if values.ndim == 0 else values.astype(dtype, copy=False)
        return out


def _maxabs(x: np.ndarray) -> int:
    """The largest magnitude of integer values (``runtime.graphblas.maxabs`` for int arrays;
    not imported: graphblas imports this module)."""
    if x.size == 0:
        return 0
    return max(abs(int(x.max())), abs(int(x.min())))


__all__ = ["Blocks"]
