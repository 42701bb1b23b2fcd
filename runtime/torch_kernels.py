"""Graph constants in torch, on the batch's device: the twin of :mod:`runtime.graphblas`.

The same masks and kernels as the GraphBLAS stage, on torch tensors, so that a batch on a GPU
has its graph constants (``A ⊙ A²``, ``diag(A³)``, degrees, traces, functions of those) computed
where it lives, without a round trip through the host:

=====================  ========================================================================
:class:`TorchMask`     a set of entries as sorted CSR structure (``indptr``, ``indices``),
                       possibly read transposed (entry ``k`` of ``Sᵀ`` is entry ``k`` of ``S``
                       flipped), with its row-major keys ``i·n + j``
``sampled``            ``(A B)|S``: torch's CSR × CSR product (cuSPARSE on CUDA) read at the
                       mask's entries by a binary search of its keys; past ``2⁵³`` (float64's
                       exact integers) a sorted-key join of the product's terms in int64,
                       summed per mask entry (never the unmasked product's values)
``compose``/``union``  ``S ∘ T`` (the structure of a 0/1 CSR product) and ``S ∪ T`` (keys)
``lookup``             ``M|S`` read from ``M`` on another mask (0 where it has no entry)
``propagate``          ``M h``, ``row_sum``, ``diagonal``, ``readout``: segment sums by
                       ``index_add`` (never differences of a running sum)
=====================  ========================================================================

Values on a mask are tensors aligned with the mask's entries; a value equal on every entry is
a 0-d tensor on the CPU (an iso value: ``A`` of a 0/1 graph, ``𝟏``), which torch broadcasts
onto any device and which is read without a device synchronisation. Integer values are int64
and checked before every product with the same bounds as :class:`runtime.graphblas.Kernels`
(largest magnitude times the largest row count): past ``2⁶²`` a product is taken in float64.
Exact rationals are GraphBLAS's alone (:class:`~matlang.errors.EvaluationError` here).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from matlang.errors import EvaluationError
from matlang.functions import FLOAT_EXACT

#: Integer values stay int64 while a bound on every entry is below this (as GraphBLAS's).
SAFE = 2**62

#: (FLOAT_EXACT, from matlang.functions: float64 holds every integer below it exactly, so a CSR
#: product of integers bounded by it is exact in float64 whatever order cuSPARSE sums in.)

_I64 = torch.int64
_F64 = torch.float64


def is_iso(x: Tensor) -> bool:
    """A 0-d tensor: one value for every entry."""
    return x.dim() == 0


def iso(value: int | float) -> Tensor:
    """An iso value (0-d, on the CPU: it broadcasts onto any device)."""
    return torch.tensor(value, dtype=_I64 if isinstance(value, int) else _F64)


def maxabs(x: Tensor) -> int | float:
    """The largest magnitude of ``x`` (0 when empty), exact for integers (one device read)."""
    if x.numel() == 0:
        return 0
    m = x.abs().max().item()
    return int(m) if not x.is_floating_point() else float(m)


def integral(x: Tensor) -> bool:
    return not x.is_floating_point()


def as_float(x: Tensor) -> Tensor:
    return x if x.dtype == _F64 else x.to(_F64)


def _csr(indptr: Tensor, indices: Tensor, values: Tensor, n: int) -> Tensor:
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant checks)")
        return torch.sparse_csr_tensor(indptr, indices, values, (n, n), check_invariants=False)


def _row_pointers(rows: Tensor, n: int) -> Tensor:
    ptr = torch.zeros(n + 1, dtype=_I64, device=rows.device)
    if rows.numel():
        torch.cumsum(torch.bincount(rows, minlength=n), 0, out=ptr[1:])
    return ptr


# --------------------------------------------------------------------------- masks


class TorchMask:
    """A set of entries of an ``n × n`` matrix (sorted CSR structure on a device), read as it
    is or transposed (``transposed``: entry ``k`` is entry ``k`` of the structure, flipped)."""

    def __init__(
        self, n: int, indptr: Tensor, indices: Tensor, *, transposed: bool = False,
        base_rows: Tensor | None = None,
    ) -> None:
        self.n = int(n)
        self.indptr = indptr
        self.indices = indices
        self.transposed = transposed
        # shared by a mask and its flip: (row-major keys, base rows, read-transposed CSR order)
        self._shared: dict[str, Any] = {} if base_rows is None else {"base_rows": base_rows}
        self._flipped: TorchMask | None = None

    # constructors -----------------------------------------------------------------------
    @staticmethod
    def from_sorted_coo(n: int, rows: Tensor, cols: Tensor) -> TorchMask:
        """Entries sorted row-major without repeats."""
        return TorchMask(n, _row_pointers(rows, n), cols, base_rows=rows)

    @staticmethod
    def from_keys(n: int, keys: Tensor) -> TorchMask:
        """Sorted row-major keys ``i·n + j`` without repeats."""
        rows = torch.div(keys, max(n, 1), rounding_mode="floor")
        out = TorchMask.from_sorted_coo(n, rows, keys - rows * n)
        out._shared["keys"] = keys
        return out

    @staticmethod
    def identity(n: int, device: Any) -> TorchMask:
        ar = torch.arange(n, dtype=_I64, device=device)
        return TorchMask(n, torch.arange(n + 1, dtype=_I64, device=device), ar, base_rows=ar)

    @staticmethod
    def empty(n: int, device: Any) -> TorchMask:
        z = torch.zeros(0, dtype=_I64, device=device)
        return TorchMask(n, torch.zeros(n + 1, dtype=_I64, device=device), z, base_rows=z)

    @staticmethod
    def full(ptr: Tensor, node_graph: Tensor) -> TorchMask:
        """Every pair of nodes of the same graph (``ptr``: the graphs' node offsets)."""
        n = int(node_graph.numel())
        device = ptr.device
        if n == 0:
            return TorchMask.empty(0, device)
        sizes = (ptr[1:] - ptr[:-1])[node_graph]  # each row's entry count: its graph's size
        indptr = torch.zeros(n + 1, dtype=_I64, device=device)
        torch.cumsum(sizes, 0, out=indptr[1:])
        total = int(indptr[-1])
        rows = torch.repeat_interleave(torch.arange(n, device=device), sizes, output_size=total)
        cols = ptr[node_graph[rows]] + torch.arange(total, device=device) - indptr[rows]
        return TorchMask(n, indptr, cols, base_rows=rows)

    # views ------------------------------------------------------------------------------
    def flip(self) -> TorchMask:
        """``Sᵀ`` aligned entry by entry with ``S`` (one object per mask and its flip)."""
        if self._flipped is None:
            f = TorchMask.__new__(TorchMask)
            f.n, f.indptr, f.indices = self.n, self.indptr, self.indices
            f.transposed, f._shared, f._flipped = not self.transposed, self._shared, self
            self._flipped = f
        return self._flipped

    @property
    def device(self) -> torch.device:
        return self.indices.device

    @property
    def nnz(self) -> int:
        return int(self.indices.numel())

    @property
    def base_rows(self) -> Tensor:
        """Row of each stored entry (of the structure, before any transpose)."""
        r = self._shared.get("base_rows")
        if r is None:
            counts = self.indptr[1:] - self.indptr[:-1]
            r = torch.repeat_interleave(
                torch.arange(self.n, dtype=_I64, device=self.device), counts,
                output_size=self.nnz,
            )
            self._shared["base_rows"] = r
        return r

    @property
    def rows(self) -> Tensor:
        """Row of each entry as this mask is read."""
        return self.indices if self.transposed else self.base_rows

    @property
    def cols(self) -> Tensor:
        return self.base_rows if self.transposed else self.indices

    @property
    def keys(self) -> Tensor:
        """Row-major keys ``i·n + j`` of the structure (sorted)."""
        k = self._shared.get("keys")
        if k is None:
            k = self._shared["keys"] = self.base_rows * self.n + self.indices
        return k

    def read_order(self) -> tuple[Tensor | None, Tensor]:
        """How this mask is read, row-major: the permutation of its entries that sorts them as
        read (``None``: the stored order) and the sorted keys as read."""
        if not self.transposed:
            return None, self.keys
        hit = self._shared.get("flipped_order")
        if hit is None:
            fkeys = self.indices * self.n + self.base_rows
            sorted_keys, order = torch.sort(fkeys)
            hit = self._shared["flipped_order"] = (order, sorted_keys)
        return hit  # type: ignore[no-any-return]

    def read_csr(self, values: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """``(indptr, indices, values)`` of this mask as read, sorted row-major, ``values``
        aligned with its entries (an iso value spelled out)."""
        vals = values.expand(self.nnz) if is_iso(values) else values
        vals = vals.to(self.device)
        if not self.transposed:
            return self.indptr, self.indices, vals
        order, skeys = self.read_order()
        assert order is not None
        hit = self._shared.get("flipped_csr")
        if hit is None:
            rows = torch.div(skeys, max(self.n, 1), rounding_mode="floor")
            hit = self._shared["flipped_csr"] = (_row_pointers(rows, self.n), skeys - rows * self.n)
        return hit[0], hit[1], vals.index_select(0, order)

    @property
    def row_counts(self) -> Tensor:
        if self.transposed:
            return torch.bincount(self.indices, minlength=self.n)
        return self.indptr[1:] - self.indptr[:-1]

    @property
    def max_row(self) -> int:
        key = "max_col" if self.transposed else "max_row"
        m = self._shared.get(key)
        if m is None:
            counts = self.row_counts
            m = self._shared[key] = int(counts.max()) if counts.numel() else 0
        return m  # type: ignore[no-any-return]

    def is_symmetric(self, values: Tensor) -> bool:
        """Whether ``values`` (aligned with the structure, not iso) make a symmetric matrix."""
        order, fkeys = self.flip().read_order()
        assert order is not None
        return bool(torch.equal(fkeys, self.keys)) and bool(
            torch.equal(values.index_select(0, order), values)
        )


# --------------------------------------------------------------------------- kernels


class TorchKernels:
    """The torch kernels of one batch: ``n`` nodes, ``ptr`` graph offsets, ``node_graph`` the
    graph of each node (tensors on the batch's device). Integers stay int64 while a bound
    allows, else float64 (``exact=False`` semantics of :class:`runtime.graphblas.Kernels`)."""

    def __init__(self, n: int, ptr: Tensor, node_graph: Tensor) -> None:
        self.n, self.ptr, self.node_graph = n, ptr, node_graph
        self.g = int(ptr.numel() - 1)
        self.device = ptr.device

    @staticmethod
    def fits(bound: int | float) -> bool:
        return bound < SAFE

    def _operands(self, *xs: Tensor, terms: int) -> list[Tensor]:
        """``xs`` as int64 while ``terms`` products of them are bounded below 2⁶², else float64."""
        if all(integral(x) for x in xs):
            bound: int | float = terms
            for x in xs:
                bound *= maxabs(x)
            if self.fits(bound):
                return list(xs)
        return [as_float(x) for x in xs]

    # masks ----------------------------------------------------------------------------
    def _structure_product(self, a: TorchMask, va: Tensor, b: TorchMask, vb: Tensor) -> Tensor:
        """``A B`` as torch's sorted CSR tensor (float64 values)."""
        pa, ia, xa = a.read_csr(as_float(va))
        pb, ib, xb = b.read_csr(as_float(vb))
        out = torch.sparse.mm(_csr(pa, ia, xa, self.n), _csr(pb, ib, xb, self.n))
        if out.layout != torch.sparse_csr:  # pragma: no cover - torch gives CSR for CSR × CSR
            out = out.to_sparse_csr()
        return out

    def _product_keys(self, prod: Tensor) -> tuple[Tensor, Tensor]:
        """Sorted row-major keys of a CSR product and its values in that order."""
        crow, col, val = prod.crow_indices().to(_I64), prod.col_indices().to(_I64), prod.values()
        rows = torch.repeat_interleave(
            torch.arange(self.n, dtype=_I64, device=self.device), crow[1:] - crow[:-1],
            output_size=int(col.numel()),
        )
        keys = rows * self.n + col
        if keys.numel() > 1 and not bool((keys[1:] > keys[:-1]).all()):
            keys, order = torch.sort(keys)
            val = val.index_select(0, order)
        return keys, val

    def compose(self, a: TorchMask, b: TorchMask) -> TorchMask:
        """``a ∘ b``: entries ``(i, j)`` with a path ``(i, k) ∈ a``, ``(k, j) ∈ b``."""
        if a.nnz == 0 or b.nnz == 0:
            return TorchMask.empty(self.n, self.device)
        one = torch.ones((), dtype=_F64)
        keys, _ = self._product_keys(self._structure_product(a, one, b, one))
        return TorchMask.from_keys(self.n, keys)

    def union(self, a: TorchMask, b: TorchMask) -> TorchMask:
        keys = torch.unique(torch.cat([a.read_order()[1], b.read_order()[1]]), sorted=True)
        return TorchMask.from_keys(self.n, keys)

    # matrices on masks ----------------------------------------------------------------
    def sampled(self, a: TorchMask, va: Tensor, b: TorchMask, vb: Tensor, s: TorchMask) -> Tensor:
        """``(A B)|S``: the product read at the entries of ``s``, aligned with them."""
        if s.nnz == 0:
            return torch.zeros(0, dtype=_I64, device=self.device)
        ints = integral(va) and integral(vb)
        scale = maxabs(va) * maxabs(vb) if ints else 0
        # at most min(longest row of a, n) terms per entry; n alone bounds it without a look at
        # the rows (one device read less) when that already shows float64 is exact
        bound = max(b.n, 1) * scale
        if ints and bound >= FLOAT_EXACT:
            bound = max(min(a.max_row, b.n), 1) * scale
            if not self.fits(bound):  # as GraphBLAS: past 2⁶², float64
                va, vb, ints = as_float(va), as_float(vb), False
        if not ints:
            va, vb = as_float(va), as_float(vb)
        if a.nnz == 0 or b.nnz == 0:
            return torch.zeros(s.nnz, dtype=_I64 if ints else _F64, device=self.device)
        if ints and bound >= FLOAT_EXACT:
            return self._sampled_int(a, va, b, vb, s)
        keys, val = self._product_keys(self._structure_product(a, va, b, vb))
        out = self._read_at(keys, val, s)
        return out.round().to(_I64) if ints else out

    def _read_at(self, keys: Tensor, values: Tensor, s: TorchMask) -> Tensor:
        """Values given at sorted ``keys``, read at the entries of ``s`` (0 where absent)."""
        order, skeys = s.read_order()
        if keys.numel() == 0:
            return torch.zeros(s.nnz, dtype=values.dtype, device=self.device)
        pos = torch.searchsorted(keys, skeys).clamp_(max=keys.numel() - 1)
        hit = keys.index_select(0, pos) == skeys
        got = torch.where(hit, values.index_select(0, pos), values.new_zeros(()))
        if order is None:
            return got
        out = torch.empty_like(got)
        out[order] = got  # back to the mask's own entry order
        return out

    def _sampled_int(
        self, a: TorchMask, va: Tensor, b: TorchMask, vb: Tensor, s: TorchMask
    ) -> Tensor:
        """``(A B)|S`` in int64 (products past float64's exact integers): every term
        ``A_ik B_kj`` of a path ``i → k → j`` ending on a mask entry, summed per entry."""
        pb, ib, xb = b.read_csr(vb)
        arow, acol = a.rows, a.cols
        xa = va.expand(a.nnz) if is_iso(va) else va
        start = pb.index_select(0, acol)
        count = pb.index_select(0, acol + 1) - start
        total = int(count.sum())
        e = torch.repeat_interleave(
            torch.arange(a.nnz, device=self.device), count, output_size=total
        )
        first = torch.cumsum(count, 0) - count
        f = start.index_select(0, e) + torch.arange(total, device=self.device) - first[e]
        key = arow.index_select(0, e) * self.n + ib.index_select(0, f)
        order, skeys = s.read_order()
        pos = torch.searchsorted(skeys, key).clamp_(max=skeys.numel() - 1)
        hit = skeys.index_select(0, pos) == key
        terms = xa.index_select(0, e[hit]) * xb.index_select(0, f[hit])
        got = torch.zeros(s.nnz, dtype=_I64, device=self.device).index_add_(0, pos[hit], terms)
        if order is None:
            return got
        out = torch.empty_like(got)
        out[order] = got
        return out

    def lookup(self, src: TorchMask, values: Tensor, dst: TorchMask) -> Tensor:
        """``M|dst`` from ``M`` on ``src``: 0 where ``src`` has no entry."""
        if (
            is_iso(values)
            and src.nnz == dst.nnz
            and src.transposed == dst.transposed
            and (src.keys is dst.keys or bool(torch.equal(src.keys, dst.keys)))
        ):
            return values
        order, keys = src.read_order()
        vals = values.expand(src.nnz) if is_iso(values) else values
        vals = vals.to(self.device)
        if order is not None:
            vals = vals.index_select(0, order)
        return self._read_at(keys, vals, dst)

    def csr(
        self, s: TorchMask, values: Tensor, transpose: bool, *, symmetric: bool | None = None
    ) -> tuple[Tensor, Tensor, Tensor, bool]:
        """``M`` (``Mᵀ``) as sorted CSR arrays and whether it is symmetric (``symmetric``:
        known by the caller): the operator of a propagate step, built once per batch."""
        vals = values.expand(s.nnz) if is_iso(values) else values
        vals = as_float(vals.to(self.device)).contiguous()
        if symmetric is None:
            symmetric = s.is_symmetric(vals)
        if symmetric:
            return s.indptr, s.indices, vals, True
        read = s.flip() if transpose else s
        indptr, indices, v = read.read_csr(vals)
        return indptr, indices, v.contiguous(), False

    def eye(self, s: TorchMask) -> Tensor:
        return (s.base_rows == s.indices).to(_I64)

    # node values ----------------------------------------------------------------------
    def _segment_sum(self, values: Tensor, index: Tensor, size: int) -> Tensor:
        return torch.zeros(size, dtype=values.dtype, device=self.device).index_add_(
            0, index, values
        )

    def propagate(self, s: TorchMask, values: Tensor, h: Tensor, transpose: bool) -> Tensor:
        """``M h`` (``Mᵀ h``) with ``M`` given by ``values`` on ``s``: one term per entry,
        summed per row."""
        read = s.flip() if transpose else s
        vals, vec = self._operands(values, h, terms=max(read.max_row, 1))
        if is_iso(vals) and is_iso(vec):
            return read.row_counts * (vals * vec).to(self.device)
        hv = vec if is_iso(vec) else vec.index_select(0, read.cols)
        terms = (vals.to(self.device) * hv).expand(read.nnz)
        return self._segment_sum(terms, read.rows, self.n)

    def row_sum(self, s: TorchMask, values: Tensor) -> Tensor:
        """``M 𝟏`` of ``M`` on ``s``."""
        if is_iso(values):
            return s.row_counts * values
        (values,) = self._operands(values, terms=max(s.max_row, 1))
        return self._segment_sum(values, s.rows, self.n)

    def diagonal(self, s: TorchMask, values: Tensor) -> Tensor:
        on = s.base_rows == s.indices
        out = torch.zeros(self.n, dtype=values.dtype, device=self.device)
        src = values.expand(s.nnz) if is_iso(values) else values
        out[s.base_rows[on]] = src.to(self.device)[on]
        return out

    def readout(self, v: Tensor) -> Tensor:
        """``𝟏ᵀ v`` per graph: a segment sum by graph."""
        sizes = self.ptr[1:] - self.ptr[:-1]
        if is_iso(v):
            return sizes * v
        largest = int(sizes.max()) if sizes.numel() else 1
        (v,) = self._operands(v, terms=max(largest, 1))
        return self._segment_sum(v, self.node_graph, self.g)

    # pointwise ------------------------------------------------------------------------
    def mul(self, x: Tensor, y: Tensor) -> Tensor:
        if integral(x) and integral(y) and not self.fits(maxabs(x) * maxabs(y)):
            x = as_float(x)
        return torch.mul(x, y)

    def add(self, x: Tensor, y: Tensor, sign: int = 1) -> Tensor:
        if integral(x) and integral(y) and not self.fits(maxabs(x) + maxabs(y)):
            x = as_float(x)
        return torch.add(x, y) if sign > 0 else torch.sub(x, y)

    def div(self, x: Tensor, y: Tensor) -> Tensor:
        return torch.true_divide(as_float(x), as_float(y))


def refuse_exact(what: str) -> EvaluationError:
    return EvaluationError(
        f"{what}: exact rational evaluation runs on GraphBLAS only (constants='graphblas')"
    )


__all__ = [
    "FLOAT_EXACT",
    "SAFE",
    "TorchKernels",
    "TorchMask",
    "integral",
    "is_iso",
    "iso",
    "maxabs",
    "refuse_exact",
]
