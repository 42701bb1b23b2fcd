"""The supports of a sentence layer's batch as CSR matrices (``Supports``), and the plain
supports (``A``, ``I``) built straight from a batch's edges without a compiled module: what the
layers' custom ops multiply by. Split from :mod:`matlang.compiler.layers.stage`, which builds
them once per batch and owns them."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from matlang.compiler.layers.support_cache import Csr
from matlang.compiler.plan import OPS
from matlang.runtime.batch import Batch
from matlang.runtime.sparse import csr_matrix, row_pointers


class Supports:
    """The supports ``C_1 … C_S`` of a batch as one ``(N, N)`` CSR matrix each, and their
    transposes, built once per batch and dtype: the forward ``Σ_s C_s Y_s`` and the backward
    ``C_sᵀ G`` are one CSR product per support (torch's ``sparse.mm``).

    Nothing is sorted or interleaved: each support comes as CSR arrays (``materialise`` gives
    its entries row-major, so its row pointers are a bincount; the per-graph cache gives them
    assembled). Where every support is symmetric (by structure, on a validated batch) its
    transpose is itself: no transposition at all. (Stacking them into one ``(N, S·N)`` matrix
    needed a scatter of every entry per batch, ~2 ms at 128 × ER(25), for one product instead
    of S.)"""

    def __init__(
        self,
        csrs: Sequence[Csr],
        n: int,
        *,
        symmetric: bool = False,
        identity: Sequence[bool] | None = None,
    ) -> None:
        # csrs: (rowptr, cols, values) of C_1 … C_S, each on its own ids (0 ≤ cols < N)
        self.n, self.s = n, len(csrs)
        #: which supports are I (their products are the operand itself: no sparse product)
        self.identity = list(identity) if identity is not None else [False] * self.s
        self.rowptrs = [c[0] for c in csrs]
        self.cols = [c[1] for c in csrs]
        self.vals = [c[2] for c in csrs]
        # C_sᵀ = C_s: by structure (every sentence symmetric on a validated batch), or for one
        # support by looking (the flipped entries are the same set with the same values)
        self.symmetric = symmetric or (
            self.s == 1 and is_symmetric(self.rows(0), self.cols[0], self.vals[0], n)
        )
        self._csr: dict[tuple[int, torch.dtype], Tensor] = {}
        self._csr_t: dict[tuple[int, torch.dtype], Tensor] = {}

    def rows(self, k: int) -> Tensor:
        """Support ``k``'s row ids, entry by entry."""
        ptr = self.rowptrs[k]
        counts = ptr[1:] - ptr[:-1]
        return torch.repeat_interleave(torch.arange(self.n, device=ptr.device), counts)

    def entries(self) -> tuple[Tensor, Tensor, Tensor]:
        """Every entry as ``(rows, support, values)``, support by support."""
        rows = [self.rows(k) for k in range(self.s)]
        which = torch.cat([torch.full_like(r, k) for k, r in enumerate(rows)])
        return torch.cat(rows), which, torch.cat(self.vals)

    def matrix(self, k: int, dtype: torch.dtype) -> Tensor:
        """Support ``k`` as a torch CSR matrix in ``dtype``, built once (a layer's products
        ask only for the supports that are not ``I``: ``I``'s is never built for them)."""
        key = (k, dtype)
        m = self._csr.get(key)
        if m is None:
            # (the values of A and I are one 1 expanded, see unit_values: made in dtype here)
            v = self.vals[k].to(dtype).contiguous()
            m = self._csr[key] = csr_matrix(self.rowptrs[k], self.cols[k], v, (self.n, self.n))
        return m

    def matrix_t(self, k: int, dtype: torch.dtype) -> Tensor:
        """Support ``k``'s transpose as a torch CSR matrix (itself where every support is
        symmetric), built once."""
        if self.symmetric:
            return self.matrix(k, dtype)
        key = (k, dtype)
        m = self._csr_t.get(key)
        if m is None:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message=r"Sparse (CSR tensor support|invariant)")
                m = self._csr_t[key] = self.matrix(k, dtype).t().to_sparse_csr()
        return m

    def csr(self, dtype: torch.dtype) -> list[Tensor]:
        """Every support as a torch CSR matrix in ``dtype``."""
        return [self.matrix(k, dtype) for k in range(self.s)]

    def csr_t(self, dtype: torch.dtype) -> list[Tensor]:
        """Every support's transpose (see :meth:`matrix_t`)."""
        return [self.matrix_t(k, dtype) for k in range(self.s)]


def make_csr(rows: Tensor, cols: Tensor, vals: Tensor, n: int, *, row_major: bool = False) -> Csr:
    """A support's CSR arrays from its entries (row-major from ``materialise``; sorted here if
    not, unless the caller knows): the row pointers are a bincount."""
    if not row_major:
        rows, cols, vals = sort_row_major(rows, cols, vals, n)
    return row_major_csr(row_pointers(rows, n), cols, vals)


def edge_csr(b: Batch, edges: Tensor) -> tuple[Tensor, Tensor]:
    """The batch's coalesced ``edges`` as CSR ``(rowptr, cols)``: the structure of ``A`` and
    of every support on the edge mask (``A ⊙ A²``). The row pointers are the validation's
    count of these rows where it made one (on the host), else a bincount; the columns go
    through :func:`row_major_csr` (copied only where they view the tensor the batch's memo
    lives on: edges the validation sorted are arrays of its own)."""
    indptr = b.row_pointers()
    if indptr is not None:
        rowptr = torch.from_numpy(indptr.astype(np.int64, copy=False)).to(edges.device)
    else:
        rowptr = row_pointers(edges[0], b.num_nodes)
    rowptr, cols, _ = row_major_csr(rowptr, edges[1], edges[1], owner=b.edge_index)
    return rowptr, cols


def plain_csrs(
    kinds: Sequence[str | None],
    structure: Callable[[], tuple[Tensor, Tensor]],
    n: int,
    device: torch.device,
) -> list[Csr | None]:
    """``A`` (on the edges' CSR ``structure()``, asked for only if ``A`` is among ``kinds``)
    and ``I`` as CSR arrays, values 1, in the places of ``kinds`` (``None`` elsewhere: the
    computed supports): the plain supports of a batch, new or assembled from the cache."""
    out: list[Csr | None] = []
    for kind in kinds:
        if kind == "A":
            rowptr, cols = structure()
            out.append((rowptr, cols, unit_values(cols.shape[0], cols.device)))
        elif kind == "I":
            out.append(identity_csr(n, device))
        else:
            out.append(None)
    return out


def row_major_csr(
    rowptr: Tensor, cols: Tensor, vals: Tensor, *, owner: Tensor | None = None
) -> Csr:
    """A support's CSR arrays from row pointers and row-major columns and values: every
    support is built here (:func:`make_csr`, the plain ``A`` from counted row pointers).

    The columns are copied when they are a view (a row of the batch's ``edge_index``, say):
    inside the sparse tensor built from them, a view holds its base from C++, and kept in the
    batch's memo, which lives on that ``edge_index``, it makes a cycle the garbage collector
    cannot see, so every batch would leak (``tests/compiler/test_no_leaks.py``). ``owner``:
    the tensor the memo lives on, where the caller knows it: a view of another base (edges
    the validation sorted into arrays of its own) holds no reference to it and is kept."""
    if cols._base is not None and (owner is None or _shares(cols, owner)):
        cols = cols.clone()
    return rowptr, cols, vals


def _shares(a: Tensor, b: Tensor) -> bool:
    """Whether two tensors view the same storage."""
    return bool(a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr())


def unit_values(k: int, device: torch.device | str = "cpu") -> Tensor:
    """``k`` values 1 (float64) as one element expanded: no memory until a CSR matrix is made
    in its dtype (:meth:`Supports.csr`), the support's values never written."""
    return torch.ones((), dtype=torch.float64, device=device).expand(k)


def identity_csr(n: int, device: torch.device) -> Csr:
    """``I`` as CSR arrays, values 1 (its columns the row pointers' first ``n``: one array)."""
    rowptr = torch.arange(n + 1, device=device)
    return rowptr, rowptr[:n], unit_values(n, device)


#: The ops of the plan of ``I`` (a support: on the diagonal mask), each once.
IDENTITY_OPS = sorted(op for op, spec in OPS.items() if spec.identity)


def plain_kind(plan: Any) -> str | None:
    """``"A"`` or ``"I"`` for the plans of ``A`` and ``I`` (read off the batch, see
    :func:`plain_support`), ``None`` for any other."""
    ops = [st.op for st in plan.steps]
    if len(plan.outputs) != 1 or plan.outputs[0].register != len(ops) - 1:
        return None
    return "A" if ops == ["edges", "adjacency"] else "I" if sorted(ops) == IDENTITY_OPS else None


def plain_support(module: Any, b: Batch) -> tuple[Tensor, Tensor] | None:
    """``A`` or ``I`` of an unweighted batch read off the batch (its coalesced edges, or the
    diagonal) with values 1: what :func:`~compiler.api.materialise` gives for these plans
    (checked by a test), without a pass of the interpreter (~0.3 ms a batch each). ``None``
    for any other plan."""
    kind = plain_kind(module.plan)
    if b.edge_weight is not None or kind is None:
        return None
    if kind == "A":
        from matlang.runtime.masks import prepared_edges

        edges, _ = b.cached("compiled.edges", lambda: prepared_edges(b))
        return edges, torch.ones(edges.shape[1], dtype=torch.float64, device=edges.device)
    i = torch.arange(b.num_nodes, device=b.edge_index.device)
    return torch.stack([i, i]), torch.ones(b.num_nodes, dtype=torch.float64, device=i.device)


def sort_row_major(
    rows: Tensor, cols: Tensor, vals: Tensor, n: int
) -> tuple[Tensor, Tensor, Tensor]:
    """A support's entries sorted row-major (``materialise`` gives them so; sorted here if
    not)."""
    key = rows * n + cols
    if key.numel() > 1 and not bool((key[1:] > key[:-1]).all()):
        order = torch.argsort(key)
        return rows[order], cols[order], vals[order]
    return rows, cols, vals


def is_symmetric(rows: Tensor, cols: Tensor, vals: Tensor, n: int) -> bool:
    key, order = torch.sort(rows * n + cols)
    flipped, forder = torch.sort(cols * n + rows)
    return bool(torch.equal(key, flipped)) and bool(torch.equal(vals[order], vals[forder]))


__all__ = ["Supports", "unit_values"]
