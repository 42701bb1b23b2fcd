"""Index kernels on masks (sets of matrix entries as ``(2, K)`` global node-id pairs): row-major
keys, composition ``a ∘ b`` (the k-hop support of a product), union, the all-pairs mask, reading a
masked matrix at other entries, and preparing a batch's edges. Pure torch."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from matlang.errors import GraphError
from matlang.runtime import sparse
from matlang.runtime.batch import Batch


def keys(index: Tensor, n: int) -> Tensor:
    """Row-major keys ``i·n + j`` of the entries of a mask."""
    return index[0] * n + index[1]


def from_keys(k: Tensor, n: int) -> Tensor:
    return torch.stack([k // max(n, 1), k % max(n, 1)])


def compose_masks(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``a ∘ b = {(i, j) : (i, k) ∈ a, (k, j) ∈ b}`` without repeats, sorted row-major.

    A sorted-key join: memory O(|a| + |b| + number of paths i → k → j)."""
    if a.shape[1] == 0 or b.shape[1] == 0:
        return a.new_zeros((2, 0))
    order = torch.argsort(b[0], stable=True)
    counts = torch.bincount(b[0], minlength=n)
    start = torch.cumsum(counts, 0) - counts
    k = a[1]
    cnt = counts[k]
    e = torch.repeat_interleave(torch.arange(a.shape[1], device=a.device), cnt)
    first = torch.cumsum(cnt, 0) - cnt
    f = order[start[k][e] + torch.arange(e.numel(), device=a.device) - first[e]]
    return from_keys(torch.unique(a[0][e] * n + b[1][f]), n)


def union_masks(a: Tensor, b: Tensor, n: int) -> Tensor:
    """``a ∪ b`` without repeats, sorted row-major."""
    return from_keys(torch.unique(torch.cat([keys(a, n), keys(b, n)])), n)


def full_mask(batch: Tensor, ptr: Tensor) -> Tensor:
    """Every pair ``(i, j)`` of nodes of the same graph (n_g² entries per graph), row-major."""
    n = batch.numel()
    if n == 0:
        return torch.zeros((2, 0), dtype=torch.int64, device=batch.device)
    sizes = (ptr[1:] - ptr[:-1])[batch]
    rows = torch.repeat_interleave(torch.arange(n, device=batch.device), sizes)
    first = torch.cumsum(sizes, 0) - sizes
    cols = ptr[batch[rows]] + torch.arange(rows.numel(), device=batch.device) - first[rows]
    return torch.stack([rows, cols])


def lookup(src: Tensor, values: Tensor, dst: Tensor, n: int) -> Tensor:
    """The matrix given by ``values`` on mask ``src`` (no repeats), read at the entries of
    ``dst``; 0 where ``src`` has no entry. Differentiable in ``values``."""
    if dst.shape[1] == 0 or src.shape[1] == 0:
        return values.new_zeros((dst.shape[1],))
    ks = keys(src, n)
    order = torch.argsort(ks)
    sorted_keys = ks[order]
    kd = keys(dst, n)
    pos = torch.searchsorted(sorted_keys, kd).clamp(max=sorted_keys.numel() - 1)
    hit = sorted_keys[pos] == kd
    return values[order[pos]] * hit.to(values.dtype)


def coalesce_edges(
    edge_index: Tensor, weight: Tensor | None, n: int
) -> tuple[Tensor, Tensor | None]:
    """Edges sorted row-major with repeated entries added up (A's entry is their sum)."""
    k = keys(edge_index, n)
    if sparse.is_coalesced(k):  # Graph.edge_index and PyG give edges this way
        return edge_index, weight
    uniq, inverse = torch.unique(k, sorted=True, return_inverse=True)
    if weight is None:
        if uniq.numel() == k.numel():
            return from_keys(uniq, n), None
        weight = torch.ones(k.numel(), dtype=torch.float64, device=k.device)
    summed = weight.new_zeros(uniq.numel()).index_add_(0, inverse, weight)
    return from_keys(uniq, n), summed


def prepared_edges(
    batch: Batch, *, fingerprint: tuple[Any, ...] | None = None
) -> tuple[Tensor, Tensor | None]:
    """The batch's edges as the interpreter needs them: int64, coalesced (:func:`coalesce_edges`)
    and checked in range even without validation (an id out of range would read past the end
    of a kernel's arrays). Weights in float64, ``None`` for a 0/1 graph. ``fingerprint``: the
    batch's, as the caller took it (:meth:`~runtime.batch.Batch.cached`)."""
    n = batch.num_nodes
    ei = batch.edge_index
    if ei.dim() != 2 or ei.shape[0] != 2 or ei.dtype.is_floating_point or ei.dtype == torch.bool:
        raise GraphError(
            f"edge_index must be an integer (2, E) tensor, got {ei.dtype} {tuple(ei.shape)}",
            "batch",
        )
    batch.check_range(fingerprint=fingerprint)
    ei = ei.to(torch.int64)
    w = batch.edge_weight
    w64 = None if w is None else w.to(torch.float64)
    if batch.is_coalesced(fingerprint=fingerprint):
        return ei, w64
    known = batch.row_major(fingerprint=fingerprint)
    if known is not None:  # validation sorted the edges: no repeats, nothing to add up
        edges, order = known
        return edges, None if w64 is None else w64[order]
    return coalesce_edges(ei, w64, n)
