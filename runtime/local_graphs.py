"""A batch's graphs one by one, with local node ids, and their fingerprints: what per-graph
caches (:class:`runtime.preprocess.PreprocessCache`) file their entries under."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
import torch
from torch import Tensor

from matlang.graphs import Graph, as_graph
from matlang.runtime.batch import Batch


@dataclass(frozen=True, eq=False)
class LocalGraph:
    """One graph of a batch with local node ids ``0..n-1`` (CPU tensors)."""

    edge_index: Tensor  # (2, E) int64
    num_nodes: int
    edge_weight: Tensor | None = None  # (E,)

    def adjacency(self) -> np.ndarray:
        """The dense n×n adjacency (float64, entries stored twice add up)."""
        a = np.zeros((self.num_nodes, self.num_nodes), dtype=np.float64)
        ei = self.edge_index.detach().cpu().numpy()
        if self.edge_weight is None:
            w = np.ones(ei.shape[1], dtype=np.float64)
        else:
            w = self.edge_weight.detach().cpu().to(torch.float64).numpy()
        np.add.at(a, (ei[0], ei[1]), w)
        return a

    def sparse_adjacency(self) -> sp.csr_matrix:
        """The adjacency as a scipy CSR matrix (float64, entries stored twice add up, sorted)."""
        n = self.num_nodes
        ei = self.edge_index.detach().cpu().numpy()
        if self.edge_weight is None:
            w = np.ones(ei.shape[1], dtype=np.float64)
        else:
            w = self.edge_weight.detach().cpu().to(torch.float64).numpy()
        a = sp.csr_matrix((w, (ei[0], ei[1])), shape=(n, n))
        a.sum_duplicates()
        return a

    def fingerprint(self) -> str:
        """:func:`graph_fingerprint` of this graph (sha256 of ``n``, its edges, its weights)."""
        ei = self.edge_index.detach().cpu().to(torch.int64).contiguous().numpy()
        w = None
        if self.edge_weight is not None:
            w = self.edge_weight.detach().cpu().to(torch.float64).contiguous().numpy()
        return graph_fingerprint(self.num_nodes, ei[0], ei[1], w)


def graph_fingerprint(n: int, rows: np.ndarray, cols: np.ndarray, weight: np.ndarray | None) -> str:
    """sha256 of ``n``, the local edges and the float64 weights (one graph of
    :func:`graph_fingerprints`, the same digest)."""
    bounds = np.array([0, np.size(rows)], dtype=np.int64)
    return graph_fingerprints(np.array([n]), bounds, rows, cols, weight)[0]


#: The unsigned widths an edge list is hashed in: the narrowest that holds the graph's ids.
_WIDTHS = (np.uint8, np.uint16, np.uint32, np.uint64)


def _width(n: int) -> int:
    """Index in :data:`_WIDTHS` of the narrowest type holding ``0..n-1``."""
    for k, bits in enumerate((8, 16, 32)):
        if n <= 1 << bits:
            return k
    return 3


def graph_fingerprints(
    sizes: np.ndarray,
    bounds: np.ndarray,
    rows: np.ndarray,
    cols: np.ndarray,
    weight: np.ndarray | None,
) -> list[str]:
    """:func:`graph_fingerprint` of every graph of a batch at once: graph ``k`` has
    ``sizes[k]`` nodes and the local edges ``bounds[k]:bounds[k + 1]`` of ``rows``/``cols``.

    A digest is sha256 of a header (``n``, ``E``, the id width), the edges as ``(i, j)`` pairs
    in the narrowest unsigned type that holds ``0..n-1`` (one byte per id for graphs of up to
    256 nodes: an eighth of the bytes of int64, and one hash update per graph), then the
    float64 weights. The width is the graph's own (its ``n``), so a graph's digest never
    depends on the batch it came in."""
    sizes_a = np.asarray(sizes, dtype=np.int64)
    total = int(bounds[-1]) - int(bounds[0]) if len(bounds) else 0
    if weight is None and total <= FINGERPRINT_CHUNK and int(sizes_a.max(initial=0)) <= 256:
        # the common batch (small graphs, one window, one byte per id): the same digests as
        # the loop below, one comprehension over one buffer
        lo = int(bounds[0])
        view = pair_bytes(rows, cols, lo, lo + total, 0)
        return byte_pair_fingerprints(sizes_a, np.asarray(bounds, dtype=np.int64) - lo, view)
    sizes_l = sizes_a.tolist()
    widths = [_width(n) for n in sizes_l]
    w = None
    if weight is not None:
        w = np.ascontiguousarray(weight, dtype=np.float64).data.cast("B")
    sha = hashlib.sha256
    out: list[str] = []
    barr = np.asarray(bounds, dtype=np.int64)
    b = barr.tolist()
    g, k = len(sizes_l), 0
    while k < g:  # windows of whole graphs with at most FINGERPRINT_CHUNK edges (or one graph)
        lo = b[k]
        end = min(max(int(np.searchsorted(barr, lo + FINGERPRINT_CHUNK, "right")) - 1, k + 1), g)
        views: dict[int, Any] = {}  # the window's pairs in each width its graphs need
        for j in range(k, end):
            n, a, z = sizes_l[j], b[j], b[j + 1]
            step = 2 * np.dtype(_WIDTHS[widths[j]]).itemsize
            h = sha(b"n=%d;E=%d;u%d;" % (n, z - a, step * 4))
            if z - a > FINGERPRINT_CHUNK:  # one large graph: its pairs a chunk at a time
                for c in range(a, z, FINGERPRINT_CHUNK):
                    h.update(pair_bytes(rows, cols, c, min(c + FINGERPRINT_CHUNK, z), widths[j]))
            else:
                view = views.get(widths[j])
                if view is None:
                    view = views[widths[j]] = pair_bytes(rows, cols, lo, b[end], widths[j])
                h.update(view[(a - lo) * step : (z - lo) * step])
            if w is None:
                h.update(b";unweighted")
            else:
                h.update(b";weights=")
                h.update(w[a * 8 : z * 8])
            out.append(h.hexdigest())
        k = end
    return out


def _flat_bytes(pairs: Any) -> memoryview:
    """``pairs`` (an ``(E, 2)`` uint8 array or a bytes-like object) as one flat byte view
    (``memoryview.cast`` refuses a 2-D array with no rows: a batch without edges)."""
    if isinstance(pairs, np.ndarray):
        return np.ascontiguousarray(pairs).reshape(-1).view(np.uint8).data
    return memoryview(pairs).cast("B")


def byte_pair_fingerprints(sizes: np.ndarray, bounds: np.ndarray, pairs: Any) -> list[str]:
    """:func:`graph_fingerprints` of unweighted graphs of at most 256 nodes whose local edges
    are already laid out as byte pairs: ``pairs`` (bytes-like, ``2·E`` of them) holds graph
    ``k``'s edges ``(i, j)`` at ``2·bounds[k]:2·bounds[k + 1]`` (the same digests: one byte an
    id is the width of such graphs)."""
    view = _flat_bytes(pairs)
    b = np.asarray(bounds, dtype=np.int64).tolist()
    sha = hashlib.sha256
    return [
        sha(b"n=%d;E=%d;u8;%s;unweighted" % (n, z - a, view[2 * a : 2 * z])).hexdigest()
        for n, a, z in zip(np.asarray(sizes).tolist(), b[:-1], b[1:])
    ]


#: Edges hashed per buffer by :func:`graph_fingerprints` (a few MB, whatever the batch).
FINGERPRINT_CHUNK = 1 << 18


def pair_bytes(rows: np.ndarray, cols: np.ndarray, lo: int, hi: int, width: int) -> Any:
    """The bytes of the pairs ``(rows[e], cols[e])`` for ``lo <= e < hi`` in ``_WIDTHS[width]``
    (ids of other widths' graphs wrap around; they are not read)."""
    buf = np.empty((hi - lo, 2), dtype=_WIDTHS[width])
    buf[:, 0] = rows[lo:hi]
    buf[:, 1] = cols[lo:hi]
    return buf.reshape(-1).data.cast("B")


def as_local_graph(obj: Any) -> LocalGraph:
    """A :class:`LocalGraph` from a LocalGraph, a :class:`~matlang.graphs.Graph` or anything
    :func:`~matlang.graphs.as_graph` accepts."""
    if isinstance(obj, LocalGraph):
        return obj
    g = obj if isinstance(obj, Graph) else as_graph(obj)
    ei = torch.from_numpy(np.array(g.edge_index))
    w = None if g.is_binary else torch.from_numpy(np.array(g.edge_weight, dtype=np.float64))
    return LocalGraph(ei, g.num_nodes, w)


@dataclass(frozen=True, eq=False)
class _BatchEdges:
    """A batch's edges grouped by graph (stable: a graph's edges keep their order), local ids."""

    local: np.ndarray  # (2, E) int64, C-contiguous
    weight: np.ndarray | None  # (E,) float64
    bounds: np.ndarray  # (G + 1,): graph k owns edges bounds[k]:bounds[k + 1]
    sizes: np.ndarray  # (G,) nodes per graph

    def fingerprint(self, k: int) -> str:
        """The fingerprint of graph ``k`` (equal to its :class:`LocalGraph`'s)."""
        lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
        w = None if self.weight is None else self.weight[lo:hi]
        return graph_fingerprint(int(self.sizes[k]), self.local[0, lo:hi], self.local[1, lo:hi], w)

    def graph(self, k: int) -> LocalGraph:
        lo, hi = int(self.bounds[k]), int(self.bounds[k + 1])
        w = None if self.weight is None else torch.from_numpy(self.weight[lo:hi].copy())
        return LocalGraph(torch.from_numpy(self.local[:, lo:hi].copy()), int(self.sizes[k]), w)


def _batch_edges(batch: Batch) -> _BatchEdges:
    ei = batch.edge_index.detach().cpu().to(torch.int64).numpy()
    ptr = batch.ptr.detach().cpu().to(torch.int64).numpy()
    g = batch.num_graphs
    w = None
    if batch.edge_weight is not None:
        w = batch.edge_weight.detach().cpu().to(torch.float64).reshape(-1).numpy()
    if ei.shape[1] == 0:
        local = np.zeros((2, 0), dtype=np.int64)
        bounds = np.zeros(g + 1, dtype=np.int64)
    else:
        gid = batch.batch.detach().cpu().to(torch.int64).numpy()[ei[0]]
        if bool((gid[1:] < gid[:-1]).any()):  # PyG and from_graphs keep a graph's edges together
            order = np.argsort(gid, kind="stable")
            ei, gid = ei[:, order], gid[order]
            w = None if w is None else w[order]
        local = np.ascontiguousarray(ei - ptr[gid])
        bounds = np.searchsorted(gid, np.arange(g + 1), side="left")
    return _BatchEdges(local, w, bounds, ptr[1:] - ptr[:-1])


def split_batch(batch: Batch) -> list[LocalGraph]:
    """The graphs of a batch, each with local ids (edges keep their order within a graph)."""
    edges = _batch_edges(batch)
    return [edges.graph(k) for k in range(batch.num_graphs)]


__all__ = [
    "LocalGraph",
    "as_local_graph",
    "graph_fingerprint",
    "graph_fingerprints",
    "split_batch",
]
