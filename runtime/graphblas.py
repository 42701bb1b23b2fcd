"""Graph constants on SuiteSparse:GraphBLAS (python-graphblas): masks, masked products, reductions.

A graph constant is a value that depends only on the graph (masks, ``A ⊙ A²``, ``diag(A³)``,
degrees, traces, functions of those). This module holds the kernels that compute them on a
block-diagonal batch, exactly (int64) where the values are integers and in float64 otherwise:

=====================  ========================================================================
:class:`Mask`          a set of entries (its CSR structure, sorted row-major), possibly read
                       transposed: ``Sᵀ`` is ``S`` with the roles of rows and columns swapped,
                       entry ``k`` of ``Sᵀ`` being entry ``k`` of ``S`` flipped
``sampled``            ``(A B)|S`` by a masked ``mxm`` (``C(S.S) << A.mxm(B)``): the unmasked
                       product is never formed
``compose``/``union``  ``S ∘ T`` (``any_pair`` product) and ``S ∪ T``
``lookup``             ``M|S`` read from ``M`` on another mask (0 where it has no entry)
``propagate``          ``M h`` (scipy's CSR/CSC kernel on the mask's own arrays; ``mxv``
                       for an iso ``M``); ``row_sum``, ``diagonal``, ``readout``
=====================  ========================================================================

Values on a mask are numpy arrays aligned with the mask's entries (row-major for ``S``, the same
order flipped for ``Sᵀ``), so pointwise operations are numpy operations and the arrays go to
torch without a copy (``torch.from_numpy``). A value equal on every entry is a 0-d array (an iso
value: ``A`` of a 0/1 graph, ``𝟏``).

Integer values are checked against int64 before every product: a bound on the result is computed
from the operands (largest magnitude times the largest row count) and, past ``2⁶²``, the product
is taken in float64 (``exact=False``) or refused with :class:`~matlang.errors.EvaluationError`
(``exact=True``), never wrapped around silently.

Threads: GraphBLAS uses ``torch.get_num_threads()`` threads unless :func:`set_threads` fixed a
number (``None`` goes back to following torch).
"""

from __future__ import annotations

import threading
from fractions import Fraction
from functools import cached_property
from math import lcm
from typing import Any

import numpy as np

from matlang.errors import EvaluationError
from matlang.runtime.dense_blocks import Blocks

#: Integer values stay int64 while a bound on every entry is below this.
SAFE = 2**62

_THREADS: int | None = None
_APPLIED: int | None = None  # the thread count last given to GraphBLAS
_LOCK = threading.Lock()


def set_threads(n: int | None) -> None:
    """GraphBLAS's thread count: ``n``, or ``None`` to follow ``torch.get_num_threads()``."""
    global _THREADS
    if n is not None and int(n) < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    _THREADS = None if n is None else int(n)


def _gb() -> Any:
    """python-graphblas, imported on first use with its thread count set."""
    import graphblas

    want = _THREADS
    if want is None:
        import torch

        want = torch.get_num_threads()
    global _APPLIED
    # reading GraphBLAS's config costs ~50 µs (a C call and a dict walk): set it when the wanted
    # count changes, not on every kernel
    if want != _APPLIED:
        graphblas.ss.config["nthreads"] = want
        _APPLIED = want
    return graphblas


# --------------------------------------------------------------------------- values


def is_iso(x: np.ndarray) -> bool:
    """A 0-d array: one value for every entry."""
    return x.ndim == 0


def maxabs(x: np.ndarray) -> int | float:
    """The largest magnitude of ``x`` (0 when empty), exact for integers."""
    if x.ndim == 0:  # an iso value: no reductions (two numpy reductions cost µs each)
        v = x.item()
        return abs(v) if x.dtype.kind in "iubO" else float(abs(v))
    if x.size == 0:
        return 0
    if x.dtype == object:
        return max(abs(v) for v in x.flat)
    # the extremes, not np.abs(x).max(): no temporary the size of x (an E-long array at
    # n = 10⁶ is 80 MB), and exact for int64's most negative value (Python ints)
    if x.dtype.kind in "iub":
        return max(int(x.max()), -int(x.min()))
    return float(max(x.max(), -x.min()))


def _integral(x: np.ndarray) -> bool:
    return x.dtype.kind in "iub"


def _common_denominator(x: np.ndarray) -> tuple[np.ndarray, int]:
    """An object array of Fractions as ``(int64 numerators, denominator)``: ``x = num / den``,
    so integer kernels can run on rational values exactly. An array holding a float is not
    rational: it comes back as float64 with denominator 1 (never a numerator truncated)."""
    den = 1
    for v in x.flat:
        if isinstance(v, Fraction):
            den = lcm(den, v.denominator)
        elif isinstance(v, (float, np.floating)):
            return x.astype(np.float64), 1
    num = np.empty(x.shape, dtype=object)
    num.flat[:] = [int(v * den) for v in x.flat]
    if maxabs(num) >= SAFE:
        raise EvaluationError("a rational value's numerator exceeds int64 on the sparse path")
    return num.astype(np.int64), den


def _holds_float(x: np.ndarray) -> bool:
    """float64 values, or an object array holding a float."""
    if x.dtype.kind == "f":
        return True
    return x.dtype == object and any(isinstance(v, (float, np.floating)) for v in x.flat)


def _as_float(x: np.ndarray, what: str) -> np.ndarray:
    """``x`` in float64 at its value (a Fraction as its nearest float)."""
    return as_float64(x, f"{what} on the sparse path")


def as_float64(x: Any, where: str) -> np.ndarray:
    """``x`` (an array or a scalar, exact or not) in float64; an exact value past float64's
    range is refused as the dense evaluator refuses it, naming ``where`` — never numpy's
    OverflowError."""
    x = np.asarray(x)
    if x.dtype == np.float64:
        return x
    try:
        return x.astype(np.float64)
    except OverflowError:
        digits = len(str(abs(int(maxabs(x)))))
        raise EvaluationError(
            f"{where}: an exact value with {digits} digits does not fit in float64"
        ) from None


def _rational(num: np.ndarray, den: int) -> np.ndarray:
    """``num / den`` as exact numbers (ints where whole)."""
    if den == 1:
        return num
    if num.dtype.kind not in "iubO":  # a float result is a float: divided, never truncated
        return num / den
    out = np.empty(num.shape, dtype=object)
    out.flat[:] = [_exact(Fraction(int(v), den)) for v in num.flat]
    return out


def _exact(v: Fraction) -> int | Fraction:
    return int(v) if v.denominator == 1 else v


def _quotient(a: Any, b: Any) -> Any:
    """``a / b`` of two exact numbers as an exact one; with a float among them, a float (a
    float read as a Fraction would print a float's binary digits as an exact rational)."""
    if isinstance(a, (float, np.floating)) or isinstance(b, (float, np.floating)):
        return float(a) / float(b)
    return _exact(Fraction(a) / Fraction(b))


def segment_sum(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """``Σ values[offsets[k] : offsets[k + 1]]`` for every segment ``k``, each segment summed
    alone (``np.add.reduceat`` on the non-empty ones; 0 for an empty one), so a segment's sum is
    the sum it has as the only segment: exact for integers and Fractions, and for floats the
    same rounding whatever the other segments hold."""
    out = np.zeros(max(offsets.size - 1, 0), dtype=values.dtype)
    starts, ends = offsets[:-1], offsets[1:]
    full = ends > starts
    if full.any():
        # reduceat sums from each start to the next start given: with the empty segments left
        # out, that is the segment's own end (the last one ends at offsets[-1])
        out[full] = np.add.reduceat(values[: int(offsets[-1])], starts[full])
    return out


# --------------------------------------------------------------------------- masks


class Mask:
    """A set of entries of an ``n × n`` matrix (sorted CSR structure), read as it is or
    transposed (``transposed``: entry ``k`` is entry ``k`` of the structure, flipped)."""

    def __init__(
        self, n: int, indptr: np.ndarray, indices: np.ndarray, *, transposed: bool = False
    ) -> None:
        self.n = int(n)
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int64)
        self.transposed = transposed
        self._flipped: Mask | None = None

    # constructors -----------------------------------------------------------------------
    @staticmethod
    def from_sorted_coo(
        n: int, rows: np.ndarray, cols: np.ndarray, indptr: np.ndarray | None = None
    ) -> Mask:
        """Entries sorted row-major without repeats (``indptr``: their row pointers, where the
        caller has them)."""
        if indptr is None:
            indptr = np.zeros(n + 1, dtype=np.int64)
            np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        out = Mask(n, indptr, cols)
        out.__dict__["base_rows"] = np.ascontiguousarray(rows, dtype=np.int64)
        return out

    @staticmethod
    def identity(n: int) -> Mask:
        return Mask(n, np.arange(n + 1, dtype=np.int64), np.arange(n, dtype=np.int64))

    @staticmethod
    def empty(n: int) -> Mask:
        return Mask(n, np.zeros(n + 1, dtype=np.int64), np.zeros(0, dtype=np.int64))

    @staticmethod
    def full(ptr: np.ndarray) -> Mask:
        """Every pair of nodes of the same graph (``ptr``: the graphs' node offsets)."""
        sizes = np.diff(ptr)
        n = int(ptr[-1]) if ptr.size else 0
        per_row = np.repeat(sizes, sizes)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(per_row, out=indptr[1:])
        starts = np.repeat(ptr[:-1], sizes)  # first node of each row's graph
        first = np.repeat(indptr[:-1], per_row)
        cols = np.repeat(starts, per_row) + np.arange(int(indptr[-1])) - first
        return Mask(n, indptr, cols)

    @staticmethod
    def from_gb(matrix: Any) -> Mask:
        """The structure of a GraphBLAS matrix."""
        info = matrix.ss.export("csr", sort=True, raw=False)
        return Mask(matrix.nrows, info["indptr"].view(np.int64), info["col_indices"].view(np.int64))

    # views ------------------------------------------------------------------------------
    def flip(self) -> Mask:
        """``Sᵀ`` aligned entry by entry with ``S`` (one object per mask and its flip)."""
        if self._flipped is None:
            f = Mask.__new__(Mask)
            f.__dict__.update(
                {
                    k: v
                    for k, v in self.__dict__.items()
                    if k in ("base_rows", "pattern", "keys", "_matrices")
                }
            )
            f.n, f.indptr, f.indices = self.n, self.indptr, self.indices
            f.transposed, f._flipped = not self.transposed, self
            self._flipped = f
        return self._flipped

    @property
    def nnz(self) -> int:
        return int(self.indices.size)

    @cached_property
    def base_rows(self) -> np.ndarray:
        """Row of each stored entry (of the structure, before any transpose)."""
        return np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))

    @property
    def rows(self) -> np.ndarray:
        """Row of each entry as this mask is read."""
        return self.indices if self.transposed else self.base_rows

    @property
    def cols(self) -> np.ndarray:
        return self.base_rows if self.transposed else self.indices

    @cached_property
    def row_counts(self) -> np.ndarray:
        if self.transposed:
            return np.bincount(self.indices, minlength=self.n).astype(np.int64)
        return np.diff(self.indptr)

    @cached_property
    def max_row(self) -> int:
        return int(self.row_counts.max()) if self.n else 0

    @cached_property
    def pattern(self) -> Any:
        """The structure as a GraphBLAS BOOL matrix (untransposed)."""
        return self._import(np.array(True))

    def strict_lower(self) -> Any:
        """The entries of the stored structure below the diagonal (``i > j``), as a GraphBLAS
        BOOL matrix: each row's are a prefix of its sorted columns, so L's row pointers are a
        running count of them read at the structure's row pointers."""
        keep = self.indices < self.base_rows
        # a running count in int32 where it fits: 4 bytes an entry (40 MB at E = 10⁷), dropped
        # before the import, which takes the fresh arrays over without copying them
        count = np.empty(keep.size + 1, dtype=np.int32 if keep.size < 2**31 - 1 else np.int64)
        count[0] = 0
        np.cumsum(keep, out=count[1:])
        indptr = count[self.indptr].astype(np.int64)
        del count
        cols = self.indices[keep]
        del keep
        return _gb().Matrix.ss.import_csr(
            nrows=self.n,
            ncols=self.n,
            indptr=indptr,
            col_indices=cols,
            values=np.ones(1, dtype=bool),
            is_iso=True,
            sorted_cols=True,
            take_ownership=True,
        )

    def pattern_view(self) -> Any:
        """The structure as GraphBLAS reads this mask (transposed or not), BOOL."""
        return self.pattern.T if self.transposed else self.pattern

    def matrix(self, values: np.ndarray) -> Any:
        """The matrix holding ``values`` (aligned with the entries) on this mask, as GraphBLAS
        reads it: a transposed view for a transposed mask (an iso matrix is built once)."""
        iso = is_iso(values)
        if iso:
            key = ("iso", values.dtype.str, values.item())
            hit = self._matrices.get(key)
            if hit is None:
                hit = self._matrices[key] = self._import(values)
            return hit.T if self.transposed else hit
        m = self._import(values)
        return m.T if self.transposed else m

    @cached_property
    def _matrices(self) -> dict[Any, Any]:
        return {}

    def _import(self, values: np.ndarray) -> Any:
        gb = _gb()
        iso = is_iso(values)
        vals = np.ascontiguousarray(values.reshape(1) if iso else values)
        m = gb.Matrix.ss.import_csr(
            nrows=self.n,
            ncols=self.n,
            indptr=self.indptr,
            col_indices=self.indices,
            values=vals,
            is_iso=iso,
            sorted_cols=True,
        )
        return m

    def align(self, result: Any, dtype: np.dtype) -> np.ndarray:
        """The entries of ``result`` (a GraphBLAS matrix read as this mask is, its structure a
        subset of this mask's) as an array aligned with the mask, 0 where it has no entry."""
        gb = _gb()
        r = result.T.new() if self.transposed else result
        if r.nvals == self.nnz:  # every entry present: the values in row-major order
            return self._entry_values(r.ss.export("csr", sort=True), dtype)
        out = np.zeros(self.nnz, dtype=dtype)
        if r.nvals == 0:
            return out
        if r.nvals * 2 < self.nnz or self.nnz <= 1 << 17:
            # few entries, or few in all: each one's place found in its row (scipy's kernel)
            # beats filling the mask in GraphBLAS (an import, an accumulate, a sorted export:
            # 104 against 40 µs for A ⊙ A² on 32 ENZYMES graphs, 4,264 entries, 3,738 of them
            # there; 1.1 against 0.8 ms at 95,000 entries, 99.99 % there). Past 2¹⁷ entries,
            # more than half of them there, the fill is as fast or faster (12.6 against
            # 18.9 ms at 950,000 entries, all but 20 there)
            rows, cols, vals = r.to_coo()
            out[self.positions(rows, cols)] = vals
            return out
        z = self._import(np.zeros((), dtype=dtype))  # a fresh one: it is written to
        z(gb.binary.plus) << r
        return self._entry_values(z.ss.export("csr", sort=True), dtype)

    def positions(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """The entry numbers of the stored entries ``(rows[k], cols[k])`` (each in the
        structure), found inside each one's row in O(k) memory — not by a search in the
        structure's keys, which would hold an E-long array (80 MB at E = 10⁷) for a handful of
        entries: by scipy's kernel (:func:`_sample_offsets`), else by a vectorised binary
        search, all entries at once, in O(k log max_row) time."""
        found = _sample_offsets(self, rows, cols)
        if found is not None:
            return found
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        lo = self.indptr[rows]
        hi = self.indptr[rows + 1]  # the answer is in [lo, hi): columns sorted in each row
        while True:
            live = lo < hi
            if not live.any():
                return lo
            mid = (lo + hi) >> 1
            below = live & (self.indices[np.minimum(mid, max(self.nnz - 1, 0))] < cols)
            lo = np.where(below, mid + 1, lo)
            hi = np.where(live & ~below, mid, hi)

    def _entry_values(self, info: dict[str, Any], dtype: np.dtype) -> np.ndarray:
        """One value per entry of this mask from an exported matrix with every entry: an iso
        matrix exports one value for all of them (a lookup of ``A`` or ``𝟏𝟏ᵀ`` on a flipped
        mask), which is spread over the entries, never read as the first of ``nnz`` values."""
        values = info["values"]
        if info.get("is_iso", False):
            return np.full(self.nnz, values[0] if values.size else 0, dtype=dtype)
        if values.size != self.nnz:  # pragma: no cover - a GraphBLAS export we do not know
            raise EvaluationError(
                f"internal: {values.size} values exported for a mask of {self.nnz} entries"
            )
        return np.ascontiguousarray(values, dtype=dtype)

    def is_symmetric(self, values: np.ndarray) -> bool:
        """Whether ``values`` (aligned with the stored structure, not an iso value) on this
        structure make a symmetric matrix: its CSC form, read as CSR, is the transpose with
        sorted rows (scipy's counting sort, O(n + E); a third of GraphBLAS's transpose and
        compare on ER n = 10⁵), equal to the CSR arrays iff ``M = Mᵀ``."""
        import scipy.sparse as sps

        t = sps.csr_matrix((values, self.indices, self.indptr), shape=(self.n, self.n)).tocsc()
        return (
            np.array_equal(t.indptr, self.indptr)
            and np.array_equal(t.indices, self.indices)
            and np.array_equal(t.data, values)
        )

    @cached_property
    def keys(self) -> np.ndarray:
        """Row-major keys ``i·n + j`` of the structure (sorted)."""
        return self.base_rows * self.n + self.indices


def _sample_offsets(mask: Mask, rows: np.ndarray, cols: np.ndarray) -> np.ndarray | None:
    """:meth:`Mask.positions` by scipy's ``csr_sample_offsets`` kernel (the one behind
    ``csr[rows, cols]``: a scan of each short row, a binary search of a long one), ~8× fewer
    µs than the vectorised search for a thousand entries; ``None`` where the private kernel is
    not there or refuses the arrays (the caller searches itself). Every entry must be stored:
    an offset of -1 (not found) is an internal error, never a silently wrong place."""
    try:
        from scipy.sparse._sparsetools import csr_sample_offsets
    except ImportError:  # pragma: no cover - a scipy without its private kernels
        return None
    itype = mask.indices.dtype
    if mask.indptr.dtype != itype:
        return None
    r = np.ascontiguousarray(rows, dtype=itype)
    c = np.ascontiguousarray(cols, dtype=itype)
    out = np.empty(r.size, dtype=itype)
    try:
        csr_sample_offsets(mask.n, mask.n, mask.indptr, mask.indices, r.size, r, c, out)
    except (TypeError, ValueError):  # pragma: no cover - a signature we do not know
        return None
    if out.size and out.min() < 0:
        raise EvaluationError("internal: a product entry outside its mask's structure")
    return out


# --------------------------------------------------------------------------- kernels


class Kernels:
    """The GraphBLAS kernels of one batch: ``n`` nodes, ``ptr`` graph offsets, ``node_graph``
    the graph of each node; ``exact``: integers stay exact (overflow raises) and divisions give
    Fractions, else past int64 the values go to float64."""

    def __init__(self, n: int, ptr: np.ndarray, node_graph: np.ndarray, *, exact: bool) -> None:
        self.n = n
        self.ptr = ptr
        self.node_graph = node_graph
        self.exact = exact

    # overflow -------------------------------------------------------------------------
    def fits(self, bound: int | float, what: str) -> bool:
        """Whether integers bounded by ``bound`` stay exact in int64; in exact mode a bound
        past it raises."""
        if bound < SAFE:
            return True
        if self.exact:
            raise EvaluationError(
                f"{what} may exceed int64 (a bound of {bound:.3g}) on the sparse path; evaluate "
                "this graph with the dense evaluator (exact big integers)"
            )
        return False

    def _integer_operands(
        self, *xs: np.ndarray, terms: int, what: str
    ) -> tuple[list[np.ndarray], int]:
        """``xs`` as int64 or float64 arrays for a kernel summing up to ``terms`` products, and
        the denominator the integer result has: exact rationals are scaled to integer
        numerators only where every operand is exact and the bound fits int64. An operand
        holding a float makes the product a float: every operand goes to float64 at its value
        (a Fraction as ``float(num / den)``), denominator 1 — never a float product turned
        back into a Fraction by truncation."""
        floats = [_as_float(x, what) for x in xs] if any(_holds_float(x) for x in xs) else None
        if floats is not None:
            return floats, 1
        den = 1
        out = []
        for x in xs:
            if x.dtype == object:
                try:
                    num, d = _common_denominator(x)
                except EvaluationError:
                    if self.exact:
                        raise
                    return [_as_float(v, what) for v in xs], 1
                den *= d
                out.append(num)
            else:
                out.append(x)
        bound: int | float = terms
        for x in out:
            bound *= maxabs(x)
        if not self.fits(bound, what):
            return [_as_float(x, what) for x in xs], 1
        return out, den

    # masks ----------------------------------------------------------------------------
    def compose(self, a: Mask, b: Mask) -> Mask:
        """``a ∘ b``: entries ``(i, j)`` with a path ``(i, k) ∈ a``, ``(k, j) ∈ b``."""
        gb = _gb()
        pa = a.pattern.T if a.transposed else a.pattern
        pb = b.pattern.T if b.transposed else b.pattern
        return Mask.from_gb(pa.mxm(pb, gb.semiring.any_pair[gb.dtypes.BOOL]).new())

    def union(self, a: Mask, b: Mask) -> Mask:
        gb = _gb()
        pa = a.pattern.T if a.transposed else a.pattern
        pb = b.pattern.T if b.transposed else b.pattern
        return Mask.from_gb(pa.ewise_add(pb, gb.binary.lor).new())

    # matrices on masks ----------------------------------------------------------------
    def sampled(self, a: Mask, va: np.ndarray, b: Mask, vb: np.ndarray, s: Mask) -> np.ndarray:
        """``(A B)|S``: a masked product, aligned with ``s``."""
        gb = _gb()
        # two 0/1 patterns: each entry counts paths, below n, int64 (no bound to compute)
        unit = is_iso(va) and is_iso(vb) and va.item() == 1 and vb.item() == 1
        if unit:
            den, dtype = 1, np.dtype(np.int64)
        else:
            terms = max(min(a.max_row, b.n), 1)
            (va, vb), den = self._integer_operands(va, vb, terms=terms, what="a product")
            dtype = np.result_type(va.dtype, vb.dtype)
        dense = self._dense_sampled(
            a, np.array(1) if unit else va, b, np.array(1) if unit else vb, s
        )
        if dense is not None:
            return _rational(dense, den) if den != 1 else dense
        ring = gb.semiring.plus_pair if unit else gb.semiring.plus_times
        out_type = gb.dtypes.INT64 if dtype.kind in "iub" else gb.dtypes.FP64
        # plus_pair reads no values: the masks' (cached) patterns serve as the operands
        ma = a.pattern_view() if unit else a.matrix(va)
        mb = b.pattern_view() if unit else b.matrix(vb)
        if s.transposed:  # (A B)ᵀ = Bᵀ Aᵀ on the structure of s, read back transposed
            left, right = mb.T, ma.T
            target = s.flip()
        else:
            left, right, target = ma, mb, s
        c = gb.Matrix(out_type, s.n, s.n)
        c(target.pattern.S) << left.mxm(right, ring[out_type])
        out = target.align(c, np.dtype(out_type.np_type))
        return _rational(out, den) if den != 1 else out

    def _dense_sampled(
        self, a: Mask, va: np.ndarray, b: Mask, vb: np.ndarray, s: Mask
    ) -> np.ndarray | None:
        """``(A B)|S`` of integer operands as dense products of the graphs' blocks where that
        is cheaper (many small graphs) and exact (:mod:`runtime.dense_blocks`); ``None``
        otherwise."""
        if s.nnz == 0 or not self.blocks.worth_it(a.nnz, b.nnz, self.n):
            return None
        return self.blocks.product(a, va, b, vb, s)

    @cached_property
    def blocks(self) -> Blocks:
        return Blocks(self.ptr, self.node_graph)

    def lookup(self, src: Mask, values: np.ndarray, dst: Mask) -> np.ndarray:
        """``M|dst`` from ``M`` on ``src``: 0 where ``src`` has no entry."""
        if is_iso(values) and src.nnz == dst.nnz and np.array_equal(src.keys, dst.keys):
            if src.transposed == dst.transposed:
                return values
        gb = _gb()
        exact_obj = values.dtype == object
        vals, den = _common_denominator(values) if exact_obj else (values, 1)
        m = src.matrix(vals)
        target = dst.flip() if dst.transposed else dst
        read = m.T if dst.transposed else m
        c = gb.Matrix(read.dtype, dst.n, dst.n)
        c(target.pattern.S) << read
        out = target.align(c, np.dtype(read.dtype.np_type))
        return _rational(out, den) if exact_obj else out

    def csr(
        self, s: Mask, values: np.ndarray, transpose: bool, *, symmetric: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """``M`` (``Mᵀ``) as sorted CSR arrays ``(indptr, indices, values)`` and whether it is
        symmetric (``symmetric``: known by the caller, not checked again): the operator of a
        propagate step, built once per batch."""
        read = s.flip() if transpose else s
        vals = np.broadcast_to(values, (s.nnz,)) if is_iso(values) else values
        if vals.dtype == object:
            vals = vals.astype(np.float64)
        vals = np.ascontiguousarray(vals)
        if symmetric is None:
            symmetric = s.is_symmetric(vals)
        if symmetric:  # M = Mᵀ: the stored structure as it is, no GraphBLAS matrix needed
            return s.indptr, s.indices, vals, True
        if not read.transposed:
            return read.indptr, read.indices, vals, False
        info = read.matrix(vals).new().ss.export("csr", sort=True)
        indptr = info["indptr"].view(np.int64)
        indices = info["col_indices"].view(np.int64)
        out = np.broadcast_to(info["values"], indices.shape) if info["is_iso"] else info["values"]
        return indptr, indices, np.ascontiguousarray(out), False

    def triangle_trace(self, s: Mask) -> np.ndarray:
        """``tr(A³)`` of every graph for the 0/1 symmetric ``A`` whose edges are ``s``: six times
        its triangles, each counted once (``L`` the strictly lower triangle, ``C⟨L⟩ = Lᵀ L``
        with plus_pair: a triangle ``a > b > c`` is the entry ``(b, c)`` of ``C`` through
        ``a``) — a quarter of the masked ``A ⊙ A²`` on all 2E entries. LAGraph's ``C⟨L⟩ = L Lᵀ``
        counts the same entries by dot products; at one thread GraphBLAS's masked saxpy on
        ``Lᵀ L`` takes 0.6–0.8× its time (ER graphs, n = 10³–10⁵). A triangle's row ``b`` is in
        its graph, so row sums give each graph's count."""
        gb = _gb()
        if "pattern" in s.__dict__ or s.transposed:  # imported already: GraphBLAS selects L
            low = gb.select.tril(s.pattern, -1).new()
        else:  # L straight from the stored structure: one import of half the entries
            low = s.strict_lower()
        c = gb.Matrix(gb.dtypes.INT64, s.n, s.n)
        c(low.S) << low.T.mxm(low, gb.semiring.plus_pair[gb.dtypes.INT64])
        if self.ptr.size == 2:  # one graph: a scalar reduce
            total = c.reduce_scalar(gb.monoid.plus[gb.dtypes.INT64]).new().value
            return np.array([6 * int(total or 0)], dtype=np.int64)
        rows = c.reduce_rowwise(gb.monoid.plus[gb.dtypes.INT64]).new()
        per_node = rows.to_dense(fill_value=0, dtype=np.int64)
        return 6 * segment_sum(per_node, self.ptr)

    def eye(self, s: Mask) -> np.ndarray:
        return (s.base_rows == s.indices).astype(np.int64)

    # node values ----------------------------------------------------------------------
    def propagate(self, s: Mask, values: np.ndarray, h: np.ndarray, transpose: bool) -> np.ndarray:
        """``M h`` (``Mᵀ h``) with ``M`` given by ``values`` on ``s``."""
        read = s.flip() if transpose else s
        if is_iso(values) and is_iso(h):
            return read.row_counts * (values * h)
        (vals, vec), den = self._integer_operands(
            values, h, terms=max(read.max_row, 1), what="a matrix-vector product"
        )
        if is_iso(vec):
            vec = np.full(self.n, vec, dtype=vec.dtype)
        dtype = np.result_type(vals.dtype, vec.dtype)
        if not is_iso(vals):
            out = _matvec(s, vals, vec, transpose=read.transposed, dtype=dtype)
            if out is not None:
                return _rational(out, den) if den != 1 else out
        gb = _gb()
        m = read.matrix(vals)
        t = gb.dtypes.INT64 if dtype.kind in "iub" else gb.dtypes.FP64
        v = gb.Vector.from_dense(np.ascontiguousarray(vec, dtype=t.np_type))
        ring = gb.semiring.plus_second if is_iso(vals) and vals == 1 else gb.semiring.plus_times
        out = m.mxv(v, ring[t]).new().to_dense(fill_value=0, dtype=t.np_type)
        return _rational(out, den) if den != 1 else out

    def row_sum(self, s: Mask, values: np.ndarray) -> np.ndarray:
        """``M 𝟏`` of ``M`` on ``s``."""
        if is_iso(values):
            return s.row_counts * values
        if values.dtype == object:
            out = np.zeros(self.n, dtype=object)
            np.add.at(out, s.rows, values)
            return out
        if not s.transposed:
            bound = maxabs(values) * max(s.max_row, 1)
            if _integral(values) and not self.fits(bound, "a row sum"):
                values = values.astype(np.float64)
            # each row summed alone: a row's value never depends on the rows before it
            return segment_sum(values, s.indptr)
        gb = _gb()
        m = s.matrix(values)
        t = m.dtype
        return m.reduce_rowwise(gb.monoid.plus[t]).new().to_dense(fill_value=0, dtype=t.np_type)

    def diagonal(self, s: Mask, values: np.ndarray) -> np.ndarray:
        on = s.base_rows == s.indices
        out = np.zeros(self.n, dtype=values.dtype)
        out[s.base_rows[on]] = values if is_iso(values) else values[on]
        return out

    def readout(self, v: np.ndarray) -> np.ndarray:
        """``𝟏ᵀ v`` per graph."""
        if is_iso(v):
            return np.diff(self.ptr) * v
        if _integral(v):
            sizes = np.diff(self.ptr)
            if not self.fits(maxabs(v) * (int(sizes.max()) if sizes.size else 1), "a readout"):
                v = v.astype(np.float64)
        # each graph summed alone (a segment sum), so its value never depends on the graphs
        # before it: a running sum read as differences at the boundaries loses every digit of a
        # small float value after a large one
        return segment_sum(v, self.ptr)

    # pointwise ------------------------------------------------------------------------
    def mul(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        # 1 ⊙ M = M (A of a 0/1 graph times a matrix on its edges): the same array, not an
        # E-long copy; the stage never writes into a value it computed
        for one, other in ((x, y), (y, x)):
            if is_iso(one) and _integral(one) and one == 1 and _integral(other):
                if other.dtype == np.result_type(one.dtype, other.dtype):
                    return other
        if _integral(x) and _integral(y) and not self.fits(maxabs(x) * maxabs(y), "a product"):
            x = x.astype(np.float64)
        return np.multiply(x, y)

    def add(self, x: np.ndarray, y: np.ndarray, sign: int = 1) -> np.ndarray:
        if _integral(x) and _integral(y) and not self.fits(maxabs(x) + maxabs(y), "a sum"):
            x = x.astype(np.float64)
        return np.add(x, y) if sign > 0 else np.subtract(x, y)

    def div(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if not self.exact or not (
            (_integral(x) or x.dtype == object) and (_integral(y) or y.dtype == object)
        ):
            return np.true_divide(x, y)
        if _integral(x) and _integral(y):
            q, r = np.divmod(x, y)
            if not np.any(r):
                return q
        xs, ys = np.broadcast_arrays(np.asarray(x, dtype=object), np.asarray(y, dtype=object))
        out = np.empty(xs.shape, dtype=object)
        out.flat[:] = [_quotient(a, b) for a, b in zip(xs.flat, ys.flat)]
        return out


def _matvec(
    s: Mask, values: np.ndarray, h: np.ndarray, *, transpose: bool, dtype: np.dtype
) -> np.ndarray | None:
    """``M h`` (``transpose``: ``Mᵀ h``) for ``values`` on the stored structure of ``s``, by
    scipy's CSR (CSC) kernel on the mask's own arrays: no copy of the structure into
    GraphBLAS (an import is ``indptr``, indices and values copied, 168 MB at E = 10⁷, and at
    one thread it costs 5–8× the product). Each row (column) is summed alone, in its entries'
    order, so a node's value never depends on other graphs. ``None`` where scipy's kernel is
    not there (the caller takes GraphBLAS)."""
    try:
        from scipy.sparse._sparsetools import csc_matvec, csr_matvec
    except ImportError:  # pragma: no cover - a scipy without its private kernels
        return None
    t = np.dtype(np.int64) if dtype.kind in "iub" else np.dtype(np.float64)
    vals = np.ascontiguousarray(values, dtype=t)
    vec = np.ascontiguousarray(h, dtype=t)
    out = np.zeros(s.n, dtype=t)
    kernel = csc_matvec if transpose else csr_matvec
    kernel(s.n, s.n, s.indptr, s.indices, vals, vec, out)
    return out


__all__ = [
    "Kernels",
    "Mask",
    "SAFE",
    "as_float64",
    "is_iso",
    "maxabs",
    "segment_sum",
    "set_threads",
]
