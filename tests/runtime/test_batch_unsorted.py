"""Unsorted edge_index: validated after one sort (no per-edge search), the sorted order kept for
the interpreter, the verdict and the messages those of the sort-based slow path."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from matlang.errors import GraphError
from matlang.runtime import validate as rv
from matlang.runtime.batch import Batch
from matlang.runtime.masks import coalesce_edges, prepared_edges


def _graph(rng: np.random.Generator, n: int, weighted: bool) -> np.ndarray:
    a = np.triu((rng.random((n, n)) < 0.25).astype(np.float64), 1)
    if weighted:
        a *= rng.integers(1, 4, a.shape)
    return a + a.T


def _batch(ei: torch.Tensor, n: int, w: torch.Tensor | None = None, graphs: int = 1) -> Batch:
    size = n // graphs
    batch = torch.arange(graphs).repeat_interleave(size)
    return Batch(ei, batch, torch.arange(graphs + 1) * size, None, w)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("weighted", [False, True])
def test_unsorted_valid_batch_keeps_its_sorted_order(seed: int, weighted: bool) -> None:
    """A shuffled symmetric graph passes, is known symmetric, and its prepared edges are the
    coalesced ones (weights permuted alike) without another sort; host and device helpers
    give the same order."""
    rng = np.random.default_rng(seed)
    a = _graph(rng, 24, weighted)
    rows, cols = np.nonzero(a)
    perm = rng.permutation(rows.size)
    ei = torch.from_numpy(np.stack([rows[perm], cols[perm]]).astype(np.int64))
    w = torch.from_numpy(a[rows[perm], cols[perm]]) if weighted else None
    b = _batch(ei, 24, w)
    assert b.validate() is b and b.known_symmetric() and not b.is_coalesced()
    known = b.row_major()
    assert known is not None
    edges, order = known
    assert torch.equal(edges, torch.from_numpy(np.stack([rows, cols]).astype(np.int64)))
    assert torch.equal(ei[:, order], edges)
    ref_edges, ref_w = coalesce_edges(ei, None if w is None else w.double(), 24)
    got_edges, got_w = prepared_edges(b)
    assert torch.equal(got_edges, ref_edges)
    assert (got_w is None) == (ref_w is None)
    if got_w is not None:
        assert torch.equal(got_w, ref_w)
    indptr = b.row_pointers()
    assert indptr is not None and np.array_equal(indptr, np.r_[0, np.cumsum(a.astype(bool).sum(1))])
    dev = rv.sorted_symmetric_device(ei[0], ei[1], w, 24)
    assert dev is not None and torch.equal(dev[0], edges) and torch.equal(dev[1], order)


@pytest.mark.parametrize("seed", range(4))
def test_unsorted_bad_batches_get_the_slow_paths_messages(seed: int) -> None:
    """A missing reverse, a reverse of another weight, a repeat: the one pass says no (host
    and device helpers alike) and the slow path names the edge."""
    rng = np.random.default_rng(seed)
    a = _graph(rng, 20, True)
    rows, cols = np.nonzero(a)
    perm = rng.permutation(rows.size)
    r, c = rows[perm], cols[perm]
    ei = torch.from_numpy(np.stack([r, c]).astype(np.int64))
    w = torch.from_numpy(a[r, c])
    missing = ei[:, 1:]
    assert rv.sorted_symmetric_host(missing[0].numpy(), missing[1].numpy(), None, 20) is None
    assert rv.sorted_symmetric_device(missing[0], missing[1], None, 20) is None
    with pytest.raises(GraphError, match="no reverse edge"):
        _batch(missing, 20).validate()
    assert _batch(missing, 20).validate(allow_directed=True)
    heavier = w.clone()
    heavier[0] += 1.0
    assert rv.sorted_symmetric_host(r, c, heavier.numpy(), 20) is None
    assert rv.sorted_symmetric_device(ei[0], ei[1], heavier, 20) is None
    with pytest.raises(GraphError, match="of the same weight"):
        _batch(ei, 20, heavier).validate()
    twice = torch.cat([ei, ei[:, :1], ei[:, :1].flip(0)], 1)
    assert rv.sorted_symmetric_host(twice[0].numpy(), twice[1].numpy(), None, 20) is None
    assert rv.sorted_symmetric_device(twice[0], twice[1], None, 20) is None
    with pytest.raises(GraphError, match="stored twice"):
        _batch(twice, 20).validate()


def test_cat_with_flip_over_several_graphs() -> None:
    """``torch.cat([e, e.flip(0)], 1)`` over a batch of graphs: valid, sorted once; an edge
    between graphs is still named."""
    e = torch.tensor([[0, 0, 1, 4, 5, 6], [1, 2, 2, 5, 6, 7]])
    ei = torch.cat([e, e.flip(0)], 1)
    b = _batch(ei, 8, graphs=2)
    assert b.validate().known_symmetric()
    known = b.row_major()
    assert known is not None and torch.equal(ei[:, known[1]], known[0])
    cross = torch.cat([ei, torch.tensor([[3, 4], [4, 3]])], 1)
    with pytest.raises(GraphError, match="joins graph"):
        _batch(cross, 8, graphs=2).validate()


def test_sort_without_scipys_private_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``scipy.sparse._sparsetools`` the sort is numpy's stable sort: the same order."""
    rng = np.random.default_rng(0)
    a = _graph(rng, 15, False)
    rows, cols = np.nonzero(a)
    perm = rng.permutation(rows.size)
    r, c = rows[perm].astype(np.int64), cols[perm].astype(np.int64)
    fast = rv.sort_host(r, c, 15)
    monkeypatch.setitem(sys.modules, "scipy.sparse._sparsetools", None)
    slow = rv.sort_host(r, c, 15)
    for x, y in zip(fast, slow):
        for p, q in zip(x, y):
            assert np.array_equal(p, q)


@pytest.mark.parametrize("seed", range(6))
def test_sort_rows_host_is_a_stable_row_major_sort(seed: int) -> None:
    """The two counting passes (by column, then by row) give what a stable sort of the keys
    ``i·n + j`` gives: row pointers, columns and each edge's position, repeats kept in input
    order, isolated and empty rows too."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 40))
    e = int(rng.integers(0, 200))
    row, col = rng.integers(0, n, e), rng.integers(0, n, e)
    if seed % 2:  # many repeats
        row, col = row % 3, col % 3
    indptr, cols, perm = rv.sort_rows_host(row, col, n)
    order = np.argsort(row * n + col, kind="stable")
    np.testing.assert_array_equal(perm, order)
    np.testing.assert_array_equal(cols, col[order])
    counts = np.bincount(row, minlength=n)
    np.testing.assert_array_equal(indptr, np.concatenate([[0], np.cumsum(counts)]))


@pytest.mark.parametrize("seed", range(4))
def test_row_pointers_of_sorted_rows_equal_a_count(seed: int) -> None:
    """Torch's linear pass over sorted rows (``sorted_rows=True``) gives the row pointers a
    bincount gives, in the asked type, with empty rows first, between and last; the same
    without the torch kernel."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    rows = np.sort(rng.integers(1, n, int(rng.integers(0, 300)))) if n > 1 else np.zeros(0, int)
    want = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))])
    for dtype, got_type in ((None, np.int32), (np.int64, np.int64)):
        got = rv.row_pointers(rows.astype(np.int64), n, dtype, sorted_rows=True)
        assert got.dtype == got_type
        np.testing.assert_array_equal(got, want)
    with pytest.MonkeyPatch.context() as mp:
        mp.delattr(torch, "_convert_indices_from_coo_to_csr")
        np.testing.assert_array_equal(rv.row_pointers(rows, n, sorted_rows=True), want)
